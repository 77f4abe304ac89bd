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
 *  - the room is checked again before a call that may need a new buffer (a
 *    thread's first call, or more calls at once than ever before): memory
 *    the program took since the load can leave none, and OpenBLAS would then
 *    hang in that call. Without room the product runs in a plain loop of
 *    ctensor's own (slow, but it ends), with a warning saying why, once.
 * The file is the build's (CT_BLAS_PATH: the pthread build of OpenBLAS), else
 * the system's libopenblas.so.0. A build that is not thread-safe (Debian's
 * serial flavour: openblas_get_parallel() == 0) is called from one thread at
 * a time.
 *
 * OpenBLAS built with DYNAMIC_ARCH picks its kernels by CPU model when it
 * loads, and a release older than the CPU falls back to its generic Prescott
 * (SSE3) kernels: Debian's 0.3.21 does so on Sapphire Rapids, about 3x slower
 * in sgemm than its AVX-512 kernels. When the user has not chosen a core
 * (OPENBLAS_CORETYPE) and the library's pick has narrower vectors than the CPU
 * offers, the load switches it to the core matching the CPU's features
 * (Cooperlake with AVX512-BF16, SkylakeX with AVX-512, Haswell with AVX2 and
 * FMA) through OpenBLAS's own gotoblas_dynamic_quit/init, before any call has
 * allocated a buffer, and `ctensor info` says so. A pick as wide as the CPU
 * (a newer release that knows it) is left alone. */
#define _GNU_SOURCE
#include "backend/cpu/blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
static ct_blas_fns real; /* the library's functions; ct__blas_fns calls them through guards */

static struct {
  pthread_once_t once;
  ct_status status;
  int max_threads;
  char error[768];
  char describe[768];
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

/* ---- Calls that may need a new buffer ---- */

static struct {
  pthread_mutex_t first; /* one call that may need a new buffer at a time */
  atomic_int in_flight;  /* calls running now */
  atomic_int most;       /* the most calls that ever ran at once */
  atomic_bool warned;
} guard = {.first = PTHREAD_MUTEX_INITIALIZER};
static _Thread_local bool thread_has_buffer;

static void lock_for_fork(void) { pthread_mutex_lock(&guard.first); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&guard.first); }

/* Room for one more buffer, or a warning (once) and false. */
static bool room_for_buffer(void) {
  if (room_for(CT_BLAS_BUFFER)) return true;
  if (!atomic_exchange(&guard.warned, true))
    fprintf(stderr,
            "ctensor: warning: the address-space limit (ulimit -v) leaves no room for another "
            "%zu MiB buffer of OpenBLAS, which would wait for one forever: products that need "
            "one run in ctensor's own loop instead, much more slowly\n",
            CT_BLAS_BUFFER >> 20);
  return false;
}

/* Whether this call may go to the BLAS; then it must call end_call(). A call
 * that may make OpenBLAS map a new buffer (this thread's first, or more at
 * once than ever) holds guard.first until it ends, so that two of them do
 * not both count on the same room. */
static bool begin_call(bool *holds) {
  int n = atomic_fetch_add(&guard.in_flight, 1) + 1;
  *holds = !thread_has_buffer || n > atomic_load(&guard.most);
  if (!*holds) return true;
  pthread_mutex_lock(&guard.first);
  if (room_for_buffer()) return true;
  pthread_mutex_unlock(&guard.first);
  atomic_fetch_sub(&guard.in_flight, 1);
  return false;
}
static void end_call(bool holds) {
  int n = atomic_fetch_sub(&guard.in_flight, 1);
  if (!holds) return;
  thread_has_buffer = true;
  for (int m = atomic_load(&guard.most);
       n > m && !atomic_compare_exchange_weak(&guard.most, &m, n);) {
  }
  pthread_mutex_unlock(&guard.first);
}

/* op(X)[i][j] of a stored matrix: row-major, or column-major (its transpose
 * stored row-major), transposed or not. */
static size_t row_stride(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int ld) {
  return (o == CblasColMajor) != (t != CblasNoTrans) ? 1 : (size_t)ld;
}
static size_t col_stride(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int ld) {
  return (o == CblasColMajor) != (t != CblasNoTrans) ? (size_t)ld : 1;
}

/* C = alpha op(A) op(B) + beta C and y = alpha op(A) x + beta y in plain
 * loops, accumulated in double (beta 0: C is not read, as the BLAS). */
#define CT_LOOP_GEMM(name, T)                                                                     \
  static void name(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M,   \
                   int N, int K, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C, \
                   int ldc) {                                                                     \
    size_t ar = row_stride(o, ta, lda), ac = col_stride(o, ta, lda);                              \
    size_t br = row_stride(o, tb, ldb), bc = col_stride(o, tb, ldb);                              \
    size_t cr = row_stride(o, CblasNoTrans, ldc), cc = col_stride(o, CblasNoTrans, ldc);          \
    for (int i = 0; i < M; i++)                                                                   \
      for (int j = 0; j < N; j++) {                                                               \
        double s = 0;                                                                             \
        for (int p = 0; p < K; p++) s += (double)A[i * ar + p * ac] * (double)B[p * br + j * bc]; \
        T *c = &C[i * cr + j * cc];                                                               \
        *c = (T)(alpha * s + (beta == 0 ? 0 : (double)beta * (double)*c));                        \
      }                                                                                           \
  }
