/* CPU copies with dtype conversion, fills, and host transfers. */
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"

/* ---- Same-dtype copies: memcpy rows, or element moves by size ---------- */

static void copy_same_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  size_t es = (size_t)(uintptr_t)ctx;
  if (s[0] == (int64_t)es && s[1] == (int64_t)es) {
    memcpy(d[0], d[1], (size_t)n * es);
    return;
  }
  switch (es) {
#define MOVE(T)                                                                  \
  for (int64_t i = 0; i < n; i++) *(T *)(d[0] + i * s[0]) = *(const T *)(d[1] + i * s[1]); \
  break;
  case 1: MOVE(uint8_t)
  case 2: MOVE(uint16_t)
  case 4: MOVE(uint32_t)
  case 8: MOVE(uint64_t)
#undef MOVE
  }
}

/* ---- Converting copies: one row kernel per (dst, src) pair of native types */

/* Conversion of one value; bool destinations take "nonzero". */
#define CONV(TD, TS, v) ((TD)(v))
#define CONV_BOOL(TS, v) ((v) != 0)

#define DEFINE_CONVERT(ED, TD, ES, TS)                                                 \
  static void convert_##ED##_##ES(char **d, const int64_t *s, int64_t n, void *ctx) {   \
    (void)ctx;                                                                          \
    if (s[0] == sizeof(TD) && s[1] == sizeof(TS)) {                                    \
      TD *o = (TD *)d[0];                                                               \
      const TS *x = (const TS *)d[1];                                                   \
      for (int64_t i = 0; i < n; i++) o[i] = (TD)x[i];                                  \
    } else {                                                                            \
      for (int64_t i = 0; i < n; i++) *(TD *)(d[0] + i * s[0]) = (TD)*(const TS *)(d[1] + i * s[1]); \
    }                                                                                   \
  }

/* Casting to bool in C already means "!= 0", so one macro serves all pairs.
 * Float-to-integer casts of out-of-range values are undefined in C; they go
 * through int64 (and nan to 0) to stay defined, as torch's result is
 * unspecified there too. */
#define DEFINE_FROM(ES, TS)                 \
  DEFINE_CONVERT(CT_F64, double, ES, TS)    \
  DEFINE_CONVERT(CT_F32, float, ES, TS)     \
  DEFINE_CONVERT(CT_BOOL, bool, ES, TS)

static inline int64_t f2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

/* Integer destinations from floating sources, via f2i and wrap-around. */
#define DEFINE_F2I(ED, TD, ES, TS)                                                        \
  static void convert_##ED##_##ES(char **d, const int64_t *s, int64_t n, void *ctx) {     \
    (void)ctx;                                                                            \
    for (int64_t i = 0; i < n; i++)                                                       \
      *(TD *)(d[0] + i * s[0]) = (TD)(uint64_t)f2i((double)*(const TS *)(d[1] + i * s[1])); \
  }

/* Every destination for each source. */
#define INT_DSTS(X, ES, TS) \
  X(CT_I8, int8_t, ES, TS) X(CT_U8, uint8_t, ES, TS) X(CT_I16, int16_t, ES, TS) \
  X(CT_I32, int32_t, ES, TS) X(CT_I64, int64_t, ES, TS)

#define DEFINE_INT_SRC(ES, TS) DEFINE_FROM(ES, TS) INT_DSTS(DEFINE_CONVERT, ES, TS)
#define DEFINE_FLT_SRC(ES, TS) DEFINE_FROM(ES, TS) INT_DSTS(DEFINE_F2I, ES, TS)

DEFINE_FLT_SRC(CT_F32, float)
DEFINE_FLT_SRC(CT_F64, double)
DEFINE_INT_SRC(CT_I8, int8_t)
DEFINE_INT_SRC(CT_U8, uint8_t)
DEFINE_INT_SRC(CT_I16, int16_t)
DEFINE_INT_SRC(CT_I32, int32_t)
DEFINE_INT_SRC(CT_I64, int64_t)
DEFINE_INT_SRC(CT_BOOL, bool)

static ct_loop_fn convert_fn(ct_dtype dst, ct_dtype src) {
#define ENTRY(ED, TD, ES, TS) \
  if (dst == ED && src == ES) return convert_##ED##_##ES;
#define ALL_DSTS(ES, TS)                                                              \
  ENTRY(CT_F64, double, ES, TS) ENTRY(CT_F32, float, ES, TS) ENTRY(CT_BOOL, bool, ES, TS) \
  INT_DSTS(ENTRY, ES, TS)
  ALL_DSTS(CT_F32, float)
  ALL_DSTS(CT_F64, double)
  ALL_DSTS(CT_I8, int8_t)
  ALL_DSTS(CT_U8, uint8_t)
  ALL_DSTS(CT_I16, int16_t)
  ALL_DSTS(CT_I32, int32_t)
  ALL_DSTS(CT_I64, int64_t)
  ALL_DSTS(CT_BOOL, bool)
#undef ALL_DSTS
#undef ENTRY
  return NULL;
}

