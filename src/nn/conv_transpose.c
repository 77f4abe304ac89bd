/* ct_conv1d (conv2d of a height-1 view) and ct_conv_transpose2d (the input
 * gradient of conv2d, through the backend's conv2d_backward slot; its node in
 * autograd/grad_conv_transpose.c). Unbatched input runs as a batch of one. */
#include "amp/amp_internal.h"
#include "ctensor/conv_layers.h"
#include "nn/functional_internal.h"

/* ---- conv1d ------------------------------------------------------------------ */

ct_tensor *ct_conv1d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                     const ct_conv1d_opts *opts) {
  if (!x || !weight) return NULL;
  char s[CT_SHAPE_STR_MAX];
  if (x->ndim != 2 && x->ndim != 3)
    return ct__fail(CT_ERR_SHAPE,
                    "conv1d: expected a 2-d (C, L) or 3-d (N, C, L) input, got shape %s",
                    ct__shape_str(x, s, sizeof s));
  if (weight->ndim != 3)
    return ct__fail(CT_ERR_SHAPE,
                    "conv1d: expected a 3-d weight (C_out, C_in / groups, k), got shape %s",
                    ct__shape_str(weight, s, sizeof s));
  ct_conv1d_opts o = opts ? *opts : (ct_conv1d_opts){0};
  /* height 1: stride, dilation 1 and no padding along it */
  ct_conv2d_opts o2 = {.stride = {1, o.stride ? o.stride : 1},
                       .padding = {0, o.padding},
                       .dilation = {1, o.dilation ? o.dilation : 1},
                       .groups = o.groups};
  const int64_t *xs = x->shape, *ws = weight->shape;
  int b = x->ndim == 3;
  int64_t x4[4] = {b ? xs[0] : 1, xs[b], 1, xs[b + 1]};
  /* views of the caller's tensors (reshape copies only a non-viewable x) */
  ct_tensor *xv = ct_reshape(x, x4 + !b, 3 + b);
  ct_tensor *wv = xv ? ct_reshape(weight, CT_SHAPE(ws[0], ws[1], 1, ws[2])) : NULL;
  ct_tensor *y = wv ? ct_conv2d(xv, wv, bias, &o2) : NULL;
  ct_tensor *r = NULL;
  if (y) {
    const int64_t *ys = ct_shape(y);
    r = b ? ct_reshape(y, CT_SHAPE(ys[0], ys[1], ys[3])) : ct_reshape(y, CT_SHAPE(ys[0], ys[2]));
  }
  ct_free(xv), ct_free(wv), ct_free(y);
  if (!r && ct_last_error() != CT_OK) {
    /* conv2d's message speaks of 2-d geometry: say which op the user called */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ct_last_error_message());
    return ct__fail(ct_last_error(), "conv1d: %s", msg);
  }
  return r;
}

/* ---- conv_transpose2d --------------------------------------------------------- */

static const char OP[] = "conv_transpose2d";

/* output_padding >= stride (legal while < dilation): the backends compute
 * conv_transpose2d as conv2d's input gradient, which holds only when conv2d
 * of the result gives back x's size, i.e. output_padding < stride. Otherwise:
 * the transposed convolution without padding (its full extent), rows and
 * columns from `padding` on, zeros past its end, + bias; composed of
 * differentiable ops, so autograd follows. */
static ct_tensor *conv_transpose2d_wide(const ct_tensor *x, const ct_tensor *weight,
                                        const ct_tensor *bias, const ct_conv_transpose2d_opts *o,
                                        const int64_t *out) {
  ct_conv_transpose2d_opts o0 = *o;
  o0.padding[0] = o0.padding[1] = o0.output_padding[0] = o0.output_padding[1] = 0;
  ct_tensor *t = ct_conv_transpose2d(x, weight, NULL, &o0);
  int64_t pad[4] = {0};
  for (int i = 0; i < 2 && t; i++) {
    int d = x->ndim - 2 + i;
    int64_t full = ct_shape(t)[d], p = o->padding[i] < full ? o->padding[i] : full;
    int64_t len = full - p < out[i] ? full - p : out[i];
    ct_tensor *n = ct_narrow(t, d, p, len);
    ct_free(t);
    t = n;
    pad[3 - 2 * i] = out[i] - len; /* after the last dim first */
  }
  ct_tensor *r = t ? ct_pad(t, pad, 4, CT_PAD_CONSTANT, 0.0) : NULL;
  ct_free(t);
  if (r && bias) {
    ct_tensor *b3 = ct_reshape(bias, CT_SHAPE(bias->shape[0], 1, 1));
    ct_tensor *rb = b3 ? ct_add(r, b3) : NULL;
    ct_free(b3), ct_free(r);
    r = rb;
  }
  return r;
}

