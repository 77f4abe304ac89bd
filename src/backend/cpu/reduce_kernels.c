/* CPU reduction pass kernels (see reduce.h): for each pass and input dtype, a
 * ROW kernel folding a run of elements into one accumulator and a COLUMN
 * kernel folding rows into a block of accumulators. Generated from one table
 * of (init, update, merge) per pass; the f32 sum has a hand-written row
 * kernel (blocked pairwise summation on vector registers).
 *
 * Contiguous rows are folded into CT_RLANES independent lane accumulators
 * (merged at the end), which removes the loop-carried dependency so that the
 * compiler vectorizes the loop without reassociating floating-point math. */
#include <math.h>

#include "backend/cpu/reduce.h"

#define CT_RLANES 16

/* ---- The passes: X(PASS, ACC, INIT, UPDATE(a, v), MERGE(a, b), USES_AUX) --
 * F_ passes see v as a double; AUX is the per-output value and P the order. */
#define CT_F_PASSES(X)                                                                  \
  X(F_SUM, double, 0.0, a + v, a + b, 0)                                                \
  X(F_PROD, double, 1.0, a * v, a * b, 0)                                               \
  X(F_MAX, double, -INFINITY, ct__nanmax(a, v), ct__nanmax(a, b), 0)                    \
  X(F_MIN, double, INFINITY, ct__nanmin(a, v), ct__nanmin(a, b), 0)                     \
  X(F_ABS_SUM, double, 0.0, a + fabs(v), a + b, 0)                                      \
  X(F_ABS_MAX, double, 0.0, ct__nanmax(a, fabs(v)), ct__nanmax(a, b), 0)                \
  X(F_ABS_MIN, double, INFINITY, ct__nanmin(a, fabs(v)), ct__nanmin(a, b), 0)           \
  X(F_NONZERO, double, 0.0, a + (double)(v != 0), a + b, 0)                             \
  X(F_SQ_SUM, double, 0.0, a + v * v, a + b, 0)                                         \
  X(F_EXP_SUM, double, 0.0, a + exp(v - AUX), a + b, 1)                                 \
  X(F_DEV_SQ_SUM, double, 0.0, a + (v - AUX) * (v - AUX), a + b, 1)                     \
  X(F_SCALED_SQ_SUM, double, 0.0, a + (fabs(v) / AUX) * (fabs(v) / AUX), a + b, 1)      \
  X(F_SCALED_POW_SUM, double, 0.0, a + pow(fabs(v) / AUX, P), a + b, 1)                 \
  X(F_POW_SUM, double, 0.0, a + pow(fabs(v), P), a + b, 0)

/* I_ passes see v as an int64 (sums and products wrap around, as torch);
 * NZ_ passes see v as 1 (nonzero) or 0. */
#define CT_I_PASSES(X)                                                                            \
  X(I_SUM, int64_t, 0, (int64_t)((uint64_t)a + (uint64_t)v), (int64_t)((uint64_t)a + (uint64_t)b), 0) \
  X(I_PROD, int64_t, 1, (int64_t)((uint64_t)a * (uint64_t)v), (int64_t)((uint64_t)a * (uint64_t)b), 0) \
  X(I_MAX, int64_t, INT64_MIN, v > a ? v : a, b > a ? b : a, 0)                                  \
  X(I_MIN, int64_t, INT64_MAX, v < a ? v : a, b < a ? b : a, 0)
#define CT_NZ_PASSES(X)                    \
  X(NZ_ALL, int64_t, 1, a & v, a & b, 0)   \
  X(NZ_ANY, int64_t, 0, a | v, a | b, 0)

#define CT_ALL_PASSES(X) CT_F_PASSES(X) CT_I_PASSES(X) CT_NZ_PASSES(X)

/* Per-pass inline update and merge. */
#define DEFINE_OPS(PASS, ACC, INIT, UPD, MERGE, USES_AUX)                                   \
  static inline ACC upd_##PASS(ACC a, ACC v, double AUX, double P) {                         \
    (void)AUX;                                                                               \
    (void)P;                                                                                 \
    return UPD;                                                                              \
  }                                                                                          \
  static inline ACC merge_##PASS(ACC a, ACC b) { return MERGE; }
