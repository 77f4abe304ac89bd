/* A golden LSTM training run against PyTorch (skipped without python3 +
 * torch): torch.nn.LSTM(6, 16, num_layers=2, batch_first=True) and a
 * Linear(16, 1) head learn a sequence-to-sequence regression in float32 with
 * Adam (lr 0.01) from the same initial weights on the same 20 batches (8
 * sequences of 12 steps); ctensor's loss at every step must equal torch's
 * within 1e-5 (relative), and the final weights within 1e-5 (normalized max
 * error, as test_golden.c). */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

#define STEPS 20

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]\n"
    "torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().numpy())\n"
    "lstm = torch.nn.LSTM(6, 16, num_layers=2, batch_first=True)\n"
    "head = torch.nn.Linear(16, 1)\n"
    "for pn, p in lstm.named_parameters(): save(f'lstm_{pn}', p)\n"
    "for pn, p in head.named_parameters(): save(f'head_{pn}', p)\n"
    "xs = torch.randn(20, 8, 12, 6)\n"
    "ys = torch.sin(0.3 * xs.sum(-1).cumsum(-1)).unsqueeze(-1)\n"
    "save('xs', xs); save('ys', ys)\n"
    "opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.01)\n"
    "losses = []\n"
    "for s in range(20):\n"
    "  opt.zero_grad()\n"
    "  loss = torch.nn.functional.mse_loss(head(lstm(xs[s])[0]), ys[s])\n"
    "  loss.backward(); opt.step(); losses.append(loss.item())\n"
    "np.save(f'{d}/losses.npy', np.array(losses))\n"
    "for pn, p in lstm.named_parameters(): save(f'final_lstm_{pn}', p)\n"
    "for pn, p in head.named_parameters(): save(f'final_head_{pn}', p)\n";

/* Copies torch's <prefix><name>.npy into each parameter of m; np of them. */
static int load_params(const char *dir, ct_module *m, const char *prefix, ct_tensor **params) {
  const char *names[8];
  int np = ct_module_parameters(m, params, names, 8);
  ct_no_grad_begin();
  for (int i = 0; i < np && i < 8; i++) {
    char file[64];
    snprintf(file, sizeof file, "%s%s", prefix, names[i]);
    CHECK_OK(ct_copy_(params[i], ct_test_load_output(dir, file)));
  }
  ct_no_grad_end();
  return np;
}

static double norm_max_err(const ct_tensor *got, const ct_tensor *want) {
  double d = 1, m = 1;
  ct_tensor *g64 = ct_cast(got, CT_F64), *w64 = ct_cast(want, CT_F64);
  ct_item(ct_max(ct_abs(ct_sub(g64, w64)), NULL), &d);
  ct_item(ct_max(ct_abs(w64), NULL), &m);
  return d / m;
}

CT_TEST(lstm_training_matches_pytorch_losses) {
  const char *dir = ct_test_torch_outputs("rnn_golden", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_scope_begin();
  ct_module_opts mo = {.device = ct_test_device()};
  ct_module *lstm = ct_lstm_new(
      &(ct_rnn_opts){.input_size = 6, .hidden_size = 16, .num_layers = 2, .batch_first = true},
      &mo);
  ct_module *head = ct_linear_new(16, 1, true, &mo);
  ct_tensor *params[10];
  CHECK_OK(lstm);
  CHECK_OK(head);
  if (!lstm || !head || load_params(dir, lstm, "lstm_", params) != 8 ||
      load_params(dir, head, "head_", params + 8) != 2) {
    ct_module_free(lstm), ct_module_free(head);
    ct_scope_end();
    return;
  }
  ct_optimizer *opt = ct_adam_new(params, 10, &(ct_adam_opts){.lr = 0.01});
  ct_tensor *xs = ct_test_load_output(dir, "xs"), *ys = ct_test_load_output(dir, "ys");
  ct_tensor *want = ct_to(ct_test_load_output(dir, "losses"), ct_cpu(), NULL);
  CHECK_OK(opt);
  const double *wl = want ? ct_data_ptr(want) : NULL;
  double worst = 0;
  for (int s = 0; s < STEPS && opt && wl; s++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(opt);
    ct_tensor *out = ct_module_forward(head, ct_module_forward(lstm, ct_select(xs, 0, s)));
    ct_tensor *loss = ct_mse_loss(out, ct_select(ys, 0, s), NULL);
    double got = NAN;
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    CHECK_STATUS_OK(ct_optimizer_step(opt));
    CHECK_STATUS_OK(ct_item(loss, &got));
    double e = fabs(got - wl[s]) / fabs(wl[s]);
    CHECK_MSG(e <= 1e-5, "step %d: loss %.8f, torch %.8f (relative difference %.2e)", s, got, wl[s],
              e);
    if (!(e <= worst)) worst = e;
    ct_scope_end();
  }
  printf("lstm [%s]: %d Adam steps, largest relative loss difference from torch %.2e\n",
         ct_device_name(ct_test_device()), STEPS, worst);
  const char *names[10];
  ct_module_parameters(lstm, NULL, names, 8);
  ct_module_parameters(head, NULL, names + 8, 2);
  for (int i = 0; i < 10; i++) {
    char file[64];
    snprintf(file, sizeof file, "final_%s_%s", i < 8 ? "lstm" : "head", names[i]);
    double e = norm_max_err(params[i], ct_test_load_output(dir, file));
    CHECK_MSG(e <= 1e-5, "final %s differs from torch's: normalized max error %.2e", file, e);
  }
  ct_optimizer_free(opt);
  ct_module_free(lstm), ct_module_free(head);
  ct_scope_end();
}
