/* Linear algebra: matmul (torch.matmul semantics), mm, bmm, dot, linear.
 *
 * Every product is reduced to the backend's one batched slot,
 * out (B, n, m) = a (B, n, k) @ b (B, k, m), by building 3-d views:
 *  - 1-d operands become a (1, k) row or a (k, 1) column (stride along the
 *    added dim is irrelevant; the added dim is left out of the result);
 *  - batch dims broadcast (stride 0) and are merged into one batch dim when
 *    their strides allow it, else that operand is copied contiguous;
 *  - a batched left operand times an unbatched right one is folded into a
 *    single (1, B*n, k) x (k, m) product when a's batch and row dims merge,
 *    as torch does, so BLAS sees one large GEMM.
 * Views are passed with their strides: the backend decides which layouts its
 * BLAS reads in place (transposed views cost no copy). */
#include "amp/amp_internal.h"
#include "autograd/autograd_internal.h"
#include "ops/linalg.h"

#include "ops/ops_internal.h"

/* Whether dims (shape, strides)[0..nd) merge into one dim; *stride gets the
 * stride of the merged dim (that of its innermost non-unit dim). */
static bool merge_dims(const int64_t *shape, const int64_t *strides, int nd, int64_t *stride) {
  for (int d = 0; d < nd; d++)
    if (shape[d] == 0) {
      *stride = 0;
      return true;
    }
  int64_t st = 0, expected = 0;
  bool first = true;
  for (int d = nd - 1; d >= 0; d--) {
    if (shape[d] == 1) continue;
    if (first) {
      st = strides[d];
      first = false;
    } else if (strides[d] != expected) {
      return false;
    }
    expected = strides[d] * shape[d];
  }
  *stride = st;
  return true;
}

static int64_t prod(const int64_t *s, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; d++) p *= s[d];
  return p;
}

/* The operand t (already of the compute dtype) as a 3-d view (B, rows, cols)
 * over the broadcast batch shape bshape[0..nbd). left: t is the left operand
 * (a 1-d t is a row), else the right one (a 1-d t is a column). A new
 * reference; NULL on failure. */
static ct_tensor *operand3(const ct_tensor *t, bool left, const int64_t *bshape, int nbd,
                           int64_t rows, int64_t cols) {
  int64_t sh[CT_MAX_DIMS + 2], st[CT_MAX_DIMS + 2];
  int nd = t->ndim;
  int64_t rs, cs;
  if (nd == 1) {
    rs = left ? 0 : t->strides[0];
    cs = left ? t->strides[0] : 0;
  } else {
    rs = t->strides[nd - 2];
    cs = t->strides[nd - 1];
  }
  for (int d = 0; d < nbd; d++) {
    int td = nd - 2 - nbd + d;
    sh[d] = bshape[d];
    st[d] = (td >= 0 && t->shape[td] == bshape[d]) ? t->strides[td] : 0;
  }
  sh[nbd] = rows, st[nbd] = rs;
  sh[nbd + 1] = cols, st[nbd + 1] = cs;
  int64_t batch = prod(bshape, nbd), bstride;
  if (merge_dims(sh, st, nbd, &bstride))
    return ct__view_of(t, t->dtype, (int64_t[]){batch, rows, cols}, (int64_t[]){bstride, rs, cs},
                       3, t->offset);
  /* Batch dims that don't merge (e.g. broadcast against a strided dim):
   * materialize the expanded operand contiguously. */
  ct_tensor *ex = ct__view_of(t, t->dtype, sh, st, nbd + 2, t->offset);
  ct_tensor *c = ex ? ct__clone(ex) : NULL;
  ct__release(ex);
  if (!c) return NULL;
  ct_tensor *v = ct__view_of(c, c->dtype, (int64_t[]){batch, rows, cols},
                             (int64_t[]){rows * cols, cols, 1}, 3, c->offset);
  ct__release(c);
  return v;
}

