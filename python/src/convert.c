/* Conversions between Python objects and tensors: asarray (Tensors, the
 * buffer protocol without a copy, DLPack, nested sequences, scalars), the
 * buffer protocol of CPU tensors (so NumPy views them without a copy), and
 * values back to Python (item, tolist). */
#include <math.h>

#include "ctpy.h"

bool ctpy_scalar(PyObject *o, double *value, bool *is_float) {
  if (PyFloat_Check(o)) {
    *value = PyFloat_AS_DOUBLE(o);
    *is_float = true;
    return true;
  }
  if (PyLong_Check(o)) { /* bool included */
    double v = PyLong_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
      PyErr_Clear(); /* too large for a double: not a scalar ctensor takes */
      return false;
    }
    *value = v;
    *is_float = false;
    return true;
  }
  return false;
}

bool ctpy_scalar_exact(PyObject *o, double *value, bool *is_float) {
  return ctpy_scalar(o, value, is_float) && (*is_float || fabs(*value) < 9007199254740992.0);
}

PyObject *ctpy_sequence_tuple(PyObject *o, const char *msg) {
  PyObject *seq = PySequence_Fast(o, msg);
  if (!seq || PyTuple_CheckExact(seq)) return seq;
  PyObject *t = PyList_AsTuple(seq);
  Py_DECREF(seq);
  return t;
}

int ctpy_parse_shape(PyObject *o, int64_t *shape, const char *what) {
  if (PyLong_Check(o) || (!PySequence_Check(o) && PyIndex_Check(o))) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    shape[0] = v;
    return 1;
  }
  PyObject *seq = ctpy_sequence_tuple(o, "a shape: an int or a sequence of ints");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > CT_MAX_DIMS) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "%s: %zd dims (ctensor takes at most %d)", what, n, CT_MAX_DIMS);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *idx = PyNumber_Index(PySequence_Fast_GET_ITEM(seq, i));
    if (!idx) {
      Py_DECREF(seq);
      return -1;
    }
    shape[i] = PyLong_AsLongLong(idx);
    Py_DECREF(idx);
    if (PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  return (int)n;
}

/* ---- From the buffer protocol
 * --------------------------------------------------------------------- */

/* The dtype of a struct-module format ("<f4" style prefixes included). */
static bool dtype_of_format(const char *fmt, Py_ssize_t itemsize, ct_dtype *out) {
  if (!fmt) fmt = "B";
  if (*fmt == '@' || *fmt == '=' || *fmt == '<')
    fmt++;
  else if ((*fmt == '>' || *fmt == '!') && itemsize > 1)
    return false; /* big-endian */
  else if (*fmt == '>' || *fmt == '!')
    fmt++;
  if (!fmt[0] || fmt[1]) return false;
  switch (fmt[0]) {
    case '?':
      *out = CT_BOOL;
      break;
    case 'b':
      *out = CT_I8;
      break;
    case 'B':
      *out = CT_U8;
      break;
    case 'h':
      *out = CT_I16;
      break;
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      *out = itemsize == 8   ? CT_I64
             : itemsize == 4 ? CT_I32
             : itemsize == 2 ? CT_I16
                             : CT_DTYPE_COUNT;
      break;
    case 'e':
      *out = CT_F16;
      break;
    case 'f':
      *out = CT_F32;
      break;
    case 'd':
      *out = CT_F64;
      break;
    default:
      return false;
  }
  return *out != CT_DTYPE_COUNT && (Py_ssize_t)ct_dtype_size(*out) == itemsize;
}

static void release_buffer(void *ctx) {
  if (Py_IsInitialized()) { /* after the interpreter's end there is nothing to release to */
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(ctx);
    PyGILState_Release(g);
  }
  PyMem_RawFree(ctx);
}

/* A CPU tensor over obj's buffer: no copy when the layout allows one (then
 * *shared is true and the tensor keeps obj's buffer until its last view goes;
 * *read_only says whether the exporter forbids writes), else a contiguous
 * copy. NULL with an exception. */
