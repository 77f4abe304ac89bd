/* bf16 <-> f32 over contiguous rows (bf16_rows.h). The generic casts convert
 * one element at a time through a dtype switch (f16 or bf16), which no
 * compiler vectorizes; these loops are branch-free integer arithmetic on
 * the bits, which it does (16 lanes with AVX-512), for the same results as
 * core/half.h's scalar conversions. The bf16 training steps spent nearly
 * half their time in the scalar loops. vcvtneps2bf16 is not used: it
 * flushes subnormal inputs to zero, where the scalar rounding keeps them. */
#include "backend/cpu/bf16_rows.h"

#include <string.h>

void ct__bf16_from_f32_row(uint16_t *restrict dst, const float *restrict src, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &src[i], sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
  }
}

void ct__bf16_to_f32_row(float *restrict dst, const uint16_t *restrict src, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)src[i] << 16;
    memcpy(&dst[i], &u, sizeof u);
  }
}
