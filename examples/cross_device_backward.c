/* Autograd across devices: a CPU leaf moved to the GPU, computed on there,
 * and its gradient delivered back on the CPU. The reference documents' code:
 *
 *   cpu_tensor = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
 *   gpu_tensor = torch.tensor([4.0, 5.0, 6.0], device='cuda', requires_grad=True)
 *   gpu_tensor2 = cpu_tensor.to('cuda')
 *   result = gpu_tensor + gpu_tensor2
 *   result.backward(torch.tensor([1.0, 1.0, 1.0], device='cuda'))
 *   print(cpu_tensor.grad)          # tensor([1., 1., 1.]), on the CPU
 *
 * and a second graph where the gradient depends on both tensors:
 *   loss = (gpu_tensor * gpu_tensor2.sqrt()).sum()
 *   d loss / d cpu_tensor = gpu_tensor / (2 sqrt(cpu_tensor))   (on the CPU)
 *
 * Without a GPU it runs CPU -> CPU (ct_to to the same device is the identity,
 * and gradients flow the same way) and says so.
 *
 * Usage: cross_device_backward [--device cpu|cuda:N] [--disable-cuda]
 * Exits 0 when both gradients are right and on the CPU, 1 otherwise, 2 on bad
 * arguments.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "cross_device_backward: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* Whether g is a CPU tensor holding want[0..2] (within 1e-6). */
static bool check_grad(const ct_tensor *g, const double *want) {
  float got[3];
  if (!g || !ct_device_equal(ct_device_of(g), ct_cpu()) || ct_numel(g) != 3 ||
      ct_copy_to_host(g, got, sizeof got) != CT_OK)
    return false;
  for (int i = 0; i < 3; i++)
    if (!(fabs(got[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])))) return false;
  return true;
}

int main(int argc, char **argv) {
  ct_device device = ct_default_device();
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &device) != CT_OK) {
        fprintf(stderr, "cross_device_backward: --device: %s\n", ct_last_error_message());
        return 2;
      }
    } else if (strcmp(argv[i], "--disable-cuda") == 0) {
      device = ct_cpu();
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda:N] [--disable-cuda]\n", argv[0]);
      return 2;
    }
  }
  if (device.type == CT_DEVICE_CPU)
    printf("no GPU in use (%s): running CPU -> CPU; the gradient path is the same\n",
           ct_cuda_is_available() ? "CPU chosen" : "none available");
  printf("leaf on cpu, computation on %s\n", ct_device_name(device));

  const float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, ones[3] = {1, 1, 1};
  ct_tensor_opts opts = {.requires_grad = true};
  ct_tensor *cpu_tensor = ct_from_data(a, CT_SHAPE(3), &opts);
  ct_tensor_opts opts2 = {.device = device, .requires_grad = true};
  ct_tensor *gpu_tensor =
      ct_from_data(b, CT_SHAPE(3), &opts2);
  if (!cpu_tensor || !gpu_tensor) return ct_free(cpu_tensor), ct_free(gpu_tensor), fail("creating the leaves");

  int rc = 0;
  /* 1. The seed's sum, with an explicit upstream gradient on the device. */
  ct_scope_begin();
  ct_tensor *gpu_tensor2 = ct_to(cpu_tensor, device, NULL);
  ct_tensor *result = ct_add(gpu_tensor, gpu_tensor2);
  ct_tensor_opts opts3 = {.device = device};
  ct_tensor *upstream = ct_from_data(ones, CT_SHAPE(3), &opts3);
  if (ct_backward(result, upstream, NULL) != CT_OK) rc = fail("backward of the sum");
  ct_scope_end();
  if (!rc) {
    printf("result = gpu_tensor + cpu_tensor.to(%s); cpu_tensor.grad:\n", ct_device_name(device));
    ct_print(ct_grad(cpu_tensor));
    if (!check_grad(ct_grad(cpu_tensor), (const double[]){1, 1, 1}))
      rc = 1, fprintf(stderr, "cross_device_backward: wrong gradient (want [1, 1, 1] on the CPU)\n");
  }

  /* 2. A product: the gradient depends on values from both devices. */
  if (!rc) {
    ct_set_grad(cpu_tensor, NULL);
    ct_scope_begin();
    ct_tensor *moved = ct_to(cpu_tensor, device, NULL);
    ct_tensor *loss = ct_sum(ct_mul(gpu_tensor, ct_sqrt(moved)), NULL);
    if (ct_backward(loss, NULL, NULL) != CT_OK) rc = fail("backward of the product");
    ct_scope_end();
  }
  if (!rc) {
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = b[i] / (2 * sqrt(a[i]));
    printf("loss = sum(gpu_tensor * sqrt(cpu_tensor.to(%s))); cpu_tensor.grad:\n", ct_device_name(device));
    ct_print(ct_grad(cpu_tensor));
    printf("expected gpu_tensor / (2 sqrt(cpu_tensor)) = [%.4f, %.4f, %.4f]\n", want[0], want[1], want[2]);
    if (!check_grad(ct_grad(cpu_tensor), want))
      rc = 1, fprintf(stderr, "cross_device_backward: wrong gradient for the product\n");
  }
  if (!rc) printf("ok: the gradients came back to the CPU leaf\n");
  ct_free(gpu_tensor);
  ct_free(cpu_tensor);
  return rc;
}
