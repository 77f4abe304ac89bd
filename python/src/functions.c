/* The op functions beyond elementwise ones: reductions, linear algebra,
 * selection and joins, views and shapes, each a thin call of the C library
 * with the array API's keyword names (axis, keepdims, correction...). */
#include <math.h>

#include "ctpy.h"

/* ---- Functions: reductions
 * --------------------------------------------------------------------------- */

int ctpy_reduce_axes(PyObject *axis, bool keepdims, int ndim, ct_reduce_opts *r) {
  memset(r, 0, sizeof *r);
  r->keepdim = keepdims;
  if (!axis || axis == Py_None) return 0;
  if (PyLong_Check(axis)) {
    r->dims[0] = (int)PyLong_AsLong(axis);
    r->ndims = 1;
    return PyErr_Occurred() ? -1 : 0;
  }
  PyObject *seq = ctpy_sequence_tuple(axis, "axis: None, an int or a tuple of ints");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > CT_MAX_DIMS) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "axis: %zd axes for a tensor of at most %d dims", n,
                 CT_MAX_DIMS);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    r->dims[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
  Py_DECREF(seq);
  if (PyErr_Occurred()) return -1;
  r->ndims = (int)n;
  if (n == 0) { /* axis=() reduces nothing: every dim is kept as it is */
    r->ndims = -1;
  }
  (void)ndim;
  return 0;
}

/* Reductions over an empty axis tuple return the input's values. */
#define REDUCE_NOTHING(r, x) ((r).ndims < 0)

typedef ct_tensor *(*reduce_fn)(const ct_tensor *, const ct_reduce_opts *);

/* sum/prod/mean/max/min/logsumexp/all/any(x, /, *, axis=None, keepdims=False, dtype=None) */
static PyObject *reduce_common(PyObject *args, PyObject *kwargs, const char *fmt, reduce_fn fn,
                               bool any_dtype) {
  PyObject *xo, *axis = Py_None, *dtype = Py_None;
  int keepdims = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("x", "axis", "keepdims", "dtype"),
                                   &xo, &axis, &keepdims, &dtype))
    return NULL;
  ct_tensor *owned, *cast = NULL, *r;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  ct_reduce_opts ro;
  ct_dtype d;
  bool has_dtype;
  if (ctpy_reduce_axes(axis, keepdims, ct_ndim(x), &ro) < 0 ||
      ctpy_parse_dtype(dtype, &d, &has_dtype) < 0) {
    ct_free(owned);
    return NULL;
  }
  if (has_dtype && any_dtype) {
    if (!(cast = ct_cast(x, d))) return ct_free(owned), ctpy_raise();
    x = cast;
  }
  if (REDUCE_NOTHING(ro, x)) {
    r = ct_alias(x);
  } else {
    CTPY_CALL(r, ctpy_is_big(x, NULL), fn(x, &ro));
  }
  ct_free(cast);
  ct_free(owned);
  return ctpy_wrap(r);
}

#define DEF_REDUCE(name, dt)                                                 \
  static PyObject *f_##name(PyObject *m, PyObject *args, PyObject *kwargs) { \
    return reduce_common(args, kwargs, "O|O$pO:" #name, ct_##name, dt);      \
  }
DEF_REDUCE(sum, true)
DEF_REDUCE(prod, true)
DEF_REDUCE(mean, true)
DEF_REDUCE(max, false)
DEF_REDUCE(min, false)
DEF_REDUCE(logsumexp, false)
DEF_REDUCE(all, false)
DEF_REDUCE(any, false)

/* var/std(x, /, *, axis=None, correction=0.0, keepdims=False) */
static PyObject *var_std(PyObject *args, PyObject *kwargs, const char *fmt,
                         ct_tensor *(*fn)(const ct_tensor *, const ct_reduce_opts *, double)) {
  PyObject *xo, *axis = Py_None;
  double correction = 0;
  int keepdims = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt,
                                   CTPY_KW("x", "axis", "correction", "keepdims"), &xo, &axis,
                                   &correction, &keepdims))
    return NULL;
  ct_tensor *owned, *r;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  ct_reduce_opts ro;
  if (ctpy_reduce_axes(axis, keepdims, ct_ndim(x), &ro) < 0) return ct_free(owned), NULL;
  CTPY_CALL(r, ctpy_is_big(x, NULL), fn(x, REDUCE_NOTHING(ro, x) ? CT_DIMS() : &ro, correction));
  ct_free(owned);
  return ctpy_wrap(r);
}
CTPY_DEF_KWARGS(var, var_std, "O|O$dp:var", ct_var)
CTPY_DEF_KWARGS(std, var_std, "O|O$dp:std", ct_std)

