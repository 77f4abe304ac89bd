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
 * a time. */
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
  bool limited; /* an RLIMIT_AS at load: calls are guarded */
} blas = {.once = PTHREAD_ONCE_INIT};

bool ct__room_for(size_t bytes) {
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
  if (ct__room_for(CT_BLAS_BUFFER)) return true;
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

/* Sets NAME=value for a dlopen (the library's constructor reads it), and
 * the program's value back after. */
typedef struct env_override {
  const char *name;
  char *saved; /* NULL: was unset */
} env_override;
static env_override env_set(const char *name, const char *value) {
  const char *old = getenv(name);
  env_override o = {name, old ? strdup(old) : NULL};
  setenv(name, value, 1);
  return o;
}
static void env_restore(env_override o) {
  if (o.saved) {
    setenv(o.name, o.saved, 1);
    free(o.saved);
  } else {
    unsetenv(o.name);
  }
}

/* dlopen with OPENBLAS_NUM_THREADS=1 in the environment for its constructor
 * (and OPENBLAS_CORETYPE=core unless core is NULL). */
static void *open_single_threaded(const char *path, const char *core) {
  env_override threads = env_set("OPENBLAS_NUM_THREADS", "1");
  env_override coretype = core ? env_set("OPENBLAS_CORETYPE", core) : (env_override){0};
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (core) env_restore(coretype);
  env_restore(threads);
  return h;
}

/* OpenBLAS's DYNAMIC_ARCH chooses its kernels by CPU model, and a release
 * older than the CPU (Debian 12's 0.3.21 on Sapphire Rapids) falls back to
 * the SSE3 kernels of the Prescott, several times slower. The kernels the
 * CPU's own features allow (libgcc checks the OS saves their registers), or
 * NULL where no faster family applies. */
static const char *core_for_cpu(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

/* The SSE-only families OpenBLAS falls back to for a CPU it does not know. */
static bool sse_only_core(const char *name) {
  static const char *const sse[] = {"Prescott",  "Core2",  "Penryn",  "Dunnington",
                                    "Nehalem",   "Atom",   "Opteron", "Opteron_SSE3",
                                    "Barcelona", "Bobcat", "Katmai",  "Coppermine"};
  for (size_t i = 0; name && i < sizeof sse / sizeof sse[0]; i++)
    if (strcasecmp(name, sse[i]) == 0) return true;
  return false;
}

/* Opens the BLAS; where it chose SSE-only kernels on a CPU with AVX2 or
 * AVX-512 (and the user set no OPENBLAS_CORETYPE), opens it again with the
 * family the CPU allows, saying so in `note`. */
static void *open_blas(const char *path, char *note, size_t cap) {
  void *h = open_single_threaded(path, NULL);
  const char *want = core_for_cpu();
  if (!h || !want || getenv("OPENBLAS_CORETYPE")) return h;
  char *(*corename)(void);
  *(void **)&corename = dlsym(h, "openblas_get_corename");
  const char *chose = corename ? corename() : NULL;
  if (!sse_only_core(chose)) return h;
  char was[32];
  snprintf(was, sizeof was, "%s", chose);
  dlclose(h); /* unloads it unless the program holds it too (then it stays as it is) */
  h = open_single_threaded(path, want);
  snprintf(note, cap, "; %s kernels chosen by ctensor for this CPU (OpenBLAS took it for a %s)",
           want, was);
  return h;
}

static void load(void) {
  int nt = ct__num_threads();
  const char *path = CT_BLAS_PATH;
  size_t lib = file_size(path);
  if (!ct__room_for(lib + 2 * CT_BLAS_BUFFER)) {
    blas.status = CT_ERR_OOM;
    snprintf(blas.error, sizeof blas.error,
             "the address-space limit (ulimit -v) leaves no room for OpenBLAS (%zu MiB: its "
             "code and one 128 MiB buffer per thread that calls it)",
             (lib + 2 * CT_BLAS_BUFFER) >> 20);
    return;
  }
  blas.max_threads = ct__room_for(lib + (size_t)(nt + 1) * CT_BLAS_BUFFER) ? nt : 1;
  char core_note[160] = "";
  void *h = open_blas(path, core_note, sizeof core_note);
  if (!h && strcmp(path, CT_BLAS_SONAME) != 0)
    h = open_blas(path = CT_BLAS_SONAME, core_note, sizeof core_note);
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
  blas.limited = limited;
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

bool ct__blas_call_begin(bool *holds) {
  *holds = false;
  return !blas.limited || begin_call(holds);
}

void ct__blas_call_end(bool holds) {
  if (blas.limited) end_call(holds);
}

ct_status ct__blas_no_room(const char *op) {
  return ct__fail_status(CT_ERR_OOM,
                         "%s: the address-space limit (ulimit -v) leaves no room for another "
                         "%zu MiB buffer of OpenBLAS, which its LAPACK routine would wait for "
                         "forever: raise the limit or free memory",
                         op, CT_BLAS_BUFFER >> 20);
}

int ct__blas_max_threads(void) { return blas.max_threads > 0 ? blas.max_threads : 1; }

const char *ct__blas_describe(void) {
  pthread_once(&blas.once, load);
  return blas.status == CT_OK ? blas.describe : blas.error;
}
