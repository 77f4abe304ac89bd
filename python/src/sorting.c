/* Sorting, searching, distinct values, running sums and the reordering ops
 * (ctensor/sort_scan.h, ctensor/indexing.h), each a call of the C library
 * with the array API's signature (sort, argsort, searchsorted, unique,
 * cumulative_sum, flip, roll, repeat, tile, nonzero) or PyTorch's (cumsum,
 * cumprod, topk, kthvalue, pad). */
#include <math.h>

#include "ctpy.h"

PyObject *ctpy_tuple(ct_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (!ts[i]) { /* one call failed: its error is the C library's last one */
      for (int j = 0; j < n; j++) ct_free(ts[j]);
      return ctpy_raise();
    }
  PyObject *tup = PyTuple_New(n);
  for (int i = 0; i < n; i++) {
    PyObject *w = tup ? ctpy_wrap(ts[i]) : (ct_free(ts[i]), NULL);
    if (tup && !w) Py_CLEAR(tup);
    if (tup) PyTuple_SET_ITEM(tup, i, w);
  }
  return tup;
}

/* A sequence of ints (or one int) as int64 values; returns the count or -1. */
static int parse_ints(PyObject *o, int64_t *out, int max, const char *what) {
  if (PyLong_Check(o)) {
    out[0] = PyLong_AsLongLong(o);
    return PyErr_Occurred() ? -1 : 1;
  }
  PyObject *seq = ctpy_sequence_tuple(o, what);
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > max) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "%s: %zd values, at most %d", what, n, max);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
  Py_DECREF(seq);
  return PyErr_Occurred() ? -1 : (int)n;
}

/* An axis argument (an int or a sequence of ints) into dims; returns the count or -1. */
static int parse_axes(PyObject *o, int *dims, const char *what) {
  int64_t v[CT_MAX_DIMS];
  int n = parse_ints(o, v, CT_MAX_DIMS, what);
  for (int i = 0; i < n; i++) dims[i] = (int)v[i];
  return n;
}

/* ---- Sorting and searching ------------------------------------------------------------------ */

/* sort/argsort(x, /, *, axis=-1, descending=False, stable=True): ct_sort is always stable */
static PyObject *sort_common(PyObject *args, PyObject *kwargs, const char *fmt, bool values) {
  PyObject *xo;
  int axis = -1, descending = 0, stable = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("x", "axis", "descending", "stable"),
                                   &xo, &axis, &descending, &stable))
    return NULL;
  CTPY_RETURN_ON_TENSOR_NOGIL(
      xo, x, values ? ct_sort(x, axis, descending, NULL) : ct_argsort(x, axis, descending));
}
CTPY_DEF_KWARGS(sort, sort_common, "O|$ipp:sort", true)
CTPY_DEF_KWARGS(argsort, sort_common, "O|$ipp:argsort", false)

/* searchsorted(x1, x2, /, *, side='left', sorter=None) */
static PyObject *f_searchsorted(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *x1o, *x2o, *sorter = Py_None;
  const char *side = "left";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$sO:searchsorted",
                                   CTPY_KW("x1", "x2", "side", "sorter"), &x1o, &x2o, &side,
                                   &sorter))
    return NULL;
  if (strcmp(side, "left") != 0 && strcmp(side, "right") != 0)
    return PyErr_Format(PyExc_ValueError, "searchsorted: side must be 'left' or 'right', got '%s'",
                        side);
  ct_tensor *o1, *o2 = NULL, *os = NULL, *sorted = NULL, *r = NULL;
  const ct_tensor *x1 = ctpy_arg_tensor(x1o, &o1), *x2 = NULL, *s = NULL;
  if (!x1) return NULL;
  if (!(x2 = ctpy_operand(x2o, ct_device_of(x1), &o2))) goto done;
  if (sorter != Py_None) { /* x1 in the order sorter gives */
    if (!(s = ctpy_operand(sorter, ct_device_of(x1), &os))) goto done;
    if (!(sorted = ct_index_select(x1, 0, s))) {
      ctpy_raise();
      goto done;
    }
  }
  r = ct_searchsorted(sorted ? sorted : x1, x2, side[0] == 'r');
done:
  ct_free(sorted);
  ct_free(o1);
  ct_free(o2);
  ct_free(os);
  return ctpy_wrap_unless_error(r);
}

/* The standard's distinct nans (nan != nan): ct_unique gives one nan, last, counting them all
 * (NumPy's equal_nan). Replaces it by k nans with count 1 each; the k nan elements of x get the
 * indices u-1 ... u+k-2 in their order. 0, or -1 with the C library's error. */
