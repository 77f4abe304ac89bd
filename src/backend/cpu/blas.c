/* The CPU BLAS, loaded when a kernel first needs it rather than with the
 * library (blas.h).
 *
 * OpenBLAS reserves a 128 MiB buffer for each thread it may run when it
 * starts (its constructor) and for each thread that calls it, and retries a
 * reservation forever when the address-space limit refuses it: linked as a
 * dependency of libctensor, a program under `ulimit -v` hung before main. So:
 *  - it is loaded here, on first use, with OPENBLAS_NUM_THREADS=1 set for the
 *    dlopen only: its constructor then reserves nothing and starts no thread.
 *    ctensor splits products across its own pool (core/parallel.h) and calls
 *    the BLAS single-threaded, and no second pool spins against it;
 *  - with a finite RLIMIT_AS, the room is checked first, by reserving it and
 *    giving it back: the library's mapping and a buffer per thread that will
 *    call it. With room for fewer buffers than ctensor has threads, products
 *    run on the calling thread only; with no room the load fails with
 *    CT_ERR_OOM naming the limit, where OpenBLAS would have hung.
 * The file is the build's (CT_BLAS_PATH: the pthread build of OpenBLAS), else
 * the system's libopenblas.so.0. A build that is not thread-safe (Debian's
 * serial flavour: openblas_get_parallel() == 0) is called from one thread at
 * a time. */
#define _GNU_SOURCE
#include "backend/cpu/blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#ifndef CT_BLAS_PATH
#define CT_BLAS_PATH "libopenblas.so.0"
#endif
#define CT_BLAS_SONAME "libopenblas.so.0"
/* OpenBLAS's buffer per calling thread (BUFFER_SIZE on x86-64 and arm64), and
 * a margin for the pages it adds. */
#define CT_BLAS_BUFFER ((size_t)130 << 20)

ct_blas_fns ct__blas_fns;

static struct {
  pthread_once_t once;
  ct_status status;
  int max_threads;
  char error[768];
  char describe[512];
  void *handle; /* the opened library (lapack.c resolves LAPACK there) */
} blas = {.once = PTHREAD_ONCE_INIT};

/* Whether `bytes` more of address space can be mapped now (always, without
 * an RLIMIT_AS). */
static bool room_for(size_t bytes) {
  struct rlimit r;
  if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return true;
  void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, bytes);
  return true;
}

static size_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (size_t)st.st_size : (size_t)64 << 20;
}

/* dlopen with OPENBLAS_NUM_THREADS=1 in the environment for its constructor,
 * then the program's value back. */
static void *open_single_threaded(const char *path) {
  const char *old = getenv("OPENBLAS_NUM_THREADS");
  char *saved = old ? strdup(old) : NULL;
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (saved) {
    setenv("OPENBLAS_NUM_THREADS", saved, 1);
    free(saved);
  } else {
    unsetenv("OPENBLAS_NUM_THREADS");
  }
  return h;
}

static void load(void) {
  int nt = ct__num_threads();
  const char *path = CT_BLAS_PATH;
  size_t lib = file_size(path);
  if (!room_for(lib + 2 * CT_BLAS_BUFFER)) {
    blas.status = CT_ERR_OOM;
    snprintf(blas.error, sizeof blas.error,
             "the address-space limit (ulimit -v) leaves no room for OpenBLAS (%zu MiB: its "
             "code and one 128 MiB buffer per thread that calls it)",
             (lib + 2 * CT_BLAS_BUFFER) >> 20);
    return;
  }
  blas.max_threads = room_for(lib + (size_t)(nt + 1) * CT_BLAS_BUFFER) ? nt : 1;
  void *h = open_single_threaded(path);
  if (!h && strcmp(path, CT_BLAS_SONAME) != 0) h = open_single_threaded(path = CT_BLAS_SONAME);
  if (!h) {
    const char *e = dlerror();
    blas.status = CT_ERR_UNAVAILABLE;
    snprintf(blas.error, sizeof blas.error, "the BLAS could not be loaded: %s",
             e ? e : CT_BLAS_SONAME);
    return;
  }
  *(void **)&ct__blas_fns.sgemm = dlsym(h, "cblas_sgemm");
  *(void **)&ct__blas_fns.dgemm = dlsym(h, "cblas_dgemm");
  *(void **)&ct__blas_fns.sgemv = dlsym(h, "cblas_sgemv");
  *(void **)&ct__blas_fns.dgemv = dlsym(h, "cblas_dgemv");
  if (!ct__blas_fns.sgemm || !ct__blas_fns.dgemm || !ct__blas_fns.sgemv || !ct__blas_fns.dgemv) {
    blas.status = CT_ERR_UNAVAILABLE;
    snprintf(blas.error, sizeof blas.error, "%s has no CBLAS (cblas_sgemm & co.)", path);
    return;
  }
  /* Already loaded by the program with threads of its own: one thread now. */
  void (*set_threads)(int);
  int (*parallel)(void);
  char *(*config)(void);
  *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
  *(void **)&parallel = dlsym(h, "openblas_get_parallel");
  *(void **)&config = dlsym(h, "openblas_get_config");
  if (set_threads) set_threads(1);
  if (parallel && parallel() == 0) blas.max_threads = 1;
  Dl_info info;
  const char *file =
      dladdr((void *)ct__blas_fns.sgemm, &info) && info.dli_fname ? info.dli_fname : path;
  snprintf(blas.describe, sizeof blas.describe, "%s (%s), single-threaded, %s",
           config ? config() : "BLAS", file,
           blas.max_threads == 1 ? "called from one thread at a time"
                                 : "called from each of ctensor's threads");
  blas.handle = h;
  blas.status = CT_OK;
}

ct_status ct__blas_load(const char *op) {
  pthread_once(&blas.once, load);
  if (blas.status == CT_OK) return CT_OK;
  return ct__fail_status(blas.status, "%s: %s", op, blas.error);
}

void *ct__blas_handle(void) { return blas.handle; }

int ct__blas_max_threads(void) { return blas.max_threads > 0 ? blas.max_threads : 1; }

const char *ct__blas_describe(void) {
  pthread_once(&blas.once, load);
  return blas.status == CT_OK ? blas.describe : blas.error;
}
