/* The host-side work of the CUDA backend, counted on the emulated GPU: CUDA
 * runtime, cuBLAS and cuDNN calls, kernel launches and backend mutex round
 * trips per op and per training step (emu_calls.h). A GPU run measures time;
 * these counts say where it goes and do not drift with the machine.
 *
 *   test_call_counts            checks the launch budgets below, prints the table
 *   test_call_counts --markdown the table for docs/benchmarks.md
 *
 * Each figure is the count of one op or step in the steady state (after
 * warm-up steps that fill the caching allocator and the plan caches),
 * averaged over a few repetitions. The test fails when a training step needs
 * more kernel launches than its budget: a launch costs a GPU a few µs of host
 * time, and small-batch steps are bound by it. Lower the budgets when a
 * change saves launches (docs/benchmarks.md keeps the history). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

#include "emu_calls.h"
#include "train_models.h" /* bench/: the models of bench_train */

/* Launches per training step at most (steady state), as recorded in
 * docs/benchmarks.md ("Host work per op and per step"). */
#define BUDGET_MLP_STEP 23
#define BUDGET_MLP_STEP_AMP 37
#define BUDGET_CNN_STEP 43
#define BUDGET_CNN_STEP_AMP 69

static int failures = 0;
static bool markdown = false;
static const ct_device dev = {CT_DEVICE_CUDA, 0};

