/* ctensor/dlpack.h: tensors shared with other libraries without a copy (DLPack).
 *
 * DLPack (https://dmlc.github.io/dlpack/latest/) is the in-memory tensor
 * description that NumPy, PyTorch, CuPy, JAX and others exchange: a data
 * pointer, a device, a dtype, a shape, strides in elements, a byte offset, and
 * a deleter that the consumer calls exactly once when it no longer needs the
 * memory. ctensor produces and consumes both structs of the standard: the
 * versioned DLManagedTensorVersioned (DLPack 1.x: version, read-only and
 * is-copied flags) and the legacy DLManagedTensor (DLPack 0.x, what NumPy
 * before 1.25 and PyTorch before 2.3 speak).
 *
 *   #include <ctensor.h>
 *   #include <ctensor/dlpack.h>
 *
 *   ct_tensor *x = ct_arange(0, 6, 1, NULL);
 *   DLManagedTensorVersioned *m = ct_to_dlpack_versioned(x, NULL);
 *   ct_free(x);                         // m keeps the memory alive
 *   ct_tensor *y = ct_from_dlpack_versioned(m);   // y owns m now, no copy
 *   ct_print(y);                        // [0, 1, 2, 3, 4, 5]
 *   ct_free(y);                         // calls m->deleter: the memory goes
 *
 * Ownership. An export returns a struct the consumer owns: it must call its
 * deleter exactly once (that releases ctensor's reference to the storage;
 * the tensor itself can be freed at any time). An import that succeeds takes
 * the struct over: its deleter is called once, when the last tensor viewing
 * the memory is freed; an import that fails leaves it with the caller (who
 * still has to call the deleter). Neither side copies, except an import of a
 * read-only tensor (flag DLPACK_FLAG_BITMASK_READ_ONLY), which ctensor copies
 * since its tensors are always writable (the deleter is then called at once).
 *
 * Devices: CPU memory (kDLCPU, and kDLCUDAHost, page-locked host memory) and
 * CUDA memory (kDLCUDA, kDLCUDAManaged) of a GPU this build can use.
 * Dtypes: f16, bf16, f32, f64, i8, i16, i32, i64, u8 and bool (kDLBool, which
 * DLPack 0.8 added; older consumers refuse it). Negative strides are not
 * accepted (ctensor views have none).
 *
 * Streams (CUDA). DLPack leaves synchronization to the producer: given the
 * stream on which the consumer will use the memory, the producer makes that
 * stream wait for the work it has queued on its own current stream.
 * ct_dlpack_opts.stream is that consumer stream, coded as in the Python
 * protocol's __dlpack__(stream=...): a cudaStream_t as an integer, 1 for the
 * legacy default stream, 2 for the per-thread default stream, -1 for "no
 * synchronization"; 0 (the zeroed options) means the legacy default stream,
 * as stream=None does. The wait is queued on the GPU: the host does not
 * block. When ctensor consumes (ct_from_dlpack*), the producer has already
 * done this for the stream it was given; ct_stream_native_handle() gives the
 * handle of ctensor's current stream to pass it.
 *
 * Memory imported from another library is handed back (the deleter) when its
 * last tensor is freed, without waiting for GPU work still queued on it, as
 * PyTorch does: synchronize first if such work may remain. ct_record_stream
 * is a no-op for such memory (its allocator is the producer's).
 *
 * This header needs DLPack's own (Debian: libdlpack-dev). Its version 0.x
 * lacks the 1.x additions, which this header then declares exactly as
 * DLPack 1.0 does (the layout is part of the standard's ABI).
 */
#ifndef CTENSOR_DLPACK_H
#define CTENSOR_DLPACK_H

#include <dlpack/dlpack.h>
#include <stdint.h>

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- DLPack 1.0 declarations missing from a 0.x dlpack.h ----------------- */
#ifndef DLPACK_MAJOR_VERSION
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif

/* The DLPack version ctensor writes into versioned exports (and the major
 * version it reads). */
#define CT_DLPACK_MAJOR_VERSION 1
#define CT_DLPACK_MINOR_VERSION 0
/* DLPack's type code for bool (kDLBool, DLPack >= 0.8), named here since a
 * 0.x header lacks the enum constant. */
#define CT_DLPACK_BOOL_CODE 6

