/* The CUDA backend's table (backend/backend.h) and its C side: every slot
 * turns its ct_tensor arguments into plain descriptors (ctc_t, cuda_kernels.h)
 * and calls the launcher in the .cu file of its family. The .cu files see no
 * ct_tensor: core/internal.h uses C11 atomics that don't compile as C++. */
#include <stdlib.h>

#include "backend/cuda/cuda_kernels.h"
#include "backend/plugin.h"
#include "core/alloc.h"

_Static_assert(CTC_MAX_DIMS == CT_MAX_DIMS, "ctc_t holds CT_MAX_DIMS dims");

/* ---- Descriptors ---------------------------------------------------------------- */

static ctc_t desc(const ct_tensor *t) {
  ctc_t d;
  d.data = (char *)ct__data(t);
  d.dtype = (int)t->dtype;
  d.ndim = t->ndim;
  d.device = t->storage->device.index;
  d.numel = t->numel;
  for (int k = 0; k < CTC_MAX_DIMS; k++) {
    d.shape[k] = k < t->ndim ? t->shape[k] : 1;
    d.strides[k] = k < t->ndim ? t->strides[k] : 0;
  }
  return d;
}

/* ---- Memory --------------------------------------------------------------------- */

static void *cuda_alloc(int device_index, size_t nbytes, bool pinned) {
  return ct__cuda_alloc(device_index, nbytes, pinned);
}
static void cuda_free(int device_index, void *ptr, size_t nbytes, bool pinned) {
  ct__cuda_free(device_index, ptr, nbytes, pinned);
}

/* ---- Transfers -------------------------------------------------------------------- */

static ct_status cuda_copy(ct_tensor *dst, const ct_tensor *src) {
  ctc_t d = desc(dst), s = desc(src);
  if (ct__is_cpu(dst) || ct__is_cpu(src))
    return ct__fail_status(CT_ERR_INTERNAL, "copy: the CUDA copy kernel got a CPU tensor");
  return ct__cuda_copy(&d, &s);
}
/* A non-blocking transfer may still be reading or writing the pinned host
 * memory when the call returns: the pinned cache must not hand that memory
 * out again before the transfer's stream is past it. */
static ct_status cuda_copy_from_host(ct_tensor *dst, const void *src, size_t nbytes, bool nb) {
  ctc_t d = desc(dst);
  ct_status st = ct__cuda_copy_from_host(&d, src, nbytes, nb);
  if (st == CT_OK && nb && nbytes) ct__cuda_pinned_in_use(d.device, src);
  return st;
}
static ct_status cuda_copy_to_host(void *dst, const ct_tensor *src, size_t nbytes, bool nb) {
  ctc_t s = desc(src);
  ct_status st = ct__cuda_copy_to_host(dst, &s, nbytes, nb);
  if (st == CT_OK && nb && nbytes) ct__cuda_pinned_in_use(s.device, dst);
  return st;
}
static ct_status cuda_fill(ct_tensor *dst, double value) {
  ctc_t d = desc(dst);
  return ct__cuda_fill(&d, value);
}

/* ---- Elementwise -------------------------------------------------------------------- */

static ct_status cuda_unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_unary(op, &o, &a, p0, p1);
}
static ct_status cuda_binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  ctc_t o = desc(out), x = desc(a), y = desc(b);
  return ct__cuda_binary(op, &o, &x, &y);
}
static ct_status cuda_binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                                    bool reversed) {
  ctc_t o = desc(out), x = desc(a);
  return ct__cuda_binary_scalar(op, &o, &x, s, reversed);
}
static ct_status cuda_axpy(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha) {
  ctc_t o = desc(out), x = desc(a), y = desc(b);
  return ct__cuda_axpy(&o, &x, &y, alpha);
}
static ct_status cuda_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b) {
  ctc_t o = desc(out), c = desc(cond), x = desc(a), y = desc(b);
  return ct__cuda_where(&o, &c, &x, &y);
}

/* ---- Reductions ------------------------------------------------------------------------ */

