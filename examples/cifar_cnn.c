/* The CIFAR-10 network of the reference documents, trained with SGD and
 * momentum on CIFAR-shaped batches; the batches are made on the CPU and moved
 * to the device in the loop, as a data loader's would be.
 *
 *   class SimpleCNN(torch.nn.Module):
 *       conv1 = Conv2d(3, 6, 5); pool = MaxPool2d(2, 2); conv2 = Conv2d(6, 16, 5)
 *       fc1 = Linear(16 * 5 * 5, 120); fc2 = Linear(120, 84); fc3 = Linear(84, 10)
 *       def forward(self, x):
 *           x = self.pool(F.relu(self.conv1(x)))
 *           x = self.pool(F.relu(self.conv2(x)))
 *           x = x.view(-1, 16 * 5 * 5)
 *           x = F.relu(self.fc1(x)); x = F.relu(self.fc2(x))
 *           return self.fc3(x)
 *   net = SimpleCNN().to(device)
 *   criterion = torch.nn.CrossEntropyLoss()
 *   optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
 *   for epoch in range(2):
 *       for i, (inputs, labels) in enumerate(trainloader):
 *           inputs, labels = inputs.to(device), labels.to(device)
 *           optimizer.zero_grad()
 *           loss = criterion(net(inputs), labels)
 *           loss.backward(); optimizer.step()
 *
 * Here the network is a ct_sequential (state_dict names "0.weight", ...); the
 * same network as a user module with torch's names (conv1.weight, ...) is in
 * tests/test_golden.c. No dataset is needed: the images are random and the
 * labels a fixed function of them, so there is something to learn.
 *
 * Usage: cifar_cnn [--device cpu|cuda:N] [--disable-cuda] [--epochs N (3)]
 *                  [--batches N (8)] [--lr LR (0.001)]
 * Exits 0 when the losses are finite and the last epoch's mean loss is below
 * the first's, 1 otherwise or on a library error, 2 on bad arguments.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

#define BATCH 64

static int fail(const char *what) {
  fprintf(stderr, "cifar_cnn: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* conv(3->6, 5x5) relu pool conv(6->16, 5x5) relu pool flatten
 * fc(400->120) relu fc(120->84) relu fc(84->10). Shapes for a (N, 3, 32, 32)
 * input: (N, 6, 28, 28) -> (N, 6, 14, 14) -> (N, 16, 10, 10) -> (N, 16, 5, 5)
 * -> (N, 400) -> (N, 120) -> (N, 84) -> (N, 10). */
static ct_module *cifar_net_new(void) {
  const ct_pool2d_opts pool = {.kernel = {2, 2}, .stride = {2, 2}};
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_conv2d_new(3, 6, 5, NULL, true, NULL));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_max_pool2d_new(&pool));
  ct_sequential_add(net, ct_conv2d_new(6, 16, 5, NULL, true, NULL));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_max_pool2d_new(&pool));
  ct_sequential_add(net, ct_flatten_new(1, -1));
  ct_sequential_add(net, ct_linear_new(16 * 5 * 5, 120, true, NULL));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(120, 84, true, NULL));
  ct_sequential_add(net, ct_relu_new());
  /* The last add's result tells whether every add (and the sequential) worked:
   * a failed add leaves an error and a NULL. */
  if (!ct_sequential_add(net, ct_linear_new(84, 10, true, NULL))) {
    ct_module_free(net);
    return NULL;
  }
  return net;
}

