/* bench_core.c: times ctensor's core operations next to plain-C ceilings.
 *
 * Workloads (the "ctensor core" targets; docs/benchmarks.md explains them):
 *   add_10M_f32      c = a + b on 10M floats, a fresh result per iteration,
 *                    next to an OpenMP C loop into a preallocated buffer (the
 *                    memory-bandwidth ceiling) and the same loop into a fresh
 *                    malloc'd buffer (what a naive library pays in page faults)
 *   sum_10M_f32      sum of 10M floats, next to an AVX-512/AVX2 C loop
 *   matmul_1024_f32  1024x1024 @ 1024x1024, fresh result
 *   matmul_1024_bf16 the same in bf16 (autocast's products: the AVX512-BF16
 *                    kernel where the CPU has it, else sgemm on f32 copies)
 *   add_1elem_f32    per-op cost of a 1-element add, result created and freed
 *   mul_1elem_grad_f32  the same for a 1-element mul whose input requires grad:
 *                    the op plus recording its autograd node (what each op of a
 *                    small-batch training step pays), node freed with the result
 *   linreg_1000      the NumPy linear-regression loop (manual gradient), 1000 epochs
 *   fma_peak         the machine's measured f32 FMA throughput (the GEMM roofline)
 *   exp_1M_f32, sigmoid_1M_f32, silu_1M_f32, tanh_1M_f32, gelu_1M_f32,
 *   gelu_tanh_1M_f32  the transcendental activations on 1M f32 (cache-resident)
 *
 * Method and output: bench_util.h (median and min of per-call times, JSON
 * lines; metrics gbps, gflops, ns_per_op, ms_per_1000 derived from the median).
 * peers_core.py times NumPy and PyTorch the same way.
 *
 * Usage: bench_core [--threads N] [--budget SECONDS] [--only NAME]
 */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

#include "bench_util.h"

#define N_BIG 10000000L /* 10M elements: 40 MB per f32 array, far above the caches */
#define N_MAT 1024
/* ---- Plain-C ceilings ---------------------------------------------------------- */

static float *alloc_floats(long n) {
  float *p = aligned_alloc(64, (size_t)n * sizeof(float));
  if (!p) {
    fprintf(stderr, "bench_core: out of memory\n");
    exit(1);
  }
  return p;
}

static void c_add(float *restrict c, const float *restrict a, const float *restrict b, long n) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; i++) c[i] = a[i] + b[i];
}

/* Sum of one thread's chunk: 4 independent vector accumulators hide the add latency. */
static double sum_chunk(const float *restrict x, long n) {
  long i = 0;
  float tail = 0;
#if defined(__AVX512F__)
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_loadu_ps(x + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_loadu_ps(x + i + 48));
  }
  tail = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
#elif defined(__AVX2__)
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_loadu_ps(x + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_loadu_ps(x + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  for (int l = 0; l < 8; l++) tail += lanes[l];
#endif
  for (; i < n; i++) tail += x[i];
  return tail;
}

static double c_sum(const float *x, long n) {
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    long lo = n * t / nt, hi = n * (t + 1) / nt;
    total += sum_chunk(x + lo, hi - lo);
  }
  return total;
}

/* ---- Workload contexts ----------------------------------------------------------- */

typedef struct big_ctx {
  ct_tensor *a, *b;    /* ctensor operands, N_BIG f32 */
  float *pa, *pb, *pc; /* C operands and a preallocated, touched result */
  double sink;
} big_ctx;

static void run_ct_add(void *p) {
  big_ctx *c = p;
  ct_free(ct_add(c->a, c->b));
}

static void run_c_add(void *p) {
  big_ctx *c = p;
  c_add(c->pc, c->pa, c->pb, N_BIG);
}

static void run_c_add_malloc(void *p) {
  big_ctx *c = p;
  float *out = malloc((size_t)N_BIG * sizeof(float));
  c_add(out, c->pa, c->pb, N_BIG);
  c->sink += out[N_BIG / 2];
  free(out);
}

static void run_ct_sum(void *p) {
  big_ctx *c = p;
  double v = 0;
  ct_tensor *s = ct_sum(c->a, NULL);
  ct_item(s, &v);
  ct_free(s);
  c->sink += v;
}

static void run_c_sum(void *p) {
  big_ctx *c = p;
  c->sink += c_sum(c->pa, N_BIG);
}

/* ---- Workloads -------------------------------------------------------------------- */

static int init_big(big_ctx *c) {
  c->a = ct_rand(CT_SHAPE(N_BIG), NULL);
  c->b = ct_rand(CT_SHAPE(N_BIG), NULL);
  c->pa = alloc_floats(N_BIG);
  c->pb = alloc_floats(N_BIG);
  c->pc = alloc_floats(N_BIG);
  if (!c->a || !c->b) return -1;
  if (ct_copy_to_host(c->a, c->pa, N_BIG * sizeof(float)) != CT_OK) return -1;
  if (ct_copy_to_host(c->b, c->pb, N_BIG * sizeof(float)) != CT_OK) return -1;
  memset(c->pc, 0, N_BIG * sizeof(float)); /* touch: no page faults in the timed loop */
  return 0;
}

