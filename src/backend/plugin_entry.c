/* The entry point of a plugin's shared object (backend/plugin.h), compiled
 * into each one with CT_PLUGIN_DESCRIPTOR naming its descriptor function.
 *
 * The core exports only the public ct_ API, so the internal functions a
 * plugin's sources call are defined here, hidden, and forwarded to the
 * table the core passes to ct_plugin_entry. This keeps the plugins' sources
 * the same in shared and static builds: in libctensor.a they call the
 * core's own functions, and this file is not compiled. */
#include <stdarg.h>

#include "backend/plugin.h"

#ifndef CT_PLUGIN_DESCRIPTOR
#error "compile with -DCT_PLUGIN_DESCRIPTOR=ct__<name>_plugin"
#endif

static const ct_plugin_host *host;

/* The one symbol the shared object exports. */
__attribute__((visibility("default"))) const ct_plugin *ct_plugin_entry(const ct_plugin_host *h) {
  /* Only the leading fields of an incompatible host can be read safely. */
  if (!h || h->abi != CT_PLUGIN_ABI || h->host_size != sizeof(ct_plugin_host)) return NULL;
  host = h;
  return CT_PLUGIN_DESCRIPTOR();
}

/* ---- The core's internals, through the host ---- */

ct_status ct__fail_status(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ct_status st = host->fail_status_v(code, fmt, ap);
  va_end(ap);
  return st;
}

void *ct__fail(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  host->fail_status_v(code, fmt, ap);
  va_end(ap);
  return NULL;
}

void ct__assert_fail(const char *file, int line, const char *expr) {
  host->assert_fail(file, line, expr);
}

const ct_backend *ct__backend(ct_device_type type) { return host->backend(type); }

void ct__store_from_double(void *p, ct_dtype dtype, double v) {
  host->store_from_double(p, dtype, v);
}

void *ct__malloc(size_t nbytes) { return host->malloc(nbytes); }

void *ct__calloc(size_t count, size_t size) { return host->calloc(count, size); }

void *ct__realloc(void *p, size_t nbytes) { return host->realloc(p, nbytes); }

ct_status ct__mpi_broadcast(const char *op, void *buf, int64_t nbytes, int root) {
  return host->mpi_broadcast(op, buf, nbytes, root);
}
