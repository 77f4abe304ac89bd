/* The op tables: one row per elementwise/reduction op, the single source of
 * truth for names, dtype rules and, for elementwise ops, what the derivative
 * reads and the autograd nodes. Backends index their kernels by these enums;
 * every table indexed by them carries a static_assert on its length. Adding
 * an elementwise op starts with its row here: docs/architecture.md,
 * "Checklists", lists the few other places (formula, derivative, declaration,
 * test row). */
#ifndef CT_OPS_OP_TABLE_H
#define CT_OPS_OP_TABLE_H

/* Compiles as C and as C++ (the CUDA backend indexes its kernels by these
 * enums too), so it includes nothing of core/internal.h. */

/* Dtype rule of a unary op on a non-floating input:
 *   SAME       keeps the dtype (neg, abs, relu, sign, square, clamp: integer
 *              formulas)
 *   FLOAT      computes in f32 (exp, sin, ...: integer input promoted, as torch)
 *   FLOATONLY  floating inputs only, an integer or bool one is CT_ERR_DTYPE
 *              (torch's activations with float-only kernels: gelu, silu...)
 *   IDENT      the op is the identity for integers (floor, ceil, round, trunc)
 *   BOOL       result is bool for every input (isnan, isinf, isfinite, logical_not)
 *   INT        integer and bool inputs only (a floating one is CT_ERR_DTYPE),
 *              the dtype kept; bool computes as a one-bit integer (bitwise_not) */
typedef enum {
  CT_RULE_SAME,
  CT_RULE_FLOAT,
  CT_RULE_FLOATONLY,
  CT_RULE_IDENT,
  CT_RULE_BOOL,
  CT_RULE_INT
} ct_unary_rule;

/* What an op's derivative reads, which the autograd saves and the fused
 * unary backward kernels stream: the unary tables' READS column
 *   NONE    neither (neg; floor, sign...: a zero gradient)
 *   IN      the input x
 *   OUT     the output y
 *   NOGRAD  no derivative: bool or integer results, never recorded
 * and the binary tables' sets of A (the first operand, or the tensor of a
 * scalar form), B (the second operand) and Y (the output). */
enum { CT_READS_NONE, CT_READS_IN, CT_READS_OUT, CT_READS_NOGRAD };
enum {
  CT_BREADS_NONE = 0,
  CT_BREADS_A = 1,
  CT_BREADS_B = 2,
  CT_BREADS_AB = 3,
  CT_BREADS_Y = 4,
  CT_BREADS_AY = 5,
  CT_BREADS_BY = 6,
  CT_BREADS_ABY = 7
};

/* The unary ops, one row each: X(ENUM, name, rule, api, READS, grad, node)
 *   rule   the dtype rule above; it says which formulas the op has
 *          (core/unary_math_t.h, core/unary_int_t.h): ct_uf_<name> for
 *          floating x (every rule but BOOL and INT), ct_ui_<name> for
 *          integers (SAME, INT), ct_up_<name> for every dtype (BOOL)
 *   api    its public functions (declared in ctensor/ops.h): GEN, defined by
 *          ops/elementwise.c from this row, ct_<name>, ct_<name>_ and
 *          ct_<name>_out (ct_<name> alone for a BOOL rule); OWN, written
 *          there by hand (the ops with parameters, p0 and p1)
 *   READS  what d op/dx reads (NOGRAD: none)
 *   grad   the derivative's formula, core/unary_math_t.h: CT_UD_X(<grad>)
 *          reading x, CT_UD_Y(<grad>) reading y, CT_UD_G(<grad>) neither;
 *          READS picks which one the kernels call, so a formula that reads
 *          other than its row says does not compile (NONE for NOGRAD)
 *   node   the autograd node's name (NULL: NOGRAD) */
