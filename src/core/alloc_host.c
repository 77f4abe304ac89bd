/* The host caching allocator.
 *
 * Large temporaries (a 40 MB result of an elementwise op, say) would pay a page
 * fault per 4 KiB page every time if they went back to the system on free, as
 * glibc does for blocks it maps with mmap. Blocks of CT_HOST_CACHE_MIN bytes and
 * more are therefore kept in size-class free lists and reused. Classes are
 * 4 per power of two (at most 25% slack). Smaller blocks come from malloc,
 * whose own thread caches are fast for them.
 *
 * The cache holds at most CT_CPU_CACHE_LIMIT bytes (environment, in MiB;
 * default 4096); CT_CPU_CACHE=0 turns caching off (sanitizer builds do).
 *
 * fork() copies the lock as it is: taken by a thread that does not exist in
 * the child, it would never be released there. So fork takes the lock first
 * (pthread_atfork, as malloc does with its arenas) and both sides release it;
 * the bins stay valid in the child, which has a copy of every block. */
#include <pthread.h>
#include <stdlib.h>

#include "core/internal.h"

#define CT_HOST_CACHE_MIN ((size_t)32 * 1024)
#define CT_HOST_ALIGN 64
#define NUM_CLASSES (4 * 64)

typedef struct free_block {
  struct free_block *next;
} free_block;

static struct {
  pthread_mutex_t lock;
  free_block *bins[NUM_CLASSES];
  size_t cached_bytes; /* bytes sitting in bins */
  size_t live_bytes;   /* bytes handed out */
  size_t peak_bytes;
  uint64_t num_allocs, num_hits;
  size_t limit;
  int enabled; /* -1 = not read yet */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .enabled = -1};

/* Class index and rounded size of a request s >= CT_HOST_CACHE_MIN. */
static int size_class(size_t s, size_t *rounded) {
  size_t m = s - 1;
  int k = 63 - __builtin_clzll((unsigned long long)m);
  size_t j = (m >> (k - 2)) & 3u;
  *rounded = (4u + j + 1u) << (k - 2);
  return 4 * k + (int)j;
}

static void lock_for_fork(void) { pthread_mutex_lock(&cache.lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&cache.lock); }
static void register_fork_handlers(void) {
  pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

/* Takes the lock, with the fork handlers registered before its first use. */
static void lock_cache(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_fork_handlers);
  pthread_mutex_lock(&cache.lock);
}

static void read_settings(void) {
  const char *on = getenv("CT_CPU_CACHE");
#ifdef CT_SANITIZE
  cache.enabled = on ? atoi(on) != 0 : 0; /* let ASan see every use after free */
#else
  cache.enabled = on ? atoi(on) != 0 : 1;
#endif
  const char *lim = getenv("CT_CPU_CACHE_LIMIT");
  long mib = lim ? atol(lim) : 4096;
  cache.limit = (size_t)(mib > 0 ? mib : 0) << 20;
}

void *ct__host_alloc(size_t nbytes) {
  if (nbytes < CT_HOST_CACHE_MIN) return ct__malloc(nbytes ? nbytes : 1);
  size_t rounded;
  int c = size_class(nbytes, &rounded);
  lock_cache();
  if (cache.enabled < 0) read_settings();
  cache.num_allocs++;
  free_block *b = cache.bins[c];
  if (b) {
    cache.bins[c] = b->next;
    cache.cached_bytes -= rounded;
    cache.num_hits++;
  }
  cache.live_bytes += rounded;
  if (cache.live_bytes > cache.peak_bytes) cache.peak_bytes = cache.live_bytes;
  pthread_mutex_unlock(&cache.lock);
  if (b) return b;
  void *p = ct__aligned_alloc(CT_HOST_ALIGN, rounded);
  if (!p) {
    /* Give the cache back to the system and try once more. */
    ct__host_empty_cache();
    p = ct__aligned_alloc(CT_HOST_ALIGN, rounded);
  }
  if (!p) {
    lock_cache();
    cache.live_bytes -= rounded;
    pthread_mutex_unlock(&cache.lock);
  }
  return p;
}

void ct__host_free(void *ptr, size_t nbytes) {
  if (!ptr) return;
  if (nbytes < CT_HOST_CACHE_MIN) {
    free(ptr);
    return;
  }
  size_t rounded;
  int c = size_class(nbytes, &rounded);
  lock_cache();
  cache.live_bytes -= rounded;
  bool keep = cache.enabled > 0 && cache.cached_bytes + rounded <= cache.limit;
  if (keep) {
    free_block *b = ptr;
    b->next = cache.bins[c];
    cache.bins[c] = b;
    cache.cached_bytes += rounded;
  }
  pthread_mutex_unlock(&cache.lock);
  if (!keep) free(ptr);
}

void ct__host_empty_cache(void) {
  lock_cache();
  free_block *all = NULL;
  for (int c = 0; c < NUM_CLASSES; c++) {
    while (cache.bins[c]) {
      free_block *b = cache.bins[c];
      cache.bins[c] = b->next;
      b->next = all;
      all = b;
    }
  }
  cache.cached_bytes = 0;
  pthread_mutex_unlock(&cache.lock);
  while (all) {
    free_block *next = all->next;
    free(all);
    all = next;
  }
}

void ct__host_memory_stats(ct_memory_stats *out) {
  lock_cache();
  *out = (ct_memory_stats){.allocated = cache.live_bytes,
                           .reserved = cache.live_bytes + cache.cached_bytes,
                           .peak_allocated = cache.peak_bytes,
                           .num_allocs = cache.num_allocs,
                           .num_cache_hits = cache.num_hits,
                           .requested = cache.live_bytes};
  pthread_mutex_unlock(&cache.lock);
}
