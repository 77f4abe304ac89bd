/* The Python DLPack protocol over ctensor/dlpack.h: Tensor.__dlpack__ and
 * __dlpack_device__ (producer), from_dlpack (consumer), with the capsule
 * rules of the protocol: a capsule named "dltensor_versioned" (DLPack 1.x,
 * when the consumer asks for it with max_version) or "dltensor" (legacy);
 * a consumer renames it "used_..." once it owns the tensor, and a capsule
 * never consumed calls the deleter when it is collected. */
#include "ctpy.h"

static const char VERSIONED[] = "dltensor_versioned", LEGACY[] = "dltensor";
static const char USED_VERSIONED[] = "used_dltensor_versioned", USED_LEGACY[] = "used_dltensor";

static void capsule_destructor(PyObject *cap) {
  if (PyCapsule_IsValid(cap, VERSIONED)) {
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, VERSIONED);
    if (m->deleter) m->deleter(m);
  } else if (PyCapsule_IsValid(cap, LEGACY)) {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, LEGACY);
    if (m->deleter) m->deleter(m);
  }
}

/* A pair of ints (a tuple of 2) as *a, *b; else TypeError naming what (-1).
 * PyArg_ParseTuple alone raises SystemError for a non-tuple. */
static int int_pair(PyObject *o, const char *what, int *a, int *b) {
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 2 && PyArg_ParseTuple(o, "ii", a, b)) return 0;
  PyErr_Clear();
  PyErr_Format(PyExc_TypeError, "%s must be a tuple of 2 ints, got %.100R", what, o);
  return -1;
}

/* (device type, device id) of an object's __dlpack_device__, as ints. */
static int dlpack_device_of(PyObject *obj, int *type, int *id) {
  PyObject *r = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!r) return -1;
  int st = int_pair(r, "__dlpack_device__'s (device_type, device_id)", type, id);
  Py_DECREF(r);
  return st;
}

PyObject *ctpy_tensor_dlpack_device(PyObject *self, PyObject *unused) {
  DLDevice d = ct_dlpack_device(ct_device_of(ctpy_t(self)));
  return Py_BuildValue("(ii)", (int)d.device_type, d.device_id);
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
PyObject *ctpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__",
                                   CTPY_KW("stream", "max_version", "dl_device", "copy"), &stream,
                                   &max_version, &dl_device, &copy))
    return NULL;
  ct_tensor *t = ctpy_t(self);
  if (ct_requires_grad(t))
    return ctpy_raise_code(CT_ERR_STATE,
                           "__dlpack__: the tensor requires grad; export tensor.detach()");
  ct_device dev = ct_device_of(t);
  ct_dlpack_opts opts = {0};
  if (stream != Py_None) {
    long long s = PyLong_AsLongLong(stream);
    if (s == -1 && PyErr_Occurred()) return NULL;
    if (dev.type == CT_DEVICE_CPU && s != -1)
      return PyErr_Format(PyExc_BufferError,
                          "__dlpack__: stream must be None for a CPU tensor (got %lld)", s);
    if (dev.type == CT_DEVICE_CUDA && s == 0)
      return PyErr_Format(PyExc_ValueError,
                          "__dlpack__: stream 0 is ambiguous for CUDA; use 1 (legacy default) "
                          "or 2 (per-thread default)");
    opts.stream = (intptr_t)s;
  }
  int copy_flag = copy == Py_None ? -1 : PyObject_IsTrue(copy);
  if (copy_flag == -1 && PyErr_Occurred()) return NULL;
  /* a consumer on another device: the CPU, by a copy */
  ct_tensor *moved = NULL;
  if (dl_device != Py_None) {
    int type, id;
    if (int_pair(dl_device, "__dlpack__: dl_device", &type, &id) < 0) return NULL;
    DLDevice mine = ct_dlpack_device(dev);
    if (type != (int)mine.device_type || id != mine.device_id) {
      if (type != kDLCPU || copy_flag == 0)
        return PyErr_Format(PyExc_BufferError,
                            "__dlpack__: cannot export a %s tensor to DLPack device (%d, %d)%s",
                            ct_device_name(dev), type, id, copy_flag == 0 ? " without a copy" : "");
      if (!(moved = ct_to(t, ct_cpu(), NULL))) return ctpy_raise();
      t = moved;
      opts.stream = -1;
    }
  }
  opts.copy = copy_flag == 1 && !moved;
  bool versioned = false;
  if (max_version != Py_None) {
    int major, minor;
    if (int_pair(max_version, "__dlpack__: max_version", &major, &minor) < 0)
      return ct_free(moved), NULL;
    versioned = major >= CT_DLPACK_MAJOR_VERSION;
  }
  PyObject *cap;
  if (versioned) {
    DLManagedTensorVersioned *m = ct_to_dlpack_versioned(t, &opts);
    ct_free(moved);
    if (!m) return ctpy_raise();
    if (moved) m->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    if (!(cap = PyCapsule_New(m, VERSIONED, capsule_destructor))) m->deleter(m);
  } else {
    DLManagedTensor *m = ct_to_dlpack(t, &opts);
    ct_free(moved);
    if (!m) return ctpy_raise();
    if (!(cap = PyCapsule_New(m, LEGACY, capsule_destructor))) m->deleter(m);
  }
  return cap;
}

