/* CPU reduction pass kernels (see reduce.h): for each pass and input dtype, a
 * ROW kernel folding a run of elements into one accumulator and a COLUMN
 * kernel folding rows into a block of accumulators, from the passes' init,
 * fold and merge of core/reduce_plan.h (reduce_kernels_t.h's loops); the f32
 * sum has a hand-written row kernel (blocked pairwise summation on vector
 * registers), the f32/f64 max and min one with lanes of the native type. */
#include "backend/cpu/ew_run.h"
#include "backend/cpu/reduce.h"

#define CT_RLANES 16
#define CT_RCOL_TILE 32

/* ---- Loads of the NZ_ passes (the others: reduce.h) ---------------------------------- */

/* NZ_ passes: 1 if the element is nonzero (half: any bit but the sign). */
static inline int64_t nz_f32(const float *q) { return *q != 0; }
static inline int64_t nz_f64(const double *q) { return *q != 0; }
static inline int64_t nz_f16(const uint16_t *q) { return (*q & 0x7fff) != 0; }
static inline int64_t nz_bf16(const uint16_t *q) { return (*q & 0x7fff) != 0; }
static inline int64_t nz_i8(const int8_t *q) { return *q != 0; }
static inline int64_t nz_u8(const uint8_t *q) { return *q != 0; }
static inline int64_t nz_i16(const int16_t *q) { return *q != 0; }
static inline int64_t nz_i32(const int32_t *q) { return *q != 0; }
static inline int64_t nz_i64(const int64_t *q) { return *q != 0; }
static inline int64_t nz_b8(const bool *q) { return *q; }

static inline int64_t fold_i(int pass, int64_t a, int64_t v, double aux, double P) {
  return ct_rpass_fold_i(pass, a, v);
}

/* ---- The loops, per dtype: reduce_kernels_t.h -------------------------------------- */

#define CT_TEMPLATE "backend/cpu/reduce_kernels_t.h"
#include "backend/cpu/for_reduce_types.h"
#undef CT_TEMPLATE

/* ---- The kernels: one per (pass, dtype), the pass a constant ----------------------- */

/* X(PASS) of each class of passes (core/reduce_plan.h's CT_RPASSES). */
#define F_PASSES(X, ...)                                                                          \
  X(F_SUM, __VA_ARGS__)                                                                           \
  X(F_PROD, __VA_ARGS__)                                                                          \
  X(F_MAX, __VA_ARGS__) X(F_MIN, __VA_ARGS__) X(F_ABS_SUM, __VA_ARGS__) X(F_ABS_MAX, __VA_ARGS__) \
      X(F_ABS_MIN, __VA_ARGS__) X(F_NONZERO, __VA_ARGS__) X(F_SQ_SUM, __VA_ARGS__)                \
          X(F_EXP_SUM, __VA_ARGS__) X(F_DEV_SQ_SUM, __VA_ARGS__) X(F_SCALED_SQ_SUM, __VA_ARGS__)  \
              X(F_SCALED_POW_SUM, __VA_ARGS__) X(F_POW_SUM, __VA_ARGS__)
#define I_PASSES(X, ...) \
  X(I_SUM, __VA_ARGS__) X(I_PROD, __VA_ARGS__) X(I_MAX, __VA_ARGS__) X(I_MIN, __VA_ARGS__)
#define NZ_PASSES(X, ...) X(NZ_ALL, __VA_ARGS__) X(NZ_ANY, __VA_ARGS__)

/* X(dtype enum suffix, kernel suffix) of the dtypes of each class. */
#define F_DTYPES(X, P) X(P, F32, f32) X(P, F64, f64) X(P, F16, f16) X(P, BF16, bf16)
#define I_DTYPES(X, P) \
  X(P, I8, i8) X(P, U8, u8) X(P, I16, i16) X(P, I32, i32) X(P, I64, i64) X(P, BOOL, b8)
#define NZ_DTYPES(X, P)                                                                   \
  X(P, F32, nz_f32)                                                                       \
  X(P, F64, nz_f64)                                                                       \
  X(P, F16, nz_f16) X(P, BF16, nz_bf16) X(P, I8, nz_i8) X(P, U8, nz_u8) X(P, I16, nz_i16) \
      X(P, I32, nz_i32) X(P, I64, nz_i64) X(P, BOOL, nz_b8)

/* clang-format off */
#define KERNELS(PASS, E, S) \
  static void row_##PASS##_##E(const char *p, int64_t s, int64_t n, ct_racc *acc, double aux, double P) { rrow_##S(p, s, n, acc, aux, P, CT_RP_##PASS); } \
  static void col_##PASS##_##E(const char *p, int64_t rs, int64_t nrows, int64_t m, int64_t cs, ct_racc *acc, const double *aux, double P) { rcol_##S(p, rs, nrows, m, cs, acc, aux, P, CT_RP_##PASS); }
/* clang-format on */
#define GEN_F(PASS, unused) F_DTYPES(KERNELS, PASS)
#define GEN_I(PASS, unused) I_DTYPES(KERNELS, PASS)
#define GEN_NZ(PASS, unused) NZ_DTYPES(KERNELS, PASS)
F_PASSES(GEN_F, 0)
I_PASSES(GEN_I, 0)
NZ_PASSES(GEN_NZ, 0)

