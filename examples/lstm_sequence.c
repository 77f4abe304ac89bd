/* An LSTM that learns to predict the next value of noisy sine waves: the
 * sequence-model counterpart of the PyTorch tutorials' time-series examples.
 *
 *   lstm = nn.LSTM(1, 32, batch_first=True); head = nn.Linear(32, 1)
 *   opt = torch.optim.Adam(params, lr=0.01)
 *   for step in range(steps):
 *       waves of random frequency and phase, sampled at t = 0..30; the input is
 *       the wave plus noise at t = 0..29, the target the clean wave at t = 1..30
 *       loss = mse(head(lstm(x)[0]), y); loss.backward(); opt.step()
 *
 * Every step draws a fresh batch of 32 waves. At the end the model predicts
 * held-out waves and its error is compared with the naive forecast "the next
 * value is the current noisy one".
 *
 * Usage: lstm_sequence [--device cpu|cuda:N] [--steps N]
 * Exits 0 when the model beats the naive forecast, 1 otherwise or on a
 * library error, 2 on bad arguments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

#define BATCH 32
#define LEN 30
#define HIDDEN 32

static int fail(const char *what) {
  fprintf(stderr, "lstm_sequence: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* A batch of n waves on dev: *x (n, LEN, 1) noisy inputs, *y (n, LEN, 1)
 * the clean next values. Call inside a scope. */
static void make_batch(int64_t n, ct_device dev, ct_tensor **x, ct_tensor **y) {
  ct_tensor_opts o = {.device = dev};
  ct_tensor *t = ct_arange(0, LEN + 1, 1, &o); /* (LEN+1) */
  ct_tensor *freq = ct_add_scalar(ct_mul_scalar(ct_rand(CT_SHAPE(n, 1), &o), 0.3), 0.2);
  ct_tensor *phase = ct_mul_scalar(ct_rand(CT_SHAPE(n, 1), &o), 2 * M_PI);
  ct_tensor *wave = ct_sin(ct_add(ct_mul(freq, t), phase)); /* (n, LEN+1) */
  ct_tensor *noisy = ct_add(wave, ct_mul_scalar(ct_randn(CT_SHAPE(n, LEN + 1), &o), 0.05));
  *x = ct_unsqueeze(ct_narrow(noisy, 1, 0, LEN), 2);
  *y = ct_unsqueeze(ct_narrow(wave, 1, 1, LEN), 2);
}

int main(int argc, char **argv) {
  ct_device dev = ct_default_device();
  int steps = 60;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &dev) != CT_OK) return fail("--device");
    } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: lstm_sequence [--device cpu|cuda:N] [--steps N]\n");
      return 2;
    }
  }
  ct_manual_seed(0);
  ct_module_opts mo = {.device = dev};
  ct_rnn_opts rnn = {.input_size = 1, .hidden_size = HIDDEN, .batch_first = true};
  ct_module *lstm =
      ct_lstm_new(&rnn, &mo);
  ct_module *head = ct_linear_new(HIDDEN, 1, true, &mo);
  ct_tensor *params[6];
  if (!lstm || !head) return fail("creating the model");
  ct_module_parameters(lstm, params, NULL, 4);
  ct_module_parameters(head, params + 4, NULL, 2);
  ct_adam_opts adam = {.lr = 0.01};
  ct_optimizer *opt = ct_adam_new(params, 6, &adam);
  if (!opt) return fail("creating the optimizer");
  double loss_v = NAN;
  for (int step = 0; step < steps; step++) {
    ct_scope_begin(); /* the step's tensors and graph are freed at its end */
    ct_tensor *x, *y;
    make_batch(BATCH, dev, &x, &y);
    ct_optimizer_zero_grad(opt);
    ct_tensor *pred = ct_module_forward(head, ct_module_forward(lstm, x)); /* (BATCH, LEN, 1) */
    ct_tensor *loss = ct_mse_loss(pred, y, NULL);
    bool ok = ct_backward(loss, NULL, NULL) == CT_OK && ct_optimizer_step(opt) == CT_OK &&
              ct_item(loss, &loss_v) == CT_OK;
    ct_scope_end();
    if (!ok) return fail("training step");
    if (step % 10 == 0 || step == steps - 1) printf("step %4d  loss %.5f\n", step, loss_v);
  }
  /* held-out waves: the model against the naive forecast */
  double model_mse = NAN, naive_mse = NAN;
  ct_scope_begin();
  ct_no_grad_begin();
  ct_tensor *x, *y;
  make_batch(256, dev, &x, &y);
  ct_tensor *pred = ct_module_forward(head, ct_module_forward(lstm, x));
  bool ok = ct_item(ct_mse_loss(pred, y, NULL), &model_mse) == CT_OK &&
            ct_item(ct_mse_loss(x, y, NULL), &naive_mse) == CT_OK;
  ct_no_grad_end();
  ct_scope_end();
  ct_optimizer_free(opt);
  ct_module_free(lstm);
  ct_module_free(head);
  if (!ok) return fail("evaluation");
  printf("held-out waves: LSTM error %.5f, naive forecast (next = current) %.5f\n", model_mse,
         naive_mse);
  return model_mse < naive_mse ? 0 : 1;
}