static ct_tensor *from_buffer(PyObject *obj, bool *shared, bool *read_only) {
  Py_buffer *view = PyMem_RawMalloc(sizeof *view);
  if (!view) return PyErr_NoMemory(), NULL;
  if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO) < 0) {
    PyMem_RawFree(view);
    return NULL;
  }
  ct_dtype dtype;
  if (!dtype_of_format(view->format, view->itemsize, &dtype)) {
    PyErr_Format(PyExc_TypeError,
                 "asarray: buffer format '%s' (%zd-byte items) is not a ctensor dtype",
                 view->format ? view->format : "B", view->itemsize);
    goto fail;
  }
  if (view->ndim > CT_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "asarray: %d dims (ctensor takes at most %d)", view->ndim,
                 CT_MAX_DIMS);
    goto fail;
  }
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  bool layout_ok = (uintptr_t)view->buf % (uintptr_t)view->itemsize == 0;
  for (int d = 0; d < view->ndim; d++) {
    shape[d] = view->shape[d];
    Py_ssize_t s = view->strides ? view->strides[d] : 0;
    if (s % view->itemsize || (s < 0 && shape[d] > 1)) layout_ok = false;
    strides[d] = s / view->itemsize;
  }
  if (!view->strides) layout_ok = layout_ok && view->ndim <= 1; /* NULL strides: C order */
  *read_only = view->readonly;
  ct_tensor *t;
  if (layout_ok) {
    *shared = true;
    t = ct_from_blob(view->buf, shape, view->ndim, view->strides ? strides : NULL, dtype, ct_cpu(),
                     release_buffer, view);
    if (!t) {
      ctpy_raise();
      goto fail;
    }
    return t;
  }
  *shared = false;
  t = ct_empty(shape, view->ndim, &(ct_tensor_opts){.dtype = dtype});
  if (!t) {
    ctpy_raise();
    goto fail;
  }
  if (ct_nbytes(t) &&
      PyBuffer_ToContiguous(ct_data_ptr(t), view, (Py_ssize_t)ct_nbytes(t), 'C') < 0) {
    ct_free(t);
    goto fail;
  }
  PyBuffer_Release(view);
  PyMem_RawFree(view);
  return t;
fail:
  PyBuffer_Release(view);
  PyMem_RawFree(view);
  return NULL;
}

/* ---- From nested sequences
 * ------------------------------------------------------------------------ */

typedef struct seq_walk {
  int ndim;
  int64_t shape[CT_MAX_DIMS];
  bool any_float, any_int, any_bool;
  int64_t n;     /* elements written */
  int64_t numel; /* elements the shape holds: the buffers' length */
  int64_t *ints;
  double *floats;
} seq_walk;

static bool is_leaf_value(PyObject *o) {
  return PyFloat_Check(o) || PyLong_Check(o) || (ctpy_is_tensor(o) && ct_ndim(ctpy_t(o)) == 0) ||
         (!PySequence_Check(o) && (PyIndex_Check(o) || PyNumber_Check(o)));
}

/* First pass: the shape, from the first element of each level, and the
 * element count, refused when it overflows or cannot be allocated. The items
 * are held while the next level is read: a sequence may build them on access
 * (its only reference is the one returned). */
static int seq_shape(PyObject *o, seq_walk *w) {
  PyObject *held[CT_MAX_DIMS];
  int n_held = 0, rc = 0;
  w->ndim = 0;
  while (!is_leaf_value(o)) {
    if (!PySequence_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o)) {
      PyErr_Format(PyExc_TypeError, "asarray: cannot make a tensor of %.100s", Py_TYPE(o)->tp_name);
      rc = -1;
      break;
    }
    if (w->ndim == CT_MAX_DIMS) {
      PyErr_Format(PyExc_ValueError, "asarray: more than %d nested levels", CT_MAX_DIMS);
      rc = -1;
      break;
    }
    Py_ssize_t n = PySequence_Size(o);
    if (n < 0) {
      rc = -1;
      break;
    }
    w->shape[w->ndim++] = n;
    if (n == 0) break;
    if (!(o = held[n_held++] = PySequence_GetItem(o, 0))) {
      n_held--;
      rc = -1;
      break;
    }
  }
  while (n_held > 0) Py_DECREF(held[--n_held]);
  if (rc < 0) return -1;
  /* an int64 and a double per element: numel * 16 bytes must fit */
  w->numel = 1;
  for (int d = 0; d < w->ndim; d++) {
    if (w->shape[d] == 0) w->numel = 0;
    if (w->numel && w->shape[d] > (int64_t)(PY_SSIZE_T_MAX / 16) / w->numel) {
      char s[192];
      ct_shape_format(w->shape, w->ndim, s, sizeof s);
      PyErr_Format(PyExc_MemoryError, "asarray: nested sequences of shape %s: too many elements",
                   s);
      return -1;
    }
    w->numel *= w->shape[d];
  }
  return 0;
}

