/* The op tables: one entry per elementwise/reduction op, the single source of
 * truth for names and dtype rules. Backends index their kernels by these
 * enums; every table indexed by them carries a static_assert on its length. */
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

/* X(ENUM, name, rule) */
#define CT_UNARY_OPS(X)              \
  X(NEG, neg, SAME)                  \
  X(ABS, abs, SAME)                  \
  X(EXP, exp, FLOAT)                 \
  X(EXPM1, expm1, FLOAT)             \
  X(LOG, log, FLOAT)                 \
  X(LOG1P, log1p, FLOAT)             \
  X(LOG2, log2, FLOAT)               \
  X(SQRT, sqrt, FLOAT)               \
  X(RSQRT, rsqrt, FLOAT)             \
  X(SIN, sin, FLOAT)                 \
  X(COS, cos, FLOAT)                 \
  X(TAN, tan, FLOAT)                 \
  X(TANH, tanh, FLOAT)               \
  X(ERF, erf, FLOAT)                 \
  X(SIGMOID, sigmoid, FLOAT)         \
  X(RELU, relu, SAME)                \
  X(GELU, gelu, FLOAT)               \
  X(GELU_TANH, gelu_tanh, FLOAT)     \
  X(SILU, silu, FLOAT)               \
  X(SOFTPLUS, softplus, FLOAT)       \
  X(FLOOR, floor, IDENT)             \
  X(CEIL, ceil, IDENT)               \
  X(ROUND, round, IDENT)             \
  X(TRUNC, trunc, IDENT)             \
  X(SIGN, sign, SAME)                \
  X(RECIPROCAL, reciprocal, FLOAT)   \
  X(SQUARE, square, SAME)            \
  X(CLAMP, clamp, SAME)              /* p0 = lo, p1 = hi */ \
  X(LEAKY_RELU, leaky_relu, SAME)    /* p0 = slope (floating inputs only) */ \
  X(ISNAN, isnan, BOOL)              \
  X(ISINF, isinf, BOOL)              \
  X(ISFINITE, isfinite, BOOL)        \
  X(LOGICAL_NOT, logical_not, BOOL)

typedef enum {
#define X(E, n, r) CT_UOP_##E,
  CT_UNARY_OPS(X)
#undef X
  CT_UOP_COUNT
} ct_unary_op;

/* Binary ops, X(ENUM, name, rule); rules below. */
#define CT_BINARY_OPS(X)                 \
  X(ADD, add, ARITH)                     \
  X(SUB, sub, ARITH)                     \
  X(MUL, mul, ARITH)                     \
  X(DIV, div, FLOAT)                     \
  X(FLOOR_DIVIDE, floor_divide, ARITH)   \
  X(POW, pow, ARITH)                     \
  X(MAXIMUM, maximum, ARITH)             \
  X(MINIMUM, minimum, ARITH)             \
  X(FMOD, fmod, ARITH)                   \
  X(REMAINDER, remainder, ARITH)         \
  X(ATAN2, atan2, FLOAT)                 \
  X(EQ, eq, COMPARE)                     \
  X(NE, ne, COMPARE)                     \
  X(LT, lt, COMPARE)                     \
  X(LE, le, COMPARE)                     \
  X(GT, gt, COMPARE)                     \
  X(GE, ge, COMPARE)                     \
  X(LOGICAL_AND, logical_and, COMPARE)   \
  X(LOGICAL_OR, logical_or, COMPARE)     \
  X(LOGICAL_XOR, logical_xor, COMPARE)

/* ARITH: result = promoted dtype; FLOAT: promoted, then f32 if not floating;
 * COMPARE: inputs compared in the promoted dtype, result bool. */
typedef enum { CT_BRULE_ARITH, CT_BRULE_FLOAT, CT_BRULE_COMPARE } ct_binary_rule;

typedef enum {
#define X(E, n, r) CT_BOP_##E,
  CT_BINARY_OPS(X)
#undef X
  CT_BOP_COUNT
} ct_binary_op;

/* Reductions over a set of dims. Accumulation dtype is chosen by the op layer:
 * the kernel's `out` dtype is the result dtype (i64 for integer sum/prod,
 * bool for all/any). */
#define CT_REDUCE_OPS(X)        \
  X(SUM, sum)                   \
  X(MEAN, mean)                 \
  X(PROD, prod)                 \
  X(MAX, max)                   \
  X(MIN, min)                   \
  X(LOGSUMEXP, logsumexp)       \
  X(ALL, all)                   \
  X(ANY, any)                   \
  X(VAR, var)                   /* p = correction */ \
  X(STD, std)                   /* p = correction */ \
  X(NORM, norm)                 /* p = the order */

typedef enum {
#define X(E, n) CT_ROP_##E,
  CT_REDUCE_OPS(X)
#undef X
  CT_ROP_COUNT
} ct_reduce_op;

typedef struct ct_unary_info { const char *name; ct_unary_rule rule; } ct_unary_info;
typedef struct ct_binary_info { const char *name; ct_binary_rule rule; } ct_binary_info;
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
