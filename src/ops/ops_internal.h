/* Helpers shared by the op layer: argument checks, result allocation,
 * broadcasting views, casts, and writing results into `out` tensors. */
#ifndef CT_OPS_INTERNAL_H
#define CT_OPS_INTERNAL_H

#include "backend/backend.h"

/* The backend of t's device, or NULL with CT_ERR_UNAVAILABLE naming op. */
const ct_backend *ct__backend_for(const char *op, const ct_tensor *t);
/* The backend slot must exist; else CT_ERR_UNAVAILABLE naming op and device. */
#define CT_NEED_SLOT(be, slot, op, t)                                                          \
  do {                                                                                         \
    if (!(be)->slot)                                                                           \
      return ct__fail(CT_ERR_UNAVAILABLE, "%s: not implemented on %s", op,                     \
                      ct_device_name(ct__device(t)));                                          \
  } while (0)

/* An expanded (stride 0) view of t with the broadcast shape; a new reference.
 * t's shape must broadcast to shape (checked by the caller). */
ct_tensor *ct__broadcast_to(const ct_tensor *t, const int64_t *shape, int ndim);
/* t converted to dtype: a new reference to t itself if it already has it. */
ct_tensor *ct__cast(const ct_tensor *t, ct_dtype dtype);
/* t made contiguous: a new reference to t itself if it already is. */
ct_tensor *ct__contiguous(const ct_tensor *t);
/* A contiguous copy (new storage). */
ct_tensor *ct__clone(const ct_tensor *t);
/* dst = src with broadcasting and casting, same device (backend copy). */
ct_status ct__copy_into(ct_tensor *dst, const ct_tensor *src);

/* Checks an `out` argument of op: not NULL, on `device`, of exactly `shape`,
 * its dtype able to hold `result_dtype` (ct_can_cast), and without internal
 * overlap. Records an error and returns false otherwise. */
bool ct__check_out(const char *op, const ct_tensor *out, const int64_t *shape, int ndim,
                   ct_dtype result_dtype, ct_device device);

/* Resolves where a result goes. If `out` is NULL, allocates a fresh result of
 * (shape, dtype) on device and returns it (a new reference): the kernel writes
 * there directly. If `out` is given and has exactly `dtype` and is safe to
 * write, returns a new reference to out. Otherwise (out has another dtype)
 * returns a temporary of `dtype`; call ct__finish_out afterwards to copy it into
 * out. Returns NULL with an error recorded on failure. */
ct_tensor *ct__result_for(const char *op, ct_tensor *out, const int64_t *shape, int ndim,
                          ct_dtype dtype, ct_device device);
/* After the kernel wrote `res` (from ct__result_for): if out is given and res
 * is a temporary, copies res into out; bumps out's version; releases res when
 * out is given. Returns out if given, else res (the caller tracks it). NULL
 * if status != CT_OK (releasing res). */
ct_tensor *ct__finish_out(ct_tensor *out, ct_tensor *res, ct_status status);

#endif /* CT_OPS_INTERNAL_H */
