/* optim from Python: _C.Optimizer over ct_optimizer (SGD, Adam, AdamW) and
 * _C.LRScheduler over ct_lr_scheduler (StepLR, CosineAnnealingLR). */
#include "ctpy.h"

typedef struct {
  PyObject_HEAD ct_optimizer *opt;
} CtpyOptimizer;

typedef struct {
  PyObject_HEAD ct_lr_scheduler *s;
  PyObject *optimizer; /* the schedule borrows it: kept alive here */
} CtpyScheduler;

static PyTypeObject CtpyOptimizer_Type, CtpyScheduler_Type;

/* The parameters of an iterable of Tensors (borrowed handles; *keep holds
 * the list that owns them). Returns the count or -1. */
static int param_list(PyObject *params, ct_tensor ***out, PyObject **keep) {
  PyObject *seq = PySequence_List(params);
  if (!seq) return -1;
  Py_ssize_t n = PyList_GET_SIZE(seq);
  ct_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
  if (!ts) {
    Py_DECREF(seq);
    return PyErr_NoMemory(), -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *p = PyList_GET_ITEM(seq, i);
    if (!ctpy_is_tensor(p)) {
      PyErr_Format(PyExc_TypeError, "optimizer: parameter %zd is a %.100s, not a Tensor", i,
                   Py_TYPE(p)->tp_name);
      PyMem_Free(ts);
      Py_DECREF(seq);
      return -1;
    }
    ts[i] = ctpy_t(p);
  }
  *out = ts;
  *keep = seq;
  return (int)n;
}

CTPY_DEF_WRAP(wrap_optimizer, CtpyOptimizer, &CtpyOptimizer_Type, opt, ct_optimizer,
              ct_optimizer_free)

static PyObject *f_sgd(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *params;
  ct_sgd_opts o = {0};
  int nesterov = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "Od|dddp:SGD",
          CTPY_KW("params", "lr", "momentum", "dampening", "weight_decay", "nesterov"), &params,
          &o.lr, &o.momentum, &o.dampening, &o.weight_decay, &nesterov))
    return NULL;
  o.nesterov = nesterov;
  ct_tensor **ts;
  PyObject *keep;
  int n = param_list(params, &ts, &keep);
  if (n < 0) return NULL;
  ct_optimizer *opt = ct_sgd_new(ts, n, &o);
  PyMem_Free(ts);
  Py_DECREF(keep);
  return wrap_optimizer(opt);
}

/* adam/adamw(params, lr, beta1, beta2, eps, weight_decay, amsgrad): every
 * value as given (the Python classes hold torch's defaults) */
static PyObject *adam_common(PyObject *args, PyObject *kwargs, const char *fmt, bool decoupled) {
  PyObject *params;
  ct_adam_opts o = decoupled ? ct_adamw_defaults() : ct_adam_defaults();
  int amsgrad = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, fmt,
          CTPY_KW("params", "lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad"), &params,
          &o.lr, &o.beta1, &o.beta2, &o.eps, &o.weight_decay, &amsgrad))
    return NULL;
  o.amsgrad = amsgrad;
  ct_tensor **ts;
  PyObject *keep;
  int n = param_list(params, &ts, &keep);
  if (n < 0) return NULL;
  ct_optimizer *opt = decoupled ? ct_adamw_new(ts, n, &o) : ct_adam_new(ts, n, &o);
  PyMem_Free(ts);
  Py_DECREF(keep);
  return wrap_optimizer(opt);
}
CTPY_DEF_KWARGS(adam, adam_common, "O|dddddp:Adam", false)
CTPY_DEF_KWARGS(adamw, adam_common, "O|dddddp:AdamW", true)

static ct_optimizer *OPT(PyObject *self) { return ((CtpyOptimizer *)self)->opt; }

