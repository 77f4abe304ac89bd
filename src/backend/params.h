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
#include "core/interp_math.h" /* ct_interp_params */
#include "core/optim_math.h"  /* ct_optim_params */
#include "ctensor/tensor.h"   /* CT_MAX_DIMS */

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

/* ---- Row normalizations (group norm, instance norm, RMS norm) ---- */
/* x (contiguous) is `rows` rows of `channels` x `inner` elements, each row
 * normalized by its own statistics: group norm's rows are (sample, group)
 * pairs, instance norm's (sample, channel) pairs (channels 1), RMS norm's the
 * normalized trailing dims (groups 1, channels = their size, inner 1). The
 * affine parameters (groups * channels; may be absent) scale and shift
 * element (r, d, s) by weight[(r % groups) * channels + d]. rms: no centering,
 * rstd = 1 / sqrt(mean(x^2) + eps) (torch's rms_norm); else
 * 1 / sqrt(biased variance + eps). */
typedef struct ct_row_norm_params {
  int64_t rows, groups, channels, inner;
  double eps;
  bool rms;
} ct_row_norm_params;

/* ---- Adaptive pooling ---- */
/* The window of output i of n_out over n_in input positions: [start, end),
 * torch's floor(i * n_in / n_out) and ceil((i + 1) * n_in / n_out). */
CT_HOST_DEVICE int64_t ct_adaptive_start(int64_t i, int64_t n_out, int64_t n_in) {
  return i * n_in / n_out;
}
CT_HOST_DEVICE int64_t ct_adaptive_end(int64_t i, int64_t n_out, int64_t n_in) {
  return ((i + 1) * n_in + n_out - 1) / n_out;
}
/* The outputs whose windows hold input j: [first, last] (gathered by the
 * backward kernels, so that no two threads write one element). */
CT_HOST_DEVICE int64_t ct_adaptive_first_out(int64_t j, int64_t n_out, int64_t n_in) {
  return j * n_out / n_in;
}
CT_HOST_DEVICE int64_t ct_adaptive_last_out(int64_t j, int64_t n_out, int64_t n_in) {
  int64_t l = ((j + 1) * n_out + n_in - 1) / n_in - 1;
  return l < n_out - 1 ? l : n_out - 1;
}

/* ---- Sort-scan family: flip, roll, repeat, pad ------------------------------ */
/* Where element c along dim d of a remap's output comes from, n being the
 * input's size there: flip reads n - 1 - c; roll by s (0 <= s < n) reads
 * (c - s) mod n; tile (repeat) c mod n; interleave by r (repeat_interleave)
 * c / r; reflect and replicate padding with `s` elements before read c - s
 * mirrored at the edges (without repeating them; s < n) or clamped to them.
 * The op layer fills one entry per dim of x (CT_REMAP_SAME elsewhere). */
#define CT_REMAP_MAX_DIMS 8
typedef enum {
  CT_REMAP_SAME,
  CT_REMAP_FLIP,
  CT_REMAP_ROLL,
  CT_REMAP_TILE,
  CT_REMAP_INTERLEAVE,
  CT_REMAP_REFLECT,
  CT_REMAP_REPLICATE
} ct_remap_kind;
typedef struct ct_remap_params {
  int kind[CT_REMAP_MAX_DIMS];      /* ct_remap_kind */
  int64_t shift[CT_REMAP_MAX_DIMS]; /* roll: s; interleave: r; padding: elements before */
} ct_remap_params;

CT_HOST_DEVICE int64_t ct_remap_source(const ct_remap_params *p, int d, int64_t c, int64_t n) {
  int64_t s = p->shift[d], i = c - s;
  switch (p->kind[d]) {
    case CT_REMAP_FLIP:
      return n - 1 - c;
    case CT_REMAP_ROLL:
      return c >= s ? i : i + n;
    case CT_REMAP_TILE:
      return c % n;
    case CT_REMAP_INTERLEAVE:
      return c / s;
    case CT_REMAP_REFLECT:
      if (i < 0) i = -i;
      return i >= n ? 2 * (n - 1) - i : i;
    case CT_REMAP_REPLICATE:
      return i < 0 ? 0 : (i >= n ? n - 1 : i);
    default:
      return c;
  }
}

/* ---- Advanced indexing (ct_index, ct_index_put_) ----
 * n index tensors address dims dims[0..n) of a tensor (sizes sizes[k]). One
 * index point is kept as one i64, the mixed-radix number
 *   lin = sum_k idx_k * radix[k],  radix[n-1] = 1, radix[k] = radix[k+1] * sizes[k+1]
 * (each idx_k wrapped from [-size, size) to [0, size) and checked when lin is
 * made), so one lin addresses any tensor of that shape, whatever its strides:
 * the gradient of x[idx] is scattered into a fresh tensor with lin from x. */
typedef struct ct_adv_index_params {
  int n;
  int dims[CT_MAX_DIMS]; /* for messages */
  int64_t sizes[CT_MAX_DIMS];
  int64_t radix[CT_MAX_DIMS];
  int64_t strides[CT_MAX_DIMS]; /* of the tensor read or written (set per call) */
} ct_adv_index_params;

/* The element offset (relative to the indexed view) of index point lin. */
CT_HOST_DEVICE int64_t ct_adv_index_offset(const ct_adv_index_params *p, int64_t lin) {
  int64_t off = 0;
  for (int k = 0; k < p->n; k++) off += (lin / p->radix[k] % p->sizes[k]) * p->strides[k];
  return off;
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

/* ---- recurrent cells ---- */
/* The pointwise part of one LSTM or GRU step for N rows of H units
 * (core/rnn_math.h), everything after the two gate matmuls. All tensors are
 * contiguous, one dtype (f32 or f64):
 *   LSTM: gi, gh (N, 4H) pre-activations (i, f, g, o); state c (N, H);
 *         outputs h', c' (N, H) each; ws (N, 5H) = (i, f, g, o, tanh c').
 *   GRU:  gi, gh (N, 3H) (r, z, n; gh's n part is h W_hn^T + b_hn); state h
 *         (N, H); output h' (N, H); ws (N, 4H) = (r, z, n, h W_hn^T + b_hn). */
typedef enum { CT_RNN_CELL_LSTM, CT_RNN_CELL_GRU } ct_rnn_cell_kind;
/* The recurrent GEMM's packed weight (rnn_pack, rnn_matmul_packed): B (K, Nc)
 * as column panels of CT_RNN_PANEL, panel p = B[:, 32p .. 32p + 31] stored
 * (K, 32) row-major, the columns past Nc zero; ct_rnn_packed_numel elements. */
#define CT_RNN_PANEL 32
static inline int64_t ct_rnn_packed_numel(int64_t K, int64_t Nc) {
  return (Nc + CT_RNN_PANEL - 1) / CT_RNN_PANEL * CT_RNN_PANEL * K;
}
typedef struct ct_rnn_cell_params {
  ct_rnn_cell_kind kind;
  int64_t N, H;
} ct_rnn_cell_params;

/* ---- linalg ---- */
/* The LAPACK least-squares drivers of the lstsq slot (torch.linalg.lstsq's
 * names; gels is composed from QR by the op on every device). */
typedef enum ct_lstsq_driver { CT_LSTSQ_GELSY, CT_LSTSQ_GELSD, CT_LSTSQ_GELSS } ct_lstsq_driver;

#endif /* CT_BACKEND_PARAMS_H */