/* Takes over the tensor of an unconsumed capsule. */
static ct_tensor *import_capsule(PyObject *cap) {
  ct_tensor *t;
  if (PyCapsule_IsValid(cap, VERSIONED)) {
    t = ct_from_dlpack_versioned(PyCapsule_GetPointer(cap, VERSIONED));
    if (t && PyCapsule_SetName(cap, USED_VERSIONED) < 0) return ct_free(t), NULL;
  } else if (PyCapsule_IsValid(cap, LEGACY)) {
    t = ct_from_dlpack(PyCapsule_GetPointer(cap, LEGACY));
    if (t && PyCapsule_SetName(cap, USED_LEGACY) < 0) return ct_free(t), NULL;
  } else {
    const char *name = PyCapsule_GetName(cap);
    PyErr_Clear();
    PyErr_Format(PyExc_BufferError,
                 "from_dlpack: the capsule (\"%s\") is not an unconsumed DLPack tensor",
                 name ? name : "");
    return NULL;
  }
  return t ? t : (ctpy_raise(), NULL);
}

/* Asks obj for a capsule on the stream ctensor will use, as the protocol
 * says; producers that predate max_version (NumPy < 1.25, PyTorch < 2.3) get
 * the older call. A copy, when asked for, is made here after the import. */
static PyObject *request_capsule(PyObject *obj) {
  int type, id;
  if (dlpack_device_of(obj, &type, &id) < 0) return NULL;
  PyObject *stream = Py_None;
  if (type == kDLCUDA || type == kDLCUDAManaged) {
    void *h = ct_stream_native_handle(ct_stream_current(ct_cuda(id)));
    stream = PyLong_FromVoidPtr(h ? h : (void *)1); /* 1: the legacy default stream */
    if (!stream) return NULL;
  } else {
    Py_INCREF(stream);
  }
  PyObject *kwargs = Py_BuildValue("{s:O,s:(ii)}", "stream", stream, "max_version",
                                   CT_DLPACK_MAJOR_VERSION, CT_DLPACK_MINOR_VERSION);
  PyObject *method = PyObject_GetAttrString(obj, "__dlpack__"), *cap = NULL,
           *empty = PyTuple_New(0);
  if (kwargs && method && empty) {
    cap = PyObject_Call(method, empty, kwargs);
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) { /* an older producer */
      PyErr_Clear();
      PyObject *old = Py_BuildValue("{s:O}", "stream", stream);
      if (old) cap = PyObject_Call(method, empty, old);
      Py_XDECREF(old);
    }
  }
  Py_XDECREF(empty);
  Py_XDECREF(method);
  Py_XDECREF(kwargs);
  Py_DECREF(stream);
  return cap;
}

ct_tensor *ctpy_import_dlpack(PyObject *obj) {
  if (PyCapsule_CheckExact(obj)) return import_capsule(obj);
  PyObject *cap = request_capsule(obj);
  if (!cap) return NULL;
  ct_tensor *t =
      PyCapsule_CheckExact(cap)
          ? import_capsule(cap)
          : (PyErr_SetString(PyExc_TypeError, "__dlpack__ did not return a capsule"), NULL);
  Py_DECREF(cap);
  return t;
}

PyObject *ctpy_from_dlpack(PyObject *module, PyObject *args, PyObject *kwargs) {
  PyObject *x, *device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OO:from_dlpack",
                                   CTPY_KW("x", "device", "copy"), &x, &device, &copy))
    return NULL;
  int copy_flag = copy == Py_None ? -1 : PyObject_IsTrue(copy);
  if (copy_flag == -1 && PyErr_Occurred()) return NULL;
  ct_tensor *t;
  if (PyCapsule_CheckExact(x)) {
    t = import_capsule(x);
  } else {
    if (!PyObject_HasAttrString(x, "__dlpack__"))
      return PyErr_Format(PyExc_TypeError, "from_dlpack: %.100s has no __dlpack__",
                          Py_TYPE(x)->tp_name);
    PyObject *cap = request_capsule(x);
    if (!cap) return NULL;
    t = PyCapsule_CheckExact(cap)
            ? import_capsule(cap)
            : (PyErr_SetString(PyExc_TypeError, "from_dlpack: __dlpack__ did not return a capsule"),
               NULL);
    Py_DECREF(cap);
  }
  if (!t) return NULL;
  bool copied = false;
  if (device != Py_None) {
    ct_device d;
    if (ctpy_parse_device(device, &d) < 0) return ct_free(t), NULL;
    if (!ct_device_equal(d, ct_device_of(t))) {
      if (copy_flag == 0) {
        ct_free(t);
        return ctpy_raise_code(CT_ERR_ARG,
                               "from_dlpack: copy=False, but the tensor is on another device");
      }
      ct_tensor *m = ct_to(t, d, NULL);
      ct_free(t);
      if (!(t = m)) return ctpy_raise();
      copied = true;
    }
  }
  if (copy_flag == 1 && !copied) {
    ct_tensor *c = ct_clone(t);
    ct_free(t);
    t = c;
  }
  return ctpy_wrap(t);
}
