/* The Python Tensor type: lifetime, properties, the protocols (number,
 * mapping, buffer, iteration) and the methods that are not namespace
 * functions (item, tolist, to, to_device, backward, ...). */
#include "ctpy.h"

CTPY_DEF_WRAP(new_tensor, CtpyTensor, &CtpyTensor_Type, t, ct_tensor, ct_free)
PyObject *ctpy_wrap(ct_tensor *t) { return new_tensor(t); }

PyObject *ctpy_wrap_unless_error(ct_tensor *t) {
  if (PyErr_Occurred()) return ct_free(t), NULL;
  return ctpy_wrap(t);
}

static void tensor_dealloc(PyObject *self) {
  ct_free(ctpy_t(self));
  Py_TYPE(self)->tp_free(self);
}

/* Tensor(obj, dtype=None, device=None, requires_grad=False): asarray, as a
 * type (also for subclasses such as nn.Parameter, which share obj's memory). */
static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *obj, *dtype = Py_None, *device = Py_None;
  int requires_grad = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOp:Tensor",
                                   CTPY_KW("obj", "dtype", "device", "requires_grad"), &obj, &dtype,
                                   &device, &requires_grad))
    return NULL;
  ctpy_asarray_opts o;
  if (ctpy_asarray_opts_parse(dtype, device, NULL, &o) < 0) return NULL;
  ct_tensor *src = ctpy_asarray(obj, &o);
  if (!src) return NULL;
  /* a leaf of its own that shares the memory, as torch.nn.Parameter(t) */
  ct_tensor *t = ct_detach(src);
  ct_free(src);
  if (!t) return ctpy_raise();
  if (requires_grad && !ct_requires_grad_(t, true)) {
    ct_free(t);
    return ctpy_raise();
  }
  PyObject *self = type->tp_alloc(type, 0);
  if (!self) {
    ct_free(t);
    return NULL;
  }
  ((CtpyTensor *)self)->t = t;
  return self;
}

static PyObject *tensor_repr(PyObject *self) {
  char *s = ct_to_string(ctpy_t(self));
  if (!s) return ctpy_raise();
  PyObject *r = PyUnicode_FromString(s);
  free(s);
  return r;
}

/* ---- Properties -------------------------------------------------------------------------------
 */

/* The n values as a tuple of Python ints. */
static PyObject *int64_tuple(const int64_t *values, int n) {
  PyObject *tup = PyTuple_New(n);
  if (!tup) return NULL;
  for (int d = 0; d < n; d++) {
    PyObject *v = PyLong_FromLongLong(values[d]);
    if (!v) return Py_DECREF(tup), NULL;
    PyTuple_SET_ITEM(tup, d, v);
  }
  return tup;
}

static PyObject *get_shape(PyObject *self, void *c) {
  return int64_tuple(ct_shape(ctpy_t(self)), ct_ndim(ctpy_t(self)));
}
static PyObject *get_dtype(PyObject *self, void *c) {
  return Py_NewRef(ctpy_dtype_object(ct_dtype_of(ctpy_t(self))));
}
static PyObject *get_device(PyObject *self, void *c) {
  return ctpy_device_object(ct_device_of(ctpy_t(self)));
}
static PyObject *get_ndim(PyObject *self, void *c) {
  return PyLong_FromLong(ct_ndim(ctpy_t(self)));
}
static PyObject *get_size(PyObject *self, void *c) {
  return PyLong_FromLongLong(ct_numel(ctpy_t(self)));
}
static PyObject *get_nbytes(PyObject *self, void *c) {
  return PyLong_FromSize_t(ct_nbytes(ctpy_t(self)));
}
static PyObject *get_itemsize(PyObject *self, void *c) {
  return PyLong_FromSize_t(ct_dtype_size(ct_dtype_of(ctpy_t(self))));
}
static PyObject *get_strides(PyObject *self, void *c) {
  return int64_tuple(ct_strides(ctpy_t(self)), ct_ndim(ctpy_t(self)));
}

