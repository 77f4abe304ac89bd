/* Linear regression trained with autograd and SGD: the two PyTorch versions of
 * the reference documents, in C.
 *
 * The raw-tensor version (--raw):
 *   X = torch.rand(100, 10); y = torch.rand(100, 1)
 *   W = torch.rand(10, 1, requires_grad=True)
 *   optimizer = torch.optim.SGD([W], lr=0.01)
 *   for epoch in range(1000):
 *       optimizer.zero_grad()
 *       predictions = X.mm(W)
 *       error = predictions - y
 *       loss = torch.mean(error ** 2)
 *       loss.backward()
 *       optimizer.step()
 *
 * The module version (--module): nn.Linear(10, 1), nn.MSELoss(), SGD over
 * model.parameters(), lr 0.01, the same loop. With neither flag both run.
 *
 * Usage: linear_regression_autograd [--device cpu|cuda:N] [--disable-cuda]
 *                                   [--raw] [--module] [--epochs N]
 * Exits 0 when each version's loss fell, 1 on a library error or a loss that
 * did not fall, 2 on bad arguments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "linear_regression_autograd: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* Trains and reports; *first and *last receive the first and last losses. */
static int train_raw(ct_device dev, const ct_tensor *X, const ct_tensor *y, int epochs,
                     double *first, double *last) {
  ct_tensor_opts opts = {.device = dev, .requires_grad = true};
  ct_tensor *W = ct_rand(CT_SHAPE(10, 1), &opts);
  ct_sgd_opts sgd = {.lr = 0.01};
  ct_optimizer *optimizer = W ? ct_sgd_new(&W, 1, &sgd) : NULL;
  if (!optimizer) return ct_free(W), fail("creating W and the optimizer");
  for (int epoch = 0; epoch < epochs; epoch++) {
    ct_scope_begin(); /* frees the body's temporaries (and the graph) at the end */
    ct_optimizer_zero_grad(optimizer);
    ct_tensor *predictions = ct_mm(X, W);
    ct_tensor *error = ct_sub(predictions, y);
    ct_tensor *loss = ct_mean(ct_pow_scalar(error, 2), NULL);
    bool ok = ct_backward(loss, NULL, NULL) == CT_OK && ct_optimizer_step(optimizer) == CT_OK;
    if (ok && epoch == 0) ok = ct_item(loss, first) == CT_OK;
    if (ok && epoch == epochs - 1) ok = ct_item(loss, last) == CT_OK;
    ct_scope_end();
    if (!ok) return ct_optimizer_free(optimizer), ct_free(W), fail("raw training step");
  }
  printf("raw tensors (W requires grad, X.mm(W), mean(error^2)): loss %.6f -> %.6f\nW = ", *first, *last);
  ct_print(W);
  ct_optimizer_free(optimizer);
  ct_free(W);
  return 0;
}

static int train_module(ct_device dev, const ct_tensor *X, const ct_tensor *y, int epochs,
                        double *first, double *last) {
  ct_module_opts mopts = {.device = dev};
  ct_module *model = ct_linear_new(10, 1, true, &mopts);
  ct_tensor *params[2];
  int n = model ? ct_module_parameters(model, params, NULL, 2) : 0;
  ct_sgd_opts sgd2 = {.lr = 0.01};
  ct_optimizer *optimizer = model ? ct_sgd_new(params, n, &sgd2) : NULL;
  if (!optimizer) return ct_module_free(model), fail("creating the model and the optimizer");
  for (int epoch = 0; epoch < epochs; epoch++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(optimizer);
    ct_tensor *outputs = ct_module_forward(model, X);
    ct_tensor *loss = ct_mse_loss(outputs, y, NULL); /* criterion = nn.MSELoss() */
    bool ok = ct_backward(loss, NULL, NULL) == CT_OK && ct_optimizer_step(optimizer) == CT_OK;
    if (ok && epoch == 0) ok = ct_item(loss, first) == CT_OK;
    if (ok && epoch == epochs - 1) ok = ct_item(loss, last) == CT_OK;
    ct_scope_end();
    if (!ok) return ct_optimizer_free(optimizer), ct_module_free(model), fail("module training step");
  }
  printf("nn.Linear(10, 1) + MSELoss: loss %.6f -> %.6f\nweight = ", *first, *last);
  ct_print(ct_module_get(model, "weight"));
  ct_optimizer_free(optimizer);
  ct_module_free(model);
  return 0;
}

int main(int argc, char **argv) {
  ct_device dev = ct_default_device();
  bool raw = false, module = false;
  int epochs = 1000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &dev) != CT_OK) {
        fprintf(stderr, "linear_regression_autograd: --device: %s\n", ct_last_error_message());
        return 2;
      }
    } else if (strcmp(argv[i], "--disable-cuda") == 0) {
      dev = ct_cpu();
    } else if (strcmp(argv[i], "--raw") == 0) {
      raw = true;
    } else if (strcmp(argv[i], "--module") == 0) {
      module = true;
    } else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      epochs = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: %s [--device cpu|cuda:N] [--disable-cuda] [--raw] [--module] [--epochs N]\n",
              argv[0]);
      return 2;
    }
  }
  if (!raw && !module) raw = module = true;
  printf("device %s, %d epochs, SGD lr 0.01\n", ct_device_name(dev), epochs);

  ct_manual_seed(0);
  ct_tensor_opts opts2 = {.device = dev};
  ct_tensor *X = ct_rand(CT_SHAPE(100, 10), &opts2);
  ct_tensor_opts opts3 = {.device = dev};
  ct_tensor *y = ct_rand(CT_SHAPE(100, 1), &opts3);
  if (!X || !y) return fail("creating the data");

  int rc = 0;
  double first, last;
  if (raw) {
    rc = train_raw(dev, X, y, epochs, &first, &last);
    if (!rc && !(last < first)) rc = 1, fprintf(stderr, "raw version: the loss did not fall\n");
  }
  if (module && !rc) {
    rc = train_module(dev, X, y, epochs, &first, &last);
    if (!rc && !(last < first)) rc = 1, fprintf(stderr, "module version: the loss did not fall\n");
  }
  ct_free(y);
  ct_free(X);
  return rc;
}
