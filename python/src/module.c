/* ctensor._C: the module, its exceptions (one class per ct_status, each also
 * a subclass of the Python exception a Python programmer expects), the dtype
 * and Device types, and the default device. */
#include <stdarg.h>

#include <string.h>

#include "ctpy.h"

/* ---- Errors ------------------------------------------------------------------------------ */

PyObject *ctpy_error_classes[CT_STATUS_COUNT];
/* ctensor.AxisError: an ArgumentError that is also an IndexError, for an axis out of range
 * (NumPy's AxisError is a ValueError and an IndexError). */
static PyObject *axis_error;

/* The class for the C library's last error: AxisError for its "dim N out of range" messages. */
static PyObject *error_class(ct_status code, const char *msg) {
  if (code == CT_ERR_ARG && axis_error && strstr(msg, " out of range for ") &&
      (strstr(msg, ": dim ") || strstr(msg, ": dims ")))
    return axis_error;
  return ctpy_error_classes[code];
}

/* Name and builtin base of each status's exception class. */
static const struct {
  const char *name;
  PyObject **base;
} error_specs[CT_STATUS_COUNT] = {
    [CT_OK] = {"Error", NULL},
    [CT_ERR_ARG] = {"ArgumentError", &PyExc_ValueError},
    [CT_ERR_SHAPE] = {"ShapeError", &PyExc_ValueError},
    [CT_ERR_DTYPE] = {"DTypeError", &PyExc_TypeError},
    [CT_ERR_DEVICE] = {"DeviceError", &PyExc_ValueError},
    [CT_ERR_OOM] = {"OutOfMemoryError", &PyExc_MemoryError},
    [CT_ERR_CUDA] = {"CudaError", &PyExc_RuntimeError},
    [CT_ERR_IO] = {"FileError", &PyExc_OSError},
    [CT_ERR_FORMAT] = {"FormatError", &PyExc_ValueError},
    [CT_ERR_UNAVAILABLE] = {"UnavailableError", &PyExc_RuntimeError},
    [CT_ERR_STATE] = {"StateError", &PyExc_RuntimeError},
    [CT_ERR_INTERNAL] = {"InternalError", &PyExc_RuntimeError},
};

PyObject *ctpy_raise(void) {
  ct_status code = ct_last_error();
  if (code <= CT_OK || code >= CT_STATUS_COUNT) {
    /* a NULL without a recorded error would be a bug in the C library */
    PyErr_SetString(ctpy_error_classes[CT_ERR_INTERNAL],
                    "ctensor: an operation failed without an error message");
  } else {
    PyErr_SetString(error_class(code, ct_last_error_message()), ct_last_error_message());
  }
  ct_clear_error();
  return NULL;
}

int ctpy_check(ct_status st) {
  if (st == CT_OK) return 0;
  if (ct_last_error() == CT_OK) {
    PyErr_SetString(ctpy_error_classes[st > CT_OK && st < CT_STATUS_COUNT ? st : CT_ERR_INTERNAL],
                    ct_status_name(st));
    return -1;
  }
  ctpy_raise();
  return -1;
}

PyObject *ctpy_raise_code(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (msg) {
    PyErr_SetObject(ctpy_error_classes[code], msg);
    Py_DECREF(msg);
  }
  return NULL;
}