/* clang-format off */
#define CT_UNARY_TABLE(R, X)                                                            \
  R(X, NEG, neg, SAME, GEN, NONE, neg, "NegBackward")                                   \
  R(X, ABS, abs, SAME, GEN, IN, abs, "AbsBackward")                                     \
  R(X, EXP, exp, FLOAT, GEN, OUT, exp, "ExpBackward")                                   \
  R(X, EXPM1, expm1, FLOAT, GEN, OUT, expm1, "Expm1Backward")                           \
  R(X, LOG, log, FLOAT, GEN, IN, log, "LogBackward")                                    \
  R(X, LOG1P, log1p, FLOAT, GEN, IN, log1p, "Log1PBackward")                            \
  R(X, LOG2, log2, FLOAT, GEN, IN, log2, "Log2Backward")                                \
  R(X, SQRT, sqrt, FLOAT, GEN, OUT, sqrt, "SqrtBackward")                               \
  R(X, RSQRT, rsqrt, FLOAT, GEN, OUT, rsqrt, "RsqrtBackward")                           \
  R(X, SIN, sin, FLOAT, GEN, IN, sin, "SinBackward")                                    \
  R(X, COS, cos, FLOAT, GEN, IN, cos, "CosBackward")                                    \
  R(X, TAN, tan, FLOAT, GEN, OUT, tan, "TanBackward")                                   \
  R(X, TANH, tanh, FLOAT, GEN, OUT, tanh, "TanhBackward")                               \
  R(X, ERF, erf, FLOAT, GEN, IN, erf, "ErfBackward")                                    \
  R(X, SIGMOID, sigmoid, FLOAT, GEN, OUT, sigmoid, "SigmoidBackward")                   \
  R(X, RELU, relu, SAME, GEN, OUT, relu, "ReluBackward") /* y > 0 exactly where x > 0 */ \
  R(X, GELU, gelu, FLOATONLY, GEN, IN, gelu, "GeluBackward")                            \
  R(X, GELU_TANH, gelu_tanh, FLOATONLY, GEN, IN, gelu_tanh, "GeluBackward")             \
  R(X, SILU, silu, FLOATONLY, GEN, IN, silu, "SiluBackward")                            \
  R(X, SOFTPLUS, softplus, FLOATONLY, GEN, IN, softplus, "SoftplusBackward")            \
  R(X, FLOOR, floor, IDENT, GEN, NONE, zero, "FloorBackward")                           \
  R(X, CEIL, ceil, IDENT, GEN, NONE, zero, "CeilBackward")                              \
  R(X, ROUND, round, IDENT, GEN, NONE, zero, "RoundBackward")                           \
  R(X, TRUNC, trunc, IDENT, GEN, NONE, zero, "TruncBackward")                           \
  R(X, SIGN, sign, SAME, GEN, NONE, zero, "SignBackward")                               \
  R(X, RECIPROCAL, reciprocal, FLOAT, GEN, OUT, reciprocal, "ReciprocalBackward")       \
  R(X, SQUARE, square, SAME, GEN, IN, square, "PowBackward")                            \
  R(X, CLAMP, clamp, SAME, OWN, IN, clamp, "ClampBackward") /* p0 = lo, p1 = hi */      \
  R(X, LEAKY_RELU, leaky_relu, FLOATONLY, OWN, IN, leaky_relu, "LeakyReluBackward") /* p0 = slope */ \
  R(X, ACOS, acos, FLOAT, GEN, IN, acos, "AcosBackward")                                \
  R(X, ACOSH, acosh, FLOAT, GEN, IN, acosh, "AcoshBackward")                            \
  R(X, ASIN, asin, FLOAT, GEN, IN, asin, "AsinBackward")                                \
  R(X, ASINH, asinh, FLOAT, GEN, IN, asinh, "AsinhBackward")                            \
  R(X, ATAN, atan, FLOAT, GEN, IN, atan, "AtanBackward")                                \
  R(X, ATANH, atanh, FLOAT, GEN, IN, atanh, "AtanhBackward")                            \
  R(X, COSH, cosh, FLOAT, GEN, IN, cosh, "CoshBackward")                                \
  R(X, SINH, sinh, FLOAT, GEN, IN, sinh, "SinhBackward")                                \
  R(X, LOG10, log10, FLOAT, GEN, IN, log10, "Log10Backward")                            \
  R(X, EXP2, exp2, FLOAT, GEN, OUT, exp2, "Exp2Backward")                               \
  R(X, ISNAN, isnan, BOOL, GEN, NOGRAD, NONE, NULL)                                     \
  R(X, ISINF, isinf, BOOL, GEN, NOGRAD, NONE, NULL)                                     \
  R(X, ISFINITE, isfinite, BOOL, GEN, NOGRAD, NONE, NULL)                               \
  R(X, SIGNBIT, signbit, BOOL, GEN, NOGRAD, NONE, NULL)                                 \
  R(X, LOGICAL_NOT, logical_not, BOOL, GEN, NOGRAD, NONE, NULL)                         \
  R(X, BITWISE_NOT, bitwise_not, INT, GEN, NOGRAD, NONE, NULL)

