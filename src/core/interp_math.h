/* The coordinate formulas of upsampling (torch's interpolate: nearest,
 * nearest-exact, linear, bilinear), shared by the CPU and CUDA kernels
 * (backend.h, `upsample2d`): which input positions each output reads and with
 * which weights, and its inverse for the backward kernels that gather. An
 * image is upsampled one axis at a time with the same rule, so every formula
 * takes one axis (1-d inputs are images of height 1, whose one row maps to
 * itself in every mode). ct_interp_linear_f32 and _f64 (the suffix kept in
 * C++ too: their arguments do not tell the types apart) compute in the
 * kernel's compute type, as torch does (f32 for f32, f16, bf16); nearest
 * computes in f32 for every dtype, as torch's nearest kernels do. */
#ifndef CT_CORE_INTERP_MATH_H
#define CT_CORE_INTERP_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

typedef enum ct_interp_kind {
  CT_INTERP_KIND_NEAREST,       /* torch's legacy 'nearest': floor(o * scale) */
  CT_INTERP_KIND_NEAREST_EXACT, /* 'nearest-exact': floor((o + 0.5) * scale) */
  CT_INTERP_KIND_LINEAR,        /* 'linear' / 'bilinear' along this axis */
} ct_interp_kind;

/* One axis: n_in input positions to n_out outputs. scale is torch's
 * coordinate scale (area_pixel_compute_scale), computed in double by the op
 * layer: align_corners: (n_in - 1) / (n_out - 1) (0 for one output); else
 * 1 / scale_factor when the caller gave a scale factor that is kept
 * (recompute_scale_factor false), else n_in / n_out. */
typedef struct ct_interp_axis {
  int64_t n_in, n_out;
  double scale;
  ct_interp_kind kind;
  bool align_corners; /* linear only */
} ct_interp_axis;

/* The geometry of an upsampling of (N, C, H, W) to (N, C, OH, OW). */
typedef struct ct_interp_params {
  ct_interp_axis h, w;
} ct_interp_params;

/* The input position output o reads in the nearest modes. Legacy nearest
 * keeps torch's shortcuts for equal and doubled sizes (exact copies) and
 * computes o * scale in f32; nearest-exact computes (o + 0.5) * scale in
 * double and floors it as f32, as torch's floorf((o + 0.5) * scale) does. */
CT_HOST_DEVICE int64_t ct_interp_nearest(const ct_interp_axis *a, int64_t o) {
  float s = (float)a->scale, r;
  if (a->kind == CT_INTERP_KIND_NEAREST) {
    if (a->n_out == a->n_in) return o;
    if (a->n_out == 2 * a->n_in) return o >> 1;
    r = floorf((float)o * s);
  } else {
    r = floorf((float)(((double)o + 0.5) * (double)s));
  }
  int64_t i = (int64_t)r;
  return i < a->n_in - 1 ? i : a->n_in - 1;
}

#define CT_T float
#define CT_S f32
#include "core/interp_math_t.h"
#undef CT_T
#undef CT_S

#define CT_T double
#define CT_S f64
#include "core/interp_math_t.h"
#undef CT_T
#undef CT_S

#endif /* CT_CORE_INTERP_MATH_H */
