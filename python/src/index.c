/* Indexing, NumPy's rules over the C library's views and gathers:
 *   basic indices (ints, slices with positive steps, None, Ellipsis) give
 *   views; a negative step gives a copy (ct_slice_stepped; PyTorch refuses those);
 *   integer arrays and boolean masks (advanced indices) give copies, with
 *   NumPy's placement of the result dims (in place when the advanced indices
 *   are adjacent, first otherwise).
 * Assignment writes through the same views: fill or copy_ for basic indices,
 * masked_fill_ for a mask and a number, scatter_ for integer arrays. */
#include "ctpy.h"

typedef struct advanced {
  int pos;      /* first dim of the view it indexes */
  ct_tensor *t; /* the index (owned): integer, or a bool mask */
  bool mask;
} advanced;

typedef struct index_state {
  ct_tensor *v; /* the view after the basic indices (owned) */
  advanced adv[CT_MAX_DIMS * 2];
  int nadv;
  bool copied; /* a negative step made a copy: writes would not reach the tensor */
} index_state;

static void state_free(index_state *s) {
  ct_free(s->v);
  for (int i = 0; i < s->nadv; i++) ct_free(s->adv[i].t);
}

/* Replaces s->v with r (a new reference), or raises. */
static int step(index_state *s, ct_tensor *r) {
  if (!r) return ctpy_raise(), -1;
  ct_free(s->v);
  s->v = r;
  return 0;
}

/* None, Ellipsis, a slice, or an integer (also NumPy's integer scalars, but
 * not arrays, which are sequences, nor bools) */
static bool is_basic(PyObject *o) {
  return o == Py_None || o == Py_Ellipsis || PySlice_Check(o) ||
         (PyIndex_Check(o) && !PyBool_Check(o) && !ctpy_is_tensor(o) && !PySequence_Check(o));
}

/* An index item that is not basic, as a tensor on `device` (owned). */
static ct_tensor *index_tensor(PyObject *o, ct_device device) {
  if (PyBool_Check(o)) {
    PyErr_SetString(PyExc_IndexError, "a Python bool is not a supported index (use a bool tensor)");
    return NULL;
  }
  ctpy_asarray_opts opts = {.device = device, .has_device = true, .copy = -1};
  if (ctpy_is_tensor(o)) return ct_retain(ctpy_t(o));
  if (!PySequence_Check(o) && !PyObject_CheckBuffer(o) &&
      !PyObject_HasAttrString(o, "__dlpack__")) {
    PyErr_Format(PyExc_IndexError,
                 "only integers, slices, None, Ellipsis, and integer or bool arrays are valid "
                 "indices (got %.100s)",
                 Py_TYPE(o)->tp_name);
    return NULL;
  }
  return ctpy_asarray(o, &opts);
}

static int64_t int_index(PyObject *o, int64_t size, int dim) {
  Py_ssize_t i = PyNumber_AsSsize_t(o, PyExc_IndexError);
  if (i == -1 && PyErr_Occurred()) return INT64_MIN;
  if (i < -size || i >= size) {
    PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for dim %d with size %lld", i, dim,
                 (long long)size);
    return INT64_MIN;
  }
  return i < 0 ? i + size : i;
}

/* The basic pass: views for ints, slices, None and Ellipsis; advanced
 * indices are recorded with the dim they start at. */
