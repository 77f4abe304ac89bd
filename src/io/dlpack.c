/* DLPack: exporting tensors as DLManagedTensor(Versioned) and importing them,
 * and tensors over external memory (ct_from_blob). An export holds a detached
 * view of the tensor (a reference to its storage) until the consumer calls the
 * deleter; an import wraps the producer's memory in an external storage whose
 * release calls the producer's deleter. */
#include <stdlib.h>

#include "ctensor/dlpack.h"
#include "ops/ops_internal.h"

/* ---- dtypes and devices ------------------------------------------------------------ */

/* DLPack (code, bits) of each dtype, in ct_dtype order. */
static const DLDataType dl_dtypes[] = {
    [CT_F32] = {kDLFloat, 32, 1}, [CT_F64] = {kDLFloat, 64, 1},
    [CT_F16] = {kDLFloat, 16, 1}, [CT_BF16] = {kDLBfloat, 16, 1},
    [CT_I8] = {kDLInt, 8, 1},     [CT_U8] = {kDLUInt, 8, 1},
    [CT_I16] = {kDLInt, 16, 1},   [CT_I32] = {kDLInt, 32, 1},
    [CT_I64] = {kDLInt, 64, 1},   [CT_BOOL] = {CT_DLPACK_BOOL_CODE, 8, 1},
};
_Static_assert(sizeof dl_dtypes / sizeof dl_dtypes[0] == CT_DTYPE_COUNT,
               "one DLPack dtype per ct_dtype");

bool ct_dlpack_dtype(ct_dtype dtype, DLDataType *out) {
  if ((unsigned)dtype >= CT_DTYPE_COUNT || !out) return false;
  *out = dl_dtypes[dtype];
  return true;
}

static bool dtype_from_dl(DLDataType dl, ct_dtype *out) {
  for (int d = 0; d < CT_DTYPE_COUNT; d++)
    if (dl.code == dl_dtypes[d].code && dl.bits == dl_dtypes[d].bits && dl.lanes == 1) {
      *out = (ct_dtype)d;
      return true;
    }
  return false;
}

DLDevice ct_dlpack_device(ct_device device) {
  DLDevice d;
  d.device_type = device.type == CT_DEVICE_CUDA ? kDLCUDA : kDLCPU;
  d.device_id = device.type == CT_DEVICE_CUDA ? device.index : 0;
  return d;
}

/* The ctensor device of a DLPack device, checked to be usable by this build. */
static bool device_from_dl(const char *op, DLDevice dl, ct_device *out) {
  switch ((int)dl.device_type) {
    case kDLCPU:
    case kDLCUDAHost: /* page-locked host memory is host memory */
      *out = ct_cpu();
      return true;
    case kDLCUDA:
    case kDLCUDAManaged:
      if (!ct__backend(CT_DEVICE_CUDA) || dl.device_id < 0 ||
          dl.device_id >= ct_cuda_device_count() || dl.device_id > INT8_MAX) {
        ct__fail(CT_ERR_UNAVAILABLE, "%s: cuda:%d is not available (%d GPU(s) visible%s)", op,
                 dl.device_id, ct_cuda_device_count(),
                 ct__backend(CT_DEVICE_CUDA) ? "" : ", no CUDA in this build");
        return false;
      }
      *out = ct_cuda(dl.device_id);
      return true;
    default:
      ct__fail(CT_ERR_DEVICE,
               "%s: DLPack device type %d is not one ctensor has (CPU 1, CUDA 2, CUDA host 3, "
               "CUDA managed 13)",
               op, (int)dl.device_type);
      return false;
  }
}

/* ---- Import -------------------------------------------------------------------------- */

/* A tensor over `data` (element (0, ..., 0)); release(ctx) runs when its
 * storage goes. Not registered in a scope; NULL (release not called) on error. */
