/* Shape arithmetic: numel with overflow checks, strides, broadcasting, text. */
#include <stdio.h>

#include "core/internal.h"

int64_t ct__shape_numel(const int64_t *shape, int ndim) {
  /* The product of the nonzero sizes must fit too, even when a size is 0:
   * strides are products of sizes, and a (2^62, 2^62, 0) tensor's would
   * overflow (torch refuses it as well). */
  int64_t n = 1;
  bool zero = false;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return -1;
    if (shape[d] == 0)
      zero = true;
    else if (__builtin_mul_overflow(n, shape[d], &n))
      return -1;
  }
  return zero ? 0 : n;
}

void ct__contiguous_strides(const int64_t *shape, int ndim, int64_t *strides) {
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    strides[d] = st;
    st *= shape[d] > 1 ? shape[d] : 1;
  }
}

bool ct__is_contiguous(const ct_tensor *t) {
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] == 1) continue; /* any stride is fine for a size-1 dim */
    if (t->shape[d] == 0) return true;
    if (t->strides[d] != expected) return false;
    expected *= t->shape[d];
  }
  return true;
}

bool ct__wrap_dim(int *dim, int ndim) {
  int n = ndim > 0 ? ndim : 1; /* a scalar accepts dim 0 and -1, as torch */
  int d = *dim < 0 ? *dim + n : *dim;
  if (d < 0 || d >= n) return false;
  *dim = d;
  return true;
}

bool ct__check_shape(const char *op, const int64_t *shape, int ndim) {
  if (ndim < 0 || ndim > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "%s: %d dims requested; ctensor supports 0 to %d", op, ndim,
                    CT_MAX_DIMS),
           false;
  if (ndim > 0 && !shape) return ct__fail(CT_ERR_ARG, "%s: shape is NULL", op), false;
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      return ct__fail(CT_ERR_SHAPE, "%s: negative size %lld in dim %d", op, (long long)shape[d], d),
             false;
  if (ct__shape_numel(shape, ndim) < 0) {
    char buf[CT_SHAPE_STR_MAX];
    return ct__fail(CT_ERR_SHAPE, "%s: shape %s: the product of its sizes overflows 64 bits", op,
                    ct_shape_format(shape, ndim, buf, sizeof buf)),
           false;
  }
  return true;
}

bool ct__broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                          int *out_ndim) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa == sb || sb == 1) out[i] = sa;
    else if (sa == 1) out[i] = sb;
    else return false;
  }
  *out_ndim = n;
  return true;
}

char *ct_shape_format(const int64_t *shape, int ndim, char *buf, size_t size) {
  size_t used = 0;
  if (size == 0) return buf;
  buf[0] = 0;
  used += (size_t)snprintf(buf + used, size - used, "(");
  for (int d = 0; d < ndim && used < size; d++)
    used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (used < size) snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
  return buf;
}

char *ct__shape_str(const ct_tensor *t, char *buf, size_t size) {
  return ct_shape_format(t->shape, t->ndim, buf, size);
}

/* An empty tensor has no elements to share memory (torch writes into an
 * empty expanded view too). */
bool ct__has_internal_overlap(const ct_tensor *t) {
  if (t->numel == 0) return false;
  for (int d = 0; d < t->ndim; d++)
    if (t->strides[d] == 0 && t->shape[d] > 1) return true;
  return false;
}

bool ct__check_same_device(const char *op, const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b) return true;
  ct_device da = ct__device(a), db = ct__device(b);
  if (ct_device_equal(da, db)) return true;
  ct__fail(CT_ERR_DEVICE, "%s: expected all tensors on the same device, got %s and %s", op,
           ct_device_name(da), ct_device_name(db));
  return false;
}
