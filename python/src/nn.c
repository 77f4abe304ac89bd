/* nn from Python: the C library's built-in modules as _C.CModule objects
 * (Linear, Conv2d, pools, norms, activations...; their parameters keep
 * their handles when moved between devices), and the functional layers and
 * losses. The Python classes of ctensor.nn are thin wrappers over these. */
#include "ctpy.h"

typedef struct {
  PyObject_HEAD ct_module *m;
} CtpyModule;

static PyTypeObject CtpyModule_Type;

CTPY_DEF_WRAP(wrap_module, CtpyModule, &CtpyModule_Type, m, ct_module, ct_module_free)

static void module_dealloc(PyObject *self) {
  ct_module_free(((CtpyModule *)self)->m);
  Py_TYPE(self)->tp_free(self);
}

static ct_module *M(PyObject *self) { return ((CtpyModule *)self)->m; }

static PyObject *module_forward(PyObject *self, PyObject *arg) {
  ct_tensor *owned, *r;
  const ct_tensor *x = ctpy_operand(arg, ctpy_default_device(), &owned);
  if (!x) return NULL;
  CTPY_CALL(r, ct_numel(x) >= CTPY_NOGIL_NUMEL, ct_module_forward(M(self), x));
  ct_free(owned);
  return ctpy_wrap(r);
}

/* [(name, Tensor)] of the parameters, or of parameters and buffers (state) */
static PyObject *named(PyObject *self, bool state) {
  int n = state ? ct_module_state(M(self), NULL, NULL, 0)
                : ct_module_parameters(M(self), NULL, NULL, 0);
  ct_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
  const char **names = PyMem_Calloc((size_t)n + 1, sizeof *names);
  PyObject *list = ts && names ? PyList_New(n) : PyErr_NoMemory();
  if (list) {
    if (state)
      ct_module_state(M(self), ts, names, n);
    else
      ct_module_parameters(M(self), ts, names, n);
    for (int i = 0; i < n; i++) {
      PyObject *item = Py_BuildValue("(sN)", names[i], ctpy_wrap(ct_retain(ts[i])));
      if (!item) {
        Py_CLEAR(list);
        break;
      }
      PyList_SET_ITEM(list, i, item);
    }
  }
  PyMem_Free(ts);
  PyMem_Free(names);
  return list;
}
static PyObject *module_parameters(PyObject *self, PyObject *u) { return named(self, false); }
static PyObject *module_state(PyObject *self, PyObject *u) { return named(self, true); }

