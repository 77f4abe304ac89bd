/* The backend registry: the one place that knows which backends and engines
 * exist and where they come from (backend/plugin.h).
 *
 * The CPU backend is part of the core. The CUDA backend, the NCCL engine and
 * the MPI engine are plugins. A static library (compiled with CT_BUILTIN_*)
 * has the ones it was built with linked in. A shared library loads each on
 * first use from a shared object, searched in:
 *   1. the directories of CT_BACKEND_PATH (':'-separated), in order;
 *   2. the directory of libctensor itself (dladdr), where the build and the
 *      packages put them;
 *   3. the system's search (dlopen of the bare name: LD_LIBRARY_PATH, the
 *      loader cache).
 * The first file found is the one used: if it cannot be loaded (a library it
 * needs is missing, or it was built from another ctensor), the plugin is
 * unavailable and the loader's reason is kept for the error messages, rather
 * than a different copy being tried behind the user's back. Nothing is
 * loaded at start-up, so a program that never asks for a GPU maps no CUDA
 * library, and a machine without one runs the same binary. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/plugin.h"

typedef struct plugin_slot {
  const char *name;                  /* as in ct_backend_info and ct_plugin.name */
  const char *what;                  /* for messages */
  const char *lib;                   /* what it brings, for messages */
  const char *file;                  /* the shared object's name */
  bool built;                        /* configured and built with this library */
  const ct_plugin *(*builtin)(void); /* linked in (static builds), else NULL */
  pthread_once_t once;
  const ct_plugin *plugin; /* NULL: unavailable, see error */
  char path[PATH_MAX];     /* where it was loaded from ("" when built in) */
  char versions[256];      /* its libraries' versions */
  char error[1024];
} plugin_slot;

#ifdef CT_BUILTIN_CUDA
#define CT_CUDA_ENTRY ct__cuda_plugin
#else
#define CT_CUDA_ENTRY NULL
#endif
#ifdef CT_BUILTIN_NCCL
#define CT_NCCL_ENTRY ct__nccl_plugin
#else
#define CT_NCCL_ENTRY NULL
#endif
#ifdef CT_BUILTIN_MPI
#define CT_MPI_ENTRY ct__mpi_plugin
#else
#define CT_MPI_ENTRY NULL
#endif
#ifdef CT_BUILT_CUDA
#define CT_CUDA_BUILT true
#else
#define CT_CUDA_BUILT false
#endif
#ifdef CT_BUILT_NCCL
#define CT_NCCL_BUILT true
#else
#define CT_NCCL_BUILT false
#endif
#ifdef CT_BUILT_MPI
#define CT_MPI_BUILT true
#else
#define CT_MPI_BUILT false
#endif

/* Designated fields: the rest (the loaded state) starts zeroed. */
#define CT_SLOT(n, w, l, f, b, e) \
  { .name = n, .what = w, .lib = l, .file = f, .built = b, .builtin = e, .once = PTHREAD_ONCE_INIT }
static plugin_slot slots[CT_PLUGIN_COUNT] = {
    [CT_PLUGIN_CUDA] = CT_SLOT("cuda", "the CUDA backend", "CUDA", "libctensor-cuda.so",
                               CT_CUDA_BUILT, CT_CUDA_ENTRY),
    [CT_PLUGIN_NCCL] = CT_SLOT("nccl", "the NCCL engine", "NCCL", "libctensor-nccl.so",
                               CT_NCCL_BUILT, CT_NCCL_ENTRY),
    [CT_PLUGIN_MPI] =
        CT_SLOT("mpi", "the MPI engine", "MPI", "libctensor-mpi.so", CT_MPI_BUILT, CT_MPI_ENTRY),
};
#undef CT_SLOT
_Static_assert(sizeof slots / sizeof slots[0] == CT_PLUGIN_COUNT, "one slot per plugin id");

/* A descriptor that fits this core, else NULL with the reason in s->error. */
static const ct_plugin *check(plugin_slot *s, const ct_plugin *p, const char *where) {
  if (!p) {
    snprintf(s->error, sizeof s->error, "%s (%s) refused to load into ctensor %s", s->what, where,
             CT_VERSION_STRING);
    return NULL;
  }
  if (p->abi != CT_PLUGIN_ABI || strcmp(p->core_version, CT_VERSION_STRING) != 0 ||
      p->host_size != sizeof(ct_plugin_host) || p->backend_size != sizeof(ct_backend) ||
      p->plugin_size != sizeof(ct_plugin) || strcmp(p->name, s->name) != 0) {
    snprintf(s->error, sizeof s->error,
             "%s (%s) was built from ctensor %s (plugin interface %u), this library is %s (%u): "
             "install matching versions",
             s->what, where, p->core_version, p->abi, CT_VERSION_STRING, CT_PLUGIN_ABI);
    return NULL;
  }
  return p;
}

