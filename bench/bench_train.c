/* bench_train.c: training steps with autograd, modules and SGD (peers_train.py
 * times the same steps in PyTorch).
 *
 * Workloads:
 *   train_linreg_1000  linear regression, X (100, 10), W (10, 1) requiring grad,
 *                      mse_loss, backward, SGD(lr=0.01) step: 1000 epochs per call
 *   train_mlp_step     MLP 784-128-10 (Linear, ReLU, Linear), batch 64,
 *                      cross_entropy, backward, SGD(lr=0.01, momentum=0.9) step
 *   train_cnn_step     CIFAR CNN (PyTorch tutorial's Net), batch 64 of (3, 32, 32):
 *                      Conv(3,6,5)-ReLU-MaxPool2-Conv(6,16,5)-ReLU-MaxPool2-Flatten-
 *                      Linear(400,120)-ReLU-Linear(120,84)-ReLU-Linear(84,10),
 *                      cross_entropy, backward, SGD(lr=0.01, momentum=0.9) step
 *   train_fashion_cnn_step  Fashion-MNIST CNN, batch 64 of (1, 28, 28):
 *                      Conv(1,32,3)-ReLU-MaxPool2-Conv(32,64,3)-ReLU-MaxPool2-Flatten-
 *                      Linear(1600,128)-ReLU-Linear(128,10), same loss and optimizer
 *   train_resnet_step  the program's `--model resnet` (ResNet-14: 16-32-64 channels,
 *                      BatchNorm, tools/ctensor/model_resnet.c), batch 64 of
 *                      (1, 28, 28), same loss and optimizer
 *   train_vit_step     the program's `--model vit` (4x4 patches, width 96, 4
 *                      pre-norm encoder layers of 4 heads, tools/ctensor/model_vit.c),
 *                      batch 64 of (1, 28, 28), same loss and optimizer
 *   train_mlp_step_bf16, train_cnn_step_bf16, train_fashion_cnn_step_bf16
 *                      the same steps with the forward pass and the loss in a
 *                      bf16 autocast region (as torch.autocast("cpu")); f32 weights
 *   train_fashion_cnn_epoch the same model over a full epoch's worth of steps: 938
 *                      batches of 64 (the last one 32) sliced from a random
 *                      (60000, 1, 28, 28) data set; seconds per epoch
 *
 * Method and output: bench_util.h. An API that fails (not implemented yet)
 * gives an {"error":...} line instead of a timing.
 *
 * --device cpu|cuda|cuda:N (default cpu) puts the models and the data on that
 * device; on CUDA each timed call ends with ct_synchronize, so its time includes
 * the GPU work (peers_train.py --device cuda: PyTorch eager on the same GPU), and
 * a {"meta":"device",...} line follows the first meta line; after each workload a
 * {"meta":"cuda_memory",...} line gives the caching allocator's statistics
 * (ct_memory_stats: fragmentation, segments, the share of requests the cache
 * served during the workload). The bench names are
 * the CPU ones: keep CPU and GPU runs in separate files. A device this machine
 * or build lacks: the library's message on stderr, exit 77 (2: a malformed name).
 *
 * Usage: bench_train [--threads N] [--budget SECONDS] [--only NAME] [--device DEV]
 */
#include <stdio.h>
#include <string.h>

#include <ctensor.h>

#include "bench_util.h"
#include "cli.h" /* the program's resnet and vit (tools/ctensor) */
#include "train_models.h"

/* The device of the models and data (--device); the CPU by default. */
static ct_device dev;

/* Ends a timed call: waits for the queued GPU work (a no-op on the CPU). */
static bool sync_dev(void) {
  return dev.type != CT_DEVICE_CUDA || ct_synchronize(dev) == CT_OK;
}

/* The caching allocator after a workload (CUDA only): its state, and the
 * requests of the workload (since *before) the cache served. */
static void emit_memory(const char *bench, const ct_memory_stats *before) {
  ct_memory_stats m;
  if (dev.type != CT_DEVICE_CUDA || ct_memory_stats_get(dev, &m) != CT_OK) return;
  uint64_t allocs = m.num_allocs - before->num_allocs,
           hits = m.num_cache_hits - before->num_cache_hits;
  printf(
      "{\"meta\":\"cuda_memory\",\"bench\":\"%s\",\"allocated\":%zu,\"requested\":%zu,"
      "\"reserved\":%zu,\"peak_allocated\":%zu,\"inactive_split\":%zu,\"largest_free_block\":%zu,"
      "\"segments\":%llu,\"driver_allocs\":%llu,\"cache_flushes\":%llu,\"requests\":%llu,"
      "\"cache_hit_rate\":%.6f}\n",
      bench, m.allocated, m.requested, m.reserved, m.peak_allocated, m.inactive_split,
      m.largest_free_block, (unsigned long long)m.num_segments,
      (unsigned long long)m.num_driver_allocs, (unsigned long long)m.num_cache_flushes,
      (unsigned long long)allocs, allocs ? (double)hits / (double)allocs : 1.0);
}

