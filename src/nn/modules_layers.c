/* Modules of the layers of norm_layers.h and conv_layers.h: GroupNorm,
 * InstanceNorm2d, RMSNorm, Conv1d, ConvTranspose2d, with torch's parameter
 * and buffer names, initializations (norms: weights ones, biases zeros,
 * running_mean zeros, running_var ones; convolutions: kaiming_uniform_) and
 * forward rules; adaptive pooling, Identity and ModuleList. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctensor/conv_layers.h"
#include "ctensor/module_containers.h"
#include "ctensor/norm_layers.h"
#include "ctensor/pool_layers.h"
#include "nn/module_internal.h"

/* A built-in module with a zeroed configuration of `size` bytes (*impl). */
static ct_module *module_with_impl(const char *what, const ct_module_vtable *vt, size_t size,
                                   void **impl) {
  *impl = ct__calloc(1, size);
  if (!*impl) return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  return ct__module_new_builtin(vt, *impl);
}

/* A parameter (or buffer) of shape filled with value, registered under name. */
static ct_tensor *add_filled(ct_module *m, bool buffer, const char *name, const int64_t *shape,
                             int ndim, double value, ct_dtype dtype, const ct_module_opts *o) {
  ct_tensor *t = ct__init_full(shape, ndim, value, dtype, o);
  return buffer ? ct_module_register_buffer(m, name, t) : ct_module_register_parameter(m, name, t);
}

static bool check_eps(const char *what, double eps) {
  if (eps >= 0 && isfinite(eps)) return true;
  ct__fail(CT_ERR_ARG, "%s: eps must be finite and >= 0, got %g", what, eps);
  return false;
}

/* ---- GroupNorm ---------------------------------------------------------------- */

typedef struct group_norm_impl {
  int64_t groups;
  double eps; /* parameters weight, bias (C) when affine */
} group_norm_impl;

static ct_tensor *group_norm_forward(ct_module *m, void *self, const ct_tensor *x) {
  group_norm_impl *g = ct__module_impl(m);
  return ct_group_norm(x, g->groups, ct__module_param(m, "weight"), ct__module_param(m, "bias"),
                       g->eps);
}
static const ct_module_vtable group_norm_vt = {"GroupNorm", group_norm_forward, free};

ct_module *ct_group_norm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine,
                             const ct_module_opts *opts) {
  static const char what[] = "group_norm_new";
  ct_module_opts o;
  if (!ct__module_opts(what, opts, &o) || !check_eps(what, eps)) return NULL;
  if (num_groups <= 0 || num_channels <= 0 || num_channels % num_groups != 0)
    return ct__fail(
        CT_ERR_ARG,
        "group_norm_new: num_channels (%lld) must be divisible by num_groups (%lld), both > 0",
        (long long)num_channels, (long long)num_groups);
  group_norm_impl *g;
  ct_module *m = module_with_impl(what, &group_norm_vt, sizeof *g, (void **)&g);
  if (!m) return NULL;
  g->groups = num_groups;
  g->eps = eps;
  bool ok = !affine || (add_filled(m, false, "weight", CT_SHAPE(num_channels), 1.0, o.dtype, &o) &&
                        add_filled(m, false, "bias", CT_SHAPE(num_channels), 0.0, o.dtype, &o));
  if (ok) return m;
  ct_module_free(m);
  return NULL;
}

/* ---- InstanceNorm2d ----------------------------------------------------------- */

typedef struct instance_norm_impl {
  double eps, momentum;                  /* parameters weight, bias (C) when affine */
  ct_tensor *running_mean, *running_var; /* (C) when tracking */
} instance_norm_impl;

