/* CUDA-specific tests (not device-generic): transfers of every dtype, pinned
 * and non-blocking copies, streams and events, the device-mismatch error,
 * the caching allocator (statistics, reuse, empty_cache, out of memory),
 * Philox bit-identity with the CPU and CT_LAUNCH_BLOCKING. Every test skips
 * (exit 77 when all do) when no GPU is usable. */
#include <stdint.h>
#include <stdlib.h>

#include "ct_test.h"

#define NEED_GPU()                                         \
  do {                                                     \
    if (!ct_cuda_is_available()) {                         \
      ct_test_skip("no CUDA device available");            \
      return;                                              \
    }                                                      \
  } while (0)

static const ct_dtype all_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8,
                                      CT_U8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

CT_TEST(unavailable_without_gpu) {
  if (ct_cuda_is_available()) {
    ct_test_skip("a GPU is present");
    return;
  }
  /* no GPU: asking for one fails cleanly, never crashes */
  CHECK_ERR(ct_zeros(CT_SHAPE(2), &(ct_tensor_opts){.device = ct_cuda(0)}), CT_ERR_UNAVAILABLE);
  ct_device d;
  CHECK(ct_device_parse("cuda:0", &d) == CT_ERR_UNAVAILABLE);
  ct_clear_error();
  /* and the skip below still reports the GPU tests as skipped */
  ct_test_skip("no CUDA device available");
}

CT_TEST(roundtrip_every_dtype) {
  NEED_GPU();
  const int64_t n = 1000;
  double *vals = ct_test_random(n, -100, 100, 1);
  for (int k = 0; k < NDT; k++) {
    ct_dtype dt = all_dtypes[k];
    for (int lay = 0; lay < CT_LAYOUT_COUNT; lay++) {
      ct_tensor *cpu = ct_test_make(vals, CT_SHAPE(40, 25), dt, CT_LAYOUT_CONTIG);
      ct_tensor *src = ct_to(ct_test_make(vals, CT_SHAPE(40, 25), dt, (ct_test_layout)lay), ct_cpu(), NULL);
      ct_tensor *gpu = ct_to(src, ct_cuda(0), NULL);
      CHECK_OK(gpu);
      /* a non-contiguous view on the GPU, then back */
      ct_tensor *gt = ct_transpose(gpu, 0, 1);
      ct_tensor *back = ct_to(ct_contiguous(ct_transpose(gt, 0, 1)), ct_cpu(), NULL);
      CHECK_OK(back);
      if (back) {
        double *exp = ct_test_values(cpu);
        CHECK_CLOSE(back, exp, 0, 0);
        free(exp);
      }
      /* cast on the GPU against a cast on the CPU, for every target dtype */
      for (int j = 0; j < NDT; j++) {
        ct_tensor *c_gpu = ct_to(ct_cast(gt, all_dtypes[j]), ct_cpu(), NULL);
        ct_tensor *c_cpu = ct_cast(ct_transpose(cpu, 0, 1), all_dtypes[j]);
        CHECK_OK(c_gpu && c_cpu);
        if (c_gpu && c_cpu) {
          double *exp = ct_test_values(c_cpu);
          CHECK_CLOSE(c_gpu, exp, 0, 0);
          free(exp);
        }
      }
    }
  }
  free(vals);
}

CT_TEST(pinned_non_blocking) {
  NEED_GPU();
  ct_tensor *h = ct_arange(0, 1 << 20, 1, &(ct_tensor_opts){.dtype = CT_F32});
  ct_tensor *p = ct_pin_memory(h);
  CHECK_OK(p);
  CHECK(ct_is_pinned(p));
  ct_tensor *g = ct_to(p, ct_cuda(0), &(ct_to_opts){.non_blocking = true});
  CHECK_OK(g);
  ct_tensor *pinned_back = ct_pin_memory(ct_zeros_like(h, NULL));
  CHECK_OK(pinned_back);
  CHECK_OK(ct_copy_(pinned_back, g));
  CHECK_STATUS_OK(ct_synchronize(ct_cuda(0)));
  double *exp = ct_test_values(h);
  CHECK_CLOSE(pinned_back, exp, 0, 0);
  free(exp);
}

