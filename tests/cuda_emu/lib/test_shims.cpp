/* Standalone test of the cuBLAS and cuDNN host stand-ins (cublas_emu.cpp,
 * cudnn_emu.cpp) against naive double-precision references written here
 * independently: gemm with every op / type / compute combination, odd sizes,
 * padded leading dimensions, batch strides 0, gapped and negative, beta 0
 * over NaN, alpha 0 over NaN operands, TF32; the three convolutions with
 * groups, stride, padding, dilation and both modes, in every algorithm the
 * lists offer; the heuristics' lists and the fallbacks a caller goes through;
 * and the statuses of bad arguments and inconsistent descriptors.
 *
 * "Device memory" is what this file registers (DevBuf): its own
 * emu_lib_check_device accepts exactly those ranges, so a shim touching
 * anything else, or beyond an extent, fails the call (and is counted). Its
 * emu_lib_enqueue only queues: the work runs at drain(), so the tests see
 * that a call itself writes nothing and that its work doesn't depend on
 * descriptors or alpha/beta variables after the call returns.
 *
 * Build (from the repository root; lib_runtime.cpp is not part of it):
 *   L=tests/cuda_emu/lib
 *   g++ -std=c++17 -O2 -Wall -Wextra -Werror -I $L/shim -I tests/cuda_emu/shim
 *       -I tests/cuda_emu -I src -I include $L/cublas_emu.cpp $L/cudnn_emu.cpp
 *       $L/test_shims.cpp -o /tmp/test_shims && /tmp/test_shims */
#include <cublas_v2.h>
#include <cudnn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "emu_lib.h"

/* ---- Harness ------------------------------------------------------------------------ */

static int n_checks, n_failed;
#define CHECK(cond, ...)                                       \
  do {                                                         \
    n_checks++;                                                \
    if (!(cond)) {                                             \
      if (++n_failed <= 60) {                                  \
        printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
        printf(__VA_ARGS__);                                   \
        printf("\n");                                          \
      }                                                        \
    }                                                          \
  } while (0)

static std::mt19937 rng(20240611u);
static double uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
static int randint(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

/* ---- Emulated device memory ------------------------------------------------------------ */

struct Region {
  uintptr_t lo, hi;
};
static std::vector<Region> regions;
static int check_fails;        /* emu_lib_check_device refusals */
static std::string check_what; /* the last refusal's name */

extern "C" bool emu_lib_check_device(const void *p, size_t bytes, const char *what) {
  uintptr_t a = (uintptr_t)p;
  for (const Region &r : regions)
    if (p && a >= r.lo && a <= r.hi && bytes <= r.hi - a) return true;
  check_fails++;
  check_what = what;
  return false;
}

/* The queued work of the libraries' calls (one stream: FIFO). */
static std::vector<std::function<void()>> queue;
void emu_lib_enqueue(cudaStream_t, const char *, std::function<void()> fn) {
  queue.push_back(std::move(fn));
}
static void drain() {
  std::vector<std::function<void()>> q;
  q.swap(queue);
  for (auto &f : q) f();
}

/* A buffer registered as device memory: exactly [p, p + n) (p = a 256-byte
 * aligned block + offset), so one byte too far is refused. */
struct DevBuf {
  char *raw = nullptr, *p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t bytes, size_t offset = 0) : n(bytes) {
    size_t total = (bytes + offset + 64 + 255) / 256 * 256;
    raw = (char *)aligned_alloc(256, total);
    memset(raw, 0x5a, total);
    p = raw + offset;
    regions.push_back({(uintptr_t)p, (uintptr_t)p + bytes});
  }
  ~DevBuf() {
    for (size_t i = 0; i < regions.size(); i++)
      if (regions[i].lo == (uintptr_t)p && regions[i].hi == (uintptr_t)p + n) {
        regions.erase(regions.begin() + (long)i);
        break;
      }
    free(raw);
  }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
};

/* ---- Element types ----------------------------------------------------------------------- */

enum T { F16, BF16, F32, F64 };
static const char *const tname[] = {"f16", "bf16", "f32", "f64"};
static size_t tsize(T t) { return t == F16 || t == BF16 ? 2 : t == F32 ? 4 : 8; }
static void put(void *p, size_t i, T t, double v) {
  char *q = (char *)p + i * tsize(t);
  if (t == F16) {
    uint16_t h = ct_f32_to_f16((float)v);
    memcpy(q, &h, 2);
  } else if (t == BF16) {
    uint16_t h = ct_f32_to_bf16((float)v);
    memcpy(q, &h, 2);
  } else if (t == F32) {
    float f = (float)v;
    memcpy(q, &f, 4);
  } else {
    memcpy(q, &v, 8);
  }
}
static double get(const void *p, size_t i, T t) {
  const char *q = (const char *)p + i * tsize(t);
  if (t == F16 || t == BF16) {
    uint16_t h;
    memcpy(&h, q, 2);
    return t == F16 ? ct_f16_to_f32(h) : ct_bf16_to_f32(h);
  }
  if (t == F32) {
    float f;
    memcpy(&f, q, 4);
    return f;
  }
  double d;
  memcpy(&d, q, 8);
  return d;
}
static double representable(T t, double v) {
  char buf[8];
  put(buf, 0, t, v);
  return get(buf, 0, t);
}
/* Unit roundoff of storing into t (half an ulp, relative) and the absolute
 * floor under it (half the smallest subnormal step). */
static double u_of(T t) {
  return t == F16 ? 0x1p-11 : t == BF16 ? 0x1p-8 : t == F32 ? 0x1p-24 : 0x1p-53;
}
static double floor_of(T t) {
  return t == F16 ? 0x1p-25 : t == BF16 ? 0x1p-134 : t == F32 ? 0x1p-150 : 0;
}

/* TF32 (10-bit mantissa), nearest with ties away from zero: written with
 * frexp here, independently of the shims' bit manipulation. */
static double tf32(double v) {
  if (!isfinite(v) || v == 0) return v;
  int e;
  double m = frexp(v, &e); /* |m| in [0.5, 1): 11 significant bits = m * 2^11 */
  return ldexp(round(m * 2048.0), e - 11);
}

/* ---- cuBLAS -----------------------------------------------------------------------------------
 */