static int init_errors(PyObject *m) {
  PyObject *base = PyErr_NewExceptionWithDoc(
      "ctensor.Error", "An error reported by the ctensor C library.", PyExc_Exception, NULL);
  if (!base || PyModule_AddObjectRef(m, "Error", base) < 0) return -1;
  ctpy_error_classes[CT_OK] = base;
  for (int c = 1; c < CT_STATUS_COUNT; c++) {
    char qualified[64];
    snprintf(qualified, sizeof qualified, "ctensor.%s", error_specs[c].name);
    PyObject *bases = PyTuple_Pack(2, base, *error_specs[c].base);
    if (!bases) return -1;
    PyObject *cls = PyErr_NewException(qualified, bases, NULL);
    Py_DECREF(bases);
    if (!cls || PyModule_AddObjectRef(m, error_specs[c].name, cls) < 0) return -1;
    ctpy_error_classes[c] = cls;
  }
  PyObject *bases = PyTuple_Pack(2, ctpy_error_classes[CT_ERR_ARG], PyExc_IndexError);
  if (!bases) return -1;
  axis_error = PyErr_NewException("ctensor.AxisError", bases, NULL);
  Py_DECREF(bases);
  if (!axis_error || PyModule_AddObjectRef(m, "AxisError", axis_error) < 0) return -1;
  return 0;
}

/* ---- dtype ----------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD ct_dtype d;
} CtpyDType;

static PyTypeObject CtpyDType_Type;
static CtpyDType dtype_singletons[CT_DTYPE_COUNT];
/* The array API's names (ct_dtype_name gives the short ones). */
static const char *const dtype_names[CT_DTYPE_COUNT] = {
    [CT_F32] = "float32", [CT_F64] = "float64", [CT_F16] = "float16", [CT_BF16] = "bfloat16",
    [CT_I8] = "int8",     [CT_U8] = "uint8",    [CT_I16] = "int16",   [CT_I32] = "int32",
    [CT_I64] = "int64",   [CT_BOOL] = "bool",
};

PyObject *ctpy_dtype_object(ct_dtype d) { return (PyObject *)&dtype_singletons[d]; }

static PyObject *dtype_repr(PyObject *self) {
  return PyUnicode_FromFormat("ctensor.%s", dtype_names[((CtpyDType *)self)->d]);
}
static PyObject *dtype_str(PyObject *self) {
  return PyUnicode_FromString(dtype_names[((CtpyDType *)self)->d]);
}
static Py_hash_t dtype_hash(PyObject *self) {
  return (Py_hash_t)((CtpyDType *)self)->d + 0x5ca1ab1e;
}