static PyObject *module_to(PyObject *self, PyObject *arg) {
  ct_dtype d;
  bool given;
  if (ctpy_parse_dtype(arg, &d, &given) == 0 && given) {
    if (ctpy_check(ct_module_to_dtype(M(self), d)) < 0) return NULL;
    Py_RETURN_NONE;
  }
  PyErr_Clear();
  ct_device dev;
  if (ctpy_parse_device(arg, &dev) < 0 || ctpy_check(ct_module_to(M(self), dev)) < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *module_train(PyObject *self, PyObject *arg) {
  int b = PyObject_IsTrue(arg);
  if (b < 0) return NULL;
  ct_module_train(M(self), b);
  Py_RETURN_NONE;
}
static PyObject *module_is_training(PyObject *self, PyObject *u) {
  return PyBool_FromLong(ct_module_is_training(M(self)));
}
static PyObject *module_zero_grad(PyObject *self, PyObject *u) {
  ct_module_zero_grad(M(self));
  Py_RETURN_NONE;
}
static PyObject *module_type_name(PyObject *self, PyObject *u) {
  return PyUnicode_FromString(ct_module_type_name(M(self)));
}

static PyMethodDef module_methods[] = {
    {"forward", module_forward, METH_O, "forward(x)"},
    {"parameters", module_parameters, METH_NOARGS,
     "[(name, tensor)] of the parameters, PyTorch's names"},
    {"state", module_state, METH_NOARGS,
     "[(name, tensor)] of the parameters and buffers (state_dict order)"},
    {"to", module_to, METH_O,
     "to(device or dtype): moves the parameters and buffers, keeping their handles"},
    {"train", module_train, METH_O, "train(mode): training or evaluation mode"},
    {"is_training", module_is_training, METH_NOARGS, NULL},
    {"zero_grad", module_zero_grad, METH_NOARGS, "Clears the parameters' gradients."},
    {"type_name", module_type_name, METH_NOARGS, NULL},
    {NULL},
};

static PyTypeObject CtpyModule_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._C.CModule",
    .tp_basicsize = sizeof(CtpyModule),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A built-in module of the C library (use ctensor.nn).",
    .tp_dealloc = module_dealloc,
    .tp_methods = module_methods,
};

/* ---- Constructors
 * -------------------------------------------------------------------------------- */

static int module_opts(PyObject *dtype, PyObject *device, ct_module_opts *o) {
  bool given;
  memset(o, 0, sizeof *o);
  if (ctpy_parse_dtype(dtype, &o->dtype, &given) < 0) return -1;
  return ctpy_parse_device(device, &o->device);
}

static PyObject *f_linear_module(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long in, out;
  int bias = 1;
  PyObject *dtype = Py_None, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "LL|p$OO:Linear",
          CTPY_KW("in_features", "out_features", "bias", "dtype", "device"), &in, &out, &bias,
          &dtype, &device))
    return NULL;
  ct_module_opts o;
  if (module_opts(dtype, device, &o) < 0) return NULL;
  return wrap_module(ct_linear_new(in, out, bias, &o));
}

/* a pair argument: an int, or a tuple of two */
static int pair(PyObject *o, int64_t out[2], const char *what) {
  if (PyTuple_Check(o) || PyList_Check(o)) {
    int64_t v[CT_MAX_DIMS];
    int n = ctpy_parse_shape(o, v, what);
    if (n != 2)
      return n < 0 ? -1
                   : (PyErr_Format(PyExc_ValueError, "%s: an int or a pair of ints", what), -1);
    out[0] = v[0], out[1] = v[1];
    return 0;
  }
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) return -1;
  out[0] = out[1] = v;
  return 0;
}

static PyObject *f_conv2d_module(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long in, out;
  PyObject *k, *stride = NULL, *padding = NULL, *dilation = NULL, *dtype = Py_None,
               *device = Py_None;
  long long groups = 1;
  int bias = 1;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "LLO|OOOLp$OO:Conv2d",
          CTPY_KW("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                  "groups", "bias", "dtype", "device"),
          &in, &out, &k, &stride, &padding, &dilation, &groups, &bias, &dtype, &device))
    return NULL;
  int64_t ks[2];
  ct_conv2d_opts c = {.groups = groups};
  if (pair(k, ks, "kernel_size") < 0 || (stride && pair(stride, c.stride, "stride") < 0) ||
      (padding && pair(padding, c.padding, "padding") < 0) ||
      (dilation && pair(dilation, c.dilation, "dilation") < 0))
    return NULL;
  if (ks[0] != ks[1])
    return ctpy_raise_code(CT_ERR_ARG, "Conv2d: square kernels only (got %lld x %lld)",
                           (long long)ks[0], (long long)ks[1]);
  ct_module_opts o;
  if (module_opts(dtype, device, &o) < 0) return NULL;
  return wrap_module(ct_conv2d_new(in, out, ks[0], &c, bias, &o));
}