/* .T: all dims reversed (NumPy); .mT: the last two swapped. */
static PyObject *get_T(PyObject *self, void *c) {
  const ct_tensor *t = ctpy_t(self);
  int n = ct_ndim(t), dims[CT_MAX_DIMS];
  for (int d = 0; d < n; d++) dims[d] = n - 1 - d;
  return ctpy_wrap(ct_permute(t, dims, n));
}
static PyObject *get_mT(PyObject *self, void *c) {
  const ct_tensor *t = ctpy_t(self);
  if (ct_ndim(t) < 2)
    return ctpy_raise_code(CT_ERR_SHAPE, "mT: needs at least 2 dims, the tensor has %d",
                           ct_ndim(t));
  return ctpy_wrap(ct_transpose(t, -2, -1));
}

static PyObject *get_requires_grad(PyObject *self, void *c) {
  return PyBool_FromLong(ct_requires_grad(ctpy_t(self)));
}
static int set_requires_grad(PyObject *self, PyObject *v, void *c) {
  int b = v ? PyObject_IsTrue(v) : 0;
  if (b < 0) return -1;
  if (!ct_requires_grad_(ctpy_t(self), b)) return ctpy_raise(), -1;
  return 0;
}
static PyObject *get_grad(PyObject *self, void *c) {
  ct_tensor *g = ct_grad(ctpy_t(self));
  if (!g) Py_RETURN_NONE;
  return ctpy_wrap(ct_retain(g));
}
static int set_grad(PyObject *self, PyObject *v, void *c) {
  if (v && v != Py_None && !ctpy_is_tensor(v))
    return PyErr_SetString(PyExc_TypeError, "grad: a Tensor or None"), -1;
  return ctpy_check(ct_set_grad(ctpy_t(self), v && v != Py_None ? ctpy_t(v) : NULL));
}
static PyObject *get_is_leaf(PyObject *self, void *c) {
  return PyBool_FromLong(ct_is_leaf(ctpy_t(self)));
}
static PyObject *get_grad_fn(PyObject *self, void *c) {
  const char *name = ct_grad_fn_name(ctpy_t(self));
  if (!name) Py_RETURN_NONE;
  return PyUnicode_FromString(name);
}
static PyObject *get_data(PyObject *self, void *c) { return ctpy_wrap(ct_detach(ctpy_t(self))); }
static PyObject *get_version(PyObject *self, void *c) {
  return PyLong_FromUnsignedLong(ct_version(ctpy_t(self)));
}
static PyObject *get_data_ptr(PyObject *self, void *c) {
  /* the address of element 0 on its device (DLPack's view of it) */
  DLManagedTensor *m = ct_to_dlpack(ctpy_t(self), &(ct_dlpack_opts){.stream = -1});
  if (!m) return ctpy_raise();
  PyObject *r = PyLong_FromVoidPtr(m->dl_tensor.data);
  m->deleter(m);
  return r;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", get_shape, NULL, "the size of each dim, a tuple", NULL},
    {"dtype", get_dtype, NULL, "the element type", NULL},
    {"device", get_device, NULL, "where the tensor lives", NULL},
    {"ndim", get_ndim, NULL, "number of dims", NULL},
    {"size", get_size, NULL, "number of elements", NULL},
    {"nbytes", get_nbytes, NULL, "bytes of the elements", NULL},
    {"itemsize", get_itemsize, NULL, "bytes per element", NULL},
    {"strides_elements", get_strides, NULL, "strides in elements (NumPy's strides are in bytes)",
     NULL},
    {"T", get_T, NULL, "the tensor with its dims reversed (a view)", NULL},
    {"mT", get_mT, NULL, "the last two dims swapped (a view)", NULL},
    {"requires_grad", get_requires_grad, set_requires_grad, "whether autograd records ops on it",
     NULL},
    {"grad", get_grad, set_grad, "the accumulated gradient (leaves), or None", NULL},
    {"is_leaf", get_is_leaf, NULL, "not produced by a recorded op", NULL},
    {"grad_fn", get_grad_fn, NULL, "the name of the op that produced it ('MulBackward'), or None",
     NULL},
    {"data", get_data, NULL, "the same memory without autograd (detach)", NULL},
    {"_version", get_version, NULL, "the version counter, bumped by in-place writes", NULL},
    {"data_ptr", get_data_ptr, NULL, "the address of the first element on its device", NULL},
    {NULL},
};

