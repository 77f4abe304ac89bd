/* Template of the CPU elementwise row loops, included once per native dtype
 * by ew_rows.h with CT_T (the element type), CT_S (its suffix), CT_DT (its
 * ct_dtype) and, for integers and bool, CT_UT (core/unary_int_t.h); CT_FN
 * names the instance (core/host_device.h). Each loop runs a formula of
 * core/unary_math.h or core/binary_math.h over one row (a ct_loop_fn: base
 * pointers d, byte strides s, length n): a contiguous case the compiler
 * vectorizes, then a strided one. The loops are always inlined into one-line
 * kernels that pass the formula as a constant, so every (op, dtype) kernel is
 * specialized: a switch over the op inside the element loop does not get
 * unswitched, and cost ~3 ns per element for relu. */

/* A unary op's parameter as CT_T: floats convert; integers saturate to the
 * dtype (clamp's bounds stay bounds), core/convert.h. */
static inline CT_T CT_FN(ew_param)(double v) {
#ifdef CT_UT
  return (CT_T)ct_saturate_to_dtype(v, CT_DT);
#else
  return (CT_T)v;
#endif
}

/* A scalar operand (binary_scalar, axpy's alpha) as CT_T: floats convert;
 * integers saturate to int64, then wrap; bool takes "nonzero". */
static inline CT_T CT_FN(ew_scalar)(double v) {
#ifdef CT_UT
  return (CT_T)ct_scalar_to_int(v, CT_DT);
#else
  return (CT_T)v;
#endif
}

/* ---- Unary: out = f(x, p0, p1) (out CT_T), or a predicate (out bool) ------------ */

static CT_ALWAYS_INLINE void CT_FN(unary_row)(char **d, const int64_t *s, int64_t n, void *ctx,
                                              CT_T (*f)(CT_T, CT_T, CT_T)) {
  const ct_ew_ctx *c = ctx;
  const CT_T p0 = CT_FN(ew_param)(c->p0), p1 = CT_FN(ew_param)(c->p1);
  const int64_t es = (int64_t)sizeof(CT_T);
  if (s[0] == es && s[1] == es) {
    CT_T *o = (CT_T *)d[0];
    const CT_T *x = (const CT_T *)d[1];
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = f(x[i], p0, p1);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    *(CT_T *)(d[0] + i * s[0]) = f(*(const CT_T *)(d[1] + i * s[1]), p0, p1);
}

static CT_ALWAYS_INLINE void CT_FN(unary_row_pred)(char **d, const int64_t *s, int64_t n,
                                                   bool (*f)(CT_T)) {
  if (s[0] == (int64_t)sizeof(bool) && s[1] == (int64_t)sizeof(CT_T)) {
    bool *o = (bool *)d[0];
    const CT_T *x = (const CT_T *)d[1];
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = f(x[i]);
    return;
  }
  for (int64_t i = 0; i < n; i++) *(bool *)(d[0] + i * s[0]) = f(*(const CT_T *)(d[1] + i * s[1]));
}

/* ---- Binary: out = f(a, b) -------------------------------------------------------
 * One vectorizable loop per stride pattern (all contiguous, b broadcast, a
 * broadcast) and a strided fallback; the output CT_T (binary_row) or bool
 * (binary_row_cmp, comparisons): two instances of ew_binary_row_t.h. */

#define CT_EW_OUT CT_T
#define CT_EW_NAME binary_row
#include "backend/cpu/ew_binary_row_t.h"
#undef CT_EW_OUT
#undef CT_EW_NAME
#define CT_EW_OUT bool
#define CT_EW_NAME binary_row_cmp
#include "backend/cpu/ew_binary_row_t.h"
#undef CT_EW_OUT
#undef CT_EW_NAME

#ifdef CT_UT
/* Integer ops that can meet invalid operands (division by zero, negative
 * powers): f leaves the element 0 and sets *bad; the row raises ctx->bad.
 * Division does not vectorize, so one strided loop. */
static CT_ALWAYS_INLINE void CT_FN(binary_row_checked)(char **d, const int64_t *s, int64_t n,
                                                       void *ctx, CT_T (*f)(CT_T, CT_T, bool *)) {
  bool bad = false;
  for (int64_t i = 0; i < n; i++)
    *(CT_T *)(d[0] + i * s[0]) =
        f(*(const CT_T *)(d[1] + i * s[1]), *(const CT_T *)(d[2] + i * s[2]), &bad);
  if (bad) atomic_store_explicit(&((ct_ew_ctx *)ctx)->bad, 1, memory_order_relaxed);
}
#endif

/* out = f(a, b, alpha), alpha = ctx->p0 as a scalar operand. */
static CT_ALWAYS_INLINE void CT_FN(axpy_row)(char **d, const int64_t *s, int64_t n, void *ctx,
                                             CT_T (*f)(CT_T, CT_T, CT_T)) {
  const CT_T alpha = CT_FN(ew_scalar)(((const ct_ew_ctx *)ctx)->p0);
  const int64_t es = (int64_t)sizeof(CT_T);
  if (s[0] == es && s[1] == es && s[2] == es) {
    CT_T *o = (CT_T *)d[0];
    const CT_T *a = (const CT_T *)d[1], *b = (const CT_T *)d[2];
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = f(a[i], b[i], alpha);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    *(CT_T *)(d[0] + i * s[0]) =
        f(*(const CT_T *)(d[1] + i * s[1]), *(const CT_T *)(d[2] + i * s[2]), alpha);
}