static ct_tensor *wrap_memory(const char *op, void *data, const int64_t *shape,
                              const int64_t *strides, int ndim, ct_dtype dtype, ct_device device,
                              void (*release)(void *ctx), void *ctx) {
  if (ndim < 0 || ndim > CT_MAX_DIMS)
    return ct__fail(CT_ERR_ARG, "%s: %d dims (ctensor takes 0 to %d)", op, ndim, CT_MAX_DIMS);
  if (ndim > 0 && !shape) return ct__fail(CT_ERR_ARG, "%s: shape is NULL for %d dims", op, ndim);
  int64_t st[CT_MAX_DIMS];
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      return ct__fail(CT_ERR_ARG, "%s: size %lld of dim %d is negative", op, (long long)shape[d],
                      d);
  int64_t numel = ct__shape_numel(shape, ndim);
  if (numel < 0) return ct__fail(CT_ERR_ARG, "%s: the shape's element count overflows", op);
  if (strides) {
    for (int d = 0; d < ndim; d++) {
      if (strides[d] < 0 && shape[d] > 1)
        return ct__fail(CT_ERR_ARG,
                        "%s: stride %lld of dim %d is negative (ctensor views have none; pass a "
                        "contiguous copy)",
                        op, (long long)strides[d], d);
      st[d] = strides[d] < 0 ? 0 : strides[d]; /* a dim of size <= 1 never moves */
    }
  } else {
    ct__contiguous_strides(shape, ndim, st);
  }
  size_t es = ct_dtype_size(dtype);
  /* bytes from element 0 to one past the last element (strides are >= 0) */
  uint64_t last = 0;
  for (int d = 0; d < ndim && numel > 0; d++) {
    uint64_t span;
    if (__builtin_mul_overflow((uint64_t)(shape[d] - 1), (uint64_t)st[d], &span) ||
        __builtin_add_overflow(last, span, &last))
      return ct__fail(CT_ERR_ARG, "%s: the strides reach beyond the address space", op);
  }
  uint64_t nbytes = 0;
  if (numel > 0 && (__builtin_mul_overflow(last + 1, (uint64_t)es, &nbytes) || nbytes > SIZE_MAX))
    return ct__fail(CT_ERR_ARG, "%s: the strides reach beyond the address space", op);
  if (numel > 0 && !data)
    return ct__fail(CT_ERR_ARG, "%s: data is NULL for %lld elements", op, (long long)numel);
  if ((uintptr_t)data % es)
    return ct__fail(CT_ERR_ARG, "%s: data at %p is not aligned to its %zu-byte %s elements", op,
                    data, es, ct_dtype_name(dtype));
  ct_storage *s = ct__storage_external(device, data, (size_t)nbytes, release, ctx);
  if (!s) return NULL;
  /* ct__view_of needs a base only for its storage */
  ct_tensor base = {.storage = s};
  ct_tensor *t = ct__view_of(&base, dtype, shape, st, ndim, 0);
  if (!t) {
    ct__storage_external_abandon(s); /* failure: the caller keeps ownership */
    return NULL;
  }
  ct__storage_release(s); /* the view holds the storage now */
  return t;
}

ct_tensor *ct_from_blob(void *data, const int64_t *shape, int ndim, const int64_t *strides,
                        ct_dtype dtype, ct_device device, ct_blob_deleter deleter, void *ctx) {
  if ((unsigned)dtype >= CT_DTYPE_COUNT)
    return ct__fail(CT_ERR_DTYPE, "from_blob: invalid dtype %d", (int)dtype);
  if (device.type == CT_DEVICE_CUDA) {
    if (!device_from_dl("from_blob", ct_dlpack_device(device), &device)) return NULL;
  } else if (device.type != CT_DEVICE_CPU || device.index != 0) {
    return ct__fail(CT_ERR_DEVICE, "from_blob: invalid device (type %d, index %d)", device.type,
                    device.index);
  }
  return ct__track(
      wrap_memory("from_blob", data, shape, strides, ndim, dtype, device, deleter, ctx));
}

/* The common import: the tensor DLPack describes; `release(ctx)` calls the
 * producer's deleter. Read-only memory is copied, then released at once. */
static ct_tensor *import(const char *op, const DLTensor *dl, bool read_only,
                         void (*release)(void *ctx), void *ctx) {
  ct_dtype dtype;
  if (!dtype_from_dl(dl->dtype, &dtype))
    return ct__fail(CT_ERR_DTYPE,
                    "%s: DLPack dtype (code %u, %u bits, %u lanes) is not one ctensor has", op,
                    (unsigned)dl->dtype.code, (unsigned)dl->dtype.bits, (unsigned)dl->dtype.lanes);
  ct_device device;
  if (!device_from_dl(op, dl->device, &device)) return NULL;
  if (dl->byte_offset > (uint64_t)UINTPTR_MAX - (uintptr_t)dl->data)
    return ct__fail(CT_ERR_ARG, "%s: byte offset %llu overflows the data pointer", op,
                    (unsigned long long)dl->byte_offset);
  void *first = dl->data ? (char *)dl->data + dl->byte_offset : NULL;
  if (!read_only)
    return wrap_memory(op, first, dl->shape, dl->strides, dl->ndim, dtype, device, release, ctx);
  ct_tensor *view =
      wrap_memory(op, first, dl->shape, dl->strides, dl->ndim, dtype, device, NULL, NULL);
  ct_tensor *copy = view ? ct__clone(view) : NULL;
  ct__release(view);
  if (copy) release(ctx); /* success: the producer's memory is no longer needed */
  return copy;
}

static void release_versioned(void *ctx) {
  DLManagedTensorVersioned *m = ctx;
  if (m->deleter) m->deleter(m);
}

static void release_legacy(void *ctx) {
  DLManagedTensor *m = ctx;
  if (m->deleter) m->deleter(m);
}

ct_tensor *ct_from_dlpack_versioned(DLManagedTensorVersioned *m) {
  if (!m) return ct__fail(CT_ERR_ARG, "from_dlpack: the managed tensor is NULL");
  if (m->version.major != CT_DLPACK_MAJOR_VERSION)
    return ct__fail(CT_ERR_UNAVAILABLE, "from_dlpack: DLPack version %u.%u; ctensor reads %d.x",
                    m->version.major, m->version.minor, CT_DLPACK_MAJOR_VERSION);
  bool read_only = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  return ct__track(import("from_dlpack", &m->dl_tensor, read_only, release_versioned, m));
}