static ct_status cuda_reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x, const bool *mask,
                             double p) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_reduce(op, &o, &a, mask, p);
}
static ct_status cuda_arg_reduce(bool is_max, ct_tensor *values, ct_tensor *indices, const ct_tensor *x,
                                 int dim) {
  ctc_t v, i, a = desc(x);
  if (values) v = desc(values);
  if (indices) i = desc(indices);
  return ct__cuda_arg_reduce(is_max, values ? &v : NULL, indices ? &i : NULL, &a, dim);
}
static ct_status cuda_softmax(ct_tensor *out, const ct_tensor *x, int dim, bool log) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_softmax(&o, &a, dim, log);
}
static ct_status cuda_softmax_backward(ct_tensor *grad_x, const ct_tensor *grad_out, const ct_tensor *y,
                                       int dim, bool log) {
  ctc_t gx = desc(grad_x), g = desc(grad_out), yy = desc(y);
  return ct__cuda_softmax_backward(&gx, &g, &yy, dim, log);
}
static ct_status cuda_unary_backward(ct_unary_op op, ct_tensor *grad_x, const ct_tensor *grad_out,
                                     const ct_tensor *x, const ct_tensor *y, double p0, double p1) {
  ctc_t gx = desc(grad_x), g = desc(grad_out), a = desc(x), yy = desc(y);
  return ct__cuda_unary_backward(op, &gx, &g, &a, &yy, p0, p1);
}

/* ---- Linear algebra, indexing ----------------------------------------------------------- */

static ct_status cuda_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one) {
  ctc_t o = desc(out), x = desc(a), y = desc(b);
  return ct__cuda_matmul(&o, &x, &y, beta_one);
}
static ct_status cuda_index_select(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index) {
  ctc_t o = desc(out), a = desc(x), i = desc(index);
  return ct__cuda_index_select(&o, &a, dim, &i);
}
static ct_status cuda_gather(const char *op, ct_tensor *out, const ct_tensor *x, int dim,
                             const ct_tensor *index) {
  ctc_t o = desc(out), a = desc(x), i = desc(index);
  return ct__cuda_gather(op, &o, &a, dim, &i);
}
static ct_status cuda_scatter(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src,
                              bool add) {
  ctc_t s = desc(self), i = desc(index), x = desc(src);
  if (ct_are_deterministic_algorithms_enabled()) /* sort-based, no atomics: deterministic.cu */
    return ct__cuda_scatter_sorted(&s, dim, &i, &x, add);
  return ct__cuda_scatter(&s, dim, &i, &x, add);
}
static ct_status cuda_masked_select(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask) {
  ctc_t o = desc(out), a = desc(x), m = desc(mask);
  return ct__cuda_masked_select(&o, &a, &m);
}
static ct_status cuda_count_nonzero(const ct_tensor *mask, int64_t *count) {
  ctc_t m = desc(mask);
  return ct__cuda_count_nonzero(&m, count);
}
/* advanced indexing: adv_index.cu */
static ct_status cuda_index_linearize(ct_tensor *lin, const ct_tensor *const *idx,
                                      const ct_adv_index_params *p) {
  ctc_t l = desc(lin), ix[CTC_MAX_DIMS];
  for (int k = 0; k < p->n; k++) ix[k] = desc(idx[k]);
  return ct__cuda_index_linearize(&l, ix, p);
}
static ct_status cuda_index_gather(ct_tensor *out, const ct_tensor *src, const ct_tensor *lin,
                                   const ct_adv_index_params *p) {
  ctc_t o = desc(out), s = desc(src), l = desc(lin);
  return ct__cuda_index_gather(&o, &s, &l, p);
}
static ct_status cuda_index_put(ct_tensor *dst, const ct_tensor *values, const ct_tensor *lin,
                                const ct_adv_index_params *p, bool accumulate) {
  ctc_t d = desc(dst), v = desc(values), l = desc(lin);
  if (ct_are_deterministic_algorithms_enabled()) /* sort-based, no atomics: deterministic.cu */
    return ct__cuda_index_put_sorted(&d, &v, &l, p, accumulate);
  return ct__cuda_index_put(&d, &v, &l, p, accumulate);
}
static ct_status cuda_searchsorted(ct_tensor *out, const ct_tensor *sorted, const ct_tensor *values,
                                   bool right) {
  ctc_t o = desc(out), s = desc(sorted), v = desc(values);
  return ct__cuda_searchsorted(&o, &s, &v, right);
}
static ct_status cuda_sort_flat(ct_tensor *out, const ct_tensor *x) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_sort_flat(&o, &a);
}
static ct_status cuda_triangle(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_triangle(&o, &a, k, upper);
}