/* Half destinations or sources: go through f32 per element. */
static void convert_via_f32(char **d, const int64_t *s, int64_t n, void *ctx) {
  const ct_dtype *dt = ctx; /* [dst, src] */
  for (int64_t i = 0; i < n; i++) {
    char *o = d[0] + i * s[0];
    const char *x = d[1] + i * s[1];
    if (ct__is_half(dt[1]) && ct__is_half(dt[0])) {
      ct__half_store(o, dt[0], ct__half_load(x, dt[1]));
    } else if (ct__is_half(dt[1])) {
      float v = ct__half_load(x, dt[1]);
      ct_loop_fn f = convert_fn(dt[0], CT_F32);
      char *pp[2] = {o, (char *)&v};
      int64_t ss[2] = {s[0], sizeof(float)};
      f(pp, ss, 1, NULL);
    } else {
      float v;
      ct_loop_fn f = convert_fn(CT_F32, dt[1]);
      char *pp[2] = {(char *)&v, (char *)x};
      int64_t ss[2] = {sizeof(float), s[1]};
      f(pp, ss, 1, NULL);
      ct__half_store(o, dt[0], v);
    }
  }
}

/* Contiguous f32 <-> half rows (the common casts), vectorizable loops. */
static void f32_to_half_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  ct_dtype h = *(const ct_dtype *)ctx;
  for (int64_t i = 0; i < n; i++) ct__half_store(d[0] + i * s[0], h, *(const float *)(d[1] + i * s[1]));
}
static void half_to_f32_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  ct_dtype h = *(const ct_dtype *)ctx;
  for (int64_t i = 0; i < n; i++) *(float *)(d[0] + i * s[0]) = ct__half_load(d[1] + i * s[1], h);
}

ct_status ct__cpu_copy(ct_tensor *dst, const ct_tensor *src) {
  const ct_tensor *ts[2] = {dst, src};
  if (dst->dtype == src->dtype) {
    ct__loop(2, ts, copy_same_row, (void *)(uintptr_t)ct__elsize(dst->dtype));
    return CT_OK;
  }
  ct_dtype dt[2] = {dst->dtype, src->dtype};
  if (dst->dtype == CT_F32 && ct__is_half(src->dtype)) ct__loop(2, ts, half_to_f32_row, &dt[1]);
  else if (src->dtype == CT_F32 && ct__is_half(dst->dtype)) ct__loop(2, ts, f32_to_half_row, &dt[0]);
  else if (ct__is_half(dst->dtype) || ct__is_half(src->dtype)) ct__loop(2, ts, convert_via_f32, dt);
  else ct__loop(2, ts, convert_fn(dst->dtype, src->dtype), NULL);
  return CT_OK;
}

ct_status ct__cpu_copy_from_host(ct_tensor *dst, const void *src, size_t nbytes, bool non_blocking) {
  (void)non_blocking;
  memcpy(ct__data(dst), src, nbytes);
  return CT_OK;
}

ct_status ct__cpu_copy_to_host(void *dst, const ct_tensor *src, size_t nbytes, bool non_blocking) {
  (void)non_blocking;
  memcpy(dst, ct__data(src), nbytes);
  return CT_OK;
}

/* ---- Fill --------------------------------------------------------------- */

typedef struct fill_ctx {
  unsigned char bytes[8];
  size_t es;
} fill_ctx;

static void fill_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  const fill_ctx *c = vctx;
  switch (c->es) {
#define FILL(T)                                              \
  {                                                          \
    T v;                                                     \
    memcpy(&v, c->bytes, sizeof v);                          \
    if (s[0] == sizeof(T)) {                                 \
      T *o = (T *)d[0];                                      \
      for (int64_t i = 0; i < n; i++) o[i] = v;              \
    } else {                                                 \
      for (int64_t i = 0; i < n; i++) *(T *)(d[0] + i * s[0]) = v; \
    }                                                        \
    break;                                                   \
  }
  case 1: FILL(uint8_t)
  case 2: FILL(uint16_t)
  case 4: FILL(uint32_t)
  case 8: FILL(uint64_t)
#undef FILL
  }
}

ct_status ct__cpu_fill(ct_tensor *dst, double value) {
  fill_ctx c = {.es = ct__elsize(dst->dtype)};
  ct__store_from_double(c.bytes, dst->dtype, value);
  const ct_tensor *ts[1] = {dst};
  ct__loop(1, ts, fill_row, &c);
  return CT_OK;
}
