/* Elementwise family, op layer: binary arithmetic with broadcasting and
 * promotion (ct__binary, also used for comparisons by compare.c), the scalar
 * forms (ct__binary_scalar), a + alpha * b (ct__add_scaled), and the public
 * arithmetic functions. */
#include <math.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"

/* ---- Dtype rules ------------------------------------------------------------ */

ct_dtype ct__scalar_dtype(ct_dtype t, double s) {
  if (ct_dtype_is_floating(t)) return t;
  if (!isfinite(s) || s != trunc(s)) return CT_F32;
  return t == CT_BOOL ? CT_I64 : t;
}

/* PyTorch's result_type of two tensors: dimensioned operands (ndim >= 1, even
 * of size 0) decide, and a 0-d operand counts only when its category (bool <
 * integer < floating) is higher than theirs: i16 * 0-d i32 is i16, f32 * 0-d
 * f64 is f32, i32 * 0-d f64 is f64 (torch.result_type). Two 0-d operands, or
 * two dimensioned ones, promote as ct_promote_types. */
ct_dtype ct__result_type(const ct_tensor *a, const ct_tensor *b) {
  if ((a->ndim == 0) == (b->ndim == 0)) return ct_promote_types(a->dtype, b->dtype);
  ct_dtype dim = a->ndim ? a->dtype : b->dtype, zero = a->ndim ? b->dtype : a->dtype;
  if (ct_dtype_is_floating(dim)) return dim;
  if (dim == CT_BOOL || ct_dtype_is_floating(zero)) return ct_promote_types(dim, zero);
  return dim;
}

ct_dtype ct_result_type(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return CT_F32;
  return ct__result_type(a, b);
}

/* Compute dtype from the promoted dtype p, by the op's rule. */
static ct_dtype compute_dtype(ct_binary_op op, ct_dtype p) {
  if (ct__binary_info[op].rule == CT_BRULE_FLOAT && !ct_dtype_is_floating(p)) return CT_F32;
  return p;
}

static ct_dtype result_of(ct_binary_op op, ct_dtype cd) {
  return ct__binary_info[op].rule == CT_BRULE_COMPARE ? CT_BOOL : cd;
}

ct_dtype ct__binary_result_dtype(ct_binary_op op, ct_dtype a, ct_dtype b) {
  return result_of(op, compute_dtype(op, ct_promote_types(a, b)));
}

/* Arithmetic on two bools: add (or), mul (and), maximum, minimum only, as
 * torch; and no subtraction with a bool operand at all (i32 - bool, bool - 1:
 * torch raises, pointing to logical_not / logical_xor). */
static bool check_bool(ct_binary_op op, ct_dtype cd, ct_dtype a, ct_dtype b) {
  if (op == CT_BOP_SUB && (a == CT_BOOL || b == CT_BOOL)) {
    ct__fail(CT_ERR_DTYPE,
             "sub: subtraction with a bool tensor is not supported; use "
             "logical_not or logical_xor");
    return false;
  }
  if (cd != CT_BOOL || ct__binary_info[op].rule == CT_BRULE_COMPARE) return true;
  if (op == CT_BOP_BITWISE_AND || op == CT_BOP_BITWISE_OR || op == CT_BOP_BITWISE_XOR) return true;
  if (op == CT_BOP_ADD || op == CT_BOP_MUL || op == CT_BOP_MAXIMUM || op == CT_BOP_MINIMUM)
    return true;
  ct__fail(CT_ERR_DTYPE, "%s: not supported for bool tensors%s", ct__binary_info[op].name,
           op == CT_BOP_SUB ? "; use logical_xor" : "");
  return false;
}

/* The INT rule: integer and bool operands only, as torch ("bitwise_and" is
 * not implemented for float). t names the floating operand's dtype, or the
 * scalar's when it is not an integer (cd is then f32). */
static bool check_int(ct_binary_op op, ct_dtype cd, ct_dtype a, ct_dtype b, const double *s) {
  if (ct__binary_info[op].rule != CT_BRULE_INT || !ct_dtype_is_floating(cd)) return true;
  if (s && !ct_dtype_is_floating(a))
    ct__fail(CT_ERR_DTYPE, "%s: integer or bool operands only, got the number %g",
             ct__binary_info[op].name, *s);
  else
    ct__fail(CT_ERR_DTYPE, "%s: integer or bool operands only, got %s", ct__binary_info[op].name,
             ct_dtype_name(ct_dtype_is_floating(a) ? a : b));
  return false;
}

/* ---- Tensor op tensor ---------------------------------------------------------- */