static int split_nans(const ct_tensor *x, ct_tensor **values, ct_tensor **inverse,
                      ct_tensor **counts) {
  int64_t u = ct_numel(*values);
  if (!ct_dtype_is_floating(ct_dtype_of(x)) || u == 0) return 0;
  double last = 0, k = 0;
  ct_tensor *lv = ct_select(*values, 0, u - 1), *lc = lv ? ct_select(*counts, 0, u - 1) : NULL;
  bool ok = lc && ct_item(lv, &last) == CT_OK && ct_item(lc, &k) == CT_OK;
  ct_free(lv);
  ct_free(lc);
  if (!ok) return -1;
  if (!isnan(last) || k < 2) return 0;
  int64_t nk = (int64_t)k;
  ct_device dev = ct_device_of(x);
  ct_tensor *vh = ct_narrow(*values, 0, 0, u - 1), *ch = ct_narrow(*counts, 0, 0, u - 1);
  ct_tensor *nans = ct_full(&nk, 1, NAN, &(ct_tensor_opts){.dtype = ct_dtype_of(x), .device = dev});
  ct_tensor *ones = ct_ones(&nk, 1, &(ct_tensor_opts){.dtype = CT_I64, .device = dev});
  ct_tensor *nv = vh && nans ? ct_cat((ct_tensor *[]){vh, nans}, 2, 0) : NULL;
  ct_tensor *nc = nv && ch && ones ? ct_cat((ct_tensor *[]){ch, ones}, 2, 0) : NULL;
  ct_tensor *ni = NULL;
  if (nc && inverse) { /* nan elements: u - 1 + (how many nans up to them) - 1 */
    ct_tensor *mask = ct_isnan(x);
    ct_tensor *flat = mask ? ct_reshape(mask, (int64_t[]){-1}, 1) : NULL;
    ct_tensor *seen = flat ? ct_cumsum(flat, 0) : NULL;
    ct_tensor *rank = seen ? ct_add_scalar(seen, (double)(u - 2)) : NULL;
    ct_tensor *old = rank ? ct_reshape(*inverse, (int64_t[]){-1}, 1) : NULL;
    ct_tensor *merged = old ? ct_where(flat, rank, old) : NULL;
    ni = merged ? ct_reshape(merged, ct_shape(x), ct_ndim(x)) : NULL;
    ct_free(mask), ct_free(flat), ct_free(seen), ct_free(rank), ct_free(old), ct_free(merged);
  }
  ct_free(vh), ct_free(ch), ct_free(nans), ct_free(ones);
  if (!nc || (inverse && !ni)) return ct_free(nv), ct_free(nc), -1;
  ct_free(*values), ct_free(*counts);
  *values = nv, *counts = nc;
  if (ni) ct_free(*inverse), *inverse = ni;
  return 0;
}

/* unique(x, /, *, indices=False, inverse=False, counts=False): the tuple (values, indices,
 * inverse_indices, counts) of unique_all, None for what was not asked; each nan distinct. The
 * indices of first occurrences come from a stable argsort of the inverse: a value's first element
 * in that order is at the sum of the counts of the smaller values. */
static PyObject *f_unique(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  int want_indices = 0, want_inverse = 0, want_counts = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$ppp:unique",
                                   CTPY_KW("x", "indices", "inverse", "counts"), &xo, &want_indices,
                                   &want_inverse, &want_counts))
    return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  ct_tensor *inverse = NULL, *counts = NULL, *indices = NULL;
  bool need_inverse = want_inverse || want_indices;
  ct_tensor *values = ct_unique(x, true, need_inverse ? &inverse : NULL, &counts);
  if (values && split_nans(x, &values, need_inverse ? &inverse : NULL, &counts) < 0)
    ct_free(values), ct_free(inverse), ct_free(counts), values = NULL;
  ct_free(owned);
  if (!values) return ctpy_raise();
  if (want_indices) {
    ct_tensor *flat = ct_reshape(inverse, (int64_t[]){-1}, 1);
    ct_tensor *order = flat ? ct_argsort(flat, 0, false) : NULL;
    ct_tensor *ends = order ? ct_cumsum(counts, 0) : NULL;
    ct_tensor *starts = ends ? ct_sub(ends, counts) : NULL;
    indices = starts ? ct_index_select(order, 0, starts) : NULL;
    ct_free(flat);
    ct_free(order);
    ct_free(ends);
    ct_free(starts);
    if (!indices) {
      PyObject *err = ctpy_raise();
      ct_free(values);
      ct_free(inverse);
      ct_free(counts);
      return err;
    }
  }
  if (!want_inverse) ct_free(inverse), inverse = NULL;
  if (!want_counts) ct_free(counts), counts = NULL;
  PyObject *out[4] = {ctpy_wrap(values), indices ? ctpy_wrap(indices) : Py_NewRef(Py_None),
                      inverse ? ctpy_wrap(inverse) : Py_NewRef(Py_None),
                      counts ? ctpy_wrap(counts) : Py_NewRef(Py_None)};
  if (!out[0] || !out[1] || !out[2] || !out[3]) {
    for (int i = 0; i < 4; i++) Py_XDECREF(out[i]);
    return NULL;
  }
  PyObject *tup = PyTuple_New(4);
  for (int i = 0; i < 4; i++)
    if (tup) {
      PyTuple_SET_ITEM(tup, i, out[i]);
    } else {
      Py_DECREF(out[i]);
    }
  return tup;
}

