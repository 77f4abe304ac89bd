/* Copies, casts and transfers between devices: the only functions that
 * cross devices. */
#include <stdlib.h>

#include "autograd/autograd_internal.h"
#include "ops/elementwise.h"
#include "ops/ops_internal.h"

ct_tensor *ct_contiguous(const ct_tensor *t) {
  if (!t) return NULL;
  ct_tensor *r = ct__contiguous(t);
  if (r == t) {
    ct__release(r);
    return ct__track(ct__ag_view(ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset), t,
                                 CT_VIEW_RESHAPE, NULL));
  }
  return ct__track(ct__ag_identity(r, t, "CloneBackward"));
}

ct_tensor *ct_clone(const ct_tensor *t) {
  if (!t) return NULL;
  return ct__track(ct__ag_identity(ct__clone(t), t, "CloneBackward"));
}

ct_tensor *ct_cast(const ct_tensor *t, ct_dtype dtype) {
  if (!t) return NULL;
  if ((unsigned)dtype >= CT_DTYPE_COUNT) return ct__fail(CT_ERR_DTYPE, "cast: invalid dtype %d", (int)dtype);
  ct_tensor *r = ct__cast(t, dtype);
  if (r == t) {
    ct__release(r);
    return ct__track(ct__ag_view(ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset), t,
                                 CT_VIEW_RESHAPE, NULL));
  }
  return ct__track(ct__ag_identity(r, t, "ToCopyBackward"));
}

/* Copies contiguous `src` (any device) into contiguous `dst` (another device). */
static ct_status cross_copy(ct_tensor *dst, const ct_tensor *src, bool non_blocking) {
  size_t nbytes = ct_nbytes(src);
  if (nbytes == 0) return CT_OK;
  if (ct__is_cpu(src))
    return ct__backend_of(dst)->copy_from_host(dst, ct__data(src), nbytes,
                                               non_blocking && (src->storage->flags & CT_STORAGE_PINNED));
  if (ct__is_cpu(dst))
    return ct__backend_of(src)->copy_to_host(ct__data(dst), src, nbytes,
                                             non_blocking && (dst->storage->flags & CT_STORAGE_PINNED));
  /* GPU to GPU on different devices: stage through host memory. */
  void *stage = ct__malloc(nbytes);
  if (!stage) return ct__fail_status(CT_ERR_OOM, "to: out of host memory staging %zu bytes", nbytes);
  ct_status st = ct__backend_of(src)->copy_to_host(stage, src, nbytes, false);
  if (st == CT_OK) st = ct__backend_of(dst)->copy_from_host(dst, stage, nbytes, false);
  free(stage);
  return st;
}

/* Internal ct_to: an unregistered result. */
static ct_tensor *to_device(const ct_tensor *t, ct_device device, bool non_blocking, bool force_copy) {
  ct_device from = ct__device(t);
  if (ct_device_equal(from, device)) return force_copy ? ct__clone(t) : ct__retain(t);
  if (!ct__check_device("to", device)) return NULL;
  ct_tensor *src = ct__contiguous(t);
  if (!src) return NULL;
  ct_tensor *dst = ct__empty(t->shape, t->ndim, t->dtype, device);
  if (dst && cross_copy(dst, src, non_blocking) != CT_OK) {
    ct__release(dst);
    dst = NULL;
  }
  ct__release(src);
  return dst;
}


ct_tensor *ct_to(const ct_tensor *t, ct_device device, const ct_to_opts *opts) {
  if (!t) return NULL;
  ct_to_opts o = opts ? *opts : (ct_to_opts){0};
  ct_tensor *r = to_device(t, device, o.non_blocking, o.copy);
  if (r == t) { /* already there: an alias, recorded as a view */
    ct_tensor *alias = ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset);
    ct__release(r);
    return ct__track(ct__ag_view(alias, t, CT_VIEW_RESHAPE, NULL));
  }
  return ct__track(ct__autograd_record_to(r, t));
}

static ct_tensor *copy_into(ct_tensor *dst, const ct_tensor *src) {
  ct_status st;
  if (ct_device_equal(ct__device(dst), ct__device(src))) {
    /* A source that partially overlaps the destination (x[1:] from x[:-1])
     * is read whole first: a GPU copy, unlike the CPU loop, gives no order. */
    bool overlap = ct__ew_overlaps(dst, src);
    ct_tensor *whole = overlap ? ct__clone(src) : NULL;
    st = overlap && !whole ? ct_last_error() : ct__copy_into(dst, overlap ? whole : src);
    ct__release(whole);
  } else {
    /* move src across in its own dtype, then convert/broadcast on dst's device */
    ct_tensor *moved = to_device(src, ct__device(dst), false, false);
    st = moved ? ct__copy_into(dst, moved) : ct_last_error();
    ct__release(moved);
  }
  if (st != CT_OK) return NULL;
  ct__bump_version(dst);
  return dst;
}

