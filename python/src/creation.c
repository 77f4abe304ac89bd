/* Creation functions: zeros, ones, empty, full (and their _like forms),
 * arange, linspace, eye, asarray, the random creators, from_dlpack. New
 * tensors go to the default device unless one is named (get_default_device). */
#include <math.h>

#include "ctpy.h"

/* dtype, device and requires_grad keywords into ct_tensor_opts. */
static int tensor_opts(PyObject *dtype, PyObject *device, int requires_grad, ct_dtype default_dtype,
                       ct_tensor_opts *o) {
  bool given;
  memset(o, 0, sizeof *o);
  if (ctpy_parse_dtype(dtype, &o->dtype, &given) < 0) return -1;
  if (!given) o->dtype = default_dtype;
  if (ctpy_parse_device(device, &o->device) < 0) return -1;
  o->requires_grad = requires_grad;
  return 0;
}

typedef ct_tensor *(*shape_fn)(const int64_t *, int, const ct_tensor_opts *);

/* zeros/ones/empty(shape, *, dtype=None, device=None, requires_grad=False) */
static PyObject *by_shape(PyObject *args, PyObject *kwargs, const char *fmt, shape_fn fn) {
  PyObject *so, *dtype = Py_None, *device = Py_None;
  int rg = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt,
                                   CTPY_KW("shape", "dtype", "device", "requires_grad"), &so,
                                   &dtype, &device, &rg))
    return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, "shape");
  ct_tensor_opts o;
  if (n < 0 || tensor_opts(dtype, device, rg, CTPY_DEFAULT_FLOAT, &o) < 0) return NULL;
  return ctpy_wrap(fn(shape, n, &o));
}
CTPY_DEF_KWARGS(zeros, by_shape, "O|$OOp:zeros", ct_zeros)
CTPY_DEF_KWARGS(ones, by_shape, "O|$OOp:ones", ct_ones)
CTPY_DEF_KWARGS(empty, by_shape, "O|$OOp:empty", ct_empty)
CTPY_DEF_KWARGS(rand, by_shape, "O|$OOp:rand", ct_rand)
CTPY_DEF_KWARGS(randn, by_shape, "O|$OOp:randn", ct_randn)

/* The dtype a Python value gives: bool, int64 or float32. */
static ct_dtype dtype_of_value(PyObject *v) {
  if (PyBool_Check(v)) return CT_BOOL;
  if (PyLong_Check(v)) return CTPY_DEFAULT_INT;
  return CTPY_DEFAULT_FLOAT;
}

/* full(shape, fill_value, *, dtype=None, device=None, requires_grad=False) */
static PyObject *f_full(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *so, *fill, *dtype = Py_None, *device = Py_None;
  int rg = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "OO|$OOp:full",
          CTPY_KW("shape", "fill_value", "dtype", "device", "requires_grad"), &so, &fill, &dtype,
          &device, &rg))
    return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, "full");
  ct_tensor_opts o;
  double v = PyFloat_AsDouble(fill);
  if (n < 0 || (v == -1 && PyErr_Occurred()) ||
      tensor_opts(dtype, device, rg, dtype_of_value(fill), &o) < 0)
    return NULL;
  return ctpy_wrap(ct_full(shape, n, v, &o));
}

