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

/* A 1-d tensor of n values value(i, ctx), computed on the host in `host`
 * (f64 or i64) and converted to opts' dtype and device (creation functions
 * are not hot paths). */
static ct_tensor *from_host_values(const char *op, int64_t n, ct_dtype host_dtype,
                                   void (*value)(void *out, int64_t i, const void *ctx),
                                   const void *ctx, const ct_tensor_opts *o) {
  ct_tensor_opts host = {.dtype = host_dtype};
  ct_tensor *h = ct__create(op, &n, 1, &host); /* checks n's byte size */
  if (!h) return NULL;
  char *p = ct__data(h);
  for (int64_t i = 0; i < n; i++) value(p + i * 8, i, ctx);
  ct_tensor *r = ct__create(op, &n, 1, o);
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

typedef struct range_f64 {
  double start, step;
} range_f64;
typedef struct range_i64 {
  int64_t start, step;
} range_i64;
static void arange_f64(void *out, int64_t i, const void *ctx) {
  const range_f64 *r = ctx;
  *(double *)out = r->start + (double)i * r->step;
}
static void arange_i64(void *out, int64_t i, const void *ctx) {
  const range_i64 *r = ctx; /* wraps modulo 2^64 like torch's int64 arithmetic */
  *(int64_t *)out = (int64_t)((uint64_t)r->start + (uint64_t)i * (uint64_t)r->step);
}

/* An integral arange argument of an integer dtype, as an i64. */
static bool arange_int_arg(double v, int64_t *out) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || v != trunc(v)) return false;
  *out = (int64_t)v;
  return true;
}

ct_tensor *ct_arange(double start, double end, double step, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step))
    return ct__fail(CT_ERR_ARG, "arange: start %g, end %g and step %g must be finite, step nonzero",
                    start, end, step);
  if ((unsigned)o->dtype < CT_DTYPE_COUNT && o->dtype == CT_BOOL)
    return ct__fail(CT_ERR_DTYPE, "arange: bool is not a dtype arange makes (as torch)");
  bool integral = ct_dtype_is_integral(o->dtype);
  int64_t is = 0, ie = 0, ist = 0;
  /* torch gives fractional arguments with an integer dtype results that
   * depend on the dtype (arange(0, 5.5) has 5 elements in int64, 6 in int32):
   * refused rather than copied */
  if (integral &&
      (!arange_int_arg(start, &is) || !arange_int_arg(end, &ie) || !arange_int_arg(step, &ist)))
    return ct__fail(CT_ERR_ARG,
                    "arange: with the integer dtype %s, start, end and step must be integers "
                    "within i64, got %g, %g and %g",
                    ct_dtype_name(o->dtype), start, end, step);
  if ((end - start) / step < 0)
    return ct__fail(CT_ERR_ARG, "arange: step %g goes away from end (start %g, end %g)", step,
                    start, end);
  double count = ceil((end - start) / step);
  if (!(count < 9.2e18))
    return ct__fail(CT_ERR_ARG, "arange: %g elements do not fit in 64 bits", count);
  int64_t n = (int64_t)count;
  ct_tensor *t =
      integral ? from_host_values("arange", n, CT_I64, arange_i64, &(range_i64){is, ist}, o)
               : from_host_values("arange", n, CT_F64, arange_f64, &(range_f64){start, step}, o);
  return ct__finish_creation("arange", t, o);
}

typedef struct linspace_args {
  double start, end, delta;
  int64_t steps;
} linspace_args;
/* As torch: the first half counts up from start, the second down from end,
 * so both endpoints are exact; a single step is `start`. */
static void linspace_value(void *out, int64_t i, const void *ctx) {
  const linspace_args *a = ctx;
  double v = i < a->steps / 2 ? a->start + a->delta * (double)i
                              : a->end - a->delta * (double)(a->steps - 1 - i);
  *(double *)out = a->steps == 1 ? a->start : v;
}

ct_tensor *ct_linspace(double start, double end, int64_t steps, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (steps < 0) return ct__fail(CT_ERR_ARG, "linspace: steps must be >= 0, got %lld", (long long)steps);
  if ((unsigned)o->dtype < CT_DTYPE_COUNT && o->dtype == CT_BOOL)
    return ct__fail(CT_ERR_DTYPE, "linspace: bool is not a dtype linspace makes (as torch)");
  /* torch converts start and end to the dtype, checked (ct_fill_'s rule) */
  if ((unsigned)o->dtype < CT_DTYPE_COUNT && (!ct__check_scalar_fits("linspace", start, o->dtype) ||
                                              !ct__check_scalar_fits("linspace", end, o->dtype)))
    return NULL;
  if (ct_dtype_is_integral(o->dtype)) { /* torch converts the endpoints to the dtype first */
    unsigned char buf[8];
    ct__store_from_double(buf, o->dtype, start);
    start = ct__load_as_double(buf, o->dtype);
    ct__store_from_double(buf, o->dtype, end);
    end = ct__load_as_double(buf, o->dtype);
  }
  linspace_args a = {start, end, steps > 1 ? (end - start) / (double)(steps - 1) : 0, steps};
  ct_tensor *t = from_host_values("linspace", steps, CT_F64, linspace_value, &a, o);
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

ct_tensor *ct_from_data_typed(const void *data, int data_dtype, const int64_t *shape, int ndim,
                              const ct_tensor_opts *opts) {
  ct_tensor_opts o = opts ? *opts : default_opts;
  if (data_dtype >= 0 && data_dtype < CT_DTYPE_COUNT && o.dtype != (ct_dtype)data_dtype) {
    /* The pointer's C type says the dtype: the zero value (f32, the default)
     * takes it; another dtype would reinterpret the bytes, a mistake. */
    if (o.dtype != CT_F32)
      return ct__fail(CT_ERR_DTYPE,
                      "from_data: data points to %s elements but opts->dtype is %s; pass a "
                      "matching dtype (or a void pointer to reinterpret the bytes)",
                      ct_dtype_name((ct_dtype)data_dtype), ct_dtype_name(o.dtype));
    o.dtype = (ct_dtype)data_dtype;
  }
  ct_tensor *t = ct__create("from_data", shape, ndim, &o);
  if (!t) return NULL;
  if (!data && t->numel > 0) {
    ct__release(t);
    return ct__fail(CT_ERR_ARG, "from_data: data is NULL");
  }
  if (t->numel && ct__backend_of(t)->copy_from_host(t, data, ct_nbytes(t), false) != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return ct__finish_creation("from_data", t, &o);
}

/* The function behind the C macro of the same name (tensor.h), for C++ and
 * for callers that take its address. */
ct_tensor *(ct_from_data)(const void *data, const int64_t *shape, int ndim,
                          const ct_tensor_opts *opts) {
  return ct_from_data_typed(data, -1, shape, ndim, opts);
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