#define CT_LOOP_GEMV(name, T)                                                                     \
  static void name(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int M, int N, T alpha, const T *A, \
                   int lda, const T *x, int incx, T beta, T *y, int incy) {                       \
    int rows = t == CblasNoTrans ? M : N, cols = t == CblasNoTrans ? N : M;                       \
    size_t ar = row_stride(o, t, lda), ac = col_stride(o, t, lda);                                \
    const T *x0 = incx < 0 ? x - (ptrdiff_t)(cols - 1) * incx : x;                                \
    T *y0 = incy < 0 ? y - (ptrdiff_t)(rows - 1) * incy : y;                                      \
    for (int i = 0; i < rows; i++) {                                                              \
      double s = 0;                                                                               \
      for (int j = 0; j < cols; j++) s += (double)A[i * ar + j * ac] * (double)x0[j * incx];      \
      T *yi = &y0[i * incy];                                                                      \
      *yi = (T)(alpha * s + (beta == 0 ? 0 : (double)beta * (double)*yi));                        \
    }                                                                                             \
  }
CT_LOOP_GEMM(loop_sgemm, float)
CT_LOOP_GEMM(loop_dgemm, double)
CT_LOOP_GEMV(loop_sgemv, float)
CT_LOOP_GEMV(loop_dgemv, double)

/* The functions kernels call: the BLAS's, guarded, else the loop. */
#define CT_GUARDED(name, params, args) \
  static void guarded_##name params {  \
    bool holds;                        \
    if (!begin_call(&holds)) {         \
      loop_##name args;                \
      return;                          \
    }                                  \
    real.name args;                    \
    end_call(holds);                   \
  }
CT_GUARDED(sgemm,
           (enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N,
            int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
            float *C, int ldc),
           (o, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
CT_GUARDED(dgemm,
           (enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N,
            int K, double alpha, const double *A, int lda, const double *B, int ldb, double beta,
            double *C, int ldc),
           (o, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
CT_GUARDED(sgemv,
           (enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int M, int N, float alpha, const float *A,
            int lda, const float *x, int incx, float beta, float *y, int incy),
           (o, t, M, N, alpha, A, lda, x, incx, beta, y, incy))
CT_GUARDED(dgemv,
           (enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int M, int N, double alpha, const double *A,
            int lda, const double *x, int incx, double beta, double *y, int incy),
           (o, t, M, N, alpha, A, lda, x, incx, beta, y, incy))

/* ---- The kernels OpenBLAS runs (see the top of the file) ---- */

/* 3: AVX-512 with BF16, 2: AVX-512, 1: AVX2 and FMA, 0: older or unknown. */
static int core_rank(const char *name) {
  static const char *const by_rank[][4] = {
      {"Cooperlake", "SapphireRapids", NULL},
      {"SkylakeX", NULL},
      {"Haswell", "Zen", "Skylake", NULL},
  };
  for (int r = 0; r < 3; r++)
    for (int i = 0; by_rank[r][i]; i++)
      if (strcasecmp(name, by_rank[r][i]) == 0) return 3 - r;
  return 0;
}

/* The core matching this CPU's (and its OS's) vector features, or NULL. */
static const char *cpu_core(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

/* Switches the loaded library to cpu_core() when its own pick is narrower
 * and the user chose none; writes what happened (or "") to note. */
static void fix_core(void *h, char *note, size_t size) {
  note[0] = 0;
  const char *(*corename)(void);
  void (*quit)(void), (*init)(void);
  *(void **)&corename = dlsym(h, "openblas_get_corename");
  *(void **)&quit = dlsym(h, "gotoblas_dynamic_quit");
  *(void **)&init = dlsym(h, "gotoblas_dynamic_init");
  const char *want = cpu_core();
  if (getenv("OPENBLAS_CORETYPE") || !corename || !quit || !init || !want) return;
  char picked[32];
  snprintf(picked, sizeof picked, "%s", corename());
  if (core_rank(picked) >= core_rank(want)) return;
  setenv("OPENBLAS_CORETYPE", want, 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  snprintf(note, size,
           "; OpenBLAS picked %s for this CPU (a release older than it), ctensor "
           "switched it to %s (set OPENBLAS_CORETYPE to choose)",
           picked, corename());
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
  *(void **)&real.sgemm = dlsym(h, "cblas_sgemm");
  *(void **)&real.dgemm = dlsym(h, "cblas_dgemm");
  *(void **)&real.sgemv = dlsym(h, "cblas_sgemv");
  *(void **)&real.dgemv = dlsym(h, "cblas_dgemv");
  if (!real.sgemm || !real.dgemm || !real.sgemv || !real.dgemv) {
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
  char core_note[192];
  fix_core(h, core_note, sizeof core_note);
  if (parallel && parallel() == 0) blas.max_threads = 1;
  Dl_info info;
  const char *file = dladdr((void *)real.sgemm, &info) && info.dli_fname ? info.dli_fname : path;
  snprintf(blas.describe, sizeof blas.describe, "%s (%s), single-threaded, %s%s",
           config ? config() : "BLAS", file,
           blas.max_threads == 1 ? "called from one thread at a time"
                                 : "called from each of ctensor's threads",
           core_note);
  /* Without a limit there is nothing to guard (a limit set later is checked
   * by the guards only if the load found one; setrlimit after the load is
   * the program's business). */
  struct rlimit r;
  bool limited = getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
  if (limited) pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
  ct__blas_fns =
      limited ? (ct_blas_fns){guarded_sgemm, guarded_dgemm, guarded_sgemv, guarded_dgemv} : real;
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
