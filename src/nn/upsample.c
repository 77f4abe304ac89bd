/* ct_interpolate and the Upsample module: the options checked and turned
 * into each axis's geometry (core/interp_math.h) with torch's rules, the
 * backend's upsample2d slot and the recording of the node
 * (autograd/grad_upsample.c). A 3-d (N, C, L) input runs as an image of
 * height 1. */
#include <math.h>

#include "core/alloc.h"
#include "ctensor/pool_layers.h"
#include "ctensor/upsample.h"
#include "nn/functional_internal.h"
#include "nn/module_internal.h"

/* ct__fail as a false for the checks below */
#define FAIL(...) (ct__fail(__VA_ARGS__), false)

static const char *const MODE_NAMES[] = {"nearest", "nearest-exact", "linear", "bilinear", "area"};

/* The checks that need no input (the module runs them at construction). */
static bool check_opts(const char *op, const ct_interpolate_opts *o) {
  if (!o) return FAIL(CT_ERR_ARG, "%s: expected either size or scale_factor, got neither", op);
  if ((int)o->mode < 0 || o->mode > CT_INTERP_AREA)
    return FAIL(CT_ERR_ARG, "%s: unknown mode %d", op, (int)o->mode);
  bool has_size = o->size[0] || o->size[1];
  bool has_scale = o->scale_factor[0] != 0 || o->scale_factor[1] != 0;
  if (has_size == has_scale)
    return has_size ? FAIL(CT_ERR_ARG,
                           "%s: only one of size and scale_factor may be given, got size "
                           "(%lld, %lld) and scale_factor (%g, %g)",
                           op, (long long)o->size[0], (long long)o->size[1], o->scale_factor[0],
                           o->scale_factor[1])
                    : FAIL(CT_ERR_ARG, "%s: expected either size or scale_factor, got neither", op);
  if (o->recompute_scale_factor && has_size)
    return FAIL(CT_ERR_ARG, "%s: recompute_scale_factor is not meaningful with a size", op);
  if (o->align_corners && o->mode != CT_INTERP_LINEAR && o->mode != CT_INTERP_BILINEAR)
    return FAIL(CT_ERR_ARG, "%s: align_corners can only be set with the linear modes, got mode %s",
                op, MODE_NAMES[o->mode]);
  return true;
}

/* The output size of one axis of n_in positions and its geometry. */
static bool make_axis(const char *op, const ct_interpolate_opts *o, int k, int64_t n_in,
                      ct_interp_axis *a) {
  double s = o->scale_factor[k];
  int64_t n_out = o->size[k];
  bool has_scale = o->scale_factor[0] != 0 || o->scale_factor[1] != 0;
  if (has_scale) {
    if (!(s > 0) || !isfinite(s))
      return FAIL(CT_ERR_ARG, "%s: scale_factor must be positive and finite, got %g", op, s);
    double v = floor((double)n_in * s);
    if (!(v >= 1) || v > 4e18)
      return FAIL(CT_ERR_ARG,
                  "%s: the output size floor(%lld * %g) = %.0f must be >= 1 (and fit int64)", op,
                  (long long)n_in, s, v);
    n_out = (int64_t)v;
  } else if (n_out < 1) {
    return FAIL(CT_ERR_ARG, "%s: size must be >= 1, got %lld", op, (long long)n_out);
  }
  a->n_in = n_in, a->n_out = n_out;
  a->kind = o->mode == CT_INTERP_NEAREST         ? CT_INTERP_KIND_NEAREST
            : o->mode == CT_INTERP_NEAREST_EXACT ? CT_INTERP_KIND_NEAREST_EXACT
                                                 : CT_INTERP_KIND_LINEAR;
  a->align_corners = o->align_corners;
  /* torch's area_pixel_compute_scale / compute_scales_value */
  if (a->kind == CT_INTERP_KIND_LINEAR && o->align_corners)
    a->scale = n_out > 1 ? (double)(n_in - 1) / (double)(n_out - 1) : 0;
  else if (has_scale && !o->recompute_scale_factor)
    a->scale = 1 / s;
  else
    a->scale = (double)n_in / (double)n_out;
  return true;
}

/* The geometry of x under o: rank and mode checked, both axes made (a 3-d
 * input's height maps 1 to 1). */
