/* The CUDA caching allocator (src/backend/cuda/allocator.cu) on the emulated
 * GPU: blocks split and merge inside their segments, every byte stays
 * accounted for in the statistics after random allocations and frees on
 * three streams (with record_stream), a request takes only what it needs,
 * blocks stay on their stream, the out-of-memory retry empties the cache
 * once, cuDNN's workspaces never empty it, and CT_CUDA_NO_CACHE=1 hands every
 * request to the driver at its exact size. ct__cuda_allocator_check verifies
 * the pools' invariants (blocks tile their segments, free neighbours are
 * merged, each free block sits in its bin, the statistics add up).
 *
 * Run twice by ctest, in a 256 MiB emulated device: as is, and with
 * CT_CUDA_NO_CACHE=1 (the tests of the cache then check the bypass). */
#include <stdint.h>
#include <stdlib.h>

#include "backend/cuda/cuda_kernels.h"
#include "core/internal.h" /* white box: the allocator block behind a CUDA tensor */
#include "ct_test.h"
#include "emu_calls.h"
#include "emu_lib.h"

#define MiB ((size_t)1 << 20)
static const ct_device dev0 = {CT_DEVICE_CUDA, 0};

static bool bypass(void) {
  const char *v = getenv("CT_CUDA_NO_CACHE");
  return v && *v && strcmp(v, "0") != 0;
}

static size_t rounded(size_t n) { return bypass() ? (n ? n : 1) : (n + 511) / 512 * 512; }

static ct_memory_stats stats(void) {
  ct_memory_stats s;
  memset(&s, 0, sizeof s);
  CHECK_STATUS_OK(ct_memory_stats_get(dev0, &s));
  return s;
}

static void check_pools(const char *when) {
  char msg[256];
  CHECK_MSG(ct__cuda_allocator_check(0, false, msg, sizeof msg), "%s: device pool: %s", when, msg);
  CHECK_MSG(ct__cuda_allocator_check(0, true, msg, sizeof msg), "%s: pinned pool: %s", when, msg);
}

/* A fresh start: nothing cached, nothing pending. */
static ct_memory_stats clean_start(void) {
  CHECK_STATUS_OK(ct_synchronize(dev0));
  CHECK_STATUS_OK(ct_cuda_empty_cache());
  return stats();
}

static ct_tensor *bytes(size_t n) {
  return ct_empty(CT_SHAPE((int64_t)n), &(ct_tensor_opts){.dtype = CT_U8, .device = dev0});
}
static char *block_of(const ct_tensor *t) { return t ? (char *)t->storage->data : NULL; }

/* ---- Random sequences ---------------------------------------------------------------- */

typedef struct live {
  ct_tensor *t;
  size_t n;
} live;

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
/* Log-uniform in [lo, hi]: as many small tensors as large ones. */
static size_t random_size(size_t lo, size_t hi) {
  double u = (double)(next_u64() >> 11) / 9007199254740992.0;
  return (size_t)((double)lo * pow((double)hi / (double)lo, u));
}

