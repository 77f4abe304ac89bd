/* Files for Python (ctensor/io.py): the C library's .npy and safetensors readers and writers
 * (ctensor/io.h), so that a corrupt, truncated or hostile file gets the C readers' checks and
 * messages (FormatError, a ValueError; FileError, an OSError) and never a crash; and the copy
 * of a strided view out of raw bytes that the PyTorch file reader (_torch_format.py) needs,
 * with its bounds checked here before any byte is read. */
#include "ctpy.h"

/* A path argument (str, bytes or os.PathLike) as a bytes object: 0, or -1 with an exception. */
static int path_arg(PyObject *o, PyObject **out) {
  *out = NULL;
  return PyUnicode_FSConverter(o, out) ? 0 : -1;
}

/* _load_npy(path): a CPU tensor from a .npy file. */
static PyObject *py_load_npy(PyObject *m, PyObject *arg) {
  PyObject *path;
  if (path_arg(arg, &path) < 0) return NULL;
  ct_tensor *t;
  Py_BEGIN_ALLOW_THREADS t = ct_load_npy(PyBytes_AS_STRING(path));
  Py_END_ALLOW_THREADS Py_DECREF(path);
  return ctpy_wrap(t);
}

/* _load_npy_buffer(data): a CPU tensor from a .npy image in memory (a bytes-like object). */
static PyObject *py_load_npy_buffer(PyObject *m, PyObject *arg) {
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
  ct_tensor *t;
  Py_BEGIN_ALLOW_THREADS t = ct_load_npy_buffer(view.buf, (size_t)view.len);
  Py_END_ALLOW_THREADS PyBuffer_Release(&view);
  return ctpy_wrap(t);
}

/* _save_npy(path, tensor) */
static PyObject *py_save_npy(PyObject *m, PyObject *args) {
  PyObject *po, *to, *path;
  if (!PyArg_ParseTuple(args, "OO!:_save_npy", &po, &CtpyTensor_Type, &to)) return NULL;
  if (path_arg(po, &path) < 0) return NULL;
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_save_npy(PyBytes_AS_STRING(path), ctpy_t(to));
  Py_END_ALLOW_THREADS Py_DECREF(path);
  if (ctpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

/* _save_safetensors(path, names, tensors): two sequences of the same length. */
static PyObject *py_save_safetensors(PyObject *m, PyObject *args) {
  PyObject *po, *no, *to;
  if (!PyArg_ParseTuple(args, "OOO:_save_safetensors", &po, &no, &to)) return NULL;
  PyObject *names = ctpy_sequence_tuple(no, "_save_safetensors: names must be a sequence");
  if (!names) return NULL;
  PyObject *tensors = ctpy_sequence_tuple(to, "_save_safetensors: tensors must be a sequence");
  PyObject *path = NULL, *result = NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(names);
  const char **cnames = NULL;
  ct_tensor **cts = NULL;
  if (!tensors || path_arg(po, &path) < 0) goto done;
  if (PyTuple_GET_SIZE(tensors) != n || n > INT_MAX) {
    PyErr_Format(PyExc_ValueError, "_save_safetensors: %zd names for %zd tensors", n,
                 PyTuple_GET_SIZE(tensors));
    goto done;
  }
  cnames = PyMem_Calloc((size_t)n + 1, sizeof *cnames);
  cts = PyMem_Calloc((size_t)n + 1, sizeof *cts);
  if (!cnames || !cts) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *name = PyTuple_GET_ITEM(names, i), *t = PyTuple_GET_ITEM(tensors, i);
    if (!PyUnicode_Check(name)) {
      PyErr_Format(PyExc_TypeError, "save_file: tensor names must be str, got %s",
                   Py_TYPE(name)->tp_name);
      goto done;
    }
    if (!ctpy_is_tensor(t)) {
      PyErr_Format(PyExc_TypeError, "save_file: %R is a %s, not a Tensor", name,
                   Py_TYPE(t)->tp_name);
      goto done;
    }
    if (!(cnames[i] = PyUnicode_AsUTF8(name))) goto done;
    cts[i] = ctpy_t(t);
  }
  ct_status st;
  /* the tuples keep the names and tensors alive while the GIL is released */
  Py_BEGIN_ALLOW_THREADS st = ct_save_safetensors(PyBytes_AS_STRING(path), cts, cnames, (int)n);
  Py_END_ALLOW_THREADS if (ctpy_check(st) == 0) result = Py_NewRef(Py_None);
done:
  PyMem_Free(cnames);
  PyMem_Free(cts);
  Py_XDECREF(path);
  Py_XDECREF(tensors);
  Py_DECREF(names);
  return result;
}

/* _load_safetensors(path): a list of (name, CPU tensor) in the file's order. */
static PyObject *py_load_safetensors(PyObject *m, PyObject *arg) {
  PyObject *path;
  if (path_arg(arg, &path) < 0) return NULL;
  ct_tensor **ts = NULL;
  char **names = NULL;
  int n = 0;
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_load_safetensors(PyBytes_AS_STRING(path), &ts, &names, &n);
  Py_END_ALLOW_THREADS Py_DECREF(path);
  if (ctpy_check(st) < 0) return NULL;
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    PyObject *name =
        PyUnicode_DecodeUTF8(names[i], (Py_ssize_t)strlen(names[i]), "surrogateescape");
    PyObject *t = NULL;
    if (name) {
      t = ctpy_wrap(ts[i]);
      ts[i] = NULL; /* the wrapper (or its failure) owns it now */
    }
    PyObject *item = t ? PyTuple_Pack(2, name, t) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(t);
    if (!item)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, i, item);
  }
  ct_safetensors_free(ts, names, n); /* frees the tensors not wrapped (NULL entries are skipped) */
  return list;
}

