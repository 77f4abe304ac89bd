/* Linear regression with a hand-written gradient: the NumPy loop of the
 * reference documents, in C.
 *
 *   X = np.random.rand(100, 10); y = np.random.rand(100, 1); W = np.random.rand(10, 1)
 *   for epoch in range(1000):
 *       predictions = np.dot(X, W)
 *       error = predictions - y
 *       loss = np.mean(error ** 2)
 *       gradient = np.dot(X.T, error) / X.shape[0]
 *       W -= 0.01 * gradient
 *
 * Usage: linear_regression_numpy [--device cpu|cuda:N] [--epochs N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "linear_regression_numpy: %s: %s\n", what, ct_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  ct_device dev = ct_default_device();
  int epochs = 1000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &dev) != CT_OK) return fail("--device");
    } else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) {
      epochs = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda:N] [--epochs N]\n", argv[0]);
      return 2;
    }
  }
  ct_manual_seed(0);
  ct_tensor_opts on_dev = {.device = dev};
  ct_tensor *X = ct_rand(CT_SHAPE(100, 10), &on_dev);
  ct_tensor *y = ct_rand(CT_SHAPE(100, 1), &on_dev);
  ct_tensor *W = ct_rand(CT_SHAPE(10, 1), &on_dev);
  if (!X || !y || !W) return fail("creating the data");

  double loss = 0;
  for (int epoch = 0; epoch < epochs; epoch++) {
    ct_scope_begin(); /* every temporary of the body is freed at the end */
    ct_tensor *predictions = ct_matmul(X, W);
    ct_tensor *error = ct_sub(predictions, y);
    ct_tensor *mse = ct_mean(ct_square(error), NULL);
    ct_tensor *gradient = ct_div_scalar(ct_matmul(ct_t(X), error), (double)ct_size(X, 0));
    ct_tensor *updated = ct_sub_(W, ct_mul_scalar(gradient, 0.01));
    bool ok = updated && (epoch + 1 < epochs || ct_item(mse, &loss) == CT_OK);
    ct_scope_end();
    if (!ok) return fail("training step");
  }
  printf("device %s, %d epochs, final loss %.6f\n", ct_device_name(dev), epochs, loss);
  printf("W = ");
  ct_print(W);
  ct_free(W);
  ct_free(y);
  ct_free(X);
  return 0;
}