/* ---- Export ------------------------------------------------------------------ */

typedef struct ct_dlpack_opts {
  /* CUDA tensors: the stream the consumer will use the memory on (see the
   * header's "Streams"): a cudaStream_t cast to an integer, 1 legacy default,
   * 2 per-thread default, -1 none, 0 the legacy default. Ignored for CPU
   * tensors. */
  intptr_t stream;
  /* Export a fresh copy instead of the tensor's memory (sets the versioned
   * struct's DLPACK_FLAG_BITMASK_IS_COPIED). */
  bool copy;
} ct_dlpack_opts;

/* t's memory as a DLPack tensor (no copy unless opts->copy): the dtype, shape,
 * strides (always given, in elements) and device of t, data pointing at its
 * first element (byte_offset 0, as PyTorch and NumPy export), flags 0 (or
 * IS_COPIED). The export holds a reference to t's storage until its deleter
 * runs; autograd state is not part of it (the data of t, as t.detach()).
 * NULL with CT_ERR_OOM, or CT_ERR_CUDA/CT_ERR_UNAVAILABLE if the stream
 * ordering cannot be queued. NULL t: NULL, keeping the error. */
CT_API DLManagedTensorVersioned *ct_to_dlpack_versioned(const ct_tensor *t,
                                                        const ct_dlpack_opts *opts);
/* The same as the legacy struct (no version, no flags). */
CT_API DLManagedTensor *ct_to_dlpack(const ct_tensor *t, const ct_dlpack_opts *opts);

/* ---- Import ------------------------------------------------------------------ */

/* A tensor viewing the memory of m (a new reference; no copy but for
 * read-only memory). Success: ctensor owns m and calls m->deleter exactly once
 * when the last view of the memory goes. Failure (NULL): m still belongs to
 * the caller, whose job the deleter stays. Fails with CT_ERR_ARG (NULL m or
 * data, negative sizes or strides, ndim outside 0..CT_MAX_DIMS, data plus
 * byte offset not aligned to the element size), CT_ERR_DTYPE (a dtype ctensor
 * lacks: complex, u16, vector lanes, ...), CT_ERR_DEVICE (a device type
 * ctensor lacks), CT_ERR_UNAVAILABLE (a CUDA device this build or machine
 * cannot use, or a versioned struct of another major version than 1). */
CT_API ct_tensor *ct_from_dlpack_versioned(DLManagedTensorVersioned *m);
/* The same for the legacy struct. */
CT_API ct_tensor *ct_from_dlpack(DLManagedTensor *m);

/* The DLPack device (type, id) of a ctensor device: {kDLCPU, 0} or
 * {kDLCUDA, index}, the pair a Python array's __dlpack_device__ returns. */
CT_API DLDevice ct_dlpack_device(ct_device device);
/* The DLPack dtype of a ctensor dtype; false for an invalid one. */
CT_API bool ct_dlpack_dtype(ct_dtype dtype, DLDataType *out);

/* ---- Memory from elsewhere ----------------------------------------------------- */

/* Called once with its context when the last tensor viewing external memory
 * is freed. May run on any thread that frees the last view. */
typedef void (*ct_blob_deleter)(void *ctx);

/* A tensor over memory that ctensor does not own, as torch.from_blob: `data`
 * is the address of element (0, ..., 0), on `device` (host memory for the
 * CPU, device memory for a GPU); `strides` in elements (NULL: row-major, no
 * negative ones). On success ctensor calls deleter(ctx) once when the last
 * view of the memory goes (a NULL deleter: the memory must outlive every
 * view); on failure it is not called. The tensor is writable: in-place ops
 * write the caller's memory. Fails as ct_from_dlpack does. */
CT_API ct_tensor *ct_from_blob(void *data, const int64_t *shape, int ndim, const int64_t *strides,
                               ct_dtype dtype, ct_device device, ct_blob_deleter deleter,
                               void *ctx);

/* ---- Streams --------------------------------------------------------------------- */

/* The native handle of a stream (a cudaStream_t as void *), to hand to other
 * libraries (a DLPack producer's stream argument); NULL for a NULL stream,
 * which is the default stream (ctensor's CUDA default is the legacy stream,
 * DLPack's 1), and for CPU streams. */
CT_API void *ct_stream_native_handle(const ct_stream *stream);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_DLPACK_H */
