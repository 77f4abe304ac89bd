/* The models of the training benchmarks (bench_train.c), also counted call by
 * call on the emulated GPU (tests/cuda_emu/lib/test_call_counts.c), on device
 * `device` with their default initialization:
 *   train_mlp_new          784-128-10: Linear, ReLU, Linear
 *   train_cnn_new          PyTorch's CIFAR tutorial Net, input (B, 3, 32, 32)
 *   train_fashion_cnn_new  the Fashion-MNIST CNN, input (B, 1, 28, 28) */
#ifndef CT_BENCH_TRAIN_MODELS_H
#define CT_BENCH_TRAIN_MODELS_H

#include <ctensor.h>

static inline ct_module *train_mlp_new(ct_device device) {
  const ct_module_opts mo = {.device = device};
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_linear_new(784, 128, true, &mo));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(128, 10, true, &mo));
  return net;
}

static inline ct_module *train_cnn_new(ct_device device) {
  const ct_pool2d_opts pool2 = {.kernel = {2, 2}};
  const ct_module_opts mo = {.device = device};
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_conv2d_new(3, 6, 5, NULL, true, &mo)); /* (B,6,28,28) */
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_max_pool2d_new(&pool2));                /* (B,6,14,14) */
  ct_sequential_add(net, ct_conv2d_new(6, 16, 5, NULL, true, &mo)); /* (B,16,10,10) */
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_max_pool2d_new(&pool2)); /* (B,16,5,5) */
  ct_sequential_add(net, ct_flatten_new(1, -1));     /* (B,400) */
  ct_sequential_add(net, ct_linear_new(16 * 5 * 5, 120, true, &mo));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(120, 84, true, &mo));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(84, 10, true, &mo));
  return net;
}

static inline ct_module *train_fashion_cnn_new(ct_device device) {
  const ct_pool2d_opts pool2 = {.kernel = {2, 2}};
  const ct_module_opts mo = {.device = device};
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_conv2d_new(1, 32, 3, NULL, true, &mo)); /* (B,32,26,26) */
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_max_pool2d_new(&pool2));                 /* (B,32,13,13) */
  ct_sequential_add(net, ct_conv2d_new(32, 64, 3, NULL, true, &mo)); /* (B,64,11,11) */
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_max_pool2d_new(&pool2)); /* (B,64,5,5) */
  ct_sequential_add(net, ct_flatten_new(1, -1));     /* (B,1600) */
  ct_sequential_add(net, ct_linear_new(64 * 5 * 5, 128, true, &mo));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(128, 10, true, &mo));
  return net;
}

#endif /* CT_BENCH_TRAIN_MODELS_H */