/* ---- Conversions to Python values
 * -------------------------------------------------------------------- */

static PyObject *one_value(PyObject *self, const char *what) {
  const ct_tensor *t = ctpy_t(self);
  if (ct_numel(t) != 1)
    return PyErr_Format(
        PyExc_ValueError,
        "%s: only a tensor of one element converts to a Python scalar (this one has %lld)", what,
        (long long)ct_numel(t));
  return ctpy_item(t);
}
static int tensor_bool(PyObject *self) {
  const ct_tensor *t = ctpy_t(self);
  if (ct_numel(t) != 1) {
    PyErr_Format(PyExc_ValueError,
                 "the truth value of a tensor of %lld elements is ambiguous (use any() or all())",
                 (long long)ct_numel(t));
    return -1;
  }
  double v;
  if (ctpy_check(ct_item(t, &v)) < 0) return -1;
  return v != 0;
}
static PyObject *tensor_float(PyObject *self) {
  PyObject *v = one_value(self, "float");
  if (!v) return NULL;
  PyObject *f = PyNumber_Float(v);
  Py_DECREF(v);
  return f;
}
static PyObject *tensor_int(PyObject *self) {
  PyObject *v = one_value(self, "int");
  if (!v) return NULL;
  PyObject *i = PyNumber_Long(v);
  Py_DECREF(v);
  return i;
}
static PyObject *tensor_index(PyObject *self) {
  ct_dtype d = ct_dtype_of(ctpy_t(self));
  if (!ct_dtype_is_integral(d) && d != CT_BOOL)
    return PyErr_Format(PyExc_TypeError,
                        "only integer tensors of one element can be an index (this one is %s)",
                        ct_dtype_name(d));
  return tensor_int(self);
}

static Py_ssize_t tensor_len(PyObject *self) {
  const ct_tensor *t = ctpy_t(self);
  if (ct_ndim(t) == 0) return PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor"), -1;
  return (Py_ssize_t)ct_shape(t)[0];
}

static PyObject *m_item(PyObject *self, PyObject *unused) { return one_value(self, "item"); }
static PyObject *m_tolist(PyObject *self, PyObject *unused) { return ctpy_tolist(ctpy_t(self)); }

/* ---- Devices and dtypes
 * -------------------------------------------------------------------------- */

/* to_device(device, /, *, stream=None) */
static PyObject *m_to_device(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *dev, *stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:to_device", CTPY_KW("device", "stream"),
                                   &dev, &stream))
    return NULL;
  ct_device d;
  if (ctpy_parse_device(dev, &d) < 0) return NULL;
  return ctpy_wrap(ct_to(ctpy_t(self), d, NULL));
}

/* to(device=None, dtype=None, non_blocking=False, copy=False), also
 * to(dtype) and to(device) positionally, as torch. */
static PyObject *m_to(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *a = Py_None, *b = Py_None;
  int non_blocking = 0, copy = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOpp:to",
                                   CTPY_KW("device", "dtype", "non_blocking", "copy"), &a, &b,
                                   &non_blocking, &copy))
    return NULL;
  ct_tensor *t = ctpy_t(self);
  ct_device dev = ct_device_of(t);
  ct_dtype dtype = ct_dtype_of(t);
  PyObject *args2[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    PyObject *o = args2[i];
    if (o == Py_None) continue;
    bool given;
    ct_dtype d;
    if (ctpy_parse_dtype(o, &d, &given) == 0) {
      dtype = d;
      continue;
    }
    PyErr_Clear();
    if (ctpy_parse_device(o, &dev) < 0) return NULL;
  }
  ct_tensor *moved = ct_to(t, dev, &(ct_to_opts){.non_blocking = non_blocking, .copy = copy});
  if (!moved) return ctpy_raise();
  ct_tensor *r = ct_cast(moved, dtype);
  ct_free(moved);
  return ctpy_wrap(r);
}

