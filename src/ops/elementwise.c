/* Elementwise family, op layer: the helpers shared by the family's files
 * (results, operands, overlap, shapes), and the unary ops: ct__unary and the
 * public unary, clamp, leaky_relu and predicate functions. Binary arithmetic
 * is in arith.c, comparisons/where in compare.c; the op tables in
 * op_table.c. */
#include <math.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"

/* ---- Shared helpers ----------------------------------------------------------- */

/* Byte range [lo, hi) of the storage that t's elements occupy. */
static void byte_range(const ct_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t es = (int64_t)ct__elsize(t->dtype), a = t->offset, b = t->offset;
  for (int d = 0; d < t->ndim; d++) {
    int64_t ext = t->strides[d] * (t->shape[d] - 1);
    if (ext < 0)
      a += ext;
    else
      b += ext;
  }
  *lo = a * es;
  *hi = (b + 1) * es;
}

bool ct__ew_overlaps(const ct_tensor *out, const ct_tensor *in) {
  if (out->storage != in->storage || out->numel == 0 || in->numel == 0) return false;
  if (in->dtype == out->dtype && in->offset == out->offset && in->ndim <= out->ndim) {
    /* element for element: in's strides, broadcast to out's shape, match */
    bool same = true;
    for (int d = 0; d < out->ndim && same; d++) {
      int id = d - (out->ndim - in->ndim);
      int64_t st = (id >= 0 && in->shape[id] == out->shape[d]) ? in->strides[id] : 0;
      same = out->shape[d] == 1 || st == out->strides[d];
    }
    if (same) return false;
  }
  int64_t lo_o, hi_o, lo_i, hi_i;
  byte_range(out, &lo_o, &hi_o);
  byte_range(in, &lo_i, &hi_i);
  return lo_o < hi_i && lo_i < hi_o;
}

ct_tensor *ct__ew_result(const char *op, ct_tensor *out, const int64_t *shape, int ndim,
                         ct_dtype dtype, ct_device device, const ct_tensor *const *ins, int nins) {
  if (!out) return ct__empty(shape, ndim, dtype, device);
  ct_tensor *res = ct__result_for(op, out, shape, ndim, dtype, device);
  if (res != out) return res; /* NULL, or already a temporary */
  for (int i = 0; i < nins; i++) {
    if (ct__ew_overlaps(out, ins[i])) {
      ct__release(res);
      return ct__empty(shape, ndim, dtype, device);
    }
  }
  return res;
}

const ct_tensor *ct__ew_operand(const ct_tensor *in, ct_dtype dtype, const ct_tensor *res,
                                ct_tensor **tmp) {
  bool same_shape = in->ndim == res->ndim;
  for (int d = 0; d < in->ndim && same_shape; d++) same_shape = in->shape[d] == res->shape[d];
  *tmp = NULL;
  if (in->dtype == dtype && same_shape) return in;
  ct_tensor *c = ct__cast(in, dtype);
  if (c && !same_shape) {
    ct_tensor *b = ct__broadcast_to(c, res->shape, res->ndim);
    ct__release(c);
    c = b;
  }
  *tmp = c;
  return c;
}

bool ct__ew_broadcast(const char *op, const int64_t *a, int na, const int64_t *b, int nb,
                      int64_t *out, int *out_ndim) {
  if (ct__broadcast_shapes(a, na, b, nb, out, out_ndim)) return true;
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  ct__fail(CT_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast", op,
           ct_shape_format(a, na, sa, sizeof sa), ct_shape_format(b, nb, sb, sizeof sb));
  return false;
}

bool ct__ew_need_out(const char *op, const ct_tensor *out) {
  if (out) return true;
  if (ct_last_error() == CT_OK) ct__fail(CT_ERR_ARG, "%s: out is NULL", op);
  return false;
}

/* ---- Unary ------------------------------------------------------------------- */