CT_ALL_PASSES(DEFINE_OPS)
#undef DEFINE_OPS

/* ---- Input dtypes: X(NAME, ENUM, T, LOAD(const T *q)) -------------------- */
#define CT_R_FLOAT_DTYPES(X, ...)                                             \
  X(__VA_ARGS__, f32, CT_F32, float, (double)*(q))                            \
  X(__VA_ARGS__, f64, CT_F64, double, *(q))                                   \
  X(__VA_ARGS__, f16, CT_F16, uint16_t, (double)ct_f16_to_f32(*(q)))          \
  X(__VA_ARGS__, bf16, CT_BF16, uint16_t, (double)ct_bf16_to_f32(*(q)))
#define CT_R_INT_DTYPES(X, ...)                                               \
  X(__VA_ARGS__, i8, CT_I8, int8_t, (int64_t)*(q))                            \
  X(__VA_ARGS__, u8, CT_U8, uint8_t, (int64_t)*(q))                           \
  X(__VA_ARGS__, i16, CT_I16, int16_t, (int64_t)*(q))                         \
  X(__VA_ARGS__, i32, CT_I32, int32_t, (int64_t)*(q))                         \
  X(__VA_ARGS__, i64, CT_I64, int64_t, *(q))                                  \
  X(__VA_ARGS__, b8, CT_BOOL, bool, (int64_t)*(q))
/* "Nonzero" loads for every dtype (half: any bit but the sign). */
#define CT_R_NZ_DTYPES(X, ...)                                                \
  X(__VA_ARGS__, f32, CT_F32, float, (int64_t)(*(q) != 0))                    \
  X(__VA_ARGS__, f64, CT_F64, double, (int64_t)(*(q) != 0))                   \
  X(__VA_ARGS__, f16, CT_F16, uint16_t, (int64_t)((*(q) & 0x7fff) != 0))      \
  X(__VA_ARGS__, bf16, CT_BF16, uint16_t, (int64_t)((*(q) & 0x7fff) != 0))    \
  X(__VA_ARGS__, i8, CT_I8, int8_t, (int64_t)(*(q) != 0))                     \
  X(__VA_ARGS__, u8, CT_U8, uint8_t, (int64_t)(*(q) != 0))                    \
  X(__VA_ARGS__, i16, CT_I16, int16_t, (int64_t)(*(q) != 0))                  \
  X(__VA_ARGS__, i32, CT_I32, int32_t, (int64_t)(*(q) != 0))                  \
  X(__VA_ARGS__, i64, CT_I64, int64_t, (int64_t)(*(q) != 0))                  \
  X(__VA_ARGS__, b8, CT_BOOL, bool, (int64_t)*(q))

/* ---- Kernel templates ----------------------------------------------------- */

/* ROW: n elements at p with byte stride s into *acc. */
#define DEFINE_ROW(PASS, ACC, FIELD, USES_AUX, NAME, ENUM, T, LOAD)                           \
  static void row_##PASS##_##NAME(const char *p, int64_t s, int64_t n, ct_racc *acc,         \
                                  double aux, double P) {                                    \
    ACC a = acc->FIELD;                                                                      \
    int64_t i = 0;                                                                           \
    if (s == (int64_t)sizeof(T) && n >= CT_RLANES) {                                         \
      const T *x = (const T *)p;                                                             \
      ACC l[CT_RLANES];                                                                      \
      for (int k = 0; k < CT_RLANES; k++) l[k] = acc_init_##PASS;                            \
      for (; i + CT_RLANES <= n; i += CT_RLANES)                                             \
        for (int k = 0; k < CT_RLANES; k++) {                                                \
          const T *q = x + i + k;                                                            \
          l[k] = upd_##PASS(l[k], (ACC)(LOAD), aux, P);                                      \
        }                                                                                    \
      for (int k = 0; k < CT_RLANES; k++) a = merge_##PASS(a, l[k]);                         \
    }                                                                                        \
    for (; i < n; i++) {                                                                     \
      const T *q = (const T *)(p + i * s);                                                   \
      a = upd_##PASS(a, (ACC)(LOAD), aux, P);                                                \
    }                                                                                        \
    acc->FIELD = a;                                                                          \
  }