static PyObject *m_cpu(PyObject *self, PyObject *unused) {
  return ctpy_wrap(ct_to(ctpy_t(self), ct_cpu(), NULL));
}
static PyObject *m_cuda(PyObject *self, PyObject *args) {
  int index = 0;
  if (!PyArg_ParseTuple(args, "|i:cuda", &index)) return NULL;
  return ctpy_wrap(ct_to(ctpy_t(self), ct_cuda(index), NULL));
}
static PyObject *m_astype(PyObject *self, PyObject *arg) {
  ct_dtype d;
  bool given;
  if (ctpy_parse_dtype(arg, &d, &given) < 0) return NULL;
  return ctpy_wrap(ct_cast(ctpy_t(self), d));
}
static PyObject *m_float(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_cast(ctpy_t(self), CT_F32));
}
static PyObject *m_double(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_cast(ctpy_t(self), CT_F64));
}
static PyObject *m_long(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_cast(ctpy_t(self), CT_I64));
}
static PyObject *m_int(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_cast(ctpy_t(self), CT_I32));
}
static PyObject *m_half(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_cast(ctpy_t(self), CT_F16));
}
static PyObject *m_bool(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_cast(ctpy_t(self), CT_BOOL));
}
static PyObject *m_clone(PyObject *self, PyObject *u) { return ctpy_wrap(ct_clone(ctpy_t(self))); }
static PyObject *m_contiguous(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_contiguous(ctpy_t(self)));
}
static PyObject *m_is_contiguous(PyObject *self, PyObject *u) {
  return PyBool_FromLong(ct_is_contiguous(ctpy_t(self)));
}
static PyObject *m_numel(PyObject *self, PyObject *u) {
  return PyLong_FromLongLong(ct_numel(ctpy_t(self)));
}
static PyObject *m_dim(PyObject *self, PyObject *u) {
  return PyLong_FromLong(ct_ndim(ctpy_t(self)));
}

/* numpy(): a NumPy array sharing the memory (CPU tensors without grad);
 * get(): a NumPy copy from any device (CuPy's ndarray.get). */
static PyObject *numpy_asarray(PyObject *obj) {
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np) return NULL;
  PyObject *r = PyObject_CallMethod(np, "asarray", "O", obj);
  Py_DECREF(np);
  return r;
}
static PyObject *m_numpy(PyObject *self, PyObject *u) {
  const ct_tensor *t = ctpy_t(self);
  if (ct_requires_grad(t))
    return ctpy_raise_code(CT_ERR_STATE,
                           "numpy: the tensor requires grad; use tensor.detach().numpy()");
  if (ct_device_of(t).type != CT_DEVICE_CPU)
    return ctpy_raise_code(CT_ERR_DEVICE,
                           "numpy: the tensor is on %s; use .get() or .cpu().numpy()",
                           ct_device_name(ct_device_of(t)));
  return numpy_asarray(self);
}
static PyObject *m_get(PyObject *self, PyObject *u) {
  ct_tensor *t = ctpy_t(self);
  ct_tensor *host = ct_to(t, ct_cpu(), &(ct_to_opts){.copy = true});
  if (host && ct_dtype_of(host) == CT_BF16) { /* NumPy has no bfloat16 */
    ct_tensor *f = ct_cast(host, CT_F32);
    ct_free(host);
    host = f;
  }
  ct_tensor *plain = host ? ct_detach(host) : NULL;
  ct_free(host);
  PyObject *wrapped = ctpy_wrap(plain);
  if (!wrapped) return NULL;
  PyObject *r = numpy_asarray(wrapped);
  Py_DECREF(wrapped);
  return r;
}

/* ---- Autograd -------------------------------------------------------------------------------- */

