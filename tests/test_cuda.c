/* CUDA-specific tests (not device-generic): transfers of every dtype, pinned
 * and non-blocking copies, streams and events, the device-mismatch error,
 * device properties and versions, the caching allocator (statistics, reuse,
 * empty_cache, out of memory, record_stream), Philox bit-identity with the
 * CPU and CT_LAUNCH_BLOCKING. Every test skips (exit 77 when all do) when no
 * GPU is usable; the ones checking the no-GPU errors and the CPU no-ops run
 * first and then report themselves skipped too. */
#include <stdint.h>
#include <stdlib.h>

#include "core/internal.h" /* white box: the allocator block behind a CUDA tensor */
#include "ct_test.h"

/* Tests of the caching allocator's reuse: without the cache (CT_CUDA_NO_CACHE=1,
 * as under compute-sanitizer in scripts/gpu-check.sh) nothing is reused. */
#define NEED_CACHE()                                                       \
  do {                                                                     \
    const char *nc_ = getenv("CT_CUDA_NO_CACHE");                          \
    if (nc_ && *nc_ && strcmp(nc_, "0") != 0) {                            \
      ct_test_skip("CT_CUDA_NO_CACHE: the caching allocator is bypassed"); \
      return;                                                              \
    }                                                                      \
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

static bool cuda_built(void) { return strstr(ct_build_info(), "cuda=ON") != NULL; }

CT_TEST(device_info_without_gpu) {
  if (ct_cuda_is_available()) {
    ct_test_skip("a GPU is present");
    return;
  }
  /* properties: a clean CT_ERR_UNAVAILABLE saying why, *out zeroed */
  ct_cuda_device_properties p;
  memset(&p, 0x5a, sizeof p);
  CHECK_ERR_MSG(ct_cuda_get_device_properties(0, &p) == CT_OK, CT_ERR_UNAVAILABLE,
                cuda_built() ? "no CUDA GPU is visible" : "the CUDA backend is not available");
  CHECK(p.name[0] == 0 && p.total_memory == 0 && p.major == 0 && p.multiprocessor_count == 0);
  CHECK_ERR(ct_cuda_get_device_properties(-1, &p) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_cuda_get_device_properties(0, NULL) == CT_OK, CT_ERR_ARG);
  /* versions: the runtime is known in a CUDA build; the driver may be absent */
  int v = -1;
  ct_status st = ct_cuda_runtime_version(&v);
  if (cuda_built())
    CHECK_MSG(st == CT_OK && v >= 11000, "runtime version %d (%s)", v, ct_status_name(st));
  else
    CHECK(st == CT_ERR_UNAVAILABLE && v == 0);
  ct_clear_error();
  v = -1;
  st = ct_cuda_driver_version(&v);
  CHECK_MSG(st == CT_OK ? v >= 1000 : st == CT_ERR_UNAVAILABLE && v == 0, "driver version %d (%s)",
            v, ct_status_name(st));
  ct_clear_error();
  CHECK_ERR(ct_cuda_driver_version(NULL) == CT_OK, CT_ERR_ARG);
  /* every entry that needs a GPU refuses with CT_ERR_UNAVAILABLE (never a CUDA error) */
  ct_device d = ct_cuda(0);
  ct_memory_stats ms;
  CHECK_ERR(ct_cuda_set_device(0) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_stream_new(d), CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_event_new(d, true), CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_synchronize(d) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_memory_stats_get(d, &ms) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_empty_cache(d) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK_STATUS_OK(ct_cuda_empty_cache()); /* nothing cached: fine */
  CHECK_ERR(ct_pin_memory(ct_ones(CT_SHAPE(4), NULL)), CT_ERR_UNAVAILABLE);
  ct_test_skip("no CUDA device available");
}

CT_TEST(record_stream_cpu_noop) {
  ct_stream *s = ct_stream_new(ct_cpu());
  ct_tensor *small = ct_ones(CT_SHAPE(4), NULL), *big = ct_ones(CT_SHAPE(1 << 16), NULL);
  CHECK_OK(s && small && big);
  CHECK_STATUS_OK(ct_record_stream(small, s));
  CHECK_STATUS_OK(ct_record_stream(big, s));
  CHECK_STATUS_OK(ct_record_stream(big, NULL));
  CHECK_STATUS_OK(ct_record_stream(ct_narrow(big, 0, 5, 7), s)); /* a view */
  CHECK_ERR(ct_record_stream(NULL, s) == CT_OK, CT_ERR_ARG);
  ct_free(big); /* the free after a record is an ordinary free */
  ct_stream_free(s);
  if (!ct_cuda_is_available()) ct_test_skip("CPU no-op checked; no CUDA device for the rest");
}

CT_TEST(device_properties) {
  NEED_GPU();
  int n = ct_cuda_device_count();
  ct_cuda_device_properties p;
  for (int i = 0; i < n; i++) {
    CHECK_STATUS_OK(ct_cuda_get_device_properties(i, &p));
    CHECK_MSG(p.name[0] && memchr(p.name, 0, sizeof p.name), "cuda:%d: no name", i);
    CHECK_MSG(p.major >= 7 && p.minor >= 0, "cuda:%d: compute capability %d.%d", i, p.major,
              p.minor);
    CHECK_MSG(p.total_memory > 0, "cuda:%d: total memory %zu", i, p.total_memory);
    CHECK_MSG(p.multiprocessor_count > 0 && p.warp_size == 32 && p.max_threads_per_block >= 1024,
              "cuda:%d: %d SMs, warp %d, %d threads per block", i, p.multiprocessor_count,
              p.warp_size, p.max_threads_per_block);
    CHECK_MSG(strncmp(p.uuid, "GPU-", 4) == 0 && strlen(p.uuid) == 40, "cuda:%d: uuid '%s'", i,
              p.uuid);
  }
  CHECK_ERR(ct_cuda_get_device_properties(n, &p) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK(p.name[0] == 0 && p.total_memory == 0);
  CHECK_ERR(ct_cuda_get_device_properties(-1, &p) == CT_OK, CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_cuda_get_device_properties(0, NULL) == CT_OK, CT_ERR_ARG);
  int drv = 0, rt = 0;
  CHECK_STATUS_OK(ct_cuda_driver_version(&drv));
  CHECK_STATUS_OK(ct_cuda_runtime_version(&rt));
  CHECK_MSG(drv >= 11000 && rt >= 11000, "driver %d, runtime %d", drv, rt);
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
  NEED_CACHE();
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

/* The device address of a CUDA tensor's allocator block. */
static const void *block_of(const ct_tensor *t) { return t ? t->storage->data : NULL; }

/* A queue of products on the current stream, long enough (tens of ms) that
 * the host gets well ahead of it. */
static ct_tensor *long_work(ct_device d) {
  /* The emulated GPU (tests/cuda_emu/lib) runs queued work only when the
   * host waits for it: any queue is "long" there, and host GEMMs are slow. */
  ct_cuda_device_properties p;
  bool emulated = ct_cuda_get_device_properties(d.index, &p) == CT_OK && strstr(p.name, "emulator");
  int64_t m = emulated ? 256 : 4096;
  ct_tensor *big = ct_full(CT_SHAPE(m, m), 1.0 / (double)m, &(ct_tensor_opts){.device = d});
  ct_tensor *h = big;
  for (int i = 0; i < 12; i++) h = ct_matmul(h, big);
  return h;
}

CT_TEST(record_stream_delays_reuse) {
  NEED_GPU();
  NEED_CACHE();
  ct_device d = ct_cuda(0);
  ct_tensor_opts o = {.device = d};
  const int64_t n = 1 << 20; /* 4 MiB of f32 */
  CHECK_STATUS_OK(ct_synchronize(d));
  CHECK_STATUS_OK(ct_cuda_empty_cache()); /* only this test's blocks below */
  /* control: on one stream, a freed block serves the next request at once */
  ct_tensor *a = ct_empty(CT_SHAPE(n), &o);
  const void *pa = block_of(a);
  ct_free(a);
  ct_tensor *b = ct_empty(CT_SHAPE(n), &o);
  CHECK_MSG(pa && block_of(b) == pa, "a freed block was not reused on its own stream");
  ct_free(b);

  ct_stream *side = ct_stream_new(d);
  ct_tensor *x = ct_full(CT_SHAPE(n), 3.0, &o);
  CHECK_OK(side && x);
  if (!side || !x) return;
  CHECK_STATUS_OK(ct_synchronize(d));
  const void *px = block_of(x);
  /* `side` reads x after a long queue of work */
  CHECK_STATUS_OK(ct_stream_set_current(d, side));
  CHECK_OK(long_work(d));
  ct_tensor *y = ct_mul_scalar(x, 2.0);
  CHECK_STATUS_OK(ct_stream_set_current(d, NULL));
  CHECK_STATUS_OK(ct_record_stream(x, side));
  ct_free(x);
  /* the same request at once, on the default stream: not x's block, which
   * `side` has yet to read */
  ct_tensor *z = ct_full(CT_SHAPE(n), -1.0, &o);
  CHECK_OK(z);
  CHECK_MSG(block_of(z) != px, "x's block was handed out while `side` still reads it");
  CHECK_STATUS_OK(ct_stream_synchronize(side));
  double v = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(y, NULL), &v));
  CHECK_MSG(v == 6.0 * (double)n, "sum(2 x) = %g, expected %g", v, 6.0 * (double)n);
  /* once `side` is past it, the block serves the default stream again */
  ct_tensor *w1 = ct_empty(CT_SHAPE(n), &o), *w2 = ct_empty(CT_SHAPE(n), &o);
  CHECK_MSG(block_of(w1) == px || block_of(w2) == px,
            "x's block was not reused after `side` finished");
  /* a stream of another device, here the CPU */
  ct_stream *cs = ct_stream_new(ct_cpu());
  CHECK_ERR(ct_record_stream(z, cs) == CT_OK, CT_ERR_DEVICE);
  CHECK_STATUS_OK(ct_record_stream(z, NULL)); /* its own (current) stream: nothing to do */
  ct_stream_free(cs);
  ct_stream_free(side);
}

/* A non-blocking upload from pinned memory on a side stream: freeing the
 * pinned tensor right after must not hand its memory out before the copy ran
 * (the upload records its stream; the host then scribbles on any reuse). */
CT_TEST(pinned_reuse_waits_for_copy) {
  NEED_GPU();
  NEED_CACHE();
  ct_device d = ct_cuda(0);
  const int64_t n = 1 << 22;
  ct_tensor_opts po = {.pin_memory = true};
  ct_stream *side = ct_stream_new(d);
  ct_tensor *h = ct_full(CT_SHAPE(n), 1.0, &po); /* sums stay exact in f32 */
  CHECK_OK(side && h && ct_is_pinned(h));
  if (!side || !h) return;
  const void *ph = ct_data_ptr(h);
  CHECK_STATUS_OK(ct_stream_set_current(d, side));
  CHECK_OK(long_work(d));
  ct_tensor *g = ct_to(h, d, &(ct_to_opts){.non_blocking = true});
  CHECK_STATUS_OK(ct_stream_set_current(d, NULL));
  CHECK_OK(g);
  ct_free(h);
  ct_tensor *h2 = ct_empty(CT_SHAPE(n), &po);
  CHECK_OK(h2);
  CHECK_MSG(ct_data_ptr(h2) != ph, "pinned memory reused while a copy from it was queued");
  if (h2) memset(ct_data_ptr(h2), 0, (size_t)n * sizeof(float));
  CHECK_STATUS_OK(ct_stream_synchronize(side));
  double v = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(g, NULL), &v));
  CHECK_MSG(v == (double)n, "uploaded sum %g, expected %g", v, (double)n);
  ct_stream_free(side);
}