static void free_big(big_ctx *c) {
  ct_free(c->a);
  ct_free(c->b);
  free(c->pa);
  free(c->pb);
  free(c->pc);
}

/* Checks one ctensor add against the C loop before timing it. */
static int check_add(big_ctx *c) {
  ct_tensor *r = ct_add(c->a, c->b);
  if (!r) return -1;
  c_add(c->pc, c->pa, c->pb, N_BIG);
  const float *pr = ct_data_ptr(r);
  int ok = pr && memcmp(pr, c->pc, N_BIG * sizeof(float)) == 0;
  ct_free(r);
  return ok ? 0 : -2;
}

static void bench_add(big_ctx *c) {
  const char *name = "add_10M_f32";
  const double gb = 3.0 * N_BIG * sizeof(float) / 1e9; /* read a, read b, write c */
  int chk = check_add(c);
  if (chk == 0)
    emit(name, "ctensor", time_it(run_ct_add, c), "gbps", RATE, gb);
  else
    emit_error(name, "ctensor", chk == -1 ? ct_last_error_message() : "wrong result");
  emit(name, "c_loop_prealloc", time_it(run_c_add, c), "gbps", RATE, gb);
  emit(name, "c_loop_malloc", time_it(run_c_add_malloc, c), "gbps", RATE, gb);
}

static void bench_sum(big_ctx *c) {
  const char *name = "sum_10M_f32";
  const double gb = (double)N_BIG * sizeof(float) / 1e9;
  double v = 0, ref = c_sum(c->pa, N_BIG);
  ct_tensor *s = ct_sum(c->a, NULL);
  if (!s || ct_item(s, &v) != CT_OK) {
    emit_error(name, "ctensor", ct_last_error_message());
  } else if (fabs(v - ref) > 1e-4 * fabs(ref)) {
    emit_error(name, "ctensor", "wrong result");
  } else {
    emit(name, "ctensor", time_it(run_ct_sum, c), "gbps", RATE, gb);
  }
  ct_free(s);
  emit(name, "c_simd", time_it(run_c_sum, c), "gbps", RATE, gb);
}

typedef struct mat_ctx {
  ct_tensor *a, *b;
} mat_ctx;

static void run_ct_matmul(void *p) {
  mat_ctx *m = p;
  ct_free(ct_matmul(m->a, m->b));
}

static void bench_matmul(ct_dtype dtype) {
  const char *name = dtype == CT_BF16 ? "matmul_1024_bf16" : "matmul_1024_f32";
  ct_tensor_opts o = {.dtype = dtype};
  mat_ctx m = {ct_rand(CT_SHAPE(N_MAT, N_MAT), &o), ct_rand(CT_SHAPE(N_MAT, N_MAT), &o)};
  ct_tensor *r = ct_matmul(m.a, m.b);
  if (!r)
    emit_error(name, "ctensor", ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_ct_matmul, &m), "gflops", RATE,
         2.0 * N_MAT * N_MAT * N_MAT / 1e9);
  ct_free(r);
  ct_free(m.a);
  ct_free(m.b);
}

static void run_ct_add_small(void *p) {
  mat_ctx *m = p;
  ct_free(ct_add(m->a, m->b));
}

static void bench_small(void) {
  const char *name = "add_1elem_f32";
  mat_ctx m = {ct_full(CT_SHAPE(1), 1.0, NULL), ct_full(CT_SHAPE(1), 2.0, NULL)};
  ct_tensor *r = ct_add(m.a, m.b);
  if (!r)
    emit_error(name, "ctensor", ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_ct_add_small, &m), "ns_per_op", SCALED, 1e9);
  ct_free(r);
  ct_free(m.a);
  ct_free(m.b);
}

static void run_ct_mul_grad(void *p) {
  mat_ctx *m = p;
  ct_free(ct_mul(m->a, m->b));
}

static void bench_small_grad(void) {
  const char *name = "mul_1elem_grad_f32";
  mat_ctx m = {ct_full(CT_SHAPE(1), 1.0, &(ct_tensor_opts){.requires_grad = true}),
               ct_full(CT_SHAPE(1), 2.0, NULL)};
  ct_tensor *r = ct_mul(m.a, m.b);
  if (!r || !ct_requires_grad(r))
    emit_error(name, "ctensor", r ? "not recorded" : ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_ct_mul_grad, &m), "ns_per_op", SCALED, 1e9);
  ct_free(r);
  ct_free(m.a);
  ct_free(m.b);
}

/* The NumPy loop of the reference documents, 1000 epochs per call. */
typedef struct linreg_ctx {
  ct_tensor *X, *y, *W;
  int failed;
} linreg_ctx;

static void run_ct_linreg(void *p) {
  linreg_ctx *l = p;
  for (int epoch = 0; epoch < 1000; epoch++) {
    ct_scope_begin();
    ct_tensor *pred = ct_matmul(l->X, l->W);                            /* (100, 1) */
    ct_tensor *err = ct_sub(pred, l->y);                                /* (100, 1) */
    ct_tensor *loss = ct_mean(ct_square(err), NULL);                    /* () */
    ct_tensor *grad = ct_div_scalar(ct_matmul(ct_t(l->X), err), 100.0); /* (10, 1) */
    ct_tensor *upd = ct_sub_(l->W, ct_mul_scalar(grad, 0.01));
    if (!loss || !upd) l->failed = 1;
    ct_scope_end();
  }
}

