/* Linear algebra (ctensor/linalg.h) with the array API's linalg signatures, einsum
 * (ctensor/products.h) and scaled dot-product attention (ctensor/attention.h). Factorizations
 * returning several tensors give tuples; ctensor/linalg.py names their fields. */
#include <float.h>

#include "ctpy.h"

/* f(x) for the one-tensor functions */
#define DEF_LINALG1(name, call) \
  static PyObject *f_##name(PyObject *m, PyObject *xo) { CTPY_RETURN_ON_TENSOR_NOGIL(xo, x, call); }
DEF_LINALG1(inv, ct_linalg_inv(x))
DEF_LINALG1(det, ct_linalg_det(x))
DEF_LINALG1(eigvalsh, ct_linalg_eigh(x, false, NULL))
DEF_LINALG1(svdvals, ct_linalg_svd(x, false, NULL, NULL))

/* f(x) -> (a, b) for slogdet and eigh */
#define DEF_LINALG_PAIR(name, first, second, call)       \
  static PyObject *f_##name(PyObject *m, PyObject *xo) { \
    ct_tensor *t[2] = {NULL, NULL};                      \
    CTPY_RETURN_TUPLE_ON_TENSOR(xo, x, t, first, call);  \
  }
DEF_LINALG_PAIR(slogdet, 1, 0, ct_linalg_slogdet(x, &t[0]))  /* (sign, logabsdet) */
DEF_LINALG_PAIR(eigh, 0, 1, ct_linalg_eigh(x, false, &t[1])) /* (eigenvalues, eigenvectors) */

/* The standard's solve: x2 is a vector only when 1-d. ct_linalg_solve (torch's rule) also takes
 * an x2 of x1's shape without its last dim as a batch of vectors; such an x2 is a matrix here,
 * so x1 gets a leading batch dim of 1, which torch's rule cannot match, removed after. */
static ct_tensor *solve_standard(const ct_tensor *a, const ct_tensor *b) {
  int na = ct_ndim(a), nb = ct_ndim(b);
  bool ambiguous =
      nb >= 2 && nb == na - 1 && !memcmp(ct_shape(a), ct_shape(b), sizeof(int64_t) * nb);
  if (!ambiguous) return ct_linalg_solve(a, b);
  ct_tensor *a1 = ct_unsqueeze(a, 0), *r1 = a1 ? ct_linalg_solve(a1, b) : NULL;
  ct_tensor *r = r1 ? ct_select(r1, 0, 0) : NULL;
  ct_free(a1);
  ct_free(r1);
  return r;
}

/* solve(x1, x2, /) */
static PyObject *f_solve(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  if (n != 2) return PyErr_Format(PyExc_TypeError, "solve() takes 2 arguments (%zd given)", n);
  ct_tensor *oa, *ob = NULL, *r;
  const ct_tensor *a = ctpy_arg_tensor(args[0], &oa), *b;
  if (!a) return NULL;
  if (!(b = ctpy_operand(args[1], ct_device_of(a), &ob))) return ct_free(oa), NULL;
  CTPY_CALL(r, ctpy_is_big(a, b), solve_standard(a, b));
  ct_free(oa);
  ct_free(ob);
  return ctpy_wrap(r);
}

/* cross(x1, x2, /, *, axis=-1): the standard's linalg.cross (ctensor/linalg.h ct_linalg_cross) */
static PyObject *f_cross(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *ao, *bo;
  int axis = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$i:cross", CTPY_KW("x1", "x2", "axis"), &ao,
                                   &bo, &axis))
    return NULL;
  ct_tensor *oa, *ob = NULL, *r;
  const ct_tensor *a = ctpy_arg_tensor(ao, &oa), *b;
  if (!a) return NULL;
  if (!(b = ctpy_operand(bo, ct_device_of(a), &ob))) return ct_free(oa), NULL;
  CTPY_CALL(r, ctpy_is_big(a, b), ct_linalg_cross(a, b, axis));
  ct_free(oa);
  ct_free(ob);
  return ctpy_wrap(r);
}

/* cholesky(x, /, *, upper=False) */
static PyObject *f_cholesky(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  int upper = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:cholesky", CTPY_KW("x", "upper"), &xo,
                                   &upper))
    return NULL;
  CTPY_RETURN_ON_TENSOR_NOGIL(xo, x, ct_linalg_cholesky(x, upper));
}

