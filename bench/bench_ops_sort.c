/* bench_ops_sort.c: times ctensor's sort, top-k and cumsum on 10M floats.
 *
 * Workloads (one row of 10M uniform f32 in [0, 1), fresh results per call):
 *   sort_10M_f32       values and indices, ascending (torch.sort)
 *   topk100_10M_f32    the 100 largest and their indices (torch.topk)
 *   cumsum_10M_f32     running sum (torch.cumsum)
 * Each result is checked against a plain-C computation before timing.
 * bench/peers_ops_sort.py times PyTorch the same way; bench/ops_sort.sh runs
 * both and prints the ratios.
 *
 * Method and output: bench_util.h. Usage: bench_ops_sort [--threads N]
 * [--budget SECONDS] [--only NAME]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ctensor.h>

#include "bench_util.h"

#define N_BIG 10000000L

typedef struct ctx {
  ct_tensor *x;
  const float *px;
} ctx;

static void run_sort(void *p) {
  ct_tensor *idx = NULL;
  ct_free(ct_sort(((ctx *)p)->x, 0, false, &idx));
  ct_free(idx);
}
static void run_topk(void *p) {
  ct_tensor *idx = NULL;
  ct_free(ct_topk(((ctx *)p)->x, 100, 0, true, true, &idx));
  ct_free(idx);
}
static void run_cumsum(void *p) { ct_free(ct_cumsum(((ctx *)p)->x, 0)); }

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* 0 if sort and topk agree with qsort and cumsum with a double loop. */
static const char *check(ctx *c, const char *what) {
  static float *sorted;
  if (!sorted) {
    sorted = malloc(N_BIG * sizeof(float));
    if (!sorted) return "out of memory";
    for (long i = 0; i < N_BIG; i++) sorted[i] = c->px[i];
    qsort(sorted, N_BIG, sizeof(float), cmp_float);
  }
  ct_tensor *idx = NULL, *r = NULL;
  const char *bad = NULL;
  if (what[0] == 's') r = ct_sort(c->x, 0, false, &idx);
  if (what[0] == 't') r = ct_topk(c->x, 100, 0, true, true, &idx);
  if (what[0] == 'c') r = ct_cumsum(c->x, 0);
  if (!r) return ct_last_error_message();
  const float *v = ct_data_ptr(r);
  const int64_t *ix = idx ? ct_data_ptr(idx) : NULL;
  if (what[0] == 's') {
    for (long i = 0; i < N_BIG && !bad; i++)
      if (v[i] != sorted[i] || c->px[ix[i]] != v[i]) bad = "wrong sort";
  } else if (what[0] == 't') {
    for (long i = 0; i < 100 && !bad; i++)
      if (v[i] != sorted[N_BIG - 1 - i] || c->px[ix[i]] != v[i]) bad = "wrong topk";
  } else {
    double acc = 0;
    for (long i = 0; i < N_BIG && !bad; i++) {
      acc += c->px[i];
      if (fabs(v[i] - acc) > 1e-6 * acc) bad = "wrong cumsum";
    }
  }
  ct_free(r);
  ct_free(idx);
  return bad;
}

int main(int argc, char **argv) {
  const char *only = NULL;
  if (bench_init(argc, argv, "bench_ops_sort", &only)) return 2;
  ct_tensor_opts o = {.dtype = CT_F32};
  ct_manual_seed(0);
  ctx c = {.x = ct_rand(CT_SHAPE(N_BIG), &o)};
  if (!c.x) {
    fprintf(stderr, "bench_ops_sort: %s\n", ct_last_error_message());
    return 1;
  }
  c.px = ct_data_ptr(c.x);
  const struct {
    const char *name;
    bench_fn fn;
  } work[] = {
      {"sort_10M_f32", run_sort}, {"topk100_10M_f32", run_topk}, {"cumsum_10M_f32", run_cumsum}};
  for (int i = 0; i < 3; i++) {
    if (!bench_want(only, work[i].name)) continue;
    const char *bad = check(&c, work[i].name);
    if (bad)
      emit_error(work[i].name, "ctensor", bad);
    else
      emit(work[i].name, "ctensor", time_it(work[i].fn, &c), "ms", SCALED, 1e3);
  }
  ct_free(c.x);
  return 0;
}
