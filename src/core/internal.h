/* Internal definitions shared by the core, the op layer and the backends:
 * the tensor and storage structs, error helpers, scopes, shape utilities.
 * Nothing here is public API. */
#ifndef CT_CORE_INTERNAL_H
#define CT_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "ctensor.h"

/* The CUDA backend's .cu files (C++) include this header to read tensors
 * directly; they never change a reference count or a version, so C++ sees
 * those counters as plain integers of the same size and alignment (checked
 * in C below). */
#ifdef __cplusplus
typedef int ct__atomic_int;
typedef unsigned ct__atomic_uint;
extern "C" {
#else
#include <stdatomic.h>
typedef atomic_int ct__atomic_int;
typedef atomic_uint ct__atomic_uint;
_Static_assert(sizeof(atomic_int) == sizeof(int) && _Alignof(atomic_int) == _Alignof(int) &&
                   sizeof(atomic_uint) == sizeof(unsigned) &&
                   _Alignof(atomic_uint) == _Alignof(unsigned),
               "C++ reads the atomic counters as plain integers");
#endif

#if defined(__GNUC__)
#define CT_LIKELY(x) __builtin_expect(!!(x), 1)
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CT_LIKELY(x) (x)
#define CT_UNLIKELY(x) (x)
#define CT_PRINTF(a, b)
#endif

/* ---- Errors ------------------------------------------------------------- */

/* Records code and message on this thread; always returns NULL so that
 * `return ct__fail(...)` fits functions returning pointers. */
void *ct__fail(ct_status code, const char *fmt, ...) CT_PRINTF(2, 3);
/* Same, returning the code, for functions returning ct_status. */
ct_status ct__fail_status(ct_status code, const char *fmt, ...) CT_PRINTF(2, 3);
/* Same, from a va_list (plugins reach it through their host table). */
ct_status ct__fail_status_v(ct_status code, const char *fmt, va_list ap) CT_PRINTF(2, 0);
/* Broken invariant (a bug): calls the abort callback with file and line. */
void ct__assert_fail(const char *file, int line, const char *expr);
#define CT_ASSERT(cond) \
  do { if (CT_UNLIKELY(!(cond))) ct__assert_fail(__FILE__, __LINE__, #cond); } while (0)

/* ---- Storage and tensors ------------------------------------------------ */

/* FOREIGN: data is a separate block of the device's allocator; EXTERNAL: data
 * belongs to someone else (ct_from_blob, DLPack), handed back by a callback. */
enum { CT_STORAGE_PINNED = 1, CT_STORAGE_FOREIGN = 2, CT_STORAGE_EXTERNAL = 4 };

/* A reference-counted block of device memory shared by views. */
typedef struct ct_storage {
  ct__atomic_int refcount;
  ct_device device;
  uint8_t flags;             /* CT_STORAGE_* */
  size_t nbytes;             /* usable bytes at data */
  void *data;                /* device pointer (host pointer for the CPU) */
  ct__atomic_uint version;   /* bumped by every in-place write through any view */
} ct_storage;

struct ct_autograd_meta; /* defined by the autograd layer */

/* A view on a storage. Element (i0, ..., i{n-1}) lives at
 *   storage->data + (offset + sum_k i_k * strides[k]) * dtype size. */
struct ct_tensor {
  ct__atomic_int refcount;
  ct_dtype dtype;
  int ndim;                         /* 0..CT_MAX_DIMS; 0 is a scalar */
  int64_t shape[CT_MAX_DIMS];       /* extent of each dim */
  int64_t strides[CT_MAX_DIMS];     /* in elements; 0 for broadcast dims */
  int64_t offset;                   /* in elements */
  int64_t numel;                    /* product of shape (1 for a scalar) */
  ct_storage *storage;
  struct ct_autograd_meta *autograd;/* NULL unless autograd touched it */
  int32_t scope_depth;              /* 1-based scope owning a reference; 0 = none */
  int64_t scope_slot;               /* index in that scope's list */
};

static inline size_t ct__elsize(ct_dtype d) { return ct_dtype_size(d); }
/* Address of the first element. */
static inline void *ct__data(const ct_tensor *t) {
  return (char *)t->storage->data + (size_t)t->offset * ct__elsize(t->dtype);
}
static inline bool ct__is_cpu(const ct_tensor *t) { return t->storage->device.type == CT_DEVICE_CPU; }
static inline ct_device ct__device(const ct_tensor *t) { return t->storage->device; }
#ifndef __cplusplus
static inline void ct__bump_version(ct_tensor *t) {
  atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}
#endif

/* Allocates a storage of nbytes on device (memory from the device's caching
 * allocator; pinned host memory when `pinned`). NULL + CT_ERR_OOM on failure. */
ct_storage *ct__storage_new(ct_device device, size_t nbytes, bool pinned);
void ct__storage_retain(ct_storage *s);
void ct__storage_release(ct_storage *s);
/* A storage over memory ctensor does not own (storage_external.c): release(ctx)
 * runs once when its last reference goes (NULL release: nothing runs). */
ct_storage *ct__storage_external(ct_device device, void *data, size_t nbytes, void (*release)(void *ctx),
                                 void *ctx);
void ct__storage_external_free(ct_storage *s);
/* Frees a fresh external storage without running its release (a failed import). */
void ct__storage_external_abandon(ct_storage *s);

/* A new contiguous tensor with fresh storage; NOT registered in any scope. */
ct_tensor *ct__empty(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device);
/* Same, pinned host memory. */
ct_tensor *ct__empty_pinned(const int64_t *shape, int ndim, ct_dtype dtype);
/* A view of `base`'s storage with the given geometry; NOT registered. */
ct_tensor *ct__view_of(const ct_tensor *base, ct_dtype dtype, const int64_t *shape,
                       const int64_t *strides, int ndim, int64_t offset);
/* Drops one reference without touching scopes (internal temporaries). */
void ct__release(ct_tensor *t);
ct_tensor *ct__retain(const ct_tensor *t);
/* Tensor handles alive in the process (all threads): for the tests that
 * check that a pattern of calls leaks none (tests/test_module_scope.c). */
int64_t ct__live_tensors(void);

/* Registers a new tensor in the current scope (if any) and returns it. Every
 * public function returning a new tensor passes it through here; internal
 * code works with unregistered tensors and releases them itself. */
ct_tensor *ct__track(ct_tensor *t);

/* Hook used by ct__release to free autograd state (set by the autograd layer
 * when it first attaches state to a tensor). */
extern void (*ct__autograd_meta_free)(struct ct_autograd_meta *meta);
/* Marks a fresh tensor as a leaf requiring grad (creation with requires_grad). */
ct_status ct__make_leaf_requires_grad(ct_tensor *t);

/* ---- Shapes --------------------------------------------------------------- */

/* Product of shape; -1 for a negative size or when the product of the
 * nonzero sizes overflows int64 (also when another size is 0). */
int64_t ct__shape_numel(const int64_t *shape, int ndim);
/* Contiguous (row-major) strides in elements. */
void ct__contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
bool ct__is_contiguous(const ct_tensor *t);
/* Normalizes dim (negative from the end) into [0, ndim); false if out of range. */
bool ct__wrap_dim(int *dim, int ndim);
/* Checks a shape argument: ndim in [0, 8], sizes >= 0, numel without overflow.
 * Records an error naming `op` and returns false otherwise. */
bool ct__check_shape(const char *op, const int64_t *shape, int ndim);
/* NumPy broadcasting of two shapes into out (ndim in *out_ndim). false if they
 * do not broadcast (no error recorded). */
bool ct__broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                          int *out_ndim);
/* "(2, 3)" into buf (also "()" and "(5,)"). */
char *ct__shape_str(const ct_tensor *t, char *buf, size_t size);
#define CT_SHAPE_STR_MAX 128
/* Whether the tensor's elements can overlap in memory (a stride 0 on a dim of
 * size > 1): such tensors can't be written by elementwise ops. */
bool ct__has_internal_overlap(const ct_tensor *t);

/* ---- Checks used by ops ------------------------------------------------- */

/* A device a caller named: cpu (index 0) or a visible GPU; else
 * CT_ERR_DEVICE (an invalid type or CPU index) or CT_ERR_UNAVAILABLE (no such
 * GPU, or no CUDA in this build) naming op. */
bool ct__check_device(const char *op, ct_device device);
/* All non-NULL tensors on one device, else CT_ERR_DEVICE naming op and both devices. */
bool ct__check_same_device(const char *op, const ct_tensor *a, const ct_tensor *b);

/* ---- Single values ------------------------------------------------------ */

/* One element of any dtype at p, as a double / stored from a double
 * (float-to-integer saturates; nan gives 0). Not for hot loops. */
double ct__load_as_double(const void *p, ct_dtype dtype);
void ct__store_from_double(void *p, ct_dtype dtype, double v);
/* One element of an integer or bool dtype at p, exactly (i64 beyond 2^53). */
int64_t ct__load_as_i64(const void *p, ct_dtype dtype);
/* Whether v converts to dtype without overflow, as PyTorch's fills check
 * (full, fill_, masked_fill, clamp bounds...): nan and infinities only for
 * floating dtypes (and bool), integer ranges for integers. ct__check_...
 * records CT_ERR_ARG naming op, the value and the dtype. */
bool ct__scalar_fits(double v, ct_dtype dtype);
bool ct__check_scalar_fits(const char *op, double v, ct_dtype dtype);

/* ---- Threads -------------------------------------------------------------- */

/* Elements below which CPU kernels stay single-threaded. */
#define CT_PARALLEL_GRAIN 32768
/* Threads of ctensor's CPU pool (core/parallel.h), the calling thread
 * included: ct_set_num_threads, else CT_NUM_THREADS, else OMP_NUM_THREADS,
 * else the CPUs this process may run on. */
int ct__num_threads(void);

/* ---- Host caching allocator ---------------------------------------------- */

void *ct__host_alloc(size_t nbytes);
void ct__host_free(void *ptr, size_t nbytes);
void ct__host_memory_stats(ct_memory_stats *out);
void ct__host_empty_cache(void);

#ifdef __cplusplus
}
#endif
#endif /* CT_CORE_INTERNAL_H */