/* topk(x, k, dim=-1, largest=True, sorted=True) -> (values, indices) */
static PyObject *f_topk(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  long long k;
  int dim = -1, largest = 1, sorted = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OL|ipp:topk",
                                   CTPY_KW("x", "k", "dim", "largest", "sorted"), &xo, &k, &dim,
                                   &largest, &sorted))
    return NULL;
  ct_tensor *t[2] = {NULL, NULL};
  CTPY_RETURN_TUPLE_ON_TENSOR(xo, x, t, 0, ct_topk(x, k, dim, largest, sorted, &t[1]));
}

/* kthvalue(x, k, dim=-1, keepdim=False) -> (values, indices) */
static PyObject *f_kthvalue(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  long long k;
  int dim = -1, keepdim = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OL|ip:kthvalue",
                                   CTPY_KW("x", "k", "dim", "keepdim"), &xo, &k, &dim, &keepdim))
    return NULL;
  ct_tensor *t[2] = {NULL, NULL};
  CTPY_RETURN_TUPLE_ON_TENSOR(xo, x, t, 0, ct_kthvalue(x, k, dim, keepdim, &t[1]));
}

/* ---- Running sums and products --------------------------------------------------------------- */

/* The running sum or product along axis, in dtype when given (the input is cast first, the
 * result cast back: ct_cumsum gives int64 for integers), with a leading 0 when
 * include_initial. */
static ct_tensor *scan(const ct_tensor *x, int axis, ct_dtype dtype, bool has_dtype, bool product,
                       bool include_initial) {
  ct_tensor *cast = has_dtype ? ct_cast(x, dtype) : NULL, *r;
  if (has_dtype && !cast) return NULL;
  const ct_tensor *in = cast ? cast : x;
  CTPY_CALL(r, ctpy_is_big(in, NULL), product ? ct_cumprod(in, axis) : ct_cumsum(in, axis));
  ct_free(cast);
  if (r && has_dtype && ct_dtype_of(r) != dtype) {
    ct_tensor *c = ct_cast(r, dtype);
    ct_free(r);
    r = c;
  }
  int nd = r ? ct_ndim(r) : 0;
  if (r && include_initial && nd > 0) { /* one zero before the first element along axis */
    int a = axis < 0 ? axis + nd : axis;
    int64_t pad[2 * CT_MAX_DIMS] = {0};
    pad[2 * (nd - 1 - a)] = 1;
    ct_tensor *p = ct_pad(r, pad, 2 * (nd - a), CT_PAD_CONSTANT, 0.0);
    ct_free(r);
    r = p;
  }
  return r;
}

/* cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) */
static PyObject *f_cumulative_sum(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *axis_o = Py_None, *dtype_o = Py_None;
  int include_initial = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOp:cumulative_sum",
                                   CTPY_KW("x", "axis", "dtype", "include_initial"), &xo, &axis_o,
                                   &dtype_o, &include_initial))
    return NULL;
  ct_dtype dtype;
  bool has_dtype;
  if (ctpy_parse_dtype(dtype_o, &dtype, &has_dtype) < 0) return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  int axis = 0;
  if (axis_o != Py_None) {
    axis = (int)PyLong_AsLong(axis_o);
  } else if (ct_ndim(x) != 1) {
    PyErr_Format(PyExc_ValueError, "cumulative_sum: axis is required for a %d-d array", ct_ndim(x));
  }
  if (PyErr_Occurred()) return ct_free(owned), NULL;
  ct_tensor *r = scan(x, axis, dtype, has_dtype, false, include_initial);
  ct_free(owned);
  return ctpy_wrap(r);
}

