/* Helpers shared by the creation functions (creation.c) and the random
 * creators (random.c): checking opts, allocating, and finishing (requires_grad,
 * scope registration). */
#ifndef CT_OPS_CREATION_H
#define CT_OPS_CREATION_H

#include "core/internal.h"

/* An unregistered fresh contiguous tensor of (shape, opts->dtype) on
 * opts->device (pinned with opts->pin_memory). Checks the shape and the opts,
 * naming `op` in errors. opts must not be NULL. */
ct_tensor *ct__create(const char *op, const int64_t *shape, int ndim, const ct_tensor_opts *opts);
/* Makes t a leaf requiring grad if opts->requires_grad (floating dtypes only;
 * else releases t with CT_ERR_DTYPE) and registers it in the current scope.
 * NULL in, NULL out. */
ct_tensor *ct__finish_creation(const char *op, ct_tensor *t, const ct_tensor_opts *opts);

#endif /* CT_OPS_CREATION_H */
