/* CPU searchsorted: one binary search per value (core/search_math.h), in
 * parallel over the values. Contract: backend/backend.h. */
#include <stdlib.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/search_math.h"

typedef struct search_ctx {
  ct_tensor *out;
  const ct_tensor *sorted, *values;
  bool right;
} search_ctx;

static void search_range(int64_t e0, int64_t e1, void *vctx) {
  const search_ctx *c = vctx;
  const ct_tensor *s = c->sorted, *v = c->values;
  int64_t M = v->shape[1], L = s->shape[1], *out = ct__data(c->out);
  for (int64_t e = e0; e < e1; e++) {
    int64_t r = e / M, m = e - r * M;
    int64_t so = r * s->strides[0], vo = r * v->strides[0] + m * v->strides[1];
    int64_t o = r * c->out->strides[0] + m * c->out->strides[1];
    if (s->dtype == CT_F64)
      out[o] = ct_searchsorted_f64((const double *)ct__data(s) + so, s->strides[1], L,
                                   ((const double *)ct__data(v))[vo], c->right);
    else
      out[o] = ct_searchsorted_i64((const int64_t *)ct__data(s) + so, s->strides[1], L,
                                   ((const int64_t *)ct__data(v))[vo], c->right);
  }
}

ct_status ct__cpu_searchsorted(ct_tensor *out, const ct_tensor *sorted, const ct_tensor *values,
                               bool right) {
  search_ctx c = {out, sorted, values, right};
  int64_t L = sorted->shape[1];
  int64_t per = 1; /* ~log2(L) steps per value */
  while (L > 1) L >>= 1, per++;
  ct__parallel_for(out->numel, CT_PARALLEL_GRAIN / (per * 4) + 1, search_range, &c);
  return CT_OK;
}

/* qsort's order: core/search_math.h's (nan last), through its rank function
 * on one-element rows. */
static int cmp_f64(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (int)ct_sorted_rank_f64(&y, 1, x, false)   ? 1
         : (int)ct_sorted_rank_f64(&x, 1, y, false) ? -1
                                                    : 0;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

ct_status ct__cpu_sort_flat(ct_tensor *out, const ct_tensor *x) {
  size_t n = (size_t)x->numel;
  memcpy(ct__data(out), ct__data(x), n * 8);
  qsort(ct__data(out), n, 8, x->dtype == CT_F64 ? cmp_f64 : cmp_i64);
  return CT_OK;
}
