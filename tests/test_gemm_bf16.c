/* bf16 matrix products on the CPU against float64 references: the
 * AVX512-BF16 kernel (gemm_bf16.c) directly, over shapes that cross its
 * 8 x 32 tiles, its K block of 256 and its N block of 1024, odd K, every
 * operand layout and accumulation into C; then ct_matmul and ct_addmm on
 * bf16 tensors (stored in each test layout, batched, with a broadcast
 * batch), which take the kernel where the CPU has it and the f32 BLAS path
 * elsewhere. The test says which path it ran. Inputs are bf16 values, whose
 * products f32 holds exactly, so the kernel's error is f32 accumulation's:
 * a bound of K * 2^-23 of sum |a||b| (plus the result's bf16 rounding, 2^-8
 * relative, through ct_matmul). */
#include <math.h>
#include <string.h>

#include "backend/cpu/gemm_bf16.h" /* white box: the kernel itself */
#include "core/half.h"
#include "ct_test.h"

static const char *path(void) {
  return ct__gemm_bf16_available() ? "the AVX512-BF16 kernel"
                                   : "the portable loop / f32 BLAS (no AVX512-BF16 here)";
}

/* One product through ct__gemm_bf16 with A (M, K) and B (K, N) stored
 * row-major or transposed, C with a wider row (ldc > N) and, when add, a
 * starting value. */
static void check_kernel(int64_t M, int64_t N, int64_t K, bool at, bool bt, bool add,
                         unsigned seed) {
  double *a = ct_test_random(M * K, -2, 2, seed), *b = ct_test_random(K * N, -2, 2, seed + 1);
  double *c0 = ct_test_random(M * (N + 3), -1, 1, seed + 2);
  uint16_t *A = malloc((size_t)(M * K + 1) * 2), *B = malloc((size_t)(K * N + 1) * 2);
  float *C = malloc((size_t)(M * (N + 3)) * sizeof(float));
  for (int64_t i = 0; i < M; i++)
    for (int64_t p = 0; p < K; p++)
      A[at ? p * M + i : i * K + p] = ct_f32_to_bf16((float)a[i * K + p]);
  for (int64_t p = 0; p < K; p++)
    for (int64_t j = 0; j < N; j++)
      B[bt ? j * K + p : p * N + j] = ct_f32_to_bf16((float)b[p * N + j]);
  for (int64_t i = 0; i < M * (N + 3); i++) C[i] = (float)c0[i];
  int64_t ldc = N + 3;
  ct__gemm_bf16(M, N, K, A, at ? 1 : K, at ? M : 1, B, bt ? 1 : N, bt ? K : 1, C, ldc, add);
  int bad = 0;
  for (int64_t i = 0; i < M && bad < 3; i++) {
    for (int64_t j = 0; j < N + 3 && bad < 3; j++) {
      double got = C[i * ldc + j];
      if (j >= N) { /* past the product's columns: untouched */
        if (got != (double)(float)c0[i * ldc + j]) {
          CHECK_MSG(false, "M %lld N %lld K %lld: wrote C[%lld][%lld] outside the product",
                    (long long)M, (long long)N, (long long)K, (long long)i, (long long)j);
          bad++;
        }
        continue;
      }
      double s = add ? (double)(float)c0[i * ldc + j] : 0, mag = fabs(s);
      for (int64_t p = 0; p < K; p++) {
        double x = ct_bf16_to_f32(A[at ? p * M + i : i * K + p]);
        double y = ct_bf16_to_f32(B[bt ? j * K + p : p * N + j]);
        s += x * y, mag += fabs(x * y);
      }
      double tol = (double)(K + 2) * ldexp(1, -23) * mag + 1e-30;
      if (fabs(got - s) > tol) {
        CHECK_MSG(false, "M %lld N %lld K %lld at %d bt %d add %d: C[%lld][%lld] = %.9g, f64 %.9g",
                  (long long)M, (long long)N, (long long)K, at, bt, add, (long long)i, (long long)j,
                  got, s);
        bad++;
      }
    }
  }
  free(a), free(b), free(c0), free(A), free(B), free(C);
}