/* *_like(x, /, *, dtype=None, device=None): x's dtype and device unless given */
static PyObject *like(PyObject *args, PyObject *kwargs, const char *fmt, bool has_fill,
                      ct_tensor *(*fn)(const ct_tensor *, const ct_tensor_opts *)) {
  PyObject *xo, *fill = NULL, *dtype = Py_None, *device = Py_None;
  int rg = 0;
  bool ok = has_fill ? PyArg_ParseTupleAndKeywords(
                           args, kwargs, fmt,
                           CTPY_KW("x", "fill_value", "dtype", "device", "requires_grad"), &xo,
                           &fill, &dtype, &device, &rg)
                     : PyArg_ParseTupleAndKeywords(args, kwargs, fmt,
                                                   CTPY_KW("x", "dtype", "device", "requires_grad"),
                                                   &xo, &dtype, &device, &rg);
  if (!ok) return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &owned);
  if (!x) return NULL;
  ct_tensor_opts o = {.dtype = ct_dtype_of(x), .device = ct_device_of(x), .requires_grad = rg};
  bool given;
  ct_tensor *r = NULL;
  double v = fill ? PyFloat_AsDouble(fill) : 0;
  if (!(fill && v == -1 && PyErr_Occurred()) && ctpy_parse_dtype(dtype, &o.dtype, &given) == 0 &&
      (device == Py_None || ctpy_parse_device(device, &o.device) == 0)) {
    if (!given) o.dtype = ct_dtype_of(x);
    r = has_fill ? ct_full(ct_shape(x), ct_ndim(x), v, &o) : fn(x, &o);
    ct_free(owned);
    return ctpy_wrap(r);
  }
  ct_free(owned);
  return NULL;
}
CTPY_DEF_KWARGS(zeros_like, like, "O|$OOp:zeros_like", false, ct_zeros_like)
CTPY_DEF_KWARGS(ones_like, like, "O|$OOp:ones_like", false, ct_ones_like)
CTPY_DEF_KWARGS(empty_like, like, "O|$OOp:empty_like", false, ct_empty_like)
CTPY_DEF_KWARGS(full_like, like, "OO|$OOp:full_like", true, NULL)

/* arange(start, /, stop=None, step=1, *, dtype=None, device=None) */
static PyObject *f_arange(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *a0, *a1 = Py_None, *a2 = NULL, *dtype = Py_None, *device = Py_None;
  int rg = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "O|OO$OOp:arange",
          CTPY_KW("start", "stop", "step", "dtype", "device", "requires_grad"), &a0, &a1, &a2,
          &dtype, &device, &rg))
    return NULL;
  PyObject *start = a1 == Py_None ? NULL : a0, *stop = a1 == Py_None ? a0 : a1;
  double s = start ? PyFloat_AsDouble(start) : 0, e = PyFloat_AsDouble(stop),
         st = a2 ? PyFloat_AsDouble(a2) : 1;
  if (PyErr_Occurred()) return NULL;
  bool any_float =
      (start && PyFloat_Check(start)) || PyFloat_Check(stop) || (a2 && PyFloat_Check(a2));
  ct_tensor_opts o;
  if (tensor_opts(dtype, device, rg, any_float ? CTPY_DEFAULT_FLOAT : CTPY_DEFAULT_INT, &o) < 0)
    return NULL;
  return ctpy_wrap(ct_arange(s, e, st, &o));
}

/* linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) */
static PyObject *f_linspace(PyObject *m, PyObject *args, PyObject *kwargs) {
  double start, stop;
  long long num;
  PyObject *dtype = Py_None, *device = Py_None;
  int endpoint = 1, rg = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "ddL|$OOpp:linspace",
          CTPY_KW("start", "stop", "num", "dtype", "device", "endpoint", "requires_grad"), &start,
          &stop, &num, &dtype, &device, &endpoint, &rg))
    return NULL;
  ct_tensor_opts o;
  if (tensor_opts(dtype, device, rg, CTPY_DEFAULT_FLOAT, &o) < 0) return NULL;
  if (endpoint || num <= 0) return ctpy_wrap(ct_linspace(start, stop, num, &o));
  /* without the endpoint: num + 1 points, the last dropped */
  ct_tensor *all = ct_linspace(start, stop, num + 1, &o);
  ct_tensor *r = all ? ct_slice(all, 0, 0, num, 1) : NULL;
  ct_free(all);
  return ctpy_wrap(r);
}

/* eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) */
static PyObject *f_eye(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long n;
  PyObject *cols = Py_None, *dtype = Py_None, *device = Py_None;
  long long k = 0;
  int rg = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "L|O$LOOp:eye",
          CTPY_KW("n_rows", "n_cols", "k", "dtype", "device", "requires_grad"), &n, &cols, &k,
          &dtype, &device, &rg))
    return NULL;
  long long c = cols == Py_None ? n : PyLong_AsLongLong(cols);
  if (PyErr_Occurred()) return NULL;
  ct_tensor_opts o;
  if (tensor_opts(dtype, device, rg, CTPY_DEFAULT_FLOAT, &o) < 0) return NULL;
  if (k == 0) return ctpy_wrap(ct_eye(n, c, &o));
  /* an offset diagonal: ones written into the diagonal view of zeros */
  bool requires = o.requires_grad;
  o.requires_grad = false;
  ct_tensor *z = ct_zeros(CT_SHAPE(n, c), &o);
  ct_tensor *diag = z ? ct_diagonal(z, k, 0, 1) : NULL;
  bool ok = diag && (ct_numel(diag) == 0 || ct_fill_(diag, 1));
  ct_free(diag);
  if (ok && requires) ok = ct_requires_grad_(z, true) != NULL;
  if (!ok) {
    ct_free(z);
    return ctpy_raise();
  }
  return ctpy_wrap(z);
}

/* asarray(obj, /, *, dtype=None, device=None, copy=None): obj itself when
 * nothing changes (a Tensor) */
static PyObject *f_asarray(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *obj, *dtype = Py_None, *device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:asarray",
                                   CTPY_KW("obj", "dtype", "device", "copy"), &obj, &dtype, &device,
                                   &copy))
    return NULL;
  ctpy_asarray_opts o;
  if (ctpy_asarray_opts_parse(dtype, device, copy, &o) < 0) return NULL;
  if (ctpy_is_tensor(obj) && o.copy != 1 && (!o.has_dtype || o.dtype == ct_dtype_of(ctpy_t(obj))) &&
      (!o.has_device || ct_device_equal(o.device, ct_device_of(ctpy_t(obj)))))
    return Py_NewRef(obj);
  ct_tensor *t = ctpy_asarray(obj, &o);
  return t ? ctpy_wrap(t) : NULL;
}

/* randint(low, high, shape, *, dtype=int64, device=None) */
static PyObject *f_randint(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long lo, hi;
  PyObject *so, *dtype = Py_None, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LLO|$OO:randint",
                                   CTPY_KW("low", "high", "shape", "dtype", "device"), &lo, &hi,
                                   &so, &dtype, &device))
    return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, "randint");
  ct_tensor_opts o;
  if (n < 0 || tensor_opts(dtype, device, 0, CTPY_DEFAULT_INT, &o) < 0) return NULL;
  return ctpy_wrap(ct_randint(lo, hi, shape, n, &o));
}

/* normal(mean, std, shape, ...) / uniform(low, high, shape, ...) */
static PyObject *two_params(PyObject *args, PyObject *kwargs, const char *fmt,
                            ct_tensor *(*fn)(double, double, const int64_t *, int,
                                             const ct_tensor_opts *)) {
  double a, b;
  PyObject *so, *dtype = Py_None, *device = Py_None;
  int rg = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt,
                                   CTPY_KW("a", "b", "shape", "dtype", "device", "requires_grad"),
                                   &a, &b, &so, &dtype, &device, &rg))
    return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, "shape");
  ct_tensor_opts o;
  if (n < 0 || tensor_opts(dtype, device, rg, CTPY_DEFAULT_FLOAT, &o) < 0) return NULL;
  return ctpy_wrap(fn(a, b, shape, n, &o));
}
CTPY_DEF_KWARGS(normal, two_params, "ddO|$OOp:normal", ct_normal)
CTPY_DEF_KWARGS(uniform, two_params, "ddO|$OOp:uniform", ct_uniform)

static PyObject *f_randperm(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long n;
  PyObject *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "L|$O:randperm", CTPY_KW("n", "device"), &n,
                                   &device))
    return NULL;
  ct_tensor_opts o;
  if (tensor_opts(Py_None, device, 0, CT_I64, &o) < 0) return NULL;
  return ctpy_wrap(ct_randperm(n, &o));
}

static PyObject *f_bernoulli(PyObject *m, PyObject *arg) {
  ct_tensor *owned;
  const ct_tensor *p = ctpy_operand(arg, ctpy_default_device(), &owned);
  if (!p) return NULL;
  ct_tensor *r = ct_bernoulli(p, NULL);
  ct_free(owned);
  return ctpy_wrap(r);
}