/* ---- Sort-scan family: scan.cu, remap.cu, sort.cu------------------------------------------------- */
static ct_status cuda_cumulative(bool prod, bool reverse, ct_tensor *out, const ct_tensor *x, int dim) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_cumulative(prod, reverse, &o, &a, dim);
}
static ct_status cuda_remap(ct_tensor *out, const ct_tensor *x, const ct_remap_params *p) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_remap(&o, &a, p);
}
static ct_status cuda_argsort(ct_tensor *indices, const ct_tensor *x, bool descending) {
  ctc_t i = desc(indices), a = desc(x);
  return ct__cuda_argsort(&i, &a, descending);
}
static ct_status cuda_topk(ct_tensor *indices, const ct_tensor *x, int64_t k, bool largest) {
  ctc_t i = desc(indices), a = desc(x);
  return ct__cuda_topk(&i, &a, k, largest);
}

/* ---- Neural-network layers: conv.cu (cuDNN), pool.cu, norm.cu ------------------------------ */

/* Descriptor of an optional tensor: *d filled and d returned, or NULL. */
static const ctc_t *opt(const ct_tensor *t, ctc_t *d) {
  if (!t) return NULL;
  *d = desc(t);
  return d;
}
static ct_status cuda_conv2d(ct_tensor *out, const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias,
                             const ct_conv2d_params *p) {
  ctc_t o = desc(out), a = desc(x), f = desc(w), b;
  return ct__cuda_conv2d(&o, &a, &f, opt(bias, &b), p);
}
static ct_status cuda_conv2d_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                      const ct_tensor *grad_out, const ct_tensor *x, const ct_tensor *w,
                                      const ct_conv2d_params *p) {
  ctc_t gx, gw, gb, g = desc(grad_out), a = desc(x), f = desc(w);
  return ct__cuda_conv2d_backward(opt(grad_x, &gx), opt(grad_w, &gw), opt(grad_b, &gb), &g, &a, &f,
                                  p);
}
static ct_status cuda_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices, const ct_tensor *x,
                             const ct_pool2d_params *p) {
  ctc_t o = desc(out), i, a = desc(x);
  return ct__cuda_pool2d(is_max, &o, opt(indices, &i), &a, p);
}
static ct_status cuda_pool2d_backward(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                      const ct_tensor *indices, const ct_pool2d_params *p) {
  ctc_t gx = desc(grad_x), g = desc(grad_out), i;
  return ct__cuda_pool2d_backward(is_max, &gx, &g, opt(indices, &i), p);
}
static ct_status cuda_batch_norm(ct_tensor *out, ct_tensor *save_mean, ct_tensor *save_invstd,
                                 const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                                 ct_tensor *running_mean, ct_tensor *running_var, bool training,
                                 double momentum, double eps) {
  ctc_t o = desc(out), sm, si, a = desc(x), w, b, rm, rv;
  return ct__cuda_batch_norm(&o, opt(save_mean, &sm), opt(save_invstd, &si), &a, opt(weight, &w),
                             opt(bias, &b), opt(running_mean, &rm), opt(running_var, &rv), training,
                             momentum, eps);
}
static ct_status cuda_batch_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                          const ct_tensor *grad_out, const ct_tensor *x,
                                          const ct_tensor *weight, const ct_tensor *save_mean,
                                          const ct_tensor *save_invstd, bool training) {
  ctc_t gx, gw, gb, g = desc(grad_out), a = desc(x), w, sm, si;
  return ct__cuda_batch_norm_backward(opt(grad_x, &gx), opt(grad_w, &gw), opt(grad_b, &gb), &g, &a,
                                      opt(weight, &w), opt(save_mean, &sm), opt(save_invstd, &si),
                                      training);
}
static ct_status cuda_layer_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                                 const ct_tensor *weight, const ct_tensor *bias, int64_t cols, double eps) {
  ctc_t o = desc(out), m, r, a = desc(x), w, b;
  return ct__cuda_layer_norm(&o, opt(mean, &m), opt(rstd, &r), &a, opt(weight, &w), opt(bias, &b), cols,
                             eps);
}
static ct_status cuda_layer_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                          const ct_tensor *grad_out, const ct_tensor *x,
                                          const ct_tensor *weight, const ct_tensor *mean,
                                          const ct_tensor *rstd, int64_t cols) {
  ctc_t gx, gw, gb, g = desc(grad_out), a = desc(x), w, m, r;
  return ct__cuda_layer_norm_backward(opt(grad_x, &gx), opt(grad_w, &gw), opt(grad_b, &gb), &g, &a,
                                      opt(weight, &w), opt(mean, &m), opt(rstd, &r), cols);
}
/* row norms: group, instance, RMS norm */
static ct_status cuda_row_norm(ct_tensor *out, ct_tensor *mean, ct_tensor *rstd, const ct_tensor *x,
                               const ct_tensor *weight, const ct_tensor *bias,
                               const ct_row_norm_params *p) {
  ctc_t o = desc(out), m, r, a = desc(x), w, b;
  return ct__cuda_row_norm(&o, opt(mean, &m), opt(rstd, &r), &a, opt(weight, &w), opt(bias, &b), p);
}
static ct_status cuda_row_norm_backward(ct_tensor *grad_x, ct_tensor *grad_w, ct_tensor *grad_b,
                                        const ct_tensor *grad_out, const ct_tensor *x,
                                        const ct_tensor *weight, const ct_tensor *mean,
                                        const ct_tensor *rstd, const ct_row_norm_params *p) {
  ctc_t gx, gw, gb, g = desc(grad_out), a = desc(x), w, m, r;
  return ct__cuda_row_norm_backward(opt(grad_x, &gx), opt(grad_w, &gw), opt(grad_b, &gb), &g, &a,
                                    opt(weight, &w), opt(mean, &m), opt(rstd, &r), p);
}
/* adaptive pooling */
static ct_status cuda_adaptive_pool2d(bool is_max, ct_tensor *out, ct_tensor *indices,
                                      const ct_tensor *x) {
  ctc_t o = desc(out), i, a = desc(x);
  return ct__cuda_adaptive_pool2d(is_max, &o, opt(indices, &i), &a);
}
static ct_status cuda_adaptive_pool2d_backward(bool is_max, ct_tensor *grad_x, const ct_tensor *grad_out,
                                               const ct_tensor *indices) {
  ctc_t gx = desc(grad_x), g = desc(grad_out), i;
  return ct__cuda_adaptive_pool2d_backward(is_max, &gx, &g, opt(indices, &i));
}
/* upsampling */
static ct_status cuda_upsample2d(ct_tensor *out, const ct_tensor *x, const ct_interp_params *p) {
  ctc_t o = desc(out), a = desc(x);
  return ct__cuda_upsample2d(&o, &a, p);
}
static ct_status cuda_upsample2d_backward(ct_tensor *grad_x, const ct_tensor *grad_out,
                                          const ct_interp_params *p) {
  ctc_t gx = desc(grad_x), g = desc(grad_out);
  return ct__cuda_upsample2d_backward(&gx, &g, p);
}