static int pool_opts(PyObject *args, PyObject *kwargs, const char *fmt, ct_pool2d_opts *p) {
  PyObject *k, *stride = Py_None, *padding = NULL;
  int ceil_mode = 0, count_include_pad = 1;
  memset(p, 0, sizeof *p);
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, fmt,
          CTPY_KW("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"), &k,
          &stride, &padding, &ceil_mode, &count_include_pad))
    return -1;
  if (pair(k, p->kernel, "kernel_size") < 0 ||
      (stride != Py_None && pair(stride, p->stride, "stride") < 0) ||
      (padding && pair(padding, p->padding, "padding") < 0))
    return -1;
  p->ceil_mode = ceil_mode;
  p->count_include_pad_false = !count_include_pad;
  return 0;
}
static PyObject *f_max_pool2d_module(PyObject *m, PyObject *a, PyObject *k) {
  ct_pool2d_opts p;
  if (pool_opts(a, k, "O|OOpp:MaxPool2d", &p) < 0) return NULL;
  return wrap_module(ct_max_pool2d_new(&p));
}
static PyObject *f_avg_pool2d_module(PyObject *m, PyObject *a, PyObject *k) {
  ct_pool2d_opts p;
  if (pool_opts(a, k, "O|OOpp:AvgPool2d", &p) < 0) return NULL;
  return wrap_module(ct_avg_pool2d_new(&p));
}

#define DEF_ACT(name, ctor) \
  static PyObject *f_##name##_module(PyObject *m, PyObject *u) { return wrap_module(ctor()); }
DEF_ACT(relu, ct_relu_new)
DEF_ACT(gelu, ct_gelu_new)
DEF_ACT(sigmoid, ct_sigmoid_new)
DEF_ACT(tanh, ct_tanh_new)
DEF_ACT(silu, ct_silu_new)

static PyObject *f_dropout_module(PyObject *m, PyObject *args) {
  double p = 0.5;
  if (!PyArg_ParseTuple(args, "|d:Dropout", &p)) return NULL;
  return wrap_module(ct_dropout_new(p));
}
static PyObject *f_batch_norm2d_module(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long n;
  double eps = 1e-5, momentum = 0.1;
  PyObject *dtype = Py_None, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "L|dd$OO:BatchNorm2d",
                                   CTPY_KW("num_features", "eps", "momentum", "dtype", "device"),
                                   &n, &eps, &momentum, &dtype, &device))
    return NULL;
  ct_module_opts o;
  if (module_opts(dtype, device, &o) < 0) return NULL;
  return wrap_module(ct_batch_norm2d_new(n, eps, momentum, &o));
}
static PyObject *f_layer_norm_module(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *so, *dtype = Py_None, *device = Py_None;
  double eps = 1e-5;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|d$OO:LayerNorm",
                                   CTPY_KW("normalized_shape", "eps", "dtype", "device"), &so, &eps,
                                   &dtype, &device))
    return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, "LayerNorm");
  ct_module_opts o;
  if (n < 0 || module_opts(dtype, device, &o) < 0) return NULL;
  return wrap_module(ct_layer_norm_new(shape, n, eps, &o));
}
static PyObject *f_flatten_module(PyObject *m, PyObject *args) {
  int start = 1, end = -1;
  if (!PyArg_ParseTuple(args, "|ii:Flatten", &start, &end)) return NULL;
  return wrap_module(ct_flatten_new(start, end));
}
static PyObject *f_embedding_module(PyObject *m, PyObject *args, PyObject *kwargs) {
  long long num, dim;
  PyObject *dtype = Py_None, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LL|$OO:Embedding",
                                   CTPY_KW("num_embeddings", "embedding_dim", "dtype", "device"),
                                   &num, &dim, &dtype, &device))
    return NULL;
  ct_module_opts o;
  if (module_opts(dtype, device, &o) < 0) return NULL;
  return wrap_module(ct_embedding_new(num, dim, &o));
}

/* ---- Functional layers
 * ----------------------------------------------------------------------------- */

/* An optional tensor argument (None -> NULL), on `device`. */
static int optional_tensor(PyObject *o, ct_device device, const ct_tensor **out,
                           ct_tensor **owned) {
  *owned = NULL;
  *out = NULL;
  if (!o || o == Py_None) return 0;
  return (*out = ctpy_operand(o, device, owned)) ? 0 : -1;
}

