/* Creation: empty, zeros, ones, full, scalar, arange, linspace, eye, from
 * host data, and the *_like forms. */
#include <math.h>
#include <stdlib.h>

#include "ops/creation.h"
#include "ops/ops_internal.h"

static const ct_tensor_opts default_opts = {0};


ct_tensor *ct__finish_creation(const char *op, ct_tensor *t, const ct_tensor_opts *o) {
  if (t && o->requires_grad) {
    if (!ct_dtype_is_floating(t->dtype)) {
      ct_dtype d = t->dtype;
      ct__release(t);
      return ct__fail(CT_ERR_DTYPE, "%s: only floating tensors can require grad, got %s", op,
                      ct_dtype_name(d));
    }
    if (ct__make_leaf_requires_grad(t) != CT_OK) {
      ct__release(t);
      return NULL;
    }
  }
  return ct__track(t);
}

static bool check_opts(const char *op, const ct_tensor_opts *o) {
  if ((unsigned)o->dtype >= CT_DTYPE_COUNT)
    return ct__fail(CT_ERR_DTYPE, "%s: invalid dtype %d", op, (int)o->dtype), false;
  if (!ct__check_device(op, o->device)) return false;
  if (o->pin_memory && o->device.type != CT_DEVICE_CPU)
    return ct__fail(CT_ERR_ARG, "%s: pin_memory applies to CPU tensors only, not %s", op,
                    ct_device_name(o->device)),
           false;
  return true;
}

/* An unregistered fresh tensor per opts (internal: callers ct__finish_creation). */
ct_tensor *ct__create(const char *op, const int64_t *shape, int ndim, const ct_tensor_opts *o) {
  if (!ct__check_shape(op, shape, ndim) || !check_opts(op, o)) return NULL;
  return o->pin_memory ? ct__empty_pinned(shape, ndim, o->dtype)
                       : ct__empty(shape, ndim, o->dtype, o->device);
}

static ct_tensor *filled(const char *op, const int64_t *shape, int ndim, double v,
                         const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  /* an invalid dtype is reported by ct__create */
  if ((unsigned)o->dtype < CT_DTYPE_COUNT && !ct__check_scalar_fits(op, v, o->dtype)) return NULL;
  ct_tensor *t = ct__create(op, shape, ndim, o);
  if (t && ct__backend_of(t)->fill(t, v) != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return ct__finish_creation(op, t, o);
}

ct_tensor *ct_empty(const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  return ct__finish_creation("empty", ct__create("empty", shape, ndim, o), o);
}
ct_tensor *ct_zeros(const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  return filled("zeros", shape, ndim, 0.0, opts);
}
ct_tensor *ct_ones(const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  return filled("ones", shape, ndim, 1.0, opts);
}
ct_tensor *ct_full(const int64_t *shape, int ndim, double value, const ct_tensor_opts *opts) {
  return filled("full", shape, ndim, value, opts);
}
ct_tensor *ct_scalar(double value, const ct_tensor_opts *opts) {
  return filled("scalar", NULL, 0, value, opts);
}

/* Builds a contiguous host f64 image of n values by fn, then uploads it in
 * the requested dtype (creation functions are not hot paths). */
static ct_tensor *from_f64(const char *op, const double *vals, const int64_t *shape, int ndim,
                           const ct_tensor_opts *o) {
  ct_tensor_opts host = *o;
  host.dtype = CT_F64;
  host.device = ct_cpu();
  host.requires_grad = false;
  host.pin_memory = false;
  ct_tensor *h = ct__create(op, shape, ndim, &host);
  if (!h) return NULL;
  memcpy(ct__data(h), vals, (size_t)h->numel * sizeof(double));
  ct_tensor *r = ct__create(op, shape, ndim, o);
  if (!r) {
    ct__release(h);
    return NULL;
  }
  ct_status st;
  if (ct__is_cpu(r)) {
    st = ct__backend_of(r)->copy(r, h);
  } else {
    ct_tensor *hc = ct__cast(h, o->dtype);
    st = hc ? ct__backend_of(r)->copy_from_host(r, ct__data(hc), ct_nbytes(hc), false) : ct_last_error();
    ct__release(hc);
  }
  ct__release(h);
  if (st != CT_OK) {
    ct__release(r);
    return NULL;
  }
  return r;
}

ct_tensor *ct_arange(double start, double end, double step, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step))
    return ct__fail(CT_ERR_ARG, "arange: start %g, end %g and step %g must be finite, step nonzero",
                    start, end, step);
  if ((end - start) / step < 0)
    return ct__fail(CT_ERR_ARG, "arange: step %g goes away from end (start %g, end %g)", step,
                    start, end);
  double count = ceil((end - start) / step);
  if (count > 1e12) return ct__fail(CT_ERR_ARG, "arange: %g elements is too many", count);
  int64_t n = (int64_t)count;
  double *v = ct__malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) return ct__fail(CT_ERR_OOM, "arange: out of host memory for %lld elements", (long long)n);
  for (int64_t i = 0; i < n; i++) v[i] = start + (double)i * step;
  ct_tensor *t = from_f64("arange", v, &n, 1, o);
  free(v);
  return ct__finish_creation("arange", t, o);
}

