/* bf16 GEMM with AVX512-BF16's vdpbf16ps (gemm_bf16.h): each instruction
 * multiplies 16 pairs of bf16 and adds both products into 16 f32 sums, the
 * work of two f32 FMAs; OpenBLAS 0.3.21 as Debian builds it has no bf16 GEMM
 * (no cblas_sbgemm), and converting bf16 to f32 for sgemm made autocast
 * slower than f32.
 *
 * GotoBLAS blocking: for each KC x NC block of B, packed as panels of NR = 32
 * columns holding the K pairs (k, k+1) of each column side by side (what
 * vdpbf16ps reads), and each MC x KC block of A, packed as panels of MR = 8
 * rows of pairs, an 8 x 32 micro-kernel keeps C's tile in 16 zmm registers
 * and reads one B pair-row (2 zmm) and 8 broadcast A pairs per K pair. K is
 * padded to even, and tiles to 8 x 32, with zeros in the packing; edge tiles
 * are stored with masks. KC = 256 keeps a B panel (16 KiB) in L1 while the A
 * block (MC 128 rows, 64 KiB) sits in L2. The packing reads any strides, so
 * transposed and strided operands cost nothing extra.
 *
 * Parallel decomposition as gemm.c: C cut into about twice as many blocks
 * of rows (or of columns, when C is wider than tall) as threads, each a
 * product of its own with its own packing. */
#include "backend/cpu/gemm_bf16.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "core/internal.h"
#include "core/parallel.h"

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#define CT_HAVE_BF16_KERNEL 1
#include <immintrin.h>
#else
#define CT_HAVE_BF16_KERNEL 0
#endif

bool ct__gemm_bf16_available(void) {
#if CT_HAVE_BF16_KERNEL
  static int ok = -1; /* a race only computes the same answer twice */
  if (ok < 0) {
    const char *e = getenv("CTENSOR_CPU_BF16_GEMM");
    __builtin_cpu_init();
    ok = __builtin_cpu_supports("avx512bf16") && !(e && strcmp(e, "0") == 0);
  }
  return ok;
#else
  return false;
#endif
}

typedef struct bf16_job {
  int64_t M, N, K, ars, acs, brs, bcs, ldc, pieces;
  const void *A, *B; /* bf16, or f32 rounded to bf16 as it is read (f32_in) */
  float *C;
  bool beta_one, by_rows, f32_in;
} bf16_job;

/* Element i of A's or B's storage as bf16 bits. */
static inline uint16_t elem(const bf16_job *j, const void *base, int64_t i) {
  return j->f32_in ? ct_f32_to_bf16(((const float *)base)[i]) : ((const uint16_t *)base)[i];
}

/* C rows [r0, r1) x columns [c0, c1) one element at a time: builds without
 * the kernel, and a block whose packing buffers could not be allocated. */
static void scalar_product(const bf16_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t i = r0; i < r1; i++)
    for (int64_t c = c0; c < c1; c++) {
      float s = j->beta_one ? j->C[i * j->ldc + c] : 0.0f;
      for (int64_t p = 0; p < j->K; p++)
        s += ct_bf16_to_f32(elem(j, j->A, i * j->ars + p * j->acs)) *
             ct_bf16_to_f32(elem(j, j->B, p * j->brs + c * j->bcs));
      j->C[i * j->ldc + c] = s;
    }
}

#if CT_HAVE_BF16_KERNEL

#define MR 8
#define NR 32
#define KC 256
#define MC 128
#define NC 1024

/* The packing, once per element type (f32 rounded to bf16, or bf16 as it
 * is), each 32-bit word one K pair (k, k+1) of one row of A or column of B,
 * k in the low half. The loops whose reads are contiguous are written apart
 * so that the compiler vectorizes them.
 *   pack_b: B rows [p0, p0+kc) x columns [j0, j0+nc) into panels of NR
 *           columns: panel t, pair q holds its 32 columns' pairs.
 *   pack_a: A rows [i0, i0+mc) x [p0, p0+kc) into panels of MR rows. */