CT_TEST(bf16_kernel_matches_f64_over_tiles_blocks_and_layouts) {
  printf("bf16 products run on %s\n", path());
  static const int64_t shapes[][3] = {{1, 1, 1},      {8, 32, 2},    {7, 31, 3},   {9, 33, 257},
                                      {64, 64, 64},   {17, 45, 513}, {130, 20, 5}, {3, 1030, 40},
                                      {200, 70, 300}, {16, 48, 0}};
  unsigned seed = 1;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int v = 0; v < 8; v++, seed += 3)
      check_kernel(shapes[s][0], shapes[s][1], shapes[s][2], v & 1, v & 2, v & 4, seed);
}

/* out (B, n, m) = a @ b for bf16 tensors against f64, a and b in `layout`. */
static void check_matmul(int64_t B, int64_t n, int64_t k, int64_t m, bool b_broadcast,
                         ct_test_layout layout, unsigned seed) {
  double *a = ct_test_random(B * n * k, -1, 1, seed),
         *b = ct_test_random(B * k * m, -1, 1, seed + 1);
  ct_test_round_to(a, B * n * k, CT_BF16);
  ct_test_round_to(b, B * k * m, CT_BF16);
  ct_tensor *ta = ct_test_make(a, CT_SHAPE(B, n, k), CT_BF16, layout);
  ct_tensor *tb = b_broadcast ? ct_test_make(b, CT_SHAPE(k, m), CT_BF16, layout)
                              : ct_test_make(b, CT_SHAPE(B, k, m), CT_BF16, layout);
  ct_tensor *y = ct_matmul(ta, tb);
  CHECK_OK(y);
  double *ref = malloc((size_t)(B * n * m) * sizeof(double));
  double worst = 0;
  for (int64_t q = 0; q < B; q++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++)
          s += a[(q * n + i) * k + p] * b[((b_broadcast ? 0 : q) * k + p) * m + j];
        ref[(q * n + i) * m + j] = s;
        if (fabs(s) > worst) worst = fabs(s);
      }
  /* the result's bf16 rounding (2^-8 relative) plus f32 accumulation over k
   * terms of size <= 1 */
  if (y) CHECK_CLOSE(y, ref, ldexp(1, -8), (double)k * ldexp(1, -22));
  free(a), free(b), free(ref);
}

CT_TEST(bf16_matmul_and_addmm_match_f64) {
  printf("bf16 products run on %s\n", path());
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    check_matmul(1, 40, 70, 50, false, (ct_test_layout)l, 10 + l);
    check_matmul(3, 17, 300, 33, false, (ct_test_layout)l, 20 + l);
    check_matmul(2, 64, 96, 128, true, (ct_test_layout)l, 30 + l);
    check_matmul(2, 5, 9, 3, false, (ct_test_layout)l, 40 + l); /* below the kernel's tiles */
  }
  /* addmm accumulates into the product's result: beta_one in the kernel */
  double *x = ct_test_random(24 * 40, -1, 1, 7), *w = ct_test_random(40 * 48, -1, 1, 8);
  double *bias = ct_test_random(48, -1, 1, 9);
  ct_test_round_to(x, 24 * 40, CT_BF16);
  ct_test_round_to(w, 40 * 48, CT_BF16);
  ct_test_round_to(bias, 48, CT_BF16);
  ct_tensor *tx = ct_test_make(x, CT_SHAPE(24, 40), CT_BF16, CT_LAYOUT_CONTIG);
  ct_tensor *tw = ct_test_make(w, CT_SHAPE(40, 48), CT_BF16, CT_LAYOUT_CONTIG);
  ct_tensor *tbias = ct_test_make(bias, CT_SHAPE(48), CT_BF16, CT_LAYOUT_CONTIG);
  ct_tensor *y = ct_addmm(tbias, tx, tw, 1.0, 1.0);
  CHECK_OK(y);
  double ref[24 * 48];
  for (int i = 0; i < 24; i++)
    for (int j = 0; j < 48; j++) {
      double s = bias[j];
      for (int p = 0; p < 40; p++) s += x[i * 40 + p] * w[p * 48 + j];
      ref[i * 48 + j] = s;
    }
  if (y) CHECK_CLOSE(y, ref, ldexp(1, -8), 40 * ldexp(1, -22));
  free(x), free(w), free(bias);
}