static void bench_linreg(void) {
  const char *name = "linreg_1000";
  ct_manual_seed(0);
  linreg_ctx l = {ct_rand(CT_SHAPE(100, 10), NULL), ct_rand(CT_SHAPE(100, 1), NULL),
                  ct_rand(CT_SHAPE(10, 1), NULL), 0};
  run_ct_linreg(&l);
  if (l.failed || !l.W)
    emit_error(name, "ctensor", ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_ct_linreg, &l), "ms_per_1000", SCALED, 1e3);
  ct_free(l.X);
  ct_free(l.y);
  ct_free(l.W);
}

/* ---- Peak FMA throughput ------------------------------------------------------------ */

#define FMA_CHAINS 16 /* > latency (4) x FMA ports (2): keeps both units busy */
#define FMA_ITERS 4000000L

typedef struct fma_ctx {
  volatile float sink;
} fma_ctx;

static void run_fma_peak(void *p) {
  fma_ctx *f = p;
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
#if defined(__AVX512F__)
    __m512 acc[FMA_CHAINS];
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
    for (int k = 0; k < FMA_CHAINS; k++) acc[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < FMA_ITERS; i++)
      for (int k = 0; k < FMA_CHAINS; k++) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
    for (int k = 0; k < FMA_CHAINS; k++) total += _mm512_reduce_add_ps(acc[k]);
#else
    total += 0;
#endif
  }
  f->sink = total;
}

static void bench_fma_peak(void) {
#if defined(__AVX512F__)
  fma_ctx f = {0};
  double flops = 2.0 * 16 * FMA_CHAINS * (double)FMA_ITERS * bench_threads;
  emit("fma_peak_f32", "c_avx512", time_it(run_fma_peak, &f), "gflops", RATE, flops / 1e9);
#else
  emit_error("fma_peak_f32", "c_avx512", "built without AVX-512");
#endif
}

/* ---- Activations ------------------------------------------------------------------ */

/* The transcendental activations on 1M f32 (4 MB: in the last-level cache,
 * so the math, not the memory, is timed); gbps counts x read and y written. */
#define N_ACT 1000000L
typedef struct act_ctx {
  ct_tensor *x;
  ct_tensor *(*op)(const ct_tensor *);
} act_ctx;

static void run_ct_act(void *p) {
  act_ctx *c = p;
  ct_free(c->op(c->x));
}

static void bench_activations(const char *only) {
  static const struct {
    const char *name;
    ct_tensor *(*op)(const ct_tensor *);
  } acts[] = {{"exp_1M_f32", ct_exp},          {"sigmoid_1M_f32", ct_sigmoid},
              {"silu_1M_f32", ct_silu},        {"tanh_1M_f32", ct_tanh},
              {"gelu_1M_f32", ct_gelu},        {"gelu_tanh_1M_f32", ct_gelu_tanh},
              {"softplus_1M_f32", ct_softplus}};
  act_ctx c = {.x = ct_uniform(-8, 8, CT_SHAPE(N_ACT), NULL)};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    if (!bench_want(only, acts[i].name)) continue;
    c.op = acts[i].op;
    ct_tensor *y = c.x ? c.op(c.x) : NULL;
    if (!y) {
      emit_error(acts[i].name, "ctensor", ct_last_error_message());
      continue;
    }
    ct_free(y);
    emit(acts[i].name, "ctensor", time_it(run_ct_act, &c), "gbps", RATE,
         2.0 * N_ACT * sizeof(float) / 1e9);
  }
  ct_free(c.x);
}

/* ---- Main ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const char *only;
  if (bench_init(argc, argv, "bench_core", &only) != 0) return 2;
  ct_manual_seed(0);

  big_ctx big = {0};
  if (bench_want(only, "add_10M_f32") || bench_want(only, "sum_10M_f32")) {
    if (init_big(&big) != 0) {
      fprintf(stderr, "bench_core: creating the 10M inputs: %s\n", ct_last_error_message());
      return 1;
    }
    if (bench_want(only, "add_10M_f32")) bench_add(&big);
    if (bench_want(only, "sum_10M_f32")) bench_sum(&big);
    free_big(&big);
  }
  if (bench_want(only, "matmul_1024_f32")) bench_matmul(CT_F32);
  if (bench_want(only, "matmul_1024_bf16")) bench_matmul(CT_BF16);
  if (bench_want(only, "add_1elem_f32")) bench_small();
  if (bench_want(only, "mul_1elem_grad_f32")) bench_small_grad();
  if (bench_want(only, "linreg_1000")) bench_linreg();
  if (bench_want(only, "fma_peak_f32")) bench_fma_peak();
  bench_activations(only);
  if (big.sink == 12345.0) fprintf(stderr, "(sink)\n"); /* keeps results observable */
  return 0;
}
