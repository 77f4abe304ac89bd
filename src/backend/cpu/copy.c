/* CPU copies with dtype conversion, fills, and host transfers. */
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/bf16_rows.h"
#include "backend/cpu/cpu_loop.h"
#include "core/convert.h"

/* ---- Moves (same dtype) and fills, by element size: copy_move_t.h ------------ */

#define CT_TEMPLATE "backend/cpu/copy_move_t.h"
#include "backend/cpu/for_sizes.h"
#undef CT_TEMPLATE

/* Same-dtype rows: memcpy when both are contiguous, else moves by size. */
static void copy_same_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  size_t es = (size_t)(uintptr_t)ctx;
  if (s[0] == (int64_t)es && s[1] == (int64_t)es) {
    memcpy(d[0], d[1], (size_t)n * es);
    return;
  }
  switch (es) {
    case 1:
      move_uint8_t(d, s, n, NULL);
      break;
    case 2:
      move_uint16_t(d, s, n, NULL);
      break;
    case 4:
      move_uint32_t(d, s, n, NULL);
      break;
    default:
      move_uint64_t(d, s, n, NULL);
      break;
  }
}

/* ---- Converting copies: one row kernel per (dst, src) pair of native types:
 * copy_convert_t.h, once per source ------------------------------------------- */

#define CT_TEMPLATE "backend/cpu/copy_convert_t.h"
#include "core/for_float_types.h"
#define CT_WITH_BOOL
#include "core/for_int_types.h"
#undef CT_WITH_BOOL
#undef CT_TEMPLATE

/* The native dtypes, X(ENUM, suffix, ...), twice: a macro can't expand itself. */
#define NATIVE_SRC(X) \
  X(F32, f32) X(F64, f64) X(I8, i8) X(U8, u8) X(I16, i16) X(I32, i32) X(I64, i64) X(BOOL, b8)
#define NATIVE_DST(X, ...)                                                                        \
  X(F32, f32, __VA_ARGS__)                                                                        \
  X(F64, f64, __VA_ARGS__) X(I8, i8, __VA_ARGS__) X(U8, u8, __VA_ARGS__) X(I16, i16, __VA_ARGS__) \
      X(I32, i32, __VA_ARGS__) X(I64, i64, __VA_ARGS__) X(BOOL, b8, __VA_ARGS__)
#define ENTRY(ED, SD, ES, SS) [CT_##ED][CT_##ES] = convert_##SD##_##SS,
#define FROM(ES, SS) NATIVE_DST(ENTRY, ES, SS)
/* Indexed [dst][src] for the native dtypes (halves convert through f32). */
static const ct_loop_fn convert_fns[CT_DTYPE_COUNT][CT_DTYPE_COUNT] = {NATIVE_SRC(FROM)};
#undef FROM
#undef ENTRY

static ct_loop_fn convert_fn(ct_dtype dst, ct_dtype src) { return convert_fns[dst][src]; }

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
  if (h == CT_BF16 && s[0] == 2 && s[1] == 4) { /* vectorized (bf16_rows.c) */
    ct__bf16_from_f32_row((uint16_t *)d[0], (const float *)d[1], n);
    return;
  }
  for (int64_t i = 0; i < n; i++) ct__half_store(d[0] + i * s[0], h, *(const float *)(d[1] + i * s[1]));
}
static void half_to_f32_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  ct_dtype h = *(const ct_dtype *)ctx;
  if (h == CT_BF16 && s[0] == 4 && s[1] == 2) {
    ct__bf16_to_f32_row((float *)d[0], (const uint16_t *)d[1], n);
    return;
  }
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

/* ---- Fill: the value's bits (ct__store_from_double), moved by size ----------- */

ct_status ct__cpu_fill(ct_tensor *dst, double value) {
  _Alignas(8) unsigned char bits[8];
  ct__store_from_double(bits, dst->dtype, value);
  const ct_tensor *ts[1] = {dst};
  switch (ct__elsize(dst->dtype)) {
    case 1:
      ct__loop(1, ts, fill_uint8_t, bits);
      break;
    case 2:
      ct__loop(1, ts, fill_uint16_t, bits);
      break;
    case 4:
      ct__loop(1, ts, fill_uint32_t, bits);
      break;
    default:
      ct__loop(1, ts, fill_uint64_t, bits);
      break;
  }
  return CT_OK;
}