static PyObject *f_linear(PyObject *m, PyObject *args) {
  PyObject *xo, *wo, *bo = Py_None;
  if (!PyArg_ParseTuple(args, "OO|O:linear", &xo, &wo, &bo)) return NULL;
  ct_tensor *ox, *ow, *ob, *r;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &ox), *w = NULL, *b = NULL;
  if (!x) return NULL;
  if (optional_tensor(wo, ct_device_of(x), &w, &ow) < 0) return ct_free(ox), NULL;
  if (optional_tensor(bo, ct_device_of(x), &b, &ob) < 0) return ct_free(ox), ct_free(ow), NULL;
  CTPY_CALL(r, ct_numel(x) >= CTPY_NOGIL_NUMEL, ct_linear(x, w, b));
  ct_free(ox);
  ct_free(ow);
  ct_free(ob);
  return ctpy_wrap(r);
}

static PyObject *f_conv2d(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *wo, *bo = Py_None, *stride = NULL, *padding = NULL, *dilation = NULL;
  long long groups = 1;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "OO|OOOOL:conv2d",
          CTPY_KW("input", "weight", "bias", "stride", "padding", "dilation", "groups"), &xo, &wo,
          &bo, &stride, &padding, &dilation, &groups))
    return NULL;
  ct_conv2d_opts c = {.groups = groups};
  if ((stride && pair(stride, c.stride, "stride") < 0) ||
      (padding && pair(padding, c.padding, "padding") < 0) ||
      (dilation && pair(dilation, c.dilation, "dilation") < 0))
    return NULL;
  ct_tensor *ox, *ow, *ob, *r;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &ox), *w = NULL, *b = NULL;
  if (!x) return NULL;
  if (optional_tensor(wo, ct_device_of(x), &w, &ow) < 0) return ct_free(ox), NULL;
  if (optional_tensor(bo, ct_device_of(x), &b, &ob) < 0) return ct_free(ox), ct_free(ow), NULL;
  CTPY_CALL(r, ct_numel(x) >= CTPY_NOGIL_NUMEL, ct_conv2d(x, w, b, &c));
  ct_free(ox);
  ct_free(ow);
  ct_free(ob);
  return ctpy_wrap(r);
}

static PyObject *pool(PyObject *args, PyObject *kwargs, const char *fmt,
                      ct_tensor *(*fn)(const ct_tensor *, const ct_pool2d_opts *)) {
  /* the input first, then the pool options */
  if (PyTuple_GET_SIZE(args) < 1) return PyErr_Format(PyExc_TypeError, "a pooling needs an input");
  PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
  if (!rest) return NULL;
  ct_pool2d_opts p;
  int rc = pool_opts(rest, kwargs, fmt, &p);
  Py_DECREF(rest);
  if (rc < 0) return NULL;
  ct_tensor *owned, *r;
  const ct_tensor *x = ctpy_operand(PyTuple_GET_ITEM(args, 0), ctpy_default_device(), &owned);
  if (!x) return NULL;
  CTPY_CALL(r, ct_numel(x) >= CTPY_NOGIL_NUMEL, fn(x, &p));
  ct_free(owned);
  return ctpy_wrap(r);
}
CTPY_DEF_KWARGS(max_pool2d, pool, "O|OOpp:max_pool2d", ct_max_pool2d)
CTPY_DEF_KWARGS(avg_pool2d, pool, "O|OOpp:avg_pool2d", ct_avg_pool2d)

static PyObject *f_batch_norm(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *rmo = Py_None, *rvo = Py_None, *wo = Py_None, *bo = Py_None;
  int training = 0;
  double momentum = 0.1, eps = 1e-5;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOpdd:batch_norm",
                                   CTPY_KW("input", "running_mean", "running_var", "weight", "bias",
                                           "training", "momentum", "eps"),
                                   &xo, &rmo, &rvo, &wo, &bo, &training, &momentum, &eps))
    return NULL;
  if ((rmo != Py_None && !ctpy_is_tensor(rmo)) || (rvo != Py_None && !ctpy_is_tensor(rvo)))
    return PyErr_Format(PyExc_TypeError,
                        "batch_norm: running statistics must be Tensors (updated in place)");
  ct_tensor *ox, *ow, *ob, *r = NULL;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &ox), *w = NULL, *b = NULL;
  if (!x) return NULL;
  if (optional_tensor(wo, ct_device_of(x), &w, &ow) == 0 &&
      optional_tensor(bo, ct_device_of(x), &b, &ob) == 0) {
    r = ct_batch_norm(x, rmo == Py_None ? NULL : ctpy_t(rmo), rvo == Py_None ? NULL : ctpy_t(rvo),
                      w, b, training, momentum, eps);
    ct_free(ob);
  }
  ct_free(ox);
  ct_free(ow);
  return ctpy_wrap_unless_error(r);
}

