/* ct_max_pool2d and ct_avg_pool2d: checks, output geometry (floor or ceil
 * mode, as torch), the backend's pool2d slot and the recording of their
 * nodes (autograd/grad_nn.c; max pooling keeps its argmax indices for it). */
#include "nn/functional_internal.h"

/* Division rounding toward -inf (torch's div_rtn) and toward +inf; b > 0. */
static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* Fills p and the output size (oh, ow) from opts; false with an error. The
 * size is torch's: floor (or in ceil_mode ceil) of (in + 2 pad - kernel) /
 * stride, plus one; in ceil_mode a last window that would start in the right
 * padding is dropped, and a kernel wider than the padded input still gives
 * one (clipped) window, as torch. */
static bool pool_geometry(const char *op, const ct_tensor *x, const ct_pool2d_opts *opts,
                          ct_pool2d_params *p, int64_t out[2]) {
  if (!opts)
    return ct__fail(CT_ERR_ARG, "%s: options with a kernel size are required", op), false;
  const int64_t *hw = x->shape + x->ndim - 2;
  bool def_stride = opts->stride[0] == 0 && opts->stride[1] == 0;
  p->count_include_pad = !opts->count_include_pad_false;
  for (int i = 0; i < 2; i++) {
    p->kernel[i] = opts->kernel[i];
    p->stride[i] = def_stride ? opts->kernel[i] : opts->stride[i];
    p->padding[i] = opts->padding[i];
  }
  for (int i = 0; i < 2; i++) {
    if (p->kernel[i] < 1 || p->stride[i] < 1 || p->padding[i] < 0) {
      ct__fail(CT_ERR_ARG,
               "%s: expected kernel >= 1, stride >= 1 and padding >= 0, got kernel (%lld, %lld), "
               "stride (%lld, %lld), padding (%lld, %lld)",
               op, (long long)p->kernel[0], (long long)p->kernel[1], (long long)p->stride[0],
               (long long)p->stride[1], (long long)p->padding[0], (long long)p->padding[1]);
      return false;
    }
    if (p->padding[i] > p->kernel[i] / 2) {
      ct__fail(CT_ERR_ARG, "%s: padding should be at most half of the kernel size, got padding (%lld, %lld) for kernel (%lld, %lld)",
               op, (long long)p->padding[0], (long long)p->padding[1], (long long)p->kernel[0],
               (long long)p->kernel[1]);
      return false;
    }
    /* padding <= kernel / 2, so in + 2 * padding - kernel <= in: no overflow */
    int64_t span = hw[i] - (p->kernel[i] - 2 * p->padding[i]);
    int64_t o =
        (opts->ceil_mode ? ceil_div(span, p->stride[i]) : floor_div(span, p->stride[i])) + 1;
    /* ceil mode: drop a last window starting at or after in + padding, i.e.
     * (o - 1) * stride >= in + padding (written without the product) */
    if (opts->ceil_mode && o > 0 && o - 1 > floor_div(hw[i] + p->padding[i] - 1, p->stride[i])) o--;
    if (o < 1) {
      char s[CT_SHAPE_STR_MAX];
      ct__fail(CT_ERR_SHAPE, "%s: kernel (%lld, %lld) with padding (%lld, %lld) is larger than the input %s",
               op, (long long)p->kernel[0], (long long)p->kernel[1], (long long)p->padding[0],
               (long long)p->padding[1], ct__shape_str(x, s, sizeof s));
      return false;
    }
    out[i] = o;
  }
  /* windows times window size is the work (and the kernels' index range): a
   * product past int64 is no pooling anyone can run */
  int64_t work;
  if (__builtin_mul_overflow(out[0], out[1], &work) ||
      __builtin_mul_overflow(work, p->kernel[0], &work) ||
      __builtin_mul_overflow(work, p->kernel[1], &work))
    return ct__fail(CT_ERR_SHAPE,
                    "%s: kernel (%lld, %lld) over %lld x %lld windows overflows 64 bits", op,
                    (long long)p->kernel[0], (long long)p->kernel[1], (long long)out[0],
                    (long long)out[1]),
           false;
  return true;
}

static ct_tensor *pool2d(const char *op, bool is_max, const ct_tensor *x, const ct_pool2d_opts *opts) {
  if (!x) return NULL;
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim != 3 && x->ndim != 4)
    return ct__fail(CT_ERR_SHAPE, "%s: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape %s",
                    op, ct__shape_str(x, s, sizeof s));
  if (!ct__nn_need_float(op, "input", x)) return NULL;
  ct_pool2d_params p;
  int64_t out[2];
  if (!pool_geometry(op, x, opts, &p, out)) return NULL;
  const ct_backend *be = ct__backend_for(op, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, pool2d, op, x);
  bool unbatched = x->ndim == 3, ok = true;
  const int64_t *chw = x->shape + (unbatched ? 0 : 1);
  int64_t N = unbatched ? 1 : x->shape[0];
  int64_t xs[4] = {N, chw[0], chw[1], chw[2]}, os[4] = {N, chw[0], out[0], out[1]};
  bool need_grad = ct__ag_needed(&x, 1);
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok);
  ct_tensor *x4 = ok ? ct__nn_reshape(xc, xs, 4) : NULL;
  ct_tensor *r = x4 ? ct__empty(os, 4, x->dtype, ct__device(x)) : NULL;
  ct_tensor *idx = r && is_max && need_grad ? ct__empty(os, 4, CT_I64, ct__device(x)) : NULL;
  ct_status st = r && (idx || !(is_max && need_grad)) ? be->pool2d(is_max, r, idx, x4, &p)
                                                      : ct_last_error();
  ct__release(xc), ct__release(x4);
  if (st != CT_OK) {
    ct__release(r), ct__release(idx);
    return NULL;
  }
  if (unbatched) {
    ct_tensor *v = ct__nn_reshape(r, os + 1, 3);
    ct__release(r);
    r = v;
  }
  if (need_grad) r = ct__ag_pool2d(r, x, is_max, idx, &p);
  ct__release(idx);
  return ct__track(r);
}

ct_tensor *ct_max_pool2d(const ct_tensor *x, const ct_pool2d_opts *opts) {
  return pool2d("max_pool2d", true, x, opts);
}

ct_tensor *ct_avg_pool2d(const ct_tensor *x, const ct_pool2d_opts *opts) {
  return pool2d("avg_pool2d", false, x, opts);
}
