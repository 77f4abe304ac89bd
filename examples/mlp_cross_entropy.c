/* A PyTorch-style custom module in C: the reference documents' SimpleNN,
 * trained with cross entropy and SGD.
 *
 *   class SimpleNN(nn.Module):
 *       def __init__(self):
 *           super(SimpleNN, self).__init__()
 *           self.fc1 = nn.Linear(784, 128)
 *           self.fc2 = nn.Linear(128, 10)
 *       def forward(self, x):
 *           x = torch.relu(self.fc1(x))
 *           x = self.fc2(x)
 *           return x
 *   model = SimpleNN().to(device)
 *   criterion = nn.CrossEntropyLoss()
 *   optimizer = optim.SGD(model.parameters(), lr=0.01)
 *   input_tensor = torch.randn(64, 784).to(device)
 *   target_tensor = torch.randint(0, 10, (64,)).to(device)
 *   optimizer.zero_grad(); output = model(input_tensor)
 *   loss = criterion(output, target_tensor); loss.backward(); optimizer.step()
 *
 * In C the module is a struct (its children) plus a vtable (its forward); its
 * parameters get torch's state_dict names (fc1.weight, ...), so checkpoints
 * move between the two (see tests/test_golden.c).
 *
 * Usage: mlp_cross_entropy [--device cpu|cuda:N] [--disable-cuda] [--steps N] [--lr LR]
 * Exits 0 when the loss on the batch fell, 1 otherwise or on a library error,
 * 2 on bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int fail(const char *what) {
  fprintf(stderr, "mlp_cross_entropy: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* ---- class SimpleNN(nn.Module) ---- */
typedef struct simple_nn {
  ct_module *fc1, *fc2; /* borrowed: the module owns its children */
} simple_nn;

static ct_tensor *simple_nn_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  simple_nn *s = (simple_nn *)self;
  ct_tensor *h = ct_relu(ct_module_forward(s->fc1, x)); /* (N, 128) */
  return ct_module_forward(s->fc2, h);                  /* (N, 10) logits */
}

static const ct_module_vtable simple_nn_vtable = {
    .type_name = "SimpleNN", .forward = simple_nn_forward, .destroy = free};

/* __init__: registers the children; NULL (with the library's error) on failure. */
static ct_module *simple_nn_new(void) {
  simple_nn *s = (simple_nn *)calloc(1, sizeof *s);
  ct_module *m = s ? ct_module_new(&simple_nn_vtable, s) : NULL;
  if (!m) {
    free(s);
    return NULL;
  }
  s->fc1 = ct_module_register_module(m, "fc1", ct_linear_new(784, 128, true, NULL));
  s->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(128, 10, true, NULL));
  if (!s->fc1 || !s->fc2) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}

int main(int argc, char **argv) {
  ct_device device = ct_default_device();
  int steps = 20;
  double lr = 0.01;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &device) != CT_OK) {
        fprintf(stderr, "mlp_cross_entropy: --device: %s\n", ct_last_error_message());
        return 2;
      }
    } else if (strcmp(argv[i], "--disable-cuda") == 0) {
      device = ct_cpu();
    } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      steps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--lr") == 0 && i + 1 < argc && atof(argv[i + 1]) > 0) {
      lr = atof(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--device cpu|cuda:N] [--disable-cuda] [--steps N] [--lr LR]\n",
              argv[0]);
      return 2;
    }
  }
  ct_manual_seed(0);
  ct_module *model = simple_nn_new();
  if (!model || ct_module_to(model, device) != CT_OK) return ct_module_free(model), fail("model");

  ct_tensor *params[8];
  const char *names[8];
  int n = ct_module_parameters(model, params, names, 8);
  printf("SimpleNN on %s:", ct_device_name(device));
  for (int i = 0; i < n; i++) {
    char shape[64];
    printf(" %s %s", names[i], ct_shape_format(ct_shape(params[i]), ct_ndim(params[i]), shape, sizeof shape));
  }
  printf("\n");
  ct_sgd_opts sgd = {.lr = lr};
  ct_optimizer *optimizer = ct_sgd_new(params, n, &sgd);

  /* One batch, made on the CPU and moved, as the seed does. */
  ct_tensor *input_cpu = ct_randn(CT_SHAPE(64, 784), NULL);
  ct_tensor_opts opts = {.dtype = CT_I64};
  ct_tensor *target_cpu = ct_randint(0, 10, CT_SHAPE(64), &opts);
  ct_tensor *input = ct_to(input_cpu, device, NULL);
  ct_tensor *target = ct_to(target_cpu, device, NULL);
  ct_free(input_cpu);
  ct_free(target_cpu);
  if (!optimizer || !input || !target) return ct_module_free(model), fail("setup");

  double first = 0, loss_value = 0;
  int rc = 0;
  for (int step = 0; step < steps && !rc; step++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(optimizer);
    ct_tensor *output = ct_module_forward(model, input);
    ct_tensor *loss = ct_cross_entropy(output, target, NULL);
    if (ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(optimizer) != CT_OK ||
        ct_item(loss, &loss_value) != CT_OK)
      rc = fail("training step");
    else
      printf("step %2d  loss %.6f\n", step + 1, loss_value);
    if (step == 0) first = loss_value;
    ct_scope_end();
  }

  /* Evaluation without recording gradients (torch.no_grad()). */
  if (!rc) {
    ct_scope_begin();
    ct_no_grad_begin();
    ct_tensor *pred = ct_argmax(ct_module_forward(model, input), 1, false);
    ct_tensor *correct = ct_sum(ct_eq(pred, target), NULL);
    double right = 0;
    if (ct_item(correct, &right) != CT_OK) rc = fail("evaluation");
    else printf("accuracy on the batch after %d steps: %.0f/64\n", steps, right);
    ct_no_grad_end();
    ct_scope_end();
  }
  if (!rc && !(loss_value < first)) rc = 1, fprintf(stderr, "mlp_cross_entropy: the loss did not fall\n");
  ct_optimizer_free(optimizer);
  ct_free(input);
  ct_free(target);
  ct_module_free(model);
  return rc;
}