static int basic_pass(const ct_tensor *t, PyObject *key, index_state *s) {
  memset(s, 0, sizeof *s);
  PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
  if (!items) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(items);
  ct_device dev = ct_device_of(t);
  /* the tensors of the advanced items, and the dims each item consumes */
  ct_tensor *tens[64] = {0};
  if (n > 64) {
    PyErr_SetString(PyExc_IndexError, "too many indices");
    Py_DECREF(items);
    return -1;
  }
  int consumed = 0, ellipses = 0, rc = -1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PyTuple_GET_ITEM(items, i);
    if (it == Py_Ellipsis) {
      ellipses++;
    } else if (it == Py_None) {
    } else if (is_basic(it)) {
      consumed++;
    } else {
      if (!(tens[i] = index_tensor(it, dev))) goto done;
      ct_dtype d = ct_dtype_of(tens[i]);
      if (d == CT_BOOL) {
        consumed += ct_ndim(tens[i]);
      } else if (ct_dtype_is_integral(d)) {
        consumed++;
      } else {
        PyErr_Format(PyExc_IndexError, "tensors used as indices must be integer or bool, not %s",
                     ct_dtype_name(d));
        goto done;
      }
    }
  }
  int ndim = ct_ndim(t);
  if (ellipses > 1) {
    PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
    goto done;
  }
  if (consumed > ndim) {
    PyErr_Format(PyExc_IndexError, "too many indices for a tensor of %d dims (%d given)", ndim,
                 consumed);
    goto done;
  }
  if (!(s->v = ct_alias(t))) {
    ctpy_raise();
    goto done;
  }
  int d = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PyTuple_GET_ITEM(items, i);
    const int64_t *shape = ct_shape(s->v);
    if (it == Py_Ellipsis) {
      d += ndim - consumed;
    } else if (it == Py_None) {
      if (step(s, ct_unsqueeze(s->v, d)) < 0) goto done;
      d++;
    } else if (PySlice_Check(it)) {
      Py_ssize_t start, stop, stride;
      if (PySlice_Unpack(it, &start, &stop, &stride) < 0) goto done;
      Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)shape[d], &start, &stop, stride);
      ct_tensor *r;
      if (len == 0) {
        r = ct_slice(s->v, d, 0, 0, 1);
      } else if (stride > 0) {
        r = ct_slice(s->v, d, start, start + (int64_t)stride * (len - 1) + 1, stride);
      } else {
        /* a negative step: a copy (ct_slice_stepped), down to the last position taken */
        int64_t last = start + (int64_t)stride * (len - 1);
        r = ct_slice_stepped(s->v, d, start, last > 0 ? last - 1 : CT_END, stride);
        s->copied = true;
      }
      if (step(s, r) < 0) goto done;
      d++;
    } else if (!tens[i]) { /* an integer */
      int64_t k = int_index(it, shape[d], d);
      if (k == INT64_MIN || step(s, ct_select(s->v, d, k)) < 0) goto done;
    } else if (ct_dtype_of(tens[i]) == CT_BOOL && ct_ndim(tens[i]) == 0) {
      /* a 0-d mask (NumPy): a new axis holding the tensor once (true) or not at all (false) */
      PyObject *v = ctpy_item(tens[i]);
      int keep = v ? PyObject_IsTrue(v) : -1;
      Py_XDECREF(v);
      if (keep < 0 || step(s, ct_unsqueeze(s->v, d)) < 0 ||
          step(s, ct_slice(s->v, d, 0, keep, 1)) < 0)
        goto done;
      d++;
    } else if (ct_dtype_of(tens[i]) != CT_BOOL && ct_ndim(tens[i]) == 0) {
      /* a 0-d integer tensor indexes as an integer */
      PyObject *v = ctpy_item(tens[i]);
      int64_t k = v ? int_index(v, shape[d], d) : INT64_MIN;
      Py_XDECREF(v);
      if (k == INT64_MIN || step(s, ct_select(s->v, d, k)) < 0) goto done;
    } else {
      bool mask = ct_dtype_of(tens[i]) == CT_BOOL;
      s->adv[s->nadv++] = (advanced){.pos = d, .t = tens[i], .mask = mask};
      tens[i] = NULL;
      d += mask ? ct_ndim(s->adv[s->nadv - 1].t) : 1;
    }
  }
  rc = 0;
done:
  for (Py_ssize_t i = 0; i < n; i++) ct_free(tens[i]);
  Py_DECREF(items);
  if (rc < 0) state_free(s);
  return rc;
}

/* Checks that a mask's shape is that of the dims it covers. A dim of size 0 is accepted over
 * any size (NumPy, and the array API suite): such a mask selects nothing, so it is replaced by
 * an all-false mask of the covered shape, which every path below handles. */
static int check_mask(const index_state *s, advanced *a) {
  const ct_tensor *m = a->t;
  bool empty = false;
  for (int k = 0; k < ct_ndim(m); k++) {
    if (ct_shape(m)[k] == ct_shape(s->v)[a->pos + k]) continue;
    if (ct_shape(m)[k] == 0) {
      empty = true;
      continue;
    }
    PyErr_Format(PyExc_IndexError,
                 "the boolean index has size %lld in dim %d, the indexed tensor %lld (dim %d)",
                 (long long)ct_shape(m)[k], k, (long long)ct_shape(s->v)[a->pos + k], a->pos + k);
    return -1;
  }
  if (!empty) return 0;
  ct_tensor *none = ct_zeros(ct_shape(s->v) + a->pos, ct_ndim(m),
                             &(ct_tensor_opts){.dtype = CT_BOOL, .device = ct_device_of(s->v)});
  if (!none) return ctpy_raise(), -1;
  ct_free(a->t);
  a->t = none;
  return 0;
}

