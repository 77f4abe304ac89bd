/* The CUDA caching allocator (one per device) and the pinned host cache.
 *
 * Device memory: requests round up to a size class (multiples of 512 B up
 * to 1 MiB, of 2 MiB above) and are served from cudaMalloc'd blocks of exactly
 * that size. A freed block goes to its device's cache, tagged with the stream
 * that was current when it was allocated; a later request reuses the
 * smallest cached block of the same stream whose size is between the request
 * and twice it (so reuse is ordered after every earlier use on that stream:
 * no event is needed).
 *
 * Other streams (ct_record_stream, as torch's record_stream): a live block
 * keeps the list of the other streams it was recorded on. Its free records an
 * event on each of them, and the cached block is handed out again only once
 * all those events have completed (polled with cudaEventQuery, never waited
 * for, except on the out-of-memory path and in empty_cache). Events come from
 * a per-device cache. Without record_stream, a tensor used on another stream
 * must be synchronized with by the user before it is freed.
 *
 * Out of memory: the device's cache is returned to the driver (waiting for
 * the pending events, then cudaFree) and the allocation retried once; a second
 * failure records CT_ERR_OOM with the statistics.
 *
 * Pinned host memory (device_index -1): cudaHostAlloc'd blocks cached by size
 * class, with the same stream lists: a non-blocking transfer records the
 * stream it was queued on (ct__cuda_pinned_in_use, called by backend.c), so the
 * block is not reused while the copy may still read or write it.
 *
 * A destroyed stream (ct__cuda_forget_stream, after the stream was
 * synchronized) is removed from every list, and the blocks allocated on it
 * move to the default stream.
 *
 * Locks: one mutex per pool; the event cache's mutex is taken inside a pool's
 * and takes nothing else. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/common.cuh"
#include "core/alloc.h"

#define CTC_MAX_DEV 64          /* device.cu's */
#define PINNED_POOL CTC_MAX_DEV /* pools[] index of the pinned host pool */
#define LIVE_BUCKETS 1024

/* A stream that uses a block: its device and native handle (0: the legacy
 * default stream of that device). */
typedef struct use {
  int dev;
  cudaStream_t stream;
} use;

/* An event recorded on a use's stream when its block was freed. */
typedef struct pending {
  int dev;
  cudaEvent_t event;
} pending;

typedef struct block {
  void *ptr;
  size_t size;
  cudaStream_t stream; /* device blocks: the allocating stream; reuse stays on it */
  use *uses;           /* live: streams recorded by record_stream (other than `stream`) */
  int nuses, cap_uses;
  pending *events; /* cached: to complete before reuse */
  int nevents, cap_events;
  struct block *next;
} block;

typedef struct pool {
  pthread_mutex_t mu;
  block *cached;             /* free blocks */
  block *live[LIVE_BUCKETS]; /* hash buckets of blocks in use, by pointer */
  ct_memory_stats st;
} pool;

static pool pools[CTC_MAX_DEV + 1];
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

static unsigned bucket(const void *p) {
  return (unsigned)(((uintptr_t)p >> 9) * 2654435761u >> 22) & (LIVE_BUCKETS - 1);
}

static double gib(size_t n) { return (double)n / (double)((size_t)1 << 30); }

/* Grows *arr (of *cap elements) to hold `need`; false if out of host memory. */
template <class T>
static bool reserve(T **arr, int *cap, int need) {
  if (need <= *cap) return true;
  int n = *cap ? 2 * *cap : 4;
  T *p = (T *)ct__realloc(*arr, (size_t)n * sizeof(T));
  if (!p) return false;
  *arr = p;
  *cap = n;
  return true;
}

/* ---- Device switching without recording errors ----------------------------------- *
 * The free path runs inside ct_free (no status to return): it switches the
 * runtime's device for its event calls and puts the previous one back, and
 * clears the CUDA errors it meets rather than recording them. */

static int switch_device(int dev) {
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) (void)cudaGetLastError();
  if (prev != dev && cudaSetDevice(dev) != cudaSuccess) (void)cudaGetLastError();
  return prev;
}

