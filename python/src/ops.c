/* Operators and elementwise functions, from tables: each elementwise op of the C
 * library is one line of a table below (X-macros), which makes both the
 * ctensor._C function and, for binary ops, the operator. The Python
 * namespace (ctensor/_api.py) maps array API names onto these functions. */

#include <math.h>

#include "ctpy.h"

/* ---- Binary ops --------------------------------------------------------------------------------
 */

/* name, commutative, float_result (true division), s op t (NULL: via a 0-d tensor) */
#define CTPY_ARITH_OPS(X)              \
  X(add, true, false, NULL)            \
  X(sub, false, false, ct_rsub_scalar) \
  X(mul, true, false, NULL)            \
  X(div, false, true, ct_rdiv_scalar)  \
  X(floor_divide, false, false, NULL)  \
  X(pow, false, false, NULL)           \
  X(maximum, true, false, NULL)        \
  X(minimum, true, false, NULL)        \
  X(fmod, false, false, NULL)          \
  X(remainder, false, false, NULL)     \
  X(atan2, false, true, NULL)          \
  X(copysign, false, true, NULL)       \
  X(logaddexp, true, true, NULL)       \
  X(hypot, true, true, NULL)

/* The integer bitwise ops, as the arithmetic ones (integer and bool operands only). */
#define CTPY_BITWISE_OPS(X)                                          \
  X(bitwise_and, true, false, NULL)                                  \
  X(bitwise_or, true, false, NULL)                                   \
  X(bitwise_xor, true, false, NULL)                                  \
  X(bitwise_left_shift, false, false, ct_bitwise_left_shift_rscalar) \
  X(bitwise_right_shift, false, false, ct_bitwise_right_shift_rscalar)

/* bool results: no in-place form; a float scalar compares as it is */
#define CTPY_COMPARE_OPS(X) \
  X(eq, true)               \
  X(ne, true)               \
  X(lt, false)              \
  X(le, false)              \
  X(gt, false) X(ge, false) X(logical_and, true) X(logical_or, true) X(logical_xor, true)

#define DEF_ARITH(name, commut, floatres, st)                                  \
  static const ctpy_binop op_##name = {                                        \
      #name, ct_##name, ct_##name##_, ct_##name##_scalar, ct_##name##_scalar_, \
      st,    commut,    floatres};
CTPY_ARITH_OPS(DEF_ARITH)
CTPY_BITWISE_OPS(DEF_ARITH)

/* Logical in-place forms write the result over their first operand. */
#define DEF_LOGICAL_INPLACE(name)                                      \
  static ct_tensor *name##_inplace(ct_tensor *a, const ct_tensor *b) { \
    return ct_##name##_out(a, a, b);                                   \
  }                                                                    \
  static ct_tensor *name##_inplace_scalar(ct_tensor *a, double s) {    \
    ct_tensor *r = ct_##name##_scalar(a, s);                           \
    ct_tensor *w = r ? ct_copy_(a, r) : NULL;                          \
    ct_free(r);                                                        \
    return w;                                                          \
  }
DEF_LOGICAL_INPLACE(logical_and)
DEF_LOGICAL_INPLACE(logical_or)
DEF_LOGICAL_INPLACE(logical_xor)

#define DEF_COMPARE(name, commut)                                                    \
  static const ctpy_binop op_##name = {#name, ct_##name, NULL,   ct_##name##_scalar, \
                                       NULL,  NULL,      commut, true};
CTPY_COMPARE_OPS(DEF_COMPARE)
static const ctpy_binop op_and_ = {"logical_and",
                                   ct_logical_and,
                                   logical_and_inplace,
                                   ct_logical_and_scalar,
                                   logical_and_inplace_scalar,
                                   NULL,
                                   true,
                                   true};
static const ctpy_binop op_or_ = {"logical_or",
                                  ct_logical_or,
                                  logical_or_inplace,
                                  ct_logical_or_scalar,
                                  logical_or_inplace_scalar,
                                  NULL,
                                  true,
                                  true};
static const ctpy_binop op_xor_ = {"logical_xor",
                                   ct_logical_xor,
                                   logical_xor_inplace,
                                   ct_logical_xor_scalar,
                                   logical_xor_inplace_scalar,
                                   NULL,
                                   true,
                                   true};

bool ctpy_is_big(const ct_tensor *a, const ct_tensor *b) {
  return ct_numel(a) >= CTPY_NOGIL_NUMEL || (b && ct_numel(b) >= CTPY_NOGIL_NUMEL);
}

/* The 0-d tensor a Python scalar stands for next to x: x's dtype for an int
 * (int64 next to bool), x's dtype or float32 for a float. */
