/* ctensor/norm_layers.h: group, instance and RMS normalization (functional
 * layers and modules), and BatchNorm1d, with PyTorch's semantics, parameter
 * names and defaults. Batch and layer norm themselves are in nn.h.
 *
 *   ct_module *gn = ct_group_norm_new(4, 32, 1e-5, true, NULL);  // GroupNorm(4, 32)
 *   ct_tensor *y = ct_module_forward(gn, x);                     // x (N, 32, ...)
 *
 * Every function here is differentiable (x, weight and bias), runs on the
 * CPU and CUDA for f32, f64, f16 and bf16 (half inputs computed in f32, as
 * the other norms), and reports bad input with CT_ERR_SHAPE / CT_ERR_ARG /
 * CT_ERR_DTYPE naming the op and the values. */
#ifndef CTENSOR_NORM_LAYERS_H
#define CTENSOR_NORM_LAYERS_H

#include "ctensor/api.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Functional ------------------------------------------------------------ */

/* torch.nn.functional.group_norm: x (N, C, ...) with C divisible by
 * num_groups; each sample's group of C / num_groups channels is normalized
 * by its own mean and biased variance (eps inside the square root), then
 * channel c is scaled by weight[c] and shifted by bias[c] (both (C), may be
 * NULL). torch's default eps is 1e-5; eps < 0 fails. */
CT_API ct_tensor *ct_group_norm(const ct_tensor *x, int64_t num_groups, const ct_tensor *weight,
                                const ct_tensor *bias, double eps);

/* torch.nn.functional.instance_norm: x (N, C, ...) of at least 3 dims; with
 * use_input_stats each (sample, channel) plane is normalized by its own
 * statistics and, when given, running_mean / running_var (C) are updated
 * with momentum by the statistics averaged over the batch (running_var with
 * the unbiased variance; an empty x leaves them, where torch 1.13 writes nan
 * for an empty batch); without use_input_stats the running statistics
 * (required) normalize, as batch norm in evaluation. weight, bias (C) may be
 * NULL. torch's defaults: use_input_stats true, momentum 0.1, eps 1e-5. */
CT_API ct_tensor *ct_instance_norm(const ct_tensor *x, ct_tensor *running_mean,
                                   ct_tensor *running_var, const ct_tensor *weight,
                                   const ct_tensor *bias, bool use_input_stats, double momentum,
                                   double eps);

/* eps of ct_rms_norm meaning torch's eps=None: the machine epsilon of x's
 * dtype (torch.finfo(x.dtype).eps; f32's for f16/bf16 under autocast). */
#define CT_RMS_NORM_EPS_DEFAULT (-1.0)

/* torch.nn.functional.rms_norm: x * rsqrt(mean(x^2) + eps) * weight over
 * the last normalized_ndim dims; weight (those dims) may be NULL. eps >= 0
 * is taken as given; a negative eps (CT_RMS_NORM_EPS_DEFAULT) selects the
 * dtype's machine epsilon. */
CT_API ct_tensor *ct_rms_norm(const ct_tensor *x, int normalized_ndim, const ct_tensor *weight,
                              double eps);

/* ---- Modules --------------------------------------------------------------- */

/* BatchNorm1d: input (N, C) or (N, C, L); parameters, buffers, eps and
 * momentum as ct_batch_norm2d_new. */
CT_API ct_module *ct_batch_norm1d_new(int64_t num_features, double eps, double momentum,
                                      const ct_module_opts *opts);
/* GroupNorm(num_groups, num_channels, eps, affine): weight (ones) and bias
 * (zeros) of (num_channels) when affine; num_channels must be divisible by
 * num_groups. */
CT_API ct_module *ct_group_norm_new(int64_t num_groups, int64_t num_channels, double eps,
                                    bool affine, const ct_module_opts *opts);
/* InstanceNorm2d(num_features, eps, momentum, affine, track_running_stats)
 * (torch's defaults: 1e-5, 0.1, false, false): input (N, C, H, W) or
 * (C, H, W). affine: weight (ones), bias (zeros); track_running_stats:
 * buffers running_mean, running_var, num_batches_tracked, updated in
 * training and used in evaluation. */
CT_API ct_module *ct_instance_norm2d_new(int64_t num_features, double eps, double momentum,
                                         bool affine, bool track_running_stats,
                                         const ct_module_opts *opts);
/* RMSNorm(normalized_shape, eps, elementwise_affine): weight (ones) of
 * normalized_shape when elementwise_affine; eps as ct_rms_norm (torch's
 * default None: CT_RMS_NORM_EPS_DEFAULT). */
CT_API ct_module *ct_rms_norm_new(const int64_t *normalized_shape, int ndim, double eps,
                                  bool elementwise_affine, const ct_module_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_NORM_LAYERS_H */
