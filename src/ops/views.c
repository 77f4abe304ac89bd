/* Views: new shapes and strides on the same storage, never a copy (except
 * ct_reshape, which copies when no view exists). */
#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

#define NULL_IN(t)         \
  do {                     \
    if (!(t)) return NULL; \
  } while (0)

/* A tracked view of t, recorded for autograd as `kind` (see ct__ag_view). */
static ct_tensor *view_as(int kind, const int *perm, const ct_tensor *t, const int64_t *shape,
                          const int64_t *strides, int ndim, int64_t offset) {
  ct_tensor *v = ct__view_of(t, t->dtype, shape, strides, ndim, offset);
  return ct__track(ct__ag_view(v, t, kind, perm));
}
#define make_view(t, shape, strides, ndim, offset) \
  view_as(CT_VIEW_RESHAPE, NULL, t, shape, strides, ndim, offset)

/* A strided view's strides and offset from its input's (the arithmetic of
 * slice, select, diagonal; args: the op's parameters). */
typedef void (*geo_fn)(const int64_t *st_in, int64_t off_in, const void *args, int64_t *st,
                       int64_t *off);

/* The strided view f gives of t, of the given shape. Over an expanded input
 * (internal overlap) that requires grad, autograd gets the view's logical
 * geometry: f run on a contiguous layout of t's shape. */
static ct_tensor *strided_view(const ct_tensor *t, const int64_t *shape, int ndim, geo_fn f,
                               const void *args) {
  int64_t st[CT_MAX_DIMS], off;
  f(t->strides, t->offset, args, st, &off);
  ct_tensor *v = ct__view_of(t, t->dtype, shape, st, ndim, off);
  if (!v || !ct__ag_needed(&t, 1) || !ct__has_internal_overlap(t))
    return ct__track(ct__ag_view(v, t, CT_VIEW_STRIDED, NULL));
  int64_t cst[CT_MAX_DIMS];
  ct__contiguous_strides(t->shape, t->ndim, cst);
  f(cst, 0, args, st, &off);
  return ct__track(ct__ag_view_logical(v, t, st, off));
}

/* Resolves a -1 in a requested shape against numel. */
static bool infer_shape(const char *op, const ct_tensor *t, const int64_t *shape, int ndim,
                        int64_t *out) {
  if (ndim < 0 || ndim > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "%s: %d dims requested; ctensor supports 0 to %d", op, ndim,
                    CT_MAX_DIMS),
           false;
  if (ndim > 0 && !shape) return ct__fail(CT_ERR_ARG, "%s: shape is NULL", op), false;
  int infer = -1;
  int64_t known = 1;
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == -1) {
      if (infer >= 0) return ct__fail(CT_ERR_SHAPE, "%s: only one dim can be -1", op), false;
      infer = d;
      out[d] = 1;
    } else if (shape[d] < 0) {
      return ct__fail(CT_ERR_SHAPE, "%s: invalid size %lld in dim %d", op, (long long)shape[d], d),
             false;
    } else {
      out[d] = shape[d];
    }
  }
  /* the product of the sizes (and of the nonzero ones) must fit in 64 bits */
  known = ct__shape_numel(out, ndim);
  if (known < 0)
    return ct__fail(CT_ERR_SHAPE, "%s: shape %s: the product of its sizes overflows 64 bits", op,
                    ct_shape_format(shape, ndim, b, sizeof b)),
           false;
  if (infer >= 0) {
    if (known == 0 || t->numel % known != 0)
      return ct__fail(CT_ERR_SHAPE, "%s: shape %s is invalid for input of size %lld", op,
                      ct_shape_format(shape, ndim, b, sizeof b), (long long)t->numel),
             false;
    out[infer] = t->numel / known;
  } else if (known != t->numel) {
    return ct__fail(CT_ERR_SHAPE, "%s: shape %s is invalid for input of shape %s (%lld elements)",
                    op, ct_shape_format(shape, ndim, b, sizeof b), ct__shape_str(t, a, sizeof a),
                    (long long)t->numel),
           false;
  }
  return true;
}

/* Strides for viewing t with shape `ns`, or false if its strides don't allow
 * it (the algorithm of ATen's computeStride: chunks of contiguous dims). */