ct_tensor *ct_conv_transpose2d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                               const ct_conv_transpose2d_opts *opts) {
  if (!x || !weight) return NULL;
  ct__autocast_args ac;
  if (ct__autocast(&ac, CT__AUTOCAST_LOWER, x, weight, bias)) {
    ct_tensor *r = ct_conv_transpose2d(ac.t[0], ac.t[1], ac.t[2], opts);
    ct__autocast_done(&ac);
    return r;
  }
  if (!ct__conv2d_check_args(OP, x, weight, bias, "(C_in, C_out / groups, kH, kW)")) return NULL;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  ct_conv_transpose2d_opts o = opts ? *opts : (ct_conv_transpose2d_opts){0};
  ct_conv2d_params p;
  ct_conv2d_opts o2 = {.stride = {o.stride[0], o.stride[1]},
                       .padding = {o.padding[0], o.padding[1]},
                       .dilation = {o.dilation[0], o.dilation[1]},
                       .groups = o.groups};
  if (!ct__conv2d_params(OP, &o2, &p)) return NULL;
  bool unbatched = x->ndim == 3;
  int64_t N = unbatched ? 1 : x->shape[0];
  const int64_t *chw = x->shape + (unbatched ? 0 : 1);
  int64_t Ci = weight->shape[0], Co = weight->shape[1] * p.groups;
  if (chw[0] != Ci)
    return ct__fail(CT_ERR_SHAPE,
                    "conv_transpose2d: expected input with %lld channels (weight %s), got %lld",
                    (long long)Ci, ct__shape_str(weight, s1, sizeof s1), (long long)chw[0]);
  if (Ci % p.groups)
    return ct__fail(CT_ERR_SHAPE,
                    "conv_transpose2d: %lld input channels are not divisible by groups = %lld",
                    (long long)Ci, (long long)p.groups);
  if (bias && !(bias->ndim == 1 && bias->shape[0] == Co))
    return ct__fail(CT_ERR_SHAPE, "conv_transpose2d: expected a bias of shape (%lld,), got %s",
                    (long long)Co, ct__shape_str(bias, s1, sizeof s1));
  int64_t out[2];
  for (int i = 0; i < 2; i++) {
    int64_t op_ = o.output_padding[i], k = weight->shape[2 + i];
    if (op_ < 0 || (op_ >= p.stride[i] && op_ >= p.dilation[i]))
      return ct__fail(CT_ERR_ARG,
                      "conv_transpose2d: output_padding (%lld, %lld) must be >= 0 and smaller than "
                      "either stride (%lld, %lld) or dilation (%lld, %lld)",
                      (long long)o.output_padding[0], (long long)o.output_padding[1],
                      (long long)p.stride[0], (long long)p.stride[1], (long long)p.dilation[0],
                      (long long)p.dilation[1]);
    if (k < 1)
      return ct__fail(CT_ERR_SHAPE,
                      "conv_transpose2d: the kernel size must be nonzero, got weight %s",
                      ct__shape_str(weight, s1, sizeof s1));
    /* (H - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1;
     * the operands are < 2^31 except H (a tensor size), checked below */
    int64_t span;
    if (__builtin_mul_overflow(chw[1 + i] > 0 ? chw[1 + i] - 1 : 0, p.stride[i], &span) ||
        __builtin_add_overflow(span, p.dilation[i] * (k - 1) + op_ + 1, &span))
      return ct__fail(CT_ERR_SHAPE, "conv_transpose2d: the output size overflows 64 bits");
    out[i] = span - 2 * p.padding[i];
    if (chw[1 + i] == 0 || out[i] <= 0)
      return ct__fail(CT_ERR_SHAPE,
                      "conv_transpose2d: input %s with weight %s, stride (%lld, %lld), padding "
                      "(%lld, %lld) and dilation (%lld, %lld) gives an empty output",
                      ct__shape_str(x, s1, sizeof s1), ct__shape_str(weight, s2, sizeof s2),
                      (long long)p.stride[0], (long long)p.stride[1], (long long)p.padding[0],
                      (long long)p.padding[1], (long long)p.dilation[0], (long long)p.dilation[1]);
  }
  if (o.output_padding[0] >= p.stride[0] || o.output_padding[1] >= p.stride[1])
    return conv_transpose2d_wide(x, weight, bias, &o, out);
  const ct_backend *be = ct__backend_for(OP, x);
  if (!be) return NULL;
  CT_NEED_SLOT(be, conv2d_backward, OP, x);
  bool ok = true;
  ct_tensor *xc = ct__nn_prep(x, x->dtype, &ok), *wc = ct__nn_prep(weight, x->dtype, &ok);
  ct_tensor *x4 = NULL, *r = NULL;
  int64_t xs[4] = {N, chw[0], chw[1], chw[2]}, os[4] = {N, Co, out[0], out[1]};
  if (ok) x4 = unbatched ? ct__nn_reshape(xc, xs, 4) : ct__retain(xc);
  if (x4) r = ct__empty(os, 4, x->dtype, ct__device(x));
  /* y is the input gradient of conv2d(y-shaped input, weight) at "grad_out"
   * x; y also stands for that input's geometry (its data is not read) */
  ct_status st = r ? be->conv2d_backward(r, NULL, NULL, x4, r, wc, &p) : ct_last_error();
  ct__release(xc);
  if (st == CT_OK && bias) {
    /* + bias per output channel, in place on the fresh result */
    ct_tensor *bc = ct__contiguous(bias);
    ct_tensor *b4 = bc ? ct__nn_reshape(bc, CT_SHAPE(1, Co, 1, 1)) : NULL;
    ct_tensor *bb = b4 ? ct__broadcast_to(b4, os, 4) : NULL;
    st = bb ? be->binary(CT_BOP_ADD, r, r, bb) : ct_last_error();
    ct__release(b4), ct__release(bc), ct__release(bb);
  }
  if (st != CT_OK) {
    ct__release(x4), ct__release(wc), ct__release(r);
    return NULL;
  }
  if (unbatched) {
    ct_tensor *v = ct__nn_reshape(r, os + 1, 3);
    ct__release(r);
    r = v;
  }
  r = ct__ag_conv_transpose2d(r, x, weight, bias, x4, wc, &p, unbatched);
  ct__release(x4), ct__release(wc);
  return ct__track(r);
}
