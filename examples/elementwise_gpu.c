/* Element-wise math on the best device: the CuPy example of the reference
 * documents, in C.
 *
 *   x_cpu = np.random.rand(1000); y_cpu = np.random.rand(1000)
 *   x_gpu = cp.asarray(x_cpu); y_gpu = cp.asarray(y_cpu)     # host -> device
 *   result_gpu = x_gpu + y_gpu                                # on the device
 *   result_cpu = cp.asnumpy(result_gpu)                       # device -> host
 *
 * Runs unchanged without a GPU (the "device" is then the CPU).
 * Usage: elementwise_gpu [--device cpu|cuda:N] [--n N]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "elementwise_gpu: %s: %s\n", what, ct_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  ct_device dev = ct_default_device();
  int64_t n = 1000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &dev) != CT_OK) return fail("--device");
    } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
      n = atoll(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda:N] [--n N]\n", argv[0]);
      return 2;
    }
  }
  ct_manual_seed(1);
  ct_scope_begin();
  /* Random arrays in host memory (f64, as NumPy's). */
  ct_tensor_opts opts = {.dtype = CT_F64};
  ct_tensor *x_cpu = ct_rand(&n, 1, &opts);
  ct_tensor_opts opts2 = {.dtype = CT_F64};
  ct_tensor *y_cpu = ct_rand(&n, 1, &opts2);
  /* Host -> device, compute there, device -> host. */
  ct_tensor *x_dev = ct_to(x_cpu, dev, NULL);
  ct_tensor *y_dev = ct_to(y_cpu, dev, NULL);
  ct_tensor *result_dev = ct_add(x_dev, y_dev);
  ct_tensor *result_cpu = ct_to(result_dev, ct_cpu(), NULL);
  if (!result_cpu) return fail("computing x + y");

  /* Check against the host computation. */
  const double *x = (const double *)ct_data_ptr(x_cpu), *y = (const double *)ct_data_ptr(y_cpu), *r = (const double *)ct_data_ptr(result_cpu);
  double max_err = 0;
  for (int64_t i = 0; i < n; i++) max_err = fmax(max_err, fabs(r[i] - (x[i] + y[i])));
  printf("device %s: %lld sums, first %.6f + %.6f = %.6f, max error vs host %g\n",
         ct_device_name(dev), (long long)n, x[0], y[0], r[0], max_err);
  ct_scope_end();
  return max_err == 0 ? 0 : 1;
}