static PyObject *f_layer_norm(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo, *so, *wo = Py_None, *bo = Py_None;
  double eps = 1e-5;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OOd:layer_norm",
                                   CTPY_KW("input", "normalized_shape", "weight", "bias", "eps"),
                                   &xo, &so, &wo, &bo, &eps))
    return NULL;
  int64_t shape[CT_MAX_DIMS];
  int n = ctpy_parse_shape(so, shape, "layer_norm");
  if (n < 0) return NULL;
  ct_tensor *ox, *ow = NULL, *ob = NULL, *r = NULL;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &ox), *w = NULL, *b = NULL;
  if (!x) return NULL;
  if (optional_tensor(wo, ct_device_of(x), &w, &ow) == 0 &&
      optional_tensor(bo, ct_device_of(x), &b, &ob) == 0)
    r = ct_layer_norm(x, n, w, b, eps);
  ct_free(ox);
  ct_free(ow);
  ct_free(ob);
  return ctpy_wrap_unless_error(r);
}

static PyObject *f_embedding(PyObject *m, PyObject *args) {
  PyObject *io, *wo;
  if (!PyArg_ParseTuple(args, "OO:embedding", &io, &wo)) return NULL;
  ct_tensor *oi, *ow;
  const ct_tensor *w = ctpy_operand(wo, ctpy_default_device(), &ow);
  if (!w) return NULL;
  const ct_tensor *i = ctpy_operand(io, ct_device_of(w), &oi);
  ct_tensor *r = i ? ct_embedding(i, w) : NULL;
  ct_free(oi);
  ct_free(ow);
  if (!i) return NULL;
  return ctpy_wrap(r);
}

static PyObject *f_dropout(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  double p = 0.5;
  int training = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|dp:dropout", CTPY_KW("input", "p", "training"),
                                   &xo, &p, &training))
    return NULL;
  ct_tensor *owned;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &owned);
  if (!x) return NULL;
  ct_tensor *r = ct_dropout(x, p, training, NULL);
  ct_free(owned);
  return ctpy_wrap(r);
}

/* ---- Losses
 * --------------------------------------------------------------------------------------- */

static int reduction_of(const char *s, ct_reduction *out) {
  if (!s || strcmp(s, "mean") == 0)
    *out = CT_REDUCTION_MEAN;
  else if (strcmp(s, "sum") == 0)
    *out = CT_REDUCTION_SUM;
  else if (strcmp(s, "none") == 0)
    *out = CT_REDUCTION_NONE;
  else
    return PyErr_Format(PyExc_ValueError, "reduction: 'mean', 'sum' or 'none', not '%s'", s), -1;
  return 0;
}

typedef ct_tensor *(*loss_fn)(const ct_tensor *, const ct_tensor *, const ct_loss_opts *);

/* loss(input, target, *, weight=None, ignore_index=-100, reduction='mean',
 * label_smoothing=0.0, pos_weight=None): the keywords each loss takes */
