/* Data loading from Python: _C.Dataset over ct_dataset (tensors in memory,
 * MNIST / Fashion-MNIST, CIFAR-10) and _C.DataLoader over ct_dataloader
 * (shuffling by (seed, epoch), worker threads that prefetch, delivery to a
 * GPU). Batches are handed to Python as Tensors the caller owns. */
#include "ctpy.h"

typedef struct {
  PyObject_HEAD ct_dataset *d;
  PyObject *keep; /* tensors the dataset reads (TensorDataset) */
} CtpyDataset;

typedef struct {
  PyObject_HEAD ct_dataloader *dl;
  PyObject *dataset; /* the loader borrows it */
} CtpyLoader;

static PyTypeObject CtpyDataset_Type, CtpyLoader_Type;

CTPY_DEF_WRAP(new_dataset, CtpyDataset, &CtpyDataset_Type, d, ct_dataset, ct_dataset_free)
static PyObject *wrap_dataset(ct_dataset *d, PyObject *keep) {
  PyObject *o = new_dataset(d);
  if (o) ((CtpyDataset *)o)->keep = Py_XNewRef(keep);
  return o;
}
CTPY_DEF_WRAP(new_loader, CtpyLoader, &CtpyLoader_Type, dl, ct_dataloader, ct_dataloader_free)

static void dataset_dealloc(PyObject *self) {
  CtpyDataset *o = (CtpyDataset *)self;
  ct_dataset_free(o->d);
  Py_XDECREF(o->keep);
  Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t dataset_len(PyObject *self) {
  return (Py_ssize_t)ct_dataset_length(((CtpyDataset *)self)->d);
}

static PyObject *dataset_item(PyObject *self, Py_ssize_t i) {
  ct_dataset *d = ((CtpyDataset *)self)->d;
  int64_t n = ct_dataset_length(d);
  if (i < 0) i += (Py_ssize_t)n;
  if (i < 0 || i >= n)
    return PyErr_Format(PyExc_IndexError, "sample %zd of a dataset of %lld", i, (long long)n);
  ct_sample s;
  if (ctpy_check(ct_dataset_get(d, i, &s)) < 0) return NULL;
  return Py_BuildValue("(NN)", ctpy_wrap(s.input), ctpy_wrap(s.target));
}

static PySequenceMethods dataset_sequence = {.sq_length = dataset_len, .sq_item = dataset_item};

static PyTypeObject CtpyDataset_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._C.Dataset",
    .tp_basicsize = sizeof(CtpyDataset),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A dataset of the C library (use ctensor.data).",
    .tp_dealloc = dataset_dealloc,
    .tp_as_sequence = &dataset_sequence,
};

/* tensor_dataset(inputs, targets): rows of two CPU tensors */
static PyObject *f_tensor_dataset(PyObject *m, PyObject *args) {
  PyObject *x, *y;
  if (!PyArg_ParseTuple(args, "O!O!:TensorDataset", &CtpyTensor_Type, &x, &CtpyTensor_Type, &y))
    return NULL;
  PyObject *keep = PyTuple_Pack(2, x, y);
  if (!keep) return NULL;
  PyObject *r = wrap_dataset(ct_tensor_dataset_new(ctpy_t(x), ctpy_t(y)), keep);
  Py_DECREF(keep);
  return r;
}

/* transforms from keywords: normalize=(mean, std), random_crop, padding,
 * random_hflip, seed */
static int transform_opts(PyObject *mean, PyObject *std, long long crop, long long padding,
                          int hflip, unsigned long long seed, ct_transform_opts *t) {
  memset(t, 0, sizeof *t);
  if (mean != Py_None || std != Py_None) {
    PyObject *ms = ctpy_sequence_tuple(mean, "mean: a sequence of numbers"),
             *ss = ms ? ctpy_sequence_tuple(std, "std: a sequence of numbers") : NULL;
    if (!ss) return Py_XDECREF(ms), -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ms);
    if (n < 1 || n > 3 || n != PySequence_Fast_GET_SIZE(ss)) {
      Py_DECREF(ms);
      Py_DECREF(ss);
      return PyErr_SetString(PyExc_ValueError,
                             "mean and std: 1 to 3 numbers each, as many of both"),
             -1;
    }
    for (int c = 0; c < 3; c++) {
      t->mean[c] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(ms, c < n ? c : n - 1));
      t->std[c] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(ss, c < n ? c : n - 1));
    }
    Py_DECREF(ms);
    Py_DECREF(ss);
    if (PyErr_Occurred()) return -1;
    t->normalize = true;
  }
  t->random_crop = crop;
  t->crop_padding = padding;
  t->random_hflip = hflip;
  t->seed = seed;
  return 0;
}

