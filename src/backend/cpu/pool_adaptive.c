/* CPU adaptive average and max pooling (torch's adaptive_avg_pool2d and
 * adaptive_max_pool2d), forward and backward, planes split across threads;
 * f16/bf16 computed in f32. The backward gathers per input element (its
 * windows, backend/params.h), so it writes every element once. */
#include <math.h>

#include "backend/cpu/nn_util.h"

typedef struct ap_ctx {
  bool is_max;
  int64_t H, W, OH, OW;
  char *x;             /* forward: x; backward: grad_x */
  char *out;           /* forward: out; backward: grad_out */
  int64_t *idx;        /* forward: indices or NULL */
  const int64_t *cidx; /* backward: indices (max) */
} ap_ctx;

#define CT_TEMPLATE "backend/cpu/pool_adaptive_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

static int64_t grain_for(int64_t per_plane) {
  int64_t g = CT_PARALLEL_GRAIN / (per_plane > 0 ? per_plane : 1);
  return g > 0 ? g : 1;
}

ct_status ct__cpu_adaptive_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices,
                                  const ct_tensor *x) {
  if (ct__is_half(x->dtype)) {
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *of = ct__nn_f32(out, false, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_adaptive_pool2d(is_max, of, indices, xf);
    ct__release(xf);
    return ct__nn_back(out, of, st);
  }
  ap_ctx c = {.is_max = is_max,
              .H = x->shape[2],
              .W = x->shape[3],
              .OH = out->shape[2],
              .OW = out->shape[3],
              .x = ct__data(x),
              .out = ct__data(out),
              .idx = indices ? ct__data(indices) : NULL};
  int64_t planes = x->shape[0] * x->shape[1];
  ct__parallel_for(planes, grain_for(c.H * c.W + c.OH * c.OW),
                   x->dtype == CT_F32 ? ap_fwd_f32 : ap_fwd_f64, &c);
  return CT_OK;
}

ct_status ct__cpu_adaptive_pool2d_backward(bool is_max, ct_tensor *grad_x,
                                           const ct_tensor *grad_out, const ct_tensor *indices) {
  if (ct__is_half(grad_x->dtype)) {
    bool fail = false;
    ct_tensor *gof = ct__nn_f32(grad_out, true, &fail), *gxf = ct__nn_f32(grad_x, false, &fail);
    ct_status st =
        fail ? ct_last_error() : ct__cpu_adaptive_pool2d_backward(is_max, gxf, gof, indices);
    ct__release(gof);
    return ct__nn_back(grad_x, gxf, st);
  }
  ap_ctx c = {.is_max = is_max,
              .H = grad_x->shape[2],
              .W = grad_x->shape[3],
              .OH = grad_out->shape[2],
              .OW = grad_out->shape[3],
              .x = ct__data(grad_x),
              .out = ct__data(grad_out),
              .cidx = indices ? ct__data(indices) : NULL};
  int64_t planes = grad_x->shape[0] * grad_x->shape[1];
  ct__parallel_for(planes, grain_for(2 * c.H * c.W),
                   grad_x->dtype == CT_F32 ? ap_bwd_f32 : ap_bwd_f64, &c);
  return CT_OK;
}