/* Blocks cached for a stream move to the default stream when it is freed. */
CT_TEST(stream_free_keeps_cache_usable) {
  NEED_GPU();
  NEED_CACHE();
  ct_device d = ct_cuda(0);
  CHECK_STATUS_OK(ct_synchronize(d));
  CHECK_STATUS_OK(ct_cuda_empty_cache());
  ct_stream *s = ct_stream_new(d);
  CHECK_OK(s);
  CHECK_STATUS_OK(ct_stream_set_current(d, s));
  ct_tensor *t = ct_full(CT_SHAPE(1 << 20), 1.0, &(ct_tensor_opts){.device = d});
  CHECK_OK(t);
  const void *pt = block_of(t);
  CHECK_STATUS_OK(ct_stream_set_current(d, NULL));
  ct_free(t);
  ct_stream_free(s);
  ct_tensor *u = ct_empty(CT_SHAPE(1 << 20), &(ct_tensor_opts){.device = d});
  CHECK_MSG(u && block_of(u) == pt, "the block of a freed stream was not reused");
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

/* Bad indices and integer division by zero found by kernels: the op returns
 * at once, the next synchronization or read fails with the op and the value,
 * once, and the device stays usable. */
CT_TEST(kernel_faults_reported_at_sync) {
  NEED_GPU();
  ct_tensor_opts o = {.device = ct_cuda(0)}, oi = {.dtype = CT_I64, .device = ct_cuda(0)};
  ct_tensor *x = ct_arange(0, 12, 1, &o);
  ct_tensor *bad = ct_from_data(((int64_t[]){1, 12, 3}), CT_SHAPE(3), &oi);
  ct_tensor *g = ct_gather(x, 0, bad);
  CHECK_OK(g); /* no synchronization at the launch */
  CHECK_ERR_MSG(ct_synchronize(ct_cuda(0)) == CT_OK, CT_ERR_ARG,
                "gather: index 12 is out of bounds for dim 0 with size 12");
  CHECK_STATUS_OK(ct_synchronize(ct_cuda(0))); /* reported once */
  double v = 0;
  CHECK_STATUS_OK(ct_item(ct_sum(x, NULL), &v)); /* still usable */
  CHECK(v == 66);
  /* a read on the host reports it too */
  ct_tensor *s = ct_zeros(CT_SHAPE(12), &o);
  CHECK_OK(ct_scatter_add_(s, 0, ct_from_data(((int64_t[]){-1}), CT_SHAPE(1), &oi), ct_ones(CT_SHAPE(1), &o)));
  CHECK_ERR_MSG(ct_item(ct_sum(s, NULL), &v) == CT_OK, CT_ERR_ARG, "scatter_add: index -1");
  ct_tensor *a = ct_from_data(((int32_t[]){4, 5}), CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I32, .device = ct_cuda(0)});
  ct_tensor *z = ct_from_data(((int32_t[]){2, 0}), CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I32, .device = ct_cuda(0)});
  CHECK_OK(ct_floor_divide(a, z));
  CHECK_ERR_MSG(ct_synchronize(ct_cuda(0)) == CT_OK, CT_ERR_ARG, "floor_divide: integer division by zero");
  CHECK_CLOSE(ct_floor_divide(a, a), ((double[]){1, 1}), 0, 0);
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