static PyObject *loss(PyObject *args, PyObject *kwargs, const char *fmt, loss_fn fn) {
  PyObject *io, *to, *wo = Py_None, *po = Py_None;
  long long ignore_index = -100;
  const char *reduction = NULL;
  double smoothing = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt,
                                   CTPY_KW("input", "target", "weight", "ignore_index", "reduction",
                                           "label_smoothing", "pos_weight"),
                                   &io, &to, &wo, &ignore_index, &reduction, &smoothing, &po))
    return NULL;
  ct_loss_opts o = {
      .ignore_index = ignore_index, .has_ignore_index = true, .label_smoothing = smoothing};
  if (reduction_of(reduction, &o.reduction) < 0) return NULL;
  ct_tensor *oi, *ot = NULL, *ow = NULL, *op = NULL, *r = NULL;
  const ct_tensor *in = ctpy_operand(io, ctpy_default_device(), &oi), *t = NULL, *w = NULL,
                  *p = NULL;
  if (!in) return NULL;
  ct_device dev = ct_device_of(in);
  if ((t = ctpy_operand(to, dev, &ot)) && optional_tensor(wo, dev, &w, &ow) == 0 &&
      optional_tensor(po, dev, &p, &op) == 0) {
    o.weight = w;
    o.pos_weight = p;
    CTPY_CALL(r, ct_numel(in) >= CTPY_NOGIL_NUMEL, fn(in, t, &o));
  }
  ct_free(oi);
  ct_free(ot);
  ct_free(ow);
  ct_free(op);
  return ctpy_wrap_unless_error(r);
}
CTPY_DEF_KWARGS(mse_loss, loss, "OO|$OLzdO:mse_loss", ct_mse_loss)
CTPY_DEF_KWARGS(cross_entropy, loss, "OO|$OLzdO:cross_entropy", ct_cross_entropy)
CTPY_DEF_KWARGS(nll_loss, loss, "OO|$OLzdO:nll_loss", ct_nll_loss)
CTPY_DEF_KWARGS(bce_with_logits, loss, "OO|$OLzdO:binary_cross_entropy_with_logits",
                ct_binary_cross_entropy_with_logits)

/* size or scale_factor of interpolate: a number for every spatial dim (n of
 * them) or a sequence of n; None leaves the zeros (not given). */
static int interp_values(PyObject *o, int n, const char *what, int64_t *size, double *scale) {
  if (o == Py_None) return 0;
  PyObject *seq = PySequence_Check(o) ? ctpy_sequence_tuple(o, what) : NULL;
  if (!seq && PyErr_Occurred()) return -1;
  if (seq && PySequence_Fast_GET_SIZE(seq) != n) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "interpolate: %s needs %d values for a %d-d input", what, n,
                 n + 2);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    PyObject *v = seq ? PySequence_Fast_GET_ITEM(seq, i) : o;
    if (size) size[i] = PyLong_AsLongLong(v);
    if (scale) scale[i] = PyFloat_AsDouble(v);
    if (PyErr_Occurred()) {
      Py_XDECREF(seq);
      return -1;
    }
  }
  Py_XDECREF(seq);
  return 0;
}

static PyObject *f_interpolate(PyObject *m, PyObject *args, PyObject *kwargs) {
  static const char *const modes[] = {"nearest", "nearest-exact", "linear", "bilinear", "area"};
  PyObject *xo, *size = Py_None, *scale = Py_None, *align = Py_None, *recompute = Py_None;
  const char *mode = "nearest";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOsOO:interpolate",
                                   CTPY_KW("input", "size", "scale_factor", "mode", "align_corners",
                                           "recompute_scale_factor"),
                                   &xo, &size, &scale, &mode, &align, &recompute))
    return NULL;
  ct_interpolate_opts o = {0};
  int k = 0;
  while (k < 5 && strcmp(mode, modes[k]) != 0) k++;
  if (k == 5) return PyErr_Format(PyExc_NotImplementedError, "interpolate: mode '%s'", mode);
  o.mode = (ct_interp_mode)k;
  if ((o.align_corners = align != Py_None && PyObject_IsTrue(align)) && (k < 2 || k == 4))
    return PyErr_Format(PyExc_ValueError,
                        "align_corners option can only be set with the interpolating modes");
  o.recompute_scale_factor = recompute != Py_None && PyObject_IsTrue(recompute);
  ct_tensor *owned, *r;
  const ct_tensor *x = ctpy_operand(xo, ctpy_default_device(), &owned);
  if (!x) return NULL;
  int n = ct_ndim(x) - 2 == 1 || ct_ndim(x) - 2 == 2 ? ct_ndim(x) - 2 : 2;
  if (interp_values(size, n, "size", o.size, NULL) < 0 ||
      interp_values(scale, n, "scale_factor", NULL, o.scale_factor) < 0)
    return ct_free(owned), NULL;
  CTPY_CALL(r, ct_numel(x) >= CTPY_NOGIL_NUMEL, ct_interpolate(x, &o));
  ct_free(owned);
  return ctpy_wrap(r);
}

