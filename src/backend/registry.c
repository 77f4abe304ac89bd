/* The backend registry: the one place that knows which backends and engines
 * exist and where they come from (backend/plugin.h).
 *
 * The CPU backend is part of the core. The CUDA backend, the NCCL engine and
 * the MPI engine are plugins. The static registry (CT_STATIC_REGISTRY, in
 * libctensor.a) refers to each plugin's descriptor weakly: a static program
 * has the ones it linked (libctensor-<p>.a, whose pkg-config and CMake
 * targets add -Wl,-u,ct__<p>_plugin), and libctensor.a alone needs no MPI,
 * NCCL or CUDA library. CT_BUILTIN_* names a plugin compiled into the same
 * library (the CUDA emulator's test library). A shared library loads each on
 * first use from a shared object, searched in:
 *   1. the directories of CT_BACKEND_PATH (':'-separated), in order;
 *   2. the directory of libctensor itself (dladdr), where the build and the
 *      packages put them;
 *   3. the system's search: its directories (RPATH, LD_LIBRARY_PATH,
 *      RUNPATH, the system's) one by one, so that a file found there is
 *      checked before dlopen maps it, then dlopen of the bare name (the
 *      loader cache).
 * The first file found is the one used: if it cannot be loaded (a library it
 * needs is missing, or it was built from another ctensor), the plugin is
 * unavailable and the loader's reason is kept for the error messages, rather
 * than a different copy being tried behind the user's back. Nothing is
 * loaded at start-up, so a program that never asks for a GPU maps no CUDA
 * library, and a machine without one runs the same binary. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h> /* ElfW */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/plugin.h"

typedef struct plugin_slot {
  const char *name;                  /* as in ct_backend_info and ct_plugin.name */
  const char *what;                  /* for messages */
  const char *lib;                   /* what it brings, for messages */
  const char *file;                  /* the shared object's name */
  const char *hint;                  /* what to install to build it (Debian) */
  bool built;                        /* configured and built with this library */
  const ct_plugin *(*builtin)(void); /* linked in (static builds), else NULL */
  pthread_once_t once;
  const ct_plugin *plugin; /* NULL: unavailable, see error */
  char path[PATH_MAX];     /* where it was loaded from ("" when built in) */
  char versions[256];      /* its libraries' versions */
  char error[1024];
} plugin_slot;

#if defined(CT_BUILTIN_CUDA)
#define CT_CUDA_ENTRY ct__cuda_plugin
#elif defined(CT_STATIC_REGISTRY)
/* NULL unless the program linked libctensor-cuda.a */
extern const ct_plugin *ct__cuda_plugin(void) __attribute__((weak));
#define CT_CUDA_ENTRY ct__cuda_plugin
#else
#define CT_CUDA_ENTRY NULL
#endif
#if defined(CT_BUILTIN_NCCL)
#define CT_NCCL_ENTRY ct__nccl_plugin
#elif defined(CT_STATIC_REGISTRY)
/* NULL unless the program linked libctensor-nccl.a */
extern const ct_plugin *ct__nccl_plugin(void) __attribute__((weak));
#define CT_NCCL_ENTRY ct__nccl_plugin
#else
#define CT_NCCL_ENTRY NULL
#endif
#if defined(CT_BUILTIN_MPI)
#define CT_MPI_ENTRY ct__mpi_plugin
#elif defined(CT_STATIC_REGISTRY)
/* NULL unless the program linked libctensor-mpi.a */
extern const ct_plugin *ct__mpi_plugin(void) __attribute__((weak));
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
#define CT_SLOT(n, w, l, f, h, b, e)                                                \
  {                                                                                 \
    .name = n, .what = w, .lib = l, .file = f, .hint = h, .built = b, .builtin = e, \
    .once = PTHREAD_ONCE_INIT                                                       \
  }
static plugin_slot slots[CT_PLUGIN_COUNT] = {
    [CT_PLUGIN_CUDA] = CT_SLOT("cuda", "the CUDA backend", "CUDA", "libctensor-cuda.so",
                               "the CUDA toolkit and cuDNN", CT_CUDA_BUILT, CT_CUDA_ENTRY),
    [CT_PLUGIN_NCCL] = CT_SLOT("nccl", "the NCCL engine", "NCCL", "libctensor-nccl.so",
                               "libnccl-dev", CT_NCCL_BUILT, CT_NCCL_ENTRY),
    [CT_PLUGIN_MPI] = CT_SLOT("mpi", "the MPI engine", "MPI", "libctensor-mpi.so", "libopenmpi-dev",
                              CT_MPI_BUILT, CT_MPI_ENTRY),
};

