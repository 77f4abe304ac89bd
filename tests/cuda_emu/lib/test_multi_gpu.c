/* Several GPUs (the emulator's two): a process that works on GPU 1 makes no
 * context on GPU 0, its data loader's threads included (they pin batches on
 * GPU 1's context), and every entry point makes its tensors' device current
 * itself, whatever device the application left current on the thread (the
 * emulated runtime stops the process when a launch goes to a stream of
 * another device than the current one).
 *
 * Its own process: the first check needs a runtime no one has used yet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <ctensor.h>

#include "emu_lib.h"

static int failures = 0;
#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: expected %s (%s)\n", __FILE__, __LINE__, #cond, \
              ct_last_error_message());                                       \
      failures++;                                                             \
    }                                                                         \
  } while (0)

static const ct_device gpu1 = {CT_DEVICE_CUDA, 1};

/* The sum of t's elements (nan on error, recorded as a failure). */
static double sum_of(const ct_tensor *t) {
  double v = NAN;
  ct_tensor *s = ct_sum(t, NULL);
  EXPECT(s && ct_item(s, &v) == CT_OK);
  ct_free(s);
  return v;
}

/* An epoch of a loader with workers delivering pinned batches to GPU 1. */
static void loader_on_gpu1(void) {
  ct_manual_seed(2);
  ct_tensor *x = ct_randn(CT_SHAPE(64, 8), NULL);
  ct_tensor *y = ct_randint(0, 10, CT_SHAPE(64), &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *ds = ct_tensor_dataset_new(x, y);
  double want = sum_of(x), got = 0;
  const ct_dataloader_opts gpu = {
      .batch_size = 8, .shuffle = true, .num_workers = 2, .device = gpu1};
  const ct_dataloader_opts pinned = {.batch_size = 8, .num_workers = 2, .pin_memory = true};
  for (int k = 0; k < 2; k++) { /* delivered to GPU 1; pinned on the CPU for a caller on GPU 1 */
    ct_dataloader *dl = ct_dataloader_new(ds, k == 0 ? &gpu : &pinned);
    EXPECT(dl != NULL);
    ct_batch b;
    got = 0;
    while (dl && ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
      EXPECT(ct_device_equal(ct_device_of(b.inputs), k == 0 ? gpu1 : ct_cpu()));
      EXPECT(k == 1 ? ct_is_pinned(b.inputs) : true);
      got += sum_of(b.inputs);
      ct_batch_release(&b);
    }
    EXPECT(fabs(got - want) < 1e-3);
    ct_dataloader_free(dl);
  }
  ct_dataset_free(ds);
  ct_free(x);
  ct_free(y);
}

/* Every op on GPU 1 after the application made GPU 0 current. */
static void entry_points_switch_devices(void) {
  ct_tensor_opts o = {.device = gpu1};
  ct_manual_seed(3);
#define ON_GPU0() EXPECT(cudaSetDevice(0) == cudaSuccess)
  ON_GPU0();
  ct_tensor *a = ct_randn(CT_SHAPE(16, 16), &o);
  ON_GPU0();
  ct_tensor *aa = ct_matmul(a, a);
  ON_GPU0();
  ct_tensor *c = ct_add(aa, a);
  ON_GPU0();
  ct_tensor *w = ct_randn(CT_SHAPE(2, 1, 3, 3), &o);
  ON_GPU0();
  ct_tensor *a4 = ct_reshape(a, CT_SHAPE(1, 1, 16, 16));
  ON_GPU0();
  ct_tensor *conv = ct_conv2d(a4, w, NULL, NULL);
  EXPECT(c && conv);
  ON_GPU0();
  EXPECT(!isnan(sum_of(conv)));
  /* streams, events, record_stream and the free that records its event */
  ON_GPU0();
  ct_stream *side = ct_stream_new(gpu1);
  ct_event *e = ct_event_new(gpu1, false);
  EXPECT(side && e);
  ON_GPU0();
  EXPECT(ct_stream_set_current(gpu1, side) == CT_OK);
  ct_tensor *d = ct_mul_scalar(c, 2.0);
  EXPECT(ct_stream_set_current(gpu1, NULL) == CT_OK);
  ON_GPU0();
  EXPECT(ct_record_stream(c, side) == CT_OK);
  ON_GPU0();
  EXPECT(ct_event_record(e, side) == CT_OK);
  ON_GPU0();
  EXPECT(ct_stream_wait_event(NULL, e) == CT_OK);
  ON_GPU0();
  ct_free(c);
  ON_GPU0();
  EXPECT(ct_event_synchronize(e) == CT_OK);
  ON_GPU0();
  EXPECT(ct_stream_synchronize(side) == CT_OK);
  /* pinned memory and a non-blocking upload, freed while queued */
  ct_tensor *h = ct_ones(CT_SHAPE(1000), &(ct_tensor_opts){.pin_memory = true});
  ON_GPU0();
  ct_tensor *up = ct_to(h, gpu1, &(ct_to_opts){.non_blocking = true});
  ct_free(h);
  ON_GPU0();
  EXPECT(sum_of(up) == 1000);
  /* an optimizer step and the gradient scaler's unscale */
  ct_tensor *p = ct_requires_grad_(ct_ones(CT_SHAPE(10), &o), true);
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
  ct_grad_scaler *gs = ct_grad_scaler_new(NULL);
  EXPECT(opt && gs);
  ON_GPU0();
  ct_tensor *pp = ct_mul(p, p), *loss = ct_sum(pp, NULL), *scaled = ct_grad_scaler_scale(gs, loss);
  EXPECT(ct_backward(scaled, NULL, NULL) == CT_OK);
  ct_free(scaled);
  ct_free(loss);
  ct_free(pp);
  ON_GPU0();
  EXPECT(ct_grad_scaler_step(gs, opt, NULL) == CT_OK);
  ON_GPU0();
  EXPECT(fabs(sum_of(p) - 8.0) < 1e-5);
  ct_grad_scaler_free(gs);
  ct_optimizer_free(opt);
  ct_free(p);
  ON_GPU0();
  EXPECT(ct_synchronize(gpu1) == CT_OK);
  ct_memory_stats ms;
  ON_GPU0();
  EXPECT(ct_memory_stats_get(gpu1, &ms) == CT_OK && ms.allocated > 0);
  ct_free(a);
  ct_free(aa);
  ct_free(a4);
  ct_free(w);
  ct_free(conv);
  ct_free(d);
  ct_free(up);
  ct_event_free(e);
  ON_GPU0();
  ct_stream_free(side);
  ON_GPU0();
  EXPECT(ct_empty_cache(gpu1) == CT_OK);
#undef ON_GPU0
}

int main(void) {
  if (ct_cuda_device_count() < 2) {
    printf("needs two emulated GPUs (CT_EMU_DEVICES=2)\n");
    return 77;
  }
  /* a rank of a multi-GPU job: its device set once, as ct_dist_init does */
  EXPECT(ct_cuda_set_device(1) == CT_OK);
  loader_on_gpu1();
  EXPECT(ct_synchronize(gpu1) == CT_OK);
  EXPECT(emu_lib_has_context(1));
  EXPECT(!emu_lib_has_context(0)); /* no thread of this process touched GPU 0 */
  entry_points_switch_devices();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  printf("multi-GPU (emulated): %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
