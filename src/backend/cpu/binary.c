/* CPU binary elementwise kernels: out = a op b, out = a op s (scalar),
 * out = a + alpha * b (axpy) and out = cond ? a : b (where).
 *
 * One row kernel per (op, compute dtype), generated below from one expression
 * per op and type class; f16/bf16 run the f32 kernel through ct__half_rows.
 * Decomposition: ct__ew_run (ew_run.h) treats all-contiguous operands as one
 * row split into per-thread chunks, else ct__loop coalesces dims into rows;
 * within a row there is one vectorizable loop per stride pattern (all
 * contiguous, b broadcast, a broadcast) and a strided fallback.
 *
 * Integer arithmetic that can overflow goes through the unsigned type of the
 * same width (wrap-around, defined behaviour). Integer division, remainder
 * and fmod by zero and negative integer powers leave 0 in the element and
 * make the kernel fail with CT_ERR_ARG naming the op (PyTorch raises
 * ZeroDivisionError on the CPU); INT_MIN / -1 wraps to INT_MIN. */
#include <tgmath.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/ew_run.h"

/* The kernels are instantiated for u8 too, where sign tests are constant. */
#pragma GCC diagnostic ignored "-Wtype-limits"

/* ---- Type classes: X(ENUM, T, UT, suffix, ...) ---------------------------
 * UT: the unsigned type wrapping arithmetic goes through (at least unsigned
 * int, so that small types are not promoted to a signed int that overflows). */
#define FLOAT_TYPES(X, ...) \
  X(CT_F32, float, float, f32, __VA_ARGS__) X(CT_F64, double, double, f64, __VA_ARGS__)
#define INT_TYPES(X, ...)                                                         \
  X(CT_I8, int8_t, unsigned, i8, __VA_ARGS__) X(CT_U8, uint8_t, unsigned, u8, __VA_ARGS__) \
  X(CT_I16, int16_t, unsigned, i16, __VA_ARGS__)                                 \
  X(CT_I32, int32_t, uint32_t, i32, __VA_ARGS__)                                 \
  X(CT_I64, int64_t, uint64_t, i64, __VA_ARGS__)
#define BOOL_TYPE(X, ...) X(CT_BOOL, bool, unsigned, b, __VA_ARGS__)
#define ALL_TYPES(X, ...) \
  FLOAT_TYPES(X, __VA_ARGS__) INT_TYPES(X, __VA_ARGS__) BOOL_TYPE(X, __VA_ARGS__)

/* ---- Helpers for the float expressions ----------------------------------- */
#define DEFINE_FLOAT_HELPERS(E_, T, UT, S, unused)                              \
  /* Python's floor division, as torch's div_floor: exact for representable */ \
  /* quotients, IEEE results (inf, nan) for b == 0. */                        \
  static inline T floordiv_##S(T a, T b) {                                     \
    if (b == 0) return a / b;                                                  \
    T mod = fmod(a, b);                                                        \
    T div = (a - mod) / b;                                                     \
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;                            \
    if (div == 0) return copysign((T)0, a / b);                                \
    T fl = floor(div);                                                         \
    if (div - fl > (T)0.5) fl += 1;                                            \
    return fl;                                                                 \
  }                                                                            \
  /* Python's %: the sign of the divisor. */                                   \
  static inline T pyrem_##S(T a, T b) {                                        \
    T mod = fmod(a, b);                                                        \
    if (mod != 0 && (b < 0) != (mod < 0)) mod += b;                            \
    return mod;                                                                \
  }
FLOAT_TYPES(DEFINE_FLOAT_HELPERS, 0)

/* b^e for e >= 0, wrapping modulo 2^64 (callers truncate to their width). */
static inline uint64_t ipow(uint64_t b, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return r;
}

/* ---- Op expressions: E(T, UT, S, x, y) ------------------------------------ */
#define F_ADD(T, UT, S, x, y) ((x) + (y))
#define F_SUB(T, UT, S, x, y) ((x) - (y))
#define F_MUL(T, UT, S, x, y) ((x) * (y))
#define F_DIV(T, UT, S, x, y) ((x) / (y))
#define F_FLOORDIV(T, UT, S, x, y) floordiv_##S(x, y)
#define F_POW(T, UT, S, x, y) pow(x, y)
#define F_MAX(T, UT, S, x, y) (((x) != (x) || (x) > (y)) ? (x) : (y)) /* nan wins */
#define F_MIN(T, UT, S, x, y) (((x) != (x) || (x) < (y)) ? (x) : (y))
#define F_FMOD(T, UT, S, x, y) fmod(x, y)
#define F_REM(T, UT, S, x, y) pyrem_##S(x, y)
#define F_ATAN2(T, UT, S, x, y) atan2(x, y)

