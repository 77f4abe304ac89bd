/* The concurrency contract of include/ctensor/ctensor.h, under load: one
 * module's inference from several threads (no_grad, and with autograd into
 * shared parameters), backward calls on several threads into shared leaves
 * (exact totals: no sum lost), a gradient cleared on one thread while others
 * accumulate into it, and one DataLoader consumed by several threads (each
 * batch delivered once). Meant for the ThreadSanitizer build too (ctest -L
 * tsan in a CTENSOR_SANITIZE_THREAD build), where any race is an error. */
#include <pthread.h>
#include <stdatomic.h>

#include "ct_test.h"

#define N_THREADS 4

typedef struct worker {
  pthread_t th;
  void *ctx;
  int id, failures;
  double result;
} worker;

static void run_threads(worker *w, int n, void *(*fn)(void *), void *ctx) {
  for (int i = 0; i < n; i++) {
    w[i] = (worker){.ctx = ctx, .id = i};
    CHECK(pthread_create(&w[i].th, NULL, fn, &w[i]) == 0);
  }
  for (int i = 0; i < n; i++) pthread_join(w[i].th, NULL);
}

/* The largest |a - b| (same shapes), or INFINITY. */
static double max_diff(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b || ct_numel(a) != ct_numel(b)) return INFINITY;
  const float *x = ct_data_ptr(a), *y = ct_data_ptr(b);
  double worst = 0;
  for (int64_t i = 0; i < ct_numel(a); i++) worst = fmax(worst, fabs((double)x[i] - y[i]));
  return worst;
}

/* ---- One module, many readers ----------------------------------------------- */

typedef struct net_ctx {
  ct_module *net;
  ct_tensor *x, *want;
  bool with_grad; /* forward and backward into the shared parameters */
} net_ctx;

static ct_module *small_net(void) {
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_conv2d_new(3, 8, 3, NULL, true, NULL));
  ct_sequential_add(net, ct_batch_norm2d_new(8, 1e-5, 0.1, NULL));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_flatten_new(1, -1));
  ct_sequential_add(net, ct_linear_new(8 * 6 * 6, 16, true, NULL));
  ct_sequential_add(net, ct_layer_norm_new(CT_SHAPE(16), 1e-5, NULL));
  ct_sequential_add(net, ct_linear_new(16, 4, true, NULL));
  return net;
}

static void *infer(void *arg) {
  worker *w = arg;
  net_ctx *c = w->ctx;
  for (int it = 0; it < 25; it++) {
    ct_scope_begin();
    ct_tensor *params[16];
    const char *names[16];
    if (ct_module_parameters(c->net, params, names, 16) != 10 || strcmp(names[9], "6.bias"))
      w->failures++;
    if (!c->with_grad) ct_no_grad_begin();
    ct_tensor *y = ct_module_forward(c->net, c->x);
    if (!c->with_grad) ct_no_grad_end();
    double d = max_diff(y, c->want);
    if (d > 1e-5) w->failures++;
    w->result = fmax(w->result, d);
    if (c->with_grad && y && ct_backward(ct_sum(y, NULL), NULL, NULL) != CT_OK) w->failures++;
    ct_scope_end();
  }
  return NULL;
}

static void module_from_threads(bool with_grad) {
  ct_manual_seed(11);
  net_ctx c = {.net = small_net(), .with_grad = with_grad};
  CHECK_OK(c.net);
  if (!c.net) return;
  ct_module_train(c.net, false); /* batch norm reads its running statistics */
  c.x = ct_randn(CT_SHAPE(5, 3, 8, 8), NULL);
  ct_no_grad_begin();
  c.want = ct_module_forward(c.net, c.x);
  ct_no_grad_end();
  CHECK_OK(c.want);
  /* the gradients of one pass, to compare the threads' total with */
  ct_tensor *params[16];
  int np = ct_module_parameters(c.net, params, NULL, 16);
  ct_tensor *one[16] = {0};
  if (with_grad) {
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_module_forward(c.net, c.x), NULL), NULL, NULL));
    for (int i = 0; i < np; i++) one[i] = ct_clone(ct_grad(params[i]));
    ct_module_zero_grad(c.net);
  }
  worker w[N_THREADS];
  run_threads(w, N_THREADS, infer, &c);
  for (int i = 0; i < N_THREADS; i++)
    CHECK_MSG(!w[i].failures, "thread %d: %d wrong outputs (worst %g)", i, w[i].failures,
              w[i].result);
  for (int i = 0; with_grad && i < np; i++) {
    ct_tensor *want = ct_mul_scalar(one[i], 25.0 * N_THREADS);
    ct_tensor *zero = ct_zeros_like(want, NULL);
    double d = max_diff(ct_grad(params[i]), want), scale = max_diff(want, zero);
    CHECK_MSG(d <= 1e-4 * (1 + scale), "parameter %d: the threads' summed gradient is off by %g", i,
              d);
  }
  ct_module_free(c.net);
}