#undef CT_SLOT
_Static_assert(sizeof slots / sizeof slots[0] == CT_PLUGIN_COUNT, "one slot per plugin id");

/* A descriptor that fits this core, else NULL with the reason in s->error.
 * The fields are read in the order that makes each read safe: the ABI number
 * first (the one field every layout begins with), then the struct sizes, and
 * only when all of them match the strings, whose pointers a descriptor of
 * another layout would have elsewhere (a foreign or corrupt plugin must be
 * refused, never followed). */
static const ct_plugin *check(plugin_slot *s, const ct_plugin *p, const char *where) {
  if (!p) {
    snprintf(s->error, sizeof s->error, "%s (%s) refused to load into ctensor %s", s->what, where,
             CT_VERSION_STRING);
    return NULL;
  }
  if (p->abi != CT_PLUGIN_ABI) {
    snprintf(s->error, sizeof s->error,
             "%s (%s) has plugin interface %u, this library (ctensor %s) has %u: install matching "
             "versions",
             s->what, where, p->abi, CT_VERSION_STRING, CT_PLUGIN_ABI);
    return NULL;
  }
  if (p->host_size != sizeof(ct_plugin_host) || p->backend_size != sizeof(ct_backend) ||
      p->plugin_size != sizeof(ct_plugin)) {
    snprintf(s->error, sizeof s->error,
             "%s (%s) has other interface layouts (sizes %zu/%zu/%zu, this library's %zu/%zu/%zu): "
             "it was built from another ctensor than %s; install matching versions",
             s->what, where, p->host_size, p->backend_size, p->plugin_size, sizeof(ct_plugin_host),
             sizeof(ct_backend), sizeof(ct_plugin), CT_VERSION_STRING);
    return NULL;
  }
  if (!p->core_version || !p->name || strcmp(p->core_version, CT_VERSION_STRING) != 0 ||
      strcmp(p->name, s->name) != 0) {
    snprintf(s->error, sizeof s->error,
             "%s (%s) was built from ctensor %.64s (plugin %.32s), this library is %s: install "
             "matching versions",
             s->what, where, p->core_version ? p->core_version : "?", p->name ? p->name : "?",
             CT_VERSION_STRING);
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

/* Why the ELF file of fd (size bytes) cannot be mapped safely, into why;
 * false when it can. dlopen maps a file's segments as its headers describe
 * them: a truncated file maps pages past its end, and the first read of one
 * kills the process (SIGBUS) inside the loader. So the headers are read
 * here, with read(), and every segment must lie within the file; the class,
 * byte order and machine must be this process's (its own ELF header, which
 * the loader maps at the library's base address). */
static bool elf_problem(int fd, off_t size, char *why, size_t n) {
  ElfW(Ehdr) eh;
  if (size < (off_t)sizeof eh || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
      memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return snprintf(why, n, "not an ELF shared object (%lld bytes)", (long long)size), true;
  Dl_info self;
  const ElfW(Ehdr) *me = dladdr((void *)ct__plugin, &self) ? self.dli_fbase : NULL;
  if (me && (eh.e_ident[EI_CLASS] != me->e_ident[EI_CLASS] ||
             eh.e_ident[EI_DATA] != me->e_ident[EI_DATA] || eh.e_machine != me->e_machine))
    return snprintf(why, n,
                    "built for another machine (ELF class %u, byte order %u, machine %u; this "
                    "process: %u, %u, %u)",
                    eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA], eh.e_machine, me->e_ident[EI_CLASS],
                    me->e_ident[EI_DATA], me->e_machine),
           true;
  if (eh.e_type != ET_DYN || eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0)
    return snprintf(why, n, "not a shared object (ELF type %u, %u program headers)", eh.e_type,
                    eh.e_phnum),
           true;
  uint64_t end = (uint64_t)eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr));
  if (eh.e_shnum) {
    uint64_t sh_end = (uint64_t)eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
    if (sh_end > end) end = sh_end;
  }
  for (unsigned i = 0; i < eh.e_phnum && end <= (uint64_t)size; i++) {
    ElfW(Phdr) ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
      return snprintf(why, n, "unreadable program header %u", i), true;
    uint64_t seg_end = (uint64_t)ph.p_offset + ph.p_filesz;
    if (seg_end < ph.p_offset) seg_end = UINT64_MAX; /* wrapped: a corrupt header */
    if (seg_end > end) end = seg_end;
  }
  if (end > (uint64_t)size)
    return snprintf(why, n, "truncated: %lld bytes, its headers describe %llu", (long long)size,
                    (unsigned long long)end),
           true;
  return false;
}