struct GemmType {
  const char *name;
  cudaDataType ab, c;
  cublasComputeType_t comp;
  T tab, tc;
  bool tf32;
};
static const GemmType gemm_types[] = {
    {"32F/32F", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, F32, F32, false},
    {"32F/TF32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, F32, F32, true},
    {"64F/64F", CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, F64, F64, false},
    {"16F/32F", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, F16, F16, false},
    {"16F->32F", CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, F16, F32, false},
    {"16BF/32F", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, BF16, BF16, false},
    {"16BF->32F", CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, BF16, F32, false},
};

/* An operand of a strided batch: where batch 0 starts in its buffer and the
 * batch stride (elements). */
struct Layout {
  long long base, stride;
  size_t elems; /* buffer length */
};
/* batch modes: 0 packed, 1 stride 0 for A, 2 stride 0 for B, 3 gaps between
 * batches, 4 negative strides (the last batch first in memory) */
static Layout layout(int mode, bool zero, long long extent, int batch, long long gap) {
  Layout l;
  if (zero) return Layout{0, 0, (size_t)extent};
  long long s = extent + (mode == 3 ? gap : 0);
  l.elems = (size_t)((batch - 1) * s + extent);
  if (mode == 4)
    l.base = (batch - 1) * s, l.stride = -s;
  else
    l.base = 0, l.stride = s;
  return l;
}

static uint64_t bits_at(const void *p, size_t i, T t) {
  uint64_t b = 0;
  memcpy(&b, (const char *)p + i * tsize(t), tsize(t));
  return b;
}

/* One gemm against the double reference; ints: small integer inputs (every
 * result exact: checked for equality). */
static void gemm_case(cublasHandle_t h, const GemmType &gt, cublasOperation_t oa,
                      cublasOperation_t ob, int m, int n, int k, int pad, int batch, int mode,
                      bool beta0, double alpha, bool ints) {
  bool ta = oa != CUBLAS_OP_N, tb = ob != CUBLAS_OP_N;
  int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  int lda = std::max(1, a_rows + pad), ldb = std::max(1, b_rows + pad), ldc = std::max(1, m + pad);
  long long ea = (long long)(a_cols - 1) * lda + a_rows,
            eb = (long long)(b_cols - 1) * ldb + b_rows, ec = (long long)(n - 1) * ldc + m;
  Layout la = layout(mode, mode == 1, ea, batch, 5), lb = layout(mode, mode == 2, eb, batch, 3),
         lc = layout(mode, false, ec, batch, 7);
  DevBuf A(la.elems * tsize(gt.tab)), B(lb.elems * tsize(gt.tab)), C(lc.elems * tsize(gt.tc));
  /* everything outside the matrices is NaN: read, it would show */
  for (size_t i = 0; i < la.elems; i++) put(A.p, i, gt.tab, NAN);
  for (size_t i = 0; i < lb.elems; i++) put(B.p, i, gt.tab, NAN);
  for (size_t i = 0; i < lc.elems; i++) put(C.p, i, gt.tc, NAN);
  auto val = [&](T t) { return representable(t, ints ? randint(-2, 2) : uniform(-1, 1)); };
  auto a_at = [&](int b, int i,
                  int p) { /* op(A)(i, p) of batch b: element index */
                           return (size_t)(la.base + b * la.stride +
                                           (ta ? p + (long long)i * lda : i + (long long)p * lda));
  };
  auto b_at = [&](int b, int p, int j) {
    return (size_t)(lb.base + b * lb.stride +
                    (tb ? j + (long long)p * ldb : p + (long long)j * ldb));
  };
  auto c_at = [&](int b, int i, int j) {
    return (size_t)(lc.base + b * lc.stride + i + (long long)j * ldc);
  };
  for (int b = 0; b < batch; b++) {
    for (int i = 0; i < m; i++)
      for (int p = 0; p < k; p++) put(A.p, a_at(b, i, p), gt.tab, val(gt.tab));
    for (int p = 0; p < k; p++)
      for (int j = 0; j < n; j++) put(B.p, b_at(b, p, j), gt.tab, val(gt.tab));
    if (!beta0)
      for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) put(C.p, c_at(b, i, j), gt.tc, val(gt.tc));
  }
  std::vector<char> c0(C.p, C.p + C.n);
  double beta = beta0 ? 0.0 : 1.0;
  float af = (float)alpha, bf = (float)beta;
  bool dbl = gt.comp == CUBLAS_COMPUTE_64F;
  const void *ap = dbl ? (const void *)&alpha : (const void *)&af,
             *bp = dbl ? (const void *)&beta : (const void *)&bf;
  int fails0 = check_fails;
  cublasStatus_t s =
      cublasGemmStridedBatchedEx(h, oa, ob, m, n, k, ap, A.p + la.base * (long long)tsize(gt.tab),
                                 gt.ab, lda, la.stride, B.p + lb.base * (long long)tsize(gt.tab),
                                 gt.ab, ldb, lb.stride, bp, C.p + lc.base * (long long)tsize(gt.tc),
                                 gt.c, ldc, lc.stride, batch, gt.comp, CUBLAS_GEMM_DEFAULT);
  char what[160];
  snprintf(what, sizeof what, "%s op%c%c m%d n%d k%d pad%d batch%d mode%d beta%g alpha%g%s",
           gt.name, ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, pad, batch, mode, beta, alpha,
           ints ? " ints" : "");
  CHECK(s == CUBLAS_STATUS_SUCCESS, "%s: %s", what, cublasGetStatusName(s));
  CHECK(check_fails == fails0, "%s: device check refused %s", what, check_what.c_str());
  CHECK(queue.size() == (s == CUBLAS_STATUS_SUCCESS ? 1u : 0u), "%s: %zu items queued", what,
        queue.size());
  CHECK(!memcmp(C.p, c0.data(), C.n), "%s: C written by the call itself, not by its queued work",
        what);
  drain();
  if (s != CUBLAS_STATUS_SUCCESS) return;
  double u_acc = dbl ? 0x1p-53 : 0x1p-24;
  std::vector<char> touched(lc.elems, 0);
  int bad = 0;
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double ref = 0, mag = 0;
        for (int p = 0; p < k; p++) {
          double x = get(A.p, a_at(b, i, p), gt.tab), y = get(B.p, b_at(b, p, j), gt.tab);
          if (gt.tf32) x = tf32(x), y = tf32(y);
          ref += x * y;
          mag += fabs(x * y);
        }
        size_t ci = c_at(b, i, j);
        double old = beta0 ? 0 : get(c0.data(), ci, gt.tc);
        ref = alpha * ref + beta * old;
        double got = get(C.p, ci, gt.tc);
        double tol = (fabs(alpha) * mag * (k + 2) + fabs(old)) * u_acc + fabs(ref) * u_of(gt.tc) +
                     floor_of(gt.tc);
        bool ok = ints ? got == ref : fabs(got - ref) <= tol;
        if (!ok && bad++ < 3)
          CHECK(ok, "%s: C[%d](%d,%d) = %.17g, reference %.17g (tol %.3g)", what, b, i, j, got, ref,
                tol);
        touched[ci] = 1;
      }
  CHECK(bad == 0, "%s: %d elements off", what, bad);
  size_t changed = 0;
  for (size_t e = 0; e < lc.elems; e++)
    if (!touched[e] && bits_at(C.p, e, gt.tc) != bits_at(c0.data(), e, gt.tc)) changed++;
  CHECK(changed == 0, "%s: %zu elements outside the matrices changed", what, changed);
}

static void test_gemm_values(cublasHandle_t h) {
  const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T};
  const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 4, 33}, {8, 9, 1}, {2, 13, 6}};
  for (const GemmType &gt : gemm_types)
    for (cublasOperation_t oa : ops)
      for (cublasOperation_t ob : ops)
        for (const auto &sh : shapes)
          for (int pad : {0, 3})
            for (int mode = 0; mode < 5; mode++)
              for (int beta0 = 0; beta0 < 2; beta0++) {
                int batch = mode == 0 && pad == 0 ? 1 : 3;
                gemm_case(h, gt, oa, ob, sh[0], sh[1], sh[2], pad, batch, mode, beta0,
                          beta0 ? 1.0 : -0.75, false);
              }
  /* exact results: small integers (sums of products well inside every type) */
  for (const GemmType &gt : gemm_types)
    for (cublasOperation_t oa : ops)
      for (cublasOperation_t ob : ops) {
        gemm_case(h, gt, oa, ob, 7, 6, 33, 2, 2, 3, false, 1.0, true);
        gemm_case(h, gt, oa, ob, 5, 3, 4, 0, 1, 0, true, 1.0, true);
      }
  /* CUBLAS_OP_C is CUBLAS_OP_T for real types */
  gemm_case(h, gemm_types[0], CUBLAS_OP_C, CUBLAS_OP_N, 4, 3, 5, 1, 2, 0, false, 1.0, false);
}

/* A 1x1x1 float gemm: a * b under the compute type and the handle's math. */
static float gemm1(cublasHandle_t h, float a, float b, cublasComputeType_t comp) {
  DevBuf A(4), B(4), C(4);
  memcpy(A.p, &a, 4);
  memcpy(B.p, &b, 4);
  float one = 1, zero = 0, c = NAN;
  cublasStatus_t s = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, A.p,
                                                CUDA_R_32F, 1, 0, B.p, CUDA_R_32F, 1, 0, &zero, C.p,
                                                CUDA_R_32F, 1, 0, 1, comp, CUBLAS_GEMM_DEFAULT);
  CHECK(s == CUBLAS_STATUS_SUCCESS, "gemm1: %s", cublasGetStatusName(s));
  drain();
  memcpy(&c, C.p, 4);
  return c;
}

static void test_gemm_tf32(cublasHandle_t h) {
  float x = 1.0f + 0x1p-12f, tie = 1.0f + 0x1p-11f;
  CHECK(gemm1(h, x, 1.0f, CUBLAS_COMPUTE_32F) == x, "exact f32 keeps 1 + 2^-12");
  CHECK(gemm1(h, x, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32) == 1.0f, "TF32 rounds 1 + 2^-12 to 1");
  CHECK(gemm1(h, tie, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32) == 1.0f + 0x1p-10f,
        "TF32 ties away from zero");
  CHECK(gemm1(h, -tie, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32) == -1.0f - 0x1p-10f,
        "TF32 ties away from zero (negative)");
  CHECK(isinf(gemm1(h, INFINITY, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32)), "TF32 keeps inf");
  CHECK(isnan(gemm1(h, NAN, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32)), "TF32 keeps nan");
  /* the handle's TF32 math mode makes CUBLAS_COMPUTE_32F use TF32 too */
  CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS, "set TF32 math");
  CHECK(gemm1(h, x, 1.0f, CUBLAS_COMPUTE_32F) == 1.0f, "TF32 math mode rounds");
  CHECK(cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                            CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) ==
            CUBLAS_STATUS_SUCCESS,
        "set matmul.cu's math mode");
  CHECK(gemm1(h, x, 1.0f, CUBLAS_COMPUTE_32F) == x, "default math is exact");
}

/* alpha == 0 or k == 0: A and B are neither read nor checked; beta == 0
 * writes zeros over NaN. */
