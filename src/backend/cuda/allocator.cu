/* The CUDA caching allocator (one per device) and the pinned host cache.
 *
 * Device memory: requests round up to a size class (multiples of 512 B up
 * to 1 MiB, of 2 MiB above) and are served from cudaMalloc'd blocks of exactly
 * that size. A freed block goes to its device's cache, tagged with the stream
 * that was current when it was allocated; a later request reuses the
 * smallest cached block of the same stream whose size is between the request
 * and twice it (so reuse is ordered after every earlier use on that stream:
 * no event is needed). Limit, as torch without record_stream: a tensor used
 * on another stream must be synchronized with by the user before it is freed.
 * On cudaMalloc failure the device's cache is returned to the driver
 * (cudaFree) and the allocation retried once; a second failure records
 * CT_ERR_OOM with the statistics.
 *
 * Pinned host memory (device_index -1): cudaHostAlloc'd blocks cached by size
 * class; a freed block records an event on the freeing thread's current
 * stream of its current device and is reused only once that event completed
 * (an async copy from or to it may still be running). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/common.cuh"

#define CTC_MAX_DEV 64

typedef struct block {
  void *ptr;
  size_t size;
  cudaStream_t stream;
  cudaEvent_t event; /* pinned blocks: completion of their last use */
  struct block *next;
} block;

typedef struct pool {
  pthread_mutex_t mu;
  block *cached;            /* free blocks */
  block *live[1024];        /* hash buckets of blocks in use, by pointer */
  ct_memory_stats st;
} pool;

static pool pools[CTC_MAX_DEV + 1]; /* [CTC_MAX_DEV] is the pinned host pool */
static pthread_once_t pools_once = PTHREAD_ONCE_INIT;
static void init_pools(void) {
  for (int i = 0; i <= CTC_MAX_DEV; i++) pthread_mutex_init(&pools[i].mu, NULL);
}

static size_t round_size(size_t n) {
  if (n == 0) n = 1;
  if (n <= ((size_t)1 << 20)) return (n + 511) & ~(size_t)511;
  size_t two_mib = (size_t)2 << 20;
  if (n > SIZE_MAX - two_mib) return n;
  return (n + two_mib - 1) / two_mib * two_mib;
}

static unsigned bucket(const void *p) { return (unsigned)(((uintptr_t)p >> 9) * 2654435761u >> 22) & 1023u; }

static double gib(size_t n) { return (double)n / (double)((size_t)1 << 30); }

/* Frees every cached block of pool P (lock held). */
static void release_cached(pool *P, bool pinned) {
  block *b = P->cached;
  while (b) {
    block *next = b->next;
    if (pinned) {
      if (b->event) cudaEventSynchronize(b->event), cudaEventDestroy(b->event);
      cudaFreeHost(b->ptr);
    } else {
      cudaFree(b->ptr);
    }
    (void)cudaGetLastError();
    P->st.reserved -= b->size;
    free(b);
    b = next;
  }
  P->cached = NULL;
}

