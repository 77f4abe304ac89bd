/* addmm, baddbmm (torch semantics) and outer.
 *
 * addmm and baddbmm run the backend's batched matmul slot, the one ct_matmul
 * uses: out (B, n, m) = a (B, n, k) @ b (B, k, m), optionally accumulated into
 * out. The result is written as
 *   alpha == 1:           out = beta * input, then out += m1 @ m2 (the GEMM's
 *                         beta = 1: no temporary, one pass over out);
 *   beta == 0:            out = m1 @ m2, then out *= alpha (input not read);
 *   otherwise:            out = beta * input, then out += alpha * (m1 @ m2)
 *                         through one temporary product.
 * The slot has no alpha/beta of its own because its CPU paths (gemv, the
 * f16/bf16 staging buffer, integer loops) take beta in {0, 1} only. */
#include "amp/amp_internal.h"
#include "autograd/autograd_internal.h"
#include "ctensor/products.h"
#include "ops/elementwise.h"
#include "ops/ops_internal.h"

/* The checks torch makes of addmm/baddbmm's arguments; rshape gets the
 * result's shape (rnd dims). */
static bool check_args(const char *op, const ct_tensor *input, const ct_tensor *m1,
                       const ct_tensor *m2, double beta, double alpha, int nd, int64_t *rshape) {
  if (!ct__check_same_device(op, m1, m2) || !ct__check_same_device(op, m1, input)) return false;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX], s3[CT_SHAPE_STR_MAX];
  if (m1->ndim != nd || m2->ndim != nd) {
    ct__fail(CT_ERR_SHAPE, "%s: expected %d-d tensors to multiply, got shapes %s and %s", op, nd,
             ct__shape_str(m1, s1, sizeof s1), ct__shape_str(m2, s2, sizeof s2));
    return false;
  }
  if (m1->shape[nd - 1] != m2->shape[nd - 2] || (nd == 3 && m1->shape[0] != m2->shape[0])) {
    ct__fail(CT_ERR_SHAPE, "%s: shapes %s and %s cannot be multiplied", op,
             ct__shape_str(m1, s1, sizeof s1), ct__shape_str(m2, s2, sizeof s2));
    return false;
  }
  if (m1->dtype != m2->dtype || m1->dtype != input->dtype) {
    ct__fail(CT_ERR_DTYPE, "%s: expected input, mat1 and mat2 of one dtype, got %s, %s and %s", op,
             ct_dtype_name(input->dtype), ct_dtype_name(m1->dtype), ct_dtype_name(m2->dtype));
    return false;
  }
  if (m1->dtype == CT_BOOL) {
    ct__fail(CT_ERR_DTYPE, "%s: not supported for bool tensors", op);
    return false;
  }
  if (!ct_dtype_is_floating(m1->dtype) && (beta != floor(beta) || alpha != floor(alpha))) {
    ct__fail(CT_ERR_ARG, "%s: beta (%g) and alpha (%g) must be integers for %s tensors", op, beta,
             alpha, ct_dtype_name(m1->dtype));
    return false;
  }
  if (nd == 3) rshape[0] = m1->shape[0];
  rshape[nd - 2] = m1->shape[nd - 2];
  rshape[nd - 1] = m2->shape[nd - 1];
  int64_t bs[CT_MAX_DIMS];
  int bnd = 0;
  bool ok = ct__broadcast_shapes(input->shape, input->ndim, rshape, nd, bs, &bnd) && bnd == nd;
  for (int d = 0; d < nd && ok; d++) ok = bs[d] == rshape[d];
  if (!ok) {
    ct__fail(CT_ERR_SHAPE, "%s: input of shape %s doesn't broadcast to the product's shape %s", op,
             ct__shape_str(input, s3, sizeof s3), ct_shape_format(rshape, nd, s1, sizeof s1));
    return false;
  }
  return true;
}

/* t (2-d or 3-d) as the (B, rows, cols) operand of the matmul slot. */
static ct_tensor *as3(const ct_tensor *t) {
  if (t->ndim == 3) return ct__view_of(t, t->dtype, t->shape, t->strides, 3, t->offset);
  return ct__view_of(t, t->dtype, (int64_t[]){1, t->shape[0], t->shape[1]},
                     (int64_t[]){0, t->strides[0], t->strides[1]}, 3, t->offset);
}

