/* ct_adaptive_avg_pool2d and ct_adaptive_max_pool2d: checks, the backend's
 * adaptive_pool2d slot and the recording of their node
 * (autograd/grad_pool_adaptive.c). Unbatched (C, H, W) input runs as a batch
 * of one. */
#include "ctensor/pool_layers.h"
#include "nn/functional_internal.h"

static ct_tensor *adaptive_pool2d(const char *op, bool is_max, const ct_tensor *x,
                                  const int64_t *size, ct_tensor **indices) {
  if (indices) *indices = NULL;
  if (!x) return NULL;
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim != 3 && x->ndim != 4)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape %s", op,
                    ct__shape_str(x, s, sizeof s));
  if (!ct__nn_need_float(op, "input", x)) return NULL;
  if (!size || size[0] < 1 || size[1] < 1)
    return ct__fail(CT_ERR_ARG, "%s: output_size must be two sizes >= 1, got (%lld, %lld)", op,
                    size ? (long long)size[0] : 0LL, size ? (long long)size[1] : 0LL);
  bool unbatched = x->ndim == 3, ok = true;
  const int64_t *chw = x->shape + (unbatched ? 0 : 1);
  if (chw[1] < 1 || chw[2] < 1)
    return ct__fail(CT_ERR_SHAPE,
                    "%s: expected an input with nonzero height and width, got shape %s", op,
                    ct__shape_str(x, s, sizeof s));
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, adaptive_pool2d, op, x);
  int64_t N = unbatched ? 1 : x->shape[0];
  int64_t xs[4] = {N, chw[0], chw[1], chw[2]}, os[4] = {N, chw[0], size[0], size[1]};
  bool need_grad = ct__ag_needed(&x, 1), need_idx = is_max && (need_grad || indices);
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok);
  ct_tensor *x4 = ok ? ct__nn_reshape(xc, xs, 4) : NULL;
  ct_tensor *r = x4 ? ct__empty(os, 4, x->dtype, ct__device(x)) : NULL;
  ct_tensor *idx = r && need_idx ? ct__empty(os, 4, CT_I64, ct__device(x)) : NULL;
  ct_status st =
      r && (idx || !need_idx) ? be->adaptive_pool2d(is_max, r, idx, x4) : ct_last_error();
  ct__release(xc), ct__release(x4);
  if (st == CT_OK && unbatched) {
    ct_tensor *v = ct__nn_reshape(r, os + 1, 3);
    ct_tensor *vi = idx ? ct__nn_reshape(idx, os + 1, 3) : NULL;
    ct__release(r), ct__release(idx);
    r = v, idx = vi;
    if (!r || (need_idx && !idx)) st = ct_last_error();
  }
  if (st == CT_OK && need_grad && !(r = ct__ag_adaptive_pool2d(r, x, is_max, idx)))
    st = ct_last_error();
  if (st != CT_OK) {
    ct__release(r), ct__release(idx);
    return NULL;
  }
  if (indices) *indices = ct__track(ct__retain(idx));
  ct__release(idx);
  return ct__track(r);
}

ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *x, const int64_t output_size[2]) {
  return adaptive_pool2d("adaptive_avg_pool2d", false, x, output_size, NULL);
}

ct_tensor *ct_adaptive_max_pool2d(const ct_tensor *x, const int64_t output_size[2],
                                  ct_tensor **indices) {
  return adaptive_pool2d("adaptive_max_pool2d", true, x, output_size, indices);
}
