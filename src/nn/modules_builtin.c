/* Built-in modules: Linear, Conv2d, pools, activations, Dropout, BatchNorm2d,
 * LayerNorm, Flatten, Embedding, Sequential. Each keeps its configuration and
 * borrowed pointers to its buffers (handles never change, even across
 * ct_module_to), reads its parameters from the module's registry at each
 * forward (ct_module_tie_parameter may replace one) and calls the functional
 * layer. Parameter and buffer names and initializations are PyTorch's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctensor/norm_layers.h"
#include "nn/module_internal.h"

/* Allocates a zeroed configuration; NULL with CT_ERR_OOM naming what. */
static void *impl_new(const char *what, size_t size) {
  void *p = ct__calloc(1, size);
  if (!p) ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  return p;
}

/* Finishes a constructor: on failure (a NULL parameter) frees the module. */
static ct_module *finish(ct_module *m, bool ok) {
  if (ok) return m;
  ct_module_free(m);
  return NULL;
}

/* ---- Linear --------------------------------------------------------------- */

/* Parameters weight (out_features, in_features), bias (out_features) or none;
 * no configuration. */
static ct_tensor *linear_forward(ct_module *m, void *self, const ct_tensor *x) {
  return ct_linear(x, ct__module_param(m, "weight"), ct__module_param(m, "bias"));
}
static const ct_module_vtable linear_vt = {"Linear", linear_forward, NULL};

ct_module *ct_linear_new(int64_t in_features, int64_t out_features, bool bias,
                         const ct_module_opts *opts) {
  ct_module_opts o;
  if (!ct__module_opts("linear_new", opts, &o)) return NULL;
  if (in_features < 0 || out_features < 0)
    return ct__fail(CT_ERR_ARG, "linear_new: features must be >= 0, got in %lld, out %lld",
                    (long long)in_features, (long long)out_features);
  ct_module *m = ct__module_new_builtin(&linear_vt, NULL);
  if (!m) return NULL;
  bool ok = ct_module_register_parameter(
      m, "weight",
      ct__init_uniform(CT_SHAPE(out_features, in_features), ct__kaiming_uniform_bound(in_features), &o));
  if (ok && bias)
    ok = ct_module_register_parameter(
        m, "bias", ct__init_uniform(CT_SHAPE(out_features), ct__bias_bound(in_features), &o));
  return finish(m, ok);
}

/* ---- Conv2d --------------------------------------------------------------- */

typedef struct conv2d_impl {
  ct_conv2d_opts conv; /* parameters weight (C_out, C_in / groups, k, k), bias (C_out) or none */
} conv2d_impl;

static ct_tensor *conv2d_forward(ct_module *m, void *self, const ct_tensor *x) {
  conv2d_impl *c = ct__module_impl(m);
  return ct_conv2d(x, ct__module_param(m, "weight"), ct__module_param(m, "bias"), &c->conv);
}
static const ct_module_vtable conv2d_vt = {"Conv2d", conv2d_forward, free};

ct_module *ct_conv2d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                         const ct_conv2d_opts *conv, bool bias, const ct_module_opts *opts) {
  ct_module_opts o;
  if (!ct__module_opts("conv2d_new", opts, &o)) return NULL;
  ct_conv2d_opts cv = conv ? *conv : (ct_conv2d_opts){0};
  int64_t groups = cv.groups ? cv.groups : 1;
  if (in_channels <= 0 || out_channels <= 0 || kernel_size <= 0 || groups <= 0)
    return ct__fail(CT_ERR_ARG,
                    "conv2d_new: channels, kernel_size and groups must be > 0, got in %lld, out "
                    "%lld, kernel %lld, groups %lld",
                    (long long)in_channels, (long long)out_channels, (long long)kernel_size,
                    (long long)groups);
  if (in_channels % groups || out_channels % groups)
    return ct__fail(CT_ERR_ARG,
                    "conv2d_new: in_channels (%lld) and out_channels (%lld) must be divisible by "
                    "groups (%lld)",
                    (long long)in_channels, (long long)out_channels, (long long)groups);
  conv2d_impl *c = impl_new("conv2d_new", sizeof *c);
  ct_module *m = c ? ct__module_new_builtin(&conv2d_vt, c) : NULL;
  if (!m) return NULL;
  c->conv = cv;
  int64_t fan_in = in_channels / groups * kernel_size * kernel_size;
  bool ok = ct_module_register_parameter(
      m, "weight",
      ct__init_uniform(CT_SHAPE(out_channels, in_channels / groups, kernel_size, kernel_size),
                       ct__kaiming_uniform_bound(fan_in), &o));
  if (ok && bias)
    ok = ct_module_register_parameter(
        m, "bias", ct__init_uniform(CT_SHAPE(out_channels), ct__bias_bound(fan_in), &o));
  return finish(m, ok);
}