static void test_gemm_degenerate(cublasHandle_t h) {
  DevBuf C(6 * 4);
  float nan_ = NAN, one = 1, zero = 0, three = 3;
  for (int i = 0; i < 6; i++) memcpy(C.p + 4 * i, &nan_, 4);
  float host_a[6] = {NAN, NAN, NAN, NAN, NAN, NAN}; /* not device memory: must not be touched */
  int fails0 = check_fails;
  cublasStatus_t s = cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 4, &zero, host_a, CUDA_R_32F, 2, 0, host_a, CUDA_R_32F, 4,
      0, &zero, C.p, CUDA_R_32F, 2, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  CHECK(s == CUBLAS_STATUS_SUCCESS && check_fails == fails0, "alpha 0: %s", cublasGetStatusName(s));
  drain();
  bool zeros = true;
  for (int i = 0; i < 6; i++) zeros = zeros && get(C.p, (size_t)i, F32) == 0.0;
  CHECK(zeros, "alpha 0, beta 0: C = 0 over NaN");
  for (int i = 0; i < 6; i++) put(C.p, (size_t)i, F32, i);
  s = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 3, 0, &one, nullptr, CUDA_R_32F, 2,
                                 0, nullptr, CUDA_R_32F, 3, 0, &three, C.p, CUDA_R_32F, 2, 0, 1,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  CHECK(s == CUBLAS_STATUS_SUCCESS, "k 0: %s", cublasGetStatusName(s));
  drain();
  bool scaled = true;
  for (int i = 0; i < 6; i++) scaled = scaled && get(C.p, (size_t)i, F32) == 3.0 * i;
  CHECK(scaled, "k 0: C = beta C");
  /* nothing to compute: no pointer is touched */
  s = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 3, 2, &one, nullptr, CUDA_R_32F, 1,
                                 0, nullptr, CUDA_R_32F, 2, 0, &zero, nullptr, CUDA_R_32F, 1, 0, 1,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  CHECK(s == CUBLAS_STATUS_SUCCESS, "m 0: %s", cublasGetStatusName(s));
  s = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 2, &one, nullptr, CUDA_R_32F, 2,
                                 0, nullptr, CUDA_R_32F, 2, 0, &zero, nullptr, CUDA_R_32F, 2, 0, 0,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  CHECK(s == CUBLAS_STATUS_SUCCESS, "batch 0: %s", cublasGetStatusName(s));
  CHECK(check_fails == fails0, "degenerate calls touched memory: %s", check_what.c_str());
  CHECK(queue.empty(), "nothing to compute, yet %zu items queued", queue.size());
}

