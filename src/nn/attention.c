/* ct_scaled_dot_product_attention: checks with torch's rules, the batch
 * dims broadcast and flattened into BH problems, a bool mask turned into an
 * additive one at its own (unbroadcast) shape, the fused backend kernel, and
 * the recording of its backward (autograd/grad_attention.c). */
#include <math.h>

#include "core/sdpa_math.h"
#include "nn/functional_internal.h"

static const char op[] = "scaled_dot_product_attention";

/* The additive mask of dtype dt for `mask` (bool: 0 where true, -inf where
 * false; floating: itself), contiguous at the mask's own shape. */
static ct_tensor *additive_mask(const ct_tensor *mask, ct_dtype dt, const ct_backend *be) {
  if (mask->dtype != CT_BOOL) return ct__contiguous(mask);
  ct_device dev = ct__device(mask);
  ct_tensor *zero = ct__empty(NULL, 0, dt, dev), *ninf = ct__empty(NULL, 0, dt, dev);
  ct_tensor *z = NULL, *n = NULL, *r = NULL;
  if (zero && ninf && be->fill(zero, 0.0) == CT_OK && be->fill(ninf, -INFINITY) == CT_OK &&
      (z = ct__broadcast_to(zero, mask->shape, mask->ndim)) &&
      (n = ct__broadcast_to(ninf, mask->shape, mask->ndim)) &&
      (r = ct__empty(mask->shape, mask->ndim, dt, dev)) && be->where(r, mask, z, n) != CT_OK) {
    ct__release(r);
    r = NULL;
  }
  ct__release(zero), ct__release(ninf), ct__release(z), ct__release(n);
  return r;
}

/* Fills p's mask geometry for the contiguous mask m broadcast to
 * (bshape, L, S): the batch dims merged into at most two groups. false when
 * more remain (the caller then expands the mask). */
static bool mask_geometry(const ct_tensor *m, const int64_t *bshape, int nb, ct_sdpa_params *p) {
  int64_t st[CT_MAX_DIMS], cs[CT_MAX_DIMS];
  int full = nb + 2, lead = full - m->ndim;
  ct__contiguous_strides(m->shape, m->ndim, cs);
  for (int d = 0; d < full; d++) {
    int md = d - lead;
    st[d] = md < 0 || m->shape[md] == 1 ? 0 : cs[md];
  }
  p->mask_sl = st[nb], p->mask_ss = st[nb + 1];
  int64_t gsize[CT_MAX_DIMS], gstride[CT_MAX_DIMS];
  int ng = 0;
  for (int d = 0; d < nb; d++) {
    if (bshape[d] == 1) continue;
    if (ng > 0 && gstride[ng - 1] == st[d] * bshape[d]) {
      gsize[ng - 1] *= bshape[d];
      gstride[ng - 1] = st[d];
    } else {
      gsize[ng] = bshape[d], gstride[ng] = st[d];
      ng++;
    }
  }
  if (ng > 2) return false;
  p->mask_inner = ng ? gsize[ng - 1] : 1;
  p->mask_sb1 = ng ? gstride[ng - 1] : 0;
  p->mask_sb0 = ng == 2 ? gstride[0] : 0;
  return true;
}

