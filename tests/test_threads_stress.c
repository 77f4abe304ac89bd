/* The threads contract of include/ctensor.h under a mixed load: one module's
 * inference (under no_grad, in eval mode) from N threads while two separate
 * trainings (each its own module, optimizer and generator) run side by side
 * on two more threads. Every inference must give the single-threaded output,
 * and each training the parameters of the same training run alone: nothing
 * one thread does may show in another's results. Bounded by work (a small
 * model, a fixed number of steps); labelled tsan, so the ThreadSanitizer
 * build (CTENSOR_SANITIZE_THREAD=ON, ctest -L tsan) reports any race. */
#include <pthread.h>

#include "ct_test.h"

#define N_INFER 4
#define INFER_CALLS 40
#define TRAIN_STEPS 30
#define BATCH 16
#define IN 8
#define HIDDEN 16
#define OUT 4
#define N_PARAMS 4 /* two Linear layers, weight and bias each */

static float xs[BATCH * IN], ys[BATCH * OUT];

static void make_data(void) {
  for (int i = 0; i < BATCH * IN; i++) xs[i] = (float)sin(0.37 * i);
  for (int i = 0; i < BATCH * OUT; i++) ys[i] = (float)cos(0.21 * i);
}

/* The same weights for the same seed (its own generator, not the default). */
static ct_module *make_net(uint64_t seed) {
  ct_generator *g = ct_generator_new(seed);
  ct_module_opts o = {.generator = g};
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_linear_new(IN, HIDDEN, true, &o));
  ct_sequential_add(net, ct_tanh_new());
  ct_sequential_add(net, ct_linear_new(HIDDEN, OUT, true, &o));
  ct_generator_free(g);
  return net;
}

/* ---- Training: its own module, optimizer and generator ------------------------ */

typedef struct training {
  pthread_t th;
  uint64_t seed;
  float params[N_PARAMS][HIDDEN * IN]; /* the final parameters, flattened */
  int64_t numel[N_PARAMS];
  double first_loss, last_loss;
  int failures;
} training;

/* TRAIN_STEPS of SGD on (x + noise, y), the noise drawn from the training's
 * own generator: the result depends on the seed alone. */
static void *train(void *arg) {
  training *t = arg;
  ct_generator *g = ct_generator_new(t->seed);
  ct_module *net = make_net(t->seed);
  ct_tensor *params[N_PARAMS];
  if (ct_module_parameters(net, params, NULL, N_PARAMS) != N_PARAMS) t->failures++;
  ct_optimizer *opt = ct_sgd_new(params, N_PARAMS, &(ct_sgd_opts){.lr = 0.1, .momentum = 0.5});
  ct_tensor *x = ct_keep(ct_from_data(xs, CT_SHAPE(BATCH, IN), NULL));
  ct_tensor *y = ct_keep(ct_from_data(ys, CT_SHAPE(BATCH, OUT), NULL));
  for (int step = 0; step < TRAIN_STEPS && opt; step++) {
    ct_scope_begin();
    ct_tensor *noise = ct_randn(CT_SHAPE(BATCH, IN), &(ct_tensor_opts){.generator = g});
    ct_tensor *pred = ct_module_forward(net, ct_add(x, ct_mul_scalar(noise, 0.01)));
    ct_tensor *loss = ct_mse_loss(pred, y, NULL);
    double v = NAN;
    ct_optimizer_zero_grad(opt);
    if (!loss || ct_item(loss, &v) != CT_OK || ct_backward(loss, NULL, NULL) != CT_OK ||
        ct_optimizer_step(opt) != CT_OK)
      t->failures++;
    if (step == 0) t->first_loss = v;
    t->last_loss = v;
    ct_scope_end();
  }
  for (int i = 0; i < N_PARAMS; i++) {
    t->numel[i] = ct_numel(params[i]);
    memcpy(t->params[i], ct_data_ptr(params[i]), (size_t)t->numel[i] * sizeof(float));
  }
  ct_free(x);
  ct_free(y);
  ct_optimizer_free(opt);
  ct_module_free(net);
  ct_generator_free(g);
  return NULL;
}

static double params_diff(const training *a, const training *b) {
  double worst = 0;
  for (int i = 0; i < N_PARAMS; i++) {
    if (a->numel[i] != b->numel[i]) return INFINITY;
    for (int64_t k = 0; k < a->numel[i]; k++)
      worst = fmax(worst, fabs((double)a->params[i][k] - b->params[i][k]));
  }
  return worst;
}

/* ---- Inference: one module, many readers -------------------------------------- */

typedef struct reader {
  pthread_t th;
  ct_module *net;
  const ct_tensor *x;
  const float *want; /* the single-threaded output */
  double worst;
  int failures;
} reader;

static void *infer(void *arg) {
  reader *r = arg;
  ct_no_grad_begin();
  for (int i = 0; i < INFER_CALLS; i++) {
    ct_tensor *out = ct_module_forward(r->net, r->x); /* no scope: the caller frees it */
    if (!out || ct_numel(out) != BATCH * OUT) {
      r->failures++;
    } else {
      const float *got = ct_data_ptr(out);
      for (int k = 0; k < BATCH * OUT; k++)
        r->worst = fmax(r->worst, fabs((double)got[k] - r->want[k]));
    }
    ct_free(out);
  }
  ct_no_grad_end();
  return NULL;
}

CT_TEST(inference_from_threads_beside_two_trainings) {
  make_data();
  /* The references, on this thread alone. */
  static training alone, side[2];
  alone = (training){.seed = 42};
  train(&alone);
  CHECK_MSG(alone.failures == 0, "the training alone failed %d steps", alone.failures);
  CHECK_MSG(alone.last_loss < alone.first_loss, "the training alone did not learn: %g -> %g",
            alone.first_loss, alone.last_loss);

  ct_module *net = make_net(7);
  ct_module_train(net, false);
  ct_tensor *x = ct_from_data(xs, CT_SHAPE(BATCH, IN), NULL);
  float want[BATCH * OUT];
  ct_no_grad_begin();
  ct_tensor *ref = ct_module_forward(net, x);
  ct_no_grad_end();
  CHECK_OK(ref);
  if (!ref) return;
  memcpy(want, ct_data_ptr(ref), sizeof want);

  /* Everything at once. */
  reader readers[N_INFER];
  for (int i = 0; i < N_INFER; i++) readers[i] = (reader){.net = net, .x = x, .want = want};
  for (int i = 0; i < 2; i++) side[i] = (training){.seed = 42};
  for (int i = 0; i < N_INFER; i++)
    CHECK(pthread_create(&readers[i].th, NULL, infer, &readers[i]) == 0);
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&side[i].th, NULL, train, &side[i]) == 0);
  for (int i = 0; i < N_INFER; i++) pthread_join(readers[i].th, NULL);
  for (int i = 0; i < 2; i++) pthread_join(side[i].th, NULL);

  for (int i = 0; i < N_INFER; i++) {
    CHECK_MSG(readers[i].failures == 0, "reader %d: %d forwards failed", i, readers[i].failures);
    CHECK_MSG(readers[i].worst < 1e-6,
              "reader %d: output differs from the single-threaded one by %g", i, readers[i].worst);
  }
  for (int i = 0; i < 2; i++) {
    CHECK_MSG(side[i].failures == 0, "training %d failed %d steps", i, side[i].failures);
    double d = params_diff(&side[i], &alone);
    CHECK_MSG(d < 1e-6, "training %d beside the others ends %g away from the same training alone",
              i, d);
  }
  ct_free(x);
  ct_module_free(net);
}