/* true when path is an ELF file that dlopen can map without crashing the
 * process, else false with the reason in s->error. */
static bool file_mappable(plugin_slot *s, const char *path) {
  char why[256];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(s->error, sizeof s->error, "%s (%s) cannot be read: %s", s->what, path,
             strerror(errno));
    return false;
  }
  struct stat st;
  bool bad = true;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    snprintf(why, sizeof why, "not a regular file");
  else
    bad = elf_problem(fd, st.st_size, why, sizeof why);
  close(fd);
  if (bad)
    snprintf(s->error, sizeof s->error, "%s (%s) is damaged or foreign: %s; reinstall it", s->what,
             path, why);
  return !bad;
}

/* dlopen of path; on success fills s->plugin and s->path. Returns false
 * when path itself was not found by the system's search (a bare name). A
 * path with a '/' is checked first (file_mappable); a bare name is the
 * system's to find, as installed packages put it. */
static bool load_file(plugin_slot *s, const char *path) {
  if (strchr(path, '/') && !file_mappable(s, path)) return true;
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

/* Tries the directories dlopen of a bare name from libctensor searches, in
 * its order (DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, the system's
 * directories: dlinfo's RTLD_DI_SERINFO, less the loader cache): true if
 * the file is in one of them (loaded or not: the search stops there). */
static bool try_search_dirs(plugin_slot *s) {
  Dl_info self;
  void *h = dladdr((void *)ct__plugin, &self) && self.dli_fname
                ? dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD)
                : NULL;
  if (!h) return false;
  Dl_serinfo size;
  Dl_serinfo *info = NULL;
  bool found = false;
  if (dlinfo(h, RTLD_DI_SERINFOSIZE, &size) == 0 && (info = ct__malloc(size.dls_size)) &&
      dlinfo(h, RTLD_DI_SERINFOSIZE, info) == 0 && dlinfo(h, RTLD_DI_SERINFO, info) == 0)
    for (unsigned i = 0; i < info->dls_cnt && !found; i++) {
      const char *d = info->dls_serpath[i].dls_name;
      found = try_dir(s, d, strlen(d));
    }
  ct__free(info);
  dlclose(h);
  return found;
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
  /* The directories of the system's search, so that the file is checked
   * before dlopen maps it; then the search itself, for what only the loader
   * cache knows. Its error says which file or library is missing. */
  if (try_search_dirs(s)) return;
  if (load_file(s, s->file)) return;
  /* Not found anywhere: say where it was looked for, and when it is so that
   * this ctensor never had it (then the fix is another build). */
  char not_built[192] = "";
  if (!s->built)
    snprintf(
        not_built, sizeof not_built,
        "; this ctensor was built without %s (none was found when it was configured: install %s "
        "and build again)",
        s->lib, s->hint);
  snprintf(s->error, sizeof s->error,
           "%s is not available: %s was not found (looked in %s%.512s%s, and the system's "
           "library path)%s",
           s->what, s->file, env && *env ? "CT_BACKEND_PATH, " : "", len ? dir : "",
           len ? " (next to libctensor)" : "", not_built);
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
    /* A plugin's shared object links the shared core: loading one here
     * would bring a second copy of the library into the process. A plugin
     * this ctensor never built has no archive to link: say that instead. */
    if (!s->built)
      snprintf(s->error, sizeof s->error,
               "%s is not available: this ctensor was built without %s (none was found when it "
               "was configured: install %s and build again)",
               s->what, s->lib, s->hint);
    else
      snprintf(s->error, sizeof s->error,
               "%s is not available: this program was linked with the static libctensor.a "
               "without libctensor-%s.a (link it: pkg-config --libs ctensor-static ctensor-%s, "
               "or CMake's ctensor::%s_static)",
               s->what, s->name, s->name, s->name);
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