/* ---- Pooling -------------------------------------------------------------- */

static ct_tensor *max_pool_forward(ct_module *m, void *self, const ct_tensor *x) {
  return ct_max_pool2d(x, ct__module_impl(m));
}
static ct_tensor *avg_pool_forward(ct_module *m, void *self, const ct_tensor *x) {
  return ct_avg_pool2d(x, ct__module_impl(m));
}
static const ct_module_vtable max_pool_vt = {"MaxPool2d", max_pool_forward, free};
static const ct_module_vtable avg_pool_vt = {"AvgPool2d", avg_pool_forward, free};

static ct_module *pool_new(const char *what, const ct_module_vtable *vt, const ct_pool2d_opts *opts) {
  if (!opts) return ct__fail(CT_ERR_ARG, "%s: options with the kernel size are required", what);
  if (opts->kernel[0] <= 0 || opts->kernel[1] <= 0)
    return ct__fail(CT_ERR_ARG, "%s: kernel must be > 0, got (%lld, %lld)", what,
                    (long long)opts->kernel[0], (long long)opts->kernel[1]);
  ct_pool2d_opts *p = impl_new(what, sizeof *p);
  if (!p) return NULL;
  *p = *opts;
  return ct__module_new_builtin(vt, p);
}
ct_module *ct_max_pool2d_new(const ct_pool2d_opts *opts) {
  return pool_new("max_pool2d_new", &max_pool_vt, opts);
}
ct_module *ct_avg_pool2d_new(const ct_pool2d_opts *opts) {
  return pool_new("avg_pool2d_new", &avg_pool_vt, opts);
}

/* ---- Activations (no parameters) -------------------------------------------- */

#define CT__ACTIVATION(fn, Type)                                                   \
  static ct_tensor *fn##_forward(ct_module *m, void *self, const ct_tensor *x) {   \
    return ct_##fn(x);                                                             \
  }                                                                                \
  static const ct_module_vtable fn##_vt = {Type, fn##_forward, NULL};              \
  ct_module *ct_##fn##_new(void) { return ct__module_new_builtin(&fn##_vt, NULL); }

CT__ACTIVATION(relu, "ReLU")
CT__ACTIVATION(gelu, "GELU")
CT__ACTIVATION(sigmoid, "Sigmoid")
CT__ACTIVATION(tanh, "Tanh")
CT__ACTIVATION(silu, "SiLU")
#undef CT__ACTIVATION

/* ---- Dropout ---------------------------------------------------------------- */

typedef struct dropout_impl {
  double p;
} dropout_impl;

static ct_tensor *dropout_forward(ct_module *m, void *self, const ct_tensor *x) {
  dropout_impl *d = ct__module_impl(m);
  return ct_dropout(x, d->p, ct_module_is_training(m), NULL);
}
static const ct_module_vtable dropout_vt = {"Dropout", dropout_forward, free};

ct_module *ct_dropout_new(double p) {
  if (!(p >= 0.0 && p <= 1.0))
    return ct__fail(CT_ERR_ARG, "dropout_new: probability must be in [0, 1], got %g", p);
  dropout_impl *d = impl_new("dropout_new", sizeof *d);
  if (!d) return NULL;
  d->p = p;
  return ct__module_new_builtin(&dropout_vt, d);
}

/* ---- BatchNorm1d, BatchNorm2d ------------------------------------------------------------- */

typedef struct batch_norm_impl {
  bool is_1d; /* BatchNorm1d: (N, C) or (N, C, L); else BatchNorm2d: (N, C, H, W) */
  double eps, momentum;
  /* parameters weight, bias (C) */
  ct_tensor *running_mean, *running_var; /* (C) buffers */
  ct_tensor *num_batches_tracked;        /* () i64 buffer */
} batch_norm_impl;