static ct_memory_stats memory_now(void) {
  ct_memory_stats m;
  memset(&m, 0, sizeof m);
  if (dev.type == CT_DEVICE_CUDA && ct_memory_stats_get(dev, &m) != CT_OK) ct_clear_error();
  return m;
}

/* ---- Linear regression with autograd ---------------------------------------------- */

typedef struct linreg_ctx {
  ct_tensor *X, *y, *W; /* X (100, 10), y (100, 1), W (10, 1) leaf */
  ct_optimizer *opt;
  int failed;
} linreg_ctx;

static void run_linreg(void *p) {
  linreg_ctx *l = p;
  for (int epoch = 0; epoch < 1000; epoch++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(l->opt);
    ct_tensor *loss = ct_mse_loss(ct_matmul(l->X, l->W), l->y, NULL);
    if (ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(l->opt) != CT_OK)
      l->failed = 1;
    ct_scope_end();
  }
  if (!sync_dev()) l->failed = 1;
}

static void bench_linreg(void) {
  const char *name = "train_linreg_1000";
  ct_manual_seed(0);
  const ct_tensor_opts o = {.device = dev};
  linreg_ctx l = {ct_rand(CT_SHAPE(100, 10), &o), ct_rand(CT_SHAPE(100, 1), &o),
                  ct_rand(CT_SHAPE(10, 1), &o), NULL, 0};
  if (l.X && l.y && l.W && ct_requires_grad_(l.W, true))
    l.opt = ct_sgd_new(&l.W, 1, &(ct_sgd_opts){.lr = 0.01});
  if (l.opt) run_linreg(&l);
  if (!l.opt || l.failed)
    emit_error(name, "ctensor", ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_linreg, &l), "ms_per_1000", SCALED, 1e3);
  ct_optimizer_free(l.opt);
  ct_free(l.X);
  ct_free(l.y);
  ct_free(l.W);
}

/* The program's models are built on the CPU: moves one to the bench's device
 * (NULL stays NULL, and a failed move frees it). */
static ct_module *on_device(ct_module *net) {
  if (net && dev.type != CT_DEVICE_CPU && ct_module_to(net, dev) != CT_OK) {
    ct_module_free(net);
    return NULL;
  }
  return net;
}

/* ---- One training step of a module ------------------------------------------------- */

typedef struct step_ctx {
  ct_module *net;
  ct_optimizer *opt;
  ct_tensor *x, *labels; /* a fixed batch; labels i64 */
  int failed;
  bool bf16; /* forward and loss under bf16 autocast */
} step_ctx;

static void run_step(void *p) {
  step_ctx *s = p;
  ct_scope_begin();
  ct_optimizer_zero_grad(s->opt);
  if (s->bf16 && ct_autocast_begin(dev.type, CT_BF16, true) != CT_OK) s->failed = 1;
  ct_tensor *loss = ct_cross_entropy(ct_module_forward(s->net, s->x), s->labels, NULL);
  if (s->bf16) ct_autocast_end();
  if (ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(s->opt) != CT_OK)
    s->failed = 1;
  ct_scope_end();
  if (!sync_dev()) s->failed = 1;
}

/* Times training steps of `net` on a random batch x of `shape` (takes net);
 * a name ending in _bf16 runs them under bf16 autocast. */
static void bench_step(const char *name, ct_module *net, const int64_t *shape, int ndim) {
  enum { MAX_PARAMS = 128 }; /* the vit has 55 */
  ct_tensor *params[MAX_PARAMS];
  int n = net ? ct_module_parameters(net, params, NULL, MAX_PARAMS) : 0;
  step_ctx s = {net, NULL, ct_randn(shape, ndim, &(ct_tensor_opts){.device = dev}),
                ct_randint(0, 10, CT_SHAPE(shape[0]),
                           &(ct_tensor_opts){.dtype = CT_I64, .device = dev}),
                0, strstr(name, "_bf16") != NULL};
  if (n > 0 && n <= MAX_PARAMS)
    s.opt = ct_sgd_new(params, n, &(ct_sgd_opts){.lr = 0.01, .momentum = 0.9});
  ct_memory_stats before = memory_now();
  if (s.opt && s.x && s.labels) run_step(&s);
  if (!s.opt || !s.x || !s.labels || s.failed)
    emit_error(name, "ctensor", ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_step, &s), "ms_per_step", SCALED, 1e3);
  emit_memory(name, &before);
  ct_optimizer_free(s.opt);
  ct_module_free(net);
  ct_free(s.x);
  ct_free(s.labels);
}

/* ---- A full epoch: 938 steps over batches sliced from a data set ---------------- */

enum { EPOCH_N = 60000, EPOCH_B = 64 };

typedef struct epoch_ctx {
  step_ctx s;
  ct_tensor *data, *targets; /* (EPOCH_N, 1, 28, 28) f32, (EPOCH_N) i64 */
} epoch_ctx;