/* qr(x, /, *, mode='reduced') -> (Q, R) */
static PyObject *f_qr(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  const char *mode = "reduced";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$s:qr", CTPY_KW("x", "mode"), &xo, &mode))
    return NULL;
  if (strcmp(mode, "reduced") != 0 && strcmp(mode, "complete") != 0)
    return PyErr_Format(PyExc_ValueError, "qr: mode must be 'reduced' or 'complete', got '%s'",
                        mode);
  ct_tensor *t[2] = {NULL, NULL};
  CTPY_RETURN_TUPLE_ON_TENSOR(xo, x, t, 0, ct_linalg_qr(x, mode[0] == 'c', &t[1]));
}

/* svd(x, /, *, full_matrices=True) -> (U, S, Vh) */
static PyObject *f_svd(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  int full = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:svd", CTPY_KW("x", "full_matrices"), &xo,
                                   &full))
    return NULL;
  ct_tensor *t[3] = {NULL, NULL, NULL};
  CTPY_RETURN_TUPLE_ON_TENSOR(xo, x, t, 1, ct_linalg_svd(x, full, &t[0], &t[2]));
}

/* matrix_norm(x, /, *, keepdims=False, ord='fro'): ord is C's string ("fro", "nuc", "2", "-2",
 * "1", "-1", "inf", "-inf"); ctensor/linalg.py turns the standard's numbers into it */
static PyObject *f_matrix_norm(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *xo;
  int keepdims = 0;
  const char *ord = "fro";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$ps:matrix_norm",
                                   CTPY_KW("x", "keepdims", "ord"), &xo, &keepdims, &ord))
    return NULL;
  CTPY_RETURN_ON_TENSOR_NOGIL(xo, x, ct_linalg_matrix_norm(x, ord, keepdims));
}

/* lstsq(A, B, rcond=None, *, driver=None) -> (solution, residuals, rank, singular_values), as
 * torch.linalg.lstsq. The C library reads rcond 0 as "the default"; Python's None is that, and
 * an explicit 0 (nothing below the largest singular value counts as zero but exact zeros) becomes
 * the smallest positive double. */
static PyObject *f_lstsq(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *ao, *bo, *rcond_o = Py_None;
  const char *driver = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$z:lstsq",
                                   CTPY_KW("A", "B", "rcond", "driver"), &ao, &bo, &rcond_o,
                                   &driver))
    return NULL;
  ct_lstsq_opts o = {.driver = driver};
  if (rcond_o != Py_None) {
    if ((o.rcond = PyFloat_AsDouble(rcond_o)) == -1 && PyErr_Occurred()) return NULL;
    if (o.rcond == 0) o.rcond = DBL_MIN;
  }
  ct_tensor *oa, *ob = NULL;
  const ct_tensor *a = ctpy_arg_tensor(ao, &oa), *b;
  if (!a) return NULL;
  if (!(b = ctpy_operand(bo, ct_device_of(a), &ob))) return ct_free(oa), NULL;
  ct_lstsq_result r;
  ct_status st;
  CTPY_CALL(st, ctpy_is_big(a, b), ct_linalg_lstsq_ex(a, b, &o, &r));
  ct_free(oa);
  ct_free(ob);
  if (st != CT_OK) {
    ct_free(r.solution), ct_free(r.residuals), ct_free(r.rank), ct_free(r.singular_values);
    return ctpy_raise();
  }
  return ctpy_tuple((ct_tensor *[]){r.solution, r.residuals, r.rank, r.singular_values}, 4);
}