static void test_gemm_errors(cublasHandle_t h) {
  DevBuf A(64 * 4), B(64 * 4), C(64 * 4); /* 64 floats each */
  float one = 1, zero = 0;
  /* a valid 4x3x5 float call, then one argument changed at a time */
  struct Args {
    cublasHandle_t h;
    cublasOperation_t oa, ob;
    int m, n, k;
    const void *alpha, *A;
    cudaDataType at;
    int lda;
    long long sa;
    const void *B;
    cudaDataType bt;
    int ldb;
    long long sb;
    const void *beta;
    void *C;
    cudaDataType ct;
    int ldc;
    long long sc;
    int batch;
    cublasComputeType_t comp;
    cublasGemmAlgo_t algo;
  };
  const Args ok{h,
                CUBLAS_OP_N,
                CUBLAS_OP_N,
                4,
                3,
                5,
                &one,
                A.p,
                CUDA_R_32F,
                4,
                20,
                B.p,
                CUDA_R_32F,
                5,
                15,
                &zero,
                C.p,
                CUDA_R_32F,
                4,
                12,
                2,
                CUBLAS_COMPUTE_32F,
                CUBLAS_GEMM_DEFAULT};
  auto call = [](const Args &a) {
    cublasStatus_t s = cublasGemmStridedBatchedEx(a.h, a.oa, a.ob, a.m, a.n, a.k, a.alpha, a.A,
                                                  a.at, a.lda, a.sa, a.B, a.bt, a.ldb, a.sb, a.beta,
                                                  a.C, a.ct, a.ldc, a.sc, a.batch, a.comp, a.algo);
    CHECK(queue.size() == (s == CUBLAS_STATUS_SUCCESS ? 1u : 0u), "%zu items queued after %s",
          queue.size(), cublasGetStatusName(s));
    drain();
    return s;
  };
  CHECK(call(ok) == CUBLAS_STATUS_SUCCESS, "the valid call");
  struct Bad {
    const char *what;
    void (*edit)(Args &);
    cublasStatus_t want;
    bool refused; /* by the device-memory check */
  };
  const Bad bad[] = {
      {"null handle", [](Args &a) { a.h = nullptr; }, CUBLAS_STATUS_NOT_INITIALIZED, false},
      {"bogus handle", [](Args &a) { a.h = (cublasHandle_t)&a; }, CUBLAS_STATUS_NOT_INITIALIZED,
       false},
      {"m < 0", [](Args &a) { a.m = -1; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"n < 0", [](Args &a) { a.n = -1; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"k < 0", [](Args &a) { a.k = -1; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"batch < 0", [](Args &a) { a.batch = -1; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"op CONJG", [](Args &a) { a.oa = CUBLAS_OP_CONJG; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"lda < m (N)", [](Args &a) { a.lda = 3; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"lda < k (T)", [](Args &a) { a.oa = CUBLAS_OP_T, a.lda = 4; }, CUBLAS_STATUS_INVALID_VALUE,
       false},
      {"ldb < k (N)", [](Args &a) { a.ldb = 4; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"ldb < n (T)", [](Args &a) { a.ob = CUBLAS_OP_T, a.ldb = 2; }, CUBLAS_STATUS_INVALID_VALUE,
       false},
      {"ldc < m", [](Args &a) { a.ldc = 3; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"lda 0 with m 0", [](Args &a) { a.m = 0, a.lda = 0, a.ldc = 1; },
       CUBLAS_STATUS_INVALID_VALUE, false},
      {"null alpha", [](Args &a) { a.alpha = nullptr; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"null beta", [](Args &a) { a.beta = nullptr; }, CUBLAS_STATUS_INVALID_VALUE, false},
      {"A 16F, B 16BF", [](Args &a) { a.at = CUDA_R_16F, a.bt = CUDA_R_16BF, a.ct = CUDA_R_32F; },
       CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"16F with TF32",
       [](Args &a) { a.at = a.bt = a.ct = CUDA_R_16F, a.comp = CUBLAS_COMPUTE_32F_FAST_TF32; },
       CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"32F with 64F compute", [](Args &a) { a.comp = CUBLAS_COMPUTE_64F; },
       CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"64F with 32F compute", [](Args &a) { a.at = a.bt = a.ct = CUDA_R_64F; },
       CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"64F with TF32",
       [](Args &a) { a.at = a.bt = a.ct = CUDA_R_64F, a.comp = CUBLAS_COMPUTE_32F_FAST_TF32; },
       CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"32F into 64F", [](Args &a) { a.ct = CUDA_R_64F; }, CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"32F into 16F", [](Args &a) { a.ct = CUDA_R_16F; }, CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"8I", [](Args &a) { a.at = a.bt = CUDA_R_8I; }, CUBLAS_STATUS_NOT_SUPPORTED, false},
      {"compute 16F", [](Args &a) { a.comp = CUBLAS_COMPUTE_16F; }, CUBLAS_STATUS_NOT_SUPPORTED,
       false},
      {"algo 57", [](Args &a) { a.algo = (cublasGemmAlgo_t)57; }, CUBLAS_STATUS_NOT_SUPPORTED,
       false},
      {"A on the host", [](Args &a) { a.A = &a; }, CUBLAS_STATUS_INVALID_VALUE, true},
      {"B on the host", [](Args &a) { a.B = &a; }, CUBLAS_STATUS_INVALID_VALUE, true},
      {"C on the host", [](Args &a) { a.C = &a; }, CUBLAS_STATUS_INVALID_VALUE, true},
      {"C null", [](Args &a) { a.C = nullptr; }, CUBLAS_STATUS_INVALID_VALUE, true},
      /* 64 floats per buffer: batch strides that run past them */
      {"A's batches overrun", [](Args &a) { a.sa = 50; }, CUBLAS_STATUS_INVALID_VALUE, true},
      {"B's batches overrun", [](Args &a) { a.batch = 5, a.sa = 0, a.sc = 0; },
       CUBLAS_STATUS_INVALID_VALUE, true},
      {"C's ld overruns", [](Args &a) { a.ldc = 31, a.batch = 1; }, CUBLAS_STATUS_INVALID_VALUE,
       true},
      {"A before its buffer (negative stride)", [](Args &a) { a.sa = -20; },
       CUBLAS_STATUS_INVALID_VALUE, true},
  };
  for (const Bad &b : bad) {
    Args a = ok;
    b.edit(a);
    int fails0 = check_fails;
    cublasStatus_t s = call(a);
    CHECK(s == b.want, "%s: got %s, want %s", b.what, cublasGetStatusName(s),
          cublasGetStatusName(b.want));
    CHECK((check_fails > fails0) == b.refused, "%s: device check %s", b.what,
          b.refused ? "not consulted" : "refused");
  }

  /* workspace: 256-byte alignment, device memory, reset by cublasSetStream */
  DevBuf ws(4096);
  CHECK(cublasSetWorkspace(h, ws.p + 16, 1024) == CUBLAS_STATUS_INVALID_VALUE,
        "misaligned workspace");
  CHECK(cublasSetWorkspace(h, nullptr, 64) == CUBLAS_STATUS_INVALID_VALUE,
        "null workspace with a size");
  CHECK(cublasSetWorkspace(h, ws.p, 4096) == CUBLAS_STATUS_SUCCESS, "device workspace");
  CHECK(call(ok) == CUBLAS_STATUS_SUCCESS, "gemm with a device workspace");
  CHECK(cublasSetWorkspace(h, ws.p, 8192) == CUBLAS_STATUS_SUCCESS,
        "workspace claimed too large (not checked yet)");
  int fails0 = check_fails;
  CHECK(call(ok) == CUBLAS_STATUS_INVALID_VALUE && check_fails == fails0 + 1,
        "a workspace beyond its buffer");
  CHECK(check_what.find("workspace") != std::string::npos, "the refusal names the workspace: %s",
        check_what.c_str());
  CHECK(cublasSetStream(h, (cudaStream_t) nullptr) == CUBLAS_STATUS_SUCCESS, "set stream");
  CHECK(call(ok) == CUBLAS_STATUS_SUCCESS, "cublasSetStream reset the workspace");

  CHECK(cublasSetMathMode(h, (cublasMath_t)7) == CUBLAS_STATUS_INVALID_VALUE, "math mode 7");
  CHECK(cublasSetMathMode(h, (cublasMath_t)(CUBLAS_TF32_TENSOR_OP_MATH | 8)) ==
            CUBLAS_STATUS_INVALID_VALUE,
        "two math modes at once");
  CHECK(cublasSetMathMode(nullptr, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_NOT_INITIALIZED,
        "math mode, null handle");
  CHECK(cublasSetStream(nullptr, nullptr) == CUBLAS_STATUS_NOT_INITIALIZED,
        "set stream, null handle");
  CHECK(cublasSetWorkspace(nullptr, nullptr, 0) == CUBLAS_STATUS_NOT_INITIALIZED,
        "workspace, null handle");
  CHECK(cublasCreate(nullptr) == CUBLAS_STATUS_INVALID_VALUE, "create into null");
  cublasHandle_t h2;
  CHECK(cublasCreate(&h2) == CUBLAS_STATUS_SUCCESS, "create");
  CHECK(cublasDestroy(h2) == CUBLAS_STATUS_SUCCESS, "destroy");
  CHECK(cublasDestroy(h2) == CUBLAS_STATUS_NOT_INITIALIZED, "destroy twice");
  Args a = ok;
  a.h = h2;
  CHECK(call(a) == CUBLAS_STATUS_NOT_INITIALIZED, "gemm on a destroyed handle");

  CHECK(!strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE"),
        "status name");
  CHECK(!strcmp(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED"),
        "status name");
  CHECK(strlen(cublasGetStatusString(CUBLAS_STATUS_ALLOC_FAILED)) > 0, "status string");
  CHECK(strlen(cublasGetStatusString((cublasStatus_t)31)) > 0, "unknown status string");
}

/* ---- cuDNN ----------------------------------------------------------------------------------- */

struct ConvCase {
  int N, C, H, W, K, R, S, G, ph, pw, sh, sw, dh, dw;
  cudnnConvolutionMode_t mode;
  int P() const { return (H + 2 * ph - ((R - 1) * dh + 1)) / sh + 1; }
  int Q() const { return (W + 2 * pw - ((S - 1) * dw + 1)) / sw + 1; }
  int Cg() const { return C / G; }
  int Kg() const { return K / G; }
  size_t xn() const { return (size_t)N * C * H * W; }
  size_t wn() const { return (size_t)K * Cg() * R * S; }
  size_t yn() const { return (size_t)N * K * P() * Q(); }
};
static const ConvCase conv_cases[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION},
    {1, 4, 9, 8, 6, 3, 2, 2, 1, 2, 2, 1, 1, 1,
     CUDNN_CROSS_CORRELATION}, /* groups, asymmetric stride */
    {2, 6, 10, 9, 6, 3, 3, 3, 2, 1, 2, 3, 2, 1, CUDNN_CROSS_CORRELATION}, /* dilation */
    {1, 2, 5, 5, 2, 2, 3, 2, 0, 1, 1, 2, 1, 2, CUDNN_CONVOLUTION},        /* depthwise, flipped */
    {3, 1, 4, 4, 1, 4, 4, 1, 0, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION},        /* filter = input */
    {1, 8, 6, 7, 4, 1, 1, 4, 0, 0, 3, 2, 1, 1,
     CUDNN_CROSS_CORRELATION},                                     /* 1x1, stride skips inputs */
    {2, 4, 5, 6, 4, 3, 3, 1, 2, 2, 2, 2, 2, 2, CUDNN_CONVOLUTION}, /* all of it, flipped */
};

static cudnnDataType_t dnn_type(T t) {
  return t == F64    ? CUDNN_DATA_DOUBLE
         : t == F16  ? CUDNN_DATA_HALF
         : t == BF16 ? CUDNN_DATA_BFLOAT16
                     : CUDNN_DATA_FLOAT;
}

struct Descs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t c = nullptr;
  Descs(const ConvCase &cc, T t, cudnnMathType_t math) {
    cudnnDataType_t dt = dnn_type(t);
    bool ok = cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS &&
              cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS &&
              cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS &&
              cudnnCreateConvolutionDescriptor(&c) == CUDNN_STATUS_SUCCESS &&
              cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, dt, cc.N, cc.C, cc.H, cc.W) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, dt, cc.N, cc.K, cc.P(), cc.Q()) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NCHW, cc.K, cc.Cg(), cc.R, cc.S) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolution2dDescriptor(c, cc.ph, cc.pw, cc.sh, cc.sw, cc.dh, cc.dw, cc.mode,
                                              t == F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolutionGroupCount(c, cc.G) == CUDNN_STATUS_SUCCESS &&
              cudnnSetConvolutionMathType(c, math) == CUDNN_STATUS_SUCCESS;
    CHECK(ok, "descriptors of a valid convolution");
  }
  ~Descs() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(c);
  }
};

enum { FWD, BWD_DATA, BWD_FILTER };
static const char *const kind_name[] = {"forward", "backward data", "backward filter"};

/* The references, written as loops over the forward's index map: forward
 * gathers, the two adjoints scatter. ref: the sums; mag: the sums of |terms|. */
static void reference(int kind, const ConvCase &cc, const std::vector<double> &x,
                      const std::vector<double> &w, const std::vector<double> &dy,
                      std::vector<double> &ref, std::vector<double> &mag) {
  size_t n_out = kind == FWD ? cc.yn() : kind == BWD_DATA ? cc.xn() : cc.wn();
  ref.assign(n_out, 0);
  mag.assign(n_out, 0);
  int P = cc.P(), Q = cc.Q(), Cg = cc.Cg(), Kg = cc.Kg();
  for (int n = 0; n < cc.N; n++)
    for (int k = 0; k < cc.K; k++)
      for (int p = 0; p < P; p++)
        for (int q = 0; q < Q; q++)
          for (int c = 0; c < Cg; c++)
            for (int r = 0; r < cc.R; r++)
              for (int s = 0; s < cc.S; s++) {
                int ih = p * cc.sh - cc.ph + r * cc.dh, iw = q * cc.sw - cc.pw + s * cc.dw;
                if (ih < 0 || ih >= cc.H || iw < 0 || iw >= cc.W) continue;
                int wr = cc.mode == CUDNN_CONVOLUTION ? cc.R - 1 - r : r;
                int ws = cc.mode == CUDNN_CONVOLUTION ? cc.S - 1 - s : s;
                size_t xi =
                    (((size_t)n * cc.C + (size_t)(k / Kg) * Cg + c) * cc.H + ih) * cc.W + iw;
                size_t wi = (((size_t)k * Cg + c) * cc.R + wr) * cc.S + ws;
                size_t yi = (((size_t)n * cc.K + k) * P + p) * Q + q;
                size_t oi = kind == FWD ? yi : kind == BWD_DATA ? xi : wi;
                double term = kind == FWD        ? x[xi] * w[wi]
                              : kind == BWD_DATA ? dy[yi] * w[wi]
                                                 : dy[yi] * x[xi];
                ref[oi] += term;
                mag[oi] += fabs(term);
              }
}

/* Runs one algorithm of one kind: workspace query, a workspace of exactly
 * that size, the call. Inputs / output as the API orders them. */
static cudnnStatus_t run_algo(int kind, cudnnHandle_t h, const Descs &d, int algo,
                              const void *alpha, const void *beta, const void *in0, const void *in1,
                              void *out, size_t *ws_used) {
  size_t need = 0;
  cudnnStatus_t s;
  if (kind == FWD)
    s = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.c, d.y,
                                                (cudnnConvolutionFwdAlgo_t)algo, &need);
  else if (kind == BWD_DATA)
    s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.c, d.x,
                                                     (cudnnConvolutionBwdDataAlgo_t)algo, &need);
  else
    s = cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x, d.y, d.c, d.w, (cudnnConvolutionBwdFilterAlgo_t)algo, &need);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (ws_used) *ws_used = need;
  DevBuf ws(need);
  void *wp = need ? ws.p : nullptr;
  if (kind == FWD)
    s = cudnnConvolutionForward(h, alpha, d.x, in0, d.w, in1, d.c, (cudnnConvolutionFwdAlgo_t)algo,
                                wp, need, beta, d.y, out);
  else if (kind == BWD_DATA)
    s = cudnnConvolutionBackwardData(h, alpha, d.w, in1, d.y, in0, d.c,
                                     (cudnnConvolutionBwdDataAlgo_t)algo, wp, need, beta, d.x, out);
  else
    s = cudnnConvolutionBackwardFilter(h, alpha, d.x, in0, d.y, in1, d.c,
                                       (cudnnConvolutionBwdFilterAlgo_t)algo, wp, need, beta, d.w,
                                       out);
  CHECK(queue.size() == (s == CUDNN_STATUS_SUCCESS ? 1u : 0u), "%zu items queued after %s",
        queue.size(), cudnnGetErrorString(s));
  drain(); /* before the workspace goes */
  return s;
}

struct Entry {
  int algo;
  cudnnStatus_t status;
  cudnnDeterminism_t det;
  cudnnMathType_t math;
  size_t memory;
};
static std::vector<Entry> algo_list(int kind, cudnnHandle_t h, const Descs &d, int requested,
                                    cudnnStatus_t *st) {
  std::vector<Entry> out;
  int got = -1;
  if (kind == FWD) {
    cudnnConvolutionFwdAlgoPerf_t p[16];
    *st = cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.c, d.y, requested, &got, p);
    for (int i = 0; *st == CUDNN_STATUS_SUCCESS && i < got; i++)
      out.push_back({(int)p[i].algo, p[i].status, p[i].determinism, p[i].mathType, p[i].memory});
  } else if (kind == BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t p[16];
    *st = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.c, d.x, requested, &got, p);
    for (int i = 0; *st == CUDNN_STATUS_SUCCESS && i < got; i++)
      out.push_back({(int)p[i].algo, p[i].status, p[i].determinism, p[i].mathType, p[i].memory});
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t p[16];
    *st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.c, d.w, requested, &got, p);
    for (int i = 0; *st == CUDNN_STATUS_SUCCESS && i < got; i++)
      out.push_back({(int)p[i].algo, p[i].status, p[i].determinism, p[i].mathType, p[i].memory});
  }
  return out;
}
static const int algo_count[] = {CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};