#define I_ADD(T, UT, S, x, y) ((T)((UT)(x) + (UT)(y)))
#define I_SUB(T, UT, S, x, y) ((T)((UT)(x) - (UT)(y)))
#define I_MUL(T, UT, S, x, y) ((T)((UT)(x) * (UT)(y)))
#define I_MAX(T, UT, S, x, y) ((x) > (y) ? (x) : (y))
#define I_MIN(T, UT, S, x, y) ((x) < (y) ? (x) : (y))
/* Checked integer ops: `bad` is a local of the row kernel. */
#define I_FLOORDIV(T, UT, S, x, y)                                                  \
  ((y) == 0 ? (bad = 1, (T)0)                                                     \
   : (y) == -1 ? (T)((UT)0 - (UT)(x))                                             \
   : (T)((x) / (y) - (((x) % (y) != 0) & (((x) < 0) != ((y) < 0)))))
#define I_REM(T, UT, S, x, y)                                                       \
  ((y) == 0 ? (bad = 1, (T)0)                                                     \
   : (y) == -1 ? (T)0                                                             \
   : (T)(((x) % (y) != 0 && (((x) % (y) < 0) != ((y) < 0))) ? (x) % (y) + (y) : (x) % (y)))
#define I_FMOD(T, UT, S, x, y) ((y) == 0 ? (bad = 1, (T)0) : (y) == -1 ? (T)0 : (T)((x) % (y)))
#define I_POW(T, UT, S, x, y) \
  ((y) < 0 ? (bad = 1, (T)0) : (T)ipow((uint64_t)(x), (uint64_t)(y)))

#define B_OR(T, UT, S, x, y) ((x) | (y))
#define B_AND(T, UT, S, x, y) ((x) & (y))

#define C_EQ(T, UT, S, x, y) ((x) == (y))
#define C_NE(T, UT, S, x, y) ((x) != (y))
#define C_LT(T, UT, S, x, y) ((x) < (y))
#define C_LE(T, UT, S, x, y) ((x) <= (y))
#define C_GT(T, UT, S, x, y) ((x) > (y))
#define C_GE(T, UT, S, x, y) ((x) >= (y))
#define C_AND(T, UT, S, x, y) ((x) != 0 && (y) != 0)
#define C_OR(T, UT, S, x, y) ((x) != 0 || (y) != 0)
#define C_XOR(T, UT, S, x, y) (((x) != 0) != ((y) != 0))

/* The kernels: F (f32, f64), I (integers), IC (integers, checked), B (bool),
 * C (every dtype; bool result). A missing (op, dtype) pair is rejected by the
 * op layer before it gets here. */
#define BINARY_KERNELS(F, I, IC, B, C)                                        \
  F(ADD, F_ADD) I(ADD, I_ADD) B(ADD, B_OR)                                    \
  F(SUB, F_SUB) I(SUB, I_SUB)                                                 \
  F(MUL, F_MUL) I(MUL, I_MUL) B(MUL, B_AND)                                   \
  F(DIV, F_DIV)                                                               \
  F(FLOOR_DIVIDE, F_FLOORDIV) IC(FLOOR_DIVIDE, I_FLOORDIV)                    \
  F(POW, F_POW) IC(POW, I_POW)                                                \
  F(MAXIMUM, F_MAX) I(MAXIMUM, I_MAX) B(MAXIMUM, B_OR)                        \
  F(MINIMUM, F_MIN) I(MINIMUM, I_MIN) B(MINIMUM, B_AND)                       \
  F(FMOD, F_FMOD) IC(FMOD, I_FMOD)                                            \
  F(REMAINDER, F_REM) IC(REMAINDER, I_REM)                                    \
  F(ATAN2, F_ATAN2)                                                           \
  C(EQ, C_EQ) C(NE, C_NE) C(LT, C_LT) C(LE, C_LE) C(GT, C_GT) C(GE, C_GE)     \
  C(LOGICAL_AND, C_AND) C(LOGICAL_OR, C_OR) C(LOGICAL_XOR, C_XOR)

/* ---- Row kernel templates -------------------------------------------------- */