/* COLUMN: nrows rows (stride rs) of m elements (stride cs) into acc[0..m).
 * Contiguous rows go in tiles of CT_RCOL_TILE columns whose accumulators stay
 * in registers over all rows; leftover columns update acc in memory. */
#define CT_RCOL_TILE 32
#define DEFINE_COL(PASS, ACC, FIELD, USES_AUX, NAME, ENUM, T, LOAD)                           \
  static void col_##PASS##_##NAME(const char *p, int64_t rs, int64_t nrows, int64_t m,       \
                                  int64_t cs, ct_racc *acc, const double *aux, double P) {   \
    int64_t j0 = 0;                                                                          \
    if (cs == (int64_t)sizeof(T) && m < CT_RCOL_TILE && CT_RCOL_TILE % m == 0 &&             \
        rs == m * cs) {                                                                      \
      /* Few columns, rows back to back: CT_RCOL_TILE / m rows form one      \
       * contiguous tile; lane k belongs to column k % m. */                 \
      int64_t g = CT_RCOL_TILE / m, r = 0;                                                   \
      ACC l[CT_RCOL_TILE];                                                                   \
      double ax[CT_RCOL_TILE];                                                               \
      for (int k = 0; k < CT_RCOL_TILE; k++) {                                               \
        l[k] = acc_init_##PASS;                                                              \
        ax[k] = USES_AUX ? aux[k % m] : 0.0;                                                 \
      }                                                                                      \
      const T *x = (const T *)p;                                                             \
      for (; r + g <= nrows; r += g, x += CT_RCOL_TILE)                                      \
        for (int k = 0; k < CT_RCOL_TILE; k++) {                                             \
          const T *q = x + k;                                                                \
          l[k] = upd_##PASS(l[k], (ACC)(LOAD), ax[k], P);                                    \
        }                                                                                    \
      for (int k = 0; k < CT_RCOL_TILE; k++)                                                 \
        acc[k % m].FIELD = merge_##PASS(acc[k % m].FIELD, l[k]);                             \
      for (; r < nrows; r++)                                                                 \
        for (int64_t j = 0; j < m; j++) {                                                    \
          const T *q = (const T *)(p + r * rs) + j;                                          \
          acc[j].FIELD = upd_##PASS(acc[j].FIELD, (ACC)(LOAD), ax[j], P);                    \
        }                                                                                    \
      return;                                                                                \
    }                                                                                        \
    if (cs == (int64_t)sizeof(T)) {                                                          \
      for (; j0 + CT_RCOL_TILE <= m; j0 += CT_RCOL_TILE) {                                   \
        ACC l[CT_RCOL_TILE];                                                                 \
        double ax[CT_RCOL_TILE];                                                             \
        for (int k = 0; k < CT_RCOL_TILE; k++) {                                             \
          l[k] = acc[j0 + k].FIELD;                                                          \
          ax[k] = USES_AUX ? aux[j0 + k] : 0.0;                                              \
        }                                                                                    \
        for (int64_t r = 0; r < nrows; r++) {                                                \
          const T *x = (const T *)(p + r * rs) + j0;                                         \
          for (int k = 0; k < CT_RCOL_TILE; k++) {                                           \
            const T *q = x + k;                                                              \
            l[k] = upd_##PASS(l[k], (ACC)(LOAD), ax[k], P);                                  \
          }                                                                                  \
        }                                                                                    \
        for (int k = 0; k < CT_RCOL_TILE; k++) acc[j0 + k].FIELD = l[k];                     \
      }                                                                                      \
    }                                                                                        \
    if (j0 == m) return;                                                                     \
    for (int64_t r = 0; r < nrows; r++) {                                                    \
      const char *row = p + r * rs;                                                          \
      for (int64_t j = j0; j < m; j++) {                                                     \
        const T *q = (const T *)(row + j * cs);                                              \
        acc[j].FIELD = upd_##PASS(acc[j].FIELD, (ACC)(LOAD), USES_AUX ? aux[j] : 0.0, P);    \
      }                                                                                      \
    }                                                                                        \
  }

