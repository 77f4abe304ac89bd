/* Golden test of the program's ResNet (tools/ctensor/model_resnet.c) against
 * PyTorch, as tests/test_golden.c for the library's models: the torch
 * definition in tests/golden/resnet_golden.py, the same initial state, the
 * same batches, 20 SGD steps (momentum 0.9, weight decay 5e-4) in train mode;
 * each step's loss within 1e-5 relative, then the final weights and the
 * BatchNorm buffers (running_mean, running_var, num_batches_tracked), and the
 * trained model's outputs in eval mode (running statistics). A tiny network
 * with every part of the real one: stem, an identity-shortcut block, a
 * downsampling block (1x1 conv + BN shortcut), pooling, fc; 4 images 3x8x8
 * per batch, so it runs in well under a second. Skipped without Debian's
 * python3 + torch. */
#include "ct_test.h"

#include "cli.h"

CT_TEST_DEVICE_GENERIC

#define STEPS 20
#define TOL 1e-5
#define MAX_STATE 64

/* resnet_golden.py's text (its path comes from the build). */
static char *read_script(void) {
  const char *path = CT_RESNET_GOLDEN_SCRIPT;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (text = calloc((size_t)n + 1, 1)) &&
      fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    text = NULL;
  }
  fclose(f);
  return text;
}

/* Copies the .npy files <prefix>.<state name> into m's parameters and buffers. */
static bool load_state(ct_module *m, const char *dir, const char *prefix) {
  ct_tensor *ts[MAX_STATE];
  const char *names[MAX_STATE];
  int n = ct_module_state(m, ts, names, MAX_STATE);
  CHECK_MSG(n > 0 && n <= MAX_STATE, "state of %d tensors", n);
  bool ok = n > 0 && n <= MAX_STATE;
  ct_no_grad_begin();
  for (int i = 0; ok && i < n; i++) {
    char file[160];
    snprintf(file, sizeof file, "%s.%s", prefix, names[i]);
    ct_tensor *src = ct_test_load_output(dir, file);
    ok = src && ct_copy_(ts[i], src) != NULL;
    ct_free(src);
  }
  ct_no_grad_end();
  return ok;
}

CT_TEST(resnet_trains_as_torch) {
  char *script = read_script();
  if (!script) {
    ct_test_fail(__FILE__, __LINE__, "cannot read %s", CT_RESNET_GOLDEN_SCRIPT);
    return;
  }
  const char *dir = ct_test_torch_outputs("resnet_golden", script);
  free(script);
  if (!dir) {
    if (!ct_test_python_with_torch()) ct_test_skip("no python3 with torch");
    return;
  }
  ct_device dev = ct_test_device();
  ct_manual_seed(7); /* initial values are overwritten by torch's */
  cli_resnet_spec spec = {.in_channels = 3,
                          .stem = 4,
                          .nstages = 2,
                          .widths = {4, 8},
                          .blocks = {1, 1},
                          .strides = {1, 2},
                          .classes = 10};
  ct_module *m = cli_resnet_new(&spec);
  CHECK_OK(m);
  if (!m) return;
  CHECK_STATUS_OK(ct_module_to(m, dev));
  ct_tensor *params[MAX_STATE];
  int np = ct_module_parameters(m, params, NULL, MAX_STATE);
  ct_optimizer *opt =
      ct_sgd_new(params, np, &(ct_sgd_opts){.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
  ct_tensor *x = ct_test_load_output(dir, "x"), *y = ct_test_load_output(dir, "y");
  ct_tensor *want_loss = ct_test_load_output(dir, "loss");
  double *want = want_loss ? ct_test_values(want_loss) : NULL;
  CHECK_OK(opt);
  if (!load_state(m, dir, "init") || !opt || !x || !y || !want) goto done;

  ct_module_train(m, true);
  double max_err = 0;
  for (int step = 0; step < STEPS; step++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(opt);
    ct_tensor *loss =
        ct_cross_entropy(ct_module_forward(m, ct_select(x, 0, step)), ct_select(y, 0, step), NULL);
    double got = NAN;
    bool ok = loss && ct_backward(loss, NULL, NULL) == CT_OK && ct_item(loss, &got) == CT_OK &&
              ct_optimizer_step(opt) == CT_OK;
    ct_scope_end();
    CHECK_MSG(ok, "step %d: %s", step, ct_last_error_message());
    if (!ok) goto done;
    double err = fabs(got - want[step]) / fabs(want[step]);
    CHECK_MSG(err <= TOL, "step %d: loss %.8f, torch's %.8f (relative difference %.3g)", step, got,
              want[step], err);
    if (!(err <= max_err)) max_err = err;
  }
  printf("resnet [%s]: %d SGD steps, losses %.6f .. %.6f, max relative difference %.3g\n",
         ct_device_name(dev), STEPS, want[0], want[STEPS - 1], max_err);

  /* Final weights and BatchNorm buffers, as torch's state_dict. */
  ct_tensor *ts[MAX_STATE];
  const char *names[MAX_STATE];
  int n = ct_module_state(m, ts, names, MAX_STATE);
  for (int i = 0; i < n; i++) {
    char file[160];
    snprintf(file, sizeof file, "final.%s", names[i]);
    CHECK_LIKE_TORCH(dir, names[i], ts[i], file, TOL, TOL);
  }
  /* Eval mode: the running statistics, not the batch's. */
  ct_module_train(m, false);
  ct_no_grad_begin();
  ct_tensor *probe = ct_test_load_output(dir, "probe_x");
  ct_tensor *out = probe ? ct_module_forward(m, probe) : NULL;
  ct_no_grad_end();
  CHECK_LIKE_TORCH(dir, "eval-mode logits", out, "probe_out", TOL, TOL);
  ct_free(out);
  ct_free(probe);
done:
  free(want);
  ct_free(want_loss);
  ct_free(x);
  ct_free(y);
  ct_optimizer_free(opt);
  ct_module_free(m);
}
