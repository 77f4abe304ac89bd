/* Contiguous rows of bf16 <-> f32 (bf16_rows.c): the casts autocast does
 * for every product's inputs and the f32 detour of bf16 elementwise ops. */
#ifndef CT_BACKEND_CPU_BF16_ROWS_H
#define CT_BACKEND_CPU_BF16_ROWS_H

#include <stdint.h>

/* dst[i] = src[i] rounded to nearest even (NaN stays a quiet NaN), exactly
 * as ct_f32_to_bf16 (subnormals kept). */
void ct__bf16_from_f32_row(uint16_t *dst, const float *src, int64_t n);
/* dst[i] = src[i] (exact). */
void ct__bf16_to_f32_row(float *dst, const uint16_t *src, int64_t n);

#endif /* CT_BACKEND_CPU_BF16_ROWS_H */