/* Shape, dtype and argument checks; fills the batch shape. */
static bool check_args(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v,
                       const ct_tensor *mask, bool is_causal, double dropout_p, double scale,
                       int64_t *bshape, int *nb) {
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX], s3[CT_SHAPE_STR_MAX];
  const ct_tensor *in[3] = {q, k, v};
  static const char *const names[3] = {"query", "key", "value"};
  for (int i = 0; i < 3; i++) {
    if (in[i]->ndim < 2) {
      ct__fail(CT_ERR_SHAPE, "%s: expected %s of at least 2 dims (..., %s), got shape %s", op,
               names[i],
               i == 0   ? "L, E"
               : i == 1 ? "S, E"
                        : "S, Ev",
               ct__shape_str(in[i], s1, sizeof s1));
      return false;
    }
    if (!ct__nn_need_float(op, names[i], in[i]) || !ct__check_same_device(op, q, in[i]))
      return false;
  }
  if (k->dtype != q->dtype || v->dtype != q->dtype) {
    ct__fail(CT_ERR_DTYPE, "%s: expected query, key and value of one dtype, got %s, %s and %s", op,
             ct_dtype_name(q->dtype), ct_dtype_name(k->dtype), ct_dtype_name(v->dtype));
    return false;
  }
  int64_t E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
  if (k->shape[k->ndim - 1] != E || v->shape[v->ndim - 2] != S) {
    ct__fail(CT_ERR_SHAPE,
             "%s: expected key (..., S, E) and value (..., S, Ev) for query (..., L, E), got query "
             "%s, key %s, value %s",
             op, ct__shape_str(q, s1, sizeof s1), ct__shape_str(k, s2, sizeof s2),
             ct__shape_str(v, s3, sizeof s3));
    return false;
  }
  int n1;
  int64_t b1[CT_MAX_DIMS];
  if (!ct__broadcast_shapes(q->shape, q->ndim - 2, k->shape, k->ndim - 2, b1, &n1) ||
      !ct__broadcast_shapes(b1, n1, v->shape, v->ndim - 2, bshape, nb)) {
    ct__fail(CT_ERR_SHAPE, "%s: the batch dims of query %s, key %s and value %s do not broadcast",
             op, ct__shape_str(q, s1, sizeof s1), ct__shape_str(k, s2, sizeof s2),
             ct__shape_str(v, s3, sizeof s3));
    return false;
  }
  if (mask) {
    if (!ct__check_same_device(op, q, mask)) return false;
    if (mask->dtype != CT_BOOL && mask->dtype != q->dtype) {
      ct__fail(CT_ERR_DTYPE, "%s: expected a bool attn_mask or one of the query's dtype %s, got %s",
               op, ct_dtype_name(q->dtype), ct_dtype_name(mask->dtype));
      return false;
    }
    int64_t want[CT_MAX_DIMS], got[CT_MAX_DIMS];
    int nw = *nb + 2, ng;
    memcpy(want, bshape, sizeof(int64_t) * (size_t)*nb);
    want[*nb] = q->shape[q->ndim - 2], want[*nb + 1] = S;
    bool same = ct__broadcast_shapes(want, nw, mask->shape, mask->ndim, got, &ng) && ng == nw;
    for (int d = 0; same && d < nw; d++) same = got[d] == want[d];
    if (!same) {
      ct__fail(CT_ERR_SHAPE, "%s: attn_mask of shape %s does not broadcast to %s", op,
               ct__shape_str(mask, s1, sizeof s1), ct_shape_format(want, nw, s2, sizeof s2));
      return false;
    }
    if (is_causal) {
      ct__fail(CT_ERR_ARG, "%s: an explicit attn_mask cannot be given with is_causal=true", op);
      return false;
    }
  }
  if (!(dropout_p >= 0 && dropout_p <= 1)) {
    ct__fail(CT_ERR_ARG, "%s: dropout_p must be in [0, 1], got %g", op, dropout_p);
    return false;
  }
  if (!isfinite(scale)) {
    ct__fail(CT_ERR_ARG, "%s: scale must be finite (0: 1/sqrt(E)), got %g", op, scale);
    return false;
  }
  return true;
}

/* t broadcast to (bshape, rows, cols) and made contiguous: (BH, rows, cols). */
static ct_tensor *flat_operand(const ct_tensor *t, const int64_t *bshape, int nb, int64_t BH) {
  int64_t full[CT_MAX_DIMS];
  int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
  memcpy(full, bshape, sizeof(int64_t) * (size_t)nb);
  full[nb] = rows, full[nb + 1] = cols;
  ct_tensor *e = ct__broadcast_to(t, full, nb + 2);
  ct_tensor *c = e ? ct__contiguous(e) : NULL;
  ct__release(e);
  ct_tensor *r = c ? ct__nn_reshape(c, (int64_t[]){BH, rows, cols}, 3) : NULL;
  ct__release(c);
  return r;
}