static void run_epoch(void *p) {
  epoch_ctx *e = p;
  for (int64_t i = 0; i < EPOCH_N; i += EPOCH_B) {
    int64_t len = EPOCH_N - i < EPOCH_B ? EPOCH_N - i : EPOCH_B;
    ct_scope_begin();
    ct_optimizer_zero_grad(e->s.opt);
    ct_tensor *x = ct_narrow(e->data, 0, i, len), *t = ct_narrow(e->targets, 0, i, len);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(e->s.net, x), t, NULL);
    if (ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(e->s.opt) != CT_OK)
      e->s.failed = 1;
    ct_scope_end();
  }
  if (!sync_dev()) e->s.failed = 1;
}

static void bench_epoch(void) {
  const char *name = "train_fashion_cnn_epoch";
  enum { MAX_PARAMS = 128 }; /* the vit has 55 */
  ct_tensor *params[MAX_PARAMS];
  ct_module *net = train_fashion_cnn_new(dev);
  int n = net ? ct_module_parameters(net, params, NULL, MAX_PARAMS) : 0;
  epoch_ctx e = {{net, NULL, NULL, NULL, 0, false},
                 ct_randn(CT_SHAPE(EPOCH_N, 1, 28, 28), &(ct_tensor_opts){.device = dev}),
                 ct_randint(0, 10, CT_SHAPE(EPOCH_N),
                            &(ct_tensor_opts){.dtype = CT_I64, .device = dev})};
  if (n > 0 && n <= MAX_PARAMS)
    e.s.opt = ct_sgd_new(params, n, &(ct_sgd_opts){.lr = 0.01, .momentum = 0.9});
  bool ready = e.s.opt && e.data && e.targets;
  ct_memory_stats before = memory_now();
  if (ready) run_epoch(&e);
  if (!ready || e.s.failed)
    emit_error(name, "ctensor", ct_last_error_message());
  else
    emit(name, "ctensor", time_it(run_epoch, &e), "s_per_epoch", SCALED, 1.0);
  emit_memory(name, &before);
  ct_optimizer_free(e.s.opt);
  ct_module_free(net);
  ct_free(e.data);
  ct_free(e.targets);
}

/* Takes --device NAME (or --device=NAME) out of argv (the rest goes to
 * bench_init) and sets dev. Returns 0, 2 (malformed) or 77 (not available). */
static int parse_device(int *argc, char **argv) {
  const char *name = NULL;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < *argc)
      name = argv[++i];
    else if (strncmp(argv[i], "--device=", 9) == 0)
      name = argv[i] + 9;
    else
      argv[out++] = argv[i];
  }
  *argc = out;
  argv[out] = NULL;
  if (!name) return 0;
  ct_status st = ct_device_parse(name, &dev);
  if (st == CT_OK) return 0;
  fprintf(stderr, "bench_train: --device %s: %s\n", name, ct_last_error_message());
  return st == CT_ERR_UNAVAILABLE ? 77 : 2;
}

int main(int argc, char **argv) {
  const char *only;
  int rc = parse_device(&argc, argv);
  if (rc) return rc;
  if (bench_init(argc, argv, "bench_train", &only) != 0) return 2;
  if (dev.type == CT_DEVICE_CUDA)
    printf("{\"meta\":\"device\",\"device\":\"%s\"}\n", ct_device_name(dev));
  ct_manual_seed(0);
  if (bench_want(only, "train_linreg_1000")) bench_linreg();
  if (bench_want(only, "train_mlp_step"))
    bench_step("train_mlp_step", train_mlp_new(dev), CT_SHAPE(64, 784));
  if (bench_want(only, "train_cnn_step"))
    bench_step("train_cnn_step", train_cnn_new(dev), CT_SHAPE(64, 3, 32, 32));
  if (bench_want(only, "train_fashion_cnn_step"))
    bench_step("train_fashion_cnn_step", train_fashion_cnn_new(dev), CT_SHAPE(64, 1, 28, 28));
  if (bench_want(only, "train_resnet_step"))
    bench_step("train_resnet_step", on_device(cli_resnet_default(1)), CT_SHAPE(64, 1, 28, 28));
  if (bench_want(only, "train_vit_step"))
    bench_step("train_vit_step", on_device(cli_vit_default(1, 28)), CT_SHAPE(64, 1, 28, 28));
  if (bench_want(only, "train_mlp_step_bf16"))
    bench_step("train_mlp_step_bf16", train_mlp_new(dev), CT_SHAPE(64, 784));
  if (bench_want(only, "train_cnn_step_bf16"))
    bench_step("train_cnn_step_bf16", train_cnn_new(dev), CT_SHAPE(64, 3, 32, 32));
  if (bench_want(only, "train_fashion_cnn_step_bf16"))
    bench_step("train_fashion_cnn_step_bf16", train_fashion_cnn_new(dev),
               CT_SHAPE(64, 1, 28, 28));
  /* Only when asked for by name: an epoch takes seconds per call. */
  if (only && bench_want(only, "train_fashion_cnn_epoch")) bench_epoch();
  return 0;
}