static void optimizer_dealloc(PyObject *self) {
  ct_optimizer_free(OPT(self));
  Py_TYPE(self)->tp_free(self);
}
static PyObject *opt_step(PyObject *self, PyObject *u) {
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_optimizer_step(OPT(self));
  Py_END_ALLOW_THREADS if (ctpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *opt_zero_grad(PyObject *self, PyObject *u) {
  ct_optimizer_zero_grad(OPT(self));
  Py_RETURN_NONE;
}
static PyObject *opt_get_lr(PyObject *self, void *c) {
  return PyFloat_FromDouble(ct_optimizer_get_lr(OPT(self)));
}
static int opt_set_lr(PyObject *self, PyObject *v, void *c) {
  double lr = v ? PyFloat_AsDouble(v) : -1;
  if (PyErr_Occurred()) return -1;
  if (!(lr >= 0)) return PyErr_SetString(PyExc_ValueError, "lr: a number >= 0"), -1;
  ct_optimizer_set_lr(OPT(self), lr);
  return 0;
}
static PyObject *opt_get_steps(PyObject *self, void *c) {
  return PyLong_FromLongLong(ct_optimizer_step_count(OPT(self)));
}
static PyObject *opt_state(PyObject *self, PyObject *u) {
  int n = ct_optimizer_state(OPT(self), NULL, NULL, 0);
  ct_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
  const char **names = PyMem_Calloc((size_t)n + 1, sizeof *names);
  PyObject *d = ts && names ? PyDict_New() : PyErr_NoMemory();
  if (d) {
    ct_optimizer_state(OPT(self), ts, names, n);
    for (int i = 0; i < n; i++) {
      PyObject *t = ctpy_wrap(ct_retain(ts[i]));
      if (!t || PyDict_SetItemString(d, names[i], t) < 0) {
        Py_XDECREF(t);
        Py_CLEAR(d);
        break;
      }
      Py_DECREF(t);
    }
  }
  PyMem_Free(ts);
  PyMem_Free(names);
  return d;
}

static PyMethodDef optimizer_methods[] = {
    {"step", opt_step, METH_NOARGS, "One update of every parameter that has a gradient."},
    {"zero_grad", opt_zero_grad, METH_NOARGS, "Clears the gradients (set to None)."},
    {"state", opt_state, METH_NOARGS, "The state tensors by name ('0.exp_avg', ...)."},
    {NULL},
};
static PyGetSetDef optimizer_getset[] = {
    {"lr", opt_get_lr, opt_set_lr, "the learning rate", NULL},
    {"steps", opt_get_steps, NULL, "steps taken", NULL},
    {NULL},
};
static PyTypeObject CtpyOptimizer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._C.Optimizer",
    .tp_basicsize = sizeof(CtpyOptimizer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An optimizer of the C library (use ctensor.optim).",
    .tp_dealloc = optimizer_dealloc,
    .tp_methods = optimizer_methods,
    .tp_getset = optimizer_getset,
};

/* ---- Schedules
 * -------------------------------------------------------------------------------------- */

CTPY_DEF_WRAP(new_scheduler, CtpyScheduler, &CtpyScheduler_Type, s, ct_lr_scheduler,
              ct_lr_scheduler_free)
static PyObject *wrap_scheduler(ct_lr_scheduler *s, PyObject *opt) {
  PyObject *o = new_scheduler(s);
  if (o) ((CtpyScheduler *)o)->optimizer = Py_NewRef(opt);
  return o;
}
static PyObject *f_step_lr(PyObject *m, PyObject *args) {
  PyObject *opt;
  long long step_size;
  double gamma = 0.1;
  if (!PyArg_ParseTuple(args, "O!L|d:StepLR", &CtpyOptimizer_Type, &opt, &step_size, &gamma))
    return NULL;
  return wrap_scheduler(ct_step_lr_new(OPT(opt), step_size, gamma), opt);
}
static PyObject *f_cosine_lr(PyObject *m, PyObject *args) {
  PyObject *opt;
  long long t_max;
  double eta_min = 0;
  if (!PyArg_ParseTuple(args, "O!L|d:CosineAnnealingLR", &CtpyOptimizer_Type, &opt, &t_max,
                        &eta_min))
    return NULL;
  return wrap_scheduler(ct_cosine_lr_new(OPT(opt), t_max, eta_min), opt);
}
static void scheduler_dealloc(PyObject *self) {
  CtpyScheduler *s = (CtpyScheduler *)self;
  ct_lr_scheduler_free(s->s); /* before the optimizer it borrows */
  Py_DECREF(s->optimizer);
  Py_TYPE(self)->tp_free(self);
}
static PyObject *sched_step(PyObject *self, PyObject *u) {
  ct_lr_scheduler_step(((CtpyScheduler *)self)->s);
  Py_RETURN_NONE;
}
static PyObject *sched_get_epoch(PyObject *self, void *c) {
  return PyLong_FromLongLong(ct_lr_scheduler_epoch(((CtpyScheduler *)self)->s));
}
static int sched_set_epoch(PyObject *self, PyObject *v, void *c) {
  long long e = v ? PyLong_AsLongLong(v) : -1;
  if (PyErr_Occurred()) return -1;
  ct_lr_scheduler_set_epoch(((CtpyScheduler *)self)->s, e);
  return 0;
}
static PyMethodDef scheduler_methods[] = {{"step", sched_step, METH_NOARGS, "Advances one epoch."},
                                          {NULL}};
static PyGetSetDef scheduler_getset[] = {
    {"epoch", sched_get_epoch, sched_set_epoch, "the epoch", NULL}, {NULL}};
static PyTypeObject CtpyScheduler_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._C.LRScheduler",
    .tp_basicsize = sizeof(CtpyScheduler),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A learning-rate schedule of the C library (use ctensor.optim.lr_scheduler).",
    .tp_dealloc = scheduler_dealloc,
    .tp_methods = scheduler_methods,
    .tp_getset = scheduler_getset,
};

static PyMethodDef optim_functions[] = {
    {"sgd", CTPY_KWARGS(f_sgd), NULL},
    {"adam", CTPY_KWARGS(f_adam), NULL},
    {"adamw", CTPY_KWARGS(f_adamw), NULL},
    {"step_lr", f_step_lr, METH_VARARGS, NULL},
    {"cosine_lr", f_cosine_lr, METH_VARARGS, NULL},
    {NULL},
};

int ctpy_optim_init(PyObject *module) {
  if (PyType_Ready(&CtpyOptimizer_Type) < 0 || PyType_Ready(&CtpyScheduler_Type) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Optimizer", (PyObject *)&CtpyOptimizer_Type) < 0) return -1;
  return PyModule_AddFunctions(module, optim_functions);
}