/* Shared by ct__binary and ct__add_scaled: broadcast, result, operands, kernel. */
static ct_tensor *run_two(ct_binary_op op, bool axpy, double alpha, ct_tensor *out,
                          const ct_tensor *a, const ct_tensor *b, ct_dtype cd, ct_dtype rd) {
  const char *name = axpy ? "add" : ct__binary_info[op].name;
  int64_t bshape[CT_MAX_DIMS];
  const int64_t *shape = a->shape;
  int ndim = a->ndim;
  bool same = a->ndim == b->ndim;
  for (int d = 0; d < ndim && same; d++) same = a->shape[d] == b->shape[d];
  if (!same) {
    if (!ct__ew_broadcast(name, a->shape, a->ndim, b->shape, b->ndim, bshape, &ndim)) return NULL;
    shape = bshape;
  }
  const ct_backend *be = ct__backend_for(name, a);
  if (!be) return NULL;
  if (axpy)
    CT_NEED_SLOT(be, axpy, name, a);
  else
    CT_NEED_SLOT(be, binary, name, a);
  const ct_tensor *ins[2] = {a, b};
  ct_tensor *res = ct__ew_result(name, out, shape, ndim, rd, ct__device(a), ins, 2);
  if (!res) return NULL;
  ct_tensor *ta, *tb;
  const ct_tensor *xa = ct__ew_operand(a, cd, res, &ta);
  const ct_tensor *xb = xa ? ct__ew_operand(b, cd, res, &tb) : (tb = NULL);
  ct_status st = !xa || !xb ? ct_last_error()
                 : axpy     ? be->axpy(res, xa, xb, alpha)
                            : be->binary(op, res, xa, xb);
  ct__release(ta);
  ct__release(tb);
  return ct__finish_out(out, res, st);
}

ct_tensor *ct__binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return NULL;
  if (CT_UNLIKELY(!ct_device_equal(ct__device(a), ct__device(b))) &&
      !ct__check_same_device(ct__binary_info[op].name, a, b))
    return NULL;
  ct_dtype cd = compute_dtype(op, ct__result_type(a, b));
  if (!check_int(op, cd, a->dtype, b->dtype, NULL) || !check_bool(op, cd, a->dtype, b->dtype))
    return NULL;
  return run_two(op, false, 0, out, a, b, cd, result_of(op, cd));
}

ct_tensor *ct__add_scaled(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha) {
  if (!a || !b) return NULL;
  if (!ct__check_same_device("add", a, b)) return NULL;
  ct_dtype cd = ct__result_type(a, b);
  if (!ct_dtype_is_floating(cd) && (!isfinite(alpha) || alpha != trunc(alpha)))
    return ct__fail(CT_ERR_ARG, "add: for integer tensors alpha must be an integer, got %g", alpha);
  return run_two(CT_BOP_ADD, true, alpha, out, a, b, cd, cd);
}

/* ---- Tensor op scalar ------------------------------------------------------------- */

ct_tensor *ct__binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                             bool reversed) {
  if (!a) return NULL;
  const char *name = ct__binary_info[op].name;
  ct_dtype cd = compute_dtype(op, ct__scalar_dtype(a->dtype, s));
  if (!check_int(op, cd, a->dtype, a->dtype, &s) || !check_bool(op, cd, a->dtype, a->dtype))
    return NULL;
  if (!ct_dtype_is_floating(cd) && !reversed) {
    /* checked before anything is written, so an in-place call leaves a alone */
    if (op == CT_BOP_POW && s < 0)
      return ct__fail(CT_ERR_ARG, "pow: integers to negative integer powers are not allowed");
    /* torch converts an integer exponent to the tensor's dtype, checked, and
     * so does its clamp, which a maximum/minimum with a number is */
    if ((op == CT_BOP_POW || op == CT_BOP_MAXIMUM || op == CT_BOP_MINIMUM) &&
        !ct__check_scalar_fits(name, s, cd))
      return NULL;
    /* as torch, whose kernel raises: not for an empty tensor */
    if ((op == CT_BOP_FLOOR_DIVIDE || op == CT_BOP_REMAINDER || op == CT_BOP_FMOD) && s == 0 &&
        a->numel > 0)
      return ct__fail(CT_ERR_ARG, "%s: integer division by zero", name);
  }
  /* torch compares in the common dtype, the number converted to it first:
   * an f16 tensor's 65504 < 1e10 is false (1e10 is inf in f16), an f32's 0.1f
   * == 0.1 is true */
  if (ct__binary_info[op].rule == CT_BRULE_COMPARE && ct_dtype_is_floating(cd) && cd != CT_F64) {
    unsigned char buf[8];
    ct__store_from_double(buf, cd, s);
    s = ct__load_as_double(buf, cd);
  }
  const ct_backend *be = ct__backend_for(name, a);
  if (!be) return NULL;
  CT_NEED_SLOT(be, binary_scalar, name, a);
  ct_tensor *res =
      ct__ew_result(name, out, a->shape, a->ndim, result_of(op, cd), ct__device(a), &a, 1);
  if (!res) return NULL;
  ct_tensor *tmp;
  const ct_tensor *xa = ct__ew_operand(a, cd, res, &tmp);
  ct_status st = xa ? be->binary_scalar(op, res, xa, s, reversed) : ct_last_error();
  ct__release(tmp);
  return ct__finish_out(out, res, st);
}