static ct_tensor *instance_norm_forward(ct_module *m, void *self, const ct_tensor *x) {
  instance_norm_impl *b = ct__module_impl(m);
  int nd = ct_ndim(x);
  if (nd != 3 && nd != 4)
    return ct__fail(CT_ERR_SHAPE,
                    "InstanceNorm2d: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got %d-d",
                    nd);
  /* torch: the input's statistics in training or without running statistics */ bool
      use_input_stats = ct_module_is_training(m) || !b->running_mean;
  const ct_tensor *w = ct__module_param(m, "weight"), *bias = ct__module_param(m, "bias");
  if (nd == 4)
    return ct_instance_norm(x, b->running_mean, b->running_var, w, bias, use_input_stats,
                            b->momentum, b->eps);
  /* unbatched: a batch of one */
  const int64_t *s = ct_shape(x);
  ct_tensor *x4 = ct_reshape(x, CT_SHAPE(1, s[0], s[1], s[2]));
  ct_tensor *y4 = x4 ? ct_instance_norm(x4, b->running_mean, b->running_var, w, bias,
                                        use_input_stats, b->momentum, b->eps)
                     : NULL;
  ct_tensor *y = y4 ? ct_reshape(y4, s, 3) : NULL;
  ct_free(x4), ct_free(y4);
  return y;
}
static const ct_module_vtable instance_norm_vt = {"InstanceNorm2d", instance_norm_forward, free};

ct_module *ct_instance_norm2d_new(int64_t num_features, double eps, double momentum, bool affine,
                                  bool track_running_stats, const ct_module_opts *opts) {
  static const char what[] = "instance_norm2d_new";
  ct_module_opts o;
  if (!ct__module_opts(what, opts, &o) || !check_eps(what, eps)) return NULL;
  if (num_features <= 0)
    return ct__fail(CT_ERR_ARG, "instance_norm2d_new: num_features must be > 0, got %lld",
                    (long long)num_features);
  if (!(momentum >= 0 && momentum <= 1.0))
    return ct__fail(CT_ERR_ARG, "instance_norm2d_new: momentum must be in [0, 1], got %g",
                    momentum);
  instance_norm_impl *b;
  ct_module *m = module_with_impl(what, &instance_norm_vt, sizeof *b, (void **)&b);
  if (!m) return NULL;
  b->eps = eps;
  b->momentum = momentum;
  bool ok = !affine || (add_filled(m, false, "weight", CT_SHAPE(num_features), 1.0, o.dtype, &o) &&
                        add_filled(m, false, "bias", CT_SHAPE(num_features), 0.0, o.dtype, &o));
  if (ok && track_running_stats) {
    b->running_mean = add_filled(m, true, "running_mean", CT_SHAPE(num_features), 0.0, o.dtype, &o);
    b->running_var = b->running_mean ? add_filled(m, true, "running_var", CT_SHAPE(num_features),
                                                  1.0, o.dtype, &o)
                                     : NULL;
    /* saved in the state_dict as torch does; instance norm never counts */
    ok = b->running_var && add_filled(m, true, "num_batches_tracked", CT_SHAPE(), 0.0, CT_I64, &o);
  }
  if (ok) return m;
  ct_module_free(m);
  return NULL;
}

/* ---- RMSNorm ------------------------------------------------------------------ */

typedef struct rms_norm_impl {
  int ndim;
  double eps; /* parameter weight of normalized_shape when elementwise_affine */
} rms_norm_impl;

static ct_tensor *rms_norm_forward(ct_module *m, void *self, const ct_tensor *x) {
  rms_norm_impl *r = ct__module_impl(m);
  return ct_rms_norm(x, r->ndim, ct__module_param(m, "weight"), r->eps);
}
static const ct_module_vtable rms_norm_vt = {"RMSNorm", rms_norm_forward, free};

ct_module *ct_rms_norm_new(const int64_t *normalized_shape, int ndim, double eps,
                           bool elementwise_affine, const ct_module_opts *opts) {
  static const char what[] = "rms_norm_new";
  ct_module_opts o;
  if (!ct__module_opts(what, opts, &o)) return NULL;
  if (!normalized_shape || ndim < 1 || ndim > CT_MAX_DIMS)
    return ct__fail(CT_ERR_ARG, "rms_norm_new: normalized_shape needs 1 to %d dims, got %d",
                    CT_MAX_DIMS, normalized_shape ? ndim : 0);
  if (!ct__check_shape(what, normalized_shape, ndim)) return NULL;
  if (!isfinite(eps)) return ct__fail(CT_ERR_ARG, "rms_norm_new: eps must be finite, got %g", eps);
  rms_norm_impl *r;
  ct_module *m = module_with_impl(what, &rms_norm_vt, sizeof *r, (void **)&r);
  if (!m) return NULL;
  r->ndim = ndim;
  r->eps = eps;
  if (elementwise_affine &&
      !add_filled(m, false, "weight", normalized_shape, ndim, 1.0, o.dtype, &o)) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}

