/* ctensor/error.h: status codes and the thread-local last error.
 *
 * Every function that returns a tensor returns NULL on failure and records a
 * thread-local error: a code and a message written for a person, naming the
 * operation and the values, e.g.
 *   "matmul: shapes (3, 4) and (5, 6) cannot be multiplied (4 != 5)".
 * A function given a NULL tensor returns NULL and keeps the error already
 * recorded, so a whole expression can be checked once at the end:
 *
 *   ct_tensor *y = ct_relu(ct_add(ct_matmul(x, w), b));
 *   if (!y) fprintf(stderr, "%s\n", ct_last_error_message());
 *
 * Functions that return a status return CT_OK (0) or the error code.
 * Library code never exits or aborts because of a user's mistake; internal
 * invariants go through CT_ASSERT, whose abort can be replaced.
 */
#ifndef CTENSOR_ERROR_H
#define CTENSOR_ERROR_H

#include "ctensor/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_status {
  CT_OK = 0,
  CT_ERR_ARG,         /* an argument is out of range or inconsistent */
  CT_ERR_SHAPE,       /* shapes do not fit the operation */
  CT_ERR_DTYPE,       /* a dtype the operation does not take, or cannot cast to */
  CT_ERR_DEVICE,      /* tensors on different devices, or an unknown device */
  CT_ERR_OOM,         /* out of host or device memory */
  CT_ERR_CUDA,        /* a CUDA call failed */
  CT_ERR_IO,          /* a file could not be opened, read or written */
  CT_ERR_FORMAT,      /* a file's contents are malformed, truncated or hostile */
  CT_ERR_UNAVAILABLE, /* a feature or device not present in this build/machine */
  CT_ERR_STATE,       /* an object used in a state that does not allow it */
  CT_ERR_INTERNAL,    /* a bug in ctensor; please report it */
  CT_STATUS_COUNT
} ct_status;

/* The code of the last error on this thread (CT_OK if none since the last clear). */
CT_API ct_status ct_last_error(void);
/* The message of the last error on this thread ("" if none). Valid until the next error. */
CT_API const char *ct_last_error_message(void);
/* Forget the last error on this thread. */
CT_API void ct_clear_error(void);
/* A short name for a status code: "CT_ERR_SHAPE". */
CT_API const char *ct_status_name(ct_status status);

/* Called by CT_ASSERT on a broken internal invariant (a bug, never a user
 * error). The default prints file, line and message and aborts. */
typedef void (*ct_abort_callback)(const char *file, int line, const char *message);
/* Replace the abort callback; NULL restores the default. Returns the previous one. */
CT_API ct_abort_callback ct_set_abort_callback(ct_abort_callback callback);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_ERROR_H */