static ct_tensor *scalar_tensor(const ct_tensor *x, double s, bool is_float) {
  ct_dtype d = ct_dtype_of(x);
  if (is_float && !ct_dtype_is_floating(d)) d = CTPY_DEFAULT_FLOAT;
  if (!is_float && d == CT_BOOL) d = CTPY_DEFAULT_INT;
  return ct_scalar(s, &(ct_tensor_opts){.dtype = d, .device = ct_device_of(x)});
}

/* x op s, or s op x when reflected. A Python float with an integer tensor
 * gives a float result (PyTorch), whatever the value. */
static PyObject *scalar_op(const ct_tensor *x, double s, bool is_float, const ctpy_binop *op,
                           bool reflected) {
  ct_tensor *cast = NULL, *r;
  if (is_float && !op->float_result && !ct_dtype_is_floating(ct_dtype_of(x))) {
    if (!(cast = ct_cast(x, CTPY_DEFAULT_FLOAT))) return ctpy_raise();
    x = cast;
  }
  if (!reflected || op->commutative) {
    r = op->ts(x, s);
  } else if (op->st) {
    r = op->st(x, s);
  } else {
    ct_tensor *st = scalar_tensor(x, s, is_float);
    r = st ? op->tt(st, x) : NULL;
    ct_free(st);
  }
  ct_free(cast);
  return ctpy_wrap(r);
}

/* For reflected comparisons called as functions (less(2, x)): x op' s. */
static const ctpy_binop *mirror(const ctpy_binop *op) {
  if (op == &op_lt) return &op_gt;
  if (op == &op_le) return &op_ge;
  if (op == &op_gt) return &op_lt;
  if (op == &op_ge) return &op_le;
  return NULL;
}

int ctpy_promote_pair(const ct_tensor **x, const ct_tensor **y, ct_tensor **owned) {
  owned[0] = owned[1] = NULL;
  ct_dtype dx = ct_dtype_of(*x), dy = ct_dtype_of(*y);
  if (dx == dy || (ct_ndim(*x) == 0) == (ct_ndim(*y) == 0)) return 0;
  ct_dtype d = ct_promote_types(dx, dy);
  if (dx != d && !(*x = owned[0] = ct_cast(*x, d))) return ctpy_raise(), -1;
  if (dy != d && !(*y = owned[1] = ct_cast(*y, d))) return ct_free(owned[0]), ctpy_raise(), -1;
  return 0;
}

/* x op y with the standard's promotion (ctpy_promote_pair). */
static PyObject *tensor_op(const ct_tensor *x, const ct_tensor *y, const ctpy_binop *op) {
  ct_tensor *owned[2], *r;
  if (ctpy_promote_pair(&x, &y, owned) < 0) return NULL;
  CTPY_CALL(r, ctpy_is_big(x, y), op->tt(x, y));
  ct_free(owned[0]);
  ct_free(owned[1]);
  return ctpy_wrap(r);
}

/* NEP 50: a Python int is weak, so it takes the tensor's integer dtype, and a value that
 * dtype cannot hold is an OverflowError (NumPy 2), not a wrapped result. Comparisons and true
 * division compare or divide the exact value. */
static bool int_scalar_fits(const ct_tensor *x, PyObject *o, const ctpy_binop *op) {
  ct_dtype d = ct_dtype_of(x);
  if (op->float_result || !PyLong_Check(o) || PyBool_Check(o) || ct_dtype_is_floating(d) ||
      d == CT_BOOL)
    return true;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  long long lo = d == CT_I8    ? -128
                 : d == CT_I16 ? -32768
                 : d == CT_I32 ? INT32_MIN
                 : d == CT_U8  ? 0
                               : INT64_MIN;
  long long hi = d == CT_I8    ? 127
                 : d == CT_I16 ? 32767
                 : d == CT_I32 ? INT32_MAX
                 : d == CT_U8  ? 255
                               : INT64_MAX;
  if (!overflow && v >= lo && v <= hi) return true;
  PyErr_Format(PyExc_OverflowError, "%s: Python integer %R out of bounds for %s", op->name, o,
               ct_dtype_name(d));
  return false;
}

