/* ctensor/conv_layers.h: 1-d convolution and 2-d transposed convolution
 * (functional layers and modules), with PyTorch's semantics, parameter
 * names, shapes and initializations. Conv2d itself is in nn.h.
 *
 *   ct_module *up = ct_conv_transpose2d_new(64, 32, 4,
 *       &(ct_conv_transpose2d_opts){.stride = {2, 2}, .padding = {1, 1}}, true, NULL);
 *   ct_tensor *y = ct_module_forward(up, x);   // (N, 64, H, W) -> (N, 32, 2H, 2W)
 *
 * Both are differentiable (input, weight, bias) and run on the CPU and CUDA
 * for f32, f64, f16 and bf16 through the conv2d kernels: conv1d is conv2d of
 * a height-1 view (no copy of a contiguous input); conv_transpose2d is the
 * input gradient of conv2d (col2im on the CPU, cuDNN's backward data on
 * CUDA), and its own gradients are a conv2d and a conv2d weight gradient. */
#ifndef CTENSOR_CONV_LAYERS_H
#define CTENSOR_CONV_LAYERS_H

#include "ctensor/api.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Functional ------------------------------------------------------------ */

typedef struct ct_conv1d_opts {
  int64_t stride;   /* 0 means 1 */
  int64_t padding;  /* zero padding on each side */
  int64_t dilation; /* 0 means 1 */
  int64_t groups;   /* 0 means 1 */
} ct_conv1d_opts;
/* torch.nn.functional.conv1d: x (N, C_in, L) or (C_in, L), weight
 * (C_out, C_in / groups, k), bias (C_out) or NULL -> (N, C_out, L_out),
 * L_out = (L + 2 padding - dilation (k - 1) - 1) / stride + 1. */
CT_API ct_tensor *ct_conv1d(const ct_tensor *x, const ct_tensor *weight, const ct_tensor *bias,
                            const ct_conv1d_opts *opts);

typedef struct ct_conv_transpose2d_opts {
  int64_t stride[2];         /* {0, 0} means {1, 1} */
  int64_t padding[2];        /* removed from each side of the output */
  int64_t output_padding[2]; /* added to one side; < stride or < dilation */
  int64_t dilation[2];       /* {0, 0} means {1, 1} */
  int64_t groups;            /* 0 means 1 */
} ct_conv_transpose2d_opts;
/* torch.nn.functional.conv_transpose2d: x (N, C_in, H, W) or (C_in, H, W),
 * weight (C_in, C_out / groups, kH, kW), bias (C_out) or NULL ->
 * (N, C_out, H_out, W_out) with H_out = (H - 1) stride - 2 padding +
 * dilation (kH - 1) + output_padding + 1 (likewise W_out), which must be > 0. */
CT_API ct_tensor *ct_conv_transpose2d(const ct_tensor *x, const ct_tensor *weight,
                                      const ct_tensor *bias, const ct_conv_transpose2d_opts *opts);

/* ---- Modules --------------------------------------------------------------- */

/* Conv1d: weight (out, in / groups, kernel_size), bias (out); initialized as
 * torch's (kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
 * fan_in = in / groups * kernel_size, the bias likewise). */
CT_API ct_module *ct_conv1d_new(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                const ct_conv1d_opts *conv, bool bias, const ct_module_opts *opts);
/* ConvTranspose2d: weight (in, out / groups, k, k), bias (out); torch's
 * initialization with fan_in = out / groups * k * k (torch computes it from
 * the weight's dim 1). */
CT_API ct_module *ct_conv_transpose2d_new(int64_t in_channels, int64_t out_channels,
                                          int64_t kernel_size, const ct_conv_transpose2d_opts *conv,
                                          bool bias, const ct_module_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_CONV_LAYERS_H */
