/* Storage: a reference-counted block of device memory shared by views.
 * Small host storages carry their data inline (one allocation instead of
 * two), which keeps the per-op cost of tiny tensors low. */
#include <stdlib.h>

#include "backend/backend.h"

#define INLINE_BYTES 64

typedef struct inline_storage {
  ct_storage s;
  _Alignas(64) unsigned char data[INLINE_BYTES];
} inline_storage;

/* Pinned host memory is page-locked by the CUDA runtime, so the CUDA backend
 * allocates it (device_index -1 means "pinned host memory"). */
static const ct_backend *allocator_of(ct_device device, bool pinned) {
  return ct__backend(pinned ? CT_DEVICE_CUDA : (ct_device_type)device.type);
}

ct_storage *ct__storage_new(ct_device device, size_t nbytes, bool pinned) {
  const ct_backend *be = allocator_of(device, pinned);
  if (pinned && !be)
    return ct__fail(CT_ERR_UNAVAILABLE, "pin_memory: pinned host memory needs the CUDA backend: %s",
                    ct__backend_error(CT_DEVICE_CUDA));
  if (!be)
    return ct__fail(CT_ERR_UNAVAILABLE, "%s: no backend for this device: %s",
                    ct_device_name(device), ct__backend_error((ct_device_type)device.type));
  ct_storage *s;
  if (device.type == CT_DEVICE_CPU && !pinned && nbytes <= INLINE_BYTES) {
    inline_storage *is = ct__malloc(sizeof *is);
    if (!is) return ct__fail(CT_ERR_OOM, "out of host memory allocating %zu bytes", sizeof *is);
    s = &is->s;
    s->data = is->data;
    s->flags = 0;
  } else {
    s = ct__malloc(sizeof *s);
    if (!s) return ct__fail(CT_ERR_OOM, "out of host memory allocating %zu bytes", sizeof *s);
    s->data = be->alloc(pinned ? -1 : device.index, nbytes, pinned);
    if (!s->data) {
      free(s);
      return NULL; /* the backend recorded CT_ERR_OOM with its statistics */
    }
    s->flags = pinned ? CT_STORAGE_PINNED : 0;
    s->flags |= CT_STORAGE_FOREIGN; /* data is a separate block */
  }
  atomic_init(&s->refcount, 1);
  atomic_init(&s->version, 0);
  s->device = device;
  s->nbytes = nbytes;
  return s;
}

void ct__storage_retain(ct_storage *s) { atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed); }

void ct__storage_release(ct_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
  if (s->flags & CT_STORAGE_EXTERNAL) {
    ct__storage_external_free(s);
    return;
  }
  if (s->flags & CT_STORAGE_FOREIGN) {
    bool pinned = (s->flags & CT_STORAGE_PINNED) != 0;
    allocator_of(s->device, pinned)->free(pinned ? -1 : s->device.index, s->data, s->nbytes, pinned);
  }
  free(s);
}
