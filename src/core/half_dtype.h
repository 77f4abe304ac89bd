/* One f16 or bf16 element at p, chosen by dtype, as f32 (loads and stores
 * for kernels and single values). */
#ifndef CT_CORE_HALF_DTYPE_H
#define CT_CORE_HALF_DTYPE_H

#include "core/half.h"
#include "core/internal.h"

static inline float ct__half_load(const void *p, ct_dtype d) {
  uint16_t h;
  memcpy(&h, p, 2);
  return d == CT_F16 ? ct_f16_to_f32(h) : ct_bf16_to_f32(h);
}
static inline void ct__half_store(void *p, ct_dtype d, float v) {
  uint16_t h = d == CT_F16 ? ct_f32_to_f16(v) : ct_f32_to_bf16(v);
  memcpy(p, &h, 2);
}

#endif /* CT_CORE_HALF_DTYPE_H */