/* _from_storage(data, dtype, shape, strides, offset): a new contiguous CPU tensor holding the
 * strided view (in elements of dtype) of a raw little-endian storage, as PyTorch describes a
 * tensor in a file. Every index the view reaches must lie in the storage. */
static PyObject *py_from_storage(PyObject *m, PyObject *args) {
  PyObject *data, *dto, *so, *sto;
  long long offset;
  if (!PyArg_ParseTuple(args, "OOOOL:_from_storage", &data, &dto, &so, &sto, &offset)) return NULL;
  ct_dtype dtype;
  bool given;
  int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
  if (ctpy_parse_dtype(dto, &dtype, &given) < 0) return NULL;
  int nd = ctpy_parse_shape(so, shape, "_from_storage: shape");
  if (nd < 0) return NULL;
  PyObject *st = ctpy_sequence_tuple(sto, "_from_storage: strides must be a sequence");
  if (!st) return NULL;
  if (PyTuple_GET_SIZE(st) != nd) {
    PyErr_Format(PyExc_ValueError, "_from_storage: %d dims but %zd strides", nd,
                 PyTuple_GET_SIZE(st));
    Py_DECREF(st);
    return NULL;
  }
  for (int d = 0; d < nd; d++) {
    strides[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(st, d));
    if (PyErr_Occurred()) return Py_DECREF(st), NULL;
  }
  Py_DECREF(st);
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
  size_t esize = ct_dtype_size(dtype);
  int64_t storage_numel = (int64_t)((size_t)view.len / esize);
  /* the lowest and highest element the view reaches, and its element count */
  int64_t lo = offset, hi = offset, numel = 1;
  bool bad = offset < 0;
  for (int d = 0; d < nd && !bad; d++) {
    if (shape[d] == 0) numel = 0;
    if (shape[d] <= 1) continue;
    int64_t reach;
    if (__builtin_mul_overflow(shape[d] - 1, strides[d], &reach))
      bad = true;
    else if (reach < 0 ? __builtin_add_overflow(lo, reach, &lo)
                       : __builtin_add_overflow(hi, reach, &hi))
      bad = true;
  }
  for (int d = 0; d < nd && !bad; d++)
    if (numel && __builtin_mul_overflow(numel, shape[d], &numel)) bad = true;
  if (!bad && numel > 0 && (lo < 0 || hi >= storage_numel)) bad = true;
  if (bad) {
    PyBuffer_Release(&view);
    return ctpy_raise_code(CT_ERR_FORMAT,
                           "a tensor of shape %R, strides %R and offset %lld reaches outside its "
                           "storage of %lld elements of %s",
                           so, sto, offset, (long long)storage_numel, ct_dtype_name(dtype));
  }
  ct_tensor_opts opts = {.dtype = dtype, .device = {CT_DEVICE_CPU, 0}};
  ct_tensor *t = ct_empty(shape, nd, &opts);
  if (!t) return PyBuffer_Release(&view), ctpy_raise();
  char *dst = ct_data_ptr(t);
  const char *src = view.buf;
  int64_t idx[CT_MAX_DIMS] = {0};
  for (int64_t i = 0; i < numel; i++) {
    int64_t at = offset;
    for (int d = 0; d < nd; d++) at += idx[d] * strides[d];
    memcpy(dst + (size_t)i * esize, src + (size_t)at * esize, esize);
    for (int d = nd - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
  PyBuffer_Release(&view);
  return ctpy_wrap(t);
}

/* _to_bytes(tensor): its elements in row-major order as bytes (any device and dtype, bfloat16
 * included, which has no buffer format): the storages of a PyTorch file. */
static PyObject *py_to_bytes(PyObject *m, PyObject *arg) {
  if (!ctpy_is_tensor(arg))
    return PyErr_Format(PyExc_TypeError, "_to_bytes: expected a Tensor, got %s",
                        Py_TYPE(arg)->tp_name);
  const ct_tensor *t = ctpy_t(arg);
  size_t n = (size_t)ct_numel(t) * ct_dtype_size(ct_dtype_of(t));
  PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
  if (!out) return NULL;
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_copy_to_host(t, PyBytes_AS_STRING(out), n);
  Py_END_ALLOW_THREADS if (ctpy_check(st) < 0) return Py_DECREF(out), NULL;
  return out;
}

PyMethodDef ctpy_io_methods[] = {
    {"_to_bytes", py_to_bytes, METH_O,
     "_to_bytes($module, tensor, /)\n--\n\nThe elements in row-major order as bytes."},
    {"_load_npy", py_load_npy, METH_O, "_load_npy($module, path, /)\n--\n\nReads a .npy file."},
    {"_load_npy_buffer", py_load_npy_buffer, METH_O,
     "_load_npy_buffer($module, data, /)\n--\n\nParses a .npy image held in memory."},
    {"_save_npy", py_save_npy, METH_VARARGS,
     "_save_npy($module, path, tensor, /)\n--\n\nWrites a tensor as a .npy file."},
    {"_save_safetensors", py_save_safetensors, METH_VARARGS,
     "_save_safetensors($module, path, names, tensors, /)\n--\n\nWrites a safetensors file."},
    {"_load_safetensors", py_load_safetensors, METH_O,
     "_load_safetensors($module, path, /)\n--\n\nReads a safetensors file: [(name, tensor)]."},
    {"_from_storage", py_from_storage, METH_VARARGS,
     "_from_storage($module, data, dtype, shape, strides, offset, /)\n--\n\nCopies a strided "
     "view out of a raw storage."},
    {NULL},
};