#define DEFINE_BOTH(PASS, ACC, FIELD, USES_AUX, NAME, ENUM, T, LOAD) \
  DEFINE_ROW(PASS, ACC, FIELD, USES_AUX, NAME, ENUM, T, LOAD)        \
  DEFINE_COL(PASS, ACC, FIELD, USES_AUX, NAME, ENUM, T, LOAD)

#define DEFINE_INIT(PASS, ACC, INIT, UPD, MERGE, USES_AUX) static const ACC acc_init_##PASS = INIT;
CT_ALL_PASSES(DEFINE_INIT)
#undef DEFINE_INIT

#define GEN_F(PASS, ACC, INIT, UPD, MERGE, USES_AUX) CT_R_FLOAT_DTYPES(DEFINE_BOTH, PASS, ACC, d, USES_AUX)
#define GEN_I(PASS, ACC, INIT, UPD, MERGE, USES_AUX) CT_R_INT_DTYPES(DEFINE_BOTH, PASS, ACC, i, USES_AUX)
#define GEN_NZ(PASS, ACC, INIT, UPD, MERGE, USES_AUX) CT_R_NZ_DTYPES(DEFINE_BOTH, PASS, ACC, i, USES_AUX)
CT_F_PASSES(GEN_F)
CT_I_PASSES(GEN_I)
CT_NZ_PASSES(GEN_NZ)
#undef GEN_F
#undef GEN_I
#undef GEN_NZ

/* ---- The f32 sum: blocked pairwise summation --------------------------------
 * A row is cut into blocks of CT_SUM_BLOCK floats. Each block is summed into
 * 64 float lanes held in four 16-wide vector registers (each lane adds only
 * CT_SUM_BLOCK / 64 values, so rounding error stays near 64 ulp of a lane's
 * sum); the lanes are folded pairwise and the block total joins an f64
 * accumulator. Streams at memory bandwidth: four independent vector adds per
 * 64 floats, no per-element branch. */
#define CT_SUM_BLOCK 4096
typedef float ct_v16f __attribute__((vector_size(64)));

static inline ct_v16f load_v16f(const float *p) {
  ct_v16f v;
  memcpy(&v, p, sizeof v);
  return v;
}

double ct__sum_f32(const float *x, int64_t n) {
  double total = 0;
  while (n >= 64) {
    int64_t b = (n < CT_SUM_BLOCK ? n : CT_SUM_BLOCK) & ~(int64_t)63;
    ct_v16f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (int64_t i = 0; i < b; i += 64) {
      a0 += load_v16f(x + i);
      a1 += load_v16f(x + i + 16);
      a2 += load_v16f(x + i + 32);
      a3 += load_v16f(x + i + 48);
    }
    a0 = (a0 + a1) + (a2 + a3);
    double t = 0;
    for (int k = 0; k < 16; k++) t += (double)a0[k];
    total += t;
    x += b;
    n -= b;
  }
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

/* ---- f32/f64 max and min: lanes of the native type ---------------------------
 * 32 lanes of T (not f64 lanes), updated by a select that keeps a nan once
 * seen (nan > l and nan < l are false, so a nan lane stays nan): vectorizes to
 * compare + blend, several times faster than the generic kernel. */
#define DEFINE_MINMAX_FAST(PASS, NAME, T, CMP)                                               \
  static void row_##PASS##_##NAME##_fast(const char *p, int64_t s, int64_t n, ct_racc *acc,  \
                                         double aux, double P) {                             \
    if (s != (int64_t)sizeof(T) || n < 64) {                                                 \
      row_##PASS##_##NAME(p, s, n, acc, aux, P);                                             \
      return;                                                                                \
    }                                                                                        \
    const T *x = (const T *)p;                                                               \
    T l[32];                                                                                 \
    for (int k = 0; k < 32; k++) l[k] = x[k];                                                \
    int64_t i = 32;                                                                          \
    for (; i + 32 <= n; i += 32)                                                             \
      for (int k = 0; k < 32; k++) {                                                         \
        T v = x[i + k];                                                                      \
        T m = v CMP l[k] ? v : l[k];                                                         \
        l[k] = v != v ? v : m;                                                               \
      }                                                                                      \
    double a = acc->d;                                                                       \
    for (int k = 0; k < 32; k++) a = upd_##PASS(a, (double)l[k], 0.0, 0.0);                  \
    for (; i < n; i++) a = upd_##PASS(a, (double)x[i], 0.0, 0.0);                            \
    acc->d = a;                                                                              \
  }