static PyObject *dtype_richcompare(PyObject *a, PyObject *b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  bool eq;
  if (Py_TYPE(b) == &CtpyDType_Type) {
    eq = a == b;
  } else if (PyUnicode_Check(b)) {
    ct_dtype d;
    bool given;
    eq = ctpy_parse_dtype(b, &d, &given) == 0 && d == ((CtpyDType *)a)->d;
    PyErr_Clear();
  } else if (b != Py_None) {
    /* NumPy's and PyTorch's dtypes and scalar types (np.float32, np.dtype('float32')) */
    ct_dtype d;
    bool given;
    if (ctpy_parse_dtype(b, &d, &given) < 0 || !given) {
      PyErr_Clear();
      Py_RETURN_NOTIMPLEMENTED;
    }
    eq = d == ((CtpyDType *)a)->d;
  } else {
    Py_RETURN_NOTIMPLEMENTED;
  }
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *dtype_get_name(PyObject *self, void *c) { return dtype_str(self); }
static PyObject *dtype_get_itemsize(PyObject *self, void *c) {
  return PyLong_FromSize_t(ct_dtype_size(((CtpyDType *)self)->d));
}
static PyObject *dtype_get_is_floating(PyObject *self, void *c) {
  return PyBool_FromLong(ct_dtype_is_floating(((CtpyDType *)self)->d));
}
static PyObject *dtype_get_code(PyObject *self, void *c) {
  return PyLong_FromLong(((CtpyDType *)self)->d);
}
static PyObject *dtype_reduce(PyObject *self, PyObject *unused) {
  return PyUnicode_FromString(
      dtype_names[((CtpyDType *)self)->d]); /* pickled as the module attribute */
}

static PyGetSetDef dtype_getset[] = {
    {"name", dtype_get_name, NULL, "the array API name: 'float32', 'int64', 'bool', ...", NULL},
    {"itemsize", dtype_get_itemsize, NULL, "bytes per element", NULL},
    {"is_floating_point", dtype_get_is_floating, NULL, "whether it is a floating dtype", NULL},
    {"_code", dtype_get_code, NULL, "the ct_dtype value", NULL},
    {NULL},
};
static PyMethodDef dtype_methods[] = {{"__reduce__", dtype_reduce, METH_NOARGS, NULL}, {NULL}};

static PyTypeObject CtpyDType_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.dtype",
    .tp_basicsize = sizeof(CtpyDType),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A ctensor element type (ctensor.float32, ctensor.int64, ...).",
    .tp_repr = dtype_repr,
    .tp_str = dtype_str,
    .tp_hash = dtype_hash,
    .tp_richcompare = dtype_richcompare,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

int ctpy_parse_dtype(PyObject *o, ct_dtype *out, bool *given) {
  *given = false;
  if (!o || o == Py_None) return 0;
  *given = true;
  if (Py_TYPE(o) == &CtpyDType_Type) {
    *out = ((CtpyDType *)o)->d;
    return 0;
  }
  if (o == (PyObject *)&PyBool_Type) return *out = CT_BOOL, 0;
  if (o == (PyObject *)&PyLong_Type) return *out = CTPY_DEFAULT_INT, 0;
  if (o == (PyObject *)&PyFloat_Type) return *out = CTPY_DEFAULT_FLOAT, 0;
  /* a name, or an object that has one (numpy.dtype, numpy.float32, torch.float32) */
  PyObject *name = NULL;
  if (PyUnicode_Check(o)) {
    name = Py_NewRef(o);
  } else if (PyObject_HasAttrString(o, "dtype") && PyType_Check(o)) {
    name = PyObject_GetAttrString(o, "__name__"); /* numpy scalar types: numpy.float32 */
  } else if (PyObject_HasAttrString(o, "name")) {
    name = PyObject_GetAttrString(o, "name"); /* numpy.dtype('float32') */
  } else {
    name = PyObject_Str(o); /* torch.float32 -> "torch.float32" */
  }
  if (!name) return -1;
  const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  if (s && strncmp(s, "torch.", 6) == 0) s += 6;
  bool ok = s && ct_dtype_parse(s, out);
  if (!ok && s && strcmp(s, "bool_") == 0) *out = CT_BOOL, ok = true; /* numpy.bool_ */
  if (!ok) PyErr_Format(PyExc_TypeError, "not a ctensor dtype: %R", o);
  Py_DECREF(name);
  return ok ? 0 : -1;
}

/* ---- Device ---------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD ct_device d;
} CtpyDevice;

static PyTypeObject CtpyDevice_Type;

PyObject *ctpy_device_object(ct_device d) {
  CtpyDevice *o = PyObject_New(CtpyDevice, &CtpyDevice_Type);
  if (o) o->d = d;
  return (PyObject *)o;
}

int ctpy_parse_device(PyObject *o, ct_device *out) {
  if (!o || o == Py_None) return ctpy_resolve_default_device(out);
  if (Py_TYPE(o) == &CtpyDevice_Type) {
    *out = ((CtpyDevice *)o)->d;
    return 0;
  }
  PyObject *str =
      PyUnicode_Check(o) ? Py_NewRef(o) : PyObject_Str(o); /* torch.device, cupy Device */
  if (!str) return -1;
  const char *s = PyUnicode_AsUTF8(str);
  ct_status st = s ? ct_device_parse(s, out) : CT_ERR_ARG;
  Py_DECREF(str);
  if (!s) return -1;
  return ctpy_check(st);
}

static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *spec;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Device", CTPY_KW("device"), &spec)) return NULL;
  if (spec == Py_None)
    return PyErr_Format(PyExc_TypeError, "Device: give a device such as 'cpu' or 'cuda:0'");
  ct_device d;
  if (ctpy_parse_device(spec, &d) < 0) return NULL;
  return ctpy_device_object(d);
}