/* norm(x, /, *, ord=2, axis=None, keepdims=False): the vector p-norm */
static PyObject *f_norm(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *axis = Py_None;
  double p = 2;
  int keepdims = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$dOp:norm",
                                   CTPY_KW("x", "ord", "axis", "keepdims"), &xo, &p, &axis,
                                   &keepdims))
    return NULL;
  ct_tensor *owned, *r;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  ct_reduce_opts ro;
  if (ctpy_reduce_axes(axis, keepdims, ct_ndim(x), &ro) < 0) return ct_free(owned), NULL;
  CTPY_CALL(r, ctpy_is_big(x, NULL), ct_norm(x, p, &ro));
  ct_free(owned);
  return ctpy_wrap(r);
}

/* argmax/argmin(x, /, *, axis=None, keepdims=False) */
static PyObject *arg_reduce(PyObject *args, PyObject *kwargs, const char *fmt,
                            ct_tensor *(*fn)(const ct_tensor *, int, bool)) {
  PyObject *xo, *axis = Py_None;
  int keepdims = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("x", "axis", "keepdims"), &xo, &axis,
                                   &keepdims))
    return NULL;
  int dim = CT_DIM_ALL;
  if (axis != Py_None && (dim = (int)PyLong_AsLong(axis)) == -1 && PyErr_Occurred()) return NULL;
  ct_tensor *owned, *r;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  r = fn(x, dim, keepdims);
  if (r && dim == CT_DIM_ALL && keepdims) { /* the flat index with every dim kept as 1 */
    int64_t ones[CT_MAX_DIMS];
    for (int d = 0; d < ct_ndim(x); d++) ones[d] = 1;
    ct_tensor *k = ct_reshape(r, ones, ct_ndim(x));
    ct_free(r);
    r = k;
  }
  ct_free(owned);
  return ctpy_wrap(r);
}
CTPY_DEF_KWARGS(argmax, arg_reduce, "O|O$p:argmax", ct_argmax)
CTPY_DEF_KWARGS(argmin, arg_reduce, "O|O$p:argmin", ct_argmin)

/* softmax/log_softmax(x, axis=-1) */
static PyObject *softmax_common(PyObject *args, PyObject *kwargs, const char *fmt,
                                ct_tensor *(*fn)(const ct_tensor *, int)) {
  PyObject *xo;
  int axis = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("x", "axis"), &xo, &axis))
    return NULL;
  CTPY_RETURN_ON_TENSOR_NOGIL(xo, x, fn(x, axis));
}
CTPY_DEF_KWARGS(softmax, softmax_common, "O|i:softmax", ct_softmax)
CTPY_DEF_KWARGS(log_softmax, softmax_common, "O|i:log_softmax", ct_log_softmax)

/* ---- Functions: linear algebra, selection -------------------------------------------------------
 */

/* Two tensor-likes on one device: the device of the first tensor among them. */
static int two_tensors(PyObject *a, PyObject *b, const ct_tensor **x, const ct_tensor **y,
                       ct_tensor **oa, ct_tensor **ob) {
  ct_device dev = ctpy_is_tensor(a)   ? ct_device_of(ctpy_t(a))
                  : ctpy_is_tensor(b) ? ct_device_of(ctpy_t(b))
                                      : ctpy_default_device();
  *oa = *ob = NULL;
  if (!(*x = ctpy_operand(a, dev, oa))) return -1;
  if (!(*y = ctpy_operand(b, dev, ob))) return ct_free(*oa), -1;
  return 0;
}

#define DEF_TENSOR2(name, call)                                                                    \
  static PyObject *f_##name(PyObject *m, PyObject *const *args, Py_ssize_t n) {                    \
    if (n != 2) return PyErr_Format(PyExc_TypeError, #name "() takes 2 arguments (%zd given)", n); \
    const ct_tensor *x, *y;                                                                        \
    ct_tensor *oa, *ob, *r;                                                                        \
    if (two_tensors(args[0], args[1], &x, &y, &oa, &ob) < 0) return NULL;                          \
    CTPY_CALL(r, ctpy_is_big(x, y), call);                                                         \
    ct_free(oa);                                                                                   \
    ct_free(ob);                                                                                   \
    return ctpy_wrap(r);                                                                           \
  }
