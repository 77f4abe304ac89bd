/* Internals of the CPU convolution shared by conv.c and its AVX-512 kernels
 * (conv_avx512.c): the geometry, the contexts of the batch loops, and the
 * AVX-512 entry points (cpu_arch.h: compiled when the build targets
 * AVX-512). Shapes and decomposition: conv.c. */
#ifndef CT_CPU_CONV_H
#define CT_CPU_CONV_H

#include "backend/cpu/cpu_arch.h"
#include "backend/cpu/nn_util.h"

typedef struct conv_geom {
  int64_t N, C, H, W, Co, kH, kW, Ho, Wo, G, Cg, Cog, K, P;
  int64_t sh, sw, ph, pw, dh, dw;
  bool direct; /* 1x1, stride 1, no padding: col is x itself */
} conv_geom;

/* The output columns [*ow0, *ow1) that read inside the image for a kernel
 * column whose input column is ow*sw + off_w (the others read padding). */
static inline void conv_valid_cols(const conv_geom *g, int64_t off_w, int64_t *ow0, int64_t *ow1) {
  int64_t lo = off_w >= 0 ? 0 : (-off_w + g->sw - 1) / g->sw;
  int64_t hi = g->W - off_w <= 0 ? 0 : (g->W - off_w + g->sw - 1) / g->sw;
  if (hi > g->Wo) hi = g->Wo;
  *ow0 = lo > hi ? hi : lo;
  *ow1 = hi;
}

typedef struct fwd_ctx {
  conv_geom g;
  ct_dtype dt;
  bool bf16; /* f32 data from bf16 tensors: products on the bf16 kernel (gemm_bf16.h) */
  size_t es;
  int64_t nb; /* samples per GEMM */
  const char *x, *w, *b;
  char *out;
  char *scratch; /* nt buffers of scratch_elems(g, nb) elements */
} fwd_ctx;

typedef struct bwd_ctx {
  conv_geom g;
  ct_dtype dt;
  bool bf16; /* as fwd_ctx */
  size_t es;
  int64_t nb; /* samples per GEMM */
  const char *x, *w, *gout;
  char *gx, *gw; /* gw: nt accumulators of Co*K elements (thread 0: grad_w itself) */
  char *scratch; /* nt buffers of scratch_elems(g, nb) elements */
  char *gw_final;
} bwd_ctx;

/* Scratch elements one thread needs (conv.c). */
size_t ct__conv_scratch_elems(const conv_geom *g, int64_t nb);

#if CT_CPU_AVX512
/* f32, stride 1 and dilation 1 along W: im2col, and col2im overwriting x
 * (instead of adding into a zeroed x). */
void ct__conv_im2col_f32_w1(const conv_geom *g, const float *x, float *col, int64_t ld);
void ct__conv_col2im_f32_w1(const conv_geom *g, const float *col, float *x, int64_t ld);
/* The direct forward for few input channels: whether it applies, the weights
 * packed into c->scratch, and the batch-range body (run_batches). */
bool ct__conv_direct_fwd_ok(ct_dtype dt, const conv_geom *g);
void ct__conv_direct_pack_w(const conv_geom *g, const float *w, float *wpk);
void ct__conv_direct_fwd_body(int tid, int64_t n0, int64_t n1, void *fwd_ctx);
/* The direct grad_w for the same layers (kW <= 5): into the thread's zeroed
 * accumulator. */
bool ct__conv_direct_gw_ok(ct_dtype dt, const conv_geom *g);
void ct__conv_direct_gw_body(int tid, int64_t n0, int64_t n1, void *bwd_ctx);
#endif

#endif /* CT_CPU_CONV_H */
