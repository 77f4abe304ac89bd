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
 *   SAME   keeps the dtype (neg, abs, relu, sign, square: integer kernels)
 *   FLOAT  computes in f32 (exp, sin, ...: integer input promoted, as torch)
 *   IDENT  the op is the identity for integers (floor, ceil, round, trunc)
 *   BOOL   result is bool for every input (isnan, isinf, isfinite, logical_not) */
typedef enum { CT_RULE_SAME, CT_RULE_FLOAT, CT_RULE_IDENT, CT_RULE_BOOL } ct_unary_rule;

/* What an op's derivative reads, which the autograd saves and the fused
 * unary backward kernels stream: the unary tables' READS column
 *   NONE    neither (neg; floor, sign...: a zero gradient)
 *   IN      the input x
 *   OUT     the output y
 *   NOGRAD  no derivative: bool results, never recorded
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

/* The unary ops, one row each: X(ENUM, name, rule, READS, node)
 *   rule   the dtype rule above
 *   READS  what d op/dx reads; the derivative's formula is ct_ud_<...> in
 *          core/unary_math_t.h, listed in CT_UNARY_GRADS (core/unary_math.h,
 *          which asserts that the two lists agree)
 *   node   the autograd node's name (NULL: NOGRAD) */
/* clang-format off */
#define CT_UNARY_OPS(X)                                               \
  X(NEG, neg, SAME, NONE, "NegBackward")                              \
  X(ABS, abs, SAME, IN, "AbsBackward")                                \
  X(EXP, exp, FLOAT, OUT, "ExpBackward")                              \
  X(EXPM1, expm1, FLOAT, OUT, "Expm1Backward")                        \
  X(LOG, log, FLOAT, IN, "LogBackward")                               \
  X(LOG1P, log1p, FLOAT, IN, "Log1PBackward")                         \
  X(LOG2, log2, FLOAT, IN, "Log2Backward")                            \
  X(SQRT, sqrt, FLOAT, OUT, "SqrtBackward")                           \
  X(RSQRT, rsqrt, FLOAT, OUT, "RsqrtBackward")                        \
  X(SIN, sin, FLOAT, IN, "SinBackward")                               \
  X(COS, cos, FLOAT, IN, "CosBackward")                               \
  X(TAN, tan, FLOAT, OUT, "TanBackward")                              \
  X(TANH, tanh, FLOAT, OUT, "TanhBackward")                           \
  X(ERF, erf, FLOAT, IN, "ErfBackward")                               \
  X(SIGMOID, sigmoid, FLOAT, OUT, "SigmoidBackward")                  \
  X(RELU, relu, SAME, OUT, "ReluBackward") /* y > 0 exactly where x > 0 */ \
  X(GELU, gelu, FLOAT, IN, "GeluBackward")                            \
  X(GELU_TANH, gelu_tanh, FLOAT, IN, "GeluBackward")                  \
  X(SILU, silu, FLOAT, IN, "SiluBackward")                            \
  X(SOFTPLUS, softplus, FLOAT, IN, "SoftplusBackward")                \
  X(FLOOR, floor, IDENT, NONE, "FloorBackward")                       \
  X(CEIL, ceil, IDENT, NONE, "CeilBackward")                          \
  X(ROUND, round, IDENT, NONE, "RoundBackward")                       \
  X(TRUNC, trunc, IDENT, NONE, "TruncBackward")                       \
  X(SIGN, sign, SAME, NONE, "SignBackward")                           \
  X(RECIPROCAL, reciprocal, FLOAT, OUT, "ReciprocalBackward")         \
  X(SQUARE, square, SAME, IN, "PowBackward")                          \
  X(CLAMP, clamp, SAME, IN, "ClampBackward") /* p0 = lo, p1 = hi */   \
  X(LEAKY_RELU, leaky_relu, SAME, IN, "LeakyReluBackward") /* p0 = slope (floating inputs only) */ \
  X(ACOS, acos, FLOAT, IN, "AcosBackward")                            \
  X(ACOSH, acosh, FLOAT, IN, "AcoshBackward")                         \
  X(ASIN, asin, FLOAT, IN, "AsinBackward")                            \
  X(ASINH, asinh, FLOAT, IN, "AsinhBackward")                         \
  X(ATAN, atan, FLOAT, IN, "AtanBackward")                            \
  X(ATANH, atanh, FLOAT, IN, "AtanhBackward")                         \
  X(COSH, cosh, FLOAT, IN, "CoshBackward")                            \
  X(SINH, sinh, FLOAT, IN, "SinhBackward")                            \
  X(LOG10, log10, FLOAT, IN, "Log10Backward")                         \
  X(ISNAN, isnan, BOOL, NOGRAD, NULL)                                 \
  X(ISINF, isinf, BOOL, NOGRAD, NULL)                                 \
  X(ISFINITE, isfinite, BOOL, NOGRAD, NULL)                           \
  X(SIGNBIT, signbit, BOOL, NOGRAD, NULL)                             \
  X(LOGICAL_NOT, logical_not, BOOL, NOGRAD, NULL)
/* clang-format on */

typedef enum {
#define X(E, ...) CT_UOP_##E,
  CT_UNARY_OPS(X)
#undef X
      CT_UOP_COUNT
} ct_unary_op;

/* CT_UREADS_<ENUM>: the READS column as constants (CT_READS_*). */
enum {
#define X(E, n, r, READS, ...) CT_UREADS_##E = CT_READS_##READS,
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