/* ---- attention: attention.cu ------------------------------------------------------- */

static ct_status cuda_sdpa(ct_tensor *out, ct_tensor *lse, const ct_tensor *q, const ct_tensor *k,
                           const ct_tensor *v, const ct_tensor *mask, const ct_sdpa_params *p) {
  ctc_t o = desc(out), l = desc(lse), a = desc(q), b = desc(k), c = desc(v), m;
  return ct__cuda_sdpa(&o, &l, &a, &b, &c, opt(mask, &m), p);
}
static ct_status cuda_sdpa_backward(ct_tensor *grad_q, ct_tensor *grad_k, ct_tensor *grad_v,
                                    const ct_tensor *grad_out, const ct_tensor *q, const ct_tensor *k,
                                    const ct_tensor *v, const ct_tensor *out, const ct_tensor *lse,
                                    const ct_tensor *mask, const ct_sdpa_params *p) {
  ctc_t gq = desc(grad_q), gk = desc(grad_k), gv = desc(grad_v), g = desc(grad_out), a = desc(q),
        b = desc(k), c = desc(v), o = desc(out), l = desc(lse), m;
  return ct__cuda_sdpa_backward(&gq, &gk, &gv, &g, &a, &b, &c, &o, &l, opt(mask, &m), p);
}