/* Views of the table, each X(ENUM, name) unless said: every row,
 * X(ENUM, name, rule, api, READS, grad, node); the rows with a floating
 * formula, with an integer formula, the INT rows (whose integer formula has
 * a bool instance), the BOOL rows (predicates); the derivatives,
 * X(ENUM, <x|y|g>_<grad>) for the rows with one (the name of the formula
 * CT_UD_X/Y/G defines, the letter from READS); the rows whose public
 * functions ops/elementwise.c generates, the BOOL rows apart, and those BOOL
 * rows. */
#define CT__UROW_ALL(X, ...) X(__VA_ARGS__)
#define CT__UROW_FLOAT(X, E, n, rule, ...) CT__UIF_FLOAT_##rule(X, E, n)
#define CT__UIF_FLOAT_SAME(X, E, n) X(E, n)
#define CT__UIF_FLOAT_FLOAT(X, E, n) X(E, n)
#define CT__UIF_FLOAT_FLOATONLY(X, E, n) X(E, n)
#define CT__UIF_FLOAT_IDENT(X, E, n) X(E, n)
#define CT__UIF_FLOAT_BOOL(X, E, n)
#define CT__UIF_FLOAT_INT(X, E, n)
#define CT__UROW_INT(X, E, n, rule, ...) CT__UIF_INT_##rule(X, E, n)
#define CT__UIF_INT_SAME(X, E, n) X(E, n)
#define CT__UIF_INT_FLOAT(X, E, n)
#define CT__UIF_INT_FLOATONLY(X, E, n)
#define CT__UIF_INT_IDENT(X, E, n)
#define CT__UIF_INT_BOOL(X, E, n)
#define CT__UIF_INT_INT(X, E, n) X(E, n)
#define CT__UROW_INT_RULE(X, E, n, rule, ...) CT__UIF_INT_RULE_##rule(X, E, n)
#define CT__UIF_INT_RULE_SAME(X, E, n)
#define CT__UIF_INT_RULE_FLOAT(X, E, n)
#define CT__UIF_INT_RULE_FLOATONLY(X, E, n)
#define CT__UIF_INT_RULE_IDENT(X, E, n)
#define CT__UIF_INT_RULE_BOOL(X, E, n)
#define CT__UIF_INT_RULE_INT(X, E, n) X(E, n)
#define CT__UROW_PRED(X, E, n, rule, ...) CT__UIF_PRED_##rule(X, E, n)
#define CT__UIF_PRED_SAME(X, E, n)
#define CT__UIF_PRED_FLOAT(X, E, n)
#define CT__UIF_PRED_FLOATONLY(X, E, n)
#define CT__UIF_PRED_IDENT(X, E, n)
#define CT__UIF_PRED_BOOL(X, E, n) X(E, n)
#define CT__UIF_PRED_INT(X, E, n)
#define CT__UROW_GRAD(X, E, n, rule, api, READS, grad, ...) CT__UGRAD_##READS(X, E, grad)
#define CT__UGRAD_IN(X, E, grad) X(E, x_##grad)
#define CT__UGRAD_OUT(X, E, grad) X(E, y_##grad)
#define CT__UGRAD_NONE(X, E, grad) X(E, g_##grad)
#define CT__UGRAD_NOGRAD(X, E, grad)
#define CT__UROW_GEN(X, E, n, rule, api, ...) CT__UIF_GEN_##api(X, E, n, rule)
#define CT__UIF_GEN_GEN(X, E, n, rule) CT__UIF_GEN_NOT_BOOL_##rule(X, E, n)
#define CT__UIF_GEN_OWN(X, E, n, rule)
#define CT__UIF_GEN_NOT_BOOL_SAME(X, E, n) X(E, n)
#define CT__UIF_GEN_NOT_BOOL_FLOAT(X, E, n) X(E, n)
#define CT__UIF_GEN_NOT_BOOL_FLOATONLY(X, E, n) X(E, n)
#define CT__UIF_GEN_NOT_BOOL_IDENT(X, E, n) X(E, n)
#define CT__UIF_GEN_NOT_BOOL_BOOL(X, E, n)
#define CT__UIF_GEN_NOT_BOOL_INT(X, E, n) X(E, n)
#define CT__UROW_GEN_PRED(X, E, n, rule, api, ...) CT__UIF_GEN_PRED_##api(X, E, n, rule)
#define CT__UIF_GEN_PRED_GEN(X, E, n, rule) CT__UIF_PRED_##rule(X, E, n)
#define CT__UIF_GEN_PRED_OWN(X, E, n, rule)
/* clang-format on */
#define CT_UNARY_OPS(X) CT_UNARY_TABLE(CT__UROW_ALL, X)
#define CT_UNARY_FLOAT_OPS(X) CT_UNARY_TABLE(CT__UROW_FLOAT, X)
#define CT_UNARY_INT_OPS(X) CT_UNARY_TABLE(CT__UROW_INT, X)
#define CT_UNARY_INT_RULE_OPS(X) CT_UNARY_TABLE(CT__UROW_INT_RULE, X)
#define CT_UNARY_PREDICATES(X) CT_UNARY_TABLE(CT__UROW_PRED, X)
#define CT_UNARY_GRADS(X) CT_UNARY_TABLE(CT__UROW_GRAD, X)
#define CT_UNARY_GEN_OPS(X) CT_UNARY_TABLE(CT__UROW_GEN, X)
#define CT_UNARY_GEN_PREDICATES(X) CT_UNARY_TABLE(CT__UROW_GEN_PRED, X)