/* ---- Conv1d, ConvTranspose2d -------------------------------------------------- */

/* Checks channels, kernel size and groups (both channel counts divisible). */
static bool check_conv(const char *what, int64_t in, int64_t out, int64_t k, int64_t groups) {
  if (in <= 0 || out <= 0 || k <= 0 || groups <= 0) {
    ct__fail(CT_ERR_ARG,
             "%s: channels, kernel_size and groups must be > 0, got in %lld, out %lld, kernel "
             "%lld, groups %lld",
             what, (long long)in, (long long)out, (long long)k, (long long)groups);
    return false;
  }
  if (in % groups || out % groups) {
    ct__fail(CT_ERR_ARG,
             "%s: in_channels (%lld) and out_channels (%lld) must be divisible by groups (%lld)",
             what, (long long)in, (long long)out, (long long)groups);
    return false;
  }
  return true;
}

/* weight of shape ~ U(-b, b) and bias (out) likewise, b = 1/sqrt(fan_in):
 * torch's kaiming_uniform_(a=sqrt(5)) and bias initialization. */
static bool add_conv_params(ct_module *m, const int64_t *wshape, int ndim, int64_t out,
                            int64_t fan_in, bool bias, const ct_module_opts *o) {
  return ct_module_register_parameter(
             m, "weight", ct__init_uniform(wshape, ndim, ct__kaiming_uniform_bound(fan_in), o)) &&
         (!bias || ct_module_register_parameter(
                       m, "bias", ct__init_uniform(CT_SHAPE(out), ct__bias_bound(fan_in), o)));
}

typedef struct conv1d_impl {
  ct_conv1d_opts conv; /* parameters weight, bias */
} conv1d_impl;

static ct_tensor *conv1d_forward(ct_module *m, void *self, const ct_tensor *x) {
  conv1d_impl *c = ct__module_impl(m);
  return ct_conv1d(x, ct__module_param(m, "weight"), ct__module_param(m, "bias"), &c->conv);
}
static const ct_module_vtable conv1d_vt = {"Conv1d", conv1d_forward, free};

ct_module *ct_conv1d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                         const ct_conv1d_opts *conv, bool bias, const ct_module_opts *opts) {
  static const char what[] = "conv1d_new";
  ct_module_opts o;
  ct_conv1d_opts cv = conv ? *conv : (ct_conv1d_opts){0};
  int64_t groups = cv.groups ? cv.groups : 1;
  if (!ct__module_opts(what, opts, &o) ||
      !check_conv(what, in_channels, out_channels, kernel_size, groups))
    return NULL;
  conv1d_impl *c;
  ct_module *m = module_with_impl(what, &conv1d_vt, sizeof *c, (void **)&c);
  if (!m) return NULL;
  c->conv = cv;
  if (add_conv_params(m, CT_SHAPE(out_channels, in_channels / groups, kernel_size), out_channels,
                      in_channels / groups * kernel_size, bias, &o))
    return m;
  ct_module_free(m);
  return NULL;
}

typedef struct conv_transpose2d_impl {
  ct_conv_transpose2d_opts conv; /* parameters weight, bias */
} conv_transpose2d_impl;

static ct_tensor *conv_transpose2d_forward(ct_module *m, void *self, const ct_tensor *x) {
  conv_transpose2d_impl *c = ct__module_impl(m);
  return ct_conv_transpose2d(x, ct__module_param(m, "weight"), ct__module_param(m, "bias"),
                             &c->conv);
}
static const ct_module_vtable conv_transpose2d_vt = {"ConvTranspose2d", conv_transpose2d_forward,
                                                     free};

ct_module *ct_conv_transpose2d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                   const ct_conv_transpose2d_opts *conv, bool bias,
                                   const ct_module_opts *opts) {
  static const char what[] = "conv_transpose2d_new";
  ct_module_opts o;
  ct_conv_transpose2d_opts cv = conv ? *conv : (ct_conv_transpose2d_opts){0};
  int64_t groups = cv.groups ? cv.groups : 1, k = kernel_size;
  if (!ct__module_opts(what, opts, &o) || !check_conv(what, in_channels, out_channels, k, groups))
    return NULL;
  conv_transpose2d_impl *c;
  ct_module *m = module_with_impl(what, &conv_transpose2d_vt, sizeof *c, (void **)&c);
  if (!m) return NULL;
  c->conv = cv;
  if (add_conv_params(m, CT_SHAPE(in_channels, out_channels / groups, k, k), out_channels,
                      out_channels / groups * k * k, bias, &o))
    return m;
  ct_module_free(m);
  return NULL;
}