/* ---- recurrent cells: rnn.cu ------------------------------------------------------- */

static ct_status cuda_rnn_cell(const ct_rnn_cell_params *p, ct_tensor *h_new, ct_tensor *c_new,
                               ct_tensor *ws, const ct_tensor *gi, const ct_tensor *gh,
                               const ct_tensor *state) {
  ctc_t h = desc(h_new), c, w = desc(ws), a = desc(gi), b = desc(gh), s = desc(state);
  return ct__cuda_rnn_cell(p, &h, opt(c_new, &c), &w, &a, &b, &s);
}
static ct_status cuda_rnn_cell_backward(const ct_rnn_cell_params *p, ct_tensor *grad_gi,
                                        ct_tensor *grad_gh, ct_tensor *grad_state,
                                        const ct_tensor *grad_h, const ct_tensor *grad_c,
                                        const ct_tensor *state, const ct_tensor *ws) {
  ctc_t gi = desc(grad_gi), gh, gs = desc(grad_state), dh = desc(grad_h), dc, s = desc(state),
        w = desc(ws);
  return ct__cuda_rnn_cell_backward(p, &gi, opt(grad_gh, &gh), &gs, &dh, opt(grad_c, &dc), &s,
                                    &w);
}

/* ---- Optimizers, random -------------------------------------------------------------------- */

static ct_status cuda_optimizer_step(const ct_optim_params *p, ct_tensor *const *params,
                                     ct_tensor *const *grads, ct_tensor *const *state0,
                                     ct_tensor *const *state1, ct_tensor *const *state2, int n) {
  if (n <= 0) return CT_OK;
  size_t sz = sizeof(ctc_t) * (size_t)n;
  ctc_t *buf = ct__malloc(sz * 5);
  bool *has = ct__calloc((size_t)n * 3, 1);
  if (!buf || !has) {
    free(buf);
    free(has);
    return ct__fail_status(CT_ERR_OOM, "optimizer_step: out of host memory");
  }
  ctc_t *P = buf, *G = buf + n, *S0 = buf + 2 * n, *S1 = buf + 3 * n, *S2 = buf + 4 * n;
  for (int i = 0; i < n; i++) {
    P[i] = desc(params[i]);
    G[i] = desc(grads[i]);
    ct_tensor *s[3] = {state0 ? state0[i] : NULL, state1 ? state1[i] : NULL, state2 ? state2[i] : NULL};
    ctc_t *dst[3] = {&S0[i], &S1[i], &S2[i]};
    for (int k = 0; k < 3; k++) {
      has[3 * i + k] = s[k] != NULL;
      if (s[k]) *dst[k] = desc(s[k]);
      else memset(dst[k], 0, sizeof(ctc_t));
    }
  }
  ct_status st = ct__cuda_optimizer_step(p, P, G, S0, S1, S2, has, n);
  free(buf);
  free(has);
  return st;
}

static ct_status cuda_amp_unscale(ct_tensor *const *grads, int n, double inv_scale,
                                  ct_tensor *found_inf) {
  if (n <= 0) return CT_OK;
  ctc_t *g = ct__malloc(sizeof(ctc_t) * (size_t)n);
  if (!g) return ct__fail_status(CT_ERR_OOM, "grad_scaler.unscale_: out of host memory");
  for (int i = 0; i < n; i++) g[i] = desc(grads[i]);
  ctc_t f = desc(found_inf);
  ct_status st = ct__cuda_amp_unscale(g, n, inv_scale, &f);
  free(g);
  return st;
}

static ct_status cuda_random(ct_tensor *out, const ct_random_params *p, const ct_tensor *probs) {
  ctc_t o = desc(out), pr;
  return ct__cuda_random(&o, p, opt(probs, &pr));
}