/* Integer index arrays for every advanced item: a mask of k dims becomes k
 * arrays (the coordinates of its true elements), each in range and
 * non-negative. Fills idx[] (owned), pos[] (dim of each) and returns their
 * count, or -1. */
static int integer_indices(index_state *s, ct_tensor **idx, int *pos) {
  int m = 0;
  ct_device dev = ct_device_of(s->v);
  for (int i = 0; i < s->nadv; i++) {
    advanced *a = &s->adv[i];
    if (a->mask) {
      if (check_mask(s, a) < 0) return -1;
      int k = ct_ndim(a->t);
      if (m + k > CT_MAX_DIMS)
        return PyErr_SetString(PyExc_IndexError, "too many advanced indices"), -1;
      /* flat positions of the true elements, then their coordinates */
      ct_tensor *ar = ct_arange(0, (double)ct_numel(a->t), 1,
                                &(ct_tensor_opts){.dtype = CT_I64, .device = dev});
      ct_tensor *grid = ar ? ct_reshape(ar, ct_shape(a->t), k) : NULL;
      ct_tensor *flat = grid ? ct_masked_select(grid, a->t) : NULL;
      ct_free(ar);
      ct_free(grid);
      if (!flat) return ctpy_raise(), -1;
      int64_t stride = 1;
      for (int j = k - 1; j >= 0; j--) {
        ct_tensor *q = ct_floor_divide_scalar(flat, (double)stride);
        idx[m + j] = q ? ct_remainder_scalar(q, (double)ct_shape(a->t)[j]) : NULL;
        ct_free(q);
        pos[m + j] = a->pos + j;
        if (!idx[m + j]) {
          ct_free(flat);
          return ctpy_raise(), -1;
        }
        stride *= ct_shape(a->t)[j];
      }
      ct_free(flat);
      m += k;
    } else {
      if (m + 1 > CT_MAX_DIMS)
        return PyErr_SetString(PyExc_IndexError, "too many advanced indices"), -1;
      int64_t size = ct_shape(s->v)[a->pos];
      ct_tensor *t = ct_cast(a->t, CT_I64);
      if (!t) return ctpy_raise(), -1;
      idx[m] = t;
      pos[m] = a->pos;
      m++;
      if (ct_numel(t) == 0) continue;
      /* in range, then negative ones wrapped */
      ct_tensor *lo = ct_min(t, NULL), *hi = ct_max(t, NULL);
      double vlo = 0, vhi = 0;
      bool ok = lo && hi && ct_item(lo, &vlo) == CT_OK && ct_item(hi, &vhi) == CT_OK;
      ct_free(lo);
      ct_free(hi);
      if (!ok) return ctpy_raise(), -1;
      if (vlo < (double)-size || vhi >= (double)size) {
        PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for dim %d with size %lld",
                     (long long)(vlo < (double)-size ? vlo : vhi), a->pos, (long long)size);
        return -1;
      }
      if (vlo < 0) {
        ct_tensor *neg = ct_lt_scalar(t, 0), *up = ct_add_scalar(t, (double)size);
        ct_tensor *w = neg && up ? ct_where(neg, up, t) : NULL;
        ct_free(neg);
        ct_free(up);
        if (!w) return ctpy_raise(), -1;
        ct_free(idx[m - 1]);
        idx[m - 1] = w;
      }
    }
  }
  return m;
}

/* The advanced dims brought together (moved to the front when they are not
 * adjacent, as NumPy does) and flattened into one, with the linear index
 * into that dim. On success *flat (owned) is the view or copy, *lin (owned)
 * the linear index with the broadcast shape of the indices, *at the dim. */