/* A result tensor the kernel may write: res itself when it is contiguous and
 * shares no memory with the inputs, else a fresh temporary (ct__finish_out
 * copies it into out). */
static ct_tensor *writable_result(ct_tensor *res, const ct_tensor *a, const ct_tensor *b) {
  if (!res) return NULL;
  if (ct__is_contiguous(res) && !ct_same_storage(res, a) && !ct_same_storage(res, b)) return res;
  ct_tensor *tmp = ct__empty(res->shape, res->ndim, res->dtype, ct__device(res));
  ct__release(res);
  return tmp;
}

static ct_tensor *matmul_impl(const char *op, ct_tensor *out, const ct_tensor *a,
                              const ct_tensor *b) {
  if (!a || !b) return NULL;
  if (!ct__check_same_device(op, a, b)) return NULL;
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (a->ndim == 0 || b->ndim == 0)
    return ct__fail(CT_ERR_SHAPE, "%s: both arguments need at least 1 dim, got shapes %s and %s",
                    op, ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  ct_dtype dtype = ct_promote_types(a->dtype, b->dtype);
  if (dtype == CT_BOOL)
    return ct__fail(CT_ERR_DTYPE, "%s: not supported for bool tensors", op);
  int na = a->ndim, nb = b->ndim;
  int64_t n = na >= 2 ? a->shape[na - 2] : 1, k = a->shape[na - 1];
  int64_t kb = nb >= 2 ? b->shape[nb - 2] : b->shape[0], m = nb >= 2 ? b->shape[nb - 1] : 1;
  if (k != kb)
    return ct__fail(CT_ERR_SHAPE, "%s: shapes %s and %s cannot be multiplied (%lld != %lld)", op,
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb),
                    (long long)k, (long long)kb);
  int64_t bshape[CT_MAX_DIMS];
  int nbd = 0;
  int nba = na > 2 ? na - 2 : 0, nbb = nb > 2 ? nb - 2 : 0;
  if (!ct__broadcast_shapes(a->shape, nba, b->shape, nbb, bshape, &nbd))
    return ct__fail(CT_ERR_SHAPE, "%s: the batch dims of shapes %s and %s don't broadcast", op,
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  int64_t rshape[CT_MAX_DIMS + 2];
  int rnd = nbd;
  memcpy(rshape, bshape, sizeof(int64_t) * (size_t)nbd);
  if (na >= 2) rshape[rnd++] = n;
  if (nb >= 2) rshape[rnd++] = m;
  if (rnd > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "%s: the result would have %d dims (max %d)", op, rnd,
                    CT_MAX_DIMS);

  const ct_backend *be = ct__backend_for(op, a);
  if (!be) return NULL;
  CT_NEED_SLOT(be, matmul, op, a);
  ct_device dev = ct__device(a);
  ct_tensor *res = writable_result(ct__result_for(op, out, rshape, rnd, dtype, dev), a, b);
  if (!res) return NULL;
  ct_tensor *ca = ct__cast(a, dtype), *cb = ct__cast(b, dtype);
  ct_tensor *a3 = NULL, *b3 = NULL, *o3 = NULL;
  ct_status st = CT_ERR_OOM;
  if (!ca || !cb) goto done;
  int64_t batch = prod(bshape, nbd), fold_stride;
  /* Fold a's batch into its rows when b has no batch dims. */
  if (nbb == 0 && nba > 0 &&
      merge_dims(a->shape, ca->strides, na - 1, &fold_stride)) {
    int64_t rows = batch * n;
    a3 = ct__view_of(ca, dtype, (int64_t[]){1, rows, k},
                     (int64_t[]){0, fold_stride, ca->strides[na - 1]}, 3, ca->offset);
    b3 = operand3(cb, false, NULL, 0, k, m);
    o3 = ct__view_of(res, dtype, (int64_t[]){1, rows, m}, (int64_t[]){rows * m, m, 1}, 3,
                     res->offset);
  } else {
    a3 = operand3(ca, true, bshape, nbd, n, k);
    b3 = operand3(cb, false, bshape, nbd, k, m);
    o3 = ct__view_of(res, dtype, (int64_t[]){batch, n, m}, (int64_t[]){n * m, m, 1}, 3,
                     res->offset);
  }
  if (a3 && b3 && o3) st = be->matmul(o3, a3, b3, false);
done:
  ct__release(a3);
  ct__release(b3);
  ct__release(o3);
  ct__release(ca);
  ct__release(cb);
  return ct__finish_out(out, res, st);
}

ct_tensor *ct__matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  return matmul_impl(out ? "matmul_out" : "matmul", out, a, b);
}

ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b) {
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, a, b, NULL)) {
    ct_tensor *r = ct_matmul(ac.t[0], ac.t[1]);
    ct__autocast_done(&ac);
    return r;
  }
  return ct__track(ct__ag_matmul(matmul_impl("matmul", NULL, a, b), a, b));
}