/* ct_cuda_set_allow_tf32 (include/ctensor/device.h). */
static void cuda_set_allow_tf32(bool allow) {
  ct__cuda_set_allow_tf32(allow);      /* cuBLAS (matmul.cu) */
  ct__cuda_conv_set_allow_tf32(allow); /* cuDNN (conv.cu) */
}

/* ---- The table --------------------------------------------------------------------------------- */

/* ---- Linear algebra: factorizations (linalg family) ------------------------------ */

static ct_status cuda_lu_factor(ct_tensor *a, ct_tensor *piv, ct_tensor *info) {
  ctc_t x = desc(a), p = desc(piv), i = desc(info);
  return ct__cuda_lu_factor(&x, &p, &i);
}
static ct_status cuda_lu_solve(const ct_tensor *lu, const ct_tensor *piv, ct_tensor *rhs, bool trans) {
  ctc_t x = desc(lu), p = desc(piv), r = desc(rhs);
  return ct__cuda_lu_solve(&x, &p, &r, trans);
}
static ct_status cuda_cholesky(ct_tensor *a, ct_tensor *info) {
  ctc_t x = desc(a), i = desc(info);
  return ct__cuda_cholesky(&x, &i);
}
static ct_status cuda_eigh(ct_tensor *a, ct_tensor *w, ct_tensor *info, bool upper) {
  ctc_t x = desc(a), v = desc(w), i = desc(info);
  return ct__cuda_eigh(&x, &v, &i, upper);
}
static ct_status cuda_svd(ct_tensor *a, ct_tensor *s, ct_tensor *u, ct_tensor *vt,
                          ct_tensor *info, bool full) {
  ctc_t x = desc(a), sv = desc(s), uu = desc(u), v = desc(vt), i = desc(info);
  return ct__cuda_svd(&x, &sv, &uu, &v, &i, full);
}
static ct_status cuda_geqrf(ct_tensor *a, ct_tensor *tau) {
  ctc_t x = desc(a), t = desc(tau);
  return ct__cuda_geqrf(&x, &t);
}
static ct_status cuda_orgqr(ct_tensor *q, const ct_tensor *tau) {
  ctc_t x = desc(q), t = desc(tau);
  return ct__cuda_orgqr(&x, &t);
}

