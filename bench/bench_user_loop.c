/* A training epoch written as a library user writes it: the Fashion-MNIST
 * loader with worker threads, an MLP, Adam, no environment variable and no
 * thread setting. bench/user_loop.sh times it beside `ctensor train` on the
 * same model, data and optimizer (the program's own loop), quiet and beside a
 * competing busy process: the library's CPU threads must not make a user's
 * program slower than the program (docs/benchmarks.md, "A user's loop").
 *
 *   bench_user_loop [--data-dir DIR] [--epochs N (1)] [--workers N (2)]
 *
 * Prints one JSON line per epoch: {"epoch": e, "seconds": s, "loss": l,
 * "data_wait_seconds": w}, "seconds" measured as the program's metrics file
 * measures its epoch (training only, no evaluation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ctensor.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char *what) {
  fprintf(stderr, "bench_user_loop: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* The program's `--model mlp`: flatten, fc1 (784 -> 128), relu, fc2 (128 -> 10). */
static ct_module *mlp_new(void) {
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_flatten_new(1, -1));
  ct_sequential_add(net, ct_linear_new(28 * 28, 128, true, NULL));
  ct_sequential_add(net, ct_relu_new());
  if (!ct_sequential_add(net, ct_linear_new(128, 10, true, NULL))) return ct_module_free(net), NULL;
  return net;
}

int main(int argc, char **argv) {
  const char *dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 1, workers = 2;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      epochs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 0) {
      workers = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--data-dir DIR] [--epochs N] [--workers N]\n", argv[0]);
      return 2;
    }
  }

  ct_manual_seed(0);
  ct_dataset *train = ct_mnist_open(dir, true, NULL);
  if (!train) return fail("opening the training set");
  ct_dataloader *dl = ct_dataloader_new(
      train, &(ct_dataloader_opts){.batch_size = 64, .shuffle = true, .num_workers = workers});
  ct_module *net = mlp_new();
  ct_tensor *params[8];
  int n = net ? ct_module_parameters(net, params, NULL, 8) : 0;
  ct_adam_opts adam = ct_adam_defaults();
  adam.lr = 0.002; /* the program's default for the MLP */
  ct_optimizer *opt = n > 0 ? ct_adam_new(params, n, &adam) : NULL;
  int rc = 0;
  if (!dl || !opt) rc = fail("setting up");

  for (int epoch = 1; epoch <= epochs && !rc; epoch++) {
    double start = now(), loss_sum = 0, wait = 0;
    int64_t samples = 0;
    if (ct_dataloader_start_epoch(dl, epoch, 0) != CT_OK) rc = fail("starting the epoch");
    ct_batch b;
    while (!rc) {
      if (ct_dataloader_next(dl, &b) != CT_OK) {
        rc = fail("loading a batch");
        break;
      }
      if (!b.inputs) break; /* the end of the epoch */
      wait += b.wait_seconds;
      ct_scope_begin();
      ct_optimizer_zero_grad(opt);
      ct_tensor *loss = ct_cross_entropy(ct_module_forward(net, b.inputs), b.targets, NULL);
      double l = 0;
      if (!loss || ct_backward(loss, NULL, NULL) != CT_OK || ct_optimizer_step(opt) != CT_OK ||
          ct_item(loss, &l) != CT_OK)
        rc = fail("a training step");
      int64_t bs = ct_shape(b.targets)[0];
      loss_sum += l * (double)bs;
      samples += bs;
      ct_scope_end();
      ct_batch_release(&b);
    }
    if (!rc)
      printf("{\"epoch\": %d, \"seconds\": %.6f, \"loss\": %.6f, \"data_wait_seconds\": %.6f}\n",
             epoch, now() - start, loss_sum / (double)(samples ? samples : 1), wait);
  }
  ct_optimizer_free(opt);
  ct_module_free(net);
  ct_dataloader_free(dl);
  ct_dataset_free(train);
  return rc;
}