DEF_TENSOR2(matmul, ct_matmul(x, y))
DEF_TENSOR2(mm, ct_mm(x, y))
DEF_TENSOR2(bmm, ct_bmm(x, y))
DEF_TENSOR2(dot, ct_dot(x, y))
DEF_TENSOR2(masked_select, ct_masked_select(x, y))
DEF_TENSOR2(expand_as, ct_expand_as(x, y))

/* where(condition, x1, x2): either branch may be a Python scalar */
static PyObject *f_where(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  if (n != 3) return PyErr_Format(PyExc_TypeError, "where() takes 3 arguments (%zd given)", n);
  ct_tensor *oc = NULL, *oa = NULL, *ob = NULL, *tmp = NULL, *r = NULL;
  const ct_tensor *c = ctpy_arg_tensor(args[0], &oc), *a = NULL, *b = NULL;
  if (!c) return NULL;
  ct_device dev = ct_device_of(c);
  double sa, sb;
  bool fa, fb;
  bool a_scalar = ctpy_scalar_exact(args[1], &sa, &fa),
       b_scalar = ctpy_scalar_exact(args[2], &sb, &fb);
  if (a_scalar && b_scalar) {
    ct_dtype d = fa || fb                                         ? CTPY_DEFAULT_FLOAT
                 : PyBool_Check(args[1]) && PyBool_Check(args[2]) ? CT_BOOL
                                                                  : CTPY_DEFAULT_INT;
    a = oa = ct_scalar(sa, &(ct_tensor_opts){.dtype = d, .device = dev});
    r = a ? ct_where_scalar(c, a, sb) : NULL;
  } else if (b_scalar || a_scalar) {
    /* where(c, s, b) is where(!c, b, s) */
    const ct_tensor *t = ctpy_operand(args[b_scalar ? 1 : 2], dev, b_scalar ? &oa : &ob);
    double s = b_scalar ? sb : sa;
    if (t && (b_scalar ? fb : fa) && !ct_dtype_is_floating(ct_dtype_of(t)))
      t = tmp = ct_cast(t, CTPY_DEFAULT_FLOAT);
    const ct_tensor *cond = c;
    ct_tensor *flip = NULL;
    if (t && a_scalar) cond = flip = ct_logical_not(c);
    r = t && cond ? ct_where_scalar(cond, t, s) : NULL;
    ct_free(flip);
  } else {
    a = ctpy_operand(args[1], dev, &oa);
    b = a ? ctpy_operand(args[2], dev, &ob) : NULL;
    ct_tensor *cast[2] = {NULL, NULL};
    if (b && ctpy_promote_pair(&a, &b, cast) == 0) r = ct_where(c, a, b);
    ct_free(cast[0]);
    ct_free(cast[1]);
  }
  ct_free(tmp);
  ct_free(oc);
  ct_free(oa);
  ct_free(ob);
  return ctpy_wrap_unless_error(r);
}

/* clamp(x, min=None, max=None): bounds are numbers */
static PyObject *f_clamp(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *lo = Py_None, *hi = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:clamp", CTPY_KW("x", "min", "max"), &xo, &lo,
                                   &hi))
    return NULL;
  double l = -INFINITY, h = INFINITY;
  if (lo != Py_None && (l = PyFloat_AsDouble(lo)) == -1 && PyErr_Occurred()) return NULL;
  if (hi != Py_None && (h = PyFloat_AsDouble(hi)) == -1 && PyErr_Occurred()) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_clamp(x, l, h));
}

static PyObject *f_leaky_relu(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  double slope = 0.01;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|d:leaky_relu", CTPY_KW("x", "negative_slope"),
                                   &xo, &slope))
    return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_leaky_relu(x, slope));
}