CT_TEST(events_time_a_kernel) {
  NEED_GPU();
  ct_device d = ct_cuda(0);
  ct_event *a = ct_event_new(d, true), *b = ct_event_new(d, true);
  CHECK_OK(a && b);
  ct_tensor *x = ct_ones(CT_SHAPE(2048, 2048), &(ct_tensor_opts){.device = d});
  CHECK_STATUS_OK(ct_event_record(a, NULL));
  for (int i = 0; i < 4; i++) x = ct_matmul(x, x);
  CHECK_STATUS_OK(ct_event_record(b, NULL));
  float ms = 0;
  CHECK_STATUS_OK(ct_event_elapsed_ms(a, b, &ms));
  CHECK_MSG(ms > 0, "elapsed %g ms", ms);
  ct_event_free(a);
  ct_event_free(b);
}

CT_TEST(streams_and_wait_event) {
  NEED_GPU();
  ct_device d = ct_cuda(0);
  ct_stream *s = ct_stream_new(d);
  ct_event *e = ct_event_new(d, false);
  CHECK_OK(s && e);
  ct_tensor *x = ct_full(CT_SHAPE(1 << 22), 2.0, &(ct_tensor_opts){.device = d});
  CHECK_STATUS_OK(ct_synchronize(d));
  CHECK_STATUS_OK(ct_stream_set_current(d, s));
  CHECK(ct_stream_current(d) == s);
  ct_tensor *y = ct_mul_scalar(x, 3.0); /* on s */
  CHECK_STATUS_OK(ct_event_record(e, s));
  CHECK_STATUS_OK(ct_stream_set_current(d, NULL));
  CHECK_STATUS_OK(ct_stream_wait_event(NULL, e)); /* default stream waits for s */
  ct_tensor *z = ct_add_scalar(y, 1.0);
  double v = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(z, NULL), &v));
  CHECK_MSG(v == 7.0 * (1 << 22), "sum %g", v);
  CHECK_STATUS_OK(ct_stream_synchronize(s));
  ct_event_free(e);
  ct_stream_free(s);
}

CT_TEST(device_mismatch) {
  NEED_GPU();
  ct_tensor *a = ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.device = ct_cuda(0)});
  ct_tensor *b = ct_ones(CT_SHAPE(3), NULL);
  CHECK_ERR_MSG(ct_add(a, b), CT_ERR_DEVICE, "add: expected all tensors on the same device, got cuda:0 and cpu");
}

CT_TEST(allocator_statistics) {
  NEED_GPU();
  ct_device d = ct_cuda(0);
  CHECK_STATUS_OK(ct_synchronize(d));
  ct_memory_stats s0, s1, s2, s3, s4;
  CHECK_STATUS_OK(ct_memory_stats_get(d, &s0));
  ct_tensor *x = ct_empty(CT_SHAPE(1 << 20), &(ct_tensor_opts){.device = d}); /* 4 MiB */
  CHECK_STATUS_OK(ct_memory_stats_get(d, &s1));
  CHECK(s1.allocated >= s0.allocated + (4u << 20));
  CHECK(s1.peak_allocated >= s1.allocated);
  ct_free(x);
  CHECK_STATUS_OK(ct_memory_stats_get(d, &s2));
  CHECK(s2.allocated == s0.allocated);
  CHECK(s2.reserved >= s1.allocated - s0.allocated); /* kept in the cache */
  x = ct_empty(CT_SHAPE(1 << 20), &(ct_tensor_opts){.device = d});
  CHECK_STATUS_OK(ct_memory_stats_get(d, &s3));
  CHECK(s3.num_cache_hits > s2.num_cache_hits);
  CHECK(s3.reserved == s2.reserved);
  ct_free(x);
  CHECK_STATUS_OK(ct_cuda_empty_cache());
  CHECK_STATUS_OK(ct_memory_stats_get(d, &s4));
  CHECK(s4.reserved < s3.reserved);
}

