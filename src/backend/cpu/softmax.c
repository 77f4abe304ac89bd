/* CPU softmax / log_softmax along one dim (the backend's `softmax` slot).
 *
 * Shapes: x and out are (outer, n, inner) once made contiguous, n being the
 * softmax dim. Numerically stable: m = max along the dim (nan propagates),
 * softmax = exp(x - m) / sum exp(x - m), log_softmax = (x - m) - log(sum).
 * A row of -inf gives nan (as torch), values like 1000 can't overflow.
 * f32 and f64 are computed natively (sums in f64); f16/bf16 and non-contiguous
 * operands go through contiguous f32/f64 temporaries.
 *
 * Parallel decomposition: inner == 1 (the softmax dim is the last one): rows
 * split across threads. Otherwise blocks of up to CT_SMAX_BLOCK neighbouring
 * inner positions per task, each running three vectorized sweeps over the n
 * rows (max, exp-sum, scale). */
#include <math.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/reduce.h"

#define CT_SMAX_BLOCK 256
#define CT_SMAX_LANES 16

/* exp(x) for x <= 0 or nan, in f32 without a library call so that loops
 * vectorize: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, degree-6
 * polynomial (Cephes expf, about 1 ulp), scaled by 2^n built from its bits.
 * Results below the smallest normal float flush to 0. */
static inline float smax_exp_f32(float x) {
  const float lo = -87.33f, magic = 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
  float xc = x > lo ? x : lo;                    /* nan -> lo, fixed up below */
  float t = xc * 1.44269504088896341f + magic;
  float n = t - magic;
  int32_t ni = (int32_t)(ct__f32_bits(t) - ct__f32_bits(magic));
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  float e = y * ct__bits_f32((uint32_t)(ni + 127) << 23);
  e = x > lo ? e : 0.0f;
  return x != x ? x : e;
}

static inline double smax_exp_f64(double x) { return exp(x); }

static double smax_sum_f32(const float *x, int64_t n) { return ct__sum_f32(x, n); }
static double smax_sum_f64(const double *x, int64_t n) {
  double l[CT_SMAX_LANES] = {0};
  int64_t i = 0;
  for (; i + CT_SMAX_LANES <= n; i += CT_SMAX_LANES)
    for (int k = 0; k < CT_SMAX_LANES; k++) l[k] += x[i + k];
  double s = 0;
  for (; i < n; i++) s += x[i];
  for (int k = 0; k < CT_SMAX_LANES; k++) s += l[k];
  return s;
}

/* sum exp(x - m) without storing: f32 lanes, flushed to f64 every block. */
static double sum_exp_f32(const float *x, int64_t n, float m) {
  double s = 0;
  for (int64_t b = 0; b < n; b += 1024) {
    int64_t e = n - b < 1024 ? n : b + 1024;
    float l[CT_SMAX_LANES] = {0};
    int64_t i = b;
    for (; i + CT_SMAX_LANES <= e; i += CT_SMAX_LANES)
      for (int k = 0; k < CT_SMAX_LANES; k++) l[k] += smax_exp_f32(x[i + k] - m);
    for (; i < e; i++) s += (double)smax_exp_f32(x[i] - m);
    for (int k = 0; k < CT_SMAX_LANES; k++) s += (double)l[k];
  }
  return s;
}
static double sum_exp_f64(const double *x, int64_t n, double m) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += exp(x[i] - m);
  return s;
}

/* The row and column kernels, per type: softmax_t.h */
#define CT_TEMPLATE "backend/cpu/softmax_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

typedef struct smax_ctx {
  const char *x;
  char *o;
  int64_t n, inner, nblk;
  bool log_, f64;
} smax_ctx;

static void row_tasks(int64_t begin, int64_t end, void *vctx) {
  const smax_ctx *c = vctx;
  for (int64_t r = begin; r < end; r++) {
    if (c->f64)
      row_f64((const double *)c->x + r * c->n, (double *)c->o + r * c->n, c->n, c->log_);
    else
      row_f32((const float *)c->x + r * c->n, (float *)c->o + r * c->n, c->n, c->log_);
  }
}

static void col_tasks(int64_t begin, int64_t end, void *vctx) {
  const smax_ctx *c = vctx;
  for (int64_t t = begin; t < end; t++) {
    int64_t outer = t / c->nblk, j0 = (t % c->nblk) * CT_SMAX_BLOCK;
    int64_t m = c->inner - j0 < CT_SMAX_BLOCK ? c->inner - j0 : CT_SMAX_BLOCK;
    int64_t off = outer * c->n * c->inner + j0;
    if (c->f64)
      col_f64((const double *)c->x + off, (double *)c->o + off, c->n, c->inner, m, c->log_);
    else
      col_f32((const float *)c->x + off, (float *)c->o + off, c->n, c->inner, m, c->log_);
  }
}

/* Softmax of contiguous x into contiguous o (f32 or f64, same dtype). */
static void softmax_contig(const ct_tensor *x, ct_tensor *o, int dim, bool log_) {
  int64_t n = x->ndim ? x->shape[dim] : 1, inner = 1;
  for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
  if (n == 0 || x->numel == 0) return;
  int64_t outer = x->numel / (n * inner);
  smax_ctx c = {ct__data(x), ct__data(o), n, inner, 0, log_, x->dtype == CT_F64};
  if (inner == 1) {
    int64_t grain = CT_PARALLEL_GRAIN / n;
    ct__parallel_for(outer, grain > 0 ? grain : 1, row_tasks, &c);
  } else {
    c.nblk = (inner + CT_SMAX_BLOCK - 1) / CT_SMAX_BLOCK;
    int64_t per_task = n * (inner < CT_SMAX_BLOCK ? inner : CT_SMAX_BLOCK);
    int64_t grain = CT_PARALLEL_GRAIN / per_task;
    ct__parallel_for(outer * c.nblk, grain > 0 ? grain : 1, col_tasks, &c);
  }
}

ct_status ct__cpu_softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log) {
  if (x->numel == 0) return CT_OK;
  ct_dtype cdt = x->dtype == CT_F64 ? CT_F64 : CT_F32;
  ct_tensor *xc = NULL, *oc = NULL;
  ct_status st = CT_OK;
  if (x->dtype == cdt && ct__is_contiguous(x)) {
    xc = ct__retain(x);
  } else {
    xc = ct__empty(x->shape, x->ndim, cdt, ct_cpu());
    if (!xc || (st = ct__cpu_copy(xc, x)) != CT_OK) goto done;
  }
  if (out->dtype == cdt && ct__is_contiguous(out)) {
    oc = ct__retain(out);
  } else {
    oc = ct__empty(x->shape, x->ndim, cdt, ct_cpu());
    if (!oc) goto done;
  }
  softmax_contig(xc, oc, dim, log);
  if (oc != out) st = ct__cpu_copy(out, oc);
done:
  if ((!xc || !oc) && st == CT_OK) st = ct_last_error();
  if (xc) ct__release(xc);
  if (oc) ct__release(oc);
  return st;
}