/* out (TO) = E(a, b) over a row; a and b of type T. */
#define DEFINE_ROW(NAME, TO, T, UT, S, E)                                             \
  static void NAME(char **d, const int64_t *s, int64_t n, void *ctx) {                \
    (void)ctx;                                                                        \
    const int64_t eo = (int64_t)sizeof(TO), ei = (int64_t)sizeof(T);                  \
    TO *o = (TO *)d[0];                                                               \
    const T *pa = (const T *)d[1], *pb = (const T *)d[2];                             \
    if (s[0] == eo && s[1] == ei && s[2] == ei) {                                     \
      CT_SIMD for (int64_t i = 0; i < n; i++) {                                       \
        const T x = pa[i], y = pb[i];                                                 \
        o[i] = (TO)(E(T, UT, S, x, y));                                               \
      }                                                                               \
    } else if (s[0] == eo && s[1] == ei && s[2] == 0) {                               \
      const T y = *pb;                                                                \
      CT_SIMD for (int64_t i = 0; i < n; i++) {                                       \
        const T x = pa[i];                                                            \
        o[i] = (TO)(E(T, UT, S, x, y));                                               \
      }                                                                               \
    } else if (s[0] == eo && s[1] == 0 && s[2] == ei) {                               \
      const T x = *pa;                                                                \
      CT_SIMD for (int64_t i = 0; i < n; i++) {                                       \
        const T y = pb[i];                                                            \
        o[i] = (TO)(E(T, UT, S, x, y));                                               \
      }                                                                               \
    } else {                                                                          \
      for (int64_t i = 0; i < n; i++) {                                               \
        const T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]); \
        *(TO *)(d[0] + i * s[0]) = (TO)(E(T, UT, S, x, y));                           \
      }                                                                               \
    }                                                                                 \
  }

/* Checked integer ops: division does not vectorize, so one strided loop; an
 * invalid operand raises ctx->bad. */
#define DEFINE_ROW_CHECKED(NAME, T, UT, S, E)                                          \
  static void NAME(char **d, const int64_t *s, int64_t n, void *ctx) {                 \
    int bad = 0;                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                  \
      const T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]);   \
      *(T *)(d[0] + i * s[0]) = E(T, UT, S, x, y);                                     \
    }                                                                                  \
    if (bad) atomic_store_explicit(&((ct_ew_ctx *)ctx)->bad, 1, memory_order_relaxed); \
  }

/* ---- Instantiation ---------------------------------------------------------- */
#define DEF_SAME(E_, T, UT, S, OP, E) DEFINE_ROW(bin_##OP##_##S, T, T, UT, S, E)
#define DEF_CHECKED(E_, T, UT, S, OP, E) DEFINE_ROW_CHECKED(bin_##OP##_##S, T, UT, S, E)
#define DEF_CMP(E_, T, UT, S, OP, E) DEFINE_ROW(bin_##OP##_##S, bool, T, UT, S, E)
#define DEF_F(OP, E) FLOAT_TYPES(DEF_SAME, OP, E)
#define DEF_I(OP, E) INT_TYPES(DEF_SAME, OP, E)
#define DEF_IC(OP, E) INT_TYPES(DEF_CHECKED, OP, E)
#define DEF_B(OP, E) BOOL_TYPE(DEF_SAME, OP, E)
#define DEF_C(OP, E) ALL_TYPES(DEF_CMP, OP, E)
BINARY_KERNELS(DEF_F, DEF_I, DEF_IC, DEF_B, DEF_C)

#define ENTRY(E_, T, UT, S, OP, E) [CT_BOP_##OP][E_] = bin_##OP##_##S,
#define ENT_F(OP, E) FLOAT_TYPES(ENTRY, OP, E)
#define ENT_I(OP, E) INT_TYPES(ENTRY, OP, E)
#define ENT_B(OP, E) BOOL_TYPE(ENTRY, OP, E)
#define ENT_C(OP, E) ALL_TYPES(ENTRY, OP, E)
/* Indexed [op][compute dtype]; f16/bf16 use the f32 entry. */
static const ct_loop_fn binary_fns[CT_BOP_COUNT][CT_DTYPE_COUNT] = {
    BINARY_KERNELS(ENT_F, ENT_I, ENT_I, ENT_B, ENT_C)};

#define NONE(OP, E)
#define ENT_CHECKED(OP, E) [CT_BOP_##OP] = true,
/* Ops whose integer kernels can meet invalid operands, and what to say. */
static const bool checked_ops[CT_BOP_COUNT] = {BINARY_KERNELS(NONE, NONE, ENT_CHECKED, NONE, NONE)};

static ct_status bad_operand(ct_binary_op op) {
  if (op == CT_BOP_POW)
    return ct__fail_status(CT_ERR_ARG, "pow: integers to negative integer powers are not allowed");
  return ct__fail_status(CT_ERR_ARG, "%s: integer division by zero", ct__binary_info[op].name);
}