CT_TEST(random_sequences_keep_every_byte_accounted) {
  NEED_GPU();
  enum { OPS = 600, MAX_LIVE = 48 };
  ct_memory_stats s0 = clean_start();
  CHECK(s0.allocated == 0 && s0.requested == 0);
  ct_stream *streams[3] = {NULL, ct_stream_new(dev0), ct_stream_new(dev0)};
  CHECK_OK(streams[1] && streams[2]);
  live lv[MAX_LIVE];
  int nlive = 0;
  size_t want_alloc = 0, want_req = 0;
  for (int op = 0; op < OPS; op++) {
    ct_stream *s = streams[next_u64() % 3];
    CHECK_STATUS_OK(ct_stream_set_current(dev0, s));
    if (nlive < MAX_LIVE && (nlive == 0 || next_u64() % 100 < 55)) {
      unsigned kind = (unsigned)(next_u64() % 100);
      size_t n = kind < 70   ? random_size(1, MiB)
                 : kind < 95 ? random_size(MiB, 10 * MiB)
                             : random_size(10 * MiB, 24 * MiB);
      ct_tensor *t = bytes(n);
      CHECK_OK(t);
      if (!t) break;
      char *p = block_of(t);
      for (int i = 0; i < nlive; i++) { /* no two live tensors share a byte */
        char *q = block_of(lv[i].t);
        CHECK_MSG(p + n <= q || q + lv[i].n <= p, "op %d: [%p, +%zu) overlaps [%p, +%zu)", op,
                  (void *)p, n, (void *)q, lv[i].n);
      }
      if (next_u64() % 10 == 0) /* used on another stream too */
        CHECK_STATUS_OK(ct_record_stream(t, streams[next_u64() % 3]));
      lv[nlive++] = (live){t, n};
      want_alloc += rounded(n);
      want_req += n;
    } else {
      int k = (int)(next_u64() % (uint64_t)nlive);
      ct_free(lv[k].t);
      want_alloc -= rounded(lv[k].n);
      want_req -= lv[k].n;
      lv[k] = lv[--nlive];
    }
    if (op % 20 == 0 || op == OPS - 1) {
      char when[32];
      snprintf(when, sizeof when, "after op %d", op);
      check_pools(when);
      ct_memory_stats st = stats();
      CHECK_MSG(st.allocated == want_alloc && st.requested == want_req,
                "%s: allocated %zu (expected %zu), requested %zu (expected %zu)", when,
                st.allocated, want_alloc, st.requested, want_req);
      CHECK(st.reserved >= st.allocated);
      CHECK(st.inactive_split <= st.reserved - st.allocated);
      CHECK(st.largest_free_block <= st.reserved - st.allocated);
      if (bypass())
        CHECK_MSG(st.reserved == st.allocated, "%s: the bypass cached %zu bytes", when,
                  st.reserved - st.allocated);
    }
  }
  CHECK_STATUS_OK(ct_stream_set_current(dev0, NULL));
  while (nlive > 0) ct_free(lv[--nlive].t);
  check_pools("all freed");
  ct_memory_stats end = stats();
  CHECK(end.allocated == 0 && end.requested == 0);
  /* the cache returns every segment once nothing is live or pending */
  CHECK_STATUS_OK(ct_synchronize(dev0));
  CHECK_STATUS_OK(ct_cuda_empty_cache());
  end = stats();
  CHECK_MSG(end.reserved == 0 && end.num_segments == 0 && end.inactive_split == 0,
            "after empty_cache: reserved %zu in %llu segments, inactive %zu", end.reserved,
            (unsigned long long)end.num_segments, end.inactive_split);
  check_pools("emptied");
  ct_stream_free(streams[1]);
  ct_stream_free(streams[2]);
}

/* Freed tensors' blocks serve new tensors whose contents stay their own. */
CT_TEST(reused_blocks_hold_their_own_data) {
  NEED_GPU();
  enum { N = 40 };
  clean_start();
  ct_tensor *t[N];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) {
      int64_t n = (int64_t)random_size(1, 300000);
      t[i] = ct_full(CT_SHAPE(n), (double)(i + round),
                     &(ct_tensor_opts){.dtype = CT_I32, .device = dev0});
      CHECK_OK(t[i]);
      if (i % 3 == 1) ct_free(t[i - 1]), t[i - 1] = NULL; /* holes to split and merge */
    }
    for (int i = 0; i < N; i++) {
      if (!t[i]) continue;
      double lo = -1, hi = -1;
      CHECK_STATUS_OK(ct_item(ct_min(t[i], NULL), &lo));
      CHECK_STATUS_OK(ct_item(ct_max(t[i], NULL), &hi));
      CHECK_MSG(lo == i + round && hi == i + round, "tensor %d of round %d holds [%g, %g]", i,
                round, lo, hi);
      ct_free(t[i]);
    }
    check_pools("a round of fills");
  }
}

/* ---- What the cache hands out ----------------------------------------------------------- */