static PyObject *device_str(PyObject *self) {
  return PyUnicode_FromString(ct_device_name(((CtpyDevice *)self)->d));
}
static PyObject *device_repr(PyObject *self) {
  return PyUnicode_FromFormat("ctensor.Device('%s')", ct_device_name(((CtpyDevice *)self)->d));
}
static Py_hash_t device_hash(PyObject *self) {
  ct_device d = ((CtpyDevice *)self)->d;
  return 0x0de71ce + d.type * 256 + d.index;
}
static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  ct_device other;
  if (Py_TYPE(b) == &CtpyDevice_Type) {
    other = ((CtpyDevice *)b)->d;
  } else if (PyUnicode_Check(b)) {
    if (ctpy_parse_device(b, &other) < 0) {
      PyErr_Clear();
      return PyBool_FromLong(op == Py_NE);
    }
  } else {
    Py_RETURN_NOTIMPLEMENTED;
  }
  bool eq = ct_device_equal(((CtpyDevice *)a)->d, other);
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}
static PyObject *device_get_type(PyObject *self, void *c) {
  return PyUnicode_FromString(((CtpyDevice *)self)->d.type == CT_DEVICE_CUDA ? "cuda" : "cpu");
}
static PyObject *device_get_index(PyObject *self, void *c) {
  ct_device d = ((CtpyDevice *)self)->d;
  if (d.type == CT_DEVICE_CPU) Py_RETURN_NONE;
  return PyLong_FromLong(d.index);
}
static PyObject *device_reduce(PyObject *self, PyObject *unused) {
  return Py_BuildValue("(O(s))", (PyObject *)&CtpyDevice_Type,
                       ct_device_name(((CtpyDevice *)self)->d));
}
static PyGetSetDef device_getset[] = {
    {"type", device_get_type, NULL, "'cpu' or 'cuda'", NULL},
    {"index", device_get_index, NULL, "the GPU's index (None for the CPU)", NULL},
    {NULL},
};
static PyMethodDef device_methods[] = {{"__reduce__", device_reduce, METH_NOARGS, NULL}, {NULL}};

static PyTypeObject CtpyDevice_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.Device",
    .tp_basicsize = sizeof(CtpyDevice),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device(name): where a tensor lives: Device('cpu'), Device('cuda:0').",
    .tp_new = device_new,
    .tp_repr = device_repr,
    .tp_str = device_str,
    .tp_hash = device_hash,
    .tp_richcompare = device_richcompare,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
};

/* ---- The default device ------------------------------------------------------------------------
 */

/* Process-wide choice (set_default_device), found lazily: asking the CUDA
 * runtime costs time that `import ctensor` should not pay. A thread's
 * `with cuda.Device(n)` block overrides it. */
static ct_device process_default;
static bool process_default_known;
static _Thread_local ct_device thread_default;
static _Thread_local int thread_default_depth;

/* Why CT_DEVICE cannot be used (process_default is then the CPU), else CT_OK:
 * an explicit request is an error where Python can raise one, never a
 * silent fallback (ctpy_resolve_default_device). */
static ct_status process_default_status;
static char process_default_error[1024];

static void resolve_process_default(void) {
  process_default_status = ct_resolve_default_device(&process_default);
  if (process_default_status != CT_OK) {
    snprintf(process_default_error, sizeof process_default_error, "%s", ct_last_error_message());
    ct_clear_error();
  }
  process_default_known = true;
}

ct_device ctpy_default_device(void) {
  if (thread_default_depth > 0) return thread_default;
  if (!process_default_known) resolve_process_default();
  return process_default;
}

int ctpy_resolve_default_device(ct_device *out) {
  *out = ctpy_default_device();
  if (thread_default_depth > 0 || process_default_status == CT_OK) return 0;
  ctpy_raise_code(process_default_status, "%s", process_default_error);
  return -1;
}