/* ---- Neural-network layers: the GPU against the CPU ------------------------------------------ *
 * Each case runs one layer on CPU leaves and on GPU copies of them, back-
 * propagates the same random grad_out, and compares the outputs and every
 * input's gradient. */

#define NN_MAX_IN 3
typedef ct_tensor *(*nn_layer_fn)(ct_tensor *const *in, const void *ctx);

typedef struct nn_case {
  const char *name;
  nn_layer_fn f;
  const void *ctx;
  int nin;
  const int64_t *shape[NN_MAX_IN];
  int ndim[NN_MAX_IN];
} nn_case;

static double nn_tol(ct_dtype dt) {
  switch (dt) {
  case CT_F64: return 1e-9;
  case CT_F32: return 2e-4;
  case CT_F16: return 1e-2;
  default: return 4e-2;
  }
}

static void nn_compare(const char *what, const ct_tensor *cpu, const ct_tensor *gpu, ct_dtype dt) {
  CHECK_MSG(cpu && gpu, "%s (%s): missing result (%s)", what, ct_dtype_name(dt), ct_last_error_message());
  if (!cpu || !gpu) return;
  ct_test_check_shape(__FILE__, __LINE__, what, gpu, ct_shape(cpu), ct_ndim(cpu));
  double *e = ct_test_values(cpu);
  double tol = nn_tol(dt);
  ct_test_check_close(__FILE__, __LINE__, what, gpu, e, tol, tol);
  free(e);
}