static inline uint16_t cvt_f32(float v) { return ct_f32_to_bf16(v); }
static inline uint16_t cvt_u16(uint16_t v) { return v; }
#define CT_BF16_PACK(S, T)                                                                      \
  static void pack_b_##S(const bf16_job *j, int64_t p0, int64_t kc, int64_t j0, int64_t nc,     \
                         uint32_t *restrict dst) {                                              \
    const T *B = j->B;                                                                          \
    int64_t brs = j->brs, bcs = j->bcs, kp = (kc + 1) / 2;                                      \
    for (int64_t t = 0; t < nc; t += NR) {                                                      \
      int64_t w = nc - t < NR ? nc - t : NR;                                                    \
      for (int64_t q = 0; q < kp; q++, dst += NR) {                                             \
        const T *r0 = B + (p0 + 2 * q) * brs + (j0 + t) * bcs, *r1 = r0 + brs;                  \
        if (2 * q + 1 == kc)                                                                    \
          for (int64_t c = 0; c < w; c++) dst[c] = cvt_##S(r0[c * bcs]);                        \
        else if (bcs == 1)                                                                      \
          for (int64_t c = 0; c < w; c++)                                                       \
            dst[c] = cvt_##S(r0[c]) | (uint32_t)cvt_##S(r1[c]) << 16;                           \
        else                                                                                    \
          for (int64_t c = 0; c < w; c++)                                                       \
            dst[c] = cvt_##S(r0[c * bcs]) | (uint32_t)cvt_##S(r1[c * bcs]) << 16;               \
        for (int64_t c = w; c < NR; c++) dst[c] = 0;                                            \
      }                                                                                         \
    }                                                                                           \
  }                                                                                             \
  static void pack_a_##S(const bf16_job *j, int64_t i0, int64_t mc, int64_t p0, int64_t kc,     \
                         uint32_t *restrict dst) {                                              \
    const T *A = j->A;                                                                          \
    int64_t ars = j->ars, acs = j->acs, kp = (kc + 1) / 2;                                      \
    for (int64_t t = 0; t < mc; t += MR, dst += MR * kp) {                                      \
      int64_t h = mc - t < MR ? mc - t : MR;                                                    \
      if (h < MR) memset(dst, 0, sizeof(uint32_t) * MR * (size_t)kp);                           \
      for (int64_t r = 0; r < h; r++) {                                                         \
        const T *a = A + (i0 + t + r) * ars + p0 * acs;                                         \
        int64_t full = kc / 2;                                                                  \
        if (acs == 1)                                                                           \
          for (int64_t q = 0; q < full; q++)                                                    \
            dst[q * MR + r] = cvt_##S(a[2 * q]) | (uint32_t)cvt_##S(a[2 * q + 1]) << 16;        \
        else                                                                                    \
          for (int64_t q = 0; q < full; q++)                                                    \
            dst[q * MR + r] = cvt_##S(a[2 * q * acs]) | (uint32_t)cvt_##S(a[(2 * q + 1) * acs]) \
                                                            << 16;                              \
        if (kc & 1) dst[full * MR + r] = cvt_##S(a[2 * full * acs]);                            \
      }                                                                                         \
    }                                                                                           \
  }
CT_BF16_PACK(f32, float)
CT_BF16_PACK(u16, uint16_t)

/* C tile (mr <= 8 rows, nr <= 32 columns) = or += packed A panel @ B panel. */
static void micro(int64_t kp, const uint32_t *Ap, const uint32_t *Bp, float *C, int64_t ldc,
                  int64_t mr, int64_t nr, bool add) {
  __m512 c0[MR], c1[MR];
  for (int r = 0; r < MR; r++) c0[r] = c1[r] = _mm512_setzero_ps();
  for (int64_t q = 0; q < kp; q++, Ap += MR, Bp += NR) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(Bp), b1 = (__m512bh)_mm512_load_si512(Bp + 16);
    for (int r = 0; r < MR; r++) {
      __m512bh a = (__m512bh)_mm512_set1_epi32((int)Ap[r]);
      c0[r] = _mm512_dpbf16_ps(c0[r], a, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], a, b1);
    }
  }
  __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
  __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
  for (int r = 0; r < mr; r++) {
    float *c = C + r * ldc;
    if (add) {
      c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, c));
      c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, c + 16));
    }
    _mm512_mask_storeu_ps(c, m0, c0[r]);
    _mm512_mask_storeu_ps(c + 16, m1, c1[r]);
  }
}