ct_tensor *ct_from_dlpack(DLManagedTensor *m) {
  if (!m) return ct__fail(CT_ERR_ARG, "from_dlpack: the managed tensor is NULL");
  return ct__track(import("from_dlpack", &m->dl_tensor, false, release_legacy, m));
}

/* ---- Export -------------------------------------------------------------------------- */

/* What an export owns: the struct handed out comes first, so the deleter's
 * argument is the whole block. */
typedef struct export_versioned {
  DLManagedTensorVersioned m;
  ct_tensor *held; /* a detached view (or copy): keeps the storage alive */
  int64_t shape[CT_MAX_DIMS];
  int64_t strides[CT_MAX_DIMS];
} export_versioned;

typedef struct export_legacy {
  DLManagedTensor m;
  ct_tensor *held;
  int64_t shape[CT_MAX_DIMS];
  int64_t strides[CT_MAX_DIMS];
} export_legacy;

static void delete_versioned(DLManagedTensorVersioned *m) {
  if (!m) return;
  ct__release(((export_versioned *)m)->held);
  free(m);
}

static void delete_legacy(DLManagedTensor *m) {
  if (!m) return;
  ct__release(((export_legacy *)m)->held);
  free(m);
}

/* Makes the consumer's stream wait for the work queued on the current stream
 * of t's device (the DLPack producer's duty), on the GPU. */
static ct_status order_for_consumer(const ct_tensor *t, intptr_t stream) {
  ct_device dev = ct__device(t);
  if (dev.type != CT_DEVICE_CUDA || stream == -1) return CT_OK;
  void *consumer = (void *)(stream == 0 ? 1 : stream); /* 1: cudaStreamLegacy */
  void *current = ct_stream_native_handle(ct_stream_current(dev));
  if (current == consumer || (!current && consumer == (void *)1)) return CT_OK; /* one stream */
  const ct_backend *be = ct__backend(CT_DEVICE_CUDA);
  if (!be || !be->event_new || !be->event_record || !be->stream_wait_event)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "to_dlpack: no CUDA backend to order streams");
  void *event = be->event_new(dev.index, false);
  if (!event) return ct_last_error();
  ct_status st = be->event_record(dev.index, event, NULL); /* NULL: the current stream */
  if (st == CT_OK) st = be->stream_wait_event(dev.index, consumer, event);
  be->event_free(dev.index, event); /* a queued wait keeps its event */
  return st;
}

/* The view or copy an export holds, with the stream ordering done. */
static ct_tensor *export_hold(const ct_tensor *t, const ct_dlpack_opts *opts) {
  ct_dlpack_opts o = opts ? *opts : (ct_dlpack_opts){0};
  ct_tensor *held =
      o.copy ? ct__clone(t) : ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset);
  if (held && order_for_consumer(held, o.stream) != CT_OK) {
    ct__release(held);
    return NULL;
  }
  return held;
}

static void fill_dltensor(DLTensor *dl, ct_tensor *held, int64_t *shape, int64_t *strides) {
  for (int d = 0; d < held->ndim; d++) {
    shape[d] = held->shape[d];
    strides[d] = held->strides[d];
  }
  dl->data = ct__data(held);
  dl->device = ct_dlpack_device(ct__device(held));
  dl->ndim = held->ndim;
  dl->dtype = dl_dtypes[held->dtype];
  dl->shape = shape;
  dl->strides = strides;
  dl->byte_offset = 0;
}

DLManagedTensorVersioned *ct_to_dlpack_versioned(const ct_tensor *t, const ct_dlpack_opts *opts) {
  if (!t) return NULL;
  export_versioned *e = ct__calloc(1, sizeof *e);
  if (!e) return ct__fail(CT_ERR_OOM, "to_dlpack: out of host memory");
  if (!(e->held = export_hold(t, opts))) {
    free(e);
    return NULL;
  }
  e->m.version = (DLPackVersion){CT_DLPACK_MAJOR_VERSION, CT_DLPACK_MINOR_VERSION};
  e->m.manager_ctx = e;
  e->m.deleter = delete_versioned;
  e->m.flags = opts && opts->copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
  fill_dltensor(&e->m.dl_tensor, e->held, e->shape, e->strides);
  return &e->m;
}

DLManagedTensor *ct_to_dlpack(const ct_tensor *t, const ct_dlpack_opts *opts) {
  if (!t) return NULL;
  export_legacy *e = ct__calloc(1, sizeof *e);
  if (!e) return ct__fail(CT_ERR_OOM, "to_dlpack: out of host memory");
  if (!(e->held = export_hold(t, opts))) {
    free(e);
    return NULL;
  }
  e->m.manager_ctx = e;
  e->m.deleter = delete_legacy;
  fill_dltensor(&e->m.dl_tensor, e->held, e->shape, e->strides);
  return &e->m;
}