static ct_tensor *batch_norm_forward(ct_module *m, void *self, const ct_tensor *x) {
  batch_norm_impl *b = ct__module_impl(m);
  if (b->is_1d && ct_ndim(x) != 2 && ct_ndim(x) != 3)
    return ct__fail(CT_ERR_SHAPE, "BatchNorm1d: expected a 2-d (N, C) or 3-d (N, C, L) input, got %d-d",
                    ct_ndim(x));
  if (!b->is_1d && ct_ndim(x) != 4)
    return ct__fail(CT_ERR_SHAPE, "BatchNorm2d: expected a 4-d input (N, C, H, W), got %d-d",
                    ct_ndim(x));
  bool training = ct_module_is_training(m);
  ct_tensor *y = ct_batch_norm(x, b->running_mean, b->running_var, ct__module_param(m, "weight"),
                               ct__module_param(m, "bias"), training,
                               b->momentum, b->eps);
  if (y && training) {
    ct_no_grad_begin();
    ct_tensor *r = ct_add_scalar_(b->num_batches_tracked, 1.0);
    ct_no_grad_end();
    if (!r) {
      ct_free(y);
      return NULL;
    }
  }
  return y;
}
static const ct_module_vtable batch_norm2d_vt = {"BatchNorm2d", batch_norm_forward, free};
static const ct_module_vtable batch_norm1d_vt = {"BatchNorm1d", batch_norm_forward, free};

static ct_module *batch_norm_new(const char *what, bool is_1d, int64_t num_features, double eps,
                                 double momentum, const ct_module_opts *opts) {
  ct_module_opts o;
  if (!ct__module_opts(what, opts, &o)) return NULL;
  if (num_features <= 0)
    return ct__fail(CT_ERR_ARG, "%s: num_features must be > 0, got %lld", what,
                    (long long)num_features);
  if (!(momentum >= 0 && momentum <= 1.0))
    return ct__fail(CT_ERR_ARG, "%s: momentum must be in [0, 1], got %g", what, momentum);
  if (!(eps >= 0 && isfinite(eps)))
    return ct__fail(CT_ERR_ARG, "%s: eps must be finite and >= 0, got %g", what, eps);
  batch_norm_impl *b = impl_new(what, sizeof *b);
  ct_module *m = b ? ct__module_new_builtin(is_1d ? &batch_norm1d_vt : &batch_norm2d_vt, b) : NULL;
  if (!m) return NULL;
  b->is_1d = is_1d;
  b->eps = eps;
  b->momentum = momentum;
  bool ok = ct_module_register_parameter(m, "weight",
                                         ct__init_full(CT_SHAPE(num_features), 1.0, o.dtype, &o)) &&
            ct_module_register_parameter(m, "bias",
                                         ct__init_full(CT_SHAPE(num_features), 0.0, o.dtype, &o));
  b->running_mean = ok ? ct_module_register_buffer(
                                  m, "running_mean",
                                  ct__init_full(CT_SHAPE(num_features), 0.0, o.dtype, &o))
                            : NULL;
  b->running_var = b->running_mean
                       ? ct_module_register_buffer(
                             m, "running_var", ct__init_full(CT_SHAPE(num_features), 1.0, o.dtype, &o))
                       : NULL;
  b->num_batches_tracked =
      b->running_var ? ct_module_register_buffer(m, "num_batches_tracked",
                                                 ct__init_full(CT_SHAPE(), 0.0, CT_I64, &o))
                     : NULL;
  return finish(m, b->num_batches_tracked != NULL);
}

ct_module *ct_batch_norm2d_new(int64_t num_features, double eps, double momentum,
                               const ct_module_opts *opts) {
  return batch_norm_new("batch_norm2d_new", false, num_features, eps, momentum, opts);
}
ct_module *ct_batch_norm1d_new(int64_t num_features, double eps, double momentum,
                               const ct_module_opts *opts) {
  return batch_norm_new("batch_norm1d_new", true, num_features, eps, momentum, opts);
}

/* ---- LayerNorm ---------------------------------------------------------------- */

typedef struct layer_norm_impl {
  int ndim;
  double eps; /* parameters weight, bias of normalized_shape */
} layer_norm_impl;

static ct_tensor *layer_norm_forward(ct_module *m, void *self, const ct_tensor *x) {
  layer_norm_impl *l = ct__module_impl(m);
  return ct_layer_norm(x, l->ndim, ct__module_param(m, "weight"), ct__module_param(m, "bias"),
                       l->eps);
}
static const ct_module_vtable layer_norm_vt = {"LayerNorm", layer_norm_forward, free};