ct_tensor *ct_matmul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  if (!out) {
    if (ct_last_error() == CT_OK) ct__fail(CT_ERR_ARG, "matmul_out: out is NULL");
    return NULL;
  }
  const ct_tensor *ins[2] = {a, b};
  if (!ct__ag_out_allowed("matmul_out", out, ins, 2)) return NULL;
  return matmul_impl("matmul_out", out, a, b);
}

ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, a, b, NULL)) {
    ct_tensor *r = ct_mm(ac.t[0], ac.t[1]);
    ct__autocast_done(&ac);
    return r;
  }
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (a->ndim != 2 || b->ndim != 2)
    return ct__fail(CT_ERR_SHAPE, "mm: expected 2-d tensors, got shapes %s and %s",
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  return ct__track(ct__ag_matmul(matmul_impl("mm", NULL, a, b), a, b));
}

ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, a, b, NULL)) {
    ct_tensor *r = ct_bmm(ac.t[0], ac.t[1]);
    ct__autocast_done(&ac);
    return r;
  }
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (a->ndim != 3 || b->ndim != 3)
    return ct__fail(CT_ERR_SHAPE, "bmm: expected 3-d tensors, got shapes %s and %s",
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  if (a->shape[0] != b->shape[0])
    return ct__fail(CT_ERR_SHAPE, "bmm: batch sizes of shapes %s and %s differ (%lld != %lld)",
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb),
                    (long long)a->shape[0], (long long)b->shape[0]);
  return ct__track(ct__ag_matmul(matmul_impl("bmm", NULL, a, b), a, b));
}

ct_tensor *ct_dot(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return NULL;
  char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
  if (a->ndim != 1 || b->ndim != 1)
    return ct__fail(CT_ERR_SHAPE, "dot: expected 1-d tensors, got shapes %s and %s",
                    ct__shape_str(a, sa, sizeof sa), ct__shape_str(b, sb, sizeof sb));
  if (a->shape[0] != b->shape[0])
    return ct__fail(CT_ERR_SHAPE, "dot: vectors of sizes %lld and %lld", (long long)a->shape[0],
                    (long long)b->shape[0]);
  if (a->dtype != b->dtype)
    return ct__fail(CT_ERR_DTYPE, "dot: expected both vectors to have the same dtype, got %s and %s",
                    ct_dtype_name(a->dtype), ct_dtype_name(b->dtype));
  return ct__track(ct__ag_matmul(matmul_impl("dot", NULL, a, b), a, b));
}

/* ---- linear ---------------------------------------------------------------- */

