/* CPU 2-d max and average pooling, forward and backward.
 *
 * Shapes: x (N, C, H, W) -> out (N, C, Ho, Wo), contiguous; the N*C planes are
 * independent and split across threads. Window of output (oh, ow): rows
 * oh*sh - ph .. + kH, columns likewise; max ignores padding (-inf), nan wins
 * (as torch), the first maximum wins ties; indices hold h*W + w in the plane.
 * Average: the divisor counts the window clipped to the padded image
 * (count_include_pad, torch's default) or to the image itself. f32 and f64
 * natively; f16/bf16 computed in f32. */
#include <math.h>

#include "backend/cpu/cpu_arch.h"
#include "backend/cpu/nn_util.h"

typedef struct pool_ctx {
  bool is_max;
  int64_t H, W, Ho, Wo;
  const ct_pool2d_params *p;
  char *x, *out; /* forward: x in, out out; backward: x = grad_x, out = grad_out */
  int64_t *idx;
  const int64_t *cidx;
} pool_ctx;

/* Whether every max window lies inside the image (no padding, no partial
 * ceil_mode window): the fast path without clipping. */
static bool max_unclipped(const pool_ctx *c) {
  const ct_pool2d_params *p = c->p;
  return c->is_max && p->padding[0] == 0 && p->padding[1] == 0 && c->Ho > 0 && c->Wo > 0 &&
         (c->Ho - 1) * p->stride[0] + p->kernel[0] <= c->H &&
         (c->Wo - 1) * p->stride[1] + p->kernel[1] <= c->W;
}

/* The 2x2 stride-2 max's vector kernels (pool_avx512.c) where the build has
 * them: the forward of one output row (returns the outputs done; the
 * template's loop does the rest) and the backward of one plane (returns
 * whether it did it). Indices must fit int32. */
static int64_t max2x2_row_vec_f32(const pool_ctx *c, const float *r0, const float *r1, float *o,
                                  int64_t *ix, int64_t base) {
#if CT_CPU_AVX512
  if (c->H * c->W + c->W < INT32_MAX)
    return ct__pool_max2x2_row_avx512(r0, r1, o, ix, c->Wo, base, c->W);
#endif
  return 0;
}
static int64_t max2x2_row_vec_f64(const pool_ctx *c, const double *r0, const double *r1, double *o,
                                  int64_t *ix, int64_t base) {
  return 0;
}
static bool max2x2_bwd_vec_f32(const pool_ctx *c, int64_t pl) {
#if CT_CPU_AVX512
  const ct_pool2d_params *p = c->p;
  if (max_unclipped(c) && p->kernel[0] == 2 && p->kernel[1] == 2 && p->stride[0] == 2 &&
      p->stride[1] == 2 && c->H * c->W + c->W < INT32_MAX) {
    ct__pool_max2x2_bwd_plane_avx512((float *)c->x + pl * c->H * c->W,
                                     (const float *)c->out + pl * c->Ho * c->Wo,
                                     c->cidx + pl * c->Ho * c->Wo, c->H, c->W, c->Ho, c->Wo);
    return true;
  }
#endif
  return false;
}
static bool max2x2_bwd_vec_f64(const pool_ctx *c, int64_t pl) { return false; }

/* The kernels, per type: pool_t.h */
#define CT_TEMPLATE "backend/cpu/pool_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

static int64_t grain_for(int64_t per_plane) {
  int64_t g = CT_PARALLEL_GRAIN / (per_plane > 0 ? per_plane : 1);
  return g > 0 ? g : 1;
}

ct_status ct__cpu_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x,
                         const ct_pool2d_params *p) {
  if (ct__is_half(x->dtype)) {
    bool fail = false;
    ct_tensor *xf = ct__nn_f32(x, true, &fail), *of = ct__nn_f32(out, false, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_pool2d(is_max, of, indices, xf, p);
    ct__release(xf);
    return ct__nn_back(out, of, st);
  }
  pool_ctx c = {.is_max = is_max, .H = x->shape[2], .W = x->shape[3], .Ho = out->shape[2],
                .Wo = out->shape[3], .p = p, .x = ct__data(x), .out = ct__data(out),
                .idx = indices ? ct__data(indices) : NULL};
  int64_t planes = x->shape[0] * x->shape[1];
  int64_t work = c.Ho * c.Wo * p->kernel[0] * p->kernel[1];
  ct__parallel_for(planes, grain_for(work), x->dtype == CT_F32 ? fwd_f32 : fwd_f64, &c);
  return CT_OK;
}

ct_status ct__cpu_pool2d_backward(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                  const ct_tensor *indices, const ct_pool2d_params *p) {
  if (ct__is_half(grad_x->dtype)) {
    bool fail = false;
    ct_tensor *gof = ct__nn_f32(grad_out, true, &fail), *gxf = ct__nn_f32(grad_x, false, &fail);
    ct_status st = fail ? ct_last_error() : ct__cpu_pool2d_backward(is_max, gxf, gof, indices, p);
    ct__release(gof);
    return ct__nn_back(grad_x, gxf, st);
  }
  pool_ctx c = {.is_max = is_max, .H = grad_x->shape[2], .W = grad_x->shape[3],
                .Ho = grad_out->shape[2], .Wo = grad_out->shape[3], .p = p,
                .x = ct__data(grad_x), .out = ct__data(grad_out),
                .cidx = indices ? ct__data(indices) : NULL};
  int64_t planes = grad_x->shape[0] * grad_x->shape[1];
  int64_t work = c.H * c.W + c.Ho * c.Wo * (is_max ? 1 : p->kernel[0] * p->kernel[1]);
  ct__parallel_for(planes, grain_for(work), grad_x->dtype == CT_F32 ? bwd_f32 : bwd_f64, &c);
  return CT_OK;
}