/* cumsum/cumprod(x, dim, *, dtype=None), as torch's */
static PyObject *torch_scan(PyObject *args, PyObject *kwargs, const char *fmt, bool product) {
  PyObject *xo, *dtype_o = Py_None;
  int dim;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, CTPY_KW("x", "dim", "dtype"), &xo, &dim,
                                   &dtype_o))
    return NULL;
  ct_dtype dtype;
  bool has_dtype;
  if (ctpy_parse_dtype(dtype_o, &dtype, &has_dtype) < 0) return NULL;
  /* scan lets go of the GIL itself */
  CTPY_RETURN_ON_TENSOR(xo, x, scan(x, dim, dtype, has_dtype, product, false));
}
CTPY_DEF_KWARGS(cumsum, torch_scan, "Oi|$O:cumsum", false)
CTPY_DEF_KWARGS(cumprod, torch_scan, "Oi|$O:cumprod", true)

/* ---- Reordering and repeating --------------------------------------------------------------- */

/* flip(x, /, *, axis=None) */
static PyObject *f_flip(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *axis_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:flip", CTPY_KW("x", "axis"), &xo, &axis_o))
    return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  int dims[CT_MAX_DIMS], n = ct_ndim(x);
  if (axis_o == Py_None) {
    for (int d = 0; d < n; d++) dims[d] = d;
  } else if ((n = parse_axes(axis_o, dims, "flip: axis")) < 0) {
    return ct_free(owned), NULL;
  }
  ct_tensor *r = ct_flip(x, dims, n);
  ct_free(owned);
  return ctpy_wrap(r);
}

/* roll(x, /, shift, *, axis=None): one shift for every axis when shift is an int */
static PyObject *f_roll(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *shift_o, *axis_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:roll", CTPY_KW("x", "shift", "axis"), &xo,
                                   &shift_o, &axis_o))
    return NULL;
  int64_t shifts[CT_MAX_DIMS];
  int dims[CT_MAX_DIMS], ns = parse_ints(shift_o, shifts, CT_MAX_DIMS, "roll: shift"), nd = 1;
  if (ns < 0) return NULL;
  if (axis_o != Py_None) {
    if ((nd = parse_axes(axis_o, dims, "roll: axis")) < 0) return NULL;
    if (ns == 1 && PyLong_Check(shift_o))
      for (ns = 1; ns < nd; ns++) shifts[ns] = shifts[0];
  }
  if (ns != nd)
    return PyErr_Format(PyExc_ValueError, "roll: %d shifts for %d axes", ns,
                        axis_o == Py_None ? 1 : nd);
  CTPY_RETURN_ON_TENSOR(xo, x, ct_roll(x, shifts, axis_o == Py_None ? NULL : dims, nd));
}

/* repeat(x, repeats, /, *, axis=None): repeats an int, or one count per element along axis */
static PyObject *f_repeat(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *rep_o, *axis_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:repeat", CTPY_KW("x", "repeats", "axis"),
                                   &xo, &rep_o, &axis_o))
    return NULL;
  int axis = CT_DIM_ALL;
  if (axis_o != Py_None && (axis = (int)PyLong_AsLong(axis_o)) == -1 && PyErr_Occurred())
    return NULL;
  ct_tensor *owned, *orep = NULL, *r = NULL;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  if (PyLong_Check(rep_o)) {
    long long n = PyLong_AsLongLong(rep_o);
    if (!PyErr_Occurred()) r = ct_repeat_interleave(x, n, axis);
  } else {
    const ct_tensor *rep = ctpy_operand(rep_o, ct_device_of(x), &orep);
    if (rep) r = ct_repeat_interleave_tensor(x, rep, axis);
  }
  ct_free(orep);
  ct_free(owned);
  return ctpy_wrap_unless_error(r);
}

/* tile(x, repetitions, /): fewer repetitions than axes repeat the last axes (NumPy's rule;
 * ct_repeat, torch's, wants at least one per axis) */
static PyObject *f_tile(PyObject *m, PyObject *args) {
  PyObject *xo, *rep_o;
  if (!PyArg_ParseTuple(args, "OO:tile", &xo, &rep_o)) return NULL;
  int64_t reps[CT_MAX_DIMS];
  int n = parse_ints(rep_o, reps, CT_MAX_DIMS, "tile: repetitions");
  if (n < 0) return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  int lead = ct_ndim(x) - n;
  if (lead > 0) {
    memmove(reps + lead, reps, (size_t)n * sizeof *reps);
    for (int i = 0; i < lead; i++) reps[i] = 1;
    n += lead;
  }
  ct_tensor *r = ct_repeat(x, reps, n);
  ct_free(owned);
  return ctpy_wrap(r);
}