static PyObject *f_manual_seed(PyObject *m, PyObject *arg) {
  unsigned long long s = PyLong_AsUnsignedLongLongMask(arg);
  if (PyErr_Occurred()) return NULL;
  ct_manual_seed(s);
  Py_RETURN_NONE;
}

/* uniform_/normal_(x, a, b): fill in place */
static PyObject *fill_random(PyObject *args, const char *fmt,
                             ct_tensor *(*fn)(ct_tensor *, double, double, ct_generator *)) {
  PyObject *xo;
  double a, b;
  if (!PyArg_ParseTuple(args, fmt, &CtpyTensor_Type, &xo, &a, &b)) return NULL;
  if (!fn(ctpy_t(xo), a, b, NULL)) return ctpy_raise();
  return Py_NewRef(xo);
}
CTPY_DEF_VARARGS(uniform_, fill_random, "O!dd:uniform_", ct_uniform_)
CTPY_DEF_VARARGS(normal_, fill_random, "O!dd:normal_", ct_normal_)

PyMethodDef ctpy_creation_methods[] = {
    {"zeros", CTPY_KWARGS(f_zeros),
     "zeros(shape, *, dtype=None, device=None, requires_grad=False)"},
    {"ones", CTPY_KWARGS(f_ones), "ones(shape, *, dtype=None, device=None, requires_grad=False)"},
    {"empty", CTPY_KWARGS(f_empty),
     "empty(shape, *, dtype=None, device=None, requires_grad=False)"},
    {"full", CTPY_KWARGS(f_full),
     "full(shape, fill_value, *, dtype=None, device=None, requires_grad=False)"},
    {"zeros_like", CTPY_KWARGS(f_zeros_like), "zeros_like(x, /, *, dtype=None, device=None)"},
    {"ones_like", CTPY_KWARGS(f_ones_like), "ones_like(x, /, *, dtype=None, device=None)"},
    {"empty_like", CTPY_KWARGS(f_empty_like), "empty_like(x, /, *, dtype=None, device=None)"},
    {"full_like", CTPY_KWARGS(f_full_like),
     "full_like(x, /, fill_value, *, dtype=None, device=None)"},
    {"arange", CTPY_KWARGS(f_arange),
     "arange(start, /, stop=None, step=1, *, dtype=None, device=None)"},
    {"linspace", CTPY_KWARGS(f_linspace),
     "linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True)"},
    {"eye", CTPY_KWARGS(f_eye), "eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)"},
    {"asarray", CTPY_KWARGS(f_asarray), "asarray(obj, /, *, dtype=None, device=None, copy=None)"},
    {"from_dlpack", CTPY_KWARGS(ctpy_from_dlpack),
     "from_dlpack(x, /, *, device=None, copy=None): no copy when possible"},
    {"rand", CTPY_KWARGS(f_rand), "rand(shape, *, dtype=None, device=None): uniform [0, 1)"},
    {"randn", CTPY_KWARGS(f_randn), "randn(shape, *, dtype=None, device=None): standard normal"},
    {"randint", CTPY_KWARGS(f_randint),
     "randint(low, high, shape, *, dtype=None, device=None): int64 unless dtype says"},
    {"normal", CTPY_KWARGS(f_normal), "normal(mean, std, shape, *, dtype=None, device=None)"},
    {"uniform", CTPY_KWARGS(f_uniform), "uniform(low, high, shape, *, dtype=None, device=None)"},
    {"randperm", CTPY_KWARGS(f_randperm), "randperm(n, *, device=None): int64"},
    {"bernoulli", f_bernoulli, METH_O, "bernoulli(p): 1 with probability p"},
    {"manual_seed", f_manual_seed, METH_O, "manual_seed(seed): seeds the default generator"},
    {"uniform_", f_uniform_, METH_VARARGS, "uniform_(x, low, high): fills x in place"},
    {"normal_", f_normal_, METH_VARARGS, "normal_(x, mean, std): fills x in place"},
    {NULL},
};