PyObject *ctpy_binary(PyObject *a, PyObject *b, const ctpy_binop *op, bool as_operator) {
  bool ta = ctpy_is_tensor(a), tb = ctpy_is_tensor(b);
  if (ta && tb) return tensor_op(ctpy_t(a), ctpy_t(b), op);
  double s;
  bool is_float;
  if (ta || tb) {
    PyObject *tobj = ta ? a : b, *other = ta ? b : a;
    if (ctpy_scalar(other, &s, &is_float) && !int_scalar_fits(ctpy_t(tobj), other, op)) return NULL;
    /* an int64 beyond 2^53 is exact only as a tensor: the scalar forms take a double; a
     * numpy.float64 (a float subclass) is a NumPy scalar, strong as a 0-d array (NEP 50) */
    if (ctpy_scalar(other, &s, &is_float) &&
        !(!is_float && fabs(s) >= 9007199254740992.0 && ct_dtype_of(ctpy_t(tobj)) == CT_I64) &&
        !(is_float && !PyFloat_CheckExact(other))) {
      const ctpy_binop *m = ta ? NULL : mirror(op);
      if (m) return scalar_op(ctpy_t(tobj), s, is_float, m, false);
      return scalar_op(ctpy_t(tobj), s, is_float, op, !ta);
    }
    ct_tensor *owned = NULL;
    const ct_tensor *o = ctpy_operand(other, ct_device_of(ctpy_t(tobj)), &owned);
    if (!o) {
      if (as_operator && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
      }
      return NULL;
    }
    PyObject *res = ta ? tensor_op(ctpy_t(tobj), o, op) : tensor_op(o, ctpy_t(tobj), op);
    ct_free(owned);
    return res;
  }
  if (as_operator) Py_RETURN_NOTIMPLEMENTED;
  /* a function of two non-tensors: the first becomes a tensor */
  ct_tensor *owned = NULL;
  if (!ctpy_operand(a, ctpy_default_device(), &owned)) return NULL;
  PyObject *wa = ctpy_wrap(owned);
  if (!wa) return NULL;
  PyObject *res = ctpy_binary(wa, b, op, false);
  Py_DECREF(wa);
  return res;
}

PyObject *ctpy_binary_inplace(PyObject *a, PyObject *b, const ctpy_binop *op) {
  if (!ctpy_is_tensor(a)) Py_RETURN_NOTIMPLEMENTED;
  ct_tensor *x = ctpy_t(a), *r;
  double s;
  bool is_float;
  if (ctpy_is_tensor(b)) {
    CTPY_CALL(r, ctpy_is_big(x, NULL), op->tt_(x, ctpy_t(b)));
  } else if (ctpy_scalar(b, &s, &is_float)) {
    if (!int_scalar_fits(x, b, op)) return NULL;
    if (is_float && !ct_dtype_is_floating(ct_dtype_of(x)))
      return ctpy_raise_code(CT_ERR_DTYPE,
                             "%s_: a float result cannot be written into the %s tensor in place",
                             op->name, ct_dtype_name(ct_dtype_of(x)));
    CTPY_CALL(r, ctpy_is_big(x, NULL), op->ts_(x, s));
  } else {
    ct_tensor *owned = NULL;
    const ct_tensor *o = ctpy_operand(b, ct_device_of(x), &owned);
    if (!o) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
      PyErr_Clear();
      Py_RETURN_NOTIMPLEMENTED;
    }
    r = op->tt_(x, o);
    ct_free(owned);
  }
  if (!r) return ctpy_raise();
  return Py_NewRef(a);
}

/* ---- The number protocol
 * ---------------------------------------------------------------------------- */

#define NB_BINARY(fn, op)                                                                     \
  static PyObject *nb_##fn(PyObject *a, PyObject *b) { return ctpy_binary(a, b, &op, true); } \
  static PyObject *nb_i##fn(PyObject *a, PyObject *b) { return ctpy_binary_inplace(a, b, &op); }
NB_BINARY(add, op_add)
NB_BINARY(sub, op_sub)
NB_BINARY(mul, op_mul)
NB_BINARY(truediv, op_div)
NB_BINARY(floordiv, op_floor_divide)
NB_BINARY(mod, op_remainder)

/* &, |, ^: the bitwise ops; between bools (tensors or Python bools) the
 * logical ones, so that a bool tensor & True stays bool (NumPy). */
static bool is_boolish(PyObject *o) {
  return PyBool_Check(o) || (ctpy_is_tensor(o) && ct_dtype_of(ctpy_t(o)) == CT_BOOL);
}
#define NB_BITWISE(fn, op, logical)                                                    \
  static PyObject *nb_##fn(PyObject *a, PyObject *b) {                                 \
    return ctpy_binary(a, b, is_boolish(a) && is_boolish(b) ? &logical : &op, true);   \
  }                                                                                    \
  static PyObject *nb_i##fn(PyObject *a, PyObject *b) {                                \
    return ctpy_binary_inplace(a, b, is_boolish(a) && is_boolish(b) ? &logical : &op); \
  }