/* A clamp bound keeps an integer tensor's dtype if it is integral or no bound
 * (infinite: the C API's "no bound", torch's None). */
static bool integral_bound(double v) { return isinf(v) || v == trunc(v); }

/* A finite clamp bound as the integer dtype dt holds it: checked for overflow
 * and wrapped as torch converts it (u8 takes -1 as 255). */
static bool integer_bound(double *v, ct_dtype dt) {
  if (isinf(*v)) return true;
  if (!ct__check_scalar_fits("clamp", *v, dt)) return false;
  unsigned char buf[8];
  ct__store_from_double(buf, dt, *v);
  *v = ct__load_as_double(buf, dt);
  return true;
}

/* Dtypes of a unary op on x (PyTorch's rules): *cd the dtype the kernel reads,
 * *rd the result's, *copy when the op is the identity (a copy, maybe a cast).
 * False with an error for a dtype torch refuses. */
static bool unary_dtypes(ct_unary_op op, ct_dtype xd, double *p0, double *p1, ct_dtype *cd,
                         ct_dtype *rd, bool *copy) {
  const ct_unary_info *info = &ct__unary_info[op];
  *cd = *rd = xd;
  *copy = false;
  if (info->rule == CT_RULE_BOOL) {
    *rd = CT_BOOL;
    return true;
  }
  if (info->rule == CT_RULE_INT) {
    if (!ct_dtype_is_floating(xd)) return true; /* bool too: a one-bit integer */
    return ct__fail(CT_ERR_DTYPE, "%s: integer or bool operands only, got %s", info->name,
                    ct_dtype_name(xd)),
           false;
  }
  if (ct_dtype_is_floating(xd)) return true;
  if (info->rule == CT_RULE_FLOATONLY)
    return ct__fail(CT_ERR_DTYPE, "%s: expected a floating tensor, got %s", info->name,
                    ct_dtype_name(xd)),
           false;
  if (info->rule == CT_RULE_FLOAT) {
    *cd = *rd = CT_F32;
    return true;
  }
  if (op == CT_UOP_CLAMP) {
    /* bounds promote as scalars: a fractional or nan bound gives f32, an
     * integral one with a bool tensor i64 (torch.clamp(bool, 0, 1) is i64) */
    if (!integral_bound(*p0) || !integral_bound(*p1))
      *cd = *rd = CT_F32;
    else if (xd == CT_BOOL)
      *cd = *rd = CT_I64;
    return ct_dtype_is_floating(*rd) || (integer_bound(p0, *rd) && integer_bound(p1, *rd));
  }
  if (xd == CT_BOOL) {
    switch (op) {
      case CT_UOP_SIGN:
        *copy = true;
        return true; /* bool, as torch */
      case CT_UOP_SQUARE:
        *rd = CT_I64, *copy = true;
        return true; /* pow(bool, 2): i64 */
      case CT_UOP_NEG:
        return ct__fail(CT_ERR_DTYPE,
                        "neg: negation of a bool tensor is not supported; use "
                        "logical_not"),
               false;
      default: /* abs, relu, floor, ceil, round, trunc: torch has no bool form */
        return ct__fail(CT_ERR_DTYPE, "%s: not supported for bool tensors", info->name), false;
    }
  }
  *copy = info->rule == CT_RULE_IDENT;
  return true;
}