/* index_select(x, axis, indices) / gather(x, axis, indices) */
static PyObject *indexed(PyObject *args, const char *fmt,
                         ct_tensor *(*fn)(const ct_tensor *, int, const ct_tensor *)) {
  PyObject *xo, *io;
  int axis;
  if (!PyArg_ParseTuple(args, fmt, &xo, &axis, &io)) return NULL;
  const ct_tensor *x, *i;
  ct_tensor *oa, *ob;
  if (two_tensors(xo, io, &x, &i, &oa, &ob) < 0) return NULL;
  ct_tensor *r = fn(x, axis, i);
  ct_free(oa);
  ct_free(ob);
  return ctpy_wrap(r);
}
CTPY_DEF_VARARGS(index_select, indexed, "OiO:index_select", ct_index_select)
CTPY_DEF_VARARGS(gather, indexed, "OiO:gather", ct_gather)

/* take_along_axis(x, indices, axis): the C function's argument order differs from gather's */
static PyObject *f_take_along_axis(PyObject *m, PyObject *a) {
  PyObject *xo, *io;
  int axis;
  if (!PyArg_ParseTuple(a, "OOi:take_along_axis", &xo, &io, &axis)) return NULL;
  const ct_tensor *x, *i;
  ct_tensor *oa, *ob;
  if (two_tensors(xo, io, &x, &i, &oa, &ob) < 0) return NULL;
  ct_tensor *r = ct_take_along_axis(x, i, axis);
  ct_free(oa);
  ct_free(ob);
  return ctpy_wrap(r);
}

/* diff(x, n, axis, prepend, append): prepend/append None or tensors of x's ndim */
static PyObject *f_diff(PyObject *m, PyObject *a) {
  PyObject *xo, *po, *ao;
  long long n;
  int axis;
  if (!PyArg_ParseTuple(a, "OLiOO:diff", &xo, &n, &axis, &po, &ao)) return NULL;
  ct_tensor *ox = NULL, *op = NULL, *oap = NULL;
  const ct_tensor *x = ctpy_arg_tensor(xo, &ox), *p = NULL, *ap = NULL;
  if (!x) return NULL;
  ct_device dev = ct_device_of(x);
  if (po != Py_None && !(p = ctpy_operand(po, dev, &op))) return ct_free(ox), NULL;
  if (ao != Py_None && !(ap = ctpy_operand(ao, dev, &oap))) return ct_free(ox), ct_free(op), NULL;
  ct_tensor *r = ct_diff(x, n, axis, p, ap);
  ct_free(ox);
  ct_free(op);
  ct_free(oap);
  return ctpy_wrap(r);
}

/* scatter/scatter_add(x, axis, indices, src) and their in-place forms */
static PyObject *scatter_common(PyObject *args, const char *fmt, bool inplace,
                                ct_tensor *(*fn)(const ct_tensor *, int, const ct_tensor *,
                                                 const ct_tensor *),
                                ct_tensor *(*fn_)(ct_tensor *, int, const ct_tensor *,
                                                  const ct_tensor *)) {
  PyObject *xo, *io, *so;
  int axis;
  if (!PyArg_ParseTuple(args, fmt, &xo, &axis, &io, &so)) return NULL;
  if (inplace && !ctpy_is_tensor(xo))
    return PyErr_Format(PyExc_TypeError, "a Tensor to write into");
  const ct_tensor *x, *i, *s;
  ct_tensor *oa, *ob, *os = NULL, *r;
  if (two_tensors(xo, io, &x, &i, &oa, &ob) < 0) return NULL;
  if (!(s = ctpy_operand(so, ct_device_of(x), &os))) return ct_free(oa), ct_free(ob), NULL;
  r = inplace ? fn_(ctpy_t(xo), axis, i, s) : fn(x, axis, i, s);
  ct_free(oa);
  ct_free(ob);
  ct_free(os);
  if (inplace) return r ? Py_NewRef(xo) : ctpy_raise();
  return ctpy_wrap(r);
}
CTPY_DEF_VARARGS(scatter, scatter_common, "OiOO:scatter", false, ct_scatter, ct_scatter_)
CTPY_DEF_VARARGS(scatter_, scatter_common, "OiOO:scatter_", true, ct_scatter, ct_scatter_)
CTPY_DEF_VARARGS(scatter_add, scatter_common, "OiOO:scatter_add", false, ct_scatter_add,
                 ct_scatter_add_)
CTPY_DEF_VARARGS(scatter_add_, scatter_common, "OiOO:scatter_add_", true, ct_scatter_add,
                 ct_scatter_add_)