NB_BITWISE(and, op_bitwise_and, op_and_)
NB_BITWISE(or, op_bitwise_or, op_or_)
NB_BITWISE(xor, op_bitwise_xor, op_xor_)
NB_BINARY(lshift, op_bitwise_left_shift)
NB_BINARY(rshift, op_bitwise_right_shift)

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return ctpy_binary(a, b, &op_pow, true);
}
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return ctpy_binary_inplace(a, b, &op_pow);
}

static PyObject *nb_matmul(PyObject *a, PyObject *b) {
  bool ta = ctpy_is_tensor(a);
  PyObject *tobj = ta ? a : b, *other = ta ? b : a;
  ct_tensor *owned = NULL, *r;
  const ct_tensor *o = ctpy_is_tensor(other) ? ctpy_t(other) : NULL;
  if (!o && !(o = ctpy_operand(other, ct_device_of(ctpy_t(tobj)), &owned))) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
    PyErr_Clear();
    Py_RETURN_NOTIMPLEMENTED;
  }
  const ct_tensor *x = ta ? ctpy_t(a) : o, *y = ta ? o : ctpy_t(b);
  CTPY_CALL(r, ctpy_is_big(x, y), ct_matmul(x, y));
  ct_free(owned);
  return ctpy_wrap(r);
}

static PyObject *nb_neg(PyObject *a) { return ctpy_wrap(ct_neg(ctpy_t(a))); }
static PyObject *nb_pos(PyObject *a) { return ctpy_wrap(ct_alias(ctpy_t(a))); }
static PyObject *nb_abs(PyObject *a) { return ctpy_wrap(ct_abs(ctpy_t(a))); }
static PyObject *nb_invert(PyObject *a) { return ctpy_wrap(ct_bitwise_not(ctpy_t(a))); }

PyNumberMethods ctpy_number_methods = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_remainder = nb_mod,
    .nb_power = nb_pow,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_bool = ctpy_tensor_bool,
    .nb_invert = nb_invert,
    .nb_and = nb_and,
    .nb_xor = nb_xor,
    .nb_or = nb_or,
    .nb_lshift = nb_lshift,
    .nb_rshift = nb_rshift,
    .nb_inplace_lshift = nb_ilshift,
    .nb_inplace_rshift = nb_irshift,
    .nb_int = ctpy_tensor_int,
    .nb_float = ctpy_tensor_float,
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_remainder = nb_imod,
    .nb_inplace_power = nb_ipow,
    .nb_inplace_and = nb_iand,
    .nb_inplace_xor = nb_ixor,
    .nb_inplace_or = nb_ior,
    .nb_floor_divide = nb_floordiv,
    .nb_true_divide = nb_truediv,
    .nb_inplace_floor_divide = nb_ifloordiv,
    .nb_inplace_true_divide = nb_itruediv,
    .nb_index = ctpy_tensor_index,
    .nb_matrix_multiply = nb_matmul,
};

PyObject *ctpy_richcompare(PyObject *a, PyObject *b, int cmp) {
  static const ctpy_binop *const ops[] = {[Py_LT] = &op_lt, [Py_LE] = &op_le, [Py_EQ] = &op_eq,
                                          [Py_NE] = &op_ne, [Py_GT] = &op_gt, [Py_GE] = &op_ge};
  return ctpy_binary(a, b, ops[cmp], true);
}

/* ---- Functions: unary
 * ------------------------------------------------------------------------------- */

const ct_tensor *ctpy_arg_tensor(PyObject *o, ct_tensor **owned) {
  *owned = NULL;
  if (ctpy_is_tensor(o)) return ctpy_t(o);
  return ctpy_operand(o, ctpy_default_device(), owned);
}

#define CTPY_UNARY_OPS(X)                                                                      \
  X(neg)                                                                                       \
  X(abs)                                                                                       \
  X(exp)                                                                                       \
  X(expm1)                                                                                     \
  X(log)                                                                                       \
  X(log1p)                                                                                     \
  X(log2)                                                                                      \
  X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(tanh) X(erf) X(sigmoid) X(relu) X(gelu) X(gelu_tanh) \
      X(silu) X(softplus) X(floor) X(ceil) X(round) X(trunc) X(sign) X(reciprocal) X(square) \
  X(acos) \
  X(acosh) \
  X(asin) \
  X(asinh) \
  X(atan) \
  X(atanh) \
  X(cosh) \
  X(sinh) \
  X(log10)
#define CTPY_PREDICATES(X) X(isnan) X(isinf) X(isfinite) X(logical_not) \
  X(signbit)