CT_TEST(module_inference_from_threads) { module_from_threads(false); }

/* Recurrent and attention layers (their forward packs weights, builds masks
 * and runs fused kernels), each shared by the threads under no_grad. */
static void *infer_plain(void *arg) {
  worker *w = arg;
  net_ctx *c = w->ctx;
  for (int it = 0; it < 10; it++) {
    ct_scope_begin();
    ct_no_grad_begin();
    ct_tensor *y = ct_module_forward(c->net, c->x);
    ct_no_grad_end();
    double d = max_diff(y, c->want);
    if (d > 1e-5) w->failures++;
    w->result = fmax(w->result, d);
    ct_scope_end();
  }
  return NULL;
}

static void shared_inference(const char *what, ct_module *net, ct_tensor *x) {
  CHECK_OK(net);
  if (!net) return;
  ct_module_train(net, false);
  net_ctx c = {.net = net, .x = x};
  ct_no_grad_begin();
  c.want = ct_module_forward(net, x);
  ct_no_grad_end();
  CHECK_OK(c.want);
  worker w[N_THREADS];
  run_threads(w, N_THREADS, infer_plain, &c);
  for (int i = 0; i < N_THREADS; i++)
    CHECK_MSG(!w[i].failures, "%s, thread %d: %d wrong outputs (worst %g)", what, i, w[i].failures,
              w[i].result);
  ct_module_free(net);
}

CT_TEST(recurrent_and_attention_inference_from_threads) {
  ct_manual_seed(12);
  shared_inference("LSTM",
                   ct_lstm_new(&(ct_rnn_opts){.input_size = 8,
                                              .hidden_size = 16,
                                              .num_layers = 2,
                                              .batch_first = true,
                                              .bidirectional = true},
                               NULL),
                   ct_randn(CT_SHAPE(3, 7, 8), NULL));
  shared_inference("GRU", ct_gru_new(&(ct_rnn_opts){.input_size = 8, .hidden_size = 12}, NULL),
                   ct_randn(CT_SHAPE(5, 2, 8), NULL));
  shared_inference("TransformerEncoderLayer",
                   ct_transformer_encoder_layer_new(&(ct_transformer_opts){.d_model = 16,
                                                                           .nhead = 4,
                                                                           .dim_feedforward = 32,
                                                                           .dropout = 0.1,
                                                                           .batch_first = true},
                                                    NULL),
                   ct_randn(CT_SHAPE(2, 9, 16), NULL));
}
CT_TEST(module_training_steps_from_threads) { module_from_threads(true); }

/* ---- Backward into shared leaves ---------------------------------------------- */

typedef struct leaf_ctx {
  ct_tensor *x;
  int iters;
  atomic_int running;
} leaf_ctx;

static void *backward_loop(void *arg) {
  worker *w = arg;
  leaf_ctx *c = w->ctx;
  for (int it = 0; it < c->iters; it++) {
    ct_scope_begin();
    /* y = sum(2x) + sum(x): each leaf element gets 3 per backward */
    ct_tensor *y = ct_add(ct_sum(ct_mul_scalar(c->x, 2.0), NULL), ct_sum(c->x, NULL));
    if (ct_backward(y, NULL, NULL) != CT_OK) w->failures++;
    ct_scope_end();
  }
  atomic_fetch_sub(&c->running, 1);
  return NULL;
}

CT_TEST(concurrent_backward_adds_every_gradient) {
  leaf_ctx c = {.x = ct_zeros(CT_SHAPE(1 << 16), &(ct_tensor_opts){.requires_grad = true}),
                .iters = 200};
  atomic_init(&c.running, N_THREADS);
  worker w[N_THREADS];
  run_threads(w, N_THREADS, backward_loop, &c);
  for (int i = 0; i < N_THREADS; i++) CHECK(!w[i].failures);
  ct_tensor *g = ct_grad(c.x);
  CHECK_OK(g);
  const float *v = g ? ct_data_ptr(g) : NULL;
  int wrong = 0;
  for (int i = 0; v && i < 1 << 16; i++) wrong += v[i] != 3.0f * 200 * N_THREADS;
  CHECK_MSG(!wrong, "%d of 65536 sums lost updates (first %g, want %g)", wrong, v ? v[0] : -1.0,
            3.0 * 200 * N_THREADS);
}