/* The row kernel for (op, compute dtype) and its context; half dtypes wrap the
 * f32 kernel in the adapter. dtypes: the operands' dtypes (out first). */
static ct_loop_fn pick(ct_binary_op op, ct_dtype cd, int nargs, const ct_dtype *dtypes,
                       ct_ew_ctx *ectx, ct_half_ctx *hctx, void **ctx) {
  *ctx = ectx;
  if (!ct__is_half(cd)) return binary_fns[op][cd];
  *hctx = (ct_half_ctx){.f32_fn = binary_fns[op][CT_F32], .f32_ctx = ectx, .nargs = nargs,
                        .out_is_written = true};
  for (int a = 0; a < nargs; a++) hctx->dtypes[a] = dtypes[a];
  *ctx = hctx;
  return hctx->f32_fn ? ct__half_rows : NULL;
}

static ct_status missing(ct_binary_op op, ct_dtype cd) {
  return ct__fail_status(CT_ERR_INTERNAL, "%s: no CPU kernel for %s", ct__binary_info[op].name,
                         ct_dtype_name(cd));
}

ct_status ct__cpu_binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  ct_ew_ctx ectx = {0};
  ct_half_ctx hctx;
  void *ctx;
  ct_dtype dts[3] = {out->dtype, a->dtype, b->dtype};
  ct_loop_fn fn = pick(op, a->dtype, 3, dts, &ectx, &hctx, &ctx);
  if (!fn) return missing(op, a->dtype);
  const ct_tensor *ts[3] = {out, a, b};
  ct__ew_run(3, ts, fn, ctx);
  if (checked_ops[op] && atomic_load(&ectx.bad)) return bad_operand(op);
  return CT_OK;
}

/* ---- Scalar operand ------------------------------------------------------------ */

/* Runs a 3-operand row kernel with one operand fixed to a scalar (stride 0). */
typedef struct scalar_ctx {
  ct_loop_fn fn;
  void *fn_ctx;
  bool reversed;   /* scalar is the first operand */
  char *scalar;
} scalar_ctx;

static void scalar_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  const scalar_ctx *c = vctx;
  char *dd[3] = {d[0], c->reversed ? c->scalar : d[1], c->reversed ? d[1] : c->scalar};
  int64_t ss[3] = {s[0], c->reversed ? 0 : s[1], c->reversed ? s[1] : 0};
  c->fn(dd, ss, n, c->fn_ctx);
}

/* Float-to-integer without undefined behaviour: saturate to int64 (nan: 0). */
static inline int64_t sat_i64(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

/* Stores s as dtype dt at p (integers wrap modulo their width, as a C cast of
 * the int64 value). */
static void store_scalar(void *p, ct_dtype dt, double s) {
  switch (dt) {
#define STORE_F(E_, T, UT, S, unused) \
  case E_: *(T *)p = (T)s; break;
#define STORE_I(E_, T, UT, S, unused) \
  case E_: *(T *)p = (T)(uint64_t)sat_i64(s); break;
    FLOAT_TYPES(STORE_F, 0)
    INT_TYPES(STORE_I, 0)
    case CT_BOOL: *(bool *)p = s != 0; break;
    default: *(float *)p = (float)s; break; /* f16/bf16 compute in f32 */
#undef STORE_F
#undef STORE_I
  }
}

ct_status ct__cpu_binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                                bool reversed) {
  ct_ew_ctx ectx = {0};
  ct_half_ctx hctx;
  void *inner_ctx;
  /* f16/bf16: the scalar stays an f32 operand, not rounded to half */
  ct_dtype sdt = ct__is_half(a->dtype) ? CT_F32 : a->dtype;
  ct_dtype dts[3] = {out->dtype, reversed ? sdt : a->dtype, reversed ? a->dtype : sdt};
  ct_loop_fn fn = pick(op, a->dtype, 3, dts, &ectx, &hctx, &inner_ctx);
  if (!fn) return missing(op, a->dtype);
  _Alignas(8) char sbuf[8];
  store_scalar(sbuf, sdt, s);
  scalar_ctx sc = {.fn = fn, .fn_ctx = inner_ctx, .reversed = reversed, .scalar = sbuf};
  const ct_tensor *ts[2] = {out, a};
  ct__ew_run(2, ts, scalar_row, &sc);
  if (checked_ops[op] && atomic_load(&ectx.bad)) return bad_operand(op);
  return CT_OK;
}

