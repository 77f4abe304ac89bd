/* The cuDNN plan cache of src/backend/cuda/conv.cu on the emulated GPU: the
 * first convolution of a problem queries the heuristics, later ones reuse
 * its plan (no descriptor, heuristic or workspace-size call, the same
 * algorithm); another shape, dtype or pointer alignment is another plan; a
 * candidate whose workspace does not fit is passed over without emptying the
 * allocator's cache, on every call. cudnn_emu.cpp counts the calls and
 * names the algorithm that ran (emu_cudnn_last_algo).
 *
 * Run in a 64 MiB emulated device (ctest), small enough to fill. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/cuda/cuda_kernels.h"
#include "ct_test.h"
#include "emu_calls.h"
#include "emu_lib.h"

#define MiB ((size_t)1 << 20)
static const ct_device dev0 = {CT_DEVICE_CUDA, 0};

/* cudnnConvolutionFwdAlgo_t values of the emulated list (cudnn.h) */
enum { FWD_IMPLICIT_GEMM = 0, FWD_IMPLICIT_PRECOMP_GEMM = 1, FWD_GEMM = 2 };

static long heuristic_queries(void) {
  return emu_calls("cudnnGetConvolutionForwardAlgorithm_v7") +
         emu_calls("cudnnGetConvolutionBackwardDataAlgorithm_v7") +
         emu_calls("cudnnGetConvolutionBackwardFilterAlgorithm_v7");
}
static long setup_calls(void) {
  return emu_calls_prefixed("cudnnCreate") + emu_calls_prefixed("cudnnSet") -
         emu_calls("cudnnSetStream") + emu_calls_prefixed("cudnnGetConvolution") +
         emu_calls_prefixed("cudnnDestroy");
}

static ct_tensor *randn_on(ct_device d, const int64_t *shape, int ndim) {
  return ct_randn(shape, ndim, &(ct_tensor_opts){.device = d});
}

/* conv2d on the GPU equals the CPU's (f32, FMA math: exact products, sums in
 * another order). */
static void check_against_cpu(const ct_tensor *y, const ct_tensor *x, const ct_tensor *w,
                              const ct_conv2d_opts *o) {
  ct_tensor *ref = ct_conv2d(ct_to(x, ct_cpu(), NULL), ct_to(w, ct_cpu(), NULL), NULL, o);
  ct_tensor *got = ct_to(y, ct_cpu(), NULL);
  CHECK_OK(ref && got);
  if (!ref || !got) return;
  double err = -1;
  CHECK_STATUS_OK(ct_item(ct_max(ct_abs(ct_sub(ref, got)), NULL), &err));
  CHECK_MSG(err >= 0 && err < 1e-4, "conv2d differs from the CPU's by %g", err);
}

CT_TEST(the_second_identical_conv_reuses_its_plan) {
  NEED_GPU();
  ct_manual_seed(3);
  ct_tensor *x = randn_on(dev0, CT_SHAPE(2, 3, 12, 12)), *w = randn_on(dev0, CT_SHAPE(4, 3, 3, 3));
  CHECK_OK(x && w);
  uint64_t h0, m0, h1, m1;
  int n0, n1;
  ct__cuda_conv_plan_stats(&h0, &m0, &n0);
  emu_calls_reset();
  ct_tensor *y1 = ct_conv2d(x, w, NULL, NULL);
  CHECK_OK(y1);
  CHECK_MSG(heuristic_queries() == 1, "first call: %ld heuristic queries", heuristic_queries());
  int algo = emu_cudnn_last_algo(0);
  emu_calls_reset();
  ct_tensor *y2 = ct_conv2d(x, w, NULL, NULL);
  CHECK_OK(y2);
  CHECK_MSG(heuristic_queries() == 0 && setup_calls() == 0,
            "second call: %ld heuristic queries, %ld descriptor/workspace calls",
            heuristic_queries(), setup_calls());
  CHECK(emu_calls("cudnnConvolutionForward") == 1);
  CHECK_MSG(emu_cudnn_last_algo(0) == algo, "algorithm %d, then %d", algo, emu_cudnn_last_algo(0));
  ct__cuda_conv_plan_stats(&h1, &m1, &n1);
  CHECK_MSG(h1 - h0 == 1 && m1 - m0 == 1 && n1 - n0 == 1,
            "plan cache: %llu hits, %llu misses, %d plans", (unsigned long long)(h1 - h0),
            (unsigned long long)(m1 - m0), n1 - n0);
  check_against_cpu(y2, x, w, NULL);

  /* another shape (a batch of 3): another plan */
  ct_tensor *x3 = randn_on(dev0, CT_SHAPE(3, 3, 12, 12));
  emu_calls_reset();
  CHECK_OK(ct_conv2d(x3, w, NULL, NULL));
  CHECK(heuristic_queries() == 1);
  /* and padding */
  emu_calls_reset();
  CHECK_OK(ct_conv2d(x, w, NULL, &(ct_conv2d_opts){.padding = {1, 1}}));
  CHECK(heuristic_queries() == 1);
  /* the first shape again: its plan */
  emu_calls_reset();
  CHECK_OK(ct_conv2d(x, w, NULL, NULL));
  CHECK(heuristic_queries() == 0);
}

