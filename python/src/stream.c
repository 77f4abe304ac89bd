/* ctensor.cuda.Stream: a ct_stream from Python, as cupy.cuda.Stream / torch.cuda.Stream.
 * `with stream:` makes it the current stream of its device on this thread (new work is
 * queued there, and from_dlpack asks producers to order their work before it); .ptr is the
 * native handle, the integer DLPack's stream arguments take. */
#include "ctpy.h"

typedef struct {
  PyObject_HEAD ct_stream *s;
  ct_device device;
  ct_stream *saved[16]; /* the current streams `with` blocks replaced, innermost last */
  int depth;
} CtpyStream;

static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *dev = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:Stream", CTPY_KW("device"), &dev)) return NULL;
  ct_device d;
  if (ctpy_parse_device(dev, &d) < 0) return NULL;
  ct_stream *s = ct_stream_new(d);
  if (!s) return ctpy_raise();
  CtpyStream *o = (CtpyStream *)type->tp_alloc(type, 0);
  if (!o) {
    ct_stream_free(s);
    return NULL;
  }
  o->s = s;
  o->device = d;
  return (PyObject *)o;
}

static void stream_dealloc(PyObject *self) {
  CtpyStream *o = (CtpyStream *)self;
  ct_stream_free(o->s); /* waits for its work; the default stream becomes current if it was */
  Py_TYPE(self)->tp_free(self);
}

static PyObject *stream_enter(PyObject *self, PyObject *unused) {
  CtpyStream *o = (CtpyStream *)self;
  if (o->depth == (int)(sizeof o->saved / sizeof o->saved[0]))
    return PyErr_Format(PyExc_RuntimeError, "Stream: `with` blocks nested too deeply");
  ct_stream *prev = ct_stream_current(o->device);
  if (ctpy_check(ct_stream_set_current(o->device, o->s)) < 0) return NULL;
  o->saved[o->depth++] = prev;
  return Py_NewRef(self);
}

static PyObject *stream_exit(PyObject *self, PyObject *args) {
  CtpyStream *o = (CtpyStream *)self;
  if (o->depth > 0 && ctpy_check(ct_stream_set_current(o->device, o->saved[--o->depth])) < 0)
    return NULL;
  Py_RETURN_FALSE;
}

static PyObject *stream_synchronize(PyObject *self, PyObject *unused) {
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_stream_synchronize(((CtpyStream *)self)->s);
  Py_END_ALLOW_THREADS if (ctpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *stream_get_ptr(PyObject *self, void *c) {
  return PyLong_FromVoidPtr(ct_stream_native_handle(((CtpyStream *)self)->s));
}
static PyObject *stream_get_device(PyObject *self, void *c) {
  return ctpy_device_object(((CtpyStream *)self)->device);
}

static PyMethodDef stream_methods[] = {
    {"__enter__", stream_enter, METH_NOARGS, "Makes the stream current on this thread."},
    {"__exit__", stream_exit, METH_VARARGS, "Restores the stream that was current."},
    {"synchronize", stream_synchronize, METH_NOARGS, "Waits for the work queued on the stream."},
    {NULL},
};
static PyGetSetDef stream_getset[] = {
    {"ptr", stream_get_ptr, NULL, "the native handle (cudaStream_t) as an int; 0 on the CPU", NULL},
    {"device", stream_get_device, NULL, "the stream's device", NULL},
    {NULL},
};

static PyTypeObject CtpyStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor.cuda.Stream",
    .tp_basicsize = sizeof(CtpyStream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Stream(device=None): an ordered queue of GPU work; `with stream:` makes it current.",
    .tp_new = stream_new,
    .tp_dealloc = stream_dealloc,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

int ctpy_stream_init(PyObject *module) {
  if (PyType_Ready(&CtpyStream_Type) < 0) return -1;
  return PyModule_AddObjectRef(module, "Stream", (PyObject *)&CtpyStream_Type);
}