/* Second pass: the values, checking that every level has the same length. */
static int seq_fill(PyObject *o, int level, seq_walk *w) {
  if (level == w->ndim) {
    if (!is_leaf_value(o)) {
      PyErr_SetString(PyExc_ValueError, "asarray: nested sequences of different depths");
      return -1;
    }
    if (w->n >= w->numel) { /* a sequence grew while it was read */
      PyErr_SetString(PyExc_ValueError, "asarray: nested sequences changed while read");
      return -1;
    }
    PyObject *num =
        ctpy_is_tensor(o) ? ctpy_item(ctpy_t(o)) : Py_NewRef(o); /* a 0-d tensor: its value */
    if (!num) return -1;
    int rc = 0;
    if (PyBool_Check(num)) {
      w->any_bool = true;
      w->ints[w->n] = num == Py_True;
      w->floats[w->n] = num == Py_True;
    } else if (PyLong_Check(num) || (!PyFloat_Check(num) && PyIndex_Check(num))) {
      w->any_int = true;
      long long v = PyLong_AsLongLong(num);
      if (v == -1 && PyErr_Occurred()) rc = -1;
      w->ints[w->n] = v;
      w->floats[w->n] = (double)v;
    } else {
      w->any_float = true;
      double v = PyFloat_AsDouble(num);
      if (v == -1 && PyErr_Occurred()) rc = -1;
      w->floats[w->n] = v;
      w->ints[w->n] = 0;
    }
    Py_DECREF(num);
    w->n++;
    return rc;
  }
  if (is_leaf_value(o) || !PySequence_Check(o)) {
    PyErr_SetString(PyExc_ValueError, "asarray: nested sequences of different depths");
    return -1;
  }
  PyObject *seq = ctpy_sequence_tuple(o, "a sequence"); /* holds the items while they are read */
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n != w->shape[level]) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError,
                 "asarray: ragged nested sequences (length %zd at level %d, expected %lld)", n,
                 level, (long long)w->shape[level]);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (seq_fill(PySequence_Fast_GET_ITEM(seq, i), level + 1, w) < 0) {
      Py_DECREF(seq);
      return -1;
    }
  Py_DECREF(seq);
  return 0;
}

static ct_tensor *from_sequence(PyObject *obj, const ctpy_asarray_opts *o, ct_device device) {
  seq_walk w = {0};
  if (seq_shape(obj, &w) < 0) return NULL;
  int64_t numel = w.numel;
  w.ints = PyMem_Malloc(sizeof *w.ints * (size_t)(numel ? numel : 1));
  w.floats = PyMem_Malloc(sizeof *w.floats * (size_t)(numel ? numel : 1));
  ct_tensor *t = NULL;
  if (!w.ints || !w.floats) {
    PyErr_NoMemory();
  } else if (seq_fill(obj, 0, &w) == 0) {
    ct_dtype d = o->has_dtype  ? o->dtype
                 : w.any_float ? CTPY_DEFAULT_FLOAT
                 : w.any_int   ? CTPY_DEFAULT_INT
                 : w.any_bool  ? CT_BOOL
                               : CTPY_DEFAULT_FLOAT; /* empty: as torch.tensor([]) */
    /* int64 values stay exact when the target is integral */
    bool exact_ints = !w.any_float && !ct_dtype_is_floating(d);
    ct_tensor *host = ct_from_data(exact_ints ? (void *)w.ints : (void *)w.floats, w.shape, w.ndim,
                                   &(ct_tensor_opts){.dtype = exact_ints ? CT_I64 : CT_F64});
    ct_tensor *cast = host ? ct_cast(host, d) : NULL;
    t = cast ? ct_to(cast, device, NULL) : NULL;
    ct_free(cast);
    ct_free(host);
    if (!t) ctpy_raise();
  }
  PyMem_Free(w.ints);
  PyMem_Free(w.floats);
  return t;
}

/* ---- asarray
 * --------------------------------------------------------------------------------------- */