/* masked_fill(x, mask, value) / masked_fill_ */
static PyObject *masked_fill_common(PyObject *args, bool inplace) {
  PyObject *xo, *mo;
  double v;
  if (!PyArg_ParseTuple(args, inplace ? "OOd:masked_fill_" : "OOd:masked_fill", &xo, &mo, &v))
    return NULL;
  if (inplace && !ctpy_is_tensor(xo))
    return PyErr_Format(PyExc_TypeError, "masked_fill_: a Tensor to write into");
  const ct_tensor *x, *mask;
  ct_tensor *oa, *ob;
  if (two_tensors(xo, mo, &x, &mask, &oa, &ob) < 0) return NULL;
  ct_tensor *r = inplace ? ct_masked_fill_(ctpy_t(xo), mask, v) : ct_masked_fill(x, mask, v);
  ct_free(oa);
  ct_free(ob);
  if (inplace) return r ? Py_NewRef(xo) : ctpy_raise();
  return ctpy_wrap(r);
}
CTPY_DEF_VARARGS(masked_fill, masked_fill_common, false)
CTPY_DEF_VARARGS(masked_fill_, masked_fill_common, true)

/* cat/stack(tensors, axis=0) */
static PyObject *join(PyObject *args, PyObject *kwargs, const char *fmt,
                      ct_tensor *(*fn)(ct_tensor *const *, int, int)) {
  PyObject *seq_o;
  int axis = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("tensors", "axis"), &seq_o, &axis))
    return NULL;
  PyObject *seq = ctpy_sequence_tuple(seq_o, "a sequence of tensors"); /* holds the items */
  if (!seq) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  ct_tensor **ts, **owned;
  PyObject *res = NULL;
  if (ctpy_operands(seq, &ts, &owned) == 0) {
    if (n > INT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "too many tensors");
    } else {
      ct_tensor *r;
      CTPY_CALL(r, n > 0 && ctpy_is_big(ts[0], NULL), fn(ts, (int)n, axis));
      res = ctpy_wrap(r);
    }
    ctpy_free_operands(ts, owned, n);
  }
  Py_DECREF(seq);
  return res;
}
CTPY_DEF_KWARGS(cat, join, "O|i:cat", ct_cat)
CTPY_DEF_KWARGS(stack, join, "O|i:stack", ct_stack)

/* one_hot(indices, num_classes=-1) */
static PyObject *f_one_hot(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  long long n = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|L:one_hot", CTPY_KW("indices", "num_classes"),
                                   &xo, &n))
    return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_one_hot(x, n));
}

/* tril/triu(x, k=0) */
static PyObject *tri(PyObject *args, PyObject *kwargs, const char *fmt,
                     ct_tensor *(*fn)(const ct_tensor *, int64_t)) {
  PyObject *xo;
  long long k = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("x", "k"), &xo, &k)) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, fn(x, k));
}
CTPY_DEF_KWARGS(tril, tri, "O|$L:tril", ct_tril)
CTPY_DEF_KWARGS(triu, tri, "O|$L:triu", ct_triu)

/* allclose(a, b, rtol=1e-5, atol=1e-8) and equal(a, b): Python bools */
static PyObject *f_allclose(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *ao, *bo;
  double rtol = 1e-5, atol = 1e-8;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|dd:allclose",
                                   CTPY_KW("a", "b", "rtol", "atol"), &ao, &bo, &rtol, &atol))
    return NULL;
  const ct_tensor *x, *y;
  ct_tensor *oa, *ob;
  if (two_tensors(ao, bo, &x, &y, &oa, &ob) < 0) return NULL;
  ct_clear_error();
  bool r = ct_allclose(x, y, rtol, atol);
  ct_free(oa);
  ct_free(ob);
  if (!r && ct_last_error() != CT_OK) return ctpy_raise();
  return PyBool_FromLong(r);
}
static PyObject *f_equal(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  if (n != 2) return PyErr_Format(PyExc_TypeError, "equal() takes 2 arguments (%zd given)", n);
  const ct_tensor *x, *y;
  ct_tensor *oa, *ob;
  if (two_tensors(args[0], args[1], &x, &y, &oa, &ob) < 0) return NULL;
  ct_clear_error();
  bool r = ct_equal(x, y);
  ct_free(oa);
  ct_free(ob);
  if (!r && ct_last_error() != CT_OK) return ctpy_raise();
  return PyBool_FromLong(r);
}