/* The matmul slot into res (contiguous, 2-d or 3-d); accumulate: res += m1 @ m2. */
static ct_status product_into(const ct_backend *be, ct_tensor *res, const ct_tensor *m1,
                              const ct_tensor *m2, bool accumulate) {
  ct_tensor *a3 = as3(m1), *b3 = as3(m2), *o3 = as3(res);
  ct_status st = a3 && b3 && o3 ? be->matmul(o3, a3, b3, accumulate) : CT_ERR_OOM;
  ct__release(a3);
  ct__release(b3);
  ct__release(o3);
  return st;
}

/* res *= s in place; ok passes a failure through. */
static ct_status scale_(ct_tensor *res, double s, ct_status st) {
  if (st != CT_OK || s == 1.0) return st;
  return ct__binary_scalar(CT_BOP_MUL, res, res, s, false) ? CT_OK : ct_last_error();
}

static ct_tensor *addmm_impl(const char *op, const ct_tensor *input, const ct_tensor *m1,
                             const ct_tensor *m2, double beta, double alpha, int nd) {
  if (!input || !m1 || !m2) return NULL;
  int64_t rshape[3];
  if (!check_args(op, input, m1, m2, beta, alpha, nd, rshape)) return NULL;
  const ct_backend *be = ct__backend_for(op, m1);
  if (!be) return NULL;
  CT_NEED_SLOT(be, matmul, op, m1);
  ct_tensor *res = ct__empty(rshape, nd, m1->dtype, ct__device(m1));
  if (!res) return NULL;
  ct_status st;
  if (beta == 0) {
    st = scale_(res, alpha, product_into(be, res, m1, m2, false));
  } else {
    st = scale_(res, beta, ct__copy_into(res, input));
    if (alpha == 1.0) {
      if (st == CT_OK) st = product_into(be, res, m1, m2, true);
    } else if (st == CT_OK) {
      ct_tensor *p = ct__empty(rshape, nd, m1->dtype, ct__device(m1));
      st = p ? product_into(be, p, m1, m2, false) : CT_ERR_OOM;
      if (st == CT_OK && !ct__add_scaled(res, res, p, alpha)) st = ct_last_error();
      ct__release(p);
    }
  }
  return ct__finish_out(NULL, res, st);
}

/* The public entry of addmm (nd 2) and baddbmm (nd 3): autocast, then the
 * product and its recording. */
static ct_tensor *addmm_entry(const char *op, int nd, const ct_tensor *input, const ct_tensor *m1,
                              const ct_tensor *m2, double beta, double alpha) {
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, input, m1, m2)) {
    ct_tensor *r = addmm_entry(op, nd, ac.t[0], ac.t[1], ac.t[2], beta, alpha);
    ct__autocast_done(&ac);
    return r;
  }
  ct_tensor *r = addmm_impl(op, input, m1, m2, beta, alpha, nd);
  return ct__track(ct__ag_addmm(r, input, m1, m2, beta, alpha));
}

ct_tensor *ct_addmm(const ct_tensor *input, const ct_tensor *m1, const ct_tensor *m2, double beta,
                    double alpha) {
  return addmm_entry("addmm", 2, input, m1, m2, beta, alpha);
}

ct_tensor *ct_baddbmm(const ct_tensor *input, const ct_tensor *b1, const ct_tensor *b2, double beta,
                      double alpha) {
  return addmm_entry("baddbmm", 3, input, b1, b2, beta, alpha);
}

/* torch.outer is a broadcast product, a (n, 1) * b (m): its gradient is mul's. */
ct_tensor *ct_outer(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return NULL;
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (a->ndim != 1 || b->ndim != 1)
    return ct__fail(CT_ERR_SHAPE, "outer: expected 1-d tensors, got shapes %s and %s",
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  ct_scope_begin(); /* the view is a temporary */
  ct_tensor *r = ct_keep(ct_mul(ct_unsqueeze(a, 1), b));
  ct_scope_end();
  return r;
}