CT_TEST(a_request_takes_only_what_it_needs) {
  NEED_GPU();
  if (bypass()) {
    ct_test_skip("CT_CUDA_NO_CACHE: no blocks to split");
    return;
  }
  ct_memory_stats s0 = clean_start();
  ct_tensor *big = bytes(4 * MiB);
  char *p = block_of(big);
  ct_free(big);
  size_t n = 11 * MiB / 10; /* 1.1 MiB */
  ct_tensor *a = bytes(n);
  ct_memory_stats s1 = stats();
  CHECK_MSG(block_of(a) == p, "the freed 4 MiB block was not reused");
  CHECK_MSG(s1.allocated - s0.allocated == rounded(n), "a 1.1 MiB request holds %zu bytes",
            s1.allocated - s0.allocated);
  CHECK_MSG(
      s1.reserved == s0.reserved + 20 * MiB && s1.num_driver_allocs == s0.num_driver_allocs + 1,
      "reserved %zu after one 20 MiB segment", s1.reserved - s0.reserved);
  /* the rest of the segment is one free block, right after a */
  ct_tensor *b = bytes(5 * MiB);
  CHECK_MSG(block_of(b) == p + rounded(n), "the split-off rest did not serve the next request");
  CHECK(stats().num_driver_allocs == s1.num_driver_allocs);
  /* fragmentation: a's hole between live blocks */
  ct_free(a);
  ct_memory_stats s2 = stats();
  CHECK_MSG(s2.inactive_split == 20 * MiB - 5 * MiB, "inactive_split %zu", s2.inactive_split);
  CHECK_MSG(s2.largest_free_block == 20 * MiB - 5 * MiB - rounded(n), "largest free block %zu",
            s2.largest_free_block);
  /* and merged back: one free segment, returned by empty_cache */
  ct_free(b);
  ct_memory_stats s3 = stats();
  CHECK(s3.inactive_split == 0 && s3.largest_free_block == 20 * MiB);
  check_pools("merged back");
  CHECK_STATUS_OK(ct_cuda_empty_cache());
  CHECK(stats().reserved == s0.reserved);
}

CT_TEST(small_and_large_requests_use_separate_segments) {
  NEED_GPU();
  if (bypass()) {
    ct_test_skip("CT_CUDA_NO_CACHE: no segments shared");
    return;
  }
  ct_memory_stats s0 = clean_start();
  ct_tensor *small = bytes(1000), *large = bytes(3 * MiB);
  ct_memory_stats s1 = stats();
  CHECK_MSG(
      s1.reserved - s0.reserved == 2 * MiB + 20 * MiB && s1.num_segments == s0.num_segments + 2,
      "reserved %zu in %llu segments", s1.reserved - s0.reserved,
      (unsigned long long)(s1.num_segments - s0.num_segments));
  ct_tensor *more[8];
  for (int i = 0; i < 8; i++)
    more[i] = bytes(200 * 1024); /* 1.6 MiB of small ones: the 2 MiB segment */
  CHECK(stats().num_segments == s1.num_segments);
  ct_free(large);
  for (int i = 0; i < 8; i++) ct_free(more[i]);
  ct_free(small);
  check_pools("separate pools");
}

CT_TEST(blocks_stay_on_their_stream) {
  NEED_GPU();
  clean_start();
  ct_stream *s1 = ct_stream_new(dev0), *s2 = ct_stream_new(dev0);
  CHECK_OK(s1 && s2);
  CHECK_STATUS_OK(ct_stream_set_current(dev0, s1));
  ct_tensor *a = bytes(64 * 1024);
  char *pa = block_of(a);
  ct_free(a);
  CHECK_STATUS_OK(ct_stream_set_current(dev0, s2));
  ct_tensor *b = bytes(64 * 1024); /* (without the cache, the driver may give the same address) */
  if (!bypass()) CHECK_MSG(block_of(b) != pa, "a block freed on one stream served another");
  CHECK_STATUS_OK(ct_stream_set_current(dev0, s1));
  ct_tensor *c = bytes(64 * 1024);
  if (!bypass()) CHECK_MSG(block_of(c) == pa, "a block freed on a stream did not serve it again");
  CHECK_STATUS_OK(ct_stream_set_current(dev0, NULL));
  ct_free(b);
  ct_free(c);
  ct_stream_free(s1); /* its segments move to the default stream */
  ct_tensor *d = bytes(64 * 1024);
  if (!bypass())
    CHECK_MSG(block_of(d) == pa, "the freed stream's block did not serve the default stream");
  ct_free(d);
  ct_stream_free(s2);
  check_pools("streams freed");
}