ct_tensor *ct__unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1) {
  if (!x) return NULL;
  const ct_unary_info *info = &ct__unary_info[op];
  ct_dtype cd, rd; /* cd: dtype the kernel reads; rd: result dtype */
  bool copy;       /* identity for x's dtype */
  if (!unary_dtypes(op, x->dtype, &p0, &p1, &cd, &rd, &copy)) return NULL;
  const ct_backend *be = ct__backend_for(info->name, x);
  if (!be) return NULL;
  if (!copy) CT_NEED_SLOT(be, unary, info->name, x);
  ct_tensor *res = ct__ew_result(info->name, out, x->shape, x->ndim, rd, ct__device(x), &x, 1);
  if (!res) return NULL;
  ct_status st;
  if (copy) {
    st = res == x ? CT_OK : be->copy(res, x);
  } else if (op == CT_UOP_CLAMP && (isnan(p0) || isnan(p1))) {
    st = be->fill(res, NAN); /* a nan bound makes every element nan, as torch */
  } else {
    ct_tensor *tmp;
    const ct_tensor *xin = ct__ew_operand(x, cd, res, &tmp);
    st = xin ? be->unary(op, res, xin, p0, p1) : ct_last_error();
    ct__release(tmp);
  }
  return ct__finish_out(out, res, st);
}

/* Autograd: out-of-place and in-place forms record the same node (an
 * in-place write rewrites the history of x, as PyTorch); _out forms don't
 * record and refuse inputs that require grad. */
static ct_tensor *unary_inplace(ct_unary_op op, const char *name, ct_tensor *x, double p0,
                                double p1) {
  ct_inplace ip;
  if (!ct__ag_inplace_begin(&ip, name, x, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_unary(x, op, x, p0, p1)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, ct__unary(op, x, x, p0, p1));
}
static ct_tensor *unary_out(ct_unary_op op, const char *name, ct_tensor *out, const ct_tensor *x,
                            double p0, double p1) {
  if (!x || !ct__ew_need_out(name, out) || !ct__ag_out_allowed(name, out, &x, 1)) return NULL;
  return ct__unary(op, out, x, p0, p1);
}
static ct_tensor *unary_new(ct_unary_op op, const ct_tensor *x, double p0, double p1) {
  return ct__track(ct__ag_unary(ct__unary(op, NULL, x, p0, p1), op, x, p0, p1));
}

/* The public functions of the op table's GEN rows (ctensor/ops.h documents
 * each): ct_NAME(x), ct_NAME_(x), ct_NAME_out(out, x), and ct_NAME(x) alone
 * for the predicates (bool results, never recorded). */
#define DEFINE_PUBLIC_UNARY(E, name)                                                              \
  ct_tensor *ct_##name(const ct_tensor *x) { return unary_new(CT_UOP_##E, x, 0, 0); }             \
  ct_tensor *ct_##name##_(ct_tensor *x) { return unary_inplace(CT_UOP_##E, #name "_", x, 0, 0); } \
  ct_tensor *ct_##name##_out(ct_tensor *out, const ct_tensor *x) {                                \
    return unary_out(CT_UOP_##E, #name "_out", out, x, 0, 0);                                     \
  }
CT_UNARY_GEN_OPS(DEFINE_PUBLIC_UNARY)
#define DEFINE_PUBLIC_PREDICATE(E, name)                    \
  ct_tensor *ct_##name(const ct_tensor *x) {                \
    return ct__track(ct__unary(CT_UOP_##E, NULL, x, 0, 0)); \
  }
CT_UNARY_GEN_PREDICATES(DEFINE_PUBLIC_PREDICATE)

ct_tensor *ct_clamp(const ct_tensor *x, double lo, double hi) {
  return unary_new(CT_UOP_CLAMP, x, lo, hi);
}
ct_tensor *ct_clamp_(ct_tensor *x, double lo, double hi) {
  return unary_inplace(CT_UOP_CLAMP, "clamp_", x, lo, hi);
}
ct_tensor *ct_clamp_out(ct_tensor *out, const ct_tensor *x, double lo, double hi) {
  return unary_out(CT_UOP_CLAMP, "clamp_out", out, x, lo, hi);
}

ct_tensor *ct_leaky_relu(const ct_tensor *x, double slope) {
  return unary_new(CT_UOP_LEAKY_RELU, x, slope, 0);
}
ct_tensor *ct_leaky_relu_(ct_tensor *x, double slope) {
  return unary_inplace(CT_UOP_LEAKY_RELU, "leaky_relu_", x, slope, 0);
}
