/* Autograd from Python: grad mode (no_grad regions), backward of several
 * roots, and the re-wrapping of a tensor handle as a subclass instance
 * (nn.Parameter objects over a module's own parameters). */
#include "ctpy.h"

static PyObject *f_no_grad_begin(PyObject *m, PyObject *u) {
  ct_no_grad_begin();
  Py_RETURN_NONE;
}
static PyObject *f_no_grad_end(PyObject *m, PyObject *u) {
  ct_no_grad_end();
  Py_RETURN_NONE;
}
static PyObject *f_is_grad_enabled(PyObject *m, PyObject *u) {
  return PyBool_FromLong(ct_is_grad_enabled());
}

PyObject *ctpy_backward(PyObject *root, PyObject *grad, bool retain_graph) {
  ct_tensor *owned = NULL;
  const ct_tensor *g = NULL;
  if (grad != Py_None && !(g = ctpy_operand(grad, ct_device_of(ctpy_t(root)), &owned))) return NULL;
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st =
      ct_backward(ctpy_t(root), g, &(ct_backward_opts){.retain_graph = retain_graph});
  Py_END_ALLOW_THREADS ct_free(owned);
  if (ctpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

/* backward(tensor, gradient=None, retain_graph=False) */
static PyObject *f_backward(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *root, *grad = Py_None;
  int retain = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|Op:backward",
                                   CTPY_KW("tensor", "gradient", "retain_graph"), &CtpyTensor_Type,
                                   &root, &grad, &retain))
    return NULL;
  return ctpy_backward(root, grad, retain);
}

/* _rewrap(tensor, cls): an instance of cls (a Tensor subclass) holding the
 * same handle, so that autograd state and gradients are shared. */
static PyObject *f_rewrap(PyObject *m, PyObject *args) {
  PyObject *t;
  PyTypeObject *cls;
  if (!PyArg_ParseTuple(args, "O!O!:_rewrap", &CtpyTensor_Type, &t, &PyType_Type, &cls))
    return NULL;
  if (!PyType_IsSubtype(cls, &CtpyTensor_Type))
    return PyErr_Format(PyExc_TypeError, "_rewrap: not a Tensor subclass");
  PyObject *o = cls->tp_alloc(cls, 0);
  if (!o) return NULL;
  ((CtpyTensor *)o)->t = ct_retain(ctpy_t(t));
  return o;
}

/* _same(a, b): whether two Tensors hold the same handle */
static PyObject *f_same(PyObject *m, PyObject *args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "O!O!:_same", &CtpyTensor_Type, &a, &CtpyTensor_Type, &b))
    return NULL;
  return PyBool_FromLong(ctpy_t(a) == ctpy_t(b));
}

static PyObject *f_same_storage(PyObject *m, PyObject *args) {
  PyObject *a, *b;
  if (!PyArg_ParseTuple(args, "O!O!:same_storage", &CtpyTensor_Type, &a, &CtpyTensor_Type, &b))
    return NULL;
  return PyBool_FromLong(ct_same_storage(ctpy_t(a), ctpy_t(b)));
}

PyMethodDef ctpy_autograd_methods[] = {
    {"_no_grad_begin", f_no_grad_begin, METH_NOARGS, NULL},
    {"_no_grad_end", f_no_grad_end, METH_NOARGS, NULL},
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS,
     "Whether ops record gradients on this thread."},
    {"backward", CTPY_KWARGS(f_backward), "backward(tensor, gradient=None, retain_graph=False)"},
    {"_rewrap", f_rewrap, METH_VARARGS, NULL},
    {"_same", f_same, METH_VARARGS, NULL},
    {"same_storage", f_same_storage, METH_VARARGS,
     "same_storage(a, b): whether two tensors share memory"},
    {NULL},
};