#define DEF_UNARY(name)                                                        \
  static PyObject *f_##name(PyObject *m, PyObject *arg) {                      \
    ct_tensor *owned, *r;                                                      \
    const ct_tensor *x = ctpy_arg_tensor(arg, &owned);                         \
    if (!x) return NULL;                                                       \
    CTPY_CALL(r, ctpy_is_big(x, NULL), ct_##name(x));                          \
    ct_free(owned);                                                            \
    return ctpy_wrap(r);                                                       \
  }                                                                            \
  static PyObject *f_##name##_(PyObject *m, PyObject *arg) {                   \
    if (!ctpy_is_tensor(arg))                                                  \
      return PyErr_Format(PyExc_TypeError, #name "_: a Tensor to write into"); \
    ct_tensor *r;                                                              \
    CTPY_CALL(r, ctpy_is_big(ctpy_t(arg), NULL), ct_##name##_(ctpy_t(arg)));   \
    if (!r) return ctpy_raise();                                               \
    return Py_NewRef(arg);                                                     \
  }
#define DEF_PREDICATE(name)                               \
  static PyObject *f_##name(PyObject *m, PyObject *arg) { \
    ct_tensor *owned;                                     \
    const ct_tensor *x = ctpy_arg_tensor(arg, &owned);    \
    if (!x) return NULL;                                  \
    ct_tensor *r = ct_##name(x);                          \
    ct_free(owned);                                       \
    return ctpy_wrap(r);                                  \
  }
CTPY_UNARY_OPS(DEF_UNARY)
DEF_UNARY(bitwise_not) /* integer and bool only */
CTPY_PREDICATES(DEF_PREDICATE)

/* ---- Functions: binary
 * --------------------------------------------------------------------------- */

#define DEF_BINARY_FN(name, op)                                                                    \
  static PyObject *f_##name(PyObject *m, PyObject *const *args, Py_ssize_t n) {                    \
    if (n != 2) return PyErr_Format(PyExc_TypeError, #name "() takes 2 arguments (%zd given)", n); \
    return ctpy_binary(args[0], args[1], &op, false);                                              \
  }                                                                                                \
  static PyObject *f_##name##_(PyObject *m, PyObject *const *args, Py_ssize_t n) {                 \
    if (n != 2)                                                                                    \
      return PyErr_Format(PyExc_TypeError, #name "_() takes 2 arguments (%zd given)", n);          \
    if (!ctpy_is_tensor(args[0]))                                                                  \
      return PyErr_Format(PyExc_TypeError, #name "_: a Tensor to write into");                     \
    return ctpy_binary_inplace(args[0], args[1], &op);                                             \
  }
#define DEF_ARITH_FN(name, c, f, s) DEF_BINARY_FN(name, op_##name)
CTPY_ARITH_OPS(DEF_ARITH_FN)
CTPY_BITWISE_OPS(DEF_ARITH_FN)
#define DEF_COMPARE_FN(name, c)                                                                    \
  static PyObject *f_##name(PyObject *m, PyObject *const *args, Py_ssize_t n) {                    \
    if (n != 2) return PyErr_Format(PyExc_TypeError, #name "() takes 2 arguments (%zd given)", n); \
    return ctpy_binary(args[0], args[1], &op_##name, false);                                       \
  }
CTPY_COMPARE_OPS(DEF_COMPARE_FN)

/* ---- The table ---------------------------------------------------------------------------------
 */

#define UNARY_ENTRIES(name)                                          \
  {#name, f_##name, METH_O, #name "(x): elementwise, a new tensor"}, \
      {#name "_", f_##name##_, METH_O, #name "_(x): elementwise, in place; returns x"},
#define PREDICATE_ENTRY(name) {#name, f_##name, METH_O, #name "(x): elementwise, bool results"},
#define ARITH_ENTRIES(name, c, f, s)                                          \
  {#name, CTPY_FASTCALL(f_##name),                                            \
   #name "(x1, x2): elementwise with broadcasting (either may be a number)"}, \
      {#name "_", CTPY_FASTCALL(f_##name##_), #name "_(x1, x2): in place into x1; returns x1"},
#define COMPARE_ENTRY(name, c) \
  {#name, CTPY_FASTCALL(f_##name), #name "(x1, x2): elementwise, bool results"},

PyMethodDef ctpy_ops_methods[] = {
    CTPY_UNARY_OPS(UNARY_ENTRIES) CTPY_PREDICATES(PREDICATE_ENTRY) CTPY_ARITH_OPS(ARITH_ENTRIES)
        CTPY_COMPARE_OPS(COMPARE_ENTRY) CTPY_BITWISE_OPS(ARITH_ENTRIES)
            UNARY_ENTRIES(bitwise_not){NULL},
};