#ifndef CT_STATIC_REGISTRY
/* ---- Shared objects -------------------------------------------------------------- */

/* What the core lends a loaded plugin. */
static const ct_plugin_host host = {
    .abi = CT_PLUGIN_ABI,
    .core_version = CT_VERSION_STRING,
    .host_size = sizeof(ct_plugin_host),
    .backend_size = sizeof(ct_backend),
    .plugin_size = sizeof(ct_plugin),
    .fail_status_v = ct__fail_status_v,
    .assert_fail = ct__assert_fail,
    .backend = ct__backend,
    .store_from_double = ct__store_from_double,
    .malloc = ct__malloc,
    .calloc = ct__calloc,
    .realloc = ct__realloc,
    .mpi_broadcast = ct__mpi_broadcast,
};

/* dlopen of path; on success fills s->plugin and s->path. Returns false
 * when path itself was not found by the system's search (a bare name). */
static bool load_file(plugin_slot *s, const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    if (!e) e = "unknown error";
    size_t n = strlen(path);
    if (strncmp(e, path, n) == 0 && e[n] == ':' && strstr(e, "No such file")) return false;
    snprintf(s->error, sizeof s->error, "%s (%s) could not be loaded: %s", s->what, path, e);
    return true;
  }
  ct_plugin_entry_fn entry;
  *(void **)&entry = dlsym(h, CT_PLUGIN_ENTRY_SYMBOL);
  if (!entry) {
    snprintf(s->error, sizeof s->error, "%s (%s) is not a ctensor plugin (no %s)", s->what, path,
             CT_PLUGIN_ENTRY_SYMBOL);
    dlclose(h);
    return true;
  }
  const ct_plugin *p = check(s, entry(&host), path);
  if (!p) {
    dlclose(h);
    return true;
  }
  /* The path the loader resolved (for a bare name, where it found it). */
  Dl_info info;
  if (dladdr((void *)p, &info) && info.dli_fname && *info.dli_fname)
    snprintf(s->path, sizeof s->path, "%s", info.dli_fname);
  else
    snprintf(s->path, sizeof s->path, "%s", path);
  s->plugin = p; /* kept loaded until exit */
  return true;
}

/* Tries dir/file: true if the file exists (loaded or not: the search stops). */
static bool try_dir(plugin_slot *s, const char *dir, size_t dir_len) {
  char path[PATH_MAX];
  if (dir_len == 0) return false;
  int n = snprintf(path, sizeof path, "%.*s/%s", (int)dir_len, dir, s->file);
  if (n < 0 || (size_t)n >= sizeof path || access(path, F_OK) != 0) return false;
  load_file(s, path);
  return true;
}

/* The directory of this library, without symbolic links or "..". */
static size_t core_dir(char *buf, size_t size) {
  Dl_info info;
  char path[PATH_MAX];
  if (!dladdr((void *)ct__plugin, &info) || !info.dli_fname || !realpath(info.dli_fname, path))
    return 0;
  const char *slash = strrchr(path, '/');
  if (!slash) return 0;
  size_t n = (size_t)(slash - path);
  if (n >= size) return 0;
  memcpy(buf, path, n);
  buf[n] = '\0';
  return n;
}

static void search(plugin_slot *s) {
  const char *env = getenv("CT_BACKEND_PATH");
  for (const char *d = env; d && *d;) {
    const char *end = strchr(d, ':');
    size_t len = end ? (size_t)(end - d) : strlen(d);
    if (try_dir(s, d, len)) return;
    d = end ? end + 1 : d + len;
  }
  char dir[PATH_MAX];
  size_t len = core_dir(dir, sizeof dir);
  if (try_dir(s, dir, len)) return;
  /* The system's search; its error says which file or library is missing. */
  if (load_file(s, s->file)) return;
  /* Not found anywhere: say where it was looked for. */
  snprintf(s->error, sizeof s->error,
           "%s is not available: %s was not found (looked in %s%.512s%s, and the system's "
           "library path)%s%s",
           s->what, s->file, env && *env ? "CT_BACKEND_PATH, " : "", len ? dir : "",
           len ? " (next to libctensor)" : "", s->built ? "" : "; this ctensor was built without ",
           s->built ? "" : s->lib);
}

#endif /* !CT_STATIC_REGISTRY */

