/* Shared driver of the CPU elementwise kernels (unary.c, binary.c): runs a row
 * kernel over operands of one shape. When every operand is contiguous (the
 * common case: fresh results, same-shape inputs) the whole tensor is one row
 * and the generic strided iterator is skipped; large rows are split across
 * threads in chunks aligned to 16 elements. Otherwise ct__loop coalesces dims
 * and iterates. Also the helpers for generating row kernels from expressions. */
#ifndef CT_CPU_EW_RUN_H
#define CT_CPU_EW_RUN_H

#include <stdatomic.h>

#include "backend/cpu/cpu_loop.h"

/* Asks the compiler to vectorize a loop whose iterations are independent. The
 * output may be exactly an input (in-place ops), which rules out `restrict`
 * but not SIMD: each iteration reads its inputs before writing its output. */
#if defined(_OPENMP) || defined(CT_OPENMP_SIMD) /* -fopenmp-simd: the pragma, no runtime */
#define CT_SIMD _Pragma("omp simd")
#else
#define CT_SIMD
#endif

/* Context of kernels that can meet invalid integer operands (division by zero,
 * negative integer powers): they leave the element 0 and raise `bad`. */
typedef struct ct_ew_ctx {
  double p0, p1;   /* op parameters (unary) */
  atomic_int bad;  /* set by kernels when an element had an invalid operand */
} ct_ew_ctx;

typedef struct ct_ew_flat {
  ct_loop_fn fn;
  void *ctx;
  int nargs;
  int64_t n;
  char *data[CT_LOOP_MAX_ARGS];
  int64_t es[CT_LOOP_MAX_ARGS];
} ct_ew_flat;

static inline void ct__ew_flat_range(int64_t begin, int64_t end, void *vctx) {
  const ct_ew_flat *f = vctx;
  /* chunk boundaries rounded up to multiples of 16 elements (the last one ends
   * at n), so that vector loops stay aligned and chunks still tile [0, n) */
  int64_t b = (begin + 15) & ~(int64_t)15;
  int64_t e = end == f->n ? end : (end + 15) & ~(int64_t)15;
  if (e > f->n) e = f->n;
  if (e <= b) return;
  char *ptr[CT_LOOP_MAX_ARGS];
  for (int a = 0; a < f->nargs; a++) ptr[a] = f->data[a] + b * f->es[a];
  f->fn(ptr, f->es, e - b, f->ctx);
}

/* Every stride of t is 0 (or its dim has size 1). */
static inline bool ct__is_broadcast_scalar(const ct_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->strides[d] != 0 && t->shape[d] != 1) return false;
  return true;
}

/* Runs fn over ts[0..nargs) (ts[0] the output; all of one shape). */
static inline void ct__ew_run(int nargs, const ct_tensor *const *ts, ct_loop_fn fn, void *ctx) {
  int64_t n = ts[0]->numel;
  if (n == 0) return;
  ct_ew_flat f = {.fn = fn, .ctx = ctx, .nargs = nargs, .n = n};
  for (int a = 0; a < nargs; a++) {
    const ct_tensor *t = ts[a];
    if (ct__is_contiguous(t)) {
      f.es[a] = (int64_t)ct__elsize(t->dtype);
    } else if (a > 0 && ct__is_broadcast_scalar(t)) {
      f.es[a] = 0; /* one value repeated (a broadcast 0-d or size-1 tensor) */
    } else {
      ct__loop(nargs, ts, fn, ctx);
      return;
    }
    f.data[a] = ct__data(t);
  }
  if (n < CT_PARALLEL_GRAIN) {
    fn(f.data, f.es, n, ctx);
    return;
  }
  ct__parallel_for(n, CT_PARALLEL_GRAIN, ct__ew_flat_range, &f);
}

#endif /* CT_CPU_EW_RUN_H */
