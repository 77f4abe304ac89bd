/* ctensor/upsample.h: upsampling and downsampling by interpolation,
 * torch.nn.functional.interpolate and torch.nn.Upsample with PyTorch's
 * semantics, differentiable, on CPU and CUDA, for f32, f64, f16 and bf16
 * (half types computed in f32):
 *
 *   // (N, C, H, W) -> (N, C, 2H, 2W), bilinear, torch's default corners
 *   ct_tensor *y = ct_interpolate(x, &(ct_interpolate_opts){
 *       .scale_factor = {2, 2}, .mode = CT_INTERP_BILINEAR});
 *
 * Modes: nearest (torch's legacy rule: output o reads input
 * floor(o * scale)), nearest-exact (floor((o + 0.5) * scale)) and linear
 * interpolation, for 3-d (N, C, L) inputs (nearest, nearest-exact, linear)
 * and 4-d (N, C, H, W) inputs (nearest, nearest-exact, bilinear), and area
 * (both ranks: ct_adaptive_avg_pool2d to the output size, as torch's
 * 'area', so each output averages the inputs its cell covers). Exactly
 * one of size and scale_factor is given. A scale factor s sets the output
 * size floor(in * s); the coordinates then use 1 / s as torch does (unless
 * recompute_scale_factor, which uses in / out as for a given size). With
 * align_corners, linear modes map the corner pixels' centres onto each other:
 * scale (in - 1) / (out - 1).
 *
 * The backward of nearest sums the gradient of every output into the input
 * it read; linear modes share it with the weights of the forward. On CUDA
 * the backward gathers per input element (no atomics): the gradients are
 * deterministic, unlike torch's CUDA backward, which adds with atomics. */
#ifndef CTENSOR_UPSAMPLE_H
#define CTENSOR_UPSAMPLE_H

#include "ctensor/api.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_interp_mode {
  CT_INTERP_NEAREST = 0,   /* 'nearest' (the default) */
  CT_INTERP_NEAREST_EXACT, /* 'nearest-exact' */
  CT_INTERP_LINEAR,        /* 'linear': 3-d inputs */
  CT_INTERP_BILINEAR,      /* 'bilinear': 4-d inputs */
  CT_INTERP_AREA,          /* 'area': adaptive average pooling to the output size */
} ct_interp_mode;

/* The options of interpolate and Upsample. size and scale_factor hold one
 * entry per spatial dim (the first one for 3-d inputs, both for 4-d ones; a
 * scalar of torch is repeated); all zero means not given. */
typedef struct ct_interpolate_opts {
  int64_t size[2];             /* output size, each >= 1 */
  double scale_factor[2];      /* each > 0 and finite; output size floor(in * s) >= 1 */
  ct_interp_mode mode;         /* CT_INTERP_NEAREST when zero */
  bool align_corners;          /* linear modes only (an error with nearest ones) */
  bool recompute_scale_factor; /* with scale_factor: coordinates from in / out */
} ct_interpolate_opts;

/* torch.nn.functional.interpolate(x, size, scale_factor, mode, align_corners,
 * recompute_scale_factor): x (N, C, L) or (N, C, H, W), nonzero spatial
 * sizes -> (N, C, OL) or (N, C, OH, OW). opts is required (it says the size).
 * Errors: CT_ERR_SHAPE for another rank or a zero spatial size, CT_ERR_ARG
 * for a mode that does not fit the rank, none or both of size and
 * scale_factor, sizes < 1 or bad scales, align_corners with a nearest mode;
 * CT_ERR_DTYPE for a non-floating x. */
CT_API ct_tensor *ct_interpolate(const ct_tensor *x, const ct_interpolate_opts *opts);

/* torch.nn.Upsample(size, scale_factor, mode, align_corners,
 * recompute_scale_factor): a module without parameters whose forward is
 * ct_interpolate with a copy of opts (checked here as far as they go
 * without an input). */
CT_API ct_module *ct_upsample_new(const ct_interpolate_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_UPSAMPLE_H */