static void nn_run(const nn_case *c, ct_dtype dt) {
  ct_tensor *cin[NN_MAX_IN] = {0}, *gin[NN_MAX_IN] = {0};
  for (int k = 0; k < c->nin; k++) {
    if (!c->shape[k]) continue; /* an absent optional input */
    int64_t n = 1;
    for (int d = 0; d < c->ndim[k]; d++) n *= c->shape[k][d];
    double *v = ct_test_random(n, -1, 1, 17u + (unsigned)k);
    cin[k] = ct_requires_grad_(ct_test_make(v, c->shape[k], c->ndim[k], dt, CT_LAYOUT_CONTIG), true);
    free(v);
    gin[k] = ct_requires_grad_(ct_to(ct_detach(cin[k]), ct_cuda(0), NULL), true);
    CHECK_OK(cin[k] && gin[k]);
    if (!cin[k] || !gin[k]) return;
  }
  ct_tensor *yc = c->f(cin, c->ctx), *yg = c->f(gin, c->ctx);
  char what[128];
  snprintf(what, sizeof what, "%s %s forward", c->name, ct_dtype_name(dt));
  nn_compare(what, yc, yg, dt);
  if (!yc || !yg) return;
  int64_t n = ct_numel(yc);
  double *gv = ct_test_random(n, -1, 1, 99u);
  ct_tensor *gyc = ct_test_make(gv, ct_shape(yc), ct_ndim(yc), dt, CT_LAYOUT_CONTIG);
  free(gv);
  ct_tensor *gyg = ct_to(gyc, ct_cuda(0), NULL);
  CHECK_STATUS_OK(ct_backward(yc, gyc, NULL));
  CHECK_STATUS_OK(ct_backward(yg, gyg, NULL));
  for (int k = 0; k < c->nin; k++) {
    if (!cin[k]) continue;
    snprintf(what, sizeof what, "%s %s grad of input %d", c->name, ct_dtype_name(dt), k);
    nn_compare(what, ct_grad(cin[k]), ct_grad(gin[k]), dt);
  }
}