/* Applies dtype, device and copy to src (a new reference, consumed).
 * `fresh`: src's memory is already private (a copy was made). */
static ct_tensor *finish(ct_tensor *src, const ctpy_asarray_opts *o, ct_device device, bool fresh,
                         bool read_only) {
  bool copied = fresh;
  if (o->has_dtype && ct_dtype_of(src) != o->dtype) {
    if (o->copy == 0) {
      ct_free(src);
      return ctpy_raise_code(CT_ERR_ARG, "asarray: copy=False, but %s -> %s needs a copy",
                             ct_dtype_name(ct_dtype_of(src)), ct_dtype_name(o->dtype)),
             NULL;
    }
    ct_tensor *c = ct_cast(src, o->dtype);
    ct_free(src);
    if (!(src = c)) return ctpy_raise(), NULL;
    copied = true;
  }
  if (!ct_device_equal(ct_device_of(src), device)) {
    if (o->copy == 0) {
      ct_free(src);
      return ctpy_raise_code(CT_ERR_ARG, "asarray: copy=False, but moving to %s needs a copy",
                             ct_device_name(device)),
             NULL;
    }
    ct_tensor *c = ct_to(src, device, NULL);
    ct_free(src);
    if (!(src = c)) return ctpy_raise(), NULL;
    copied = true;
  }
  if (!copied && (o->copy == 1 || read_only)) {
    if (o->copy == 0) {
      ct_free(src);
      return ctpy_raise_code(CT_ERR_ARG, "asarray: copy=False, but the buffer is read-only"), NULL;
    }
    ct_tensor *c = ct_clone(src);
    ct_free(src);
    if (!(src = c)) return ctpy_raise(), NULL;
  }
  return src;
}

int ctpy_asarray_opts_parse(PyObject *dtype, PyObject *device, PyObject *copy,
                            ctpy_asarray_opts *o) {
  *o = (ctpy_asarray_opts){.copy = -1};
  if (ctpy_parse_dtype(dtype, &o->dtype, &o->has_dtype) < 0) return -1;
  if (device && device != Py_None) {
    if (ctpy_parse_device(device, &o->device) < 0) return -1;
    o->has_device = true;
  }
  if (copy && copy != Py_None && (o->copy = PyObject_IsTrue(copy)) < 0) return -1;
  return 0;
}

ct_tensor *ctpy_asarray(PyObject *obj, const ctpy_asarray_opts *o) {
  ct_device device;
  if (ctpy_is_tensor(obj)) {
    ct_tensor *t = ctpy_t(obj);
    device = o->has_device ? o->device : ct_device_of(t);
    return finish(ct_retain(t), o, device, false, false);
  }
  if (o->has_device) {
    device = o->device;
  } else if (ctpy_resolve_default_device(&device) < 0) {
    return NULL;
  }
  double s;
  bool is_float;
  if (ctpy_scalar(obj, &s, &is_float)) {
    ct_dtype d = o->has_dtype        ? o->dtype
                 : PyBool_Check(obj) ? CT_BOOL
                 : is_float          ? (PyFloat_CheckExact(obj) ? CTPY_DEFAULT_FLOAT : CT_F64)
                                     : CTPY_DEFAULT_INT;
    /* (a float subclass is numpy.float64: float64 data, as numpy.asarray keeps it) */
    if (!is_float && ct_dtype_is_integral(d)) { /* exact, not through a double; in int64's range */
      long long v = PyLong_AsLongLong(obj);
      if (v == -1 && PyErr_Occurred()) return NULL;
      ct_tensor *exact = ct_from_data(&(int64_t){v}, NULL, 0, &(ct_tensor_opts){.dtype = CT_I64});
      return exact ? finish(exact, o, device, true, false) : (ctpy_raise(), NULL);
    }
    ct_tensor *t = ct_scalar(s, &(ct_tensor_opts){.dtype = d, .device = device});
    return t ? t : (ctpy_raise(), NULL);
  }
  if (PyObject_CheckBuffer(obj) && !PyUnicode_Check(obj)) {
    bool shared = false, read_only = false;
    ct_tensor *t = from_buffer(obj, &shared, &read_only);
    if (!t) return NULL;
    return finish(t, o, device, !shared, shared && read_only);
  }
  if (PyObject_HasAttrString(obj, "__dlpack__")) {
    ct_tensor *t = ctpy_import_dlpack(obj);
    if (!t) return NULL;
    return finish(t, o, device, false, false); /* to the default device, as NumPy arrays go */
  }
  return from_sequence(obj, o, device);
}