ct_module *ct_layer_norm_new(const int64_t *normalized_shape, int ndim, double eps,
                             const ct_module_opts *opts) {
  ct_module_opts o;
  if (!ct__module_opts("layer_norm_new", opts, &o)) return NULL;
  if (!normalized_shape || ndim < 1 || ndim > CT_MAX_DIMS)
    return ct__fail(CT_ERR_ARG, "layer_norm_new: normalized_shape needs 1 to %d dims, got %d",
                    CT_MAX_DIMS, normalized_shape ? ndim : 0);
  if (!ct__check_shape("layer_norm_new", normalized_shape, ndim)) return NULL;
  if (!(eps >= 0 && isfinite(eps)))
    return ct__fail(CT_ERR_ARG, "layer_norm_new: eps must be finite and >= 0, got %g", eps);
  layer_norm_impl *l = impl_new("layer_norm_new", sizeof *l);
  ct_module *m = l ? ct__module_new_builtin(&layer_norm_vt, l) : NULL;
  if (!m) return NULL;
  l->ndim = ndim;
  l->eps = eps;
  bool ok = ct_module_register_parameter(m, "weight",
                                         ct__init_full(normalized_shape, ndim, 1.0, o.dtype, &o)) &&
            ct_module_register_parameter(m, "bias",
                                         ct__init_full(normalized_shape, ndim, 0.0, o.dtype, &o));
  return finish(m, ok);
}

/* ---- Flatten ----------------------------------------------------------------- */

typedef struct flatten_impl {
  int start_dim, end_dim;
} flatten_impl;

static ct_tensor *flatten_forward(ct_module *m, void *self, const ct_tensor *x) {
  flatten_impl *f = ct__module_impl(m);
  return ct_flatten(x, f->start_dim, f->end_dim);
}
static const ct_module_vtable flatten_vt = {"Flatten", flatten_forward, free};

ct_module *ct_flatten_new(int start_dim, int end_dim) {
  flatten_impl *f = impl_new("flatten_new", sizeof *f);
  if (!f) return NULL;
  f->start_dim = start_dim;
  f->end_dim = end_dim;
  return ct__module_new_builtin(&flatten_vt, f);
}

/* ---- Embedding ------------------------------------------------------------------ */

/* Parameter weight (num_embeddings, embedding_dim); no configuration. */
static ct_tensor *embedding_forward(ct_module *m, void *self, const ct_tensor *x) {
  return ct_embedding(x, ct__module_param(m, "weight"));
}
static const ct_module_vtable embedding_vt = {"Embedding", embedding_forward, NULL};

ct_module *ct_embedding_new(int64_t num_embeddings, int64_t embedding_dim, const ct_module_opts *opts) {
  ct_module_opts o;
  if (!ct__module_opts("embedding_new", opts, &o)) return NULL;
  if (num_embeddings < 0 || embedding_dim < 0)
    return ct__fail(CT_ERR_ARG, "embedding_new: sizes must be >= 0, got (%lld, %lld)",
                    (long long)num_embeddings, (long long)embedding_dim);
  ct_module *m = ct__module_new_builtin(&embedding_vt, NULL);
  if (!m) return NULL;
  bool ok = ct_module_register_parameter(
      m, "weight", ct__init_normal(CT_SHAPE(num_embeddings, embedding_dim), 0.0, 1.0, &o));
  return finish(m, ok);
}

/* ---- Sequential ------------------------------------------------------------------- */

static ct_tensor *sequential_forward(ct_module *m, void *self, const ct_tensor *x) {
  int n = ct__module_n_children(m);
  if (n == 0) return ct_alias(x);
  const ct_tensor *cur = x;
  for (int i = 0; i < n; i++) {
    ct_tensor *next = ct_module_forward(ct__module_child_at(m, i), cur);
    /* Intermediate results are ours: free them as we go (autograd keeps what
     * backward needs). */
    if (cur != x && next != cur) ct_free((ct_tensor *)cur);
    if (!next) return NULL;
    cur = next;
  }
  return (ct_tensor *)cur;
}
static const ct_module_vtable sequential_vt = {"Sequential", sequential_forward, NULL};

ct_module *ct_sequential_new(void) { return ct__module_new_builtin(&sequential_vt, NULL); }

ct_module *ct_sequential_add(ct_module *seq, ct_module *child) {
  if (!child) return NULL;
  if (!seq || ct__module_vtable(seq) != &sequential_vt) {
    ct_module_free(child);
    return ct__fail(CT_ERR_ARG, "sequential_add: %s is not a Sequential",
                    seq ? ct_module_type_name(seq) : "NULL");
  }
  char name[24];
  snprintf(name, sizeof name, "%d", ct__module_n_children(seq));
  return ct_module_register_module(seq, name, child);
}
