/* Storages over memory that ctensor does not own (ct_from_blob, DLPack
 * imports): the owner's callback runs once, when the last view goes, instead
 * of a free to one of ctensor's allocators. */
#include <stdlib.h>

#include "core/internal.h"

typedef struct external_storage {
  ct_storage s;
  void (*release)(void *ctx);
  void *ctx;
} external_storage;

ct_storage *ct__storage_external(ct_device device, void *data, size_t nbytes,
                                 void (*release)(void *ctx), void *ctx) {
  external_storage *es = ct__malloc(sizeof *es);
  if (!es) return ct__fail(CT_ERR_OOM, "out of host memory allocating %zu bytes", sizeof *es);
  atomic_init(&es->s.refcount, 1);
  atomic_init(&es->s.version, 0);
  es->s.device = device;
  es->s.flags = CT_STORAGE_EXTERNAL;
  es->s.nbytes = nbytes;
  es->s.data = data;
  es->release = release;
  es->ctx = ctx;
  return &es->s;
}

void ct__storage_external_free(ct_storage *s) {
  external_storage *es = (external_storage *)s;
  if (es->release) es->release(es->ctx);
  free(es);
}

void ct__storage_external_abandon(ct_storage *s) { free((external_storage *)s); }