#define EXPECT_OK(x)                                                                              \
  do {                                                                                            \
    if (!(x)) {                                                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, ct_last_error_message()); \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

/* The counted calls, in the table's order. */
static const char *const columns[] = {"kernel launch",
                                      "cudaGetDevice",
                                      "cudaSetDevice",
                                      "cudaGetLastError",
                                      "pthread_mutex_lock",
                                      "cudaMalloc",
                                      "cudaMemcpyAsync",
                                      "cudaEventQuery",
                                      "cudaStreamSynchronize",
                                      "cudnn*",
                                      "cudnnGetConvolution*Algorithm_v7",
                                      "cublas*"};
enum { NCOLS = sizeof columns / sizeof *columns };

static double count_of(const char *col) {
  if (strcmp(col, "cudnn*") == 0) return (double)emu_calls_prefixed("cudnn");
  if (strcmp(col, "cublas*") == 0) return (double)emu_calls_prefixed("cublas");
  if (strcmp(col, "cudnnGetConvolution*Algorithm_v7") == 0)
    return (double)(emu_calls("cudnnGetConvolutionForwardAlgorithm_v7") +
                    emu_calls("cudnnGetConvolutionBackwardDataAlgorithm_v7") +
                    emu_calls("cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
  return (double)emu_calls(col);
}

static void print_header(void) {
  if (markdown) {
    printf("| op or step |");
    for (int c = 0; c < NCOLS; c++) printf(" %s |", columns[c]);
    printf("\n| --- |");
    for (int c = 0; c < NCOLS; c++) printf(" ---: |");
    printf("\n");
  }
}

/* Prints the counts since the last reset divided by reps; returns the launches. */
static double report(const char *what, int reps) {
  double launches = count_of("kernel launch") / reps;
  if (markdown) {
    printf("| %s |", what);
    for (int c = 0; c < NCOLS; c++) printf(" %g |", count_of(columns[c]) / reps);
    printf("\n");
  } else {
    printf("%s (per call, %d calls):\n", what, reps);
    emu_calls_print(stdout, reps);
  }
  return launches;
}

/* ---- Per op ---------------------------------------------------------------------------- */

static void per_op(void) {
  enum { REPS = 64 };
  ct_tensor_opts o = {.device = dev};
  ct_tensor *a = ct_ones(CT_SHAPE(1024), &o), *b = ct_ones(CT_SHAPE(1024), &o);
  EXPECT_OK(a && b);
  for (int i = 0; i < 4; i++) ct_free(ct_add(a, b)); /* the allocator's cache holds a block */
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  emu_calls_reset();
  for (int i = 0; i < REPS; i++) ct_free(ct_add(a, b));
  report("`ct_free(ct_add(a, b))`, 1024 f32", REPS);
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  ct_free(a);
  ct_free(b);
}

/* A column sum (over dim 0) with fewer outputs than a thread each needs. */
static void per_op_column_sum(void) {
  enum { REPS = 8 };
  ct_tensor *x = ct_randn(CT_SHAPE(4096, 64), &(ct_tensor_opts){.device = dev});
  EXPECT_OK(x != NULL);
  ct_free(ct_sum(x, CT_DIMS(0))); /* warms the allocator's cache */
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  emu_calls_reset();
  for (int i = 0; i < REPS; i++) ct_free(ct_sum(x, CT_DIMS(0)));
  report("`ct_sum(x, CT_DIMS(0))`, (4096, 64) f32", REPS);
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  ct_free(x);
}

/* Batch norm in training and layer norm (over the last dim), forward and
 * backward with weight and bias, f32: the launches of the normalization
 * kernels at a shape. */
static void per_op_norm(const char *what, const int64_t *shape, int ndim, bool layer) {
  enum { REPS = 4 };
  ct_tensor_opts o = {.device = dev, .requires_grad = true};
  int64_t features = layer ? shape[ndim - 1] : shape[1];
  ct_tensor *x = ct_randn(shape, ndim, &o), *w = ct_ones(CT_SHAPE(features), &o);
  ct_tensor *b = ct_zeros(CT_SHAPE(features), &o);
  EXPECT_OK(x && w && b);
  for (int i = 0; i <= REPS; i++) {
    if (i == 1) {
      EXPECT_OK(ct_synchronize(dev) == CT_OK);
      emu_calls_reset(); /* the first call warms the allocator's cache */
    }
    ct_tensor *y = layer ? ct_layer_norm(x, 1, w, b, 1e-5)
                         : ct_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5);
    ct_tensor *loss = ct_sum(y, NULL);
    EXPECT_OK(loss && ct_backward(loss, NULL, NULL) == CT_OK);
    ct_free(loss);
    ct_free(y);
    ct_tensor *params[] = {x, w, b};
    for (int k = 0; k < 3; k++) EXPECT_OK(ct_set_grad(params[k], NULL) == CT_OK);
  }
  report(what, REPS);
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  ct_free(x);
  ct_free(w);
  ct_free(b);
}

/* Scaled dot-product attention, forward and backward, (B, H, T, D) bf16:
 * the GEMM path's cuBLAS calls and launches (attention_gemm.cu): per chunk
 * of problems, forward 2 GEMMs and 1 row kernel, backward 5 GEMMs and 1 row
 * kernel. `scratch` (bytes, NULL: the default) sets the budget that makes
 * chunks; `gemms` is the GEMM count expected, 0 for the fused kernels. */
static void per_op_sdpa(const char *what, int64_t T, int64_t D, bool causal, const char *scratch,
                        long gemms) {
  enum { REPS = 2 };
  if (scratch) setenv("CT_CUDA_SDPA_SCRATCH", scratch, 1);
  ct_tensor_opts o = {.device = dev, .dtype = CT_BF16, .requires_grad = true};
  ct_tensor *q = ct_randn(CT_SHAPE(2, 3, T, D), &o), *k = ct_randn(CT_SHAPE(2, 3, T, D), &o);
  ct_tensor *v = ct_randn(CT_SHAPE(2, 3, T, D), &o);
  EXPECT_OK(q && k && v);
  for (int i = 0; i <= REPS; i++) {
    if (i == 1) {
      EXPECT_OK(ct_synchronize(dev) == CT_OK);
      emu_calls_reset(); /* the first call warms the allocator's cache */
    }
    ct_tensor *y = ct_scaled_dot_product_attention(q, k, v, NULL, causal, 0, 0, NULL);
    ct_tensor *loss = ct_sum(y, NULL);
    EXPECT_OK(loss && ct_backward(loss, NULL, NULL) == CT_OK);
    ct_free(loss);
    ct_free(y);
    ct_tensor *params[] = {q, k, v};
    for (int j = 0; j < 3; j++) EXPECT_OK(ct_set_grad(params[j], NULL) == CT_OK);
  }
  report(what, REPS);
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  long got = emu_calls("cublasGemmStridedBatchedEx") / REPS;
  if (got != gemms) {
    fprintf(stderr, "%s: %ld cuBLAS GEMMs per step, expected %ld\n", what, got, gemms);
    failures++;
  }
  if (scratch) unsetenv("CT_CUDA_SDPA_SCRATCH");
  ct_free(q);
  ct_free(k);
  ct_free(v);
}

/* Fails (counts a failure) unless calls of `name` since the last reset are `want`. */
static void expect_calls(const char *what, const char *name, long want) {
  long got = emu_calls(name);
  if (got != want) {
    fprintf(stderr, "%s: %ld calls of %s, want %ld\n", what, got, name, want);
    failures++;
  }
}

/* topk selects with its own kernel (no sort of the rows), and the batched
 * linear algebra makes one batched library call per batch of matrices of
 * order <= 32 and one call per matrix above. */
static void per_op_topk_and_solvers(void) {
  ct_tensor_opts o = {.device = dev}, o64 = {.device = dev, .dtype = CT_F64};
  ct_tensor *x = ct_randn(CT_SHAPE(64, 500), &o), *idx = NULL;
  EXPECT_OK(x && ct_synchronize(dev) == CT_OK);
  emu_calls_reset();
  ct_tensor *v = ct_topk(x, 5, -1, true, true, &idx);
  EXPECT_OK(v && idx && ct_synchronize(dev) == CT_OK);
  report("`ct_topk(x, 5, -1, ...)`, (64, 500) f32", 1);
  expect_calls("topk", "kernel launch: topk_kernel", 1);
  expect_calls("topk", "kernel launch: local_kernel", 0); /* the sort's */
  ct_free(v), ct_free(idx), ct_free(x);
  const int64_t orders[2] = {16, 33};
  for (int i = 0; i < 2; i++) {
    int64_t n = orders[i], batch = 8;
    long per = n <= 32 ? 0 : batch, one = n <= 32 ? 1 : 0;
    ct_tensor *a = ct_randn(CT_SHAPE(batch, n, n), &o64);
    ct_tensor *at = a ? ct_transpose(a, 1, 2) : NULL, *eye = ct_eye(n, n, &o64);
    ct_tensor *aat = at ? ct_matmul(a, at) : NULL, *spd = aat && eye ? ct_add(aat, eye) : NULL;
    EXPECT_OK(spd && ct_synchronize(dev) == CT_OK);
    ct_free(at), ct_free(eye), ct_free(aat);
    char what[96];
    snprintf(what, sizeof what, "linalg, batch of %lld f64 (%lld, %lld)", (long long)batch,
             (long long)n, (long long)n);
    emu_calls_reset();
    ct_tensor *inv = ct_linalg_inv(spd);
    EXPECT_OK(inv && ct_synchronize(dev) == CT_OK);
    expect_calls(what, "cublasDgetrfBatched", one);
    expect_calls(what, "cusolverDnDgetrf", per);
    emu_calls_reset();
    ct_tensor *l = ct_linalg_cholesky(spd, false);
    EXPECT_OK(l && ct_synchronize(dev) == CT_OK);
    expect_calls(what, "cusolverDnDpotrfBatched", one);
    expect_calls(what, "cusolverDnDpotrf", per);
    emu_calls_reset();
    ct_tensor *vec = NULL, *w = ct_linalg_eigh(spd, false, &vec);
    EXPECT_OK(w && vec && ct_synchronize(dev) == CT_OK);
    expect_calls(what, "cusolverDnDsyevjBatched", one);
    expect_calls(what, "cusolverDnDsyevd", per);
    emu_calls_reset();
    ct_tensor *u = NULL, *vh = NULL, *s = ct_linalg_svd(a, false, &u, &vh);
    EXPECT_OK(s && u && vh && ct_synchronize(dev) == CT_OK);
    expect_calls(what, "cusolverDnDgesvdjBatched", one);
    expect_calls(what, "cusolverDnDgesvd", per);
    ct_free(a), ct_free(spd), ct_free(inv), ct_free(l), ct_free(vec), ct_free(w);
    ct_free(u), ct_free(vh), ct_free(s);
  }
}

/* ---- Per training step ------------------------------------------------------------------- */

typedef struct step_ctx {
  ct_module *net;
  ct_optimizer *opt;
  ct_grad_scaler *scaler; /* NULL: no AMP */
  ct_tensor *x, *labels;
} step_ctx;

/* One step as bench_train times it, or as examples/mixed_precision.c with AMP. */
static void step(step_ctx *s) {
  ct_scope_begin();
  ct_optimizer_zero_grad(s->opt);
  if (s->scaler) EXPECT_OK(ct_autocast_begin(CT_DEVICE_CUDA, CT_F16, true) == CT_OK);
  ct_tensor *loss = ct_cross_entropy(ct_module_forward(s->net, s->x), s->labels, NULL);
  if (s->scaler) ct_autocast_end();
  EXPECT_OK(loss);
  if (s->scaler) {
    EXPECT_OK(ct_backward(ct_grad_scaler_scale(s->scaler, loss), NULL, NULL) == CT_OK);
    EXPECT_OK(ct_grad_scaler_step(s->scaler, s->opt, NULL) == CT_OK);
    EXPECT_OK(ct_grad_scaler_update(s->scaler) == CT_OK);
  } else {
    EXPECT_OK(ct_backward(loss, NULL, NULL) == CT_OK);
    EXPECT_OK(ct_optimizer_step(s->opt) == CT_OK);
  }
  ct_scope_end();
}

static void per_step(const char *what, ct_module *net, const int64_t *shape, int ndim, bool amp,
                     long budget) {
  enum { MAX_PARAMS = 32, WARMUP = 2, REPS = 3 };
  ct_manual_seed(1);
  ct_tensor *params[MAX_PARAMS];
  EXPECT_OK(net);
  int n = ct_module_parameters(net, params, NULL, MAX_PARAMS);
  step_ctx s = {
      net, ct_sgd_new(params, n, &(ct_sgd_opts){.lr = 0.01, .momentum = 0.9}),
      amp ? ct_grad_scaler_new(NULL) : NULL,
      ct_randn(shape, ndim, &(ct_tensor_opts){.device = dev}),
      ct_randint(0, 10, CT_SHAPE(shape[0]), &(ct_tensor_opts){.dtype = CT_I64, .device = dev})};
  EXPECT_OK(s.opt && s.x && s.labels && (!amp || s.scaler));
  for (int i = 0; i < WARMUP; i++) step(&s);
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  emu_calls_reset();
  for (int i = 0; i < REPS; i++) step(&s);
  double launches = report(what, REPS);
  EXPECT_OK(ct_synchronize(dev) == CT_OK);
  if (launches > (double)budget) {
    fprintf(stderr, "%s: %g kernel launches per step, over its budget of %ld\n", what, launches,
            budget);
    failures++;
  }
  ct_grad_scaler_free(s.scaler);
  ct_optimizer_free(s.opt);
  ct_module_free(net);
  ct_free(s.x);
  ct_free(s.labels);
}

int main(int argc, char **argv) {
  markdown = argc > 1 && strcmp(argv[1], "--markdown") == 0;
  if (!ct_cuda_is_available()) {
    printf("no emulated GPU: %s\n", ct_last_error_message());
    return 77;
  }
  print_header();
  per_op();
  per_op_column_sum();
  per_op_norm("batch_norm training + backward, (16, 4, 32, 32)", CT_SHAPE(16, 4, 32, 32), false);
  per_op_norm("batch_norm training + backward, (16, 64, 8, 8)", CT_SHAPE(16, 64, 8, 8), false);
  per_op_norm("layer_norm + backward, (512, 256)", CT_SHAPE(512, 256), true);
  /* 6 problems: one chunk each way; then a budget of 3 problems forward
   * (3 x 64 x 64 x 6 bytes) and 1 backward (2 chunks forward, 6 backward);
   * then 4 times smaller: the fused kernels, no GEMM */
  per_op_sdpa("sdpa + backward, (2, 3, 64, 32) bf16", 64, 32, false, NULL, 2 + 5);
  per_op_sdpa("sdpa causal + backward, (2, 3, 64, 32) bf16, chunked", 64, 32, true, "73728",
              2 * 2 + 6 * 5);
  per_op_sdpa("sdpa + backward, (2, 3, 64, 32) bf16, fused kernels", 64, 32, false, "6000", 0);
  per_op_topk_and_solvers();
  per_step("MLP 784-128-10 step, batch 64, SGD", train_mlp_new(dev), CT_SHAPE(64, 784), false,
           BUDGET_MLP_STEP);
  per_step("MLP step with AMP (f16 autocast, GradScaler)", train_mlp_new(dev), CT_SHAPE(64, 784),
           true, BUDGET_MLP_STEP_AMP);
  per_step("CIFAR CNN step, batch 64, SGD", train_cnn_new(dev), CT_SHAPE(64, 3, 32, 32), false,
           BUDGET_CNN_STEP);
  per_step("CIFAR CNN step with AMP", train_cnn_new(dev), CT_SHAPE(64, 3, 32, 32), true,
           BUDGET_CNN_STEP_AMP);
  if (failures) fprintf(stderr, "%d launch budget(s) exceeded\n", failures);
  return failures ? 1 : 0;
}