static PyObject *py_get_default_device(PyObject *m, PyObject *unused) {
  ct_device d;
  if (ctpy_resolve_default_device(&d) < 0) return NULL;
  return ctpy_device_object(d);
}

static PyObject *py_set_default_device(PyObject *m, PyObject *arg) {
  ct_device d;
  if (arg == Py_None) {
    process_default_known = false; /* back to CT_DEVICE / the best available */
    Py_RETURN_NONE;
  }
  if (ctpy_parse_device(arg, &d) < 0) return NULL;
  process_default = d;
  process_default_status = CT_OK;
  process_default_known = true;
  Py_RETURN_NONE;
}

/* _push_device(device) / _pop_device(previous): the body of cuda.Device's
 * `with` block. Returns the previous (device, depth) to restore. */
static PyObject *py_push_device(PyObject *m, PyObject *arg) {
  ct_device d;
  if (ctpy_parse_device(arg, &d) < 0) return NULL;
  if (d.type == CT_DEVICE_CUDA && ctpy_check(ct_cuda_set_device(d.index)) < 0) return NULL;
  PyObject *prev =
      Py_BuildValue("(iii)", thread_default.type, thread_default.index, thread_default_depth);
  if (!prev) return NULL;
  thread_default = d;
  thread_default_depth++;
  return prev;
}

static PyObject *py_pop_device(PyObject *m, PyObject *arg) {
  int type, index, depth;
  if (!PyArg_ParseTuple(arg, "iii", &type, &index, &depth)) return NULL;
  thread_default.type = (int8_t)type;
  thread_default.index = (int8_t)index;
  thread_default_depth = depth;
  if (depth > 0 && type == CT_DEVICE_CUDA) ct_cuda_set_device(index);
  Py_RETURN_NONE;
}

/* ---- Library information --------------------------------------------------------------------- */