static PyObject *image_dataset(PyObject *args, PyObject *kwargs, const char *fmt,
                               ct_dataset *(*open)(const char *, bool, const ct_transform_opts *)) {
  const char *dir;
  int train = 1, hflip = 0;
  PyObject *mean = Py_None, *std = Py_None;
  long long crop = 0, padding = 0;
  unsigned long long seed = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, fmt,
          CTPY_KW("root", "train", "mean", "std", "random_crop", "padding", "random_hflip", "seed"),
          &dir, &train, &mean, &std, &crop, &padding, &hflip, &seed))
    return NULL;
  ct_transform_opts t;
  if (transform_opts(mean, std, crop, padding, hflip, seed, &t) < 0) return NULL;
  ct_dataset *d;
  Py_BEGIN_ALLOW_THREADS d = open(dir, train, &t);
  Py_END_ALLOW_THREADS return wrap_dataset(d, NULL);
}
CTPY_DEF_KWARGS(mnist, image_dataset, "s|p$OOLLpK:MNIST", ct_mnist_open)
CTPY_DEF_KWARGS(cifar10, image_dataset, "s|p$OOLLpK:CIFAR10", ct_cifar10_open)

/* ---- The loader
 * ---------------------------------------------------------------------------------------- */

static PyObject *f_dataloader(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *dataset, *device = Py_None;
  ct_dataloader_opts o = {0};
  long long batch_size = 1, shard_rank = 0, shard_count = 0;
  int shuffle = 0, drop_last = 0, workers = 0, prefetch = 0, pin = 0;
  unsigned long long seed = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "O!|LpKpiipOLL:DataLoader",
          CTPY_KW("dataset", "batch_size", "shuffle", "seed", "drop_last", "num_workers",
                  "prefetch", "pin_memory", "device", "shard_rank", "shard_count"),
          &CtpyDataset_Type, &dataset, &batch_size, &shuffle, &seed, &drop_last, &workers,
          &prefetch, &pin, &device, &shard_rank, &shard_count))
    return NULL;
  o.batch_size = batch_size;
  o.shuffle = shuffle;
  o.seed = seed;
  o.drop_last = drop_last;
  o.num_workers = workers;
  o.prefetch = prefetch;
  o.pin_memory = pin;
  o.shard_rank = shard_rank;
  o.shard_count = shard_count;
  o.device = ct_cpu();
  if (device != Py_None && ctpy_parse_device(device, &o.device) < 0) return NULL;
  PyObject *l = new_loader(ct_dataloader_new(((CtpyDataset *)dataset)->d, &o));
  if (l) ((CtpyLoader *)l)->dataset = Py_NewRef(dataset);
  return l;
}

static void loader_dealloc(PyObject *self) {
  CtpyLoader *l = (CtpyLoader *)self;
  Py_BEGIN_ALLOW_THREADS ct_dataloader_free(l->dl); /* joins the workers */
  Py_END_ALLOW_THREADS Py_DECREF(l->dataset);
  Py_TYPE(self)->tp_free(self);
}
static Py_ssize_t loader_len(PyObject *self) {
  return (Py_ssize_t)ct_dataloader_num_batches(((CtpyLoader *)self)->dl);
}

static PyObject *loader_start_epoch(PyObject *self, PyObject *args) {
  long long epoch, skip = 0;
  if (!PyArg_ParseTuple(args, "L|L:start_epoch", &epoch, &skip)) return NULL;
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_dataloader_start_epoch(((CtpyLoader *)self)->dl, epoch, skip);
  Py_END_ALLOW_THREADS if (ctpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

/* next(): (inputs, targets), or None at the end of the epoch */
static PyObject *loader_next(PyObject *self, PyObject *u) {
  ct_batch b = {0};
  ct_status st;
  Py_BEGIN_ALLOW_THREADS st = ct_dataloader_next(((CtpyLoader *)self)->dl, &b);
  Py_END_ALLOW_THREADS if (ctpy_check(st) < 0) return NULL;
  if (!b.inputs) Py_RETURN_NONE;
  /* the batch's references go to Python; the batch lets go of its own */
  PyObject *r =
      Py_BuildValue("(NN)", ctpy_wrap(ct_retain(b.inputs)), ctpy_wrap(ct_retain(b.targets)));
  ct_batch_release(&b);
  return r;
}

static PyMethodDef loader_methods[] = {
    {"start_epoch", loader_start_epoch, METH_VARARGS, "start_epoch(epoch, skip_batches=0)"},
    {"next", loader_next, METH_NOARGS,
     "The next (inputs, targets), or None at the end of the epoch."},
    {NULL},
};
static PySequenceMethods loader_sequence = {.sq_length = loader_len};
static PyTypeObject CtpyLoader_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ctensor._C.DataLoader",
    .tp_basicsize = sizeof(CtpyLoader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A data loader of the C library (use ctensor.data.DataLoader).",
    .tp_dealloc = loader_dealloc,
    .tp_methods = loader_methods,
    .tp_as_sequence = &loader_sequence,
};

static PyMethodDef data_functions[] = {
    {"tensor_dataset", f_tensor_dataset, METH_VARARGS, NULL},
    {"mnist", CTPY_KWARGS(f_mnist), NULL},
    {"cifar10", CTPY_KWARGS(f_cifar10), NULL},
    {"dataloader", CTPY_KWARGS(f_dataloader), NULL},
    {NULL},
};

int ctpy_data_init(PyObject *module) {
  if (PyType_Ready(&CtpyDataset_Type) < 0 || PyType_Ready(&CtpyLoader_Type) < 0) return -1;
  if (PyModule_AddObjectRef(module, "Dataset", (PyObject *)&CtpyDataset_Type) < 0) return -1;
  return PyModule_AddFunctions(module, data_functions);
}