/* ---- Public functions ---------------------------------------------------------------- */

/* Autograd: out-of-place and in-place forms record the same node (an
 * in-place write rewrites the history of a, as PyTorch); _out forms don't
 * record and refuse inputs that require grad. */
static ct_tensor *binary_inplace(ct_binary_op op, const char *name, ct_tensor *a,
                                 const ct_tensor *b) {
  ct_inplace ip;
  if (!b || !ct__ag_inplace_begin(&ip, name, a, &b, 1)) return NULL;
  if (ip.record && !ct__ag_binary(a, op, a, b)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__binary(op, a, a, b));
}
static ct_tensor *binary_out(ct_binary_op op, const char *name, ct_tensor *out, const ct_tensor *a,
                             const ct_tensor *b) {
  const ct_tensor *ins[2] = {a, b};
  if (!a || !b || !ct__ew_need_out(name, out) || !ct__ag_out_allowed(name, out, ins, 2))
    return NULL;
  return ct__binary(op, out, a, b);
}
static ct_tensor *scalar_inplace(ct_binary_op op, const char *name, ct_tensor *a, double s) {
  ct_inplace ip;
  if (!ct__ag_inplace_begin(&ip, name, a, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_binary_scalar(a, op, a, s, false)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__binary_scalar(op, a, a, s, false));
}

#define DEFINE_PUBLIC_BINARY(E, name)                                                       \
  ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b) {                            \
    return ct__track(ct__ag_binary(ct__binary(CT_BOP_##E, NULL, a, b), CT_BOP_##E, a, b));  \
  }                                                                                         \
  ct_tensor *ct_##name##_(ct_tensor *a, const ct_tensor *b) {                               \
    return binary_inplace(CT_BOP_##E, #name "_", a, b);                                     \
  }                                                                                         \
  ct_tensor *ct_##name##_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {      \
    return binary_out(CT_BOP_##E, #name "_out", out, a, b);                                 \
  }                                                                                         \
  ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s) {                             \
    return ct__track(ct__ag_binary_scalar(ct__binary_scalar(CT_BOP_##E, NULL, a, s, false), \
                                          CT_BOP_##E, a, s, false));                        \
  }                                                                                         \
  ct_tensor *ct_##name##_scalar_(ct_tensor *a, double s) {                                  \
    return scalar_inplace(CT_BOP_##E, #name "_scalar_", a, s);                              \
  }
/* One set per ARITH and FLOAT row of the op table (ops/op_table.h); each
 * function is declared and documented by name in ctensor/ops.h. */
CT_BINARY_ARITH_OPS(DEFINE_PUBLIC_BINARY)
/* and per INT row (the bitwise ops): never recorded, integer results. */
CT_BINARY_INT_RULE_OPS(DEFINE_PUBLIC_BINARY)

ct_tensor *ct_rsub_scalar(const ct_tensor *a, double s) {
  return ct__track(ct__ag_binary_scalar(ct__binary_scalar(CT_BOP_SUB, NULL, a, s, true), CT_BOP_SUB,
                                        a, s, true));
}
ct_tensor *ct_rdiv_scalar(const ct_tensor *a, double s) {
  return ct__track(ct__ag_binary_scalar(ct__binary_scalar(CT_BOP_DIV, NULL, a, s, true), CT_BOP_DIV,
                                        a, s, true));
}
ct_tensor *ct_add_scaled(const ct_tensor *a, const ct_tensor *b, double alpha) {
  return ct__track(ct__ag_add_scaled(ct__add_scaled(NULL, a, b, alpha), a, b, alpha));
}
ct_tensor *ct_add_scaled_(ct_tensor *a, const ct_tensor *b, double alpha) {
  ct_inplace ip;
  if (!b || !ct__ag_inplace_begin(&ip, "add_scaled_", a, &b, 1)) return NULL;
  if (ip.record && !ct__ag_add_scaled(a, a, b, alpha)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__add_scaled(a, a, b, alpha));
}
ct_tensor *ct_bitwise_left_shift_rscalar(const ct_tensor *a, double s) {
  return ct__track(ct__binary_scalar(CT_BOP_BITWISE_LEFT_SHIFT, NULL, a, s, true));
}
ct_tensor *ct_bitwise_right_shift_rscalar(const ct_tensor *a, double s) {
  return ct__track(ct__binary_scalar(CT_BOP_BITWISE_RIGHT_SHIFT, NULL, a, s, true));
}
