/* Moving tensors between the CPU and a GPU, and keeping work on the GPU: the
 * reference documents' two transfer examples, in C.
 *
 *   cpu_tensor = torch.tensor([1.0, 2.0, 3.0])
 *   gpu_tensor = cpu_tensor.to('cuda')           # one transfer there
 *   gpu_result = gpu_tensor * 2
 *   cpu_result = gpu_result.to('cpu')            # and one back
 *
 *   gpu_tensor = cpu_tensor.to('cuda')           # a chain of operations:
 *   gpu_tensor = gpu_tensor * 2                  # all of it on the GPU,
 *   gpu_tensor = gpu_tensor + 1                  # one copy back at the end
 *   gpu_tensor = torch.sqrt(gpu_tensor)
 *   cpu_result = gpu_tensor.to('cpu')
 *
 * The chain is also run on --n elements and timed both ways: once on the GPU
 * with a single copy back, and with a round trip to the host after every
 * operation (what the documents warn against). Without a GPU the "device" is
 * the CPU and the copies are no-ops.
 *
 * Usage: device_transfers [--device cpu|cuda:N] [--disable-cuda] [--n N]
 * Exits 0 when every result matches the host computation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "device_transfers: %s: %s\n", what, ct_last_error_message());
  return 1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* sqrt(x * 2 + 1) with every intermediate on `dev`, one copy back. */
static ct_tensor *chain_on_device(const ct_tensor *x_cpu, ct_device dev) {
  ct_tensor *x = ct_to(x_cpu, dev, NULL);
  ct_tensor *y = ct_sqrt(ct_add_scalar(ct_mul_scalar(x, 2), 1));
  return ct_to(y, ct_cpu(), NULL);
}

/* The same chain with a round trip to the host after each operation. */
static ct_tensor *chain_round_trips(const ct_tensor *x_cpu, ct_device dev) {
  ct_tensor *t = ct_to(ct_mul_scalar(ct_to(x_cpu, dev, NULL), 2), ct_cpu(), NULL);
  t = ct_to(ct_add_scalar(ct_to(t, dev, NULL), 1), ct_cpu(), NULL);
  return ct_to(ct_sqrt(ct_to(t, dev, NULL)), ct_cpu(), NULL);
}

/* Largest |r[i] - sqrt(2 x[i] + 1)| over n f32 elements. */
static double chain_error(const ct_tensor *x, const ct_tensor *r, int64_t n) {
  const float *xs = (const float *)ct_data_ptr(x), *rs = (const float *)ct_data_ptr(r);
  double worst = 0;
  for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(rs[i] - sqrtf(xs[i] * 2.0f + 1.0f)));
  return worst;
}

int main(int argc, char **argv) {
  ct_device dev = ct_default_device();
  int64_t n = (int64_t)1 << 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &dev) != CT_OK) return fail("--device");
    } else if (strcmp(argv[i], "--disable-cuda") == 0) {
      dev = ct_cpu();
    } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
      n = atoll(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda:N] [--disable-cuda] [--n N]\n", argv[0]);
      return 2;
    }
  }
  if (n < 1) n = 1;
  printf("device: %s%s\n", ct_device_name(dev),
         dev.type == CT_DEVICE_CPU ? " (no GPU selected: the copies are no-ops)" : "");

  ct_scope_begin();
  /* The documents' three-element examples. */
  const float v[3] = {1.0f, 2.0f, 3.0f};
  ct_tensor *cpu_tensor = ct_from_data(v, CT_SHAPE(3), NULL);
  ct_tensor *gpu_result = ct_mul_scalar(ct_to(cpu_tensor, dev, NULL), 2);
  ct_tensor *cpu_result = ct_to(gpu_result, ct_cpu(), NULL);
  if (!cpu_result) return fail("x * 2");
  printf("x * 2 computed on %s, back on %s:\n", ct_device_name(ct_device_of(gpu_result)),
         ct_device_name(ct_device_of(cpu_result)));
  ct_print(cpu_result);
  ct_tensor *chained = chain_on_device(cpu_tensor, dev);
  if (!chained) return fail("sqrt(x * 2 + 1)");
  printf("sqrt(x * 2 + 1), one copy back:\n");
  ct_print(chained);
  double err = chain_error(cpu_tensor, chained, 3);

  /* The chain on n elements, both ways; the first run of each warms up. */
  ct_manual_seed(0);
  ct_tensor *x = ct_rand(&n, 1, NULL);
  double ms[2] = {0, 0};
  for (int way = 0; way < 2; way++) {
    for (int rep = 0; rep < 2; rep++) {
      ct_scope_begin();
      double t0 = now_ms();
      ct_tensor *r = way == 0 ? chain_on_device(x, dev) : chain_round_trips(x, dev);
      ms[way] = now_ms() - t0; /* the copy back synchronizes: the time is complete */
      if (!r) return fail(way == 0 ? "chain on the device" : "chain with round trips");
      err = fmax(err, chain_error(x, r, n));
      ct_scope_end();
    }
  }
  printf(
      "sqrt(x * 2 + 1) on %lld elements: %.3f ms with one copy back, %.3f ms with a round "
      "trip per operation\n",
      (long long)n, ms[0], ms[1]);
  printf("largest error against the host: %g\n", err);
  ct_scope_end();
  return err <= 1e-6 ? 0 : 1;
}