ct_tensor *ctpy_operand(PyObject *obj, ct_device device, ct_tensor **owned) {
  *owned = NULL;
  if (ctpy_is_tensor(obj)) return ctpy_t(obj);
  ctpy_asarray_opts o = {.device = device, .has_device = true, .copy = -1};
  double s;
  bool is_float;
  if (!ctpy_scalar(obj, &s, &is_float) && !PySequence_Check(obj) && !PyObject_CheckBuffer(obj) &&
      !PyObject_HasAttrString(obj, "__dlpack__")) {
    PyErr_Format(PyExc_TypeError, "expected a Tensor, a number or a sequence, got %.100s",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  return *owned = ctpy_asarray(obj, &o);
}

int ctpy_operands(PyObject *tuple, ct_tensor ***ts, ct_tensor ***owned) {
  Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  *ts = calloc((size_t)n + 1, sizeof **ts);
  *owned = calloc((size_t)n + 1, sizeof **owned);
  if (!*ts || !*owned) {
    ctpy_free_operands(*ts, *owned, 0);
    PyErr_NoMemory();
    return -1;
  }
  ct_device dev = ctpy_default_device();
  for (Py_ssize_t i = 0; i < n; i++)
    if (ctpy_is_tensor(PyTuple_GET_ITEM(tuple, i))) {
      dev = ct_device_of(ctpy_t(PyTuple_GET_ITEM(tuple, i)));
      break;
    }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!((*ts)[i] = (ct_tensor *)ctpy_operand(PyTuple_GET_ITEM(tuple, i), dev, &(*owned)[i]))) {
      ctpy_free_operands(*ts, *owned, n);
      return -1;
    }
  return 0;
}

void ctpy_free_operands(ct_tensor **ts, ct_tensor **owned, Py_ssize_t n) {
  for (Py_ssize_t i = 0; owned && i < n; i++) ct_free(owned[i]);
  free(ts);
  free(owned);
}

/* ---- The buffer protocol of CPU tensors
 * ------------------------------------------------------------ */

static const char *buffer_format(ct_dtype d) {
  static const char *const f[CT_DTYPE_COUNT] = {
      [CT_F32] = "f", [CT_F64] = "d", [CT_F16] = "e", [CT_BF16] = NULL, [CT_I8] = "b",
      [CT_U8] = "B",  [CT_I16] = "h", [CT_I32] = "i", [CT_I64] = "q",   [CT_BOOL] = "?"};
  return f[d];
}

/* What one buffer export owns: the memory, and its shape and strides. */
typedef struct export_hold {
  ct_tensor *held;   /* a detached handle on the exported storage */
  Py_ssize_t dims[]; /* ndim sizes, then ndim strides in bytes */
} export_hold;

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  const ct_tensor *t = ctpy_t(self);
  ct_dtype d = ct_dtype_of(t);
  if (ct_device_of(t).type != CT_DEVICE_CPU) {
    PyErr_Format(PyExc_BufferError,
                 "the tensor is on %s; copy it to the CPU first (.get() or .cpu())",
                 ct_device_name(ct_device_of(t)));
    return -1;
  }
  if (ct_requires_grad(t)) {
    PyErr_SetString(PyExc_BufferError, "the tensor requires grad; share its data with .detach()");
    return -1;
  }
  if (!buffer_format(d)) {
    PyErr_SetString(PyExc_BufferError,
                    "bfloat16 has no buffer format; convert it with astype(float32)");
    return -1;
  }
  bool contiguous = ct_is_contiguous(t);
  if (!contiguous && ((flags & PyBUF_STRIDES) != PyBUF_STRIDES ||
                      (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                      (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS ||
                      (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS)) {
    PyErr_SetString(PyExc_BufferError, "the tensor is not contiguous; take .contiguous() first");
    return -1;
  }
  /* The export holds the memory itself (a second handle on the storage), not
   * only the Tensor: a module's move (to(dtype/device)) swaps the storage
   * under a handle, and the view must not be left over freed memory. */
  int n = ct_ndim(t);
  export_hold *h = PyMem_Malloc(sizeof *h + sizeof(Py_ssize_t) * 2 * (size_t)(n ? n : 1));
  if (!h) return PyErr_NoMemory(), -1;
  if (!(h->held = ct_detach(t))) {
    PyMem_Free(h);
    return ctpy_raise(), -1;
  }
  Py_ssize_t *dims = h->dims;
  size_t es = ct_dtype_size(d);
  for (int i = 0; i < n; i++) {
    dims[i] = (Py_ssize_t)ct_shape(t)[i];
    dims[n + i] = (Py_ssize_t)(ct_strides(t)[i] * (int64_t)es);
  }
  view->buf = ct_numel(t) ? ct_data_ptr(h->held) : (void *)dims; /* a valid address when empty */
  view->obj = Py_NewRef(self);
  view->len = (Py_ssize_t)ct_nbytes(t);
  view->readonly = 0;
  view->itemsize = (Py_ssize_t)es;
  view->format = (flags & PyBUF_FORMAT) ? (char *)buffer_format(d) : NULL;
  view->ndim = n;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + n : NULL;
  view->suboffsets = NULL;
  view->internal = h;
  return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view) {
  export_hold *h = view->internal;
  ct_free(h->held);
  PyMem_Free(h);
}

PyBufferProcs ctpy_buffer_procs = {.bf_getbuffer = tensor_getbuffer,
                                   .bf_releasebuffer = tensor_releasebuffer};

/* ---- Values back to Python
 * ------------------------------------------------------------------------- */

static PyObject *value_at(const unsigned char *p, ct_dtype d) {
  switch (d) {
    case CT_BOOL:
      return PyBool_FromLong(*p != 0);
    case CT_I8:
      return PyLong_FromLong(*(const int8_t *)p);
    case CT_U8:
      return PyLong_FromLong(*p);
    case CT_I16:
      return PyLong_FromLong(*(const int16_t *)p);
    case CT_I32:
      return PyLong_FromLong(*(const int32_t *)p);
    case CT_I64:
      return PyLong_FromLongLong(*(const int64_t *)p);
    case CT_F32:
      return PyFloat_FromDouble(*(const float *)p);
    case CT_F64:
      return PyFloat_FromDouble(*(const double *)p);
    default:
      return NULL; /* f16/bf16 are read as f32 */
  }
}

/* The values on the host in a dtype value_at reads (f16/bf16 as f32). */
static unsigned char *host_values(const ct_tensor *t, ct_dtype *d) {
  *d = ct_dtype_of(t);
  ct_tensor *cast = NULL;
  if (*d == CT_F16 || *d == CT_BF16) {
    if (!(cast = ct_cast(t, CT_F32))) return ctpy_raise(), NULL;
    t = cast;
    *d = CT_F32;
  }
  size_t nbytes = ct_nbytes(t);
  unsigned char *buf = PyMem_Malloc(nbytes ? nbytes : 1);
  if (!buf) {
    ct_free(cast);
    return PyErr_NoMemory(), NULL;
  }
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_copy_to_host(t, buf, nbytes);
  Py_END_ALLOW_THREADS ct_free(cast);
  if (ctpy_check(st) < 0) {
    PyMem_Free(buf);
    return NULL;
  }
  return buf;
}

PyObject *ctpy_item(const ct_tensor *t) {
  ct_dtype d;
  unsigned char *buf = host_values(t, &d);
  if (!buf) return NULL;
  PyObject *r = value_at(buf, d);
  PyMem_Free(buf);
  return r;
}

static PyObject *nested(const unsigned char **p, const int64_t *shape, int ndim, ct_dtype d) {
  if (ndim == 0) {
    PyObject *v = value_at(*p, d);
    *p += ct_dtype_size(d);
    return v;
  }
  PyObject *list = PyList_New((Py_ssize_t)shape[0]);
  for (int64_t i = 0; list && i < shape[0]; i++) {
    PyObject *item = nested(p, shape + 1, ndim - 1, d);
    if (!item)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, item);
  }
  return list;
}

PyObject *ctpy_tolist(const ct_tensor *t) {
  ct_dtype d;
  unsigned char *buf = host_values(t, &d);
  if (!buf) return NULL;
  const unsigned char *p = buf;
  PyObject *r = nested(&p, ct_shape(t), ct_ndim(t), d);
  PyMem_Free(buf);
  return r;
}
