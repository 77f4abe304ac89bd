/* The pieces of scaled dot-product attention that both backends must compute
 * alike (backend/cpu/attention.c, backend/cuda/attention.cu): where a mask
 * element lies, which scores the causal triangle hides, and the dropout mask.
 *
 * The dropout mask is a function of (dropout_seed, b, i, j) only, so the
 * forward and backward kernels of either backend regenerate the same mask
 * without storing it: element idx = (b * L + i) * S + j reads word idx % 4 of
 * Philox block idx / 4 under key dropout_seed (counter offset 0), and the
 * weight is kept when that word * 2^-32 >= dropout_p (probability 1 - p; the
 * comparison in binary64, as the Bernoulli fills of core/philox.h). */
#ifndef CT_CORE_SDPA_MATH_H
#define CT_CORE_SDPA_MATH_H

#include "backend/params.h"
#include "core/philox.h"

/* Offset (elements) of mask element (b, i, j). */
CT_HOST_DEVICE int64_t ct_sdpa_mask_offset(const ct_sdpa_params *p, int64_t b, int64_t i,
                                           int64_t j) {
  return (b / p->mask_inner) * p->mask_sb0 + (b % p->mask_inner) * p->mask_sb1 + i * p->mask_sl +
         j * p->mask_ss;
}

/* Whether the causal triangle hides key j from query i. */
CT_HOST_DEVICE bool ct_sdpa_hidden(const ct_sdpa_params *p, int64_t i, int64_t j) {
  return p->causal && j > i;
}

/* The factor of a kept weight: 1 / (1 - p) (0 when p = 1: every weight dropped). */
CT_HOST_DEVICE double ct_sdpa_keep_scale(const ct_sdpa_params *p) {
  return p->dropout_p < 1 ? 1.0 / (1.0 - p->dropout_p) : 0.0;
}

/* Keep decision from Philox word w (see the file's comment). */
CT_HOST_DEVICE bool ct_sdpa_keep_word(const ct_sdpa_params *p, uint32_t w) {
  return (double)w * 2.3283064365386962890625e-10 >= p->dropout_p; /* w * 2^-32 */
}

/* Flat index of weight (b, i, j) in the dropout stream. */
CT_HOST_DEVICE uint64_t ct_sdpa_drop_index(const ct_sdpa_params *p, int64_t b, int64_t i,
                                           int64_t j) {
  return ((uint64_t)b * (uint64_t)p->L + (uint64_t)i) * (uint64_t)p->S + (uint64_t)j;
}

/* Whether weight (b, i, j) is kept by dropout (one Philox block per call:
 * loops over a row may reuse a block for 4 neighbours, as the CPU does). */
CT_HOST_DEVICE bool ct_sdpa_keep(const ct_sdpa_params *p, int64_t b, int64_t i, int64_t j) {
  uint64_t idx = ct_sdpa_drop_index(p, b, i, j);
  uint32_t w[4];
  ct_philox_block(p->dropout_seed, 0, idx >> 2, w);
  return ct_sdpa_keep_word(p, w[idx & 3]);
}

#endif /* CT_CORE_SDPA_MATH_H */