/* Every algorithm of every kind on one case and type, against the reference:
 * beta 0 over NaN, then alpha -0.5, beta 2 over values. */
static void conv_values(cudnnHandle_t h, const ConvCase &cc, int ci, T t, cudnnMathType_t math) {
  Descs d(cc, t, math);
  bool use_tf32 = t == F32 && math != CUDNN_FMA_MATH;
  size_t es = tsize(t);
  DevBuf X(cc.xn() * es), Wt(cc.wn() * es), DY(cc.yn() * es);
  std::vector<double> x(cc.xn()), w(cc.wn()), dy(cc.yn());
  for (size_t i = 0; i < x.size(); i++) put(X.p, i, t, x[i] = representable(t, uniform(-1, 1)));
  for (size_t i = 0; i < w.size(); i++) put(Wt.p, i, t, w[i] = representable(t, uniform(-1, 1)));
  for (size_t i = 0; i < dy.size(); i++) put(DY.p, i, t, dy[i] = representable(t, uniform(-1, 1)));
  std::vector<double> xr = x, wr = w, dyr = dy; /* what the products see */
  if (use_tf32) {
    for (double &v : xr) v = tf32(v);
    for (double &v : wr) v = tf32(v);
    for (double &v : dyr) v = tf32(v);
  }
  int P = cc.P(), Q = cc.Q();
  for (int kind = FWD; kind <= BWD_FILTER; kind++) {
    std::vector<double> ref, mag;
    reference(kind, cc, xr, wr, dyr, ref, mag);
    int nterms = kind == FWD        ? cc.Cg() * cc.R * cc.S
                 : kind == BWD_DATA ? cc.Kg() * cc.R * cc.S
                                    : cc.N * P * Q;
    const void *in0 = kind == BWD_DATA ? (const void *)DY.p : (const void *)X.p;
    const void *in1 = kind == BWD_FILTER ? (const void *)DY.p : (const void *)Wt.p;
    cudnnStatus_t st;
    std::vector<Entry> list = algo_list(kind, h, d, algo_count[kind], &st);
    CHECK(st == CUDNN_STATUS_SUCCESS && (int)list.size() == algo_count[kind], "case %d %s list", ci,
          kind_name[kind]);
    int ran = 0;
    for (const Entry &e : list) {
      if (e.status != CUDNN_STATUS_SUCCESS) continue;
      for (int pass = 0; pass < 2; pass++) {
        DevBuf O(ref.size() * es);
        std::vector<double> old(ref.size(), 0);
        for (size_t i = 0; i < ref.size(); i++)
          put(O.p, i, t, pass == 0 ? NAN : (old[i] = representable(t, uniform(-2, 2))));
        double alpha = pass == 0 ? 1.0 : -0.5, beta = pass == 0 ? 0.0 : 2.0;
        float af = (float)alpha, bf = (float)beta;
        const void *ap = t == F64 ? (const void *)&alpha : (const void *)&af;
        const void *bp = t == F64 ? (const void *)&beta : (const void *)&bf;
        int fails0 = check_fails;
        cudnnStatus_t s = run_algo(kind, h, d, e.algo, ap, bp, in0, in1, O.p, nullptr);
        char what[160];
        snprintf(what, sizeof what, "case %d %s %s algo %d%s pass %d", ci, tname[t],
                 kind_name[kind], e.algo, use_tf32 ? " tf32" : "", pass);
        bool dil = cc.dh > 1 || cc.dw > 1;
        if (s == CUDNN_STATUS_NOT_SUPPORTED_SHAPE && dil)
          continue; /* the "D" entries: checked elsewhere */
        CHECK(s == CUDNN_STATUS_SUCCESS, "%s: %s", what, cudnnGetErrorString(s));
        CHECK(check_fails == fails0, "%s: device check refused %s", what, check_what.c_str());
        if (s != CUDNN_STATUS_SUCCESS) continue;
        CHECK(emu_cudnn_last_algo(kind) == e.algo, "%s: last algo %d", what,
              emu_cudnn_last_algo(kind));
        ran += pass == 0;
        double u_acc = t == F64 ? 0x1p-53 : 0x1p-24;
        int bad = 0;
        for (size_t i = 0; i < ref.size(); i++) {
          double want = alpha * ref[i] + beta * old[i], got = get(O.p, i, t);
          double tol = (fabs(alpha) * mag[i] * (nterms + 2) + fabs(beta * old[i])) * u_acc +
                       fabs(want) * u_of(t) + floor_of(t);
          if (!(fabs(got - want) <= tol) && bad++ < 3)
            CHECK(false, "%s: [%zu] = %.17g, reference %.17g (tol %.3g)", what, i, got, want, tol);
        }
        CHECK(bad == 0, "%s: %d elements off", what, bad);
      }
    }
    CHECK(ran >= 3, "case %d %s: only %d algorithms ran", ci, kind_name[kind], ran);
  }
}

static void test_conv_values(cudnnHandle_t h) {
  int ci = 0;
  for (const ConvCase &cc : conv_cases) {
    conv_values(h, cc, ci, F32, CUDNN_FMA_MATH);
    conv_values(h, cc, ci, F32, CUDNN_DEFAULT_MATH); /* TF32 */
    conv_values(h, cc, ci, F64, CUDNN_DEFAULT_MATH);
    conv_values(h, cc, ci, F16, CUDNN_TENSOR_OP_MATH);
    conv_values(h, cc, ci, BF16, CUDNN_TENSOR_OP_MATH);
    ci++;
  }
}

/* The adjoint identities, as a cross-check of the references' index maps:
 * <conv(x, w), dy> = <x, bwd_data(dy, w)> = <w, bwd_filter(x, dy)>. */
static void test_conv_adjoint() {
  for (const ConvCase &cc : conv_cases) {
    std::vector<double> x(cc.xn()), w(cc.wn()), dy(cc.yn()), y, dx, dw, mag;
    for (double &v : x) v = uniform(-1, 1);
    for (double &v : w) v = uniform(-1, 1);
    for (double &v : dy) v = uniform(-1, 1);
    reference(FWD, cc, x, w, dy, y, mag);
    reference(BWD_DATA, cc, x, w, dy, dx, mag);
    reference(BWD_FILTER, cc, x, w, dy, dw, mag);
    double a = 0, b = 0, c = 0;
    for (size_t i = 0; i < y.size(); i++) a += y[i] * dy[i];
    for (size_t i = 0; i < x.size(); i++) b += x[i] * dx[i];
    for (size_t i = 0; i < w.size(); i++) c += w[i] * dw[i];
    CHECK(fabs(a - b) <= 1e-9 * (1 + fabs(a)) && fabs(a - c) <= 1e-9 * (1 + fabs(a)),
          "adjoints %g %g %g", a, b, c);
  }
}