/* einsum(equation, *operands), or einsum(equation, [operands]) as torch allows */
static PyObject *f_einsum(PyObject *m, PyObject *args) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
    return PyErr_Format(PyExc_TypeError, "einsum(equation, *operands): an equation string first");
  const char *eq = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
  if (!eq) return NULL;
  PyObject *ops = n == 2 && PyList_Check(PyTuple_GET_ITEM(args, 1))
                      ? PySequence_Tuple(PyTuple_GET_ITEM(args, 1))
                      : PyTuple_GetSlice(args, 1, n);
  if (!ops) return NULL;
  Py_ssize_t k = PyTuple_GET_SIZE(ops);
  ct_tensor **ts, **owned;
  PyObject *res = NULL;
  if (ctpy_operands(ops, &ts, &owned) == 0) {
    ct_tensor *r;
    CTPY_CALL(r, k > 0 && ctpy_is_big(ts[0], NULL), ct_einsum(eq, ts, (int)k));
    ctpy_free_operands(ts, owned, k);
    res = ctpy_wrap(r);
  }
  Py_DECREF(ops);
  return res;
}

/* scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
 * is_causal=False, scale=None), as torch.nn.functional's */
static PyObject *f_sdpa(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *qo, *ko, *vo, *mask_o = Py_None, *scale_o = Py_None;
  double dropout_p = 0, scale = 0;
  int causal = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "OOO|OdpO:scaled_dot_product_attention",
          CTPY_KW("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale"), &qo,
          &ko, &vo, &mask_o, &dropout_p, &causal, &scale_o))
    return NULL;
  if (scale_o != Py_None && (scale = PyFloat_AsDouble(scale_o)) == -1 && PyErr_Occurred())
    return NULL;
  ct_tensor *oq, *ok = NULL, *ov = NULL, *om = NULL, *r = NULL;
  const ct_tensor *q = ctpy_arg_tensor(qo, &oq), *k = NULL, *v = NULL, *mask = NULL;
  if (!q) return NULL;
  ct_device dev = ct_device_of(q);
  if ((k = ctpy_operand(ko, dev, &ok)) && (v = ctpy_operand(vo, dev, &ov)) &&
      (mask_o == Py_None || (mask = ctpy_operand(mask_o, dev, &om)))) {
    CTPY_CALL(r, ctpy_is_big(q, k),
              ct_scaled_dot_product_attention(q, k, v, mask, causal, dropout_p, scale, NULL));
    if (!r) ctpy_raise();
  }
  ct_free(oq);
  ct_free(ok);
  ct_free(ov);
  ct_free(om);
  return r ? ctpy_wrap(r) : NULL;
}

PyMethodDef ctpy_linalg_methods[] = {
    {"linalg_solve", CTPY_FASTCALL(f_solve), "linalg_solve(x1, x2, /): X with x1 @ X == x2"},
    {"linalg_inv", f_inv, METH_O, "linalg_inv(x, /)"},
    {"linalg_cross", CTPY_KWARGS(f_cross), "linalg_cross(x1, x2, /, *, axis=-1)"},
    {"linalg_det", f_det, METH_O, "linalg_det(x, /)"},
    {"linalg_slogdet", f_slogdet, METH_O, "linalg_slogdet(x, /): (sign, logabsdet)"},
    {"linalg_eigh", f_eigh, METH_O, "linalg_eigh(x, /): (eigenvalues, eigenvectors)"},
    {"linalg_eigvalsh", f_eigvalsh, METH_O, "linalg_eigvalsh(x, /)"},
    {"linalg_svdvals", f_svdvals, METH_O, "linalg_svdvals(x, /)"},
    {"linalg_cholesky", CTPY_KWARGS(f_cholesky), "linalg_cholesky(x, /, *, upper=False)"},
    {"linalg_qr", CTPY_KWARGS(f_qr), "linalg_qr(x, /, *, mode='reduced'): (Q, R)"},
    {"linalg_svd", CTPY_KWARGS(f_svd), "linalg_svd(x, /, *, full_matrices=True): (U, S, Vh)"},
    {"linalg_matrix_norm", CTPY_KWARGS(f_matrix_norm),
     "linalg_matrix_norm(x, /, *, keepdims=False, ord='fro'): ord as a string"},
    {"linalg_lstsq", CTPY_KWARGS(f_lstsq),
     "linalg_lstsq(A, B, rcond=None, *, driver=None): (solution, residuals, rank, "
     "singular_values)"},
    {"einsum", f_einsum, METH_VARARGS, "einsum(equation, *operands)"},
    {"scaled_dot_product_attention", CTPY_KWARGS(f_sdpa),
     "scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, "
     "is_causal=False, scale=None)"},
    {NULL},
};