DEFINE_MINMAX_FAST(F_MAX, f32, float, >)
DEFINE_MINMAX_FAST(F_MIN, f32, float, <)
DEFINE_MINMAX_FAST(F_MAX, f64, double, >)
DEFINE_MINMAX_FAST(F_MIN, f64, double, <)
#undef DEFINE_MINMAX_FAST

/* ---- Tables ---------------------------------------------------------------- */

ct_rkernel ct__rkernel(ct_rpass pass, ct_dtype dtype) {
  if (pass == CT_RP_F_SUM && dtype == CT_F32)
    return (ct_rkernel){row_F_SUM_f32_fast, col_F_SUM_f32};
  if ((pass == CT_RP_F_MAX || pass == CT_RP_F_MIN) && (dtype == CT_F32 || dtype == CT_F64)) {
    bool mx = pass == CT_RP_F_MAX, f32 = dtype == CT_F32;
    return (ct_rkernel){mx ? (f32 ? row_F_MAX_f32_fast : row_F_MAX_f64_fast)
                           : (f32 ? row_F_MIN_f32_fast : row_F_MIN_f64_fast),
                        mx ? (f32 ? col_F_MAX_f32 : col_F_MAX_f64) : (f32 ? col_F_MIN_f32 : col_F_MIN_f64)};
  }
#define DT_CASE(PASS, NAME, ENUM, T, LOAD) \
  case ENUM: return (ct_rkernel){row_##PASS##_##NAME, col_##PASS##_##NAME};
#define PASS_F(PASS, ACC, INIT, UPD, MERGE, USES_AUX) \
  case CT_RP_##PASS: switch (dtype) { CT_R_FLOAT_DTYPES(DT_CASE, PASS) default: break; } break;
#define PASS_I(PASS, ACC, INIT, UPD, MERGE, USES_AUX) \
  case CT_RP_##PASS: switch (dtype) { CT_R_INT_DTYPES(DT_CASE, PASS) default: break; } break;
#define PASS_NZ(PASS, ACC, INIT, UPD, MERGE, USES_AUX) \
  case CT_RP_##PASS: switch (dtype) { CT_R_NZ_DTYPES(DT_CASE, PASS) default: break; } break;
  switch (pass) {
    CT_F_PASSES(PASS_F)
    CT_I_PASSES(PASS_I)
    CT_NZ_PASSES(PASS_NZ)
  default: break;
  }
#undef PASS_F
#undef PASS_I
#undef PASS_NZ
#undef DT_CASE
  return (ct_rkernel){NULL, NULL};
}

ct_racc ct__rpass_init(ct_rpass pass) {
  ct_racc a = {.i = 0};
  switch (pass) {
#define INIT_F(PASS, ACC, INIT, UPD, MERGE, USES_AUX) case CT_RP_##PASS: a.d = INIT; break;
#define INIT_I(PASS, ACC, INIT, UPD, MERGE, USES_AUX) case CT_RP_##PASS: a.i = INIT; break;
    CT_F_PASSES(INIT_F)
    CT_I_PASSES(INIT_I)
    CT_NZ_PASSES(INIT_I)
#undef INIT_F
#undef INIT_I
  default: break;
  }
  return a;
}

void ct__rpass_merge(ct_rpass pass, ct_racc *a, const ct_racc *b, int64_t n) {
  switch (pass) {
#define MERGE_F(PASS, ACC, INIT, UPD, MERGE, USES_AUX) \
  case CT_RP_##PASS: for (int64_t i = 0; i < n; i++) a[i].d = merge_##PASS(a[i].d, b[i].d); break;
#define MERGE_I(PASS, ACC, INIT, UPD, MERGE, USES_AUX) \
  case CT_RP_##PASS: for (int64_t i = 0; i < n; i++) a[i].i = merge_##PASS(a[i].i, b[i].i); break;
    CT_F_PASSES(MERGE_F)
    CT_I_PASSES(MERGE_I)
    CT_NZ_PASSES(MERGE_I)
#undef MERGE_F
#undef MERGE_I
  default: break;
  }
}