/* The lists' order and fields, and a caller's walk through them (conv.cu's
 * logic: supported, deterministic first, skip NOT_SUPPORTED or misaligned). */
static int pick_like_conv_cu(int kind, cudnnHandle_t h, const Descs &d, const void *in0,
                             const void *in1, void *out) {
  cudnnStatus_t st;
  std::vector<Entry> list = algo_list(kind, h, d, algo_count[kind], &st);
  std::vector<int> cands;
  for (int pass = 0; pass < 2; pass++)
    for (const Entry &e : list)
      if (e.status == CUDNN_STATUS_SUCCESS && (e.det == CUDNN_DETERMINISTIC) == (pass == 0))
        cands.push_back(e.algo);
  float one = 1, zero = 0;
  for (int a : cands) {
    cudnnStatus_t s = run_algo(kind, h, d, a, &one, &zero, in0, in1, out, nullptr);
    if (s == CUDNN_STATUS_SUCCESS) return a;
    if (CUDNN_STATUS_CATEGORY(s) != CUDNN_STATUS_NOT_SUPPORTED &&
        s != CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
      return -2;
  }
  return -1;
}

static void test_conv_lists(cudnnHandle_t h) {
  const int want[3][8] = {
      {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_FWD_ALGO_FFT,
       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
       CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD},
      {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
       CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
       CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
       CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD},
      {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD}};
  /* status SUCCESS / NOT_SUPPORTED (S/N), determinism (d/n) */
  const char *const shape[3] = {"SnNdSdSdSdNdNdNd", "SnNdSdSdSdNd", "SnSnNdSdSdSdNd"};
  const ConvCase &plain = conv_cases[0], &dilated = conv_cases[2];
  for (int kind = FWD; kind <= BWD_FILTER; kind++) {
    Descs d(plain, F32, CUDNN_FMA_MATH);
    cudnnStatus_t st;
    std::vector<Entry> list = algo_list(kind, h, d, algo_count[kind], &st);
    CHECK(st == CUDNN_STATUS_SUCCESS && (int)list.size() == algo_count[kind], "%s list",
          kind_name[kind]);
    for (size_t i = 0; i < list.size(); i++) {
      const Entry &e = list[i];
      CHECK(e.algo == want[kind][i], "%s entry %zu: algo %d", kind_name[kind], i, e.algo);
      char s = e.status == CUDNN_STATUS_SUCCESS         ? 'S'
               : e.status == CUDNN_STATUS_NOT_SUPPORTED ? 'N'
                                                        : '?';
      char dt = e.det == CUDNN_DETERMINISTIC ? 'd' : 'n';
      CHECK(s == shape[kind][2 * i] && dt == shape[kind][2 * i + 1], "%s entry %zu: %c%c",
            kind_name[kind], i, s, dt);
      CHECK(e.math == CUDNN_FMA_MATH || e.status != CUDNN_STATUS_SUCCESS,
            "%s entry %zu: FMA asked, math %d", kind_name[kind], i, (int)e.math);
    }
    /* the nondeterministic first entry needs a workspace (forward), the
     * workspace entries report it */
    size_t nonzero = 0;
    for (const Entry &e : list) nonzero += e.memory > 0;
    CHECK(nonzero >= 2, "%s: %zu entries with a workspace", kind_name[kind], nonzero);
    std::vector<Entry> few = algo_list(kind, h, d, 3, &st);
    CHECK(st == CUDNN_STATUS_SUCCESS && few.size() == 3 && few[2].algo == want[kind][2],
          "%s: 3 requested", kind_name[kind]);
    algo_list(kind, h, d, 0, &st);
    CHECK(st == CUDNN_STATUS_BAD_PARAM, "%s: 0 requested", kind_name[kind]);
  }
  /* math types: tensor-core entries for halves and TF32-able floats */
  {
    Descs d(plain, F16, CUDNN_TENSOR_OP_MATH);
    cudnnStatus_t st;
    std::vector<Entry> list = algo_list(FWD, h, d, 8, &st);
    CHECK(list[0].math == CUDNN_TENSOR_OP_MATH && list[4].math == CUDNN_DEFAULT_MATH,
          "f16 math types %d %d", (int)list[0].math, (int)list[4].math);
    Descs dd(plain, F64, CUDNN_TENSOR_OP_MATH);
    list = algo_list(FWD, h, dd, 8, &st);
    CHECK(list[0].math == CUDNN_DEFAULT_MATH, "f64 entries: default math");
  }

  /* a caller's walk: the first deterministic entry; with dilation its
   * workspace query fails (NOT_SUPPORTED_SHAPE) and the next is taken; with
   * misaligned data too, the last (always) */
  const int first[3] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING};
  const int second[3] = {CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED};
  const int last[3] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};
  for (int kind = FWD; kind <= BWD_FILTER; kind++)
    for (int variant = 0; variant < 4; variant++) {
      bool dil = variant & 1, mis = variant & 2;
      const ConvCase &cc = dil ? dilated : plain;
      Descs d(cc, F32, CUDNN_FMA_MATH);
      size_t off = mis ? 4 : 0; /* one float in: 4-byte aligned, not 16 */
      DevBuf X(cc.xn() * 4, off), Wt(cc.wn() * 4, off), DY(cc.yn() * 4, off);
      for (size_t i = 0; i < cc.xn(); i++) put(X.p, i, F32, uniform(-1, 1));
      for (size_t i = 0; i < cc.wn(); i++) put(Wt.p, i, F32, uniform(-1, 1));
      for (size_t i = 0; i < cc.yn(); i++) put(DY.p, i, F32, uniform(-1, 1));
      size_t outn = kind == FWD ? cc.yn() : kind == BWD_DATA ? cc.xn() : cc.wn();
      DevBuf O(outn * 4, off);
      const void *in0 = kind == BWD_DATA ? (const void *)DY.p : (const void *)X.p;
      const void *in1 = kind == BWD_FILTER ? (const void *)DY.p : (const void *)Wt.p;
      int got = pick_like_conv_cu(kind, h, d, in0, in1, O.p);
      int expect = !dil ? first[kind] : !mis ? second[kind] : last[kind];
      CHECK(got == expect, "%s%s%s: picked %d, want %d", kind_name[kind], dil ? " dilated" : "",
            mis ? " misaligned" : "", got, expect);
      if (dil) {
        size_t sz = 1;
        cudnnStatus_t s;
        if (kind == FWD)
          s = cudnnGetConvolutionForwardWorkspaceSize(
              h, d.x, d.w, d.c, d.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &sz);
        else if (kind == BWD_DATA)
          s = cudnnGetConvolutionBackwardDataWorkspaceSize(
              h, d.w, d.y, d.c, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, &sz);
        else
          s = cudnnGetConvolutionBackwardFilterWorkspaceSize(
              h, d.x, d.y, d.c, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, &sz);
        CHECK(s == CUDNN_STATUS_NOT_SUPPORTED_SHAPE &&
                  CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED,
              "%s: dilated workspace query %s", kind_name[kind], cudnnGetErrorString(s));
        char msg[256];
        cudnnGetLastErrorString(msg, sizeof msg);
        CHECK(strstr(msg, "dilation") != nullptr, "the message says why: %s", msg);
      }
      if (mis) {
        float one = 1, zero = 0;
        cudnnStatus_t s = run_algo(kind, h, d, second[kind], &one, &zero, in0, in1, O.p, nullptr);
        CHECK(s == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "%s: misaligned run %s",
              kind_name[kind], cudnnGetErrorString(s));
      }
    }
}

/* Deterministic algorithms repeat bit for bit; the nondeterministic ones
 * compute the same sums in orders that change between calls. */