/* nonzero(x, /): one int64 tensor of coordinates per axis (the columns of ct_nonzero) */
static PyObject *f_nonzero(PyObject *m, PyObject *xo) {
  ct_tensor *owned;
  const ct_tensor *x = ctpy_arg_tensor(xo, &owned);
  if (!x) return NULL;
  int nd = ct_ndim(x);
  if (nd == 0) {
    ct_free(owned);
    return PyErr_Format(PyExc_ValueError, "nonzero: not defined for 0-d arrays");
  }
  ct_tensor *all = ct_nonzero(x), *cols[CT_MAX_DIMS] = {NULL};
  ct_free(owned);
  if (!all) return ctpy_raise();
  for (int d = 0; d < nd; d++) {
    ct_tensor *col = ct_select(all, 1, d);
    cols[d] = col ? ct_contiguous(col) : NULL;
    ct_free(col);
  }
  ct_free(all);
  return ctpy_tuple(cols, nd);
}

/* pad(x, pad, mode='constant', value=None), as torch.nn.functional.pad */
static PyObject *f_pad(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *pad_o, *value_o = Py_None;
  const char *mode = "constant";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|sO:pad", CTPY_KW("x", "pad", "mode", "value"),
                                   &xo, &pad_o, &mode, &value_o))
    return NULL;
  ct_pad_mode pm;
  if (!strcmp(mode, "constant")) {
    pm = CT_PAD_CONSTANT;
  } else if (!strcmp(mode, "reflect")) {
    pm = CT_PAD_REFLECT;
  } else if (!strcmp(mode, "replicate")) {
    pm = CT_PAD_REPLICATE;
  } else {
    return PyErr_Format(PyExc_ValueError,
                        "pad: mode '%s' (ctensor has 'constant', 'reflect' and 'replicate')", mode);
  }
  double value = 0;
  if (value_o != Py_None && (value = PyFloat_AsDouble(value_o)) == -1 && PyErr_Occurred())
    return NULL;
  int64_t pad[2 * CT_MAX_DIMS];
  int n = parse_ints(pad_o, pad, 2 * CT_MAX_DIMS, "pad: pad");
  if (n < 0) return NULL;
  CTPY_RETURN_ON_TENSOR(xo, x, ct_pad(x, pad, n, pm, value));
}

PyMethodDef ctpy_sorting_methods[] = {
    {"sort", CTPY_KWARGS(f_sort), "sort(x, /, *, axis=-1, descending=False, stable=True)"},
    {"argsort", CTPY_KWARGS(f_argsort), "argsort(x, /, *, axis=-1, descending=False, stable=True)"},
    {"searchsorted", CTPY_KWARGS(f_searchsorted),
     "searchsorted(x1, x2, /, *, side='left', sorter=None)"},
    {"unique", CTPY_KWARGS(f_unique),
     "unique(x, /, *, indices=False, inverse=False, counts=False): (values, indices, "
     "inverse_indices, counts), None for what was not asked"},
    {"topk", CTPY_KWARGS(f_topk),
     "topk(x, k, dim=-1, largest=True, sorted=True): (values, indices)"},
    {"kthvalue", CTPY_KWARGS(f_kthvalue),
     "kthvalue(x, k, dim=-1, keepdim=False): (values, indices)"},
    {"cumulative_sum", CTPY_KWARGS(f_cumulative_sum),
     "cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False)"},
    {"cumsum", CTPY_KWARGS(f_cumsum), "cumsum(x, dim, *, dtype=None)"},
    {"cumprod", CTPY_KWARGS(f_cumprod), "cumprod(x, dim, *, dtype=None)"},
    {"flip", CTPY_KWARGS(f_flip), "flip(x, /, *, axis=None): a copy"},
    {"roll", CTPY_KWARGS(f_roll), "roll(x, /, shift, *, axis=None)"},
    {"repeat", CTPY_KWARGS(f_repeat), "repeat(x, repeats, /, *, axis=None)"},
    {"tile", f_tile, METH_VARARGS, "tile(x, repetitions, /)"},
    {"nonzero", f_nonzero, METH_O, "nonzero(x, /): a tuple of int64 coordinates, one per axis"},
    {"pad", CTPY_KWARGS(f_pad),
     "pad(x, pad, mode='constant', value=None), as torch.nn.functional.pad"},
    {NULL},
};
