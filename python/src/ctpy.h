/* The CPython extension ctensor._C: declarations shared by its files.
 *
 * The extension calls only the public C API (ctensor.h, ctensor/dlpack.h).
 * A Python Tensor owns one reference to a ct_tensor; every ct_ function that
 * returns a tensor hands over a new reference, which ctpy_wrap gives to a new
 * Python object (or turns a NULL into the C library's error as a Python
 * exception). No ct_scope is ever open on a thread running Python code, so
 * nothing but the Python object releases a tensor. */
#ifndef CTPY_H
#define CTPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include <ctensor.h>
#include <ctensor/dlpack.h>

/* ---- Tensor -------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD ct_tensor *t;
} CtpyTensor;

extern PyTypeObject CtpyTensor_Type;
static inline bool ctpy_is_tensor(PyObject *o) {
  return Py_TYPE(o) == &CtpyTensor_Type || PyType_IsSubtype(Py_TYPE(o), &CtpyTensor_Type);
}
static inline ct_tensor *ctpy_t(PyObject *o) { return ((CtpyTensor *)o)->t; }

/* A new Python Tensor owning t (a new reference). NULL t: raises the C
 * library's last error and returns NULL. */
PyObject *ctpy_wrap(ct_tensor *t);
/* ctpy_wrap(t), unless a Python exception is already set (the conversion of an argument failed
 * on the way): then t (which may be NULL) is freed and NULL returned. */
PyObject *ctpy_wrap_unless_error(ct_tensor *t);
/* Tensors at least this large release the GIL while an op runs on them. */
#define CTPY_NOGIL_NUMEL 65536
/* Runs `call` (an expression assigned to `result`) without the GIL when `big`. */
#define CTPY_CALL(result, big, call)          \
  do {                                        \
    if (big) {                                \
      Py_BEGIN_ALLOW_THREADS result = (call); \
      Py_END_ALLOW_THREADS                    \
    } else {                                  \
      result = (call);                        \
    }                                         \
  } while (0)

/* Defines `static PyObject *name(handle_type *h)`: a new object of the C struct `ctype` (the
 * Python type `pytype`) that takes over h, an object of the C library, as its field `field`. A
 * NULL h raises the C library's last error; when Python has no memory, free_fn(h) releases it.
 * The one way the extension hands a C library object to Python (ctpy_wrap is one of them). */
#define CTPY_DEF_WRAP(name, ctype, pytype, field, handle_type, free_fn) \
  static PyObject *name(handle_type *h) {                               \
    if (!h) return ctpy_raise();                                        \
    ctype *o = PyObject_New(ctype, pytype);                             \
    if (!o) return free_fn(h), NULL;                                    \
    o->field = h;                                                       \
    return (PyObject *)o;                                               \
  }

/* ---- Errors (module.c) ---------------------------------------------------------------- */

/* Raises the exception class of the C library's last error with its message
 * and clears it; returns NULL. */
PyObject *ctpy_raise(void);
/* For a status: 0 if CT_OK, else raises (as ctpy_raise) and returns -1. */
int ctpy_check(ct_status st);
/* Raises an exception of the class of `code` with a formatted message. */
PyObject *ctpy_raise_code(ct_status code, const char *fmt, ...);
extern PyObject *ctpy_error_classes[CT_STATUS_COUNT];

/* ---- dtypes and devices (module.c) --------------------------------------------------------- */

/* The dtype singleton (borrowed). */
PyObject *ctpy_dtype_object(ct_dtype d);
/* A dtype argument: a ctensor dtype, a name ("float32", "f32", "int64"...),
 * a NumPy or PyTorch dtype (by name), or a Python type (bool, int -> int64,
 * float -> float32). None: *given = false. Returns 0, or -1 with TypeError. */
int ctpy_parse_dtype(PyObject *o, ct_dtype *out, bool *given);
/* A new Device object. */
PyObject *ctpy_device_object(ct_device d);
/* A device argument: a Device, "cpu", "cuda", "cuda:N", or None (the current
 * default device). Returns 0, or -1 with an exception. */