static void *clear_loop(void *arg) {
  worker *w = arg;
  leaf_ctx *c = w->ctx;
  while (atomic_load(&c->running) > 0) {
    ct_tensor *g = ct_grad(c->x); /* borrowed: read only here, where no one else clears */
    w->result += g != NULL;
    if (ct_set_grad(c->x, NULL) != CT_OK) w->failures++;
  }
  return NULL;
}

static void *backward_or_clear(void *arg) {
  worker *w = arg;
  return w->id == 0 ? clear_loop(arg) : backward_loop(arg);
}

CT_TEST(zero_grad_during_backward) {
  leaf_ctx c = {.x = ct_zeros(CT_SHAPE(4096), &(ct_tensor_opts){.requires_grad = true}),
                .iters = 100};
  atomic_init(&c.running, N_THREADS - 1);
  worker w[N_THREADS];
  run_threads(w, N_THREADS, backward_or_clear, &c);
  for (int i = 0; i < N_THREADS; i++) CHECK(!w[i].failures);
  /* what survived the clears is whole accumulations (of 2 and of 1, one per
   * path to x): each added to every element under the lock, so all elements
   * agree and are integers */
  ct_tensor *g = ct_grad(c.x);
  const float *v = g ? ct_data_ptr(g) : NULL;
  for (int i = 0; v && i < 4096; i++)
    if (v[i] != v[0] || v[i] != floorf(v[i]) || v[i] > 3.0f * 100 * (N_THREADS - 1)) {
      CHECK_MSG(false, "grad[%d] = %g, grad[0] = %g: a torn accumulation", i, v[i], v[0]);
      break;
    }
}

/* ---- One DataLoader, several consumers ---------------------------------------- */

typedef struct loader_ctx {
  ct_dataloader *dl;
  int64_t n_batches;
  atomic_int *seen; /* per batch index: deliveries */
  atomic_int *rows; /* per sample: deliveries */
} loader_ctx;

static void *consume(void *arg) {
  worker *w = arg;
  loader_ctx *c = w->ctx;
  for (;;) {
    ct_batch b;
    if (ct_dataloader_next(c->dl, &b) != CT_OK) {
      w->failures++;
      break;
    }
    if (!b.inputs) break;
    if (b.index < 0 || b.index >= c->n_batches) {
      w->failures++;
    } else {
      atomic_fetch_add(&c->seen[b.index], 1);
      const float *v = ct_data_ptr(b.inputs);
      for (int64_t i = 0; i < ct_size(b.inputs, 0); i++) atomic_fetch_add(&c->rows[(int)v[i]], 1);
    }
    ct_batch_release(&b);
    w->result++;
  }
  return NULL;
}

static void loader_consumers(int num_workers, bool shuffle) {
  enum { N = 203, BATCH = 4 };
  ct_tensor *x = ct_arange(0, N, 1, NULL), *y = ct_zeros(CT_SHAPE(N), NULL);
  ct_dataset *ds = ct_tensor_dataset_new(x, y);
  CHECK_OK(ds);
  ct_dataloader *dl = ct_dataloader_new(
      ds, &(ct_dataloader_opts){
              .batch_size = BATCH, .num_workers = num_workers, .shuffle = shuffle, .seed = 5});
  CHECK_OK(dl);
  if (!dl) return;
  loader_ctx c = {.dl = dl, .n_batches = ct_dataloader_num_batches(dl)};
  c.seen = calloc((size_t)c.n_batches, sizeof *c.seen);
  c.rows = calloc(N, sizeof *c.rows);
  for (int epoch = 0; epoch < 3; epoch++) {
    memset(c.seen, 0, sizeof *c.seen * (size_t)c.n_batches);
    memset(c.rows, 0, sizeof *c.rows * N);
    CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, epoch, 0));
    worker w[N_THREADS];
    run_threads(w, N_THREADS, consume, &c);
    double total = 0;
    for (int i = 0; i < N_THREADS; i++) {
      CHECK(!w[i].failures);
      total += w[i].result;
    }
    CHECK_MSG(total == (double)c.n_batches, "workers %d, epoch %d: %g batches delivered, want %lld",
              num_workers, epoch, total, (long long)c.n_batches);
    for (int64_t b = 0; b < c.n_batches; b++)
      CHECK_MSG(c.seen[b] == 1, "batch %lld delivered %d times", (long long)b, c.seen[b]);
    for (int i = 0; i < N; i++)
      CHECK_MSG(c.rows[i] == 1, "sample %d delivered %d times", i, c.rows[i]);
  }
  free(c.seen);
  free(c.rows);
  ct_dataloader_free(dl);
  ct_dataset_free(ds);
}

CT_TEST(dataloader_consumers_on_threads) {
  loader_consumers(0, false);
  loader_consumers(2, true);
  loader_consumers(3, false);
}