ct_tensor *ct_linspace(double start, double end, int64_t steps, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (steps < 0) return ct__fail(CT_ERR_ARG, "linspace: steps must be >= 0, got %lld", (long long)steps);
  double *v = ct__malloc((size_t)(steps ? steps : 1) * sizeof *v);
  if (!v) return ct__fail(CT_ERR_OOM, "linspace: out of host memory for %lld elements", (long long)steps);
  double delta = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
  /* As torch: the first half counts up from start, the second down from end,
   * so both endpoints are exact. */
  int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; i++)
    v[i] = i < half ? start + delta * (double)i : end - delta * (double)(steps - 1 - i);
  if (steps == 1) v[0] = start; /* torch: a single step is `start` */
  ct_tensor *t = from_f64("linspace", v, &steps, 1, o);
  free(v);
  return ct__finish_creation("linspace", t, o);
}

ct_tensor *ct_eye(int64_t n, int64_t m, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (m <= 0) m = n;
  if (n < 0) return ct__fail(CT_ERR_ARG, "eye: n must be >= 0, got %lld", (long long)n);
  int64_t shape[2] = {n, m};
  ct_tensor *t = ct__create("eye", shape, 2, o);
  if (!t) return NULL;
  const ct_backend *be = ct__backend_of(t);
  ct_status st = be->fill(t, 0.0);
  if (st == CT_OK && n > 0) {
    /* the diagonal is a strided view: stride m + 1 */
    int64_t k = n < m ? n : m, stride = m + 1;
    ct_tensor *diag = ct__view_of(t, t->dtype, &k, &stride, 1, 0);
    st = diag ? be->fill(diag, 1.0) : ct_last_error();
    ct__release(diag);
  }
  if (st != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return ct__finish_creation("eye", t, o);
}

ct_tensor *ct_from_data(const void *data, const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (!data && ct__shape_numel(shape, ndim) > 0) return ct__fail(CT_ERR_ARG, "from_data: data is NULL");
  ct_tensor *t = ct__create("from_data", shape, ndim, o);
  if (!t) return NULL;
  if (t->numel && ct__backend_of(t)->copy_from_host(t, data, ct_nbytes(t), false) != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return ct__finish_creation("from_data", t, o);
}

/* opts for *_like: t's dtype and device unless opts given. */
static ct_tensor_opts like_opts(const ct_tensor *t, const ct_tensor_opts *opts) {
  if (opts) return *opts;
  return (ct_tensor_opts){.dtype = t->dtype, .device = ct__device(t)};
}

ct_tensor *ct_empty_like(const ct_tensor *t, const ct_tensor_opts *opts) {
  if (!t) return NULL;
  ct_tensor_opts o = like_opts(t, opts);
  return ct_empty(t->shape, t->ndim, &o);
}
ct_tensor *ct_zeros_like(const ct_tensor *t, const ct_tensor_opts *opts) {
  if (!t) return NULL;
  ct_tensor_opts o = like_opts(t, opts);
  return ct_zeros(t->shape, t->ndim, &o);
}
ct_tensor *ct_ones_like(const ct_tensor *t, const ct_tensor_opts *opts) {
  if (!t) return NULL;
  ct_tensor_opts o = like_opts(t, opts);
  return ct_ones(t->shape, t->ndim, &o);
}
ct_tensor *ct_full_like(const ct_tensor *t, double value, const ct_tensor_opts *opts) {
  if (!t) return NULL;
  ct_tensor_opts o = like_opts(t, opts);
  return ct_full(t->shape, t->ndim, value, &o);
}