int ctpy_parse_device(PyObject *o, ct_device *out);
/* Where new tensors go when no device is named: ctensor.set_default_device,
 * a `with ctensor.cuda.Device(n)` block, else ct_resolve_default_device()
 * (CT_DEVICE, else the first usable GPU, else the CPU). */
ct_device ctpy_default_device(void);
/* The same, or -1 with the error raised when CT_DEVICE names a device that
 * cannot be used (the default is then the CPU for the callers above, which
 * cannot fail: scalars beside a tensor, operands of an op). */
int ctpy_resolve_default_device(ct_device *out);
/* The default floating dtype (float32) and integer dtype (int64). */
#define CTPY_DEFAULT_FLOAT CT_F32
#define CTPY_DEFAULT_INT CT_I64

/* ---- Conversions (convert.c) ---------------------------------------------------------------- */

typedef struct ctpy_asarray_opts {
  ct_dtype dtype;
  bool has_dtype;
  ct_device device;
  bool has_device;
  int copy; /* 1 always, 0 never (error if needed), -1 when needed */
} ctpy_asarray_opts;
/* asarray: a new reference to a tensor holding obj (a Tensor, an object with
 * the buffer protocol or __dlpack__, a nested sequence, a Python scalar).
 * NULL with a Python exception. */
ct_tensor *ctpy_asarray(PyObject *obj, const ctpy_asarray_opts *opts);
/* asarray's dtype, device and copy keywords (each may be None). 0, or -1 with an exception. */
int ctpy_asarray_opts_parse(PyObject *dtype, PyObject *device, PyObject *copy,
                            ctpy_asarray_opts *opts);
/* An operand of an op: a Tensor (borrowed, *owned = NULL) or anything
 * asarray takes, made on `device` (*owned holds the new reference to free). */
ct_tensor *ctpy_operand(PyObject *obj, ct_device device, ct_tensor **owned);
/* The operands of an op on any number of tensors (cat, stack, einsum): the items of `tuple` on
 * one device, that of the first Tensor among them, else the default device. *ts and *owned (the
 * references to free) are new arrays of n + 1, which ctpy_free_operands releases. 0, or -1 with
 * an exception (and nothing to release). */
int ctpy_operands(PyObject *tuple, ct_tensor ***ts, ct_tensor ***owned);
void ctpy_free_operands(ct_tensor **ts, ct_tensor **owned, Py_ssize_t n);
/* A Python scalar (int, float, bool; not a Tensor): true with the value. */
bool ctpy_scalar(PyObject *o, double *value, bool *is_float);
/* ctpy_scalar, but false for an int of magnitude 2^53 or more, which a double would round:
 * callers then take it as a tensor (asarray keeps it exact in int64). */
bool ctpy_scalar_exact(PyObject *o, double *value, bool *is_float);
/* The items of a sequence or iterable as a tuple (a new reference; NULL with
 * TypeError(msg)). Its items stay alive and in place while Python code runs
 * on them (__index__, __float__, conversions), which PySequence_Fast of a
 * list does not promise: that code may shrink the list and free the item. */
PyObject *ctpy_sequence_tuple(PyObject *o, const char *msg);
/* A shape argument (an int or a sequence of ints). Returns ndim or -1. */
int ctpy_parse_shape(PyObject *o, int64_t *shape, const char *what);
/* The buffer protocol of CPU tensors (Tensor.tp_as_buffer). */
extern PyBufferProcs ctpy_buffer_procs;
/* One element of a tensor as a Python int, float or bool (synchronizes). */
PyObject *ctpy_item(const ct_tensor *t);
/* Nested lists of the values (tolist). */
PyObject *ctpy_tolist(const ct_tensor *t);

/* ---- DLPack (dlpack_py.c) ----------------------------------------------------------------- */