PyMethodDef ctpy_nn_methods[] = {
    {"linear_module", CTPY_KWARGS(f_linear_module), NULL},
    {"conv2d_module", CTPY_KWARGS(f_conv2d_module), NULL},
    {"max_pool2d_module", CTPY_KWARGS(f_max_pool2d_module), NULL},
    {"avg_pool2d_module", CTPY_KWARGS(f_avg_pool2d_module), NULL},
    {"relu_module", f_relu_module, METH_NOARGS, NULL},
    {"gelu_module", f_gelu_module, METH_NOARGS, NULL},
    {"sigmoid_module", f_sigmoid_module, METH_NOARGS, NULL},
    {"tanh_module", f_tanh_module, METH_NOARGS, NULL},
    {"silu_module", f_silu_module, METH_NOARGS, NULL},
    {"dropout_module", f_dropout_module, METH_VARARGS, NULL},
    {"batch_norm2d_module", CTPY_KWARGS(f_batch_norm2d_module), NULL},
    {"layer_norm_module", CTPY_KWARGS(f_layer_norm_module), NULL},
    {"flatten_module", f_flatten_module, METH_VARARGS, NULL},
    {"embedding_module", CTPY_KWARGS(f_embedding_module), NULL},
    {"linear", f_linear, METH_VARARGS, "linear(x, weight, bias=None): x @ weight.T + bias"},
    {"conv2d", CTPY_KWARGS(f_conv2d),
     "conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)"},
    {"max_pool2d", CTPY_KWARGS(f_max_pool2d),
     "max_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False)"},
    {"avg_pool2d", CTPY_KWARGS(f_avg_pool2d),
     "avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, "
     "count_include_pad=True)"},
    {"batch_norm", CTPY_KWARGS(f_batch_norm),
     "batch_norm(input, running_mean=None, running_var=None, weight=None, bias=None, "
     "training=False, "
     "momentum=0.1, eps=1e-5)"},
    {"layer_norm", CTPY_KWARGS(f_layer_norm),
     "layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)"},
    {"embedding", f_embedding, METH_VARARGS, "embedding(indices, weight)"},
    {"interpolate", CTPY_KWARGS(f_interpolate),
     "interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
     "recompute_scale_factor=None): nearest, nearest-exact, linear (3-d), bilinear (4-d), area"},
    {"dropout", CTPY_KWARGS(f_dropout), "dropout(input, p=0.5, training=True)"},
    {"mse_loss", CTPY_KWARGS(f_mse_loss), "mse_loss(input, target, *, reduction='mean')"},
    {"cross_entropy", CTPY_KWARGS(f_cross_entropy),
     "cross_entropy(input, target, *, weight=None, ignore_index=-100, reduction='mean', "
     "label_smoothing=0.0)"},
    {"nll_loss", CTPY_KWARGS(f_nll_loss),
     "nll_loss(input, target, *, weight=None, ignore_index=-100, reduction='mean')"},
    {"binary_cross_entropy_with_logits", CTPY_KWARGS(f_bce_with_logits),
     "binary_cross_entropy_with_logits(input, target, *, reduction='mean', pos_weight=None)"},
    {NULL},
};

int ctpy_nn_init(PyObject *module) {
  if (PyType_Ready(&CtpyModule_Type) < 0) return -1;
  return PyModule_AddObjectRef(module, "CModule", (PyObject *)&CtpyModule_Type);
}
