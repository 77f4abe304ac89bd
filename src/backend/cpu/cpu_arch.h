/* The architecture-specific CPU kernels a build has, chosen at compile time
 * (the library is built with -march=native unless CTENSOR_NATIVE=OFF): each
 * lives in a file of its own named after its instruction set (*_avx512.c)
 * that compiles to nothing elsewhere, and is called through one #if
 * CT_CPU_<ISA> at its call site, next to the portable loop that does the
 * same work (which also covers the cases the vector kernel does not). */
#ifndef CT_CPU_ARCH_H
#define CT_CPU_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__AVX512F__)
#define CT_CPU_AVX512 1
#else
#define CT_CPU_AVX512 0
#endif

#if CT_CPU_AVX512
/* pool_avx512.c: 2x2 stride-2 max pooling of f32. One output row from input
 * rows r0, r1 (n outputs; indices base + 2*ow + offset, or ix NULL); returns n. */
int64_t ct__pool_max2x2_row_avx512(const float *r0, const float *r1, float *o, int64_t *ix,
                                   int64_t n, int64_t base, int64_t W);
/* Its backward for one plane: every grad_x element written once. */
void ct__pool_max2x2_bwd_plane_avx512(float *gx, const float *go, const int64_t *ix, int64_t H,
                                      int64_t W, int64_t Ho, int64_t Wo);
/* rnn_gemm_avx512.c: C rows [0, mr) (mr <= 8) x columns [0, nc) (nc <= 32)
 * of one packed panel (params.h's CT_RNN_PANEL layout) = A (mr, K) @ panel
 * (+ C when beta_one); A's rows lda apart, C's ldc. */
void ct__rnn_panel_avx512(int64_t mr, int64_t nc, int64_t K, const float *A, int64_t lda,
                          const float *P, float *C, int64_t ldc, bool beta_one);
#endif

#endif /* CT_CPU_ARCH_H */