/* conv2d and its gradients on bf16 tensors (the kernel's f32-input form)
 * against the f64 convolution of the same values, over a padded strided
 * 3x3, a grouped one and a 1x1: a sum weighted by r makes every output reach
 * both gradients. */
static void check_conv(int64_t N, int64_t C, int64_t H, int64_t Co, int64_t k,
                       const ct_conv2d_opts *o, unsigned seed) {
  int64_t G = o->groups ? o->groups : 1;
  double *x = ct_test_random(N * C * H * H, -1, 1, seed);
  double *w = ct_test_random(Co * (C / G) * k * k, -1, 1, seed + 1);
  ct_test_round_to(x, N * C * H * H, CT_BF16);
  ct_test_round_to(w, Co * (C / G) * k * k, CT_BF16);
  ct_tensor *out[2], *gx[2], *gw[2];
  ct_dtype dts[2] = {CT_BF16, CT_F64};
  for (int d = 0; d < 2; d++) {
    ct_tensor *tx = ct_test_make(x, CT_SHAPE(N, C, H, H), dts[d], CT_LAYOUT_CONTIG);
    ct_tensor *tw = ct_test_make(w, CT_SHAPE(Co, C / G, k, k), dts[d], CT_LAYOUT_CONTIG);
    ct_requires_grad_(tx, true);
    ct_requires_grad_(tw, true);
    out[d] = ct_conv2d(tx, tw, NULL, o);
    CHECK_OK(out[d]);
    if (!out[d]) return;
    int64_t on = ct_numel(out[d]);
    double *rv = ct_test_random(on, 0.25, 0.75, seed + 2); /* the same bf16 values in both */
    ct_test_round_to(rv, on, CT_BF16);
    ct_tensor *r = ct_test_make(rv, ct_shape(out[d]), 4, dts[d], CT_LAYOUT_CONTIG);
    free(rv);
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(out[d], r), NULL), NULL, NULL));
    gx[d] = ct_grad(tx), gw[d] = ct_grad(tw);
  }
  ct_tensor *pairs[3][2] = {{out[0], out[1]}, {gx[0], gx[1]}, {gw[0], gw[1]}};
  int64_t terms[3] = {(C / G) * k * k, Co * k * k, N * ct_size(out[1], 2) * ct_size(out[1], 3)};
  for (int i = 0; i < 3; i++) {
    double *ref = ct_test_values(pairs[i][1]);
    /* the result's bf16 rounding and f32 accumulation over the terms */
    CHECK_CLOSE(pairs[i][0], ref, ldexp(1, -8), (double)terms[i] * ldexp(1, -22));
    free(ref);
  }
  free(x), free(w);
}

CT_TEST(bf16_conv2d_and_gradients_match_f64) {
  printf("bf16 convolutions multiply on %s\n", path());
  check_conv(3, 8, 12, 16, 3, &(ct_conv2d_opts){.padding = {1, 1}, .stride = {2, 2}}, 50);
  check_conv(2, 8, 9, 12, 3, &(ct_conv2d_opts){.padding = {1, 1}, .groups = 2}, 60);
  check_conv(4, 24, 8, 40, 1, &(ct_conv2d_opts){0}, 70);
}

/* What --amp auto and an explicit --amp consult on the CPU. */
CT_TEST(cpu_autocast_is_fast_where_the_bf16_kernel_runs) {
  const char *why = "unset", *why16 = NULL;
  CHECK(ct_autocast_cpu_is_fast(CT_BF16, &why) == ct__gemm_bf16_available());
  CHECK(ct__gemm_bf16_available() ? why == NULL : why != NULL && strstr(why, "AVX512-BF16"));
  CHECK(!ct_autocast_cpu_is_fast(CT_F16, &why16) && why16 && strstr(why16, "f16"));
  CHECK(!ct_autocast_cpu_is_fast(CT_F32, NULL));
  printf("bf16 autocast on this CPU: %s\n", why ? why : "faster than f32");
}
