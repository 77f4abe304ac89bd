/* The CUDA caching allocator (one per device) and the pinned host cache.
 *
 * Device memory: the driver's memory comes in segments (one cudaMalloc
 * each): 2 MiB for requests up to 1 MiB (the small pool), 20 MiB for
 * requests up to 10 MiB, the request rounded up to 2 MiB above (the large
 * pool). A segment is cut into blocks: a request (rounded up to 512 B) takes
 * a free block and splits off the rest, which stays free; a freed block merges
 * with its free neighbours, so that a segment whose tensors are all gone is
 * one free block again. Small and large requests never share a segment, so
 * long-lived small tensors do not pin large segments.
 *
 * Lookup: free blocks sit in bins by size class (8 classes per power of two,
 * exact below 8 KiB), one set of bins per (stream, pool); a bitmap of
 * non-empty classes finds the smallest class that can serve a request in
 * constant time, without walking the cached blocks. Within the request's own
 * class a few blocks are tried (best fit); a class above serves any request.
 *
 * Streams: a segment belongs to the stream that was current when it was
 * created; its blocks are reused only on that stream, which orders the reuse
 * after every earlier use there (no event needed). Other streams
 * (ct_record_stream, as torch's record_stream): a live block keeps the list
 * of the other streams it was recorded on. Its free records an event on each
 * and parks the block (pending: neither free nor mergeable) until all those
 * events have completed, polled with cudaEventQuery at the next allocations,
 * never waited for, except on the out-of-memory path and in empty_cache.
 * Events come from a per-device cache. Without record_stream, a tensor used
 * on another stream must be synchronized with by the user before it is freed.
 *
 * Out of memory: a segment of the request rounded up to 2 MiB is tried
 * instead of a 20 MiB one, the blocks the bins hold are searched
 * exhaustively, then the device's fully free segments go back to the driver
 * (after waiting for the pending events and the device) and the allocation is
 * retried once; a failure then records CT_ERR_OOM with the statistics.
 * Workspaces that have alternatives (cuDNN's) ask with
 * ct__cuda_alloc_workspace, which never empties the cache.
 *
 * Statistics (ct_memory_stats): allocated/requested (rounding), reserved,
 * inactive_split (free bytes in segments that also hold live blocks: the
 * fragmentation), the largest free block, segments and driver calls.
 *
 * Pinned host memory (device_index -1): cudaHostAlloc'd blocks, never split
 * (size classes of 512 B up to 1 MiB, 2 MiB above; a request takes a cached
 * block of at most twice its size), with the same stream lists: a
 * non-blocking transfer records the stream it was queued on
 * (ct__cuda_pinned_in_use, called by copy.cu), so the block is not reused
 * while the copy may still read or write it. The driver's call runs on the
 * calling thread's current device (ct_cuda_set_device), so that a process
 * working on GPU k creates no context on GPU 0.
 *
 * CT_CUDA_NO_CACHE=1 in the environment bypasses the cache: every request is
 * a cudaMalloc of exactly its size, every free waits for the device and calls
 * cudaFree, so that compute-sanitizer sees each tensor's own bounds.
 *
 * A destroyed stream (ct__cuda_forget_stream, after the stream was
 * synchronized) is removed from every list; its segments move to the default
 * stream.
 *
 * Locks: one mutex per pool, taken once per allocation and once per free;
 * the event cache's mutex is taken inside a pool's and takes nothing else. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"
#include "core/alloc.h"

#define CTC_MAX_DEV 64          /* device.cu's */
#define PINNED_POOL CTC_MAX_DEV /* pools[] index of the pinned host pool */
#define LIVE_BUCKETS 4096

#define MIN_BLOCK ((size_t)512)          /* the rounding of every request */
#define SMALL_REQUEST ((size_t)1 << 20)  /* requests up to this: the small pool */
#define SMALL_SEGMENT ((size_t)2 << 20)  /* segment of the small pool */
#define LARGE_SEGMENT ((size_t)20 << 20) /* segment for requests below OWN_SEGMENT */
#define OWN_SEGMENT ((size_t)10 << 20)   /* requests from here get a segment of their own */
#define SEGMENT_ROUND ((size_t)2 << 20)  /* ... rounded up to this */
#define FIT_TRIES 8                      /* blocks tried in the request's own class */