CT_TEST(backward_plans_are_kept_too) {
  NEED_GPU();
  ct_manual_seed(4);
  ct_tensor *x = randn_on(dev0, CT_SHAPE(2, 3, 10, 10)), *w = randn_on(dev0, CT_SHAPE(5, 3, 3, 3));
  CHECK_OK(x && w && ct_requires_grad_(x, true) && ct_requires_grad_(w, true));
  long queries[3];
  for (int round = 0; round < 3; round++) {
    ct_scope_begin();
    emu_calls_reset();
    ct_tensor *loss = ct_sum(ct_conv2d(x, w, NULL, &(ct_conv2d_opts){.padding = {1, 1}}), NULL);
    CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
    queries[round] = heuristic_queries();
    CHECK(emu_calls("cudnnConvolutionBackwardData") == 1 &&
          emu_calls("cudnnConvolutionBackwardFilter") == 1);
    ct_scope_end();
  }
  CHECK_MSG(queries[0] == 3 && queries[1] == 0 && queries[2] == 0,
            "heuristic queries per step: %ld, %ld, %ld", queries[0], queries[1], queries[2]);
}

/* With a dilation, the emulated forward list's first working candidate is
 * GEMM, which needs 16-byte aligned pointers: an input 4 bytes off is
 * another plan (IMPLICIT_GEMM), and alternating them queries nothing more. */
CT_TEST(pointer_alignment_is_part_of_the_plan) {
  NEED_GPU();
  ct_manual_seed(5);
  const ct_conv2d_opts o = {.dilation = {2, 2}};
  ct_tensor *flat = randn_on(dev0, CT_SHAPE(1 + 2 * 3 * 9 * 9));
  ct_tensor *aligned = ct_reshape(ct_slice(flat, 0, 0, 2 * 3 * 9 * 9, 1), CT_SHAPE(2, 3, 9, 9));
  ct_tensor *off = ct_reshape(ct_slice(flat, 0, 1, 1 + 2 * 3 * 9 * 9, 1), CT_SHAPE(2, 3, 9, 9));
  ct_tensor *w = randn_on(dev0, CT_SHAPE(4, 3, 3, 3));
  CHECK_OK(aligned && off && w);
  for (int round = 0; round < 3; round++) {
    emu_calls_reset();
    ct_tensor *ya = ct_conv2d(aligned, w, NULL, &o);
    int algo_a = emu_cudnn_last_algo(0);
    ct_tensor *yo = ct_conv2d(off, w, NULL, &o);
    int algo_o = emu_cudnn_last_algo(0);
    CHECK_OK(ya && yo);
    CHECK_MSG(algo_a == FWD_GEMM && algo_o == FWD_IMPLICIT_GEMM, "round %d: algorithms %d and %d",
              round, algo_a, algo_o);
    CHECK_MSG(heuristic_queries() == (round == 0 ? 2 : 0), "round %d: %ld heuristic queries", round,
              heuristic_queries());
    if (round == 2) {
      check_against_cpu(ya, aligned, w, &o);
      check_against_cpu(yo, off, w, &o);
    }
  }
}

/* Fills the device until a 1 MiB tensor no longer fits; the hogs go to *out. */
static int hog_device(ct_tensor **out, int max) {
  int n = 0;
  const size_t sizes[] = {20 * MiB, 2 * MiB, MiB};
  for (int k = 0; k < 3; k++)
    for (;;) {
      if (n == max) return n;
      ct_tensor *t =
          ct_empty(CT_SHAPE((int64_t)sizes[k]), &(ct_tensor_opts){.dtype = CT_U8, .device = dev0});
      if (!t) break;
      out[n++] = t;
    }
  ct_clear_error();
  return n;
}

CT_TEST(a_workspace_that_does_not_fit_never_empties_the_cache) {
  NEED_GPU();
  ct_cuda_device_properties p;
  CHECK_STATUS_OK(ct_cuda_get_device_properties(0, &p));
  if (p.total_memory > 128 * MiB) {
    ct_test_skip("needs a small emulated device (CT_EMU_DEVICE_MEMORY=64 MiB)");
    return;
  }
  ct_manual_seed(6);
  /* GEMM's workspace (the columns: 16 x 3 x 3 x 60 x 60 floats, ~2 MiB) */
  const ct_conv2d_opts o = {.dilation = {2, 2}};
  ct_tensor *x = randn_on(dev0, CT_SHAPE(1, 16, 64, 64)),
            *w = randn_on(dev0, CT_SHAPE(8, 16, 3, 3));
  ct_tensor *y = ct_empty(CT_SHAPE(1, 8, 60, 60), &(ct_tensor_opts){.device = dev0});
  CHECK_OK(x && w && y);
  ct_free(y); /* the output's block, cached for the calls below */
  CHECK_STATUS_OK(ct_synchronize(dev0));
  ct_tensor *hogs[64];
  int nh = hog_device(hogs, 64);
  ct_memory_stats s0;
  CHECK_STATUS_OK(ct_memory_stats_get(dev0, &s0));
  for (int round = 0; round < 3; round++) {
    emu_calls_reset();
    ct_clear_error();
    ct_tensor *out = ct_conv2d(x, w, NULL, &o);
    CHECK_OK(out);
    CHECK_MSG(ct_last_error() == CT_OK, "round %d left an error: %s", round,
              ct_last_error_message());
    CHECK_MSG(emu_cudnn_last_algo(0) == FWD_IMPLICIT_GEMM, "round %d ran algorithm %d", round,
              emu_cudnn_last_algo(0));
    CHECK_MSG(heuristic_queries() == (round == 0), "round %d: %ld heuristic queries", round,
              heuristic_queries());
    ct_memory_stats s;
    CHECK_STATUS_OK(ct_memory_stats_get(dev0, &s));
    CHECK_MSG(s.num_cache_flushes == s0.num_cache_flushes && s.reserved == s0.reserved,
              "round %d emptied the cache (%llu flushes, reserved %zu -> %zu)", round,
              (unsigned long long)(s.num_cache_flushes - s0.num_cache_flushes), s0.reserved,
              s.reserved);
    if (round == 2) check_against_cpu(out, x, w, &o);
    ct_free(out);
  }
  while (nh > 0) ct_free(hogs[--nh]);
}
