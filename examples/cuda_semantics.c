/* CUDA semantics: devices, the current device, asynchronous execution and
 * timing with events. The reference documents' code, in C:
 *
 *   cuda0 = torch.device('cuda:0')
 *   x = torch.tensor([1., 2.], device=cuda0)      # x.device is cuda:0
 *   y = torch.tensor([1., 2.]).cuda()             # to the current device
 *   with torch.cuda.device(1):                    # when a second GPU exists
 *       a = torch.tensor([1., 2.], device='cuda') # on cuda:1
 *       z = x + y                                 # still on cuda:0
 *   x + torch.tensor([1., 2.])                    # mixed devices: an error
 *
 *   start = torch.cuda.Event(enable_timing=True); end = ...(enable_timing=True)
 *   start.record(); <work>; end.record(); torch.cuda.synchronize()
 *   elapsed_ms = start.elapsed_time(end)
 *
 * Device-agnostic: --device, --disable-cuda or CT_DEVICE pick the device, and
 * on a machine without a GPU everything runs on the CPU (events then record
 * host time, and the device parts that need a GPU say they are skipped).
 *
 * Usage: cuda_semantics [--device cpu|cuda:N] [--disable-cuda] [--n N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "cuda_semantics: %s: %s\n", what, ct_last_error_message());
  return 1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Tensors on devices and the current device. */
static int show_devices(ct_device dev) {
  const float v[2] = {1.0f, 2.0f};
  ct_tensor_opts opts = {.device = dev};
  ct_tensor *x = ct_from_data(v, CT_SHAPE(2), &opts);
  ct_tensor *y = ct_to(ct_from_data(v, CT_SHAPE(2), NULL), dev, NULL);
  ct_tensor *z = ct_add(x, y);
  if (!z) return fail("x + y");
  printf("x on %s, y on %s, z = x + y on %s\n", ct_device_name(ct_device_of(x)),
         ct_device_name(ct_device_of(y)), ct_device_name(ct_device_of(z)));
  if (ct_cuda_device_count() > 1 && dev.type == CT_DEVICE_CUDA) {
    int previous = ct_cuda_current_device();
    ct_device cuda;
    if (ct_cuda_set_device(1) != CT_OK || ct_device_parse("cuda", &cuda) != CT_OK)
      return fail("selecting cuda:1");
    ct_tensor_opts opts2 = {.device = cuda};
    ct_tensor *a = ct_from_data(v, CT_SHAPE(2), &opts2);
    ct_tensor *z2 = ct_add(x, y); /* its operands' device, not the current one */
    if (!a || !z2) return fail("work under cuda:1");
    printf("with cuda:1 current: a on %s, x + y still on %s\n", ct_device_name(ct_device_of(a)),
           ct_device_name(ct_device_of(z2)));
    ct_cuda_set_device(previous);
  } else {
    printf("one device visible: the cuda:1 part of the example is skipped\n");
  }
  if (dev.type == CT_DEVICE_CUDA) {
    ct_tensor *host = ct_from_data(v, CT_SHAPE(2), NULL);
    if (ct_add(x, host) != NULL) {
      fprintf(stderr, "cuda_semantics: mixing devices was not refused\n");
      return 1;
    }
    printf("x + a CPU tensor is refused: %s\n", ct_last_error_message());
    ct_clear_error();
  }
  return 0;
}

/* Enqueueing returns at once; events time the device's work. */
static int time_with_events(ct_device dev, int64_t n) {
  ct_manual_seed(0);
  ct_tensor_opts opts3 = {.device = dev};
  ct_tensor *a = ct_randn(CT_SHAPE(n, n), &opts3);
  ct_tensor_opts opts4 = {.device = dev};
  ct_tensor *b = ct_randn(CT_SHAPE(n, n), &opts4);
  ct_event *start = ct_event_new(dev, true), *end = ct_event_new(dev, true);
  if (!a || !b || !start || !end) return fail("setting up");
  ct_tensor *c = ct_matmul(a, b); /* warm-up: library handles, kernels */
  if (!c || ct_synchronize(dev) != CT_OK) return fail("warm-up");

  const int reps = 10;
  double t0 = now_ms();
  ct_event_record(start, NULL);
  for (int i = 0; i < reps; i++) {
    ct_scope_begin();
    if (!ct_matmul(a, b)) return fail("matmul");
    ct_scope_end();
  }
  ct_event_record(end, NULL);
  double enqueue_ms = now_ms() - t0; /* on a GPU: the host returned before the work ran */
  float device_ms = 0;
  if (ct_event_elapsed_ms(start, end, &device_ms) != CT_OK) return fail("elapsed time");
  double total_ms = now_ms() - t0; /* elapsed_ms synchronized on `end` */
  double gflops = 2.0 * (double)n * (double)n * (double)n * reps / (device_ms * 1e-3) / 1e9;
  printf(
      "%d matmuls of %lldx%lld on %s: host returned after %.3f ms, the events measured "
      "%.3f ms (%.1f GFLOP/s), done after %.3f ms\n",
      reps, (long long)n, (long long)n, ct_device_name(dev), enqueue_ms, device_ms, gflops,
      total_ms);
  ct_event_free(start);
  ct_event_free(end);
  return 0;
}

int main(int argc, char **argv) {
  ct_device dev = ct_default_device();
  int64_t n = 0;
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
  if (n < 1) n = dev.type == CT_DEVICE_CUDA ? 4096 : 256;
  printf("CUDA available: %s, %d GPU(s); using %s\n", ct_cuda_is_available() ? "yes" : "no",
         ct_cuda_device_count(), ct_device_name(dev));
  ct_scope_begin();
  int rc = show_devices(dev);
  if (rc == 0) rc = time_with_events(dev, n);
  ct_scope_end();
  return rc;
}