static bool view_strides(const ct_tensor *t, const int64_t *ns, int nn, int64_t *out) {
  if (t->numel == 0 || t->ndim == 0) {
    ct__contiguous_strides(ns, nn, out);
    return true;
  }
  int view_d = nn - 1;
  int64_t chunk_base_stride = t->strides[t->ndim - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    tensor_numel *= t->shape[d];
    if (d == 0 || (t->shape[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || ns[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= ns[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = t->strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

ct_tensor *ct_view(const ct_tensor *t, const int64_t *shape, int ndim) {
  NULL_IN(t);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  if (!infer_shape("view", t, shape, ndim, ns)) return NULL;
  if (!view_strides(t, ns, ndim, st)) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    return ct__fail(CT_ERR_SHAPE,
                    "view: a tensor of shape %s with these strides can't be viewed as %s; use "
                    "ct_reshape (which copies) or ct_contiguous first",
                    ct__shape_str(t, a, sizeof a), ct_shape_format(ns, ndim, b, sizeof b));
  }
  return make_view(t, ns, st, ndim, t->offset);
}

ct_tensor *ct_reshape(const ct_tensor *t, const int64_t *shape, int ndim) {
  NULL_IN(t);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  if (!infer_shape("reshape", t, shape, ndim, ns)) return NULL;
  if (view_strides(t, ns, ndim, st)) return make_view(t, ns, st, ndim, t->offset);
  ct_tensor *c = ct__clone(t);
  if (!c) return NULL;
  ct__contiguous_strides(ns, ndim, st);
  ct_tensor *r = ct__view_of(c, c->dtype, ns, st, ndim, 0);
  ct__release(c);
  return ct__track(ct__ag_view(r, t, CT_VIEW_RESHAPE, NULL));
}

ct_tensor *ct_permute(const ct_tensor *t, const int *dims, int ndim) {
  NULL_IN(t);
  if (ndim > 0 && !dims) return ct__fail(CT_ERR_ARG, "permute: dims is NULL");
  if (ndim != t->ndim)
    return ct__fail(CT_ERR_ARG, "permute: %d dims given for a %d-d tensor", ndim, t->ndim);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int perm[CT_MAX_DIMS];
  bool seen[CT_MAX_DIMS] = {0};
  for (int i = 0; i < ndim; i++) {
    int d = dims[i];
    if (!ct__wrap_dim(&d, t->ndim))
      return ct__fail(CT_ERR_ARG, "permute: dim %d out of range for a %d-d tensor", dims[i],
                      t->ndim);
    if (seen[d]) return ct__fail(CT_ERR_ARG, "permute: dim %d repeated", d);
    seen[d] = true;
    perm[i] = d;
    ns[i] = t->shape[d];
    st[i] = t->strides[d];
  }
  return view_as(CT_VIEW_PERMUTE, perm, t, ns, st, ndim, t->offset);
}

ct_tensor *ct_transpose(const ct_tensor *t, int dim0, int dim1) {
  NULL_IN(t);
  int a = dim0, b = dim1;
  if (!ct__wrap_dim(&a, t->ndim) || !ct__wrap_dim(&b, t->ndim))
    return ct__fail(CT_ERR_ARG, "transpose: dims (%d, %d) out of range for a %d-d tensor", dim0,
                    dim1, t->ndim);
  if (t->ndim == 0) return make_view(t, t->shape, t->strides, 0, t->offset);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  memcpy(ns, t->shape, sizeof ns);
  memcpy(st, t->strides, sizeof st);
  ns[a] = t->shape[b], ns[b] = t->shape[a];
  st[a] = t->strides[b], st[b] = t->strides[a];
  int perm[CT_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) perm[d] = d;
  perm[a] = b, perm[b] = a;
  return view_as(CT_VIEW_PERMUTE, perm, t, ns, st, t->ndim, t->offset);
}

ct_tensor *ct_t(const ct_tensor *t) {
  NULL_IN(t);
  if (t->ndim > 2)
    return ct__fail(CT_ERR_SHAPE, "t: expects a tensor with <= 2 dims, got %d; use ct_transpose",
                    t->ndim);
  if (t->ndim < 2) return make_view(t, t->shape, t->strides, t->ndim, t->offset);
  return ct_transpose(t, 0, 1);
}

typedef struct slice_args {
  int ndim, d;
  int64_t start, step, len;
} slice_args;

static void slice_geo(const int64_t *st_in, int64_t off_in, const void *args, int64_t *st,
                      int64_t *off) {
  const slice_args *a = args;
  memcpy(st, st_in, sizeof(int64_t) * (size_t)a->ndim);
  /* with 2 or more elements stride * step is within the storage; with fewer it
   * is never used and may overflow, so the stride is then kept */
  if (a->len > 1) st[a->d] = st_in[a->d] * a->step;
  *off = off_in + a->start * st_in[a->d];
}

ct_tensor *ct_slice(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step) {
  NULL_IN(t);
  int d = dim;
  if (t->ndim == 0) return ct__fail(CT_ERR_ARG, "slice: can't slice a 0-d tensor");
  if (!ct__wrap_dim(&d, t->ndim))
    return ct__fail(CT_ERR_ARG, "slice: dim %d out of range for a %d-d tensor", dim, t->ndim);
  if (step <= 0)
    return ct__fail(CT_ERR_ARG, "slice: step must be positive, got %lld", (long long)step);
  int64_t n = t->shape[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (end > n) end = n;
  if (end < start) end = start;
  int64_t ns[CT_MAX_DIMS];
  memcpy(ns, t->shape, sizeof ns);
  ns[d] = end > start ? (end - start - 1) / step + 1 : 0; /* no overflow for a huge step */
  slice_args a = {t->ndim, d, start, step, ns[d]};
  return strided_view(t, ns, t->ndim, slice_geo, &a);
}

ct_tensor *ct_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length) {
  NULL_IN(t);
  int d = dim;
  if (t->ndim == 0 || !ct__wrap_dim(&d, t->ndim))
    return ct__fail(CT_ERR_ARG, "narrow: dim %d out of range for a %d-d tensor", dim, t->ndim);
  if (start < 0) start += t->shape[d];
  if (start < 0 || length < 0 || start > t->shape[d] || length > t->shape[d] - start)
    return ct__fail(CT_ERR_ARG, "narrow: start %lld + length %lld exceeds size %lld of dim %d",
                    (long long)start, (long long)length, (long long)t->shape[d], d);
  return ct_slice(t, d, start, start + length, 1);
}

typedef struct select_args {
  int ndim, d;
  int64_t index;
} select_args;

static void select_geo(const int64_t *st_in, int64_t off_in, const void *args, int64_t *st,
                       int64_t *off) {
  const select_args *a = args;
  for (int i = 0, k = 0; i < a->ndim; i++)
    if (i != a->d) st[k++] = st_in[i];
  *off = off_in + a->index * st_in[a->d];
}

ct_tensor *ct_select(const ct_tensor *t, int dim, int64_t index) {
  NULL_IN(t);
  int d = dim;
  if (t->ndim == 0 || !ct__wrap_dim(&d, t->ndim))
    return ct__fail(CT_ERR_ARG, "select: dim %d out of range for a %d-d tensor", dim, t->ndim);
  int64_t n = t->shape[d];
  if (index < -n || index >= n)
    return ct__fail(CT_ERR_ARG, "select: index %lld out of range for dim %d of size %lld",
                    (long long)index, d, (long long)n);
  if (index < 0) index += n;
  int64_t ns[CT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->ndim; i++)
    if (i != d) ns[k++] = t->shape[i];
  select_args a = {t->ndim, d, index};
  return strided_view(t, ns, t->ndim - 1, select_geo, &a);
}

ct_tensor *ct_expand(const ct_tensor *t, const int64_t *shape, int ndim) {
  NULL_IN(t);
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  if (ndim < t->ndim || ndim > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "expand: can't expand a %d-d tensor to %d dims", t->ndim, ndim);
  if (ndim > 0 && !shape) return ct__fail(CT_ERR_ARG, "expand: shape is NULL");
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  for (int d = 0; d < ndim; d++) {
    int td = t->ndim - ndim + d;
    int64_t want = shape[d];
    if (td < 0) {
      if (want < 0)
        return ct__fail(CT_ERR_SHAPE, "expand: -1 not allowed for the new leading dim %d", d);
      ns[d] = want, st[d] = 0;
    } else if (want == -1 || want == t->shape[td]) {
      ns[d] = t->shape[td], st[d] = t->strides[td];
    } else if (t->shape[td] == 1 && want >= 0) {
      ns[d] = want, st[d] = 0;
    } else {
      return ct__fail(CT_ERR_SHAPE,
                      "expand: shape %s can't be expanded to %s (dim %d: %lld vs %lld)",
                      ct__shape_str(t, a, sizeof a), ct_shape_format(shape, ndim, b, sizeof b), d,
                      (long long)t->shape[td], (long long)want);
    }
  }
  if (ct__shape_numel(ns, ndim) < 0)
    return ct__fail(CT_ERR_SHAPE, "expand: shape %s: the product of its sizes overflows 64 bits",
                    ct_shape_format(ns, ndim, b, sizeof b));
  return view_as(CT_VIEW_EXPAND, NULL, t, ns, st, ndim, t->offset);
}

ct_tensor *ct_expand_as(const ct_tensor *t, const ct_tensor *other) {
  NULL_IN(t);
  NULL_IN(other);
  return ct_expand(t, other->shape, other->ndim);
}

ct_tensor *ct_squeeze(const ct_tensor *t) {
  NULL_IN(t);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != 1) ns[k] = t->shape[d], st[k++] = t->strides[d];
  return make_view(t, ns, st, k, t->offset);
}

ct_tensor *ct_squeeze_dim(const ct_tensor *t, int dim) {
  NULL_IN(t);
  int d = dim;
  if (!ct__wrap_dim(&d, t->ndim))
    return ct__fail(CT_ERR_ARG, "squeeze: dim %d out of range for a %d-d tensor", dim, t->ndim);
  if (t->ndim == 0 || t->shape[d] != 1)
    return make_view(t, t->shape, t->strides, t->ndim, t->offset);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < t->ndim; i++)
    if (i != d) ns[k] = t->shape[i], st[k++] = t->strides[i];
  return make_view(t, ns, st, k, t->offset);
}

ct_tensor *ct_unsqueeze(const ct_tensor *t, int dim) {
  NULL_IN(t);
  int d = dim < 0 ? dim + t->ndim + 1 : dim;
  if (d < 0 || d > t->ndim)
    return ct__fail(CT_ERR_ARG, "unsqueeze: dim %d out of range for a %d-d tensor", dim, t->ndim);
  if (t->ndim == CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "unsqueeze: the tensor already has %d dims", CT_MAX_DIMS);
  int64_t ns[CT_MAX_DIMS], st[CT_MAX_DIMS];
  for (int i = 0, k = 0; i <= t->ndim; i++) {
    if (i == d) {
      ns[i] = 1;
      st[i] = d < t->ndim ? t->strides[d] * t->shape[d] : 1;
    } else {
      ns[i] = t->shape[k], st[i] = t->strides[k];
      k++;
    }
  }
  return make_view(t, ns, st, t->ndim + 1, t->offset);
}

ct_tensor *ct_flatten(const ct_tensor *t, int start_dim, int end_dim) {
  NULL_IN(t);
  int s = start_dim, e = end_dim;
  if (!ct__wrap_dim(&s, t->ndim) || !ct__wrap_dim(&e, t->ndim) || s > e)
    return ct__fail(CT_ERR_ARG, "flatten: dims %d..%d invalid for a %d-d tensor", start_dim,
                    end_dim, t->ndim);
  if (t->ndim == 0) return ct_reshape(t, (int64_t[]){1}, 1); /* dims -1 or 0, as torch */
  int64_t ns[CT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < s; d++) ns[k++] = t->shape[d];
  int64_t m = 1;
  for (int d = s; d <= e; d++) m *= t->shape[d];
  ns[k++] = m;
  for (int d = e + 1; d < t->ndim; d++) ns[k++] = t->shape[d];
  return ct_reshape(t, ns, k);
}

typedef struct diagonal_args {
  int ndim, a, b;
  int64_t offset, len;
} diagonal_args;

static void diagonal_geo(const int64_t *st_in, int64_t off_in, const void *args, int64_t *st,
                         int64_t *off) {
  const diagonal_args *g = args;
  /* the offset moves the start only when the diagonal is not empty, so the
   * products stay within the storage (no overflow for a huge offset) */
  *off = off_in;
  if (g->len > 0) *off += g->offset >= 0 ? g->offset * st_in[g->b] : -g->offset * st_in[g->a];
  int k = 0;
  for (int d = 0; d < g->ndim; d++)
    if (d != g->a && d != g->b) st[k++] = st_in[d];
  st[k] = st_in[g->a] + st_in[g->b];
}

ct_tensor *ct_diagonal(const ct_tensor *t, int64_t offset, int dim1, int dim2) {
  NULL_IN(t);
  int a = dim1, b = dim2;
  if (t->ndim < 2 || !ct__wrap_dim(&a, t->ndim) || !ct__wrap_dim(&b, t->ndim) || a == b)
    return ct__fail(CT_ERR_ARG, "diagonal: dims (%d, %d) invalid for a %d-d tensor", dim1, dim2,
                    t->ndim);
  int64_t len = 0;
  if (offset >= 0 && offset < t->shape[b])
    len = t->shape[b] - offset < t->shape[a] ? t->shape[b] - offset : t->shape[a];
  else if (offset < 0 && offset > -t->shape[a])
    len = t->shape[a] + offset < t->shape[b] ? t->shape[a] + offset : t->shape[b];
  int64_t ns[CT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != a && d != b) ns[k++] = t->shape[d];
  ns[k++] = len;
  diagonal_args da = {t->ndim, a, b, offset, len};
  return strided_view(t, ns, k, diagonal_geo, &da);
}

ct_tensor *ct_alias(const ct_tensor *t) {
  NULL_IN(t);
  return make_view(t, t->shape, t->strides, t->ndim, t->offset);
}
