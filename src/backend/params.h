/* Parameters of the backend slots that take more than tensors (backend.h):
 * random fills, convolution and pooling geometry, optimizer updates (whose
 * struct lives with its formulas in core/optim_math.h). One
 * definition for both backends: this header compiles as C and as C++, so the
 * CUDA launchers (cuda_kernels.h) receive these very structs, no mirror. */
#ifndef CT_BACKEND_PARAMS_H
#define CT_BACKEND_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"
#include "core/optim_math.h" /* ct_optim_params */

/* Parameters of the random fills. The stream layout (which Philox block and
 * word feeds element i, and the exact transforms) is defined once in
 * core/philox.h; every backend reproduces it bit for bit. */
typedef enum {
  CT_RANDOM_UNIFORM,          /* a + (b - a) * U[0,1); floating out */
  CT_RANDOM_NORMAL,           /* a + b * N(0,1) (Box-Muller); floating out */
  CT_RANDOM_INT,              /* int_low + draw % int_range; any out dtype (range fits it) */
  CT_RANDOM_BERNOULLI,        /* 1 if U < a, else 0 (a = probability); any out dtype */
  CT_RANDOM_BERNOULLI_TENSOR, /* 1 if U < probs[i] (the slot's probs tensor); any out dtype */
} ct_random_kind;

typedef struct ct_random_params {
  ct_random_kind kind;
  double a, b;
  int64_t int_low;    /* CT_RANDOM_INT: lowest value */
  uint64_t int_range; /* CT_RANDOM_INT: number of values, >= 1 */
  bool wide;          /* 2 elements per Philox block (64-bit draws: f64
                       * uniform/normal, INT with int_range > 2^32), else 4 */
  uint64_t seed;
  uint64_t offset; /* Philox counter of block 0 (element 0) */
} ct_random_params;

/* Geometry of a 2-d convolution (all fields filled in by the op layer). */
typedef struct ct_conv2d_params {
  int64_t stride[2], padding[2], dilation[2], groups;
} ct_conv2d_params;

/* Geometry of 2-d pooling (all fields filled in; out sizes computed). */
typedef struct ct_pool2d_params {
  int64_t kernel[2], stride[2], padding[2];
  bool count_include_pad; /* avg: padding counts in the divisor */
} ct_pool2d_params;

/* The window of pooling output (oh, ow) over an H x W image: rows
 * oh*stride - pad .. + kernel, columns likewise, clipped to the image into
 * [h[0], h[1]) x [w[0], w[1]). Returns the average's divisor: the window
 * clipped to the padded image (count_include_pad) or to the image itself. */
CT_HOST_DEVICE int64_t ct_pool2d_window(const ct_pool2d_params *p, int64_t H, int64_t W, int64_t oh,
                                        int64_t ow, int64_t h[2], int64_t w[2]) {
  int64_t hs = oh * p->stride[0] - p->padding[0], ws = ow * p->stride[1] - p->padding[1];
  int64_t he = hs + p->kernel[0], we = ws + p->kernel[1];
  if (he > H + p->padding[0]) he = H + p->padding[0];
  if (we > W + p->padding[1]) we = W + p->padding[1];
  int64_t full = (he - hs) * (we - ws);
  h[0] = hs < 0 ? 0 : hs;
  w[0] = ws < 0 ? 0 : ws;
  h[1] = he > H ? H : he;
  w[1] = we > W ? W : we;
  return p->count_include_pad ? full : (h[1] - h[0]) * (w[1] - w[0]);
}

/* ---- attention ---- */
/* Scaled dot-product attention over BH independent problems: queries
 * (L, E), keys (S, E), values (S, Ev) -> (L, Ev) (core/sdpa_math.h). The
 * op layer fills every field. */
typedef struct ct_sdpa_params {
  int64_t BH, L, S, E, Ev;
  double scale;          /* scores = scale * q . k (+ mask) */
  bool causal;           /* key j > query i masked out (torch's top-left triangle) */
  double dropout_p;      /* 0: no dropout */
  uint64_t dropout_seed; /* Philox key of the dropout mask (ct_sdpa_keep) */
  /* The additive mask (contiguous, the dtype of the compute), when given:
   * element (b, i, j), b < BH, at
   *   (b / mask_inner) * mask_sb0 + (b % mask_inner) * mask_sb1 + i * mask_sl + j * mask_ss
   * (batch dims of the broadcast mask merged into at most two groups). */
  int64_t mask_inner, mask_sb0, mask_sb1, mask_sl, mask_ss;
} ct_sdpa_params;

#endif /* CT_BACKEND_PARAMS_H */
