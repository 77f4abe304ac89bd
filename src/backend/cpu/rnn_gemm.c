/* The recurrent GEMM of the LSTM/GRU layers on a weight packed once per
 * layer (backend.h's rnn_pack / rnn_matmul_packed; layout in params.h).
 * A layer's step multiplies N rows (a batch: 32 in bench_rnn) by W_hh^T
 * (H, 4H) forward and by W_hh (4H, H) backward; the BLAS packs that weight
 * again at every call, 1 MB at H = 256 for a 17 MFLOP product, and ran at
 * 135-160 GFLOP/s where the sequence-long GEMMs reach 245 (one thread).
 * Packed once, the product reads the panels in place. Each task takes a
 * range of panels and every row block of them, so a panel is read from
 * memory once per step. f32; an AVX-512 kernel where the build has it
 * (rnn_gemm_avx512.c), else a portable loop the compiler vectorizes. */
#include "backend/cpu/cpu_arch.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/ew_run.h" /* CT_SIMD */
#include "core/parallel.h"

/* Multiply-adds below which the product stays on the calling thread
 * (gemm.c's threshold). */
#define RNN_GEMM_MIN_MNK 262144.0
#define ROWS 8 /* rows of C per kernel call */

ct_status ct__cpu_rnn_pack(ct_tensor *packed, const ct_tensor *w, bool transposed) {
  if (w->dtype != CT_F32)
    return ct__fail_status(CT_ERR_DTYPE, "rnn_pack: no CPU kernel for %s", ct_dtype_name(w->dtype));
  /* B[k][n] = w[n][k] (transposed) or w[k][n] */
  int64_t K = w->shape[transposed ? 1 : 0], Nc = w->shape[transposed ? 0 : 1];
  int64_t sk = w->strides[transposed ? 1 : 0], sn = w->strides[transposed ? 0 : 1];
  const float *src = ct__data(w);
  float *dst = ct__data(packed);
  for (int64_t p = 0; p * CT_RNN_PANEL < Nc; p++)
    for (int64_t k = 0; k < K; k++) {
      float *row = dst + (p * K + k) * CT_RNN_PANEL;
      for (int64_t j = 0; j < CT_RNN_PANEL; j++) {
        int64_t n = p * CT_RNN_PANEL + j;
        row[j] = n < Nc ? src[k * sk + n * sn] : 0.0f;
      }
    }
  return CT_OK;
}

#if !CT_CPU_AVX512
/* C rows [0, mr) x columns [0, nc) of one panel = A (mr, K) @ panel (K, 32)
 * (+ C): the portable form of ct__rnn_panel_avx512. */
static void panel_portable(int64_t mr, int64_t nc, int64_t K, const float *A, int64_t lda,
                           const float *P, float *C, int64_t ldc, bool beta_one) {
  for (int64_t r = 0; r < mr; r++) {
    float acc[CT_RNN_PANEL];
    for (int64_t j = 0; j < CT_RNN_PANEL; j++) acc[j] = beta_one && j < nc ? C[r * ldc + j] : 0;
    for (int64_t k = 0; k < K; k++) {
      float a = A[r * lda + k];
      const float *b = P + k * CT_RNN_PANEL;
      CT_SIMD for (int64_t j = 0; j < CT_RNN_PANEL; j++) acc[j] += a * b[j];
    }
    for (int64_t j = 0; j < nc; j++) C[r * ldc + j] = acc[j];
  }
}
#endif

typedef struct packed_job {
  int64_t M, Nc, K, panels, pieces;
  const float *A, *P;
  float *C;
  bool beta_one;
} packed_job;

static void packed_piece(int64_t b, void *vj) {
  const packed_job *j = vj;
  int64_t p0 = j->panels * b / j->pieces, p1 = j->panels * (b + 1) / j->pieces;
  for (int64_t p = p0; p < p1; p++) {
    int64_t c0 = p * CT_RNN_PANEL, nc = j->Nc - c0 < CT_RNN_PANEL ? j->Nc - c0 : CT_RNN_PANEL;
    const float *P = j->P + p * j->K * CT_RNN_PANEL;
    for (int64_t r = 0; r < j->M; r += ROWS) {
      int64_t mr = j->M - r < ROWS ? j->M - r : ROWS;
#if CT_CPU_AVX512
      ct__rnn_panel_avx512(mr, nc, j->K, j->A + r * j->K, j->K, P, j->C + r * j->Nc + c0, j->Nc,
                           j->beta_one);
#else
      panel_portable(mr, nc, j->K, j->A + r * j->K, j->K, P, j->C + r * j->Nc + c0, j->Nc,
                     j->beta_one);
#endif
    }
  }
}

ct_status ct__cpu_rnn_matmul_packed(ct_tensor *out, const ct_tensor *a, const ct_tensor *packed,
                                    bool beta_one) {
  if (a->dtype != CT_F32)
    return ct__fail_status(CT_ERR_DTYPE, "rnn_matmul_packed: no CPU kernel for %s",
                           ct_dtype_name(a->dtype));
  packed_job j = {.M = out->shape[0],
                  .Nc = out->shape[1],
                  .K = a->shape[1],
                  .A = ct__data(a),
                  .P = ct__data(packed),
                  .C = ct__data(out),
                  .beta_one = beta_one};
  if (j.M == 0 || j.Nc == 0) return CT_OK;
  j.panels = (j.Nc + CT_RNN_PANEL - 1) / CT_RNN_PANEL;
  int64_t nt = ct__num_threads();
  double work = (double)j.M * (double)j.Nc * (double)j.K;
  /* about twice as many pieces as threads (gemm.c's reason), whole panels */
  j.pieces = nt <= 1 || work < RNN_GEMM_MIN_MNK ? 1 : 2 * nt;
  if (j.pieces > j.panels) j.pieces = j.panels;
  if (j.pieces <= 1) {
    j.pieces = 1;
    packed_piece(0, &j);
  } else {
    ct__parallel_run(j.pieces, packed_piece, &j);
  }
  return CT_OK;
}