/* Size classes of multiples of 512 B: u = size / 512; exact for u < 16, then
 * 8 classes per power of two. The largest size_t falls in class 431. */
#define SUB_BITS 3
#define NCLASSES 432
#define NWORDS ((NCLASSES + 63) / 64)

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

struct segment;
struct bin_set;

enum block_state { B_LIVE, B_FREE, B_PENDING };

typedef struct block {
  char *ptr;
  size_t size;      /* bytes: a multiple of 512 (the exact request with CT_CUDA_NO_CACHE) */
  size_t requested; /* live: the bytes asked for */
  struct segment *seg;
  struct block *prev, *next;   /* the segment's neighbours, by address */
  struct block *lprev, *lnext; /* free: its bin's list; pending: the pool's pending list */
  struct block *hnext;         /* live: the chain of its hash bucket */
  int cls;                     /* free: its bin's size class */
  enum block_state state;
  use *uses; /* live: streams recorded by record_stream (other than the segment's) */
  int nuses, cap_uses;
  pending *events; /* pending: to complete before reuse */
  int nevents, cap_events;
} block;

/* Free blocks of one (stream, pool) by size class. */
typedef struct bin_set {
  cudaStream_t stream;
  bool small;
  uint64_t nonempty[NWORDS]; /* bit c: head[c] != NULL */
  block *head[NCLASSES];
} bin_set;

/* Memory from one cudaMalloc / cudaHostAlloc. */
typedef struct segment {
  char *ptr;
  size_t size;
  size_t used;          /* bytes of its live and pending blocks */
  struct bin_set *bins; /* where its free blocks go: its stream and pool */
  struct block *first;  /* the block at ptr (never merged away) */
  struct segment *prev, *next;
} segment;

typedef struct pool {
  pthread_mutex_t mu;
  bin_set **bins; /* one per (stream, small/large) met */
  int nbins, cap_bins;
  segment *segments;
  block *pending;            /* freed blocks whose events are outstanding */
  block *live[LIVE_BUCKETS]; /* blocks in use, by pointer */
  ct_memory_stats st;
} pool;

static pool pools[CTC_MAX_DEV + 1];
static bool no_cache = false; /* CT_CUDA_NO_CACHE */
static pthread_once_t pools_once = PTHREAD_ONCE_INIT;
static void init_pools(void) {
  for (int i = 0; i <= CTC_MAX_DEV; i++) pthread_mutex_init(&pools[i].mu, NULL);
  const char *v = getenv("CT_CUDA_NO_CACHE");
  no_cache = v && *v && strcmp(v, "0") != 0;
}

static unsigned bucket(const void *p) {
  return (unsigned)(((uintptr_t)p >> 9) * 2654435761u >> 20) & (LIVE_BUCKETS - 1);
}

static double gib(size_t n) { return (double)n / (double)((size_t)1 << 30); }

static size_t round_up(size_t n, size_t to) {
  if (n > SIZE_MAX - to) return n; /* the driver refuses it anyway */
  return (n + to - 1) / to * to;
}

/* Pinned blocks are never split: few sizes keep them reusable. */
static size_t pinned_round(size_t n) {
  return n <= SMALL_REQUEST ? round_up(n ? n : 1, MIN_BLOCK) : round_up(n, SEGMENT_ROUND);
}

static int size_class(size_t size) {
  size_t u = size / MIN_BLOCK;
  if (u < ((size_t)1 << SUB_BITS)) return (int)u;
  int msb = 63 - __builtin_clzll((unsigned long long)u);
  return ((msb - SUB_BITS + 1) << SUB_BITS) |
         (int)((u >> (msb - SUB_BITS)) & ((1u << SUB_BITS) - 1));
}

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

/* ---- Bins ------------------------------------------------------------------------------ */