static const ct_dtype nn_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};

static ct_tensor *conv_fn(ct_tensor *const *in, const void *ctx) {
  return ct_conv2d(in[0], in[1], in[2], (const ct_conv2d_opts *)ctx);
}

CT_TEST(conv2d_matches_cpu) {
  NEED_GPU();
  static const int64_t x1[] = {2, 3, 9, 8}, w1[] = {4, 3, 3, 3}, b1[] = {4};
  static const int64_t x2[] = {3, 4, 7, 9}, w2[] = {6, 2, 3, 2}, b2[] = {6};
  static const int64_t x3[] = {2, 8, 6, 6}, w3[] = {8, 1, 3, 3};
  const ct_conv2d_opts plain = {{1, 1}, {1, 1}, {1, 1}, 1};
  const ct_conv2d_opts odd = {{2, 1}, {1, 2}, {1, 2}, 2}; /* stride, padding, dilation, groups */
  const ct_conv2d_opts depthwise = {{1, 1}, {0, 0}, {1, 1}, 8};
  const nn_case cases[] = {
      {"conv2d 3x3", conv_fn, &plain, 3, {x1, w1, b1}, {4, 4, 1}},
      {"conv2d strided/dilated/grouped", conv_fn, &odd, 3, {x2, w2, b2}, {4, 4, 1}},
      {"conv2d depthwise, no bias", conv_fn, &depthwise, 3, {x3, w3, NULL}, {4, 4, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = 0; d < 4; d++) nn_run(&cases[i], nn_dtypes[d]);
}

static ct_tensor *maxpool_fn(ct_tensor *const *in, const void *ctx) {
  return ct_max_pool2d(in[0], (const ct_pool2d_opts *)ctx);
}
static ct_tensor *avgpool_fn(ct_tensor *const *in, const void *ctx) {
  return ct_avg_pool2d(in[0], (const ct_pool2d_opts *)ctx);
}

CT_TEST(pool2d_matches_cpu) {
  NEED_GPU();
  static const int64_t x[] = {2, 3, 11, 10};
  const ct_pool2d_opts p2 = {.kernel = {2, 2}};
  const ct_pool2d_opts p3 = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true};
  const ct_pool2d_opts p3x = {.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 1},
                              .count_include_pad_false = true};
  const nn_case cases[] = {
      {"max_pool2d 2x2", maxpool_fn, &p2, 1, {x}, {4}},
      {"max_pool2d 3x3 s2 p1 ceil (overlapping)", maxpool_fn, &p3, 1, {x}, {4}},
      {"avg_pool2d 2x2", avgpool_fn, &p2, 1, {x}, {4}},
      {"avg_pool2d 3x3 s2 p1 ceil", avgpool_fn, &p3, 1, {x}, {4}},
      {"avg_pool2d 3x2 exclude pad", avgpool_fn, &p3x, 1, {x}, {4}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = 0; d < 4; d++) nn_run(&cases[i], nn_dtypes[d]);
}

static ct_tensor *layer_norm_fn(ct_tensor *const *in, const void *ctx) {
  return ct_layer_norm(in[0], *(const int *)ctx, in[1], in[2], 1e-5);
}

CT_TEST(layer_norm_matches_cpu) {
  NEED_GPU();
  static const int64_t x[] = {4, 5, 37}, w[] = {37}, x2[] = {3, 300}, w2[] = {300};
  static const int64_t x3[] = {2, 3, 4, 5}, w3[] = {4, 5};
  const int one = 1, two = 2;
  const nn_case cases[] = {
      {"layer_norm", layer_norm_fn, &one, 3, {x, w, w}, {3, 1, 1}},
      {"layer_norm wide", layer_norm_fn, &one, 3, {x2, w2, w2}, {2, 1, 1}},
      {"layer_norm 2 dims", layer_norm_fn, &two, 3, {x3, w3, w3}, {4, 2, 2}},
      {"layer_norm no affine", layer_norm_fn, &one, 3, {x, NULL, NULL}, {3, 0, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int d = 0; d < 4; d++) nn_run(&cases[i], nn_dtypes[d]);
}

typedef struct bn_ctx {
  bool training;
  ct_tensor *rm, *rv; /* running stats (of the device of the call), or NULL */
} bn_ctx;

static ct_tensor *batch_norm_fn(ct_tensor *const *in, const void *ctx) {
  const bn_ctx *c = ctx;
  return ct_batch_norm(in[0], c->rm, c->rv, in[1], in[2], c->training, 0.1, 1e-5);
}

CT_TEST(batch_norm_matches_cpu) {
  NEED_GPU();
  static const int64_t x[] = {4, 3, 5, 6}, w[] = {3}, x2[] = {16, 5}, w2[] = {5};
  for (int d = 0; d < 4; d++) {
    ct_dtype dt = nn_dtypes[d];
    /* statistics are f32 for half x */
    ct_dtype sdt = dt == CT_F16 || dt == CT_BF16 ? CT_F32 : dt;
    for (int training = 0; training < 2; training++) {
      double rmv[3] = {0.1, -0.2, 0.3}, rvv[3] = {1.5, 0.5, 2.0};
      ct_tensor *rmc = ct_test_make(rmv, w, 1, sdt, CT_LAYOUT_CONTIG);
      ct_tensor *rvc = ct_test_make(rvv, w, 1, sdt, CT_LAYOUT_CONTIG);
      ct_tensor *rmg = ct_to(rmc, ct_cuda(0), NULL), *rvg = ct_to(rvc, ct_cuda(0), NULL);
      CHECK_OK(rmc && rvc && rmg && rvg);
      /* the case runs the CPU first, then the GPU: swap the stats in between
       * through two contexts */
      bn_ctx cc = {training != 0, rmc, rvc}, gc = {training != 0, rmg, rvg};
      ct_tensor *cin[3], *gin[3];
      double *v = ct_test_random(4 * 3 * 5 * 6, -2, 3, 5);
      double *wv = ct_test_random(3, 0.5, 1.5, 6), *bv = ct_test_random(3, -1, 1, 7);
      cin[0] = ct_requires_grad_(ct_test_make(v, x, 4, dt, CT_LAYOUT_CONTIG), true);
      cin[1] = ct_requires_grad_(ct_test_make(wv, w, 1, dt, CT_LAYOUT_CONTIG), true);
      cin[2] = ct_requires_grad_(ct_test_make(bv, w, 1, dt, CT_LAYOUT_CONTIG), true);
      free(v), free(wv), free(bv);
      for (int k = 0; k < 3; k++) gin[k] = ct_requires_grad_(ct_to(ct_detach(cin[k]), ct_cuda(0), NULL), true);
      ct_tensor *yc = batch_norm_fn(cin, &cc), *yg = batch_norm_fn(gin, &gc);
      char what[128];
      snprintf(what, sizeof what, "batch_norm %s %s", ct_dtype_name(dt), training ? "train" : "eval");
      nn_compare(what, yc, yg, dt);
      nn_compare("batch_norm running_mean", rmc, rmg, sdt);
      nn_compare("batch_norm running_var", rvc, rvg, sdt);
      if (!yc || !yg) continue;
      double *gv = ct_test_random(ct_numel(yc), -1, 1, 8);
      ct_tensor *gyc = ct_test_make(gv, ct_shape(yc), ct_ndim(yc), dt, CT_LAYOUT_CONTIG);
      free(gv);
      CHECK_STATUS_OK(ct_backward(yc, gyc, NULL));
      CHECK_STATUS_OK(ct_backward(yg, ct_to(gyc, ct_cuda(0), NULL), NULL));
      for (int k = 0; k < 3; k++) {
        snprintf(what, sizeof what, "batch_norm %s %s grad of input %d", ct_dtype_name(dt),
                 training ? "train" : "eval", k);
        nn_compare(what, ct_grad(cin[k]), ct_grad(gin[k]), dt);
      }
    }
    /* (N, C) input, no running stats, no affine */
    bn_ctx none = {true, NULL, NULL};
    const nn_case c2 = {"batch_norm (N, C)", batch_norm_fn, &none, 3, {x2, NULL, NULL}, {2, 0, 0}};
    nn_run(&c2, dt);
    (void)w2;
  }
}

/* A small CNN step on the GPU: conv -> batch norm -> relu -> max pool ->
 * layer norm, all slots in one graph, against the CPU. */
static ct_tensor *cnn_fn(ct_tensor *const *in, const void *ctx) {
  (void)ctx;
  const ct_conv2d_opts co = {{1, 1}, {1, 1}, {1, 1}, 1};
  ct_tensor *h = ct_conv2d(in[0], in[1], in[2], &co);
  h = ct_batch_norm(h, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
  h = ct_relu(h);
  h = ct_max_pool2d(h, &(ct_pool2d_opts){.kernel = {2, 2}});
  return ct_layer_norm(h, 2, NULL, NULL, 1e-5);
}

CT_TEST(small_cnn_matches_cpu) {
  NEED_GPU();
  static const int64_t x[] = {4, 3, 12, 12}, w[] = {8, 3, 3, 3}, b[] = {8};
  const nn_case c = {"small cnn", cnn_fn, NULL, 3, {x, w, b}, {4, 4, 1}};
  nn_run(&c, CT_F32);
  nn_run(&c, CT_F64);
}