/* ---- Out of memory, workspaces ---------------------------------------------------------- */

CT_TEST(out_of_memory_empties_the_cache_once) {
  NEED_GPU();
  if (bypass()) {
    ct_test_skip("CT_CUDA_NO_CACHE: nothing cached to return");
    return;
  }
  ct_memory_stats s0 = clean_start();
  ct_cuda_device_properties p;
  CHECK_STATUS_OK(ct_cuda_get_device_properties(0, &p));
  size_t total = p.total_memory, chunk = total / 16;
  ct_tensor *t[12];
  for (int i = 0; i < 12; i++) t[i] = bytes(chunk); /* 3/4 of the device, in separate segments */
  for (int i = 0; i < 12; i++) ct_free(t[i]);
  ct_memory_stats s1 = stats();
  CHECK(s1.reserved >= 12 * chunk && s1.allocated == s0.allocated);
  /* half the device: only the cached segments' memory can serve it */
  ct_tensor *half = bytes(total / 2);
  CHECK_OK(half);
  ct_memory_stats s2 = stats();
  CHECK_MSG(s2.num_cache_flushes == s1.num_cache_flushes + 1, "%llu flushes",
            (unsigned long long)(s2.num_cache_flushes - s1.num_cache_flushes));
  CHECK(s2.reserved < s1.reserved + total / 2);
  /* a workspace that does not fit: NULL, no error, the cache kept */
  for (int i = 0; i < 4; i++) t[i] = bytes(chunk);
  for (int i = 0; i < 4; i++) ct_free(t[i]);
  ct_memory_stats s3 = stats();
  ct_clear_error();
  void *ws = ct__cuda_alloc_workspace(0, total / 2);
  CHECK(ws == NULL && ct_last_error() == CT_OK);
  ct_memory_stats s4 = stats();
  CHECK_MSG(s4.reserved == s3.reserved && s4.num_cache_flushes == s3.num_cache_flushes,
            "a workspace request changed the cache: reserved %zu -> %zu", s3.reserved, s4.reserved);
  /* one that fits a cached block takes it */
  ws = ct__cuda_alloc_workspace(0, chunk / 2);
  CHECK(ws != NULL && stats().num_driver_allocs == s4.num_driver_allocs);
  ct__cuda_free(0, ws, chunk / 2, false);
  /* and an impossible request still fails cleanly after its retry */
  CHECK_ERR_MSG(bytes(2 * total), CT_ERR_OOM, "out of memory");
  CHECK(stats().num_cache_flushes == s4.num_cache_flushes + 1);
  ct_free(half);
  check_pools("out of memory");
}

/* ---- CT_CUDA_NO_CACHE --------------------------------------------------------------------- */

CT_TEST(no_cache_gives_each_request_to_the_driver) {
  NEED_GPU();
  if (!bypass()) {
    ct_test_skip("run with CT_CUDA_NO_CACHE=1");
    return;
  }
  ct_memory_stats s0 = clean_start();
  emu_calls_reset();
  ct_tensor *t = bytes(1000);
  CHECK(emu_calls("cudaMalloc") == 1);
  CHECK_MSG(emu_lib_device_block_size(block_of(t)) == 1000, "cudaMalloc was asked for %zu bytes",
            emu_lib_device_block_size(block_of(t)));
  ct_memory_stats s1 = stats();
  CHECK(s1.allocated - s0.allocated == 1000 && s1.reserved - s0.reserved == 1000);
  CHECK(s1.num_cache_hits == s0.num_cache_hits && s1.num_driver_allocs == s0.num_driver_allocs + 1);
  ct_free(t);
  CHECK(emu_calls("cudaFree") == 1);
  CHECK(stats().reserved == s0.reserved);
  /* pinned memory too */
  ct_tensor *h = ct_empty(CT_SHAPE(77), &(ct_tensor_opts){.dtype = CT_U8, .pin_memory = true});
  CHECK_OK(h);
  ct_free(h);
  CHECK(emu_calls("cudaHostAlloc") == 1 && emu_calls("cudaFreeHost") == 1);
  check_pools("bypass");
}