/* The bins of (stream, small) in P, made on first use when `create`; NULL if
 * absent (or out of host memory). */
static bin_set *bins_of(pool *P, cudaStream_t s, bool small, bool create) {
  for (int i = 0; i < P->nbins; i++)
    if (P->bins[i]->stream == s && P->bins[i]->small == small) return P->bins[i];
  if (!create || !reserve(&P->bins, &P->cap_bins, P->nbins + 1)) return NULL;
  bin_set *B = (bin_set *)ct__calloc(1, sizeof *B);
  if (!B) return NULL;
  B->stream = s;
  B->small = small;
  P->bins[P->nbins++] = B;
  return B;
}

static void bin_insert_into(bin_set *B, block *b) {
  int c = size_class(b->size);
  b->cls = c;
  b->state = B_FREE;
  b->lprev = NULL;
  b->lnext = B->head[c];
  if (B->head[c]) B->head[c]->lprev = b;
  B->head[c] = b;
  B->nonempty[c / 64] |= (uint64_t)1 << (c % 64);
}

static void bin_remove_from(bin_set *B, block *b) {
  int c = b->cls;
  if (b->lprev)
    b->lprev->lnext = b->lnext;
  else
    B->head[c] = b->lnext;
  if (b->lnext) b->lnext->lprev = b->lprev;
  if (!B->head[c]) B->nonempty[c / 64] &= ~((uint64_t)1 << (c % 64));
  b->lprev = b->lnext = NULL;
}

static void bin_insert(block *b) { bin_insert_into(b->seg->bins, b); }
static void bin_remove(block *b) { bin_remove_from(b->seg->bins, b); }

/* The first non-empty class >= c, or -1. */
static int next_class(const bin_set *B, int c) {
  for (int w = c / 64; w < NWORDS; w++) {
    uint64_t m = B->nonempty[w];
    if (w == c / 64) m &= ~(uint64_t)0 << (c % 64);
    if (m) return w * 64 + __builtin_ctzll(m);
  }
  return -1;
}

/* A free block of B with size in [size, max], not unlinked; NULL if none.
 * The request's own class is tried FIT_TRIES blocks deep (all of it when
 * `exhaustive`); the classes above hold only blocks larger than size. */
static block *find_free(const bin_set *B, size_t size, size_t max, bool exhaustive) {
  int c = size_class(size);
  int tries = 0;
  for (block *b = B->head[c]; b && (exhaustive || tries < FIT_TRIES); b = b->lnext, tries++)
    if (b->size >= size && b->size <= max) return b;
  int k = next_class(B, c + 1);
  if (k < 0) return NULL;
  block *b = B->head[k]; /* ascending classes: the smallest sizes above */
  return b->size <= max ? b : NULL;
}

/* The largest free block of P. */
static size_t largest_free(const pool *P) {
  size_t best = 0;
  for (int i = 0; i < P->nbins; i++) {
    const bin_set *B = P->bins[i];
    for (int w = NWORDS - 1; w >= 0; w--) {
      if (!B->nonempty[w]) continue;
      int c = w * 64 + 63 - __builtin_clzll(B->nonempty[w]);
      for (const block *b = B->head[c]; b; b = b->lnext)
        if (b->size > best) best = b->size;
      break;
    }
  }
  return best;
}

/* ---- Segments and blocks --------------------------------------------------------------- */

static size_t seg_inactive(const segment *s) { return s->used ? s->size - s->used : 0; }

/* Changes the bytes in use of s, keeping the pool's inactive_split. */
static void seg_add_used(pool *P, segment *s, size_t add, size_t sub) {
  P->st.inactive_split -= seg_inactive(s);
  s->used = s->used + add - sub;
  P->st.inactive_split += seg_inactive(s);
}

static void block_destroy(block *b) {
  free(b->uses);
  free(b->events);
  free(b);
}

/* Puts b (no longer live or pending) into its bins, merged with its free
 * neighbours. */