static void restore_device(int prev, int dev) {
  if (prev >= 0 && prev != dev && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
}

/* ---- Event cache (per device) ------------------------------------------------------ */

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static cudaEvent_t *ev_free[CTC_MAX_DEV];
static int ev_count[CTC_MAX_DEV], ev_cap[CTC_MAX_DEV];

/* An event of dev (dev must be the runtime's current device), or NULL. */
static cudaEvent_t event_get(int dev) {
  cudaEvent_t e = NULL;
  pthread_mutex_lock(&ev_mu);
  if (ev_count[dev] > 0) e = ev_free[dev][--ev_count[dev]];
  pthread_mutex_unlock(&ev_mu);
  if (!e && cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    (void)cudaGetLastError();
    e = NULL;
  }
  return e;
}

static void event_put(int dev, cudaEvent_t e) {
  pthread_mutex_lock(&ev_mu);
  bool kept = reserve(&ev_free[dev], &ev_cap[dev], ev_count[dev] + 1);
  if (kept) ev_free[dev][ev_count[dev]++] = e;
  pthread_mutex_unlock(&ev_mu);
  if (!kept && cudaEventDestroy(e) != cudaSuccess) (void)cudaGetLastError();
}

static void events_release(int dev) {
  pthread_mutex_lock(&ev_mu);
  for (int i = 0; i < ev_count[dev]; i++)
    if (cudaEventDestroy(ev_free[dev][i]) != cudaSuccess) (void)cudaGetLastError();
  ev_count[dev] = 0;
  pthread_mutex_unlock(&ev_mu);
}

/* ---- Stream lists of a block ---------------------------------------------------------- */

static bool has_use(const block *b, int dev, cudaStream_t s) {
  for (int i = 0; i < b->nuses; i++)
    if (b->uses[i].dev == dev && b->uses[i].stream == s) return true;
  return false;
}

static void remove_use(block *b, int dev, cudaStream_t s) {
  int k = 0;
  for (int i = 0; i < b->nuses; i++)
    if (b->uses[i].dev != dev || b->uses[i].stream != s) b->uses[k++] = b->uses[i];
  b->nuses = k;
}

/* Records an event on use u's stream into b's pending list. Without an event,
 * waits for the stream instead: slower, never unsafe. */
static void record_use(block *b, use u) {
  int prev = switch_device(u.dev);
  cudaEvent_t e = event_get(u.dev);
  bool ok = e && cudaEventRecord(e, u.stream) == cudaSuccess &&
            reserve(&b->events, &b->cap_events, b->nevents + 1);
  if (ok) {
    b->events[b->nevents].dev = u.dev;
    b->events[b->nevents++].event = e;
  } else {
    (void)cudaGetLastError();
    if (cudaStreamSynchronize(u.stream) != cudaSuccess) (void)cudaGetLastError();
    if (e) event_put(u.dev, e);
  }
  restore_device(prev, u.dev);
}

/* Frees b's events that completed; true when none is left pending. */
static bool events_done(block *b) {
  int k = 0;
  for (int i = 0; i < b->nevents; i++) {
    cudaError_t r = cudaEventQuery(b->events[i].event);
    if (r == cudaErrorNotReady) {
      /* "not ready" is an answer, but the runtime also stores it as the
       * thread's last error: left there, the next kernel launch's
       * cudaGetLastError (CT_CUDA_LAUNCH_CHECK) would report it as that
       * launch's failure. Clear it, as PyTorch's allocator does. */
      (void)cudaGetLastError();
      b->events[k++] = b->events[i];
      continue;
    }
    if (r != cudaSuccess) (void)cudaGetLastError(); /* a broken context: nothing left to wait for */
    event_put(b->events[i].dev, b->events[i].event);
  }
  b->nevents = k;
  return k == 0;
}

/* Waits for and frees all of b's events (out of memory, empty_cache). */
static void events_wait(block *b) {
  for (int i = 0; i < b->nevents; i++) {
    if (cudaEventSynchronize(b->events[i].event) != cudaSuccess) (void)cudaGetLastError();
    event_put(b->events[i].dev, b->events[i].event);
  }
  b->nevents = 0;
}

static void block_destroy(block *b) {
  free(b->uses);
  free(b->events);
  free(b);
}

/* Frees every cached block of pool P (lock held), waiting for pending events.
 * A device block goes back to the cache as soon as its last use is queued, so
 * work on its allocation stream may still read or write it: the device is
 * synchronized first (the caller made it the current device), since cudaFree
 * is documented only to "may" synchronize (cuMemFree), not to wait for the
 * work using the block. */
static void release_cached(pool *P, bool pinned) {
  block *b = P->cached;
  if (b && !pinned && cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
  while (b) {
    block *next = b->next;
    events_wait(b);
    cudaError_t e = pinned ? cudaFreeHost(b->ptr) : cudaFree(b->ptr);
    if (e != cudaSuccess) (void)cudaGetLastError();
    P->st.reserved -= b->size;
    block_destroy(b);
    b = next;
  }
  P->cached = NULL;
}

/* ---- Allocation ------------------------------------------------------------------------ */

/* The smallest cached block for stream s of size in [size, 2 size] whose
 * pending events completed, unlinked from the cache; NULL if none (lock held). */
static block *take_cached(pool *P, size_t size, cudaStream_t s) {
  block **best = NULL;
  for (block **pp = &P->cached; *pp; pp = &(*pp)->next) {
    block *b = *pp;
    if (b->size < size || b->size / 2 > size || b->stream != s) continue;
    if (best && b->size >= (*best)->size) continue;
    if (events_done(b)) best = pp;
  }
  if (!best) return NULL;
  block *b = *best;
  *best = b->next;
  return b;
}

static cudaError_t raw_alloc(void **p, size_t size, bool pinned) {
  cudaError_t e = pinned ? cudaHostAlloc(p, size, cudaHostAllocPortable) : cudaMalloc(p, size);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

/* Records the failure of a raw allocation of `size` (lock released). */
static void fail_alloc(int dev, size_t size, bool pinned, cudaError_t e,
                       const ct_memory_stats *st) {
  ct_status code = e == cudaErrorMemoryAllocation ? CT_ERR_OOM : CT_ERR_CUDA;
  if (pinned) {
    ct__fail_status(code,
                    "pin_memory: cudaHostAlloc of %.2f GiB failed: %s (pinned: allocated %.2f GiB, "
                    "reserved %.2f GiB)",
                    gib(size), cudaGetErrorString(e), gib(st->allocated), gib(st->reserved));
    return;
  }
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
  ct__fail_status(
      code,
      "cuda:%d out of memory allocating %.2f GiB (allocated %.2f GiB, reserved "
      "%.2f GiB, peak %.2f GiB by ctensor; %.2f GiB free of %.2f GiB on the device): %s",
      dev, gib(size), gib(st->allocated), gib(st->reserved), gib(st->peak_allocated), gib(free_b),
      gib(total_b), cudaGetErrorString(e));
}

/* A new block from the driver (lock held; released on failure). On failure
 * the cache goes back to the driver and the allocation is retried once. */
static block *new_block(pool *P, int dev, size_t size, bool pinned, cudaStream_t s) {
  block *b = (block *)ct__calloc(1, sizeof *b);
  if (!b) {
    pthread_mutex_unlock(&P->mu);
    ct__fail_status(CT_ERR_OOM, "alloc: out of host memory");
    return NULL;
  }
  b->size = size;
  b->stream = s;
  cudaError_t e = raw_alloc(&b->ptr, size, pinned);
  if (e != cudaSuccess) {
    release_cached(P, pinned);
    e = raw_alloc(&b->ptr, size, pinned);
  }
  if (e != cudaSuccess) {
    ct_memory_stats st = P->st;
    pthread_mutex_unlock(&P->mu);
    free(b);
    fail_alloc(dev, size, pinned, e, &st);
    return NULL;
  }
  P->st.reserved += size;
  return b;
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
  pool *P = &pools[pinned ? PINNED_POOL : dev];
  size_t size = round_size(nbytes);
  cudaStream_t stream = pinned ? 0 : ctc_stream(dev);
  if (!pinned && ctc_use_device("alloc", dev) != CT_OK) return NULL; /* cudaMalloc's device */
  pthread_mutex_lock(&P->mu);
  P->st.num_allocs++;
  block *b = take_cached(P, size, stream);
  if (b) {
    P->st.num_cache_hits++;
  } else if (!(b = new_block(P, dev, size, pinned, stream))) {
    return NULL; /* unlocked, error recorded */
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

/* The pool of (dev, pinned), or NULL for a bad device index. */
static pool *pool_of(int dev, bool pinned) {
  pthread_once(&pools_once, init_pools);
  if (pinned) return &pools[PINNED_POOL];
  return dev >= 0 && dev < CTC_MAX_DEV ? &pools[dev] : NULL;
}

/* The live block starting at ptr, unlinked when `unlink` (lock held). */
static block *find_live(pool *P, const void *ptr, bool unlink) {
  block **pp = &P->live[bucket(ptr)];
  while (*pp && (*pp)->ptr != ptr) pp = &(*pp)->next;
  block *b = *pp;
  if (b && unlink) *pp = b->next;
  return b;
}

/* The live block holding address p (a view's data may start inside it). */
static block *find_live_containing(pool *P, const void *p) {
  block *b = find_live(P, p, false);
  for (int h = 0; !b && h < LIVE_BUCKETS; h++)
    for (block *c = P->live[h]; c && !b; c = c->next)
      if ((const char *)p >= (const char *)c->ptr &&
          (const char *)p < (const char *)c->ptr + c->size)
        b = c;
  return b;
}

extern "C" void ct__cuda_free(int dev, void *ptr, size_t nbytes, bool pinned) {
  (void)nbytes;
  pool *P = pool_of(dev, pinned);
  if (!ptr || !P) return;
  pthread_mutex_lock(&P->mu);
  block *b = find_live(P, ptr, true);
  if (!b) { /* not ours: a bug elsewhere; leak rather than crash */
    pthread_mutex_unlock(&P->mu);
    return;
  }
  P->st.allocated -= b->size;
  for (int i = 0; i < b->nuses; i++) record_use(b, b->uses[i]);
  b->nuses = 0;
  b->next = P->cached;
  P->cached = b;
  pthread_mutex_unlock(&P->mu);
}

/* ---- record_stream ---------------------------------------------------------------------- */

/* Adds (dev, s) to b's streams unless reuse is already ordered after it. */
static ct_status add_use(block *b, int dev, cudaStream_t s, bool pinned) {
  if ((!pinned && s == b->stream) || has_use(b, dev, s)) return CT_OK;
  if (!reserve(&b->uses, &b->cap_uses, b->nuses + 1))
    return ct__fail_status(CT_ERR_OOM, "record_stream: out of host memory");
  b->uses[b->nuses].dev = dev;
  b->uses[b->nuses++].stream = s;
  return CT_OK;
}

extern "C" ct_status ct__cuda_record_stream(int dev, void *data, bool pinned, void *stream) {
  if (dev < 0 || dev >= ct__cuda_device_count())
    return ct__fail_status(CT_ERR_UNAVAILABLE, "record_stream: cuda:%d is not available", dev);
  pool *P = pool_of(dev, pinned);
  pthread_mutex_lock(&P->mu);
  block *b = find_live(P, data, false);
  ct_status st = b ? add_use(b, dev, (cudaStream_t)stream, pinned)
                   : ct__fail_status(CT_ERR_INTERNAL, "record_stream: %p is not a live %s block",
                                     data, pinned ? "pinned" : "device");
  pthread_mutex_unlock(&P->mu);
  return st;
}

extern "C" void ct__cuda_pinned_in_use(int dev, const void *host) {
  pool *P = pool_of(dev, true);
  pthread_mutex_lock(&P->mu);
  block *b = find_live_containing(P, host);
  ct_status st = b ? add_use(b, dev, ctc_stream(dev), true) : CT_OK;
  pthread_mutex_unlock(&P->mu);
  if (st != CT_OK) { /* no room to remember the stream: wait for the copy now */
    if (cudaStreamSynchronize(ctc_stream(dev)) != cudaSuccess) (void)cudaGetLastError();
  }
}

/* Moves the blocks of a dying stream to the default stream and drops it from
 * the stream lists (the caller synchronized the stream). */
static void forget_in(pool *P, int dev, cudaStream_t s, bool pinned) {
  pthread_mutex_lock(&P->mu);
  for (int h = -1; h < LIVE_BUCKETS; h++)
    for (block *b = h < 0 ? P->cached : P->live[h]; b; b = b->next) {
      if (!pinned && b->stream == s) b->stream = 0;
      remove_use(b, dev, s);
    }
  pthread_mutex_unlock(&P->mu);
}

extern "C" void ct__cuda_forget_stream(int dev, void *stream) {
  if (dev < 0 || dev >= CTC_MAX_DEV) return;
  forget_in(pool_of(dev, false), dev, (cudaStream_t)stream, false);
  forget_in(pool_of(dev, true), dev, (cudaStream_t)stream, true);
}

/* ---- Statistics, empty_cache -------------------------------------------------------------- */

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
    pool *P = &pools[i == 0 ? dev : PINNED_POOL];
    pthread_mutex_lock(&P->mu);
    release_cached(P, i == 1);
    pthread_mutex_unlock(&P->mu);
  }
  events_release(dev);
  return CT_OK;
}