typedef enum {
#define X(E, ...) CT_UOP_##E,
  CT_UNARY_OPS(X)
#undef X
      CT_UOP_COUNT
} ct_unary_op;

/* CT_UREADS_<ENUM>: the READS column as constants (CT_READS_*). */
enum {
#define X(E, n, r, api, READS, ...) CT_UREADS_##E = CT_READS_##READS,
  CT_UNARY_OPS(X)
#undef X
};

/* The binary ops, one row each:
 *   X(ENUM, name, rule, grad, node, a_reads, b_reads, s_node, s_reads, rs_reads)
 *   rule      the dtype rule below; ARITH and FLOAT ops have a floating formula
 *             ct_bf_<name> (core/binary_math_t.h) and the public functions
 *             ct_<name>, _, _out, _scalar, _scalar_ (ops/arith.c); COMPARE
 *             ops ct_bc_<name> and ct_<name>, _out, _scalar (ops/compare.c);
 *             INT ops an integer formula ct_bi_<name> (core/binary_int_t.h)
 *             and the same public functions as ARITH (ops/arith.c)
 *   grad      the derivative, autograd/grad_elementwise.c: <grad>_grad (tensor
 *             op tensor) and <grad>_s (scalar forms); NONE: not differentiable
 *             (recorded, backward fails), as torch
 *   node      the autograd node's name (NULL: bool or integer result of a
 *             COMPARE or INT row, never recorded)
 *   a_reads, b_reads     what d/da and d/db read (A, B, Y sets above)
 *   s_node    the node's name of the scalar forms
 *   s_reads, rs_reads    what d(x op s)/dx and d(s op x)/dx read (A: x) */
