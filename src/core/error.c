/* The thread-local last error and the abort callback for broken invariants. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"

static _Thread_local ct_status tls_code = CT_OK;
static _Thread_local char tls_message[1024];

static const char *const status_names[] = {
    [CT_OK] = "CT_OK",
    [CT_ERR_ARG] = "CT_ERR_ARG",
    [CT_ERR_SHAPE] = "CT_ERR_SHAPE",
    [CT_ERR_DTYPE] = "CT_ERR_DTYPE",
    [CT_ERR_DEVICE] = "CT_ERR_DEVICE",
    [CT_ERR_OOM] = "CT_ERR_OOM",
    [CT_ERR_CUDA] = "CT_ERR_CUDA",
    [CT_ERR_IO] = "CT_ERR_IO",
    [CT_ERR_FORMAT] = "CT_ERR_FORMAT",
    [CT_ERR_UNAVAILABLE] = "CT_ERR_UNAVAILABLE",
    [CT_ERR_STATE] = "CT_ERR_STATE",
    [CT_ERR_INTERNAL] = "CT_ERR_INTERNAL",
};
_Static_assert(sizeof(status_names) / sizeof(status_names[0]) == CT_STATUS_COUNT,
               "status_names must name every ct_status");

ct_status ct_last_error(void) { return tls_code; }
const char *ct_last_error_message(void) { return tls_code == CT_OK ? "" : tls_message; }
void ct_clear_error(void) {
  tls_code = CT_OK;
  tls_message[0] = 0;
}

const char *ct_status_name(ct_status status) {
  if ((unsigned)status >= CT_STATUS_COUNT) return "CT_ERR_UNKNOWN";
  return status_names[status];
}

static void record(ct_status code, const char *fmt, va_list ap) {
  tls_code = code;
  vsnprintf(tls_message, sizeof tls_message, fmt, ap);
}

void *ct__fail(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(code, fmt, ap);
  va_end(ap);
  return NULL;
}

ct_status ct__fail_status_v(ct_status code, const char *fmt, va_list ap) {
  record(code, fmt, ap);
  return code;
}

ct_status ct__fail_status(ct_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record(code, fmt, ap);
  va_end(ap);
  return code;
}

static void default_abort(const char *file, int line, const char *message) {
  fprintf(stderr, "ctensor: internal error at %s:%d: %s\n", file, line, message);
  abort();
}

static _Atomic(ct_abort_callback) abort_callback; /* NULL: the default */

ct_abort_callback ct_set_abort_callback(ct_abort_callback callback) {
  return atomic_exchange(&abort_callback, callback);
}

void ct__assert_fail(const char *file, int line, const char *expr) {
  ct_abort_callback cb = atomic_load(&abort_callback);
  (cb ? cb : default_abort)(file, line, expr);
}