/* ---- Functions: views and shapes
 * ----------------------------------------------------------------- */

/* reshape/view/broadcast_to(x, shape) */
static PyObject *with_shape(PyObject *args, const char *fmt,
                            ct_tensor *(*fn)(const ct_tensor *, const int64_t *, int)) {
  PyObject *xo, *so;
  if (!PyArg_ParseTuple(args, fmt, &xo, &so)) return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, fmt + 3);
  if (n < 0) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, fn(x, shape, n));
}
CTPY_DEF_VARARGS(reshape, with_shape, "OO:reshape", ct_reshape)
CTPY_DEF_VARARGS(view, with_shape, "OO:view", ct_view)
CTPY_DEF_VARARGS(broadcast_to, with_shape, "OO:broadcast_to", ct_expand)
static PyObject *f_permute(PyObject *m, PyObject *args) {
  PyObject *xo, *ao;
  if (!PyArg_ParseTuple(args, "OO:permute_dims", &xo, &ao)) return NULL;
  int64_t axes[CT_MAX_DIMS];
  int n = ctpy_parse_shape(ao, axes, "permute_dims");
  if (n < 0) return NULL;
  int dims[CT_MAX_DIMS];
  for (int i = 0; i < n; i++) dims[i] = (int)axes[i];
  CTPY_RETURN_ON_TENSOR(xo, x, ct_permute(x, dims, n));
}

#define DEF_VIEW_INT(name, call)                                    \
  static PyObject *f_##name(PyObject *m, PyObject *args) {          \
    PyObject *xo;                                                   \
    int a;                                                          \
    if (!PyArg_ParseTuple(args, "Oi:" #name, &xo, &a)) return NULL; \
    CTPY_RETURN_ON_TENSOR(xo, x, call);                             \
  }
DEF_VIEW_INT(unsqueeze, ct_unsqueeze(x, a))
DEF_VIEW_INT(squeeze_dim, ct_squeeze_dim(x, a))

static PyObject *f_squeeze_all(PyObject *m, PyObject *arg) {
  CTPY_RETURN_ON_TENSOR(arg, x, ct_squeeze(x));
}

static PyObject *f_alias(PyObject *m, PyObject *arg) {
  if (!ctpy_is_tensor(arg)) return PyErr_Format(PyExc_TypeError, "alias: a Tensor");
  return ctpy_wrap(ct_alias(ctpy_t(arg)));
}

static PyObject *f_transpose(PyObject *m, PyObject *args) {
  PyObject *xo;
  int a, b;
  if (!PyArg_ParseTuple(args, "Oii:transpose", &xo, &a, &b)) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_transpose(x, a, b));
}
static PyObject *f_flatten(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  int start = 0, end = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ii:flatten",
                                   CTPY_KW("x", "start_dim", "end_dim"), &xo, &start, &end))
    return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_flatten(x, start, end));
}
static PyObject *f_diagonal(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  long long offset = 0;
  int d1 = -2, d2 = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Lii:diagonal",
                                   CTPY_KW("x", "offset", "axis1", "axis2"), &xo, &offset, &d1,
                                   &d2))
    return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_diagonal(x, offset, d1, d2));
}
/* slice(x, axis, start, stop, step): a view, step > 0 */
static PyObject *f_slice(PyObject *m, PyObject *args) {
  PyObject *xo;
  int axis;
  long long start, stop, step = 1;
  if (!PyArg_ParseTuple(args, "OiLL|L:slice", &xo, &axis, &start, &stop, &step)) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_slice(x, axis, start, stop, step));
}
/* split(x, split_size, axis=0) / chunk(x, chunks, axis=0): lists of views */
static PyObject *pieces(PyObject *args, const char *fmt, bool chunk) {
  PyObject *xo;
  long long size;
  int axis = 0;
  if (!PyArg_ParseTuple(args, fmt, &xo, &size, &axis)) return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  int n = chunk ? ct_chunk(x, (int)size, axis, NULL, 0) : ct_split(x, size, axis, NULL, 0);
  PyObject *list = NULL;
  ct_tensor **out = n >= 0 ? calloc((size_t)n + 1, sizeof *out) : NULL;
  if (n < 0) {
    ctpy_raise();
  } else if (!out) {
    PyErr_NoMemory();
  } else {
    n = chunk ? ct_chunk(x, (int)size, axis, out, n) : ct_split(x, size, axis, out, n);
    list = PyList_New(n);
    for (int i = 0; i < n; i++) {
      PyObject *w = list ? ctpy_wrap(out[i]) : (ct_free(out[i]), NULL);
      if (list && !w) Py_CLEAR(list);
      if (list) PyList_SET_ITEM(list, i, w);
    }
  }
  free(out);
  ct_free(owned);
  return list;
}
CTPY_DEF_VARARGS(split, pieces, "OL|i:split", false)
CTPY_DEF_VARARGS(chunk, pieces, "OL|i:chunk", true)