static void *alloc_impl(int dev, size_t nbytes, bool pinned) {
  pthread_once(&pools_once, init_pools);
  if (!pinned && (dev < 0 || dev >= ct__cuda_device_count())) {
    ct__fail_status(CT_ERR_UNAVAILABLE, "alloc: cuda:%d is not available (%d GPU(s) visible)", dev,
                    ct__cuda_device_count());
    return NULL;
  }
  if (pinned && ct__cuda_device_count() == 0) {
    ct__fail_status(CT_ERR_UNAVAILABLE, "pin_memory: no CUDA GPU is visible");
    return NULL;
  }
  pool *P = &pools[pinned ? CTC_MAX_DEV : dev];
  size_t size = round_size(nbytes);
  cudaStream_t stream = pinned ? 0 : ctc_stream(dev);
  if (!pinned && ctc_use_device("alloc", dev) != CT_OK) return NULL;
  pthread_mutex_lock(&P->mu);
  P->st.num_allocs++;
  /* best fit among cached blocks of this stream, size in [size, 2 size] */
  block **best = NULL;
  for (block **pp = &P->cached; *pp; pp = &(*pp)->next) {
    block *b = *pp;
    if (b->size < size || b->size / 2 > size || b->stream != stream) continue;
    if (pinned && b->event && cudaEventQuery(b->event) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    if (!best || b->size < (*best)->size) best = pp;
  }
  block *b = NULL;
  if (best) {
    b = *best;
    *best = b->next;
    P->st.num_cache_hits++;
  } else {
    b = (block *)calloc(1, sizeof *b);
    if (!b) {
      pthread_mutex_unlock(&P->mu);
      ct__fail_status(CT_ERR_OOM, "alloc: out of host memory");
      return NULL;
    }
    b->size = size;
    b->stream = stream;
    cudaError_t e = pinned ? cudaHostAlloc(&b->ptr, size, cudaHostAllocPortable) : cudaMalloc(&b->ptr, size);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      release_cached(P, pinned); /* give the cache back and retry once */
      e = pinned ? cudaHostAlloc(&b->ptr, size, cudaHostAllocPortable) : cudaMalloc(&b->ptr, size);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ct_memory_stats st = P->st;
      pthread_mutex_unlock(&P->mu);
      free(b);
      if (pinned) {
        ct__fail_status(e == cudaErrorMemoryAllocation ? CT_ERR_OOM : CT_ERR_CUDA,
                        "pin_memory: cudaHostAlloc of %.2f GiB failed: %s (pinned: allocated %.2f GiB, "
                        "reserved %.2f GiB)",
                        gib(size), cudaGetErrorString(e), gib(st.allocated), gib(st.reserved));
      } else {
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
        ct__fail_status(e == cudaErrorMemoryAllocation ? CT_ERR_OOM : CT_ERR_CUDA,
                        "cuda:%d out of memory allocating %.2f GiB (allocated %.2f GiB, reserved "
                        "%.2f GiB, peak %.2f GiB by ctensor; %.2f GiB free of %.2f GiB on the device): %s",
                        dev, gib(size), gib(st.allocated), gib(st.reserved), gib(st.peak_allocated),
                        gib(free_b), gib(total_b), cudaGetErrorString(e));
      }
      return NULL;
    }
    P->st.reserved += size;
  }
  P->st.allocated += b->size;
  if (P->st.allocated > P->st.peak_allocated) P->st.peak_allocated = P->st.allocated;
  unsigned h = bucket(b->ptr);
  b->next = P->live[h];
  P->live[h] = b;
  pthread_mutex_unlock(&P->mu);
  return b->ptr;
}

extern "C" void *ct__cuda_alloc(int dev, size_t nbytes, bool pinned) {
  return alloc_impl(dev, nbytes, pinned);
}

extern "C" void ct__cuda_free(int dev, void *ptr, size_t nbytes, bool pinned) {
  (void)nbytes;
  if (!ptr) return;
  pthread_once(&pools_once, init_pools);
  if (!pinned && (dev < 0 || dev >= CTC_MAX_DEV)) return;
  pool *P = &pools[pinned ? CTC_MAX_DEV : dev];
  pthread_mutex_lock(&P->mu);
  unsigned h = bucket(ptr);
  block **pp = &P->live[h];
  while (*pp && (*pp)->ptr != ptr) pp = &(*pp)->next;
  block *b = *pp;
  if (!b) { /* not ours: a bug elsewhere; leak rather than crash */
    pthread_mutex_unlock(&P->mu);
    return;
  }
  *pp = b->next;
  P->st.allocated -= b->size;
  if (pinned) {
    int cur = ct__cuda_current_device();
    if (!b->event && cudaEventCreateWithFlags(&b->event, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      b->event = NULL;
    }
    if (b->event && cudaEventRecord(b->event, ctc_stream(cur)) != cudaSuccess) {
      (void)cudaGetLastError();
      cudaEventDestroy(b->event);
      b->event = NULL;
      cudaDeviceSynchronize(); /* no event: be safe */
      (void)cudaGetLastError();
    }
  }
  b->next = P->cached;
  P->cached = b;
  pthread_mutex_unlock(&P->mu);
}

extern "C" ct_status ct__cuda_memory_stats(int dev, ct_memory_stats *out) {
  pthread_once(&pools_once, init_pools);
  if (dev < 0 || dev >= ct__cuda_device_count())
    return ct__fail_status(CT_ERR_UNAVAILABLE, "memory_stats: cuda:%d is not available (%d GPU(s) visible)",
                           dev, ct__cuda_device_count());
  pool *P = &pools[dev];
  pthread_mutex_lock(&P->mu);
  *out = P->st;
  pthread_mutex_unlock(&P->mu);
  return CT_OK;
}

extern "C" ct_status ct__cuda_empty_cache(int dev) {
  pthread_once(&pools_once, init_pools);
  if (dev < 0 || dev >= ct__cuda_device_count())
    return ct__fail_status(CT_ERR_UNAVAILABLE, "empty_cache: cuda:%d is not available (%d GPU(s) visible)",
                           dev, ct__cuda_device_count());
  ct_status st = ctc_use_device("empty_cache", dev);
  if (st != CT_OK) return st;
  for (int i = 0; i < 2; i++) {
    pool *P = &pools[i == 0 ? dev : CTC_MAX_DEV];
    pthread_mutex_lock(&P->mu);
    release_cached(P, i == 1);
    pthread_mutex_unlock(&P->mu);
  }
  return CT_OK;
}