static PyObject *m_backward(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *grad = Py_None;
  int retain_graph = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:backward",
                                   CTPY_KW("gradient", "retain_graph"), &grad, &retain_graph))
    return NULL;
  return ctpy_backward(self, grad, retain_graph);
}
static PyObject *m_detach(PyObject *self, PyObject *u) {
  return ctpy_wrap(ct_detach(ctpy_t(self)));
}
static PyObject *m_requires_grad_(PyObject *self, PyObject *args) {
  int b = 1;
  if (!PyArg_ParseTuple(args, "|p:requires_grad_", &b)) return NULL;
  if (!ct_requires_grad_(ctpy_t(self), b)) return ctpy_raise();
  return Py_NewRef(self);
}
static PyObject *m_retain_grad(PyObject *self, PyObject *u) {
  if (ctpy_check(ct_retain_grad(ctpy_t(self))) < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *m_zero_(PyObject *self, PyObject *u) {
  if (!ct_zero_(ctpy_t(self))) return ctpy_raise();
  return Py_NewRef(self);
}
static PyObject *m_fill_(PyObject *self, PyObject *arg) {
  double v = PyFloat_AsDouble(arg);
  if (v == -1 && PyErr_Occurred()) return NULL;
  if (!ct_fill_(ctpy_t(self), v)) return ctpy_raise();
  return Py_NewRef(self);
}
static PyObject *m_copy_(PyObject *self, PyObject *arg) {
  ct_tensor *owned = NULL;
  const ct_tensor *src = ctpy_operand(arg, ct_device_of(ctpy_t(self)), &owned);
  if (!src) return NULL;
  ct_tensor *r = ct_copy_(ctpy_t(self), src);
  ct_free(owned);
  if (!r) return ctpy_raise();
  return Py_NewRef(self);
}

static PyObject *m_array_namespace(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *version = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:__array_namespace__", CTPY_KW("api_version"),
                                   &version))
    return NULL;
  if (version != Py_None && PyUnicode_Check(version)) {
    const char *v = PyUnicode_AsUTF8(version);
    if (!v) return NULL;
    if (strcmp(v, "2023.12") != 0 && strcmp(v, "2022.12") != 0 && strcmp(v, "2021.12") != 0)
      return PyErr_Format(PyExc_ValueError, "ctensor implements the array API 2023.12, not %s", v);
  }
  return PyImport_ImportModule("ctensor");
}

/* ---- Methods that are namespace functions ------------------------------------------------------
 */

/* x.name(*args, **kwargs) is _C.<name>(x, *args, **kwargs), with PyTorch's
 * keyword names accepted (dim -> axis, keepdim -> keepdims); `varargs_shape`
 * methods also take a shape as separate ints (x.reshape(2, 3)). */