/* C rows [r0, r1) x columns [c0, c1), single-threaded, with its own packing. */
static void product(const bf16_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                    uint32_t *abuf, uint32_t *bbuf) {
  for (int64_t jc = c0; jc < c1; jc += NC) {
    int64_t nc = c1 - jc < NC ? c1 - jc : NC;
    for (int64_t pc = 0; pc < j->K; pc += KC) {
      int64_t kc = j->K - pc < KC ? j->K - pc : KC, kp = (kc + 1) / 2;
      bool add = pc > 0 || j->beta_one;
      if (j->f32_in)
        pack_b_f32(j, pc, kc, jc, nc, bbuf);
      else
        pack_b_u16(j, pc, kc, jc, nc, bbuf);
      for (int64_t ic = r0; ic < r1; ic += MC) {
        int64_t mc = r1 - ic < MC ? r1 - ic : MC;
        if (j->f32_in)
          pack_a_f32(j, ic, mc, pc, kc, abuf);
        else
          pack_a_u16(j, ic, mc, pc, kc, abuf);
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += MR)
            micro(kp, abuf + ir * kp, bbuf + jr * kp, j->C + (ic + ir) * j->ldc + jc + jr, j->ldc,
                  mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR, add);
      }
    }
  }
}

#define ABUF_WORDS ((size_t)MC * (KC / 2))
#define BBUF_WORDS ((size_t)NC * (KC / 2))

static void piece(int64_t b, void *vj) {
  const bf16_job *j = vj;
  int64_t n = j->by_rows ? j->M : j->N, align = j->by_rows ? MR : NR;
  int64_t lo = b == 0 ? 0 : (n * b / j->pieces) / align * align;
  int64_t hi = b == j->pieces - 1 ? n : (n * (b + 1) / j->pieces) / align * align;
  if (hi <= lo) return;
  uint32_t *buf = ct__aligned_alloc(64, (ABUF_WORDS + BBUF_WORDS) * sizeof(uint32_t));
  if (!buf) { /* no room for 0.6 MiB: the same product, one element at a time */
    if (j->by_rows)
      scalar_product(j, lo, hi, 0, j->N);
    else
      scalar_product(j, 0, j->M, lo, hi);
    return;
  }
  if (j->by_rows)
    product(j, lo, hi, 0, j->N, buf, buf + ABUF_WORDS);
  else
    product(j, 0, j->M, lo, hi, buf, buf + ABUF_WORDS);
  ct__free(buf);
}

#endif

static void run(bf16_job *j) {
  int64_t M = j->M, N = j->N;
  if (M <= 0 || N <= 0) return;
  if (j->K <= 0) {
    if (!j->beta_one)
      for (int64_t i = 0; i < M; i++) memset(j->C + i * j->ldc, 0, (size_t)N * sizeof(float));
    return;
  }
  j->by_rows = M >= N;
#if CT_HAVE_BF16_KERNEL
  /* as gemm.c: one thread below 2^18 multiply-adds, else up to 2 blocks per
   * thread, each at least 2^16 multiply-adds and one tile wide */
  double work = (double)M * (double)N * (double)j->K;
  int nt = ct__num_threads();
  int64_t p = nt <= 1 || work < 262144.0 ? 1 : 2 * (int64_t)nt;
  if ((double)p > work / 65536.0) p = (int64_t)(work / 65536.0);
  int64_t extent = j->by_rows ? M / MR : N / NR;
  if (p > extent) p = extent;
  j->pieces = p > 1 ? p : 1;
  if (j->pieces == 1)
    piece(0, j);
  else
    ct__parallel_run(j->pieces, piece, j);
#else
  scalar_product(j, 0, M, 0, N);
#endif
}

void ct__gemm_bf16(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t ars, int64_t acs,
                   const uint16_t *B, int64_t brs, int64_t bcs, float *C, int64_t ldc,
                   bool beta_one) {
  bf16_job j = {.M = M,
                .N = N,
                .K = K,
                .ars = ars,
                .acs = acs,
                .brs = brs,
                .bcs = bcs,
                .ldc = ldc,
                .A = A,
                .B = B,
                .C = C,
                .beta_one = beta_one};
  run(&j);
}

void ct__gemm_bf16_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                       int64_t lda, const float *B, int64_t ldb, bool beta_one, float *C,
                       int64_t ldc) {
  bf16_job j = {.M = M,
                .N = N,
                .K = K,
                .ars = ta ? 1 : lda,
                .acs = ta ? lda : 1,
                .brs = tb ? 1 : ldb,
                .bcs = tb ? ldb : 1,
                .ldc = ldc,
                .A = A,
                .B = B,
                .C = C,
                .beta_one = beta_one,
                .f32_in = true};
  run(&j);
}