static void make_free(pool *P, block *b) {
  block *n = b->next, *p = b->prev;
  if (n && n->state == B_FREE) {
    bin_remove(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    block_destroy(n);
  }
  if (p && p->state == B_FREE) {
    bin_remove(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    block_destroy(b);
    b = p;
  }
  bin_insert(b);
}

/* Cuts b (free, unlinked) to `size` bytes; the rest becomes a free block.
 * Out of host memory, b stays whole: larger than asked, never unsafe. */
static void split(block *b, size_t size) {
  if (b->size - size < MIN_BLOCK) return;
  block *r = (block *)ct__calloc(1, sizeof *r);
  if (!r) return;
  r->ptr = b->ptr + size;
  r->size = b->size - size;
  r->seg = b->seg;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  bin_insert(r); /* its neighbours are b (being taken) and a block that was not free */
}

static cudaError_t raw_alloc(void **p, size_t size, bool pinned) {
  cudaError_t e = pinned ? cudaHostAlloc(p, size, cudaHostAllocPortable) : cudaMalloc(p, size);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

static void raw_free(void *p, bool pinned) {
  cudaError_t e = pinned ? cudaFreeHost(p) : cudaFree(p);
  if (e != cudaSuccess) (void)cudaGetLastError();
}

/* A new segment of `size` bytes as one free block in B, from the driver
 * (the runtime's current device is the pool's). NULL with *err set. */
static segment *segment_new(pool *P, bin_set *B, size_t size, bool pinned, cudaError_t *err) {
  segment *s = (segment *)ct__calloc(1, sizeof *s);
  block *b = (block *)ct__calloc(1, sizeof *b);
  void *ptr = NULL;
  *err = s && b ? raw_alloc(&ptr, size, pinned) : cudaErrorMemoryAllocation;
  if (*err != cudaSuccess) {
    free(s);
    free(b);
    return NULL;
  }
  s->ptr = (char *)ptr;
  s->size = size;
  s->bins = B;
  s->first = b;
  s->next = P->segments;
  if (P->segments) P->segments->prev = s;
  P->segments = s;
  b->ptr = s->ptr;
  b->size = size;
  b->seg = s;
  bin_insert(b);
  P->st.reserved += size;
  P->st.num_segments++;
  P->st.num_driver_allocs++;
  return s;
}

/* Returns segment s, one free block, to the driver. */
static void segment_release(pool *P, segment *s, bool pinned) {
  block *b = s->first;
  if (b->state == B_FREE) bin_remove(b);
  raw_free(s->ptr, pinned);
  if (s->prev)
    s->prev->next = s->next;
  else
    P->segments = s->next;
  if (s->next) s->next->prev = s->prev;
  P->st.reserved -= s->size;
  P->st.num_segments--;
  block_destroy(b);
  free(s);
}

/* Frees pending block b, whose events are done: out of the list, into the bins. */
static void pending_done(pool *P, block *b) {
  if (b->lprev)
    b->lprev->lnext = b->lnext;
  else
    P->pending = b->lnext;
  if (b->lnext) b->lnext->lprev = b->lprev;
  seg_add_used(P, b->seg, 0, b->size);
  make_free(P, b);
}

/* Polls the pending blocks' events; those done become free (lock held). */
static void poll_pending(pool *P) {
  for (block *b = P->pending, *next; b; b = next) {
    next = b->lnext; /* make_free merges only with free blocks: next survives */
    if (events_done(b)) pending_done(P, b);
  }
}

/* Waits for every pending block of P and frees it (lock held). */
static void wait_pending(pool *P) {
  while (P->pending) {
    events_wait(P->pending);
    pending_done(P, P->pending);
  }
}

/* Returns P's fully free segments to the driver, after waiting for the
 * pending events (lock held). A device block goes back to the cache as soon
 * as its last use is queued, so work on its stream may still read or write
 * it: the device is synchronized first (the caller made it the current
 * device), since cudaFree is documented only to "may" synchronize
 * (cuMemFree), not to wait for the work using the block. */
static void release_free_segments(pool *P, bool pinned) {
  wait_pending(P);
  bool any = false;
  for (segment *s = P->segments; s && !any; s = s->next) any = s->used == 0;
  if (!any) return;
  if (!pinned && cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
  for (segment *s = P->segments; s;) {
    segment *next = s->next;
    if (s->used == 0) segment_release(P, s, pinned);
    s = next;
  }
}

/* ---- Allocation ------------------------------------------------------------------------ */

/* The driver's segment size for a device request of `size` (rounded). */
static size_t segment_size(size_t size) {
  if (size <= SMALL_REQUEST) return SMALL_SEGMENT;
  if (size < OWN_SEGMENT) return LARGE_SEGMENT;
  return round_up(size, SEGMENT_ROUND);
}

/* Records the failure of a driver allocation of `size` (lock released). */
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
  ct__fail_status(code,
                  "cuda:%d out of memory allocating %.2f GiB (allocated %.2f GiB, reserved "
                  "%.2f GiB, peak %.2f GiB, free in the cache %.2f GiB of which the largest block "
                  "%.2f GiB, by ctensor; %.2f GiB free of %.2f GiB on the device): %s",
                  dev, gib(size), gib(st->allocated), gib(st->reserved), gib(st->peak_allocated),
                  gib(st->reserved - st->allocated), gib(st->largest_free_block), gib(free_b),
                  gib(total_b), cudaGetErrorString(e));
}

/* A free block of at least `size` bytes for stream s in P, unlinked from its
 * bins: from the cache, else from a new segment (lock held). With `quiet`,
 * NULL when neither has room (no error recorded, the cache kept); else the
 * out-of-memory path of the file's comment, NULL with the error recorded.
 * The lock is held on return either way. */
static block *obtain(pool *P, int dev, size_t size, cudaStream_t s, bool pinned, bool quiet,
                     cudaError_t *err) {
  bool small = size <= SMALL_REQUEST;
  size_t max = pinned && size <= SIZE_MAX / 2 ? 2 * size : SIZE_MAX;
  *err = cudaSuccess;
  bin_set *B = bins_of(P, s, small, false);
  block *b = B ? find_free(B, size, max, false) : NULL;
  if (b) {
    P->st.num_cache_hits++;
    bin_remove(b);
    return b;
  }
  if (!(B = bins_of(P, s, small, true))) {
    *err = cudaErrorMemoryAllocation;
    return NULL;
  }
  /* the driver's device: the op's for device memory; for pinned memory the
   * calling thread's (cudaHostAlloc makes a context on the current device).
   * Left current, as ops leave theirs: putting back a new thread's default
   * (GPU 0, with no context yet) would make a context there. */
  if (pinned)
    (void)switch_device(ct__cuda_current_device());
  else if (ctc_use_device("alloc", dev) != CT_OK) {
    *err = cudaErrorInvalidDevice;
    return NULL;
  }
  size_t seg = no_cache || pinned ? size : segment_size(size);
  size_t minimal = no_cache || pinned ? size : round_up(size, SEGMENT_ROUND);
  segment *g = segment_new(P, B, seg, pinned, err);
  if (!g && seg > minimal) g = segment_new(P, B, minimal, pinned, err); /* a tight fit */
  if (!g && !quiet && !no_cache) {
    if ((b = find_free(B, size, max, true))) { /* a block the bounded search passed over */
      P->st.num_cache_hits++;
      bin_remove(b);
      return b;
    }
    P->st.num_cache_flushes++;
    release_free_segments(P, pinned);
    g = segment_new(P, B, seg, pinned, err);
    if (!g && seg > minimal) g = segment_new(P, B, minimal, pinned, err);
  }
  if (!g) return NULL;
  b = g->first;
  bin_remove(b);
  return b;
}

static void live_insert(pool *P, block *b) {
  unsigned h = bucket(b->ptr);
  b->hnext = P->live[h];
  P->live[h] = b;
}

static void *alloc_impl(int dev, size_t nbytes, bool pinned, bool quiet) {
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
  size_t size = no_cache ? (nbytes ? nbytes : 1)
                : pinned ? pinned_round(nbytes)
                         : round_up(nbytes ? nbytes : 1, MIN_BLOCK);
  cudaStream_t stream = pinned ? 0 : ctc_stream(dev);
  pthread_mutex_lock(&P->mu);
  P->st.num_allocs++;
  if (P->pending) poll_pending(P);
  cudaError_t err;
  block *b = obtain(P, dev, size, stream, pinned, quiet, &err);
  if (!b) {
    P->st.num_allocs--;
    P->st.largest_free_block = largest_free(P);
    ct_memory_stats st = P->st;
    pthread_mutex_unlock(&P->mu);
    if (err == cudaErrorInvalidDevice) return NULL; /* recorded by ctc_use_device */
    if (!quiet) fail_alloc(dev, size, pinned, err, &st);
    return NULL;
  }
  if (!pinned && !no_cache) split(b, size);
  b->state = B_LIVE;
  b->requested = nbytes;
  seg_add_used(P, b->seg, b->size, 0);
  P->st.allocated += b->size;
  P->st.requested += nbytes;
  if (P->st.allocated > P->st.peak_allocated) P->st.peak_allocated = P->st.allocated;
  live_insert(P, b);
  pthread_mutex_unlock(&P->mu);
  return b->ptr;
}

extern "C" void *ct__cuda_alloc(int dev, size_t nbytes, bool pinned) {
  return alloc_impl(dev, nbytes, pinned, false);
}

extern "C" void *ct__cuda_alloc_workspace(int dev, size_t nbytes) {
  return alloc_impl(dev, nbytes, false, true);
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
  while (*pp && (*pp)->ptr != ptr) pp = &(*pp)->hnext;
  block *b = *pp;
  if (b && unlink) *pp = b->hnext;
  return b;
}

/* The live block holding address p (a view's data may start inside it). */
static block *find_live_containing(pool *P, const void *p) {
  block *b = find_live(P, p, false);
  for (int h = 0; !b && h < LIVE_BUCKETS; h++)
    for (block *c = P->live[h]; c && !b; c = c->hnext)
      if ((const char *)p >= c->ptr && (const char *)p < c->ptr + c->size) b = c;
  return b;
}

/* CT_CUDA_NO_CACHE: b's memory goes back to the driver once every use of it
 * is done (lock held). */
static void release_now(pool *P, int dev, block *b, bool pinned) {
  events_wait(b);
  segment *s = b->seg;
  seg_add_used(P, s, 0, b->size);
  b->state = B_PENDING; /* not in a bin: segment_release leaves the bins alone */
  if (!pinned) {
    int prev = switch_device(dev);
    if (cudaDeviceSynchronize() != cudaSuccess) (void)cudaGetLastError();
    segment_release(P, s, pinned);
    restore_device(prev, dev);
  } else {
    segment_release(P, s, pinned);
  }
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
  P->st.requested -= b->requested;
  for (int i = 0; i < b->nuses; i++) record_use(b, b->uses[i]);
  b->nuses = 0;
  if (no_cache) {
    release_now(P, dev, b, pinned);
  } else if (b->nevents > 0) {
    b->state = B_PENDING;
    b->lprev = NULL;
    b->lnext = P->pending;
    if (P->pending) P->pending->lprev = b;
    P->pending = b;
  } else {
    seg_add_used(P, b->seg, 0, b->size);
    make_free(P, b);
  }
  pthread_mutex_unlock(&P->mu);
}

/* ---- record_stream ---------------------------------------------------------------------- */

/* Adds (dev, s) to b's streams unless reuse is already ordered after it. */
static ct_status add_use(block *b, int dev, cudaStream_t s, bool pinned) {
  if ((!pinned && s == b->seg->bins->stream) || has_use(b, dev, s)) return CT_OK;
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
  if (st != CT_OK) {               /* no room to remember the stream: wait for the copy now */
    int prev = switch_device(dev); /* stream 0 names the current device's */
    if (cudaStreamSynchronize(ctc_stream(dev)) != cudaSuccess) (void)cudaGetLastError();
    restore_device(prev, dev);
  }
}

/* Moves the free blocks of B into D (same pool kind); B ends empty. */
static void move_bins(bin_set *B, bin_set *D) {
  for (int c = 0; c < NCLASSES; c++)
    while (B->head[c]) {
      block *b = B->head[c];
      bin_remove_from(B, b);
      bin_insert_into(D, b);
    }
}

/* Moves the segments of a dying stream to the default stream and drops it
 * from the stream lists (the caller synchronized the stream). */
static void forget_in(pool *P, int dev, cudaStream_t s, bool pinned) {
  pthread_mutex_lock(&P->mu);
  for (int i = 0; !pinned && i < P->nbins; i++) {
    bin_set *B = P->bins[i];
    if (B->stream != s) continue;
    bin_set *D = bins_of(P, 0, B->small, false);
    if (!D) { /* the default stream has none of this kind yet: B becomes them */
      B->stream = 0;
      continue;
    }
    move_bins(B, D);
    for (segment *g = P->segments; g; g = g->next)
      if (g->bins == B) g->bins = D; /* their live and pending blocks too */
    free(B);
    P->bins[i--] = P->bins[--P->nbins];
  }
  for (int h = 0; h < LIVE_BUCKETS; h++)
    for (block *b = P->live[h]; b; b = b->hnext) remove_use(b, dev, s);
  pthread_mutex_unlock(&P->mu);
}

extern "C" void ct__cuda_forget_stream(int dev, void *stream) {
  if (dev < 0 || dev >= CTC_MAX_DEV) return;
  forget_in(pool_of(dev, false), dev, (cudaStream_t)stream, false);
  forget_in(pool_of(dev, true), dev, (cudaStream_t)stream, true);
}

/* ---- Statistics, empty_cache, consistency ------------------------------------------------ */

extern "C" ct_status ct__cuda_memory_stats(int dev, ct_memory_stats *out) {
  pthread_once(&pools_once, init_pools);
  if (dev < 0 || dev >= ct__cuda_device_count())
    return ct__fail_status(CT_ERR_UNAVAILABLE,
                           "memory_stats: cuda:%d is not available (%d GPU(s) visible)", dev,
                           ct__cuda_device_count());
  pool *P = &pools[dev];
  pthread_mutex_lock(&P->mu);
  P->st.largest_free_block = largest_free(P);
  *out = P->st;
  pthread_mutex_unlock(&P->mu);
  return CT_OK;
}

extern "C" ct_status ct__cuda_empty_cache(int dev) {
  pthread_once(&pools_once, init_pools);
  if (dev < 0 || dev >= ct__cuda_device_count())
    return ct__fail_status(CT_ERR_UNAVAILABLE,
                           "empty_cache: cuda:%d is not available (%d GPU(s) visible)", dev,
                           ct__cuda_device_count());
  ct_status st = ctc_use_device("empty_cache", dev);
  if (st != CT_OK) return st;
  for (int i = 0; i < 2; i++) {
    pool *P = &pools[i == 0 ? dev : PINNED_POOL];
    pthread_mutex_lock(&P->mu);
    release_free_segments(P, i == 1);
    pthread_mutex_unlock(&P->mu);
  }
  events_release(dev);
  return CT_OK;
}

/* Checks every invariant of pool P (lock held); false with msg set on the first broken one. */
static bool check_pool(const pool *P, char *msg, size_t n) {
#define BROKEN(...) return snprintf(msg, n, __VA_ARGS__), false
  size_t allocated = 0, requested = 0, reserved = 0, inactive = 0;
  uint64_t segments = 0, nfree = 0, nlive = 0, npending = 0;
  for (const segment *s = P->segments; s; s = s->next) {
    segments++;
    reserved += s->size;
    size_t used = 0, covered = 0;
    if (!s->first || s->first->ptr != s->ptr || s->first->prev)
      BROKEN("segment %p: bad first block", s->ptr);
    bool bins_known = false;
    for (int i = 0; i < P->nbins; i++) bins_known |= P->bins[i] == s->bins;
    if (!bins_known) BROKEN("segment %p: its bins are not the pool's", s->ptr);
    for (const block *b = s->first; b; b = b->next) {
      if (b->seg != s) BROKEN("block %p: wrong segment", b->ptr);
      if (b->ptr != s->ptr + covered)
        BROKEN("block %p: not contiguous with its predecessor", b->ptr);
      if (b->next && b->next->prev != b) BROKEN("block %p: broken links", b->ptr);
      covered += b->size;
      if (b->state == B_FREE) {
        nfree++;
        if (b->next && b->next->state == B_FREE)
          BROKEN("blocks %p and %p: free neighbours not merged", b->ptr, b->next->ptr);
        if (b->cls != size_class(b->size))
          BROKEN("block %p: class %d for %zu bytes", b->ptr, b->cls, b->size);
        const block *f = s->bins->head[b->cls];
        while (f && f != b) f = f->lnext;
        if (!f) BROKEN("free block %p (%zu bytes) is not in its bin", b->ptr, b->size);
      } else {
        used += b->size;
        if (b->state == B_LIVE) allocated += b->size, requested += b->requested, nlive++;
        if (b->state == B_PENDING) npending++;
      }
    }
    if (covered != s->size)
      BROKEN("segment %p: blocks cover %zu of %zu bytes", s->ptr, covered, s->size);
    if (used != s->used)
      BROKEN("segment %p: %zu bytes in use, recorded %zu", s->ptr, used, s->used);
    inactive += seg_inactive(s);
  }
  uint64_t in_bins = 0;
  for (int i = 0; i < P->nbins; i++) {
    const bin_set *B = P->bins[i];
    for (int c = 0; c < NCLASSES; c++) {
      bool bit = (B->nonempty[c / 64] >> (c % 64)) & 1;
      if (bit != (B->head[c] != NULL))
        BROKEN("bins of stream %p: bitmap wrong at class %d", (void *)B->stream, c);
      for (const block *b = B->head[c]; b; b = b->lnext) {
        in_bins++;
        if (b->state != B_FREE || b->seg->bins != B) BROKEN("block %p: in the wrong bins", b->ptr);
      }
    }
  }
  uint64_t hashed = 0, listed = 0;
  for (int h = 0; h < LIVE_BUCKETS; h++)
    for (const block *b = P->live[h]; b; b = b->hnext) hashed += b->state == B_LIVE;
  for (const block *b = P->pending; b; b = b->lnext) listed += b->state == B_PENDING;
  if (in_bins != nfree)
    BROKEN("%llu blocks in the bins, %llu free in segments", (unsigned long long)in_bins,
           (unsigned long long)nfree);
  if (hashed != nlive)
    BROKEN("%llu live blocks in the table, %llu in segments", (unsigned long long)hashed,
           (unsigned long long)nlive);
  if (listed != npending)
    BROKEN("%llu pending blocks listed, %llu in segments", (unsigned long long)listed,
           (unsigned long long)npending);
  const ct_memory_stats *st = &P->st;
  if (st->allocated != allocated) BROKEN("allocated %zu, blocks say %zu", st->allocated, allocated);
  if (st->requested != requested) BROKEN("requested %zu, blocks say %zu", st->requested, requested);
  if (st->reserved != reserved) BROKEN("reserved %zu, segments say %zu", st->reserved, reserved);
  if (st->inactive_split != inactive)
    BROKEN("inactive_split %zu, segments say %zu", st->inactive_split, inactive);
  if (st->num_segments != segments)
    BROKEN("num_segments %llu, counted %llu", (unsigned long long)st->num_segments,
           (unsigned long long)segments);
  return true;
#undef BROKEN
}

extern "C" bool ct__cuda_allocator_check(int dev, bool pinned, char *msg, size_t n) {
  pool *P = pool_of(dev, pinned);
  if (!P) return snprintf(msg, n, "no pool for cuda:%d", dev), false;
  pthread_mutex_lock(&P->mu);
  bool ok = check_pool(P, msg, n);
  pthread_mutex_unlock(&P->mu);
  return ok;
}
