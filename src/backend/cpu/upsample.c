/* CPU upsampling (torch's interpolate: nearest, nearest-exact, linear,
 * bilinear), forward and backward, planes split across threads; f16/bf16
 * computed in f32. Each axis's source positions and weights come from
 * core/interp_math.h, tabulated once per call; the backward scatters each
 * plane's gradient in output order (a plane belongs to one thread, so the
 * result is deterministic). */
#include "backend/cpu/nn_util.h"
#include "core/alloc.h"
#include "core/interp_math.h"

/* Output o of an axis reads inputs i0[o] and i1[o] with weights 1 - l[o] and
 * l[o] (nearest: i1 = i0, l = 0); l holds the compute type's value. */
typedef struct up_axis {
  int64_t *i0, *i1;
  double *l;
} up_axis;

typedef struct up_ctx {
  int64_t H, W, OH, OW;
  bool linear;
  up_axis h, w;
  char *x;   /* forward: x; backward: grad_x */
  char *out; /* forward: out; backward: grad_out */
} up_ctx;

#define CT_TEMPLATE "backend/cpu/upsample_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

/* The table of one axis (n_out entries) from the shared formulas, in the
 * compute type of dt (f32 or f64); *mem is its allocation (NULL: out of
 * memory). */
static up_axis axis_table(const ct_interp_axis *a, ct_dtype dt, void **mem) {
  size_t n = (size_t)a->n_out;
  up_axis t = {0};
  char *m = *mem = ct__malloc_array(n, 2 * sizeof(int64_t) + sizeof(double));
  if (!m) return t;
  t.i0 = (int64_t *)m, t.i1 = t.i0 + n, t.l = (double *)(t.i1 + n);
  for (int64_t o = 0; o < a->n_out; o++) {
    if (a->kind != CT_INTERP_KIND_LINEAR) {
      t.i0[o] = t.i1[o] = ct_interp_nearest(a, o);
      t.l[o] = 0;
    } else if (dt == CT_F32) {
      t.l[o] = ct_interp_linear_f32(a, o, &t.i0[o], &t.i1[o]);
    } else {
      t.l[o] = ct_interp_linear_f64(a, o, &t.i0[o], &t.i1[o]);
    }
  }
  return t;
}

/* Runs fn over the planes of x4 (N, C, H, W) and o4 (N, C, OH, OW) (both
 * contiguous, f32 or f64) with the tables of p. */
static ct_status run(const char *op, ct_tensor *x4, ct_tensor *o4, const ct_interp_params *p,
                     ct_range_fn fn32, ct_range_fn fn64) {
  void *mh = NULL, *mw = NULL;
  up_ctx c = {.H = x4->shape[2],
              .W = x4->shape[3],
              .OH = o4->shape[2],
              .OW = o4->shape[3],
              .linear = p->w.kind == CT_INTERP_KIND_LINEAR,
              .h = axis_table(&p->h, x4->dtype, &mh),
              .w = axis_table(&p->w, x4->dtype, &mw),
              .x = ct__data(x4),
              .out = ct__data(o4)};
  ct_status st = CT_OK;
  if (!mh || !mw) {
    st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory for the coordinate tables", op);
  } else {
    int64_t per_plane = c.H * c.W + c.OH * c.OW;
    int64_t grain = CT_PARALLEL_GRAIN / (per_plane > 0 ? per_plane : 1);
    ct__parallel_for(x4->shape[0] * x4->shape[1], grain > 0 ? grain : 1,
                     x4->dtype == CT_F32 ? fn32 : fn64, &c);
  }
  ct__free(mh), ct__free(mw);
  return st;
}

/* Forward (dst out, src x) or backward (dst grad_x, src grad_out); half
 * types staged in f32. */
static ct_status upsample(bool backward, ct_tensor *dst, const ct_tensor *src,
                          const ct_interp_params *p) {
  if (ct__is_half(dst->dtype)) {
    bool fail = false;
    ct_tensor *sf = ct__nn_f32(src, true, &fail), *df = ct__nn_f32(dst, false, &fail);
    ct_status st = fail ? ct_last_error() : upsample(backward, df, sf, p);
    ct__release(sf);
    return ct__nn_back(dst, df, st);
  }
  if (backward)
    return run("interpolate_backward", dst, (ct_tensor *)src, p, up_bwd_f32, up_bwd_f64);
  return run("interpolate", (ct_tensor *)src, dst, p, up_fwd_f32, up_fwd_f64);
}

ct_status ct__cpu_upsample2d(ct_tensor *out, const ct_tensor *x, const ct_interp_params *p) {
  return upsample(false, out, x, p);
}

ct_status ct__cpu_upsample2d_backward(ct_tensor *grad_x, const ct_tensor *grad_out,
                                      const ct_interp_params *p) {
  return upsample(true, grad_x, grad_out, p);
}