static int linearize(index_state *s, ct_tensor **flat, ct_tensor **lin, int *at, bool need_view) {
  ct_tensor *idx[CT_MAX_DIMS] = {0};
  int pos[CT_MAX_DIMS];
  int m = integer_indices(s, idx, pos);
  int rc = -1;
  ct_tensor *v = NULL, *acc = NULL;
  if (m < 0) goto done;
  bool adjacent = true;
  for (int i = 1; i < m; i++) adjacent = adjacent && pos[i] == pos[0] + i;
  int ndim = ct_ndim(s->v);
  if (adjacent) {
    v = ct_alias(s->v);
    *at = pos[0];
  } else {
    int perm[CT_MAX_DIMS], n = 0;
    for (int i = 0; i < m; i++) perm[n++] = pos[i];
    for (int d = 0; d < ndim; d++) {
      bool used = false;
      for (int i = 0; i < m; i++) used = used || pos[i] == d;
      if (!used) perm[n++] = d;
    }
    v = ct_permute(s->v, perm, ndim);
    *at = 0;
  }
  if (!v) {
    ctpy_raise();
    goto done;
  }
  /* lin = sum_i idx_i * (product of the sizes of the later advanced dims) */
  int64_t mult = 1;
  for (int i = m - 1; i >= 0; i--) {
    ct_tensor *term = mult == 1 ? ct_alias(idx[i]) : ct_mul_scalar(idx[i], (double)mult);
    ct_tensor *sum = acc ? ct_add(acc, term) : ct_retain(term);
    ct_free(term);
    ct_free(acc);
    if (!(acc = sum)) {
      ctpy_raise();
      goto done;
    }
    mult *= ct_shape(v)[*at + i];
  }
  /* the advanced dims as one */
  int64_t shape[CT_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < ndim; d++) {
    if (d > *at && d < *at + m) {
      shape[n - 1] *= ct_shape(v)[d];
    } else {
      shape[n++] = ct_shape(v)[d];
    }
  }
  *flat = need_view ? ct_view(v, shape, n) : ct_reshape(v, shape, n);
  if (!*flat) {
    if (need_view) {
      ct_clear_error();
      PyErr_SetString(PyExc_IndexError,
                      "assignment through these indices needs the indexed dims to be "
                      "mergeable into one (index a contiguous tensor)");
    } else {
      ctpy_raise();
    }
    goto done;
  }
  *lin = acc;
  acc = NULL;
  rc = 0;
done:
  for (int i = 0; i < m; i++) ct_free(idx[i]);
  ct_free(acc);
  ct_free(v);
  return rc;
}

static PyObject *advanced_get(index_state *s) {
  /* a mask over the whole tensor: masked_select */
  if (s->nadv == 1 && s->adv[0].mask && s->adv[0].pos == 0 &&
      ct_ndim(s->adv[0].t) == ct_ndim(s->v)) {
    if (check_mask(s, &s->adv[0]) < 0) return NULL;
    return ctpy_wrap(ct_masked_select(s->v, s->adv[0].t));
  }
  ct_tensor *flat, *lin;
  int at;
  if (linearize(s, &flat, &lin, &at, false) < 0) return NULL;
  ct_tensor *line = ct_reshape(lin, (const int64_t[]){-1}, 1);
  ct_tensor *picked = line ? ct_index_select(flat, at, line) : NULL;
  /* the picked dim takes the broadcast shape of the indices */
  int64_t shape[CT_MAX_DIMS * 2];
  int n = 0;
  for (int d = 0; picked && d < ct_ndim(flat); d++) {
    if (d == at) {
      for (int k = 0; k < ct_ndim(lin); k++) shape[n++] = ct_shape(lin)[k];
    } else {
      shape[n++] = ct_shape(flat)[d];
    }
  }
  ct_tensor *r = NULL;
  if (picked && n > CT_MAX_DIMS) {
    ct_free(picked);
    ct_free(line);
    ct_free(flat);
    ct_free(lin);
    return PyErr_Format(PyExc_IndexError, "the result would have %d dims (at most %d)", n,
                        CT_MAX_DIMS);
  }
  if (picked) r = ct_reshape(picked, shape, n);
  ct_free(picked);
  ct_free(line);
  ct_free(flat);
  ct_free(lin);
  return ctpy_wrap(r);
}

PyObject *ctpy_getitem(PyObject *self, PyObject *key) {
  const ct_tensor *t = ctpy_t(self);
  /* the common cases without the general machinery */
  if (PyLong_CheckExact(key)) {
    if (ct_ndim(t) == 0)
      return PyErr_Format(PyExc_IndexError, "too many indices for a tensor of 0 dims");
    int64_t k = int_index(key, ct_shape(t)[0], 0);
    if (k == INT64_MIN) return NULL;
    return ctpy_wrap(ct_select(t, 0, k));
  }
  index_state s;
  if (basic_pass(t, key, &s) < 0) return NULL;
  PyObject *r;
  if (s.nadv == 0) {
    r = ctpy_wrap(s.v);
    s.v = NULL;
  } else {
    r = advanced_get(&s);
  }
  state_free(&s);
  return r;
}

/* ---- Assignment
 * -------------------------------------------------------------------------------------- */