/* The mask for the kernel (contiguous, q's dtype) and its geometry in p. */
static ct_tensor *kernel_mask(const ct_tensor *mask, const ct_tensor *q, const int64_t *bshape,
                              int nb, const ct_backend *be, ct_sdpa_params *p) {
  ct_tensor *m = additive_mask(mask, q->dtype, be);
  if (!m || mask_geometry(m, bshape, nb, p)) return m;
  /* batch dims that don't merge into two groups: the expanded mask */
  int64_t full[CT_MAX_DIMS];
  memcpy(full, bshape, sizeof(int64_t) * (size_t)nb);
  full[nb] = p->L, full[nb + 1] = p->S;
  ct_tensor *e = ct__broadcast_to(m, full, nb + 2);
  ct_tensor *c = e ? ct__clone(e) : NULL;
  ct__release(m), ct__release(e);
  if (c && !mask_geometry(c, bshape, nb, p)) CT_ASSERT(false);
  return c;
}

ct_tensor *ct_scaled_dot_product_attention(const ct_tensor *q, const ct_tensor *k,
                                           const ct_tensor *v, const ct_tensor *attn_mask,
                                           bool is_causal, double dropout_p, double scale,
                                           ct_generator *generator) {
  if (!q || !k || !v) return NULL;
  int64_t bshape[CT_MAX_DIMS];
  int nb = 0;
  if (!check_args(q, k, v, attn_mask, is_causal, dropout_p, scale, bshape, &nb)) return NULL;
  const ct_backend *be = ct__backend_for(op, q);
  if (!be) return NULL;
  CT_NEED_SLOT(be, sdpa, op, q);
  ct_sdpa_params p = {.L = q->shape[q->ndim - 2],
                      .S = k->shape[k->ndim - 2],
                      .E = q->shape[q->ndim - 1],
                      .Ev = v->shape[v->ndim - 1],
                      .causal = is_causal,
                      .dropout_p = dropout_p,
                      .mask_inner = 1};
  p.BH = 1;
  for (int d = 0; d < nb; d++) p.BH *= bshape[d];
  p.scale = scale != 0 ? scale : 1.0 / sqrt((double)p.E);
  if (dropout_p > 0) p.dropout_seed = ct_generator_next_u64(generator);
  ct_tensor *qc = flat_operand(q, bshape, nb, p.BH), *kc = flat_operand(k, bshape, nb, p.BH);
  ct_tensor *vc = flat_operand(v, bshape, nb, p.BH);
  ct_tensor *mc =
      attn_mask && qc && kc && vc ? kernel_mask(attn_mask, q, bshape, nb, be, &p) : NULL;
  ct_dtype lse_dt = q->dtype == CT_F64 ? CT_F64 : CT_F32;
  ct_tensor *out = NULL, *lse = NULL;
  ct_status st = CT_ERR_OOM;
  if (qc && kc && vc && (mc || !attn_mask) &&
      (out = ct__empty((int64_t[]){p.BH, p.L, p.Ev}, 3, q->dtype, ct__device(q))) &&
      (lse = ct__empty((int64_t[]){p.BH, p.L}, 2, lse_dt, ct__device(q))))
    st = be->sdpa(out, lse, qc, kc, vc, mc, &p);
  else
    st = ct_last_error();
  ct_tensor *r = NULL;
  if (st == CT_OK) {
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, bshape, sizeof(int64_t) * (size_t)nb);
    shape[nb] = p.L, shape[nb + 1] = p.Ev;
    r = ct__nn_reshape(out, shape, nb + 2);
    const ct_tensor *ins[3] = {q, k, v}, *saved[6] = {qc, kc, vc, out, lse, mc};
    if (r) r = ct__ag_sdpa(r, ins, saved, &p);
  }
  ct__release(qc), ct__release(kc), ct__release(vc), ct__release(mc);
  ct__release(out), ct__release(lse);
  return r ? ct__track(r) : NULL;
}