/* ---- The f32 sum: blocked pairwise summation --------------------------------
 * A row is cut into blocks of CT_SUM_BLOCK floats. Each block is summed into
 * 64 float lanes held in four 16-wide vector registers (each lane adds only
 * CT_SUM_BLOCK / 64 values, so rounding error stays near 64 ulp of a lane's
 * sum); the lanes are folded to 16 and join 16 f64 lanes, which are folded
 * once at the end. Streams at memory bandwidth: four independent vector adds
 * per 64 floats, no per-element branch, and no serial horizontal fold per
 * block (16 dependent f64 adds per 16 KB block cost 12% of the stream). */
#define CT_SUM_BLOCK 4096
typedef float ct_v16f __attribute__((vector_size(64)));
typedef double ct_v8d __attribute__((vector_size(64)));

double ct__sum_f32(const float *x, int64_t n) {
  ct_v8d lo = {0}, hi = {0};
  while (n >= 64) {
    int64_t b = (n < CT_SUM_BLOCK ? n : CT_SUM_BLOCK) & ~(int64_t)63;
    ct_v16f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (int64_t i = 0; i < b; i += 64) {
      /* loads by memcpy, in place: a function returning a 64-byte vector
       * changes the ABI where the build has no AVX-512 (-Werror=psabi) */
      ct_v16f v0, v1, v2, v3;
      memcpy(&v0, x + i, sizeof v0);
      memcpy(&v1, x + i + 16, sizeof v1);
      memcpy(&v2, x + i + 32, sizeof v2);
      memcpy(&v3, x + i + 48, sizeof v3);
      a0 += v0;
      a1 += v1;
      a2 += v2;
      a3 += v3;
    }
    a0 = (a0 + a1) + (a2 + a3);
    lo += __builtin_convertvector(__builtin_shufflevector(a0, a0, 0, 1, 2, 3, 4, 5, 6, 7), ct_v8d);
    hi += __builtin_convertvector(__builtin_shufflevector(a0, a0, 8, 9, 10, 11, 12, 13, 14, 15),
                                  ct_v8d);
    x += b;
    n -= b;
  }
  lo += hi;
  double total = ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((lo[4] + lo[5]) + (lo[6] + lo[7]));
  for (int64_t i = 0; i < n; i++) total += (double)x[i];
  return total;
}

static void row_F_SUM_f32_fast(const char *p, int64_t s, int64_t n, ct_racc *acc, double aux,
                               double P) {
  (void)aux;
  (void)P;
  if (s == (int64_t)sizeof(float)) {
    acc->d += ct__sum_f32((const float *)p, n);
    return;
  }
  double a = acc->d;
  for (int64_t i = 0; i < n; i++) a += (double)*(const float *)(p + i * s);
  acc->d = a;
}

/* ---- f32/f64 max and min: lanes of the native type: reduce_minmax_t.h --------------- */

#define CT_TEMPLATE "backend/cpu/reduce_minmax_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

/* ---- Tables ---------------------------------------------------------------- */

#define ENTRY(PASS, E, S) [CT_RP_##PASS][CT_##E] = {row_##PASS##_##E, col_##PASS##_##E},
#define ENT_F(PASS, unused) F_DTYPES(ENTRY, PASS)
#define ENT_I(PASS, unused) I_DTYPES(ENTRY, PASS)
#define ENT_NZ(PASS, unused) NZ_DTYPES(ENTRY, PASS)
/* Indexed [pass][x's dtype]; {NULL, NULL} where the pair is invalid. */
static const ct_rkernel kernels[CT_RP_COUNT][CT_DTYPE_COUNT] = {
    F_PASSES(ENT_F, 0) I_PASSES(ENT_I, 0) NZ_PASSES(ENT_NZ, 0)};

ct_rkernel ct__rkernel(ct_rpass pass, ct_dtype dtype) {
  if (pass == CT_RP_F_SUM && dtype == CT_F32)
    return (ct_rkernel){row_F_SUM_f32_fast, col_F_SUM_F32};
  if (pass == CT_RP_F_MAX && dtype == CT_F32) return (ct_rkernel){row_max_f32, col_F_MAX_F32};
  if (pass == CT_RP_F_MIN && dtype == CT_F32) return (ct_rkernel){row_min_f32, col_F_MIN_F32};
  if (pass == CT_RP_F_MAX && dtype == CT_F64) return (ct_rkernel){row_max_f64, col_F_MAX_F64};
  if (pass == CT_RP_F_MIN && dtype == CT_F64) return (ct_rkernel){row_min_f64, col_F_MIN_F64};
  return kernels[pass][dtype];
}

ct_racc ct__rpass_init(ct_rpass pass) {
  ct_racc a;
  if (ct_rpass_is_int(pass))
    a.i = ct_rpass_init_i(pass);
  else
    a.d = ct_rpass_init_f(pass);
  return a;
}

void ct__rpass_merge(ct_rpass pass, ct_racc *a, const ct_racc *b, int64_t n) {
  if (ct_rpass_is_int(pass))
    for (int64_t i = 0; i < n; i++) a[i].i = ct_rpass_merge_i(pass, a[i].i, b[i].i);
  else
    for (int64_t i = 0; i < n; i++) a[i].d = ct_rpass_merge_f(pass, a[i].d, b[i].d);
}