CT_TEST(out_of_memory) {
  NEED_GPU();
  ct_device d = ct_cuda(0);
  ct_tensor *keep = ct_full(CT_SHAPE(1000), 5.0, &(ct_tensor_opts){.device = d});
  CHECK_OK(keep);
  int64_t pib = (int64_t)1 << 48; /* 2^48 f32 = 1 PiB */
  CHECK_ERR_MSG(ct_empty(CT_SHAPE(pib), &(ct_tensor_opts){.device = d}), CT_ERR_OOM, "out of memory");
  double v = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(keep, NULL), &v));
  CHECK(v == 5000.0);
  ct_tensor *fresh = ct_ones(CT_SHAPE(1 << 20), &(ct_tensor_opts){.device = d});
  CHECK_OK(fresh);
  CHECK_STATUS_OK(ct_item(ct_sum(fresh, NULL), &v));
  CHECK(v == (double)(1 << 20));
}

/* The same seed gives the same bits on the CPU and the GPU. */
static void check_identical(ct_tensor *c, ct_tensor *g) {
  CHECK_OK(c && g);
  if (!c || !g) return;
  ct_tensor *gc = ct_to(g, ct_cpu(), NULL);
  CHECK_OK(gc);
  if (!gc) return;
  size_t n = (size_t)ct_numel(c) * ct_dtype_size(ct_dtype_of(c));
  CHECK_MSG(memcmp(ct_data_ptr(ct_contiguous(c)), ct_data_ptr(ct_contiguous(gc)), n) == 0,
            "CPU and GPU random streams differ (%s)", ct_dtype_name(ct_dtype_of(c)));
}

CT_TEST(random_bit_identical) {
  NEED_GPU();
  const ct_dtype fl[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
  for (int k = 0; k < 4; k++) {
    ct_tensor_opts oc = {.dtype = fl[k]}, og = {.dtype = fl[k], .device = ct_cuda(0)};
    ct_manual_seed(1234);
    ct_tensor *c1 = ct_rand(CT_SHAPE(1001), &oc), *c2 = ct_randn(CT_SHAPE(3, 337), &oc);
    ct_manual_seed(1234);
    ct_tensor *g1 = ct_rand(CT_SHAPE(1001), &og), *g2 = ct_randn(CT_SHAPE(3, 337), &og);
    check_identical(c1, g1);
    check_identical(c2, g2);
  }
  const ct_dtype it[] = {CT_I64, CT_I32, CT_U8};
  for (int k = 0; k < 3; k++) {
    ct_manual_seed(99);
    ct_tensor *c = ct_randint(-3, 200, CT_SHAPE(999), &(ct_tensor_opts){.dtype = it[k] == CT_U8 ? CT_I64 : it[k]});
    ct_manual_seed(99);
    ct_tensor *g = ct_randint(-3, 200, CT_SHAPE(999),
                              &(ct_tensor_opts){.dtype = it[k] == CT_U8 ? CT_I64 : it[k], .device = ct_cuda(0)});
    check_identical(c, g);
  }
  ct_manual_seed(7);
  ct_tensor *cw = ct_randint(0, (int64_t)1 << 40, CT_SHAPE(77), &(ct_tensor_opts){.dtype = CT_I64});
  ct_manual_seed(7);
  ct_tensor *gw = ct_randint(0, (int64_t)1 << 40, CT_SHAPE(77),
                             &(ct_tensor_opts){.dtype = CT_I64, .device = ct_cuda(0)});
  check_identical(cw, gw);
}

CT_TEST(launch_blocking) {
  NEED_GPU();
  /* read once per process: set before the first launch only when this test
   * runs alone (--only launch_blocking); otherwise it checks that work still
   * completes with whatever mode is on */
  setenv("CT_LAUNCH_BLOCKING", "1", 1);
  ct_tensor *x = ct_full(CT_SHAPE(4096), 1.5, &(ct_tensor_opts){.device = ct_cuda(0)});
  double v = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(ct_mul(x, x), NULL), &v));
  CHECK(v == 4096 * 2.25);
}