static bool make_params(const char *op, const ct_tensor *x, const ct_interpolate_opts *o,
                        ct_interp_params *p) {
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim != 3 && x->ndim != 4)
    return FAIL(CT_ERR_SHAPE,
                "%s: expected a 3-d (N, C, L) or 4-d (N, C, H, W) input, got shape %s", op,
                ct__shape_str(x, s, sizeof s));
  if (!check_opts(op, o)) return false;
  bool one_d = x->ndim == 3;
  if ((o->mode == CT_INTERP_LINEAR && !one_d) || (o->mode == CT_INTERP_BILINEAR && one_d))
    return FAIL(CT_ERR_SHAPE, "%s: mode %s needs a %d-d input, got shape %s", op,
                MODE_NAMES[o->mode], one_d ? 4 : 3, ct__shape_str(x, s, sizeof s));
  if (one_d && (o->size[1] || o->scale_factor[1] != 0))
    return FAIL(CT_ERR_ARG,
                "%s: a 3-d input has one spatial dim, got a second size %lld or scale %g", op,
                (long long)o->size[1], o->scale_factor[1]);
  if (x->shape[2] < 1 || x->shape[x->ndim - 1] < 1)
    return FAIL(CT_ERR_SHAPE, "%s: expected nonzero spatial sizes, got shape %s", op,
                ct__shape_str(x, s, sizeof s));
  if (one_d) {
    ct_interpolate_opts one = {.size = {1}, .mode = o->mode, .align_corners = o->align_corners};
    return make_axis(op, &one, 0, 1, &p->h) && make_axis(op, o, 0, x->shape[2], &p->w);
  }
  return make_axis(op, o, 0, x->shape[2], &p->h) && make_axis(op, o, 1, x->shape[3], &p->w);
}

/* 'area': torch's interpolate calls adaptive_avg_pool to the output size;
 * a 3-d input pools as an image of height 1. Recorded by the pooling op. */
static ct_tensor *interpolate_area(const ct_tensor *x, const ct_interp_params *p) {
  if (x->ndim == 4) return ct_adaptive_avg_pool2d(x, (int64_t[]){p->h.n_out, p->w.n_out});
  ct_scope_begin();
  ct_tensor *x4 = ct_unsqueeze(x, 2);
  ct_tensor *y4 = x4 ? ct_adaptive_avg_pool2d(x4, (int64_t[]){1, p->w.n_out}) : NULL;
  ct_tensor *r = y4 ? ct_keep(ct_squeeze_dim(y4, 2)) : NULL;
  ct_scope_end();
  return r;
}

ct_tensor *ct_interpolate(const ct_tensor *x, const ct_interpolate_opts *opts) {
  const char *op = "interpolate";
  ct_interp_params p;
  if (!x || !make_params(op, x, opts, &p) || !ct__nn_need_float(op, "input", x)) return NULL;
  if (opts->mode == CT_INTERP_AREA) return interpolate_area(x, &p);
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, upsample2d, op, x);
  bool one_d = x->ndim == 3, ok = true;
  int64_t xs[4] = {x->shape[0], x->shape[1], p.h.n_in, p.w.n_in};
  int64_t os[4] = {x->shape[0], x->shape[1], p.h.n_out, p.w.n_out};
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok);
  ct_tensor *x4 = ok ? ct__nn_reshape(xc, xs, 4) : NULL;
  ct_tensor *r = x4 ? ct__empty(os, 4, x->dtype, ct__device(x)) : NULL;
  ct_status st = r ? be->upsample2d(r, x4, &p) : ct_last_error();
  ct__release(xc), ct__release(x4);
  if (st == CT_OK && one_d) {
    int64_t os3[3] = {os[0], os[1], os[3]};
    ct_tensor *v = ct__nn_reshape(r, os3, 3);
    ct__release(r);
    if (!(r = v)) st = ct_last_error();
  }
  if (st == CT_OK && !(r = ct__ag_upsample(r, x, &p))) st = ct_last_error();
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return ct__track(r);
}

/* ---- Upsample ------------------------------------------------------------------- */

static ct_tensor *upsample_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)self;
  return ct_interpolate(x, ct__module_impl(m));
}
static const ct_module_vtable upsample_vt = {"Upsample", upsample_forward, ct__free};

ct_module *ct_upsample_new(const ct_interpolate_opts *opts) {
  if (!check_opts("upsample_new", opts)) return NULL;
  ct_interpolate_opts *o = ct__calloc(1, sizeof *o);
  if (!o) return ct__fail(CT_ERR_OOM, "upsample_new: out of host memory");
  *o = *opts;
  return ct__module_new_builtin(&upsample_vt, o);
}
