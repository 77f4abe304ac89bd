/* ct_module_forward runs a module's forward in a scope of its own and hands
 * back only the output (include/ctensor/nn.h, "Scopes"): a user-written
 * forward that frees none of its intermediates, called 1,000 times outside
 * any scope, must leave no tensor behind once the outputs are freed; inside
 * a scope the output belongs to that scope. Counted with the library's
 * live-handle counter (ct__live_tensors). The forwards outside a scope run
 * on a thread of their own: the harness wraps each test in a scope, and the
 * scope stack is per thread. */
#include <pthread.h>

#include "core/internal.h"
#include "ct_test.h"

#define IN 5
#define HIDDEN 7
#define OUT 3
#define BATCH 4
#define CALLS 1000

/* y = relu(x W1^T) W2^T + b: four intermediates, none freed by the forward. */
static ct_tensor *two_layer_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)self;
  ct_tensor *h = ct_matmul(x, ct_transpose(ct_module_get(m, "w1"), 0, 1));
  ct_tensor *r = ct_relu(h);
  return ct_add(ct_matmul(r, ct_transpose(ct_module_get(m, "w2"), 0, 1)), ct_module_get(m, "b"));
}

static const ct_module_vtable two_layer_vt = {.type_name = "TwoLayer",
                                              .forward = two_layer_forward};

static float w1[HIDDEN * IN], w2[OUT * HIDDEN], bias[OUT], xs[BATCH * IN];

static void fill(float *a, int n, int seed) {
  for (int i = 0; i < n; i++) a[i] = (float)sin(0.7 * i + seed) * 0.8f;
}

static ct_module *two_layer(void) {
  fill(w1, HIDDEN * IN, 1);
  fill(w2, OUT * HIDDEN, 2);
  fill(bias, OUT, 3);
  ct_module *m = ct_module_new(&two_layer_vt, NULL);
  ct_module_register_parameter(m, "w1", ct_from_data(w1, CT_SHAPE(HIDDEN, IN), NULL));
  ct_module_register_parameter(m, "w2", ct_from_data(w2, CT_SHAPE(OUT, HIDDEN), NULL));
  ct_module_register_parameter(m, "b", ct_from_data(bias, CT_SHAPE(OUT), NULL));
  return m;
}

/* The largest |y - reference| over the batch, the reference in float64. */
static double forward_error(const ct_tensor *y) {
  if (!y || ct_numel(y) != BATCH * OUT) return INFINITY;
  const float *got = ct_data_ptr(y);
  double worst = 0;
  for (int n = 0; n < BATCH; n++)
    for (int o = 0; o < OUT; o++) {
      double acc = bias[o];
      for (int h = 0; h < HIDDEN; h++) {
        double z = 0;
        for (int i = 0; i < IN; i++) z += (double)xs[n * IN + i] * w1[h * IN + i];
        acc += (z > 0 ? z : 0) * w2[o * HIDDEN + h];
      }
      worst = fmax(worst, fabs(acc - got[n * OUT + o]));
    }
  return worst;
}

typedef struct run {
  ct_module *m;
  ct_tensor *x;
  bool backward;
  int64_t growth;  /* live handles after the calls minus before */
  double error;    /* of the last output */
  int failures;    /* calls that returned NULL */
  bool scope_open; /* the thread had a scope (it must not) */
} run;

/* CALLS forwards on a thread with no scope; each output (and, with backward,
 * its sum) freed by hand. */
static void *calls_outside_scope(void *arg) {
  run *r = arg;
  /* One warm-up call: with backward, the parameters' gradients appear on the
   * first one and stay (they belong to the parameters). */
  ct_tensor *y = ct_module_forward(r->m, r->x);
  if (r->backward && y) {
    ct_tensor *loss = ct_sum(y, NULL);
    ct_backward(loss, NULL, NULL);
    ct_free(loss);
  }
  ct_free(y);
  int64_t before = ct__live_tensors();
  for (int i = 0; i < CALLS; i++) {
    y = ct_module_forward(r->m, r->x);
    if (!y) {
      r->failures++;
      continue;
    }
    if (r->backward) {
      ct_tensor *loss = ct_sum(y, NULL);
      if (!loss || ct_backward(loss, NULL, NULL) != CT_OK) r->failures++;
      ct_free(loss);
    }
    if (i == CALLS - 1) r->error = forward_error(y);
    ct_free(y);
  }
  r->growth = ct__live_tensors() - before;
  return NULL;
}

