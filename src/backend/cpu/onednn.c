/* oneDNN, loaded when a convolution first asks for it (onednn.h).
 *
 * As with the BLAS (blas.c), the library is dlopen'ed rather than linked: a
 * program built with ctensor runs where libdnnl is missing, and one that
 * never convolves never maps its 40 MiB. What is loaded must be a 2.x release
 * (the op-descriptor API whose types dnnl.h gives the build). Debian builds
 * oneDNN on OpenMP (libgomp), whose threads would be a second pool beside
 * ctensor's, each spinning against the other (libgomp spins for
 * milliseconds before an idle thread sleeps): instead, as with the BLAS,
 * oneDNN runs single-threaded (omp_set_num_threads(1) on the thread that
 * calls it, so no OpenMP team is ever started, and the thread's own setting
 * put back after: a program's thread may run OpenMP code of its own) and
 * conv_onednn.c splits the batch over ctensor's pool itself.
 * Under an address-space limit (ulimit -v) the library is loaded only with
 * room for it and its threads' stacks: libgomp aborts the process when it
 * cannot start a thread. */
#define _GNU_SOURCE
#include "backend/cpu/onednn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/gemm_bf16.h"
#include "core/internal.h"
#include "core/parallel.h"

#define CT_ONEDNN_SONAME "libdnnl.so.2"

static struct {
  pthread_once_t mode_once, load_once;
  ct_onednn_mode mode;
  bool ready;
  void (*omp_set_num_threads)(int);
  int (*omp_get_max_threads)(void);
  char describe[640];
} dnn = {.mode_once = PTHREAD_ONCE_INIT, .load_once = PTHREAD_ONCE_INIT};

static void read_mode(void) {
  const char *e = getenv("CT_ONEDNN");
  if (e && strcmp(e, "0") == 0)
    dnn.mode = CT_ONEDNN_OFF;
  else if (e && strcmp(e, "all") == 0)
    dnn.mode = CT_ONEDNN_ALL;
  else
    dnn.mode = CT_ONEDNN_AUTO;
}

ct_onednn_mode ct__onednn_mode(void) {
  pthread_once(&dnn.mode_once, read_mode);
  return dnn.mode;
}

#if defined(CT_HAVE_DNNL)

ct_onednn_fns ct__dnnl;
static dnnl_engine_t engine;
static dnnl_stream_t stream;

dnnl_engine_t ct__onednn_engine(void) { return engine; }
dnnl_stream_t ct__onednn_stream(void) { return stream; }