static PyObject *forward(const char *name, PyObject *self, PyObject *args, PyObject *kwargs,
                         bool varargs_shape) {
  PyObject *fn = PyObject_GetAttrString(ctpy_module, name);
  if (!fn) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject *full = NULL, *kw = NULL, *r = NULL;
  if (varargs_shape && n != 1) {
    full = Py_BuildValue("(OO)", self, args); /* the ints as one shape */
  } else {
    full = PyTuple_New(n + 1);
    if (full) {
      PyTuple_SET_ITEM(full, 0, Py_NewRef(self));
      for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(full, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    }
  }
  if (kwargs && full) {
    kw = PyDict_Copy(kwargs);
    static const char *const renames[][2] = {{"dim", "axis"}, {"keepdim", "keepdims"}};
    for (size_t i = 0; kw && i < sizeof renames / sizeof renames[0]; i++) {
      PyObject *v = PyDict_GetItemString(kw, renames[i][0]);
      if (v && (PyDict_SetItemString(kw, renames[i][1], v) < 0 ||
                PyDict_DelItemString(kw, renames[i][0]) < 0))
        Py_CLEAR(kw);
    }
  }
  if (full && (kw || !kwargs)) r = PyObject_Call(fn, full, kw);
  Py_XDECREF(kw);
  Py_XDECREF(full);
  Py_DECREF(fn);
  return r;
}

#define CTPY_FORWARDED(X)                                                                          \
  X(sum, false)                                                                                    \
  X(mean, false)                                                                                   \
  X(prod, false)                                                                                   \
  X(max, false)                                                                                    \
  X(min, false)                                                                                    \
  X(std, false)                                                                                    \
  X(var, false)                                                                                    \
  X(all, false) X(any, false) X(argmax, false) X(argmin, false) X(logsumexp, false) X(norm, false) \
      X(softmax, false) X(log_softmax, false) X(reshape, true) X(view, true) X(permute_dims, true) \
          X(broadcast_to, true) X(transpose, false) X(flatten, false) X(unsqueeze, false)          \
              X(diagonal, false) X(matmul, false) X(clamp, false) X(exp, false) X(log, false)      \
                  X(sqrt, false) X(abs, false) X(relu, false) X(sigmoid, false) X(tanh, false)     \
                      X(square, false) X(pow, false) X(add_, false) X(sub_, false) X(mul_, false)  \
                          X(div_, false) X(pow_, false) X(clamp_, false) X(relu_, false)           \
                              X(exp_, false) X(index_select, false) X(gather, false)               \
                                  X(masked_fill, false) X(masked_fill_, false) X(expand_as, false) \
                                      X(split, false) X(chunk, false) X(tril, false)               \
                                          X(triu, false)
#define DEF_FORWARD(name, shape)                                                 \
  static PyObject *fw_##name(PyObject *self, PyObject *args, PyObject *kwargs) { \
    return forward(#name, self, args, kwargs, shape);                            \
  }
CTPY_FORWARDED(DEF_FORWARD)
#define FORWARD_ENTRY(name, shape) {#name, CTPY_KWARGS(fw_##name), "ctensor." #name "(self, ...)"},

static PyObject *fw_permute(PyObject *self, PyObject *args, PyObject *kwargs) {
  return forward("permute_dims", self, args, kwargs, true);
}
static PyObject *fw_expand(PyObject *self, PyObject *args, PyObject *kwargs) {
  return forward("broadcast_to", self, args, kwargs, true);
}
static PyObject *fw_squeeze(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *ns = PyImport_ImportModule("ctensor");
  if (!ns) return NULL;
  PyObject *fn = PyObject_GetAttrString(ns, "squeeze"), *r = NULL;
  Py_DECREF(ns);
  if (!fn) return NULL;
  PyObject *head = PyTuple_Pack(1, self), *full = head ? PySequence_Concat(head, args) : NULL;
  Py_XDECREF(head);
  if (full) r = PyObject_Call(fn, full, kwargs);
  Py_XDECREF(full);
  Py_DECREF(fn);
  return r;
}

static PyMethodDef tensor_methods[] = {
    CTPY_FORWARDED(FORWARD_ENTRY){"permute", CTPY_KWARGS(fw_permute), "permute(*dims): a view"},
    {"expand", CTPY_KWARGS(fw_expand), "expand(*shape): a view"},
    {"squeeze", CTPY_KWARGS(fw_squeeze), "squeeze(axis=None): without size-1 dims"},
    {"item", m_item, METH_NOARGS, "The value of a one-element tensor as a Python scalar."},
    {"tolist", m_tolist, METH_NOARGS, "The values as nested lists."},
    {"to_device", CTPY_KWARGS(m_to_device),
     "to_device(device, /, *, stream=None): a copy on device (the tensor itself if already "
     "there)."},
    {"to", CTPY_KWARGS(m_to),
     "to(device=None, dtype=None, non_blocking=False, copy=False), as torch.Tensor.to."},
    {"cpu", m_cpu, METH_NOARGS, "The tensor on the CPU."},
    {"cuda", m_cuda, METH_VARARGS, "cuda(index=0): the tensor on a GPU."},
    {"astype", m_astype, METH_O, "astype(dtype): the values converted."},
    {"float", m_float, METH_NOARGS, "astype(float32)"},
    {"double", m_double, METH_NOARGS, "astype(float64)"},
    {"half", m_half, METH_NOARGS, "astype(float16)"},
    {"long", m_long, METH_NOARGS, "astype(int64)"},
    {"int", m_int, METH_NOARGS, "astype(int32)"},
    {"bool", m_bool, METH_NOARGS, "astype(bool)"},
    {"clone", m_clone, METH_NOARGS, "A contiguous copy (recorded by autograd)."},
    {"copy", m_clone, METH_NOARGS, "A contiguous copy."},
    {"contiguous", m_contiguous, METH_NOARGS, "The tensor, or a contiguous copy if it is not."},
    {"is_contiguous", m_is_contiguous, METH_NOARGS,
     "Whether the elements are contiguous in row-major order."},
    {"numel", m_numel, METH_NOARGS, "Number of elements."},
    {"dim", m_dim, METH_NOARGS, "Number of dims."},
    {"numpy", m_numpy, METH_NOARGS, "A NumPy array sharing the memory of a CPU tensor."},
    {"get", m_get, METH_NOARGS, "A NumPy copy, from any device (as CuPy's get)."},
    {"backward", CTPY_KWARGS(m_backward),
     "backward(gradient=None, retain_graph=False): accumulates gradients into the leaves."},
    {"detach", m_detach, METH_NOARGS, "The same memory, without autograd."},
    {"requires_grad_", m_requires_grad_, METH_VARARGS,
     "requires_grad_(b=True): marks a leaf; returns it."},
    {"retain_grad", m_retain_grad, METH_NOARGS, "Keep the gradient of a non-leaf too."},
    {"zero_", m_zero_, METH_NOARGS, "Fills with 0 in place."},
    {"fill_", m_fill_, METH_O, "fill_(value): fills in place."},
    {"copy_", m_copy_, METH_O,
     "copy_(src): copies src into the tensor (broadcasting, casting, across devices)."},
    {"__dlpack__", CTPY_KWARGS(ctpy_tensor_dlpack),
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule."},
    {"__dlpack_device__", ctpy_tensor_dlpack_device, METH_NOARGS,
     "(device type, device id) as DLPack codes them."},
    {"__array_namespace__", CTPY_KWARGS(m_array_namespace),
     "The ctensor module (the array API namespace)."},
    {NULL},
};

static PyMappingMethods tensor_mapping = {
    .mp_length = tensor_len,
    .mp_subscript = ctpy_getitem,
    .mp_ass_subscript = ctpy_setitem,
};

/* The sequence protocol too: iteration over the first dim (t[0], t[1], ...). */
static PyObject *tensor_item(PyObject *self, Py_ssize_t i) {
  PyObject *key = PyLong_FromSsize_t(i);
  if (!key) return NULL;
  PyObject *r = ctpy_getitem(self, key);
  Py_DECREF(key);
  return r;
}
static PySequenceMethods tensor_sequence = {.sq_length = tensor_len, .sq_item = tensor_item};

PyTypeObject CtpyTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.Tensor",
    .tp_basicsize = sizeof(CtpyTensor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc =
        "Tensor(obj, dtype=None, device=None, requires_grad=False): an n-dimensional array on a "
        "CPU or GPU.",
    .tp_new = tensor_new,
    .tp_dealloc = tensor_dealloc,
    .tp_repr = tensor_repr,
    .tp_getset = tensor_getset,
    .tp_methods = tensor_methods,
    .tp_as_number = &ctpy_number_methods,
    .tp_as_mapping = &tensor_mapping,
    .tp_as_sequence = &tensor_sequence,
    .tp_as_buffer = &ctpy_buffer_procs,
    .tp_richcompare = ctpy_richcompare,
    .tp_hash = PyObject_HashNotImplemented,
};

/* the number protocol's conversions live here with the other conversions */
PyObject *ctpy_tensor_float(PyObject *self) { return tensor_float(self); }
PyObject *ctpy_tensor_int(PyObject *self) { return tensor_int(self); }
PyObject *ctpy_tensor_index(PyObject *self) { return tensor_index(self); }
int ctpy_tensor_bool(PyObject *self) { return tensor_bool(self); }
