/* Gradient of softmax / log_softmax along one dim on the CPU.
 *   softmax:     grad_x = y * (g - sum_d(g * y))
 *   log_softmax: grad_x = g - exp(y) * sum_d(g)
 * All three tensors contiguous, viewed as (outer, D, inner); each (outer,
 * inner) line is independent: lines are split across threads. f16/bf16
 * lines are computed in f32. */
#include <math.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"

typedef struct sbw_ctx {
  char *gx;
  const char *g, *y;
  ct_dtype dtype;
  int64_t dim_size, inner;
  bool log;
} sbw_ctx;

static inline double load(const char *base, int64_t i, ct_dtype d) {
  switch (d) {
  case CT_F32: return ((const float *)base)[i];
  case CT_F64: return ((const double *)base)[i];
  default: return ct__half_load(base + 2 * i, d);
  }
}
static inline void store(char *base, int64_t i, ct_dtype d, double v) {
  switch (d) {
  case CT_F32: ((float *)base)[i] = (float)v; break;
  case CT_F64: ((double *)base)[i] = v; break;
  default: ct__half_store(base + 2 * i, d, (float)v); break;
  }
}

static void lines(int64_t begin, int64_t end, void *vctx) {
  const sbw_ctx *c = vctx;
  int64_t D = c->dim_size, inner = c->inner;
  for (int64_t line = begin; line < end; line++) {
    int64_t o = line / inner, in = line % inner;
    int64_t base = o * D * inner + in;
    double acc = 0;
    for (int64_t k = 0; k < D; k++) {
      int64_t i = base + k * inner;
      acc += c->log ? load(c->g, i, c->dtype) : load(c->g, i, c->dtype) * load(c->y, i, c->dtype);
    }
    for (int64_t k = 0; k < D; k++) {
      int64_t i = base + k * inner;
      double g = load(c->g, i, c->dtype), y = load(c->y, i, c->dtype);
      store(c->gx, i, c->dtype, c->log ? g - exp(y) * acc : y * (g - acc));
    }
  }
}

/* The common case: last dim, f32 — vectorizable loops over a row. */
static void rows_f32(int64_t begin, int64_t end, void *vctx) {
  const sbw_ctx *c = vctx;
  int64_t D = c->dim_size;
  for (int64_t r = begin; r < end; r++) {
    const float *g = (const float *)c->g + r * D, *y = (const float *)c->y + r * D;
    float *gx = (float *)c->gx + r * D;
    float acc = 0;
    if (c->log) {
      for (int64_t k = 0; k < D; k++) acc += g[k];
      for (int64_t k = 0; k < D; k++) gx[k] = g[k] - expf(y[k]) * acc;
    } else {
      for (int64_t k = 0; k < D; k++) acc += g[k] * y[k];
      for (int64_t k = 0; k < D; k++) gx[k] = y[k] * (g[k] - acc);
    }
  }
}

ct_status ct__cpu_softmax_backward(ct_tensor *grad_x, const ct_tensor *grad_out, const ct_tensor *y,
                                   int dim, bool log) {
  if (!ct_dtype_is_floating(grad_x->dtype))
    return ct__fail_status(CT_ERR_DTYPE, "softmax backward: needs a floating dtype, got %s",
                           ct_dtype_name(grad_x->dtype));
  sbw_ctx c = {.gx = ct__data(grad_x), .g = ct__data(grad_out), .y = ct__data(y),
               .dtype = grad_x->dtype, .log = log};
  int64_t outer = 1, inner = 1;
  int nd = grad_x->ndim;
  c.dim_size = nd ? grad_x->shape[dim] : 1;
  for (int d = 0; d < dim; d++) outer *= grad_x->shape[d];
  for (int d = dim + 1; d < nd; d++) inner *= grad_x->shape[d];
  c.inner = inner;
  int64_t nlines = outer * inner;
  int64_t grain = c.dim_size > 0 ? CT_PARALLEL_GRAIN / c.dim_size + 1 : nlines + 1;
  if (inner == 1 && c.dtype == CT_F32) ct__parallel_for(nlines, grain, rows_f32, &c);
  else ct__parallel_for(nlines, grain, lines, &c);
  return CT_OK;
}