/* Under autograd dst's old values get a zero gradient and src the gradient
 * of dst (moved back to src's device): CopyBackwards. */
ct_tensor *ct_copy_(ct_tensor *dst, const ct_tensor *src) {
  if (!dst || !src) return NULL;
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  int64_t bs[CT_MAX_DIMS];
  int bn;
  if (!ct__broadcast_shapes(dst->shape, dst->ndim, src->shape, src->ndim, bs, &bn) ||
      bn != dst->ndim || memcmp(bs, dst->shape, sizeof(int64_t) * (size_t)bn) != 0)
    return ct__fail(CT_ERR_SHAPE, "copy_: source of shape %s can't be broadcast to destination %s",
                    ct__shape_str(src, a, sizeof a), ct__shape_str(dst, b, sizeof b));
  if (ct__has_internal_overlap(dst))
    return ct__fail(CT_ERR_ARG, "copy_: the destination has elements that share memory");
  ct_inplace ip;
  if (!ct__ag_inplace_begin(&ip, "copy_", dst, &src, 1)) return NULL;
  if (ip.record && !ct__ag_copy(dst, dst, src)) return ct__ag_inplace_end(&ip, NULL);
  return ct__ag_inplace_end(&ip, copy_into(dst, src));
}

ct_tensor *ct_pin_memory(const ct_tensor *t) {
  if (!t) return NULL;
  if (!ct__is_cpu(t))
    return ct__fail(CT_ERR_DEVICE, "pin_memory: only CPU tensors can be pinned, this one is on %s",
                    ct_device_name(ct__device(t)));
  if (!ct_cuda_is_available())
    return ct__fail(
        CT_ERR_UNAVAILABLE, "pin_memory: pinned memory needs a usable CUDA GPU, and %s",
        ct__backend(CT_DEVICE_CUDA) ? "none is visible" : ct__backend_error(CT_DEVICE_CUDA));
  ct_tensor *r = ct__empty_pinned(t->shape, t->ndim, t->dtype);
  if (r && ct__backend_of(r)->copy(r, t) != CT_OK) {
    ct__release(r);
    r = NULL;
  }
  return ct__track(r);
}

bool ct_is_pinned(const ct_tensor *t) { return t && (t->storage->flags & CT_STORAGE_PINNED); }

ct_status ct_copy_to_host(const ct_tensor *t, void *dst, size_t nbytes) {
  if (!t) return ct_last_error() ? ct_last_error() : ct__fail_status(CT_ERR_ARG, "copy_to_host: tensor is NULL");
  size_t need = ct_nbytes(t);
  if (!dst && need) return ct__fail_status(CT_ERR_ARG, "copy_to_host: destination is NULL");
  if (nbytes < need)
    return ct__fail_status(CT_ERR_ARG, "copy_to_host: buffer of %zu bytes is smaller than the %zu bytes of the tensor",
                           nbytes, need);
  if (need == 0) return CT_OK;
  ct_tensor *c = ct__contiguous(t);
  if (!c) return ct_last_error();
  ct_status st = ct__backend_of(c)->copy_to_host(dst, c, need, false);
  ct__release(c);
  return st;
}

ct_status ct_item(const ct_tensor *t, double *out) {
  if (!t) return ct_last_error() ? ct_last_error() : ct__fail_status(CT_ERR_ARG, "item: tensor is NULL");
  if (!out) return ct__fail_status(CT_ERR_ARG, "item: out is NULL");
  if (t->numel != 1) {
    char a[CT_SHAPE_STR_MAX];
    return ct__fail_status(CT_ERR_SHAPE, "item: a tensor with %lld elements (shape %s) can't be converted to a number",
                           (long long)t->numel, ct__shape_str(t, a, sizeof a));
  }
  unsigned char buf[8];
  if (ct__is_cpu(t)) {
    memcpy(buf, ct__data(t), ct__elsize(t->dtype));
  } else {
    ct_status st = ct__backend_of(t)->copy_to_host(buf, t, ct__elsize(t->dtype), false);
    if (st != CT_OK) return st;
  }
  *out = ct__load_as_double(buf, t->dtype);
  return CT_OK;
}
