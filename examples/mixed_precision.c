/* Mixed-precision training, as the reference documents write it in PyTorch:
 *
 *   scaler = GradScaler()
 *   with autocast():
 *       output = model(input_tensor)
 *       loss = criterion(output, target_tensor)
 *   scaler.scale(loss).backward()
 *   scaler.step(optimizer)
 *   scaler.update()
 *
 * The 784-128-10 network, SGD at lr 0.01, one random batch of 64. Inside the
 * autocast region the linear layers run in f16 on a GPU (bf16 on the CPU:
 * --dtype picks), the cross-entropy in f32; the weights stay f32. The scaler
 * multiplies the loss by 2^16 before backward so that small f16 gradients do
 * not flush to zero, divides the gradients back before the step, and skips a
 * step whose gradients overflowed (halving the scale).
 *
 * Usage: mixed_precision [--device cpu|cuda:N] [--dtype f16|bf16] [--steps N]
 * Exits 0 when the loss fell, 1 otherwise or on a library error, 2 on bad
 * arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "mixed_precision: %s: %s\n", what, ct_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  ct_device device = ct_default_device();
  int steps = 20;
  const char *dtype_name = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &device) != CT_OK) {
        fprintf(stderr, "mixed_precision: --device: %s\n", ct_last_error_message());
        return 2;
      }
    } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc &&
               (!strcmp(argv[i + 1], "f16") || !strcmp(argv[i + 1], "bf16"))) {
      dtype_name = argv[++i];
    } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      steps = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda:N] [--dtype f16|bf16] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  ct_device_type type = (ct_device_type)device.type;
  ct_dtype half = !dtype_name                  ? ct_autocast_dtype(type)
                  : !strcmp(dtype_name, "f16") ? CT_F16
                                               : CT_BF16;

  ct_manual_seed(0);
  ct_module *model = ct_sequential_new();
  ct_sequential_add(model, ct_linear_new(784, 128, true, NULL));
  ct_sequential_add(model, ct_relu_new());
  ct_sequential_add(model, ct_linear_new(128, 10, true, NULL));
  if (!model || ct_module_to(model, device) != CT_OK) return ct_module_free(model), fail("model");
  ct_tensor *params[4];
  int n = ct_module_parameters(model, params, NULL, 4);
  ct_sgd_opts sgd = {.lr = 0.01};
  ct_optimizer *optimizer = ct_sgd_new(params, n, &sgd);
  /* The loss scaler is for f16's narrow range; bf16 has f32's and needs none. */
  ct_grad_scaler_opts scaler_opts = {.disabled = half != CT_F16};
  ct_grad_scaler *scaler = ct_grad_scaler_new(&scaler_opts);

  ct_tensor *input_cpu = ct_randn(CT_SHAPE(64, 784), NULL);
  ct_tensor_opts opts = {.dtype = CT_I64};
  ct_tensor *target_cpu = ct_randint(0, 10, CT_SHAPE(64), &opts);
  ct_tensor *input = ct_to(input_cpu, device, NULL);
  ct_tensor *target = ct_to(target_cpu, device, NULL);
  ct_free(input_cpu);
  ct_free(target_cpu);
  int rc = 0;
  if (!optimizer || !scaler || !input || !target)
    rc = fail("setup");
  else
    printf("784-128-10 on %s, autocast to %s\n", ct_device_name(device), ct_dtype_name(half));

  double first = 0, loss_value = 0;
  for (int step = 0; step < steps && !rc; step++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(optimizer);
    ct_autocast_begin(type, half, true); /* with autocast(): */
    ct_tensor *output = ct_module_forward(model, input);
    ct_tensor *loss = ct_cross_entropy(output, target, NULL);
    ct_autocast_end();
    bool stepped = false;
    if (!output || !loss || ct_backward(ct_grad_scaler_scale(scaler, loss), NULL, NULL) != CT_OK ||
        ct_grad_scaler_step(scaler, optimizer, &stepped) != CT_OK ||
        ct_grad_scaler_update(scaler) != CT_OK || ct_item(loss, &loss_value) != CT_OK) {
      rc = fail("training step");
    } else {
      printf("step %2d  output %s  loss %s %.6f  scale %g%s\n", step + 1,
             ct_dtype_name(ct_dtype_of(output)), ct_dtype_name(ct_dtype_of(loss)), loss_value,
             ct_grad_scaler_get_scale(scaler),
             stepped ? "" : "  (step skipped: gradients overflowed)");
    }
    if (step == 0) first = loss_value;
    ct_scope_end();
  }
  if (!rc && !(loss_value < first))
    rc = 1, fprintf(stderr, "mixed_precision: the loss did not fall\n");
  ct_grad_scaler_free(scaler);
  ct_optimizer_free(optimizer);
  ct_free(input);
  ct_free(target);
  ct_module_free(model);
  return rc;
}