/* target[...] = value for a view `target` */
static int assign_view(ct_tensor *target, PyObject *value) {
  double v;
  bool is_float;
  if (ctpy_scalar_exact(value, &v, &is_float)) return ct_fill_(target, v) ? 0 : (ctpy_raise(), -1);
  ct_tensor *owned;
  const ct_tensor *src = ctpy_operand(value, ct_device_of(target), &owned);
  if (!src) return -1;
  ct_tensor *r = ct_copy_(target, src);
  ct_free(owned);
  return r ? 0 : (ctpy_raise(), -1);
}

static int advanced_set(index_state *s, PyObject *value) {
  double v;
  bool is_float;
  bool scalar = ctpy_scalar_exact(value, &v, &is_float);
  /* one mask and a number: masked_fill_ with the mask shaped to broadcast */
  if (s->nadv == 1 && s->adv[0].mask && scalar) {
    advanced *a = &s->adv[0];
    if (check_mask(s, a) < 0) return -1;
    int64_t shape[CT_MAX_DIMS];
    int n = ct_ndim(s->v);
    for (int d = 0; d < n; d++)
      shape[d] = d >= a->pos && d < a->pos + ct_ndim(a->t) ? ct_shape(s->v)[d] : 1;
    ct_tensor *mask = ct_reshape(a->t, shape, n);
    ct_tensor *r = mask ? ct_masked_fill_(s->v, mask, v) : NULL;
    ct_free(mask);
    return r ? 0 : (ctpy_raise(), -1);
  }
  /* otherwise scatter_ along the merged advanced dim */
  ct_tensor *flat, *lin;
  int at;
  if (linearize(s, &flat, &lin, &at, true) < 0) return -1;
  int rc = -1;
  ct_tensor *line = NULL, *index = NULL, *src = NULL, *owned = NULL, *cast = NULL, *srcb = NULL,
            *srcs = NULL;
  int64_t count = ct_numel(lin);
  /* the shapes: value as (pre..., B..., post...), index and src as (pre..., count, post...) */
  int64_t full[CT_MAX_DIMS * 2], scat[CT_MAX_DIMS], ones[CT_MAX_DIMS];
  int nf = 0, ns = 0;
  for (int d = 0; d < ct_ndim(flat); d++) {
    if (d == at) {
      for (int k = 0; k < ct_ndim(lin); k++) full[nf++] = ct_shape(lin)[k];
      scat[ns] = count;
      ones[ns++] = count;
    } else {
      full[nf++] = ct_shape(flat)[d];
      scat[ns] = ct_shape(flat)[d];
      ones[ns++] = 1;
    }
  }
  if (nf > CT_MAX_DIMS) {
    PyErr_SetString(PyExc_IndexError, "too many dims in the indexed result");
    goto done;
  }
  line = ct_reshape(lin, ones, ns);
  ct_tensor *expanded = line ? ct_expand(line, scat, ns) : NULL;
  index = expanded ? ct_contiguous(expanded) : NULL;
  ct_free(expanded);
  if (!index) {
    ctpy_raise();
    goto done;
  }
  const ct_tensor *val;
  if (scalar) {
    val = owned = ct_full(
        full, nf, v, &(ct_tensor_opts){.dtype = ct_dtype_of(flat), .device = ct_device_of(flat)});
  } else {
    val = ctpy_operand(value, ct_device_of(flat), &owned);
    if (!val) goto done;
  }
  cast = val ? ct_cast(val, ct_dtype_of(flat)) : NULL;
  srcb = cast ? ct_expand(cast, full, nf) : NULL;
  srcs = srcb ? ct_reshape(srcb, scat, ns) : NULL;
  src = srcs ? ct_contiguous(srcs) : NULL;
  if (!src || !ct_scatter_(flat, at, index, src)) {
    ctpy_raise();
    goto done;
  }
  rc = 0;
done:
  ct_free(src);
  ct_free(srcs);
  ct_free(srcb);
  ct_free(cast);
  ct_free(owned);
  ct_free(index);
  ct_free(line);
  ct_free(flat);
  ct_free(lin);
  return rc;
}

int ctpy_setitem(PyObject *self, PyObject *key, PyObject *value) {
  if (!value) return PyErr_SetString(PyExc_TypeError, "tensor elements cannot be deleted"), -1;
  index_state s;
  if (basic_pass(ctpy_t(self), key, &s) < 0) return -1;
  int rc;
  if (s.copied) {
    PyErr_SetString(PyExc_IndexError,
                    "assignment through a slice with a negative step is not supported");
    rc = -1;
  } else if (s.nadv == 0) {
    rc = assign_view(s.v, value);
  } else {
    rc = advanced_set(&s, value);
  }
  state_free(&s);
  return rc;
}