static void run_outside(run *r) {
  pthread_t th;
  CHECK(pthread_create(&th, NULL, calls_outside_scope, r) == 0);
  pthread_join(th, NULL);
}

CT_TEST(forward_outside_any_scope_leaks_nothing) {
  fill(xs, BATCH * IN, 4);
  ct_module *m = two_layer();
  ct_tensor *x = ct_keep(ct_from_data(xs, CT_SHAPE(BATCH, IN), NULL));
  run r = {.m = m, .x = x};
  ct_no_grad_begin(); /* inference: no graph */
  run_outside(&r);
  ct_no_grad_end();
  CHECK_MSG(r.failures == 0, "%d forwards failed", r.failures);
  CHECK_MSG(r.growth == 0, "%lld tensors left by %d forwards outside a scope", (long long)r.growth,
            CALLS);
  CHECK_MSG(r.error < 1e-5, "output differs from the float64 reference by %g", r.error);
  ct_free(x);
  ct_module_free(m);
}

CT_TEST(forward_and_backward_outside_any_scope_leak_nothing) {
  fill(xs, BATCH * IN, 5);
  ct_module *m = two_layer();
  ct_tensor *x = ct_keep(ct_from_data(xs, CT_SHAPE(BATCH, IN), NULL));
  run r = {.m = m, .x = x, .backward = true};
  run_outside(&r); /* with autograd: each output's graph goes with it */
  CHECK_MSG(r.failures == 0, "%d forward/backward calls failed", r.failures);
  CHECK_MSG(r.growth == 0, "%lld tensors left by %d forward+backward calls outside a scope",
            (long long)r.growth, CALLS);
  CHECK_MSG(r.error < 1e-5, "output differs from the float64 reference by %g", r.error);
  /* d sum(y) / d b = BATCH per call, accumulated over the warm-up and CALLS calls. */
  ct_tensor *gb = ct_grad(ct_module_get(m, "b"));
  CHECK(gb != NULL);
  if (gb)
    for (int o = 0; o < OUT; o++)
      CHECK_MSG(fabs(((const float *)ct_data_ptr(gb))[o] - (double)BATCH * (CALLS + 1)) < 1e-2,
                "grad b[%d] = %g, want %d", o, ((const float *)ct_data_ptr(gb))[o],
                BATCH * (CALLS + 1));
  ct_free(x);
  ct_module_free(m);
}

CT_TEST(output_belongs_to_the_callers_scope) {
  fill(xs, BATCH * IN, 6);
  ct_module *m = two_layer();
  ct_module *seq = ct_sequential_new(); /* a user module inside a built-in one */
  ct_sequential_add(seq, ct_relu_new());
  ct_tensor *x = ct_keep(ct_from_data(xs, CT_SHAPE(BATCH, IN), NULL));
  int64_t before = ct__live_tensors();
  for (int i = 0; i < 100; i++) {
    ct_scope_begin();
    ct_tensor *y = ct_module_forward(m, x);
    ct_tensor *z = ct_module_forward(seq, y);
    CHECK(y && z);
    if (i == 0) CHECK(forward_error(y) < 1e-5);
    ct_scope_end(); /* frees y and z, made by the forwards */
  }
  CHECK_MSG(ct__live_tensors() == before, "%lld tensors left by 100 scoped forwards",
            (long long)(ct__live_tensors() - before));
  /* Kept out of the scope, the output survives it and is the caller's
   * (without autograd, whose graph would hold the intermediates it saved). */
  ct_no_grad_begin();
  ct_scope_begin();
  ct_tensor *kept = ct_keep(ct_module_forward(m, x));
  ct_scope_end();
  ct_no_grad_end();
  CHECK_MSG(ct__live_tensors() == before + 1, "%lld tensors live besides the kept output",
            (long long)(ct__live_tensors() - before - 1));
  CHECK(forward_error(kept) < 1e-5);
  ct_free(kept);
  CHECK(ct__live_tensors() == before);
  ct_free(x);
  ct_module_free(seq);
  ct_module_free(m);
}