static const ct_backend ct__cuda_backend = {
    .name = "cuda",
    /* caching allocator per device; pinned host memory for device_index -1 */
    .alloc = cuda_alloc,
    .free = cuda_free,
    .memory_stats = ct__cuda_memory_stats,
    .empty_cache = ct__cuda_empty_cache,
    /* strided dtype-converting copy kernel; cudaMemcpyAsync on the current stream */
    .copy = cuda_copy,
    .copy_from_host = cuda_copy_from_host,
    .copy_to_host = cuda_copy_to_host,
    .fill = cuda_fill,
    /* elementwise: unary.cu, binary.cu */
    .unary = cuda_unary,
    .binary = cuda_binary,
    .binary_scalar = cuda_binary_scalar,
    .axpy = cuda_axpy,
    .where = cuda_where,
    /* reductions: reduce.cu, arg_reduce.cu, softmax.cu */
    .reduce = cuda_reduce,
    .arg_reduce = cuda_arg_reduce,
    .softmax = cuda_softmax,
    /* cuBLAS strided-batched GEMM; integer kernel */
    .matmul = cuda_matmul,
    /* index.cu (index checks synchronize: see there) */
    .index_select = cuda_index_select,
    .gather = cuda_gather,
    .scatter = cuda_scatter,
    .masked_select = cuda_masked_select,
    .count_nonzero = cuda_count_nonzero,
    .triangle = cuda_triangle,
    /* autograd helpers: unary_backward.cu, softmax_backward.cu */
    .unary_backward = cuda_unary_backward,
    .softmax_backward = cuda_softmax_backward,
    /* neural-network layers: conv.cu (cuDNN), pool.cu, norm.cu */
    .conv2d = cuda_conv2d,
    .conv2d_backward = cuda_conv2d_backward,
    .pool2d = cuda_pool2d,
    .pool2d_backward = cuda_pool2d_backward,
    .batch_norm = cuda_batch_norm,
    .batch_norm_backward = cuda_batch_norm_backward,
    .layer_norm = cuda_layer_norm,
    .layer_norm_backward = cuda_layer_norm_backward,
    /* one multi-tensor launch over all parameters: optim.cu */
    .optimizer_step = cuda_optimizer_step,
    /* the gradient scaler's unscale, one multi-tensor launch: amp.cu */
    .amp_unscale = cuda_amp_unscale,
    /* Philox, bit-identical to the CPU: random.cu */
    .random = cuda_random,
    /* sort-scan family: scan.cu, remap.cu, sort.cu */
    .cumulative = cuda_cumulative,
    .remap = cuda_remap,
    .argsort = cuda_argsort,
    .topk = cuda_topk,
    .topk_wanted = ct__cuda_topk_wanted,
    /* execution: device.cu */
    .synchronize = ct__cuda_synchronize,
    .stream_new = ct__cuda_stream_new,
    .stream_free = ct__cuda_stream_free,
    .stream_set_current = ct__cuda_stream_set_current,
    .stream_synchronize = ct__cuda_stream_synchronize,
    .event_new = ct__cuda_event_new,
    .event_free = ct__cuda_event_free,
    .event_record = ct__cuda_event_record,
    .event_synchronize = ct__cuda_event_synchronize,
    .stream_wait_event = ct__cuda_stream_wait_event,
    .event_elapsed_ms = ct__cuda_event_elapsed_ms,
    /* stream lists of the caching allocator's blocks: allocator.cu */
    .record_stream = ct__cuda_record_stream,
    /* devices: device.cu; TF32: matmul.cu and conv.cu */
    .device_count = ct__cuda_device_count,
    .device_usable = ct__cuda_device_usable,
    .set_device = ct__cuda_set_device,
    .current_device = ct__cuda_current_device,
    .set_allow_tf32 = cuda_set_allow_tf32,
    /* device information: device.cu */
    .device_properties = ct__cuda_device_properties,
    .driver_version = ct__cuda_driver_version,
    .runtime_version = ct__cuda_runtime_version,
    /* row norms (group, instance, RMS norm): norm.cu */
    .row_norm = cuda_row_norm,
    .row_norm_backward = cuda_row_norm_backward,
    /* adaptive pooling: pool.cu */
    .adaptive_pool2d = cuda_adaptive_pool2d,
    .adaptive_pool2d_backward = cuda_adaptive_pool2d_backward,
    /* upsampling: upsample.cu */
    .upsample2d = cuda_upsample2d,
    .upsample2d_backward = cuda_upsample2d_backward,
    /* advanced indexing: adv_index.cu */
    .index_linearize = cuda_index_linearize,
    .index_gather = cuda_index_gather,
    .index_put = cuda_index_put,
    .searchsorted = cuda_searchsorted,
    .sort_flat = cuda_sort_flat,
    /* attention: attention.cu */
    .sdpa = cuda_sdpa,
    .sdpa_backward = cuda_sdpa_backward,
    /* recurrent cells: rnn.cu */
    .rnn_cell = cuda_rnn_cell,
    .rnn_cell_backward = cuda_rnn_cell_backward,
    /* linalg family: cuSOLVER (solver.cu) */
    .lu_factor = cuda_lu_factor,
    .lu_solve = cuda_lu_solve,
    .cholesky = cuda_cholesky,
    .eigh = cuda_eigh,
    .svd = cuda_svd,
    .geqrf = cuda_geqrf,
    .orgqr = cuda_orgqr,
};

/* Why no GPU can be used (device.cu; declared here, its only user, so that
 * the kernels' common header does not change with it). */
void ct__cuda_unavailable_reason(char *buf, size_t size);

/* The plugin (backend/plugin.h): libctensor-cuda.so, or linked into
 * libctensor.a. */
const ct_plugin *ct__cuda_plugin(void) {
  static const ct_plugin plugin = {
      CT_PLUGIN_HEADER,
      .name = "cuda",
      .library_versions = ct__cuda_library_versions, /* version.cu */
      .unavailable_reason = ct__cuda_unavailable_reason,
      .backend = &ct__cuda_backend,
  };
  return &plugin;
}