static PyObject *py_cuda_is_available(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(ct_cuda_is_available());
}
/* ct_cuda_unavailable_reason: None when a GPU can be used, else the reason. */
static PyObject *py_cuda_unavailable_reason(PyObject *m, PyObject *unused) {
  const char *why = ct_cuda_unavailable_reason();
  if (!*why) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(why, (Py_ssize_t)strlen(why), "replace");
}
static PyObject *py_cuda_device_count(PyObject *m, PyObject *unused) {
  return PyLong_FromLong(ct_cuda_device_count());
}
static PyObject *py_synchronize(PyObject *m, PyObject *args) {
  PyObject *dev = Py_None;
  if (!PyArg_ParseTuple(args, "|O:synchronize", &dev)) return NULL;
  ct_device d;
  if (ctpy_parse_device(dev, &d) < 0) return NULL;
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_synchronize(d);
  Py_END_ALLOW_THREADS if (ctpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *py_memory_stats(PyObject *m, PyObject *args) {
  PyObject *dev = Py_None;
  if (!PyArg_ParseTuple(args, "|O:memory_stats", &dev)) return NULL;
  ct_device d;
  ct_memory_stats s;
  if (ctpy_parse_device(dev, &d) < 0 || ctpy_check(ct_memory_stats_get(d, &s)) < 0) return NULL;
  return Py_BuildValue("{s:n,s:n,s:n,s:K,s:K}", "allocated", (Py_ssize_t)s.allocated, "reserved",
                       (Py_ssize_t)s.reserved, "peak_allocated", (Py_ssize_t)s.peak_allocated,
                       "num_allocs", (unsigned long long)s.num_allocs, "num_cache_hits",
                       (unsigned long long)s.num_cache_hits);
}
static PyObject *py_build_info(PyObject *m, PyObject *unused) {
  return PyUnicode_FromString(ct_build_info());
}
static PyObject *py_set_num_threads(PyObject *m, PyObject *arg) {
  int n = PyLong_AsLong(arg) > 0 ? (int)PyLong_AsLong(arg) : 0;
  if (PyErr_Occurred()) return NULL;
  if (n <= 0) return PyErr_Format(PyExc_ValueError, "set_num_threads: need a positive count");
  ct_set_num_threads(n);
  Py_RETURN_NONE;
}
static PyObject *py_get_num_threads(PyObject *m, PyObject *unused) {
  return PyLong_FromLong(ct_get_num_threads());
}
static PyObject *py_use_deterministic_algorithms(PyObject *m, PyObject *arg) {
  if (!PyBool_Check(arg))
    return PyErr_Format(PyExc_TypeError, "use_deterministic_algorithms: expected a bool, got %s",
                        Py_TYPE(arg)->tp_name);
  ct_use_deterministic_algorithms(arg == Py_True);
  Py_RETURN_NONE;
}
static PyObject *py_are_deterministic_algorithms_enabled(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(ct_are_deterministic_algorithms_enabled());
}
static PyObject *py_promote_types(PyObject *m, PyObject *args) {
  PyObject *a, *b;
  ct_dtype da, db;
  bool g;
  if (!PyArg_ParseTuple(args, "OO:promote_types", &a, &b)) return NULL;
  if (ctpy_parse_dtype(a, &da, &g) < 0 || ctpy_parse_dtype(b, &db, &g) < 0) return NULL;
  return Py_NewRef(ctpy_dtype_object(ct_promote_types(da, db)));
}
static PyObject *py_can_cast(PyObject *m, PyObject *args) {
  PyObject *a, *b;
  ct_dtype da, db;
  bool g;
  if (!PyArg_ParseTuple(args, "OO:can_cast", &a, &b)) return NULL;
  if (ctpy_is_tensor(a)) a = ctpy_dtype_object(ct_dtype_of(ctpy_t(a)));
  if (ctpy_parse_dtype(a, &da, &g) < 0 || ctpy_parse_dtype(b, &db, &g) < 0) return NULL;
  return PyBool_FromLong(ct_can_cast(da, db));
}
static PyObject *py_cuda_stream_current(PyObject *m, PyObject *arg) {
  ct_device d;
  if (ctpy_parse_device(arg, &d) < 0) return NULL;
  return PyLong_FromVoidPtr(ct_stream_native_handle(ct_stream_current(d)));
}

static PyMethodDef module_methods[] = {
    {"get_default_device", py_get_default_device, METH_NOARGS,
     "The device new tensors go to by default."},
    {"set_default_device", py_set_default_device, METH_O,
     "set_default_device(device): where new tensors go; None: back to CT_DEVICE / the best "
     "available."},
    {"_push_device", py_push_device, METH_O, NULL},
    {"_pop_device", py_pop_device, METH_O, NULL},
    {"_cuda_is_available", py_cuda_is_available, METH_NOARGS, NULL},
    {"_cuda_device_count", py_cuda_device_count, METH_NOARGS, NULL},
    {"_cuda_unavailable_reason", py_cuda_unavailable_reason, METH_NOARGS, NULL},
    {"_cuda_current_stream_handle", py_cuda_stream_current, METH_O, NULL},
    {"synchronize", py_synchronize, METH_VARARGS,
     "synchronize(device=None): waits for the device's queued work."},
    {"build_info", py_build_info, METH_NOARGS, "The C library's build options."},
    {"memory_stats", py_memory_stats, METH_VARARGS,
     "memory_stats(device=None): the caching allocator's bytes allocated, reserved, peak; (for the "
     "CPU: blocks "
     "of 32 KiB and more)"},
    {"set_num_threads", py_set_num_threads, METH_O,
     "set_num_threads(n): CPU threads used by large operations."},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "CPU threads used by large operations."},
    {"use_deterministic_algorithms", py_use_deterministic_algorithms, METH_O,
     "use_deterministic_algorithms(mode): sort-based instead of atomic GPU writes (bit-for-bit "
     "repeatable)."},
    {"are_deterministic_algorithms_enabled", py_are_deterministic_algorithms_enabled, METH_NOARGS,
     "Whether use_deterministic_algorithms(True) is in effect."},
    {"promote_types", py_promote_types, METH_VARARGS,
     "promote_types(type1, type2): the dtype of a binary op between two dtypes."},
    {"_can_cast", py_can_cast, METH_VARARGS, NULL},
    {NULL},
};

/* ---- The module ----------------------------------------------------------------------------- */

PyObject *ctpy_module;
extern PyMethodDef ctpy_io_methods[];        /* io.c: the .npy and safetensors files */
int ctpy_text_signatures(PyMethodDef *defs); /* textsig.c: signatures for inspect.signature */

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ctensor._C",
    .m_doc = "The ctensor C library, for Python (use the ctensor package).",
    .m_size = -1,
    .m_methods = module_methods,
};

