/* bench_rnn.c: times one training step of a 2-layer LSTM in ctensor.
 *
 * Workload lstm2_step_L64_N32_I128_H256_f32: torch.nn.LSTM(128, 256,
 * num_layers=2) on x (64, 32, 128) f32 (sequence 64, batch 32), the MSE of
 * the output (64, 32, 256) against a fixed target, backward, and one SGD
 * step (lr 0.01, momentum 0.9): zero_grad, forward, loss, backward, step.
 * "ctensor" is ct_lstm_new's module (each layer one autograd node around the
 * fused cell kernels, nn/rnn_layer.c); "ctensor_unfused" the same LSTM written
 * with ctensor ops step by step (linear, sigmoid, tanh, mul, add: the
 * composition the layer node and the fused cell replaced). Before timing, the loss must be finite and fall over 3 steps.
 * bench/peers_rnn.py times PyTorch the same way; bench/rnn.sh runs both and
 * prints the ratio.
 *
 * Method and output: bench_util.h. Usage: bench_rnn [--threads N]
 * [--budget SECONDS] [--only NAME]
 */
#include <math.h>
#include <stdio.h>

#include <ctensor.h>

#include "bench_util.h"

#define L 64
#define N 32
#define I 128
#define H 256

typedef struct ctx {
  ct_module *lstm;
  ct_tensor *w[8]; /* the module's parameters, torch's order */
  ct_optimizer *opt;
  ct_tensor *x, *target;
  double loss;
} ctx;

/* The LSTM as ops (inside the caller's scope), the modules' per-step
 * schedule (still theirs for f16/bf16) with the cell unfused: per layer the
 * input's projection 8 steps at a time (nn/rnn.c's RNN_PROJ_STEPS), then per
 * step the hidden projection and the gates as views of one (N, 4H) tensor. */
static ct_tensor *unfused_forward(const ctx *c) {
  const ct_tensor *in = c->x;
  ct_tensor *hs[L];
  for (int k = 0; k < 2; k++) {
    ct_tensor *const *w = c->w + 4 * k;
    ct_tensor *h = ct_zeros(CT_SHAPE(N, H), NULL), *cell = ct_zeros(CT_SHAPE(N, H), NULL);
    ct_tensor *gi_blk = NULL;
    for (int t = 0; t < L; t++) {
      if (t % 8 == 0) gi_blk = ct_linear(ct_narrow(in, 0, t, 8), w[0], w[2]);
      ct_tensor *a = ct_add(ct_select(gi_blk, 0, t % 8), ct_linear(h, w[1], w[3]));
      ct_tensor *i = ct_sigmoid(ct_narrow(a, 1, 0, H)), *f = ct_sigmoid(ct_narrow(a, 1, H, H));
      ct_tensor *g = ct_tanh(ct_narrow(a, 1, 2 * H, H)), *o = ct_sigmoid(ct_narrow(a, 1, 3 * H, H));
      cell = ct_add(ct_mul(f, cell), ct_mul(i, g));
      hs[t] = h = ct_mul(o, ct_tanh(cell));
    }
    in = ct_stack(hs, L, 0);
  }
  return (ct_tensor *)in;
}

static void run_step(ctx *c, bool fused) {
  ct_scope_begin();
  ct_optimizer_zero_grad(c->opt);
  ct_tensor *y = fused ? ct_module_forward(c->lstm, c->x) : unfused_forward(c);
  ct_tensor *loss = ct_mse_loss(y, c->target, NULL);
  if (!loss || ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(c->opt) != CT_OK ||
      ct_item(loss, &c->loss) != CT_OK)
    c->loss = NAN;
  ct_scope_end();
}
static void step(void *p) { run_step(p, true); }
static void step_unfused(void *p) { run_step(p, false); }

int main(int argc, char **argv) {
  const char *only = NULL;
  if (bench_init(argc, argv, "bench_rnn", &only)) return 2;
  const char *name = "lstm2_step_L64_N32_I128_H256_f32";
  if (!bench_want(only, name)) return 0;
  ct_manual_seed(0);
  ctx c = {
      .lstm = ct_lstm_new(&(ct_rnn_opts){.input_size = I, .hidden_size = H, .num_layers = 2}, NULL),
      .x = ct_randn(CT_SHAPE(L, N, I), NULL),
      .target = ct_randn(CT_SHAPE(L, N, H), NULL)};
  int np = c.lstm ? ct_module_parameters(c.lstm, c.w, NULL, 8) : 0;
  c.opt = np == 8 ? ct_sgd_new(c.w, np, &(ct_sgd_opts){.lr = 0.01, .momentum = 0.9}) : NULL;
  if (!c.opt || !c.x || !c.target) {
    fprintf(stderr, "bench_rnn: %s\n", ct_last_error_message());
    return 1;
  }
  const struct {
    const char *impl;
    bench_fn fn;
  } impls[] = {{"ctensor", step}, {"ctensor_unfused", step_unfused}};
  for (int k = 0; k < 2; k++) {
    impls[k].fn(&c);
    double first = c.loss;
    impls[k].fn(&c);
    impls[k].fn(&c);
    if (!(isfinite(c.loss) && c.loss < first))
      emit_error(name, impls[k].impl, "the loss is not finite or does not fall");
    else
      emit(name, impls[k].impl, time_it(impls[k].fn, &c), "ms", SCALED, 1e3);
  }
  ct_optimizer_free(c.opt);
  ct_module_free(c.lstm);
  ct_free(c.x);
  ct_free(c.target);
  return 0;
}
