/* ct_conv2d: checks, output geometry, the backend call and the recording of
 * its node (autograd/grad_nn.c). Unbatched (C, H, W) input runs as a batch of
 * one. */
#include "amp/amp_internal.h"
#include "nn/functional_internal.h"

static const char OP[] = "conv2d";

/* opts (NULL: the defaults) as kernel parameters: zero stride, dilation and
 * groups mean 1; out of range values fail with CT_ERR_ARG naming op. */
bool ct__conv2d_params(const char *op, const ct_conv2d_opts *opts, ct_conv2d_params *p) {
  ct_conv2d_opts o = opts ? *opts : (ct_conv2d_opts){0};
  *p = (ct_conv2d_params){.groups = o.groups ? o.groups : 1};
  for (int i = 0; i < 2; i++) {
    p->stride[i] = o.stride[0] || o.stride[1] ? o.stride[i] : 1;
    p->dilation[i] = o.dilation[0] || o.dilation[1] ? o.dilation[i] : 1;
    p->padding[i] = o.padding[i];
    /* the upper bound keeps the kernels' index arithmetic (offsets of
     * padding, strides and dilations) far from int64 overflow */
    if (p->stride[i] < 1 || p->dilation[i] < 1 || p->padding[i] < 0 || p->stride[i] > INT32_MAX ||
        p->dilation[i] > INT32_MAX || p->padding[i] > INT32_MAX) {
      ct__fail(CT_ERR_ARG,
               "%s: expected stride and dilation in [1, 2^31) and padding in [0, 2^31), "
               "got stride (%lld, %lld), dilation (%lld, %lld), padding (%lld, %lld)",
               op, (long long)p->stride[0], (long long)p->stride[1], (long long)p->dilation[0],
               (long long)p->dilation[1], (long long)o.padding[0], (long long)o.padding[1]);
      return false;
    }
  }
  if (p->groups < 1 || p->groups > INT32_MAX) {
    ct__fail(CT_ERR_ARG, "%s: groups must be in [1, 2^31), got %lld", op, (long long)p->groups);
    return false;
  }
  return true;
}

bool ct__conv2d_check_args(const char *op, const ct_tensor *x, const ct_tensor *weight,
                           const ct_tensor *bias, const char *weight_layout) {
  char s1[CT_SHAPE_STR_MAX];
  if (!ct__check_same_device(op, x, weight) || !ct__check_same_device(op, x, bias)) return false;
  if (x->ndim != 3 && x->ndim != 4) {
    ct__fail(CT_ERR_SHAPE, "%s: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape %s",
             op, ct__shape_str(x, s1, sizeof s1));
    return false;
  }
  if (weight->ndim != 4) {
    ct__fail(CT_ERR_SHAPE, "%s: expected a 4-d weight %s, got shape %s", op, weight_layout,
             ct__shape_str(weight, s1, sizeof s1));
    return false;
  }
  if (!ct__nn_need_float(op, "input", x) || !ct__nn_need_float(op, "weight", weight) ||
      !ct__nn_need_float(op, "bias", bias))
    return false;
  if (x->dtype != weight->dtype || (bias && bias->dtype != x->dtype)) {
    ct__fail(CT_ERR_DTYPE, "%s: expected input, weight and bias of one dtype, got %s, %s and %s",
             op, ct_dtype_name(x->dtype), ct_dtype_name(weight->dtype),
             bias ? ct_dtype_name(bias->dtype) : "none");
    return false;
  }
  return true;
}

ct_tensor *ct_conv2d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                     const ct_conv2d_opts *opts) {
  if (!x || !weight) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, x, weight, bias)) {
    ct_tensor *r = ct_conv2d(ac.t[0], ac.t[1], ac.t[2], opts);
    ct__autocast_done(&ac);
    return r;
  }
  if (!ct__conv2d_check_args(OP, x, weight, bias, "(C_out, C_in / groups, kH, kW)")) return NULL;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  ct_conv2d_params p;
  if (!ct__conv2d_params(OP, opts, &p)) return NULL;
  bool unbatched = x->ndim == 3;
  int64_t N = unbatched ? 1 : x->shape[0];
  const int64_t *chw = x->shape + (unbatched ? 0 : 1);
  int64_t Co = weight->shape[0], Cg = weight->shape[1];
  int64_t channels;
  if (__builtin_mul_overflow(Cg, p.groups, &channels) || chw[0] != channels)
    return ct__fail(CT_ERR_SHAPE,
                    "conv2d: expected input with %lld channels (weight %s%s), got %lld",
                    (long long)(Cg * p.groups), ct__shape_str(weight, s1, sizeof s1),
                    p.groups > 1 ? ", groups" : "", (long long)chw[0]);
  if (Co % p.groups)
    return ct__fail(CT_ERR_SHAPE, "conv2d: %lld output channels are not divisible by groups = %lld",
                    (long long)Co, (long long)p.groups);
  if (bias && !(bias->ndim == 1 && bias->shape[0] == Co))
    return ct__fail(CT_ERR_SHAPE, "conv2d: expected a bias of shape (%lld,), got %s", (long long)Co,
                    ct__shape_str(bias, s1, sizeof s1));
  int64_t out[2];
  for (int i = 0; i < 2; i++) {
    int64_t padded, eff;
    if (__builtin_add_overflow(chw[1 + i], 2 * p.padding[i], &padded))
      return ct__fail(CT_ERR_SHAPE, "conv2d: the padded input overflows 64 bits");
    if (weight->shape[2 + i] < 1)
      return ct__fail(CT_ERR_SHAPE, "conv2d: the kernel size must be nonzero, got weight %s",
                      ct__shape_str(weight, s1, sizeof s1));
    if (__builtin_mul_overflow(p.dilation[i], weight->shape[2 + i] - 1, &eff) || eff + 1 > padded)
      return ct__fail(CT_ERR_SHAPE,
                      "conv2d: kernel size (%lld, %lld) with dilation (%lld, %lld) is larger than "
                      "the padded input: (%lld, %lld) with padding (%lld, %lld)",
                      (long long)weight->shape[2], (long long)weight->shape[3],
                      (long long)p.dilation[0], (long long)p.dilation[1], (long long)chw[1],
                      (long long)chw[2], (long long)p.padding[0], (long long)p.padding[1]);
    out[i] = (padded - eff - 1) / p.stride[i] + 1;
  }
  (void)s2;
  const ct_backend *be = ct__backend_for(OP, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, conv2d, OP, x);
  bool ok = true;
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok), *wc = ct__nn_prep(weight, x->dtype, &ok);
  ct_tensor *bc = ct__nn_prep(bias, x->dtype, &ok), *x4 = NULL, *r = NULL;
  int64_t xs[4] = {N, chw[0], chw[1], chw[2]}, os[4] = {N, Co, out[0], out[1]};
  if (ok) x4 = unbatched ? ct__nn_reshape(xc, xs, 4) : ct__retain(xc);
  if (x4) r = ct__empty(os, 4, x->dtype, ct__device(x));
  ct_status st = r ? be->conv2d(r, x4, wc, bc, &p) : ct_last_error();
  ct__release(xc), ct__release(bc);
  if (st != CT_OK) {
    ct__release(x4), ct__release(wc), ct__release(r);
    return NULL;
  }
  if (unbatched) {
    ct_tensor *v = ct__nn_reshape(r, os + 1, 3);
    ct__release(r);
    r = v;
  }
  r = ct__ag_conv2d(r, x, weight, bias, x4, wc, &p, unbatched);
  ct__release(x4), ct__release(wc);
  return ct__track(r);
}