/* clang-format off */
#define CT_BINARY_TABLE(R, X)                                                                              \
  R(X, ADD, add, ARITH, add, "AddBackward", NONE, NONE, "AddBackward", NONE, NONE)                         \
  R(X, SUB, sub, ARITH, sub, "SubBackward", NONE, NONE, "SubBackward", NONE, NONE)                         \
  R(X, MUL, mul, ARITH, mul, "MulBackward", B, A, "MulBackward", NONE, NONE)                               \
  R(X, DIV, div, FLOAT, div, "DivBackward", B, AB, "DivBackward", NONE, Y)                                 \
  R(X, FLOOR_DIVIDE, floor_divide, ARITH, NONE, "FloorDivideBackward", NONE, NONE, "FloorDivideBackward", NONE, NONE) \
  R(X, POW, pow, ARITH, pow, "PowBackward", AB, ABY, "PowBackward", A, AY)                                 \
  R(X, MAXIMUM, maximum, ARITH, maximum, "MaximumBackward", AB, AB, "ClampMinBackward", A, A)             \
  R(X, MINIMUM, minimum, ARITH, maximum, "MinimumBackward", AB, AB, "ClampMaxBackward", A, A)             \
  R(X, FMOD, fmod, ARITH, fmod, "FmodBackward", NONE, AB, "FmodBackward", NONE, A)                         \
  R(X, REMAINDER, remainder, ARITH, fmod, "RemainderBackward", NONE, AB, "RemainderBackward", NONE, A)     \
  R(X, ATAN2, atan2, FLOAT, atan2, "Atan2Backward", AB, AB, "Atan2Backward", A, A)                         \
  R(X, HYPOT, hypot, FLOAT, hypot, "HypotBackward", AY, BY, "HypotBackward", AY, AY) \
  R(X, LOGADDEXP, logaddexp, FLOAT, logaddexp, "LogaddexpBackward", AB, AB, "LogaddexpBackward", A, A) \
  R(X, COPYSIGN, copysign, FLOAT, copysign, "CopysignBackward", AY, NONE, "CopysignBackward", AY, NONE) \
  R(X, EQ, eq, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                                          \
  R(X, NE, ne, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                                          \
  R(X, LT, lt, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                                          \
  R(X, LE, le, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                                          \
  R(X, GT, gt, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                                          \
  R(X, GE, ge, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                                          \
  R(X, LOGICAL_AND, logical_and, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                        \
  R(X, LOGICAL_OR, logical_or, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                          \
  R(X, LOGICAL_XOR, logical_xor, COMPARE, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                        \
  R(X, BITWISE_AND, bitwise_and, INT, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                            \
  R(X, BITWISE_OR, bitwise_or, INT, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                              \
  R(X, BITWISE_XOR, bitwise_xor, INT, NONE, NULL, NONE, NONE, NULL, NONE, NONE)                            \
  R(X, BITWISE_LEFT_SHIFT, bitwise_left_shift, INT, NONE, NULL, NONE, NONE, NULL, NONE, NONE)              \
  R(X, BITWISE_RIGHT_SHIFT, bitwise_right_shift, INT, NONE, NULL, NONE, NONE, NULL, NONE, NONE)

/* Views of the table: every row, X(ENUM, name, rule, grad, node, ...); the
 * ARITH and FLOAT rows, X(ENUM, name); the COMPARE rows, X(ENUM, name); the
 * INT rows, X(ENUM, name). */
#define CT__BROW_ALL(X, ...) X(__VA_ARGS__)
#define CT__BROW_ARITH(X, E, n, rule, ...) CT__BIF_ARITH_##rule(X, E, n)
#define CT__BROW_COMPARE(X, E, n, rule, ...) CT__BIF_COMPARE_##rule(X, E, n)
#define CT__BIF_ARITH_ARITH(X, E, n) X(E, n)
#define CT__BIF_ARITH_FLOAT(X, E, n) X(E, n)
#define CT__BIF_ARITH_COMPARE(X, E, n)
#define CT__BIF_ARITH_INT(X, E, n)
#define CT__BIF_COMPARE_ARITH(X, E, n)
#define CT__BIF_COMPARE_FLOAT(X, E, n)
#define CT__BIF_COMPARE_COMPARE(X, E, n) X(E, n)
#define CT__BIF_COMPARE_INT(X, E, n)
#define CT__BROW_INT(X, E, n, rule, ...) CT__BIF_INT_##rule(X, E, n)
#define CT__BIF_INT_ARITH(X, E, n)
#define CT__BIF_INT_FLOAT(X, E, n)
#define CT__BIF_INT_COMPARE(X, E, n)
#define CT__BIF_INT_INT(X, E, n) X(E, n)
/* clang-format on */
#define CT_BINARY_OPS(X) CT_BINARY_TABLE(CT__BROW_ALL, X)
#define CT_BINARY_ARITH_OPS(X) CT_BINARY_TABLE(CT__BROW_ARITH, X)
#define CT_BINARY_COMPARE_OPS(X) CT_BINARY_TABLE(CT__BROW_COMPARE, X)
#define CT_BINARY_INT_RULE_OPS(X) CT_BINARY_TABLE(CT__BROW_INT, X)

/* ARITH: result = promoted dtype; FLOAT: promoted, then f32 if not floating;
 * COMPARE: inputs compared in the promoted dtype, result bool; INT: integer
 * and bool inputs only (a floating one is CT_ERR_DTYPE), result = promoted
 * dtype (bool for two bools). */
typedef enum { CT_BRULE_ARITH, CT_BRULE_FLOAT, CT_BRULE_COMPARE, CT_BRULE_INT } ct_binary_rule;

typedef enum {
#define X(E, ...) CT_BOP_##E,
  CT_BINARY_OPS(X)
#undef X
      CT_BOP_COUNT
} ct_binary_op;

/* Reductions over a set of dims. Accumulation dtype is chosen by the op layer:
 * the kernel's `out` dtype is the result dtype (i64 for integer sum/prod,
 * bool for all/any). */
#define CT_REDUCE_OPS(X)             \
  X(SUM, sum)                        \
  X(MEAN, mean)                      \
  X(PROD, prod)                      \
  X(MAX, max)                        \
  X(MIN, min)                        \
  X(LOGSUMEXP, logsumexp)            \
  X(ALL, all)                        \
  X(ANY, any)                        \
  X(VAR, var)   /* p = correction */ \
  X(STD, std)   /* p = correction */ \
  X(NORM, norm) /* p = the order */

typedef enum {
#define X(E, n) CT_ROP_##E,
  CT_REDUCE_OPS(X)
#undef X
      CT_ROP_COUNT
} ct_reduce_op;

typedef struct ct_unary_info {
  const char *name;
  ct_unary_rule rule;
} ct_unary_info;
typedef struct ct_binary_info {
  const char *name;
  ct_binary_rule rule;
} ct_binary_info;
#ifdef __cplusplus
extern "C" {
#endif
extern const ct_unary_info ct__unary_info[CT_UOP_COUNT];
extern const ct_binary_info ct__binary_info[CT_BOP_COUNT];
extern const char *const ct__reduce_names[CT_ROP_COUNT];
#ifdef __cplusplus
}
#endif

#endif /* CT_OPS_OP_TABLE_H */
