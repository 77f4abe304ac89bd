/* ctensor/pool_layers.h: adaptive average and max pooling (functional
 * layers and modules) with PyTorch's semantics: output (oh, ow) pools the
 * input rows floor(oh H / OH) .. ceil((oh + 1) H / OH) (exclusive) and
 * likewise the columns, so any input size maps to the requested output
 * size (windows may overlap). Differentiable; CPU and CUDA; f32, f64, f16,
 * bf16. Fixed-window pooling is in nn.h. */
#ifndef CTENSOR_POOL_LAYERS_H
#define CTENSOR_POOL_LAYERS_H

#include "ctensor/api.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.nn.functional.adaptive_avg_pool2d: x (N, C, H, W) or (C, H, W) with
 * H, W > 0 -> (N, C, OH, OW); output_size {OH, OW}, both >= 1. */
CT_API ct_tensor *ct_adaptive_avg_pool2d(const ct_tensor *x, const int64_t output_size[2]);
/* torch.nn.functional.adaptive_max_pool2d: as above, the maximum of each
 * window (nan if the window holds one). indices (may be NULL) receives a new
 * i64 tensor of the output's shape: each maximum's position h * W + w in its
 * plane (torch's return_indices=True); the caller frees it. */
CT_API ct_tensor *ct_adaptive_max_pool2d(const ct_tensor *x, const int64_t output_size[2],
                                         ct_tensor **indices);

/* AdaptiveAvgPool2d((oh, ow)), AdaptiveMaxPool2d((oh, ow)): no parameters. */
CT_API ct_module *ct_adaptive_avg_pool2d_new(int64_t oh, int64_t ow);
CT_API ct_module *ct_adaptive_max_pool2d_new(int64_t oh, int64_t ow);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_POOL_LAYERS_H */