PyObject *ctpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ctpy_tensor_dlpack_device(PyObject *self, PyObject *unused);
/* from_dlpack(x, /, *, device=None, copy=None) */
PyObject *ctpy_from_dlpack(PyObject *module, PyObject *args, PyObject *kwargs);
/* A tensor from an object with __dlpack__ (a new reference), or NULL with an
 * exception. */
ct_tensor *ctpy_import_dlpack(PyObject *obj);

/* ---- Indexing (index.c) ------------------------------------------------------------------ */

PyObject *ctpy_getitem(PyObject *self, PyObject *key);
int ctpy_setitem(PyObject *self, PyObject *key, PyObject *value);

/* ---- Ops, creation, autograd (ops.c, creation.c, autograd.c) ------------------------------ */

/* One binary op in its forms (some may be NULL). */
typedef struct ctpy_binop {
  const char *name;
  ct_tensor *(*tt)(const ct_tensor *, const ct_tensor *);
  ct_tensor *(*tt_)(ct_tensor *, const ct_tensor *);
  ct_tensor *(*ts)(const ct_tensor *, double);
  ct_tensor *(*ts_)(ct_tensor *, double);
  ct_tensor *(*st)(const ct_tensor *, double); /* s op t; NULL: commutative or via a 0-d tensor */
  bool commutative;
  bool float_result; /* true division: a float scalar never needs the float cast */
} ctpy_binop;
/* a op b, either of them a Tensor. `as_operator`: anything else than a
 * Tensor or a Python scalar that asarray refuses gives NotImplemented (the
 * number protocol) instead of the TypeError of a function. */
PyObject *ctpy_binary(PyObject *a, PyObject *b, const ctpy_binop *op, bool as_operator);
/* The standard's promotion (NumPy 2, NEP 50) of two tensor operands: a 0-d tensor next to a
 * dimensioned one is not weak (the C library keeps PyTorch's rule, where it is), so when
 * exactly one is 0-d both are cast to ct_promote_types first. *x, *y may be replaced by casts
 * (owned[0], owned[1]: the references to free). 0, or -1 with the error raised. */
int ctpy_promote_pair(const ct_tensor **x, const ct_tensor **y, ct_tensor **owned);
/* a op= b (a is a Tensor). */
PyObject *ctpy_binary_inplace(PyObject *a, PyObject *b, const ctpy_binop *op);

extern PyNumberMethods ctpy_number_methods;
/* Conversions of one-element tensors (tensor.c) for the number protocol. */
PyObject *ctpy_tensor_float(PyObject *self);
PyObject *ctpy_tensor_int(PyObject *self);
PyObject *ctpy_tensor_index(PyObject *self);
int ctpy_tensor_bool(PyObject *self);
PyObject *ctpy_richcompare(PyObject *a, PyObject *b, int op);
/* Fills a reduce-opts from axis (None, an int or a tuple) and keepdims. */
int ctpy_reduce_axes(PyObject *axis, bool keepdims, int ndim, ct_reduce_opts *r);

/* Whether an op on these tensors is large enough to run without the GIL (b may be NULL). */
bool ctpy_is_big(const ct_tensor *a, const ct_tensor *b);
/* An argument that must be tensor-like, as a tensor on the default device (*owned: the
 * reference to free, NULL when o is a Tensor). NULL with an exception. */
const ct_tensor *ctpy_arg_tensor(PyObject *o, ct_tensor **owned);

/* The end of most functions of one tensor-like argument, and a return from them: `x` names
 * the tensor of the argument `xo` (ctpy_arg_tensor) in `call`, an expression giving a new
 * tensor; what the conversion made is freed after the call, and the result is returned as a
 * Python Tensor (NULL: the C library's error is raised). The _NOGIL form runs `call` without
 * the GIL when x is large (CTPY_CALL); `call` must then not touch Python objects. */