static int add_methods(PyObject *m, PyMethodDef *defs) {
  PyObject *name = PyModule_GetNameObject(m);
  if (!name) return -1;
  ctpy_text_signatures(defs);
  for (PyMethodDef *d = defs; d->ml_name; d++) {
    PyObject *f = PyCFunction_NewEx(d, NULL, name);
    if (!f || PyModule_AddObject(m, d->ml_name, f) < 0) {
      Py_XDECREF(f);
      Py_DECREF(name);
      return -1;
    }
  }
  Py_DECREF(name);
  return 0;
}

PyMODINIT_FUNC PyInit__C(void) {
  ctpy_text_signatures(module_methods);
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (init_errors(m) < 0 || PyType_Ready(&CtpyDType_Type) < 0 ||
      PyType_Ready(&CtpyDevice_Type) < 0 || PyType_Ready(&CtpyTensor_Type) < 0)
    goto fail;
  PyObject *dtypes = PyDict_New();
  if (!dtypes || PyModule_AddObject(m, "_dtypes", dtypes) < 0) goto fail;
  for (int d = 0; d < CT_DTYPE_COUNT; d++) {
    PyObject *o = (PyObject *)&dtype_singletons[d];
    /* static singletons: never freed */
    Py_SET_REFCNT(o, 1);
    Py_SET_TYPE(o, &CtpyDType_Type);
    dtype_singletons[d].d = (ct_dtype)d;
    if (PyDict_SetItemString(dtypes, dtype_names[d], o) < 0) goto fail;
  }
  if (PyModule_AddObjectRef(m, "dtype", (PyObject *)&CtpyDType_Type) < 0 ||
      PyModule_AddObjectRef(m, "Device", (PyObject *)&CtpyDevice_Type) < 0 ||
      PyModule_AddObjectRef(m, "Tensor", (PyObject *)&CtpyTensor_Type) < 0)
    goto fail;
  if (add_methods(m, ctpy_ops_methods) < 0 || add_methods(m, ctpy_function_methods) < 0 ||
      add_methods(m, ctpy_sorting_methods) < 0 || add_methods(m, ctpy_linalg_methods) < 0 ||
      add_methods(m, ctpy_creation_methods) < 0 || add_methods(m, ctpy_autograd_methods) < 0 ||
      add_methods(m, ctpy_nn_methods) < 0 || ctpy_nn_init(m) < 0 || ctpy_optim_init(m) < 0 ||
      ctpy_data_init(m) < 0 || ctpy_stream_init(m) < 0)
    goto fail;
  if (add_methods(m, ctpy_io_methods) < 0) goto fail;
  if (PyModule_AddStringConstant(m, "__version__", ct_library_version()) < 0) goto fail;
  /* NumPy's operators defer to ours (np.float32(2) * t is a Tensor, not an ndarray) */
  if (PyDict_SetItemString(CtpyTensor_Type.tp_dict, "__array_ufunc__", Py_None) < 0) goto fail;
  PyType_Modified(&CtpyTensor_Type);
  ctpy_module = m; /* borrowed: the module lives as long as the interpreter */
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