ct_tensor *ct__linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias) {
  static const char op[] = "linear";
  if (!x || !w) return NULL;
  if (!ct__check_same_device(op, x, w) || !ct__check_same_device(op, x, bias)) return NULL;
  char sx[CT_SHAPE_STR_MAX], sw[CT_SHAPE_STR_MAX], s3[CT_SHAPE_STR_MAX];
  if (x->ndim == 0 || w->ndim != 2)
    return ct__fail(CT_ERR_SHAPE,
                    "linear: expected input (..., in) and weight (out, in), got shapes %s and %s",
                    ct__shape_str(x, sx, sizeof sx), ct__shape_str(w, sw, sizeof sw));
  int64_t in = x->shape[x->ndim - 1], nout = w->shape[0];
  if (w->shape[1] != in)
    return ct__fail(CT_ERR_SHAPE,
                    "linear: input of shape %s doesn't match weight of shape %s (%lld != %lld "
                    "input features)",
                    ct__shape_str(x, sx, sizeof sx), ct__shape_str(w, sw, sizeof sw),
                    (long long)in, (long long)w->shape[1]);
  ct_dtype dtype = ct_promote_types(x->dtype, w->dtype);
  if (bias) dtype = ct_promote_types(dtype, bias->dtype);
  if (dtype == CT_BOOL) return ct__fail(CT_ERR_DTYPE, "linear: not supported for bool tensors");
  int64_t rshape[CT_MAX_DIMS];
  int rnd = x->ndim;
  memcpy(rshape, x->shape, sizeof(int64_t) * (size_t)rnd);
  rshape[rnd - 1] = nout;
  if (bias) {
    int64_t bs[CT_MAX_DIMS];
    int bnd = 0;
    bool ok = ct__broadcast_shapes(bias->shape, bias->ndim, rshape, rnd, bs, &bnd) && bnd == rnd;
    for (int d = 0; d < rnd && ok; d++) ok = bs[d] == rshape[d];
    if (!ok)
      return ct__fail(CT_ERR_SHAPE, "linear: bias of shape %s doesn't broadcast to the output %s",
                      ct__shape_str(bias, s3, sizeof s3), ct_shape_format(rshape, rnd, sx, sizeof sx));
  }
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, matmul, op, x);

  ct_tensor *res = ct__empty(rshape, rnd, dtype, ct__device(x));
  if (!res) return NULL;
  ct_tensor *cx = ct__cast(x, dtype), *cw = ct__cast(w, dtype);
  ct_tensor *x3 = NULL, *w3 = NULL, *o3 = NULL, *xc = NULL;
  ct_status st = CT_ERR_OOM;
  if (!cx || !cw) goto done;
  int64_t rows = prod(x->shape, x->ndim - 1), rstride;
  const ct_tensor *xs = cx;
  if (!merge_dims(cx->shape, cx->strides, cx->ndim - 1, &rstride)) {
    xc = ct__clone(cx); /* leading dims that can't be viewed as one: copy */
    if (!xc) goto done;
    xs = xc;
    rstride = in;
  }
  x3 = ct__view_of(xs, dtype, (int64_t[]){1, rows, in},
                   (int64_t[]){0, rstride, xs->strides[xs->ndim - 1]}, 3, xs->offset);
  /* w^T: (in, out) view of w (out, in); a contiguous w is column-major here. */
  w3 = ct__view_of(cw, dtype, (int64_t[]){1, in, nout},
                   (int64_t[]){0, cw->strides[1], cw->strides[0]}, 3, cw->offset);
  o3 = ct__view_of(res, dtype, (int64_t[]){1, rows, nout}, (int64_t[]){rows * nout, nout, 1}, 3,
                   res->offset);
  if (!x3 || !w3 || !o3) goto done;
  st = CT_OK;
  if (bias) st = ct__copy_into(res, bias); /* out = broadcast bias, then += x @ w^T */
  if (st == CT_OK) st = be->matmul(o3, x3, w3, bias != NULL);
done:
  ct__release(x3);
  ct__release(w3);
  ct__release(o3);
  ct__release(xc);
  ct__release(cx);
  ct__release(cw);
  return ct__finish_out(NULL, res, st);
}

ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias) {
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, x, w, bias)) {
    ct_tensor *r = ct_linear(ac.t[0], ac.t[1], ac.t[2]);
    ct__autocast_done(&ac);
    return r;
  }
  return ct__track(ct__ag_linear(ct__linear(x, w, bias), x, w, bias));
}