static void test_conv_determinism(cudnnHandle_t h) {
  ConvCase cc{2, 16, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
  Descs d(cc, F32, CUDNN_FMA_MATH);
  DevBuf X(cc.xn() * 4), Wt(cc.wn() * 4), DY(cc.yn() * 4);
  for (size_t i = 0; i < cc.xn(); i++) put(X.p, i, F32, uniform(-1, 1));
  for (size_t i = 0; i < cc.wn(); i++) put(Wt.p, i, F32, uniform(-1, 1));
  for (size_t i = 0; i < cc.yn(); i++) put(DY.p, i, F32, uniform(-1, 1));
  float one = 1, zero = 0;
  for (int kind = FWD; kind <= BWD_FILTER; kind++) {
    cudnnStatus_t st;
    std::vector<Entry> list = algo_list(kind, h, d, algo_count[kind], &st);
    const void *in0 = kind == BWD_DATA ? (const void *)DY.p : (const void *)X.p;
    const void *in1 = kind == BWD_FILTER ? (const void *)DY.p : (const void *)Wt.p;
    size_t outn = kind == FWD ? cc.yn() : kind == BWD_DATA ? cc.xn() : cc.wn();
    for (const Entry &e : list) {
      if (e.status != CUDNN_STATUS_SUCCESS) continue;
      DevBuf O1(outn * 4), O2(outn * 4);
      bool differ = false;
      for (int rep = 0; rep < 6 && !(e.det == CUDNN_DETERMINISTIC && rep > 1); rep++) {
        DevBuf &O = rep == 0 ? O1 : O2;
        CHECK(run_algo(kind, h, d, e.algo, &one, &zero, in0, in1, O.p, nullptr) ==
                  CUDNN_STATUS_SUCCESS,
              "%s algo %d", kind_name[kind], e.algo);
        if (rep > 0) differ = differ || memcmp(O1.p, O2.p, outn * 4) != 0;
      }
      if (e.det == CUDNN_DETERMINISTIC)
        CHECK(!differ, "%s algo %d: deterministic, yet runs differ", kind_name[kind], e.algo);
      else
        CHECK(differ, "%s algo %d: nondeterministic, yet runs are identical", kind_name[kind],
              e.algo);
    }
  }
}

/* TF32 visible: 1 + 2^-12 through a 1x1 convolution. */
static void test_conv_tf32(cudnnHandle_t h) {
  ConvCase cc{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION};
  for (int m = 0; m < 2; m++) {
    Descs d(cc, F32, m ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
    DevBuf X(4), Wt(4), Y(4);
    put(X.p, 0, F32, 1.0 + 0x1p-12);
    put(Wt.p, 0, F32, 1.0);
    float one = 1, zero = 0;
    CHECK(run_algo(FWD, h, d, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &one, &zero, X.p, Wt.p, Y.p,
                   nullptr) == CUDNN_STATUS_SUCCESS,
          "tf32 conv");
    double got = get(Y.p, 0, F32);
    CHECK(got == (m ? 1.0 : 1.0 + 0x1p-12), "math %s: %.17g", m ? "DEFAULT (TF32)" : "FMA", got);
  }
}

static void test_conv_errors(cudnnHandle_t h) {
  const ConvCase &cc = conv_cases[1]; /* groups 2 */
  cudnnTensorDescriptor_t t;
  cudnnFilterDescriptor_t f;
  cudnnConvolutionDescriptor_t c;
  CHECK(cudnnCreateTensorDescriptor(&t) == CUDNN_STATUS_SUCCESS, "create tensor");
  CHECK(cudnnCreateFilterDescriptor(&f) == CUDNN_STATUS_SUCCESS, "create filter");
  CHECK(cudnnCreateConvolutionDescriptor(&c) == CUDNN_STATUS_SUCCESS, "create conv");
  struct {
    const char *what;
    cudnnStatus_t got, want;
  } desc[] = {
      {"tensor dim 0",
       cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 0, 2, 2),
       CUDNN_STATUS_BAD_PARAM},
      {"tensor dim -1",
       cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, -1, 2),
       CUDNN_STATUS_BAD_PARAM},
      {"tensor type 31",
       cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, (cudnnDataType_t)31, 1, 1, 2, 2),
       CUDNN_STATUS_BAD_PARAM},
      {"tensor format 3",
       cudnnSetTensor4dDescriptor(t, (cudnnTensorFormat_t)3, CUDNN_DATA_FLOAT, 1, 1, 2, 2),
       CUDNN_STATUS_BAD_PARAM},
      {"tensor NHWC",
       cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 1, 2, 2),
       CUDNN_STATUS_NOT_SUPPORTED_LAYOUT},
      {"tensor 2^32 elements",
       cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 65536, 65536, 1, 1),
       CUDNN_STATUS_NOT_SUPPORTED},
      {"filter dim 0",
       cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, 1, 1, 1),
       CUDNN_STATUS_BAD_PARAM},
      {"filter type 30",
       cudnnSetFilter4dDescriptor(f, (cudnnDataType_t)30, CUDNN_TENSOR_NCHW, 1, 1, 1, 1),
       CUDNN_STATUS_BAD_PARAM},
      {"conv pad -1",
       cudnnSetConvolution2dDescriptor(c, -1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT),
       CUDNN_STATUS_BAD_PARAM},
      {"conv stride 0",
       cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 0, 1, 1, CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT),
       CUDNN_STATUS_BAD_PARAM},
      {"conv dilation 0",
       cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 0, 1, CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT),
       CUDNN_STATUS_BAD_PARAM},
      {"conv compute 29",
       cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, (cudnnDataType_t)29),
       CUDNN_STATUS_BAD_PARAM},
      {"groups 0", cudnnSetConvolutionGroupCount(c, 0), CUDNN_STATUS_BAD_PARAM},
      {"null descriptor",
       cudnnSetTensor4dDescriptor(nullptr, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1),
       CUDNN_STATUS_BAD_PARAM},
      {"filter as tensor",
       cudnnSetTensor4dDescriptor((cudnnTensorDescriptor_t)(void *)f, CUDNN_TENSOR_NCHW,
                                  CUDNN_DATA_FLOAT, 1, 1, 1, 1),
       CUDNN_STATUS_BAD_PARAM},
      {"create into null", cudnnCreate(nullptr), CUDNN_STATUS_BAD_PARAM},
      {"stream on a null handle", cudnnSetStream(nullptr, nullptr), CUDNN_STATUS_BAD_PARAM},
  };
  for (const auto &e : desc) CHECK(e.got == e.want, "%s: %s", e.what, cudnnGetErrorString(e.got));
  char msg[256];
  cudnnGetLastErrorString(msg, sizeof msg);
  CHECK(msg[0] != 0, "a message after a failure");
  cudnnGetLastErrorString(msg, sizeof msg);
  CHECK(msg[0] == 0, "cleared once read: %s", msg);

  /* unset descriptors */
  {
    Descs d(cc, F32, CUDNN_FMA_MATH);
    cudnnStatus_t st;
    size_t sz;
    CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, t, d.w, d.c, d.y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                  &sz) == CUDNN_STATUS_BAD_PARAM,
          "unset tensor descriptor");
    algo_list(FWD, h, d, 8, &st);
    CHECK(st == CUDNN_STATUS_SUCCESS, "valid list");
  }
  cudnnDestroyTensorDescriptor(t);
  cudnnDestroyFilterDescriptor(f);
  cudnnDestroyConvolutionDescriptor(c);

  /* cudnnGetConvolution2dForwardOutputDim */
  {
    Descs d(cc, F32, CUDNN_FMA_MATH);
    int n, k, p, q;
    CHECK(cudnnGetConvolution2dForwardOutputDim(d.c, d.x, d.w, &n, &k, &p, &q) ==
                  CUDNN_STATUS_SUCCESS &&
              n == cc.N && k == cc.K && p == cc.P() && q == cc.Q(),
          "output dims (%d, %d, %d, %d)", n, k, p, q);
    CHECK(cudnnGetConvolution2dForwardOutputDim(d.c, d.x, d.w, &n, nullptr, &p, &q) ==
              CUDNN_STATUS_BAD_PARAM,
          "null output");
    CHECK(cudnnSetConvolution2dDescriptor(d.c, 0, 0, 1, 1, 5, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS,
          "dilation 5");
    CHECK(cudnnGetConvolution2dForwardOutputDim(d.c, d.x, d.w, &n, &k, &p, &q) ==
              CUDNN_STATUS_BAD_PARAM,
          "dilated filter larger than the input");
    cudnnStatus_t st;
    algo_list(FWD, h, d, 8, &st);
    CHECK(st == CUDNN_STATUS_BAD_PARAM, "heuristics on a filter larger than the input");
  }

  /* inconsistent descriptors and bad pointers, one change at a time from a
   * valid forward call (algorithm GEMM: needs a workspace) */
  const int fwd_ws_algo = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  struct Case {
    const char *what;
    int edit;
    cudnnStatus_t want;
    bool refused;
  };
  enum {
    E_NONE,
    E_X_CHANNELS,
    E_K_GROUPS,
    E_Y_N,
    E_Y_C,
    E_Y_H,
    E_Y_W,
    E_Y_TYPE,
    E_W_TYPE,
    E_GROUPS3,
    E_WS_NULL,
    E_WS_SMALL,
    E_WS_HOST,
    E_X_HOST,
    E_Y_SHORT,
    E_W_NULL,
    E_ALPHA_NULL,
    E_ALGO_NS,
    E_ALGO_COUNT,
    E_HANDLE,
    E_DESTROYED,
    E_HALF_COMPUTE
  };
  const Case cases[] = {
      {"valid", E_NONE, CUDNN_STATUS_SUCCESS, false},
      {"x channels != filter channels x groups", E_X_CHANNELS, CUDNN_STATUS_BAD_PARAM, false},
      {"output channels not divisible by groups", E_K_GROUPS, CUDNN_STATUS_BAD_PARAM, false},
      {"y batch", E_Y_N, CUDNN_STATUS_BAD_PARAM, false},
      {"y channels", E_Y_C, CUDNN_STATUS_BAD_PARAM, false},
      {"y height", E_Y_H, CUDNN_STATUS_BAD_PARAM, false},
      {"y width", E_Y_W, CUDNN_STATUS_BAD_PARAM, false},
      {"y data type", E_Y_TYPE, CUDNN_STATUS_BAD_PARAM, false},
      {"w data type", E_W_TYPE, CUDNN_STATUS_BAD_PARAM, false},
      {"groups 3 (channels 4)", E_GROUPS3, CUDNN_STATUS_BAD_PARAM, false},
      {"null workspace", E_WS_NULL, CUDNN_STATUS_BAD_PARAM, false},
      {"workspace too small", E_WS_SMALL, CUDNN_STATUS_BAD_PARAM, false},
      {"workspace on the host", E_WS_HOST, CUDNN_STATUS_BAD_PARAM, true},
      {"x on the host", E_X_HOST, CUDNN_STATUS_BAD_PARAM, true},
      {"y one element short", E_Y_SHORT, CUDNN_STATUS_BAD_PARAM, true},
      {"null w", E_W_NULL, CUDNN_STATUS_BAD_PARAM, false},
      {"null alpha", E_ALPHA_NULL, CUDNN_STATUS_BAD_PARAM, false},
      {"unsupported algorithm", E_ALGO_NS, CUDNN_STATUS_NOT_SUPPORTED, false},
      {"algorithm COUNT", E_ALGO_COUNT, CUDNN_STATUS_BAD_PARAM, false},
      {"bogus handle", E_HANDLE, CUDNN_STATUS_BAD_PARAM, false},
      {"destroyed descriptor", E_DESTROYED, CUDNN_STATUS_BAD_PARAM, false},
      {"half data, half compute", E_HALF_COMPUTE, CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, false},
  };
  for (const Case &k : cases) {
    Descs d(cc, F32, CUDNN_FMA_MATH);
    DevBuf X(cc.xn() * 4), Wt(cc.wn() * 4), Y(cc.yn() * 4), Y1((cc.yn() - 1) * 4);
    size_t need = 0;
    CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.c, d.y,
                                                  (cudnnConvolutionFwdAlgo_t)fwd_ws_algo,
                                                  &need) == CUDNN_STATUS_SUCCESS &&
              need > 0,
          "GEMM needs a workspace");
    DevBuf WS(need);
    float one = 1, zero = 0, host[64];
    const void *alpha = &one, *xp = X.p, *wp = Wt.p;
    void *yp = Y.p, *ws = WS.p;
    size_t wsz = need;
    int algo = fwd_ws_algo;
    cudnnHandle_t hh = h;
    cudnnTensorDescriptor_t dead = nullptr;
    switch (k.edit) {
      case E_X_CHANNELS:
        cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cc.N, cc.C + 2, cc.H,
                                   cc.W);
        break;
      case E_K_GROUPS:
        cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cc.K + 1, cc.Cg(),
                                   cc.R, cc.S);
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cc.N, cc.K + 1, cc.P(),
                                   cc.Q());
        break;
      case E_Y_N:
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cc.N + 1, cc.K, cc.P(),
                                   cc.Q());
        break;
      case E_Y_C:
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cc.N, cc.K - 2, cc.P(),
                                   cc.Q());
        break;
      case E_Y_H:
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cc.N, cc.K, cc.P() - 1,
                                   cc.Q());
        break;
      case E_Y_W:
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, cc.N, cc.K, cc.P(),
                                   cc.Q() + 1);
        break;
      case E_Y_TYPE:
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, cc.N, cc.K, cc.P(),
                                   cc.Q());
        break;
      case E_W_TYPE:
        cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, cc.K, cc.Cg(), cc.R,
                                   cc.S);
        break;
      case E_GROUPS3:
        cudnnSetConvolutionGroupCount(d.c, 3);
        break;
      case E_WS_NULL:
        ws = nullptr;
        break;
      case E_WS_SMALL:
        wsz = need - 1;
        break;
      case E_WS_HOST:
        ws = host, wsz = need;
        break; /* claimed: the device check refuses it */
      case E_X_HOST:
        xp = host;
        break;
      case E_Y_SHORT:
        yp = Y1.p;
        break;
      case E_W_NULL:
        wp = nullptr;
        break;
      case E_ALPHA_NULL:
        alpha = nullptr;
        break;
      case E_ALGO_NS:
        algo = CUDNN_CONVOLUTION_FWD_ALGO_FFT;
        break;
      case E_ALGO_COUNT:
        algo = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
        break;
      case E_HANDLE:
        hh = (cudnnHandle_t)(void *)&need;
        break;
      case E_DESTROYED:
        cudnnCreateTensorDescriptor(&dead);
        cudnnDestroyTensorDescriptor(dead);
        break;
      case E_HALF_COMPUTE:
        cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, cc.N, cc.C, cc.H, cc.W);
        cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, cc.N, cc.K, cc.P(),
                                   cc.Q());
        cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, cc.K, cc.Cg(), cc.R,
                                   cc.S);
        cudnnSetConvolution2dDescriptor(d.c, cc.ph, cc.pw, cc.sh, cc.sw, cc.dh, cc.dw, cc.mode,
                                        CUDNN_DATA_HALF);
        break;
    }
    cudnnGetLastErrorString(msg, sizeof msg); /* drop earlier messages */
    int fails0 = check_fails;
    cudnnStatus_t s =
        cudnnConvolutionForward(hh, alpha, dead ? dead : d.x, xp, d.w, wp, d.c,
                                (cudnnConvolutionFwdAlgo_t)algo, ws, wsz, &zero, d.y, yp);
    CHECK(s == k.want, "%s: got %s, want %s", k.what, cudnnGetErrorString(s),
          cudnnGetErrorString(k.want));
    CHECK(queue.size() == (s == CUDNN_STATUS_SUCCESS ? 1u : 0u), "%s: %zu items queued", k.what,
          queue.size());
    drain();
    CHECK((check_fails > fails0) == k.refused, "%s: device check %s", k.what,
          k.refused ? "not consulted" : "refused");
    cudnnGetLastErrorString(msg, sizeof msg);
    CHECK((s == CUDNN_STATUS_SUCCESS) == (msg[0] == 0), "%s: message \"%s\"", k.what, msg);
    if (k.edit == E_HALF_COMPUTE) {
      cudnnStatus_t st;
      std::vector<Entry> list = algo_list(FWD, h, d, 8, &st);
      bool none = st == CUDNN_STATUS_SUCCESS && list.size() == 8;
      for (const Entry &e : list) none = none && e.status == CUDNN_STATUS_NOT_SUPPORTED;
      CHECK(none, "half compute: every entry NOT_SUPPORTED");
    }
    if (k.edit >= E_X_CHANNELS && k.edit <= E_GROUPS3) {
      cudnnStatus_t st;
      algo_list(FWD, h, d, 8, &st);
      CHECK(st == CUDNN_STATUS_BAD_PARAM, "%s: the heuristics refuse too", k.what);
      algo_list(BWD_DATA, h, d, 6, &st);
      CHECK(st == CUDNN_STATUS_BAD_PARAM, "%s: backward data heuristics refuse too", k.what);
      s = cudnnConvolutionBackwardFilter(h, &one, d.x, X.p, d.y, Y.p, d.c,
                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0, &zero,
                                         d.w, Wt.p);
      CHECK(s == CUDNN_STATUS_BAD_PARAM, "%s: backward filter refuses too: %s", k.what,
            cudnnGetErrorString(s));
    }
  }

  CHECK(!strcmp(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED_SHAPE),
                "CUDNN_STATUS_NOT_SUPPORTED_SHAPE"),
        "error string");
  CHECK(!strcmp(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM"),
        "error string");
  cudnnHandle_t h2;
  CHECK(cudnnCreate(&h2) == CUDNN_STATUS_SUCCESS &&
            cudnnSetStream(h2, nullptr) == CUDNN_STATUS_SUCCESS,
        "handle");
  CHECK(cudnnDestroy(h2) == CUDNN_STATUS_SUCCESS && cudnnDestroy(h2) == CUDNN_STATUS_BAD_PARAM,
        "destroy twice");
}

int main() {
  printf("test_shims: host stand-ins of cuBLAS and cuDNN (tests/cuda_emu/lib), no GPU involved\n");
  cublasHandle_t bh;
  if (cublasCreate(&bh) != CUBLAS_STATUS_SUCCESS) return printf("cublasCreate failed\n"), 1;
  test_gemm_values(bh);
  test_gemm_tf32(bh);
  test_gemm_degenerate(bh);
  test_gemm_errors(bh);
  CHECK(cublasDestroy(bh) == CUBLAS_STATUS_SUCCESS, "destroy");

  cudnnHandle_t dh;
  if (cudnnCreate(&dh) != CUDNN_STATUS_SUCCESS) return printf("cudnnCreate failed\n"), 1;
  test_conv_adjoint();
  test_conv_values(dh);
  test_conv_lists(dh);
  test_conv_determinism(dh);
  test_conv_tf32(dh);
  test_conv_errors(dh);
  CHECK(cudnnDestroy(dh) == CUDNN_STATUS_SUCCESS, "destroy");
  CHECK(regions.empty(), "%zu device buffers leaked", regions.size());

  printf("test_shims: %d checks, %d failed\n", n_checks, n_failed);
  return n_failed ? 1 : 0;
}
