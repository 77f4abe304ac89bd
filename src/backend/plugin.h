/* Backends and engines loaded at run time: the interface between the core
 * (libctensor) and a plugin (libctensor-cuda.so, libctensor-nccl.so,
 * libctensor-mpi.so).
 *
 * A plugin is a piece of the library that needs libraries the core must not
 * depend on (the CUDA runtime, cuBLAS, cuDNN, NCCL, MPI). In a shared build
 * each is a shared object of its own, loaded on first use by the registry
 * (registry.c) and handed a ct_plugin_host: the few internal functions of the
 * core it calls (the core exports only the public ct_ API). In a static build
 * every plugin built is linked into libctensor.a and the registry calls its
 * descriptor directly.
 *
 * Each plugin defines one descriptor function, ct__<name>_plugin(), in its
 * own sources. The shared object adds plugin_entry.c, which exports
 * ct_plugin_entry(host) and forwards the plugin's calls of core internals
 * (ct__fail_status, ct__backend, ...) to the host table.
 *
 * The layouts below, and ct_backend's, are private to one build: a plugin
 * loads only into the core of the same version built with the same layouts
 * (checked through `abi`, `core_version` and the struct sizes, which are the
 * first fields and never move). */
#ifndef CT_BACKEND_PLUGIN_H
#define CT_BACKEND_PLUGIN_H

#include <stdarg.h>

#include "backend/backend.h"
#include "dist/dist_internal.h"

/* Bump when a struct of this header or backend.h changes meaning without
 * changing size (2: ct_backend's slots regrouped by family; 3: the NCCL
 * engine's init takes the time limit). */
#define CT_PLUGIN_ABI 3

/* What the core lends a plugin (shared builds). */
typedef struct ct_plugin_host {
  unsigned abi;                                /* CT_PLUGIN_ABI of the core */
  const char *core_version;                    /* ctensor's version: "0.1.0" */
  size_t host_size, backend_size, plugin_size; /* sizeof of each struct, in the core */
  ct_status (*fail_status_v)(ct_status code, const char *fmt, va_list ap);
  void (*assert_fail)(const char *file, int line, const char *expr);
  const ct_backend *(*backend)(ct_device_type type);
  void (*store_from_double)(void *p, ct_dtype dtype, double v);
  /* The core's allocation hook (core/alloc.h), so that a plugin's host
   * allocations are counted and failed with the core's. */
  void *(*malloc)(size_t nbytes);
  void *(*calloc)(size_t count, size_t size);
  void *(*realloc)(void *p, size_t nbytes);
  /* The MPI engine's broadcast (NCCL sends its unique id with it). */
  ct_status (*mpi_broadcast)(const char *op, void *buf, int64_t nbytes, int root);
} ct_plugin_host;

/* What a plugin provides: one of backend, mpi, nccl. */
typedef struct ct_plugin {
  unsigned abi;                                /* CT_PLUGIN_ABI it was built with */
  const char *core_version;                    /* the ctensor version it was built from */
  size_t host_size, backend_size, plugin_size; /* sizeof of each struct, in the plugin */
  const char *name;                            /* "cuda", "nccl", "mpi" */
  /* The versions of the libraries it runs on, for a person ("CUDA runtime
   * 13.0, cuBLAS 13.1.0, cuDNN 9.13.0"), into buf. Called after loading. */
  void (*library_versions)(char *buf, size_t size);
  /* A backend's reason why none of its devices can be used ("the CUDA
   * driver is not installed (...)"), into buf; "" when one can. May be NULL. */
  void (*unavailable_reason)(char *buf, size_t size);
  const ct_backend *backend;  /* a device backend (cuda), else NULL */
  const ct_mpi_engine *mpi;   /* the MPI engine, else NULL */
  const ct_nccl_engine *nccl; /* the NCCL engine, else NULL */
} ct_plugin;

/* Fills the header fields of a descriptor. */
#define CT_PLUGIN_HEADER                                                                        \
  .abi = CT_PLUGIN_ABI, .core_version = CT_VERSION_STRING, .host_size = sizeof(ct_plugin_host), \
  .backend_size = sizeof(ct_backend), .plugin_size = sizeof(ct_plugin)

/* The symbol a plugin's shared object exports (plugin_entry.c). NULL when the
 * host is incompatible; the core checks the returned header too. */
typedef const ct_plugin *(*ct_plugin_entry_fn)(const ct_plugin_host *host);
#define CT_PLUGIN_ENTRY_SYMBOL "ct_plugin_entry"

/* The descriptors, defined by the plugins' sources. */
const ct_plugin *ct__cuda_plugin(void);
const ct_plugin *ct__nccl_plugin(void);
const ct_plugin *ct__mpi_plugin(void);

/* ---- The registry (registry.c) ---- */

typedef enum { CT_PLUGIN_CUDA, CT_PLUGIN_NCCL, CT_PLUGIN_MPI, CT_PLUGIN_COUNT } ct_plugin_id;

/* The plugin, loaded on first use (thread-safe); NULL when it is missing or
 * could not be loaded, then ct__plugin_error says why. Records no error. */
const ct_plugin *ct__plugin(ct_plugin_id id);
/* Why the plugin is not available: "the CUDA backend (libctensor-cuda.so)
 * could not be loaded: libcudart.so.13: cannot open shared object file: ...";
 * "" when it is. */
const char *ct__plugin_error(ct_plugin_id id);

#endif /* CT_BACKEND_PLUGIN_H */