/* ---- axpy: out = a + alpha * b -------------------------------------------------- */

#define F_AXPY(T, UT, S, x, y) ((x) + alpha * (y))
#define I_AXPY(T, UT, S, x, y) ((T)((UT)(x) + (UT)alpha * (UT)(y)))
#define B_AXPY(T, UT, S, x, y) ((x) | (alpha & (y)))

/* As DEFINE_ROW but with alpha (ctx->p0 converted to T) in scope. */
#define DEFINE_AXPY(E_, T, UT, S, E, CONV)                                     \
  static void axpy_##S(char **d, const int64_t *s, int64_t n, void *ctx) {      \
    const T alpha = CONV(((const ct_ew_ctx *)ctx)->p0);                        \
    const int64_t es = (int64_t)sizeof(T);                                     \
    T *o = (T *)d[0];                                                          \
    const T *pa = (const T *)d[1], *pb = (const T *)d[2];                      \
    if (s[0] == es && s[1] == es && s[2] == es) {                              \
      CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = E(T, UT, S, pa[i], pb[i]); \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++)                                          \
        *(T *)(d[0] + i * s[0]) =                                              \
            E(T, UT, S, *(const T *)(d[1] + i * s[1]), *(const T *)(d[2] + i * s[2])); \
    }                                                                          \
  }
#define CONV_F(v) (v)
#define CONV_I(v) sat_i64(v)
#define CONV_B(v) ((v) != 0)
FLOAT_TYPES(DEFINE_AXPY, F_AXPY, CONV_F)
INT_TYPES(DEFINE_AXPY, I_AXPY, CONV_I)
BOOL_TYPE(DEFINE_AXPY, B_AXPY, CONV_B)

#define AXPY_ENTRY(E_, T, UT, S, unused) [E_] = axpy_##S,
static const ct_loop_fn axpy_fns[CT_DTYPE_COUNT] = {ALL_TYPES(AXPY_ENTRY, 0)};

ct_status ct__cpu_axpy(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha) {
  ct_ew_ctx ectx = {.p0 = alpha};
  void *ctx = &ectx;
  ct_loop_fn fn = axpy_fns[out->dtype];
  ct_half_ctx hctx;
  if (ct__is_half(out->dtype)) {
    hctx = (ct_half_ctx){.f32_fn = axpy_fns[CT_F32], .f32_ctx = &ectx, .nargs = 3,
                         .dtypes = {out->dtype, a->dtype, b->dtype}, .out_is_written = true};
    fn = ct__half_rows;
    ctx = &hctx;
  }
  const ct_tensor *ts[3] = {out, a, b};
  ct__ew_run(3, ts, fn, ctx);
  return CT_OK;
}

/* ---- where: out = cond ? a : b, moving elements by size ------------------------- */

#define DEFINE_WHERE(T)                                                              \
  static void where_##T(char **d, const int64_t *s, int64_t n, void *ctx) {          \
    (void)ctx;                                                                       \
    const int64_t es = (int64_t)sizeof(T);                                           \
    if (s[0] == es && s[1] == 1 && s[2] == es && s[3] == es) {                       \
      T *o = (T *)d[0];                                                              \
      const uint8_t *c = (const uint8_t *)d[1];                                      \
      const T *pa = (const T *)d[2], *pb = (const T *)d[3];                          \
      CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = c[i] ? pa[i] : pb[i];           \
    } else {                                                                         \
      for (int64_t i = 0; i < n; i++)                                                \
        *(T *)(d[0] + i * s[0]) = *(const uint8_t *)(d[1] + i * s[1])                \
                                      ? *(const T *)(d[2] + i * s[2])                \
                                      : *(const T *)(d[3] + i * s[3]);               \
    }                                                                                \
  }
DEFINE_WHERE(uint8_t)
DEFINE_WHERE(uint16_t)
DEFINE_WHERE(uint32_t)
DEFINE_WHERE(uint64_t)

ct_status ct__cpu_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                        const ct_tensor *b) {
  ct_loop_fn fn = NULL;
  switch (ct__elsize(out->dtype)) {
  case 1: fn = where_uint8_t; break;
  case 2: fn = where_uint16_t; break;
  case 4: fn = where_uint32_t; break;
  case 8: fn = where_uint64_t; break;
  default: return ct__fail_status(CT_ERR_INTERNAL, "where: unexpected element size");
  }
  const ct_tensor *ts[4] = {out, cond, a, b};
  ct__ew_run(4, ts, fn, NULL);
  return CT_OK;
}