int main(int argc, char **argv) {
  ct_device device = ct_default_device();
  int epochs = 3, batches = 8;
  double lr = 0.001;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      if (ct_device_parse(argv[++i], &device) != CT_OK) {
        fprintf(stderr, "cifar_cnn: --device: %s\n", ct_last_error_message());
        return 2;
      }
    } else if (strcmp(argv[i], "--disable-cuda") == 0) {
      device = ct_cpu();
    } else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      epochs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      batches = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--lr") == 0 && i + 1 < argc && atof(argv[i + 1]) > 0) {
      lr = atof(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: %s [--device cpu|cuda:N] [--disable-cuda] [--epochs N] [--batches N] [--lr LR]\n",
              argv[0]);
      return 2;
    }
  }

  ct_manual_seed(0);
  ct_module *net = cifar_net_new();
  if (!net || ct_module_to(net, device) != CT_OK) return ct_module_free(net), fail("building the network");
  ct_tensor *params[16];
  int n = ct_module_parameters(net, params, NULL, 16);
  int64_t count = 0;
  for (int i = 0; i < n; i++) count += ct_numel(params[i]);
  printf("CIFAR-10 Net on %s: %d parameter tensors, %lld parameters; SGD lr %g momentum 0.9\n",
         ct_device_name(device), n, (long long)count, lr);
  ct_sgd_opts sgd = {.lr = lr, .momentum = 0.9};
  ct_optimizer *optimizer = ct_sgd_new(params, n, &sgd);
  if (!optimizer) return ct_module_free(net), fail("the optimizer");

  /* The "dataset", on the CPU: batches x (64, 3, 32, 32) images in [-1, 1]
   * (the tutorial's Normalize((0.5,)*3, (0.5,)*3) range) and labels: the
   * argmax of a fixed random projection of the mean-pooled image. */
  ct_tensor *images = ct_uniform(-1, 1, CT_SHAPE(batches, BATCH, 3, 32, 32), NULL);
  ct_tensor *proj = ct_randn(CT_SHAPE(3 * 4 * 4, 10), NULL);
  ct_scope_begin();
  ct_pool2d_opts pool = {.kernel = {8, 8}};
  ct_tensor *pooled = ct_avg_pool2d(ct_reshape(images, CT_SHAPE(batches * BATCH, 3, 32, 32)),
                                    &pool);
  ct_tensor *labels = ct_keep(ct_reshape(ct_argmax(ct_matmul(ct_flatten(pooled, 1, -1), proj), 1, false),
                                         CT_SHAPE(batches, BATCH)));
  ct_scope_end();
  ct_free(proj);
  if (!images || !labels) {
    ct_free(images), ct_free(labels), ct_optimizer_free(optimizer), ct_module_free(net);
    return fail("making the batches");
  }

  int rc = 0;
  double first_epoch = 0, epoch_loss = 0;
  for (int epoch = 0; epoch < epochs && !rc; epoch++) {
    double running = 0;
    for (int i = 0; i < batches && !rc; i++) {
      ct_scope_begin();
      /* inputs, labels = inputs.to(device), labels.to(device) */
      ct_tensor *inputs = ct_to(ct_select(images, 0, i), device, NULL);
      ct_tensor *targets = ct_to(ct_select(labels, 0, i), device, NULL);
      ct_optimizer_zero_grad(optimizer);
      ct_tensor *outputs = ct_module_forward(net, inputs);
      ct_tensor *loss = ct_cross_entropy(outputs, targets, NULL);
      double value = NAN;
      if (ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(optimizer) != CT_OK ||
          ct_item(loss, &value) != CT_OK)
        rc = fail("training step");
      else if (!isfinite(value))
        rc = 1, fprintf(stderr, "cifar_cnn: the loss is %g\n", value);
      running += value;
      ct_scope_end();
    }
    epoch_loss = running / batches;
    if (epoch == 0) first_epoch = epoch_loss;
    if (!rc) printf("[epoch %d] mean loss over %d mini-batches: %.6f\n", epoch + 1, batches, epoch_loss);
  }
  if (!rc) printf("Finished Training\n");
  if (!rc && epochs > 1 && !(epoch_loss < first_epoch))
    rc = 1, fprintf(stderr, "cifar_cnn: the loss did not fall\n");
  ct_free(labels);
  ct_free(images);
  ct_optimizer_free(optimizer);
  ct_module_free(net);
  return rc;
}
