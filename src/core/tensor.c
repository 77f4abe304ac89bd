/* Tensor handles: creation of empty tensors and views, reference counting,
 * and the read-only properties. */
#include <stdlib.h>

#include "backend/backend.h"

void (*ct__autograd_meta_free)(struct ct_autograd_meta *meta) = NULL;

/* Handles made and not yet freed (ct__live_tensors); relaxed: a count only. */
static atomic_llong live_tensors;

int64_t ct__live_tensors(void) { return atomic_load_explicit(&live_tensors, memory_order_relaxed); }

static void tensor_free(ct_tensor *t) {
  atomic_fetch_sub_explicit(&live_tensors, 1, memory_order_relaxed);
  free(t);
}

static ct_tensor *tensor_alloc(void) {
  ct_tensor *t = ct__malloc(sizeof *t);
  if (!t) return ct__fail(CT_ERR_OOM, "out of host memory allocating a tensor handle");
  atomic_fetch_add_explicit(&live_tensors, 1, memory_order_relaxed);
  atomic_init(&t->refcount, 1);
  t->autograd = NULL;
  t->scope_depth = 0;
  t->scope_slot = 0;
  return t;
}

static ct_tensor *empty_impl(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device,
                             bool pinned) {
  int64_t numel = ct__shape_numel(shape, ndim);
  size_t es = ct_dtype_size(dtype);
  if (numel < 0 || (uint64_t)numel > SIZE_MAX / es / 2)
    return ct__fail(CT_ERR_OOM, "empty: %lld elements of %s do not fit in memory", (long long)numel,
                    ct_dtype_name(dtype));
  ct_tensor *t = tensor_alloc();
  if (!t) return NULL;
  t->storage = ct__storage_new(device, (size_t)numel * es, pinned);
  if (!t->storage) {
    tensor_free(t);
    return NULL;
  }
  t->dtype = dtype;
  t->ndim = ndim;
  t->offset = 0;
  t->numel = numel;
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    t->shape[d] = shape[d];
    t->strides[d] = st;
    st *= shape[d] > 1 ? shape[d] : 1;
  }
  return t;
}

ct_tensor *ct__empty(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device) {
  return empty_impl(shape, ndim, dtype, device, false);
}

ct_tensor *ct__empty_pinned(const int64_t *shape, int ndim, ct_dtype dtype) {
  return empty_impl(shape, ndim, dtype, ct_cpu(), true);
}

ct_tensor *ct__view_of(const ct_tensor *base, ct_dtype dtype, const int64_t *shape,
                       const int64_t *strides, int ndim, int64_t offset) {
  ct_tensor *t = tensor_alloc();
  if (!t) return NULL;
  t->storage = base->storage;
  ct__storage_retain(t->storage);
  t->dtype = dtype;
  t->ndim = ndim;
  t->offset = offset;
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++) {
    t->shape[d] = shape[d];
    t->strides[d] = strides[d];
    numel *= shape[d];
  }
  t->numel = numel;
  return t;
}

ct_tensor *ct__retain(const ct_tensor *t) {
  if (t) atomic_fetch_add_explicit(&((ct_tensor *)t)->refcount, 1, memory_order_relaxed);
  return (ct_tensor *)t;
}

void ct__release(ct_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1) return;
  if (t->autograd && ct__autograd_meta_free) ct__autograd_meta_free(t->autograd);
  ct__storage_release(t->storage);
  tensor_free(t);
}

ct_tensor *ct_retain(ct_tensor *t) { return ct__retain(t); }

/* ---- Properties ---------------------------------------------------------- */

ct_dtype ct_dtype_of(const ct_tensor *t) { return t ? t->dtype : CT_F32; }
ct_device ct_device_of(const ct_tensor *t) { return t ? t->storage->device : ct_cpu(); }
int ct_ndim(const ct_tensor *t) { return t ? t->ndim : -1; }
const int64_t *ct_shape(const ct_tensor *t) { return t ? t->shape : NULL; }
const int64_t *ct_strides(const ct_tensor *t) { return t ? t->strides : NULL; }
int64_t ct_offset(const ct_tensor *t) { return t ? t->offset : 0; }
int64_t ct_numel(const ct_tensor *t) { return t ? t->numel : 0; }
size_t ct_nbytes(const ct_tensor *t) { return t ? (size_t)t->numel * ct__elsize(t->dtype) : 0; }
bool ct_is_contiguous(const ct_tensor *t) { return t && ct__is_contiguous(t); }
uint32_t ct_version(const ct_tensor *t) { return t ? atomic_load(&t->storage->version) : 0; }
bool ct_same_storage(const ct_tensor *a, const ct_tensor *b) {
  return a && b && a->storage == b->storage;
}

int64_t ct_size(const ct_tensor *t, int d) {
  if (!t) return -1;
  if (!ct__wrap_dim(&d, t->ndim))
    return ct__fail(CT_ERR_ARG, "size: dim %d out of range for a %d-d tensor", d, t->ndim), -1;
  return t->shape[d];
}

int64_t ct_stride(const ct_tensor *t, int d) {
  if (!t) return -1;
  if (!ct__wrap_dim(&d, t->ndim))
    return ct__fail(CT_ERR_ARG, "stride: dim %d out of range for a %d-d tensor", d, t->ndim), -1;
  return t->strides[d];
}

void *ct_data_ptr(const ct_tensor *t) {
  if (!t) return NULL;
  if (!ct__is_cpu(t))
    return ct__fail(CT_ERR_DEVICE, "data_ptr: tensor is on %s; copy it to the CPU with ct_to first",
                    ct_device_name(ct__device(t)));
  return ct__data(t);
}