#define CTPY_RETURN_ON_TENSOR(xo, x, call) CTPY_RETURN_ON_TENSOR_(xo, x, false, call)
#define CTPY_RETURN_ON_TENSOR_NOGIL(xo, x, call) \
  CTPY_RETURN_ON_TENSOR_(xo, x, ctpy_is_big(x, NULL), call)
#define CTPY_RETURN_ON_TENSOR_(xo, x, big, call)            \
  do {                                                      \
    ct_tensor *ctpy_owned_, *ctpy_result_;                  \
    const ct_tensor *x = ctpy_arg_tensor(xo, &ctpy_owned_); \
    if (!x) return NULL;                                    \
    CTPY_CALL(ctpy_result_, big, call);                     \
    ct_free(ctpy_owned_);                                   \
    return ctpy_wrap(ctpy_result_);                         \
  } while (0)
/* The same for a call giving several tensors, returned as a tuple: `t` is the caller's array of
 * them (all NULL), `call` returns t[first] and fills the others; it runs as the _NOGIL form. */
#define CTPY_RETURN_TUPLE_ON_TENSOR(xo, x, t, first, call)   \
  do {                                                       \
    ct_tensor *ctpy_owned_;                                  \
    const ct_tensor *x = ctpy_arg_tensor(xo, &ctpy_owned_);  \
    if (!x) return NULL;                                     \
    CTPY_CALL((t)[first], ctpy_is_big(x, NULL), call);       \
    ct_free(ctpy_owned_);                                    \
    return ctpy_tuple(t, (int)(sizeof(t) / sizeof((t)[0]))); \
  } while (0)

/* Tensor.backward and autograd's backward: the backward pass from root (a Tensor), seeded with
 * grad (None, or a tensor-like, made on root's device). None, or NULL with the error raised. */
PyObject *ctpy_backward(PyObject *root, PyObject *grad, bool retain_graph);

/* A tuple of n tensors (new references, taken over); when any is NULL, frees the others and
 * raises the C library's last error. */
PyObject *ctpy_tuple(ct_tensor **ts, int n);

extern PyMethodDef ctpy_ops_methods[];
extern PyMethodDef ctpy_sorting_methods[];
extern PyMethodDef ctpy_linalg_methods[];
extern PyMethodDef ctpy_function_methods[];
extern PyMethodDef ctpy_creation_methods[];
extern PyMethodDef ctpy_autograd_methods[];
extern PyMethodDef ctpy_tensor_methods[];

/* ---- nn, optim, data (nn.c, optim.c, data.c) ---------------------------------------------- */

extern PyMethodDef ctpy_nn_methods[];
int ctpy_nn_init(PyObject *module);
int ctpy_optim_init(PyObject *module);
int ctpy_data_init(PyObject *module);
int ctpy_stream_init(PyObject *module);

/* The module ctensor._C (borrowed), for methods that forward to its functions. */
extern PyObject *ctpy_module;

/* The function and flags of a PyMethodDef row, for functions taking (args, kwargs) and for
 * METH_FASTCALL ones (a cast, as CPython's PyCFunction type has two parameters). */
#define CTPY_KWARGS(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
#define CTPY_FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL

/* Helpers for functions taking many keywords. */
#define CTPY_KW(...) ((char *[]){__VA_ARGS__, NULL})

/* Functions that differ only by what they pass to one shared implementation, one line each:
 * f_<name>(module, args, kwargs) returns impl(args, kwargs, ...); the METH_VARARGS form
 * f_<name>(module, args) returns impl(args, ...). */
#define CTPY_DEF_KWARGS(name, impl, ...)                             \
  static PyObject *f_##name(PyObject *m, PyObject *a, PyObject *k) { \
    return impl(a, k, __VA_ARGS__);                                  \
  }
#define CTPY_DEF_VARARGS(name, impl, ...) \
  static PyObject *f_##name(PyObject *m, PyObject *a) { return impl(a, __VA_ARGS__); }

#endif /* CTPY_H */