/* CUDA cannot be used in a child that fork() made of a process where it was
 * loaded: the driver's state (contexts, its threads) does not survive a
 * fork. As PyTorch, the child gets a clear error instead of a hang or a
 * crash in the driver. */
static atomic_bool forked_after_cuda;
static void cuda_forked(void) { atomic_store(&forked_after_cuda, true); }
static const char cuda_fork_error[] =
    "the CUDA backend cannot be used in a process made by fork() after CUDA was loaded in its "
    "parent (start the process with exec, as Python's multiprocessing 'spawn' does)";

static void load(plugin_slot *s) {
  if (s->builtin) {
    s->plugin = check(s, s->builtin(), "built in");
  } else {
#ifdef CT_STATIC_REGISTRY
    /* A plugin links the shared core: loading one here would bring a second
     * copy of the library into the process. */
    snprintf(s->error, sizeof s->error,
             "%s is not available: this static build of ctensor was built without %s", s->what,
             s->lib);
#else
    search(s);
#endif
  }
  if (s->plugin && s->plugin->library_versions)
    s->plugin->library_versions(s->versions, sizeof s->versions);
  if (s->plugin && s == &slots[CT_PLUGIN_CUDA]) pthread_atfork(NULL, NULL, cuda_forked);
}

#define X(id) \
  static void load_##id(void) { load(&slots[id]); }
X(CT_PLUGIN_CUDA)
X(CT_PLUGIN_NCCL)
X(CT_PLUGIN_MPI)
#undef X
static void (*const loaders[CT_PLUGIN_COUNT])(void) = {
    [CT_PLUGIN_CUDA] = load_CT_PLUGIN_CUDA,
    [CT_PLUGIN_NCCL] = load_CT_PLUGIN_NCCL,
    [CT_PLUGIN_MPI] = load_CT_PLUGIN_MPI,
};

const ct_plugin *ct__plugin(ct_plugin_id id) {
  if ((unsigned)id >= CT_PLUGIN_COUNT) return NULL;
  pthread_once(&slots[id].once, loaders[id]);
  if (id == CT_PLUGIN_CUDA && atomic_load(&forked_after_cuda)) return NULL;
  return slots[id].plugin;
}

const char *ct__plugin_error(ct_plugin_id id) {
  if ((unsigned)id >= CT_PLUGIN_COUNT) return "no such plugin";
  if (ct__plugin(id)) return "";
  return id == CT_PLUGIN_CUDA && atomic_load(&forked_after_cuda) ? cuda_fork_error
                                                                 : slots[id].error;
}

/* ---- Backends by device type --------------------------------------------------- */

const ct_backend *ct__backend(ct_device_type type) {
  if (type == CT_DEVICE_CPU) return &ct__cpu_backend;
  if (type == CT_DEVICE_CUDA) {
    const ct_plugin *p = ct__plugin(CT_PLUGIN_CUDA);
    return p ? p->backend : NULL;
  }
  return NULL;
}

const char *ct__backend_error(ct_device_type type) {
  if (type == CT_DEVICE_CPU) return "";
  if (type == CT_DEVICE_CUDA) return ct__plugin_error(CT_PLUGIN_CUDA);
  return "no backend for this device type";
}

/* ---- Public: what is there ------------------------------------------------------- */

int ct_backend_count(void) { return 1 + CT_PLUGIN_COUNT; }

ct_status ct_backend_get_info(int index, ct_backend_info *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "backend_get_info: out is NULL");
  memset(out, 0, sizeof *out);
  if (index < 0 || index >= ct_backend_count())
    return ct__fail_status(CT_ERR_ARG, "backend_get_info: index %d out of range [0, %d)", index,
                           ct_backend_count());
  if (index == 0) {
    *out = (ct_backend_info){.name = "cpu",
                             .available = true,
                             .builtin = true,
                             .file = "",
                             .version = CT_VERSION_STRING,
                             .libraries = ct__cpu_library_versions(),
                             .error = ""};
    return CT_OK;
  }
  unsigned id = (unsigned)index - 1;
  if (id >= CT_PLUGIN_COUNT) return ct__fail_status(CT_ERR_INTERNAL, "backend_get_info: no slot");
  const ct_plugin *p = ct__plugin((ct_plugin_id)id);
  const plugin_slot *s = &slots[id];
  *out = (ct_backend_info){.name = s->name,
                           .available = p != NULL,
                           .builtin = s->builtin != NULL,
                           .file = p ? s->path : "",
                           .version = p ? p->core_version : "",
                           .libraries = p ? s->versions : "",
                           .error = p ? "" : s->error};
  return CT_OK;
}