static PyObject *f_astype(PyObject *m, PyObject *args) {
  PyObject *xo, *dt;
  if (!PyArg_ParseTuple(args, "OO:astype", &xo, &dt)) return NULL;
  ct_dtype d;
  bool given;
  if (ctpy_parse_dtype(dt, &d, &given) < 0) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_cast(x, d));
}

/* _set_tensor_attr(name, value): puts a Python-level method or attribute on Tensor (a static
 * type, which Python code cannot modify), so that NumPy's meanings of methods and the NumPy
 * protocols (__array_ufunc__, __array_function__, __array__) live in ctensor/_numpy_compat.py. */
static PyObject *f_set_tensor_attr(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  if (n != 2 || !PyUnicode_Check(args[0]))
    return PyErr_Format(PyExc_TypeError, "_set_tensor_attr(name: str, value)");
  if (PyDict_SetItem(CtpyTensor_Type.tp_dict, args[0], args[1]) < 0) return NULL;
  PyType_Modified(&CtpyTensor_Type);
  Py_RETURN_NONE;
}

PyMethodDef ctpy_function_methods[] = {
    {"_set_tensor_attr", CTPY_FASTCALL(f_set_tensor_attr), "_set_tensor_attr(name, value)"},
    {"sum", CTPY_KWARGS(f_sum), "sum(x, /, *, axis=None, keepdims=False, dtype=None)"},
    {"prod", CTPY_KWARGS(f_prod), "prod(x, /, *, axis=None, keepdims=False, dtype=None)"},
    {"mean", CTPY_KWARGS(f_mean), "mean(x, /, *, axis=None, keepdims=False)"},
    {"max", CTPY_KWARGS(f_max), "max(x, /, *, axis=None, keepdims=False)"},
    {"min", CTPY_KWARGS(f_min), "min(x, /, *, axis=None, keepdims=False)"},
    {"logsumexp", CTPY_KWARGS(f_logsumexp), "logsumexp(x, /, *, axis=None, keepdims=False)"},
    {"all", CTPY_KWARGS(f_all), "all(x, /, *, axis=None, keepdims=False)"},
    {"any", CTPY_KWARGS(f_any), "any(x, /, *, axis=None, keepdims=False)"},
    {"var", CTPY_KWARGS(f_var), "var(x, /, *, axis=None, correction=0.0, keepdims=False)"},
    {"std", CTPY_KWARGS(f_std), "std(x, /, *, axis=None, correction=0.0, keepdims=False)"},
    {"norm", CTPY_KWARGS(f_norm), "norm(x, /, *, ord=2, axis=None, keepdims=False): vector p-norm"},
    {"argmax", CTPY_KWARGS(f_argmax), "argmax(x, /, *, axis=None, keepdims=False)"},
    {"argmin", CTPY_KWARGS(f_argmin), "argmin(x, /, *, axis=None, keepdims=False)"},
    {"softmax", CTPY_KWARGS(f_softmax), "softmax(x, axis=-1)"},
    {"log_softmax", CTPY_KWARGS(f_log_softmax), "log_softmax(x, axis=-1)"},
    {"matmul", CTPY_FASTCALL(f_matmul), "matmul(x1, x2), as torch.matmul / the @ operator"},
    {"mm", CTPY_FASTCALL(f_mm), "mm(x1, x2): 2-d matrix product"},
    {"bmm", CTPY_FASTCALL(f_bmm), "bmm(x1, x2): batched (B, n, k) x (B, k, m)"},
    {"dot", CTPY_FASTCALL(f_dot), "dot(x1, x2): 1-d dot product"},
    {"masked_select", CTPY_FASTCALL(f_masked_select),
     "masked_select(x, mask): 1-d, the elements where mask is true"},
    {"expand_as", CTPY_FASTCALL(f_expand_as), "expand_as(x, other)"},
    {"where", CTPY_FASTCALL(f_where), "where(condition, x1, x2)"},
    {"clamp", CTPY_KWARGS(f_clamp), "clamp(x, min=None, max=None)"},
    {"leaky_relu", CTPY_KWARGS(f_leaky_relu), "leaky_relu(x, negative_slope=0.01)"},
    {"index_select", f_index_select, METH_VARARGS, "index_select(x, axis, indices)"},
    {"gather", f_gather, METH_VARARGS, "gather(x, axis, indices)"},
    {"take_along_axis", f_take_along_axis, METH_VARARGS, "take_along_axis(x, indices, axis)"},
    {"diff", f_diff, METH_VARARGS,
     "diff(x, n, axis, prepend, append): prepend/append None or tensors"},
    {"scatter", f_scatter, METH_VARARGS, "scatter(x, axis, indices, src)"},
    {"scatter_", f_scatter_, METH_VARARGS, "scatter_(x, axis, indices, src): in place"},
    {"scatter_add", f_scatter_add, METH_VARARGS, "scatter_add(x, axis, indices, src)"},
    {"scatter_add_", f_scatter_add_, METH_VARARGS, "scatter_add_(x, axis, indices, src): in place"},
    {"masked_fill", f_masked_fill, METH_VARARGS, "masked_fill(x, mask, value)"},
    {"masked_fill_", f_masked_fill_, METH_VARARGS, "masked_fill_(x, mask, value): in place"},
    {"cat", CTPY_KWARGS(f_cat), "cat(tensors, axis=0)"},
    {"stack", CTPY_KWARGS(f_stack), "stack(tensors, axis=0)"},
    {"one_hot", CTPY_KWARGS(f_one_hot), "one_hot(indices, num_classes=-1): int64"},
    {"tril", CTPY_KWARGS(f_tril), "tril(x, /, *, k=0)"},
    {"triu", CTPY_KWARGS(f_triu), "triu(x, /, *, k=0)"},
    {"allclose", CTPY_KWARGS(f_allclose), "allclose(a, b, rtol=1e-5, atol=1e-8): a Python bool"},
    {"equal", CTPY_FASTCALL(f_equal), "equal(a, b): same shape and values, a Python bool"},
    {"reshape", f_reshape, METH_VARARGS, "reshape(x, shape): a view when possible, else a copy"},
    {"view", f_view, METH_VARARGS,
     "view(x, shape): a view (fails if the strides do not allow one)"},
    {"broadcast_to", f_broadcast_to, METH_VARARGS, "broadcast_to(x, shape): a view"},
    {"permute_dims", f_permute, METH_VARARGS, "permute_dims(x, axes): a view"},
    {"unsqueeze", f_unsqueeze, METH_VARARGS, "unsqueeze(x, axis): a view"},
    {"squeeze_dim", f_squeeze_dim, METH_VARARGS, "squeeze_dim(x, axis): a view"},
    {"transpose", f_transpose, METH_VARARGS, "transpose(x, axis0, axis1): a view"},
    {"squeeze_all", f_squeeze_all, METH_O, "squeeze_all(x): without its size-1 dims (a view)"},
    {"alias", f_alias, METH_O, "alias(x): the same view as a new tensor"},
    {"flatten", CTPY_KWARGS(f_flatten), "flatten(x, start_dim=0, end_dim=-1)"},
    {"diagonal", CTPY_KWARGS(f_diagonal), "diagonal(x, offset=0, axis1=-2, axis2=-1): a view"},
    {"slice", f_slice, METH_VARARGS, "slice(x, axis, start, stop, step=1): a view"},
    {"split", f_split, METH_VARARGS, "split(x, split_size, axis=0): a list of views"},
    {"chunk", f_chunk, METH_VARARGS, "chunk(x, chunks, axis=0): a list of views"},
    {"astype", f_astype, METH_VARARGS, "astype(x, dtype)"},
    {NULL},
};