#define CT_DNNL_SYM(field, name)                              \
  do {                                                        \
    *(void **)&ct__dnnl.field = dlsym(h, #name);              \
    if (!ct__dnnl.field) missing = missing ? missing : #name; \
  } while (0)

static void load(void) {
  if (ct__onednn_mode() == CT_ONEDNN_OFF) {
    snprintf(dnn.describe, sizeof dnn.describe, "not used: CT_ONEDNN=0");
    return;
  }
#if defined(CT_SANITIZE)
  /* LeakSanitizer's exit-time scan crashes on the dynamic TLS that libgomp
   * and oneDNN give the pool's threads (started before the dlopen). */
  snprintf(dnn.describe, sizeof dnn.describe,
           "not used: a sanitizer build (LeakSanitizer's thread scan crashes on the "
           "library's thread-local storage)");
  return;
#elif defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer sees nothing inside libgomp and oneDNN (not
   * instrumented), so their own synchronization would read as races. */
  snprintf(dnn.describe, sizeof dnn.describe,
           "not used: a ThreadSanitizer build (libgomp and oneDNN are not instrumented)");
  return;
#endif
  /* The library (about 40 MiB with its dependencies) and a thread stack
   * (8 MiB by default) per thread, with a margin. */
  size_t need = ((size_t)64 << 20) + (size_t)ct__num_threads() * ((size_t)16 << 20);
  if (!ct__room_for(need)) {
    snprintf(dnn.describe, sizeof dnn.describe,
             "not used: the address-space limit (ulimit -v) leaves no room for it (%zu MiB)",
             need >> 20);
    return;
  }
  void *h = dlopen(CT_ONEDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(dnn.describe, sizeof dnn.describe,
             "not used: %s could not be loaded (%s); ctensor's own convolutions run instead",
             CT_ONEDNN_SONAME, e ? e : "not found");
    return;
  }
  const dnnl_version_t *(*version)(void);
  *(void **)&version = dlsym(h, "dnnl_version");
  const dnnl_version_t *v = version ? version() : NULL;
  if (!v || v->major != 2) {
    snprintf(dnn.describe, sizeof dnn.describe,
             "not used: %s is oneDNN %d.%d, ctensor uses the 2.x API", CT_ONEDNN_SONAME,
             v ? v->major : 0, v ? v->minor : 0);
    dlclose(h);
    return;
  }
  const char *missing = NULL;
  CT_DNNL_SYM(memory_desc_init_by_tag, dnnl_memory_desc_init_by_tag);
  CT_DNNL_SYM(memory_desc_equal, dnnl_memory_desc_equal);
  CT_DNNL_SYM(memory_desc_get_size, dnnl_memory_desc_get_size);
  CT_DNNL_SYM(memory_create, dnnl_memory_create);
  CT_DNNL_SYM(memory_set_data_handle, dnnl_memory_set_data_handle);
  CT_DNNL_SYM(memory_destroy, dnnl_memory_destroy);
  CT_DNNL_SYM(conv_forward_desc_init, dnnl_dilated_convolution_forward_desc_init);
  CT_DNNL_SYM(conv_backward_data_desc_init, dnnl_dilated_convolution_backward_data_desc_init);
  CT_DNNL_SYM(conv_backward_weights_desc_init, dnnl_dilated_convolution_backward_weights_desc_init);
  CT_DNNL_SYM(reorder_primitive_desc_create, dnnl_reorder_primitive_desc_create);
  CT_DNNL_SYM(primitive_desc_create, dnnl_primitive_desc_create);
  CT_DNNL_SYM(primitive_desc_query_md, dnnl_primitive_desc_query_md);
  CT_DNNL_SYM(primitive_desc_destroy, dnnl_primitive_desc_destroy);
  CT_DNNL_SYM(primitive_create, dnnl_primitive_create);
  CT_DNNL_SYM(primitive_execute, dnnl_primitive_execute);
  CT_DNNL_SYM(primitive_destroy, dnnl_primitive_destroy);
  CT_DNNL_SYM(stream_wait, dnnl_stream_wait);
  CT_DNNL_SYM(primitive_attr_create, dnnl_primitive_attr_create);
  CT_DNNL_SYM(primitive_attr_destroy, dnnl_primitive_attr_destroy);
  CT_DNNL_SYM(primitive_attr_set_scratchpad_mode, dnnl_primitive_attr_set_scratchpad_mode);
  __typeof__(dnnl_engine_create) *engine_create;
  __typeof__(dnnl_stream_create) *stream_create;
  *(void **)&engine_create = dlsym(h, "dnnl_engine_create");
  *(void **)&stream_create = dlsym(h, "dnnl_stream_create");
  if (missing || !engine_create || !stream_create) {
    snprintf(dnn.describe, sizeof dnn.describe, "not used: %s lacks %s", CT_ONEDNN_SONAME,
             missing ? missing : "dnnl_engine_create");
    return; /* left loaded: its functions may be half resolved, none is called */
  }
  if (engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
      stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
    snprintf(dnn.describe, sizeof dnn.describe, "not used: %s made no CPU engine",
             CT_ONEDNN_SONAME);
    return;
  }
  /* OpenMP's runtime, a dependency of the library (absent in a build on
   * another threading runtime: its own default then). */
  *(void **)&dnn.omp_set_num_threads = dlsym(h, "omp_set_num_threads");
  *(void **)&dnn.omp_get_max_threads = dlsym(h, "omp_get_max_threads");
  if (!dnn.omp_get_max_threads) dnn.omp_set_num_threads = NULL;
  Dl_info info;
  const char *file = dladdr((void *)ct__dnnl.primitive_execute, &info) && info.dli_fname
                         ? info.dli_fname
                         : CT_ONEDNN_SONAME;
  snprintf(dnn.describe, sizeof dnn.describe,
           "%d.%d.%d (%s), single-threaded, called from each of ctensor's threads, for conv2d in "
           "f32%s where it "
           "measured faster than ctensor's own kernels%s (CT_ONEDNN=0: off)",
           v->major, v->minor, v->patch, file, ct__gemm_bf16_available() ? " and bf16" : "",
           dnn.mode == CT_ONEDNN_ALL ? "; CT_ONEDNN=all: in every case it computes" : "");
  dnn.ready = true;
}

bool ct__onednn_ready(void) {
  pthread_once(&dnn.load_once, load);
  return dnn.ready;
}

int ct__onednn_single_thread_begin(void) {
  if (!dnn.omp_set_num_threads) return 0;
  int saved = dnn.omp_get_max_threads();
  if (saved != 1) dnn.omp_set_num_threads(1);
  return saved;
}

void ct__onednn_single_thread_end(int saved) {
  if (dnn.omp_set_num_threads && saved > 1) dnn.omp_set_num_threads(saved);
}

#else /* built without dnnl.h */

static void load(void) {
  snprintf(dnn.describe, sizeof dnn.describe,
           "not used: ctensor was built without oneDNN's header (dnnl.h, Debian's libdnnl-dev)");
}

bool ct__onednn_ready(void) {
  pthread_once(&dnn.load_once, load);
  return false;
}

int ct__onednn_single_thread_begin(void) { return 0; }

void ct__onednn_single_thread_end(int saved) { (void)saved; }

#endif

const char *ct__onednn_describe(void) {
  ct__onednn_ready();
  return dnn.describe;
}