/* ---- AdaptiveAvgPool2d, AdaptiveMaxPool2d ------------------------------------------ */

typedef struct adaptive_pool_impl {
  int64_t size[2];
} adaptive_pool_impl;

static ct_tensor *adaptive_avg_forward(ct_module *m, void *self, const ct_tensor *x) {
  return ct_adaptive_avg_pool2d(x, ((adaptive_pool_impl *)ct__module_impl(m))->size);
}
static ct_tensor *adaptive_max_forward(ct_module *m, void *self, const ct_tensor *x) {
  return ct_adaptive_max_pool2d(x, ((adaptive_pool_impl *)ct__module_impl(m))->size, NULL);
}
static const ct_module_vtable adaptive_avg_vt = {"AdaptiveAvgPool2d", adaptive_avg_forward, free};
static const ct_module_vtable adaptive_max_vt = {"AdaptiveMaxPool2d", adaptive_max_forward, free};

static ct_module *adaptive_pool_new(const char *what, const ct_module_vtable *vt, int64_t oh,
                                    int64_t ow) {
  if (oh < 1 || ow < 1)
    return ct__fail(CT_ERR_ARG, "%s: output_size must be >= 1, got (%lld, %lld)", what,
                    (long long)oh, (long long)ow);
  adaptive_pool_impl *a;
  ct_module *m = module_with_impl(what, vt, sizeof *a, (void **)&a);
  if (m) a->size[0] = oh, a->size[1] = ow;
  return m;
}
ct_module *ct_adaptive_avg_pool2d_new(int64_t oh, int64_t ow) {
  return adaptive_pool_new("adaptive_avg_pool2d_new", &adaptive_avg_vt, oh, ow);
}
ct_module *ct_adaptive_max_pool2d_new(int64_t oh, int64_t ow) {
  return adaptive_pool_new("adaptive_max_pool2d_new", &adaptive_max_vt, oh, ow);
}

/* ---- Identity, ModuleList --------------------------------------------------------- */

static ct_tensor *identity_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m, (void)self;
  return ct_alias(x);
}
static const ct_module_vtable identity_vt = {"Identity", identity_forward, NULL};

ct_module *ct_identity_new(void) { return ct__module_new_builtin(&identity_vt, NULL); }

static ct_tensor *module_list_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m, (void)self, (void)x;
  return ct__fail(CT_ERR_ARG, "ModuleList has no forward: call its children (ct_module_list_get)");
}
static const ct_module_vtable module_list_vt = {"ModuleList", module_list_forward, NULL};

ct_module *ct_module_list_new(void) { return ct__module_new_builtin(&module_list_vt, NULL); }

static bool is_list(const char *what, const ct_module *list) {
  if (list && ct__module_vtable(list) == &module_list_vt) return true;
  ct__fail(CT_ERR_ARG, "%s: %s is not a ModuleList", what,
           list ? ct_module_type_name(list) : "NULL");
  return false;
}

ct_module *ct_module_list_append(ct_module *list, ct_module *child) {
  if (!child) return NULL;
  if (!is_list("module_list_append", list)) {
    ct_module_free(child);
    return NULL;
  }
  char name[24];
  snprintf(name, sizeof name, "%d", ct__module_n_children(list));
  return ct_module_register_module(list, name, child);
}

int ct_module_list_len(const ct_module *list) {
  return is_list("module_list_len", list) ? ct__module_n_children(list) : -1;
}

ct_module *ct_module_list_get(const ct_module *list, int i) {
  if (!is_list("module_list_get", list)) return NULL;
  int n = ct__module_n_children(list), k = i < 0 ? i + n : i;
  if (k < 0 || k >= n)
    return ct__fail(CT_ERR_ARG, "module_list_get: index %d out of range for a ModuleList of %d", i,
                    n);
  return ct__module_child_at(list, k);
}
