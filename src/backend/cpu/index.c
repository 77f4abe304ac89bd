/* CPU indexing kernels: index_select, gather, scatter(_add), masked_select,
 * count_nonzero, triangle (tril/triu). Contracts: backend/backend.h.
 *
 * Index values are checked in one serial pass before any element moves, so an
 * out-of-range index reports the first bad value and writes nothing. Kernels
 * work on any strides; elements move by size (1, 2, 4 or 8 bytes), since
 * these ops never convert dtypes. */
#include <stdatomic.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "backend/cpu/elem_add.h"
#include "core/convert.h"

/* ---- Helpers ---------------------------------------------------------------- */

/* A stack tensor header with t's storage and the given geometry, for loops
 * over sub-views without allocating (only the geometry fields are set). */
static void geom(ct_tensor *dst, const ct_tensor *t, const int64_t *shape, const int64_t *strides,
                 int ndim, int64_t offset) {
  memset(dst, 0, sizeof *dst);
  dst->dtype = t->dtype;
  dst->storage = t->storage;
  dst->ndim = ndim;
  dst->offset = offset;
  dst->numel = 1;
  for (int d = 0; d < ndim; d++) {
    dst->shape[d] = shape[d];
    dst->strides[d] = strides[d];
    dst->numel *= shape[d];
  }
}

/* t with dim removed, at position i along it. */
static void select_geom(ct_tensor *dst, const ct_tensor *t, int dim, int64_t i) {
  int64_t sh[CT_MAX_DIMS], st[CT_MAX_DIMS];
  int k = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) sh[k] = t->shape[d], st[k++] = t->strides[d];
  geom(dst, t, sh, st, k, t->offset + i * t->strides[dim]);
}

/* t seen with shape `shape` (same ndim) and stride 0 along dim: the base of
 * each line along dim, for gather/scatter. */
static void line_base_geom(ct_tensor *dst, const ct_tensor *t, const int64_t *shape, int dim) {
  int64_t st[CT_MAX_DIMS];
  memcpy(st, t->strides, sizeof st);
  st[dim] = 0;
  geom(dst, t, shape, st, t->ndim, t->offset);
}

/* Same-dtype copy row: out (d[0]) = x (d[1]). */
static void copy_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  size_t es = (size_t)(uintptr_t)ctx;
  if (s[0] == (int64_t)es && s[1] == (int64_t)es) {
    memcpy(d[0], d[1], (size_t)n * es);
    return;
  }
  for (int64_t i = 0; i < n; i++) ct_move_elem(d[0] + i * s[0], d[1] + i * s[1], (int)es);
}

/* ---- Index range check ---------------------------------------------------- */

typedef struct range_ctx {
  int64_t size;
  bool bad;
  int64_t value;
} range_ctx;

static void range_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  range_ctx *c = vctx;
  if (c->bad) return;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = *(const int64_t *)(d[0] + i * s[0]);
    if (v < 0 || v >= c->size) {
      c->bad = true;
      c->value = v;
      return;
    }
  }
}

/* Every value of the i64 tensor index in [0, size), else CT_ERR_ARG naming the
 * first bad value (serial, in row-major order). */
static ct_status check_range(const char *op, const ct_tensor *index, int dim, int64_t size) {
  range_ctx c = {.size = size};
  ct_loop L;
  const ct_tensor *ts[1] = {index};
  ct__loop_init(&L, 1, ts);
  ct__loop_run(&L, range_row, &c, INT64_MAX);
  if (c.bad)
    return ct__fail_status(CT_ERR_ARG, "%s: index %lld is out of bounds for dim %d with size %lld",
                           op, (long long)c.value, dim, (long long)size);
  return CT_OK;
}

/* ---- index_select ------------------------------------------------------------ */

/* out (..., nidx, ...) along dim: slice j of out = slice index[j] of x.
 * Parallel over j when slices are small, inside each copy when they are large. */
typedef struct isel_ctx {
  ct_tensor *out;
  const ct_tensor *x, *index;
  int dim;
  int64_t grain; /* for the copy loop of one slice */
} isel_ctx;

static void isel_range(int64_t j0, int64_t j1, void *vctx) {
  const isel_ctx *c = vctx;
  const int64_t *idx = ct__data(c->index);
  int64_t is = c->index->strides[0];
  size_t es = ct__elsize(c->x->dtype);
  for (int64_t j = j0; j < j1; j++) {
    ct_tensor o, x;
    select_geom(&o, c->out, c->dim, j);
    select_geom(&x, c->x, c->dim, idx[j * is]);
    const ct_tensor *ts[2] = {&o, &x};
    ct_loop L;
    ct__loop_init(&L, 2, ts);
    ct__loop_run(&L, copy_row, (void *)(uintptr_t)es, c->grain);
  }
}

ct_status ct__cpu_index_select(ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index) {
  ct_status st = check_range("index_select", index, dim, x->shape[dim]);
  if (st != CT_OK || out->numel == 0) return st;
  int64_t nidx = index->numel, slice = out->numel / nidx;
  isel_ctx c = {out, x, index, dim, 0};
  if (slice >= CT_PARALLEL_GRAIN) {
    isel_range(0, nidx, &c); /* each slice copy is parallel */
  } else {
    c.grain = INT64_MAX;       /* slices serial, split the indices across threads */
    ct__parallel_for(nidx, (CT_PARALLEL_GRAIN + slice - 1) / slice, isel_range, &c);
  }
  return CT_OK;
}

/* ---- gather ----------------------------------------------------------------- */

/* Rows of (out, index, x line bases): out[i] = base[i][index[i] * dim stride]. */
static void gather_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  const int64_t *c = ctx; /* [element size, byte stride of x along dim] */
  size_t es = (size_t)c[0];
  for (int64_t i = 0; i < n; i++) {
    int64_t v = *(const int64_t *)(d[1] + i * s[1]);
    ct_move_elem(d[0] + i * s[0], d[2] + i * s[2] + v * c[1], (int)es);
  }
}

ct_status ct__cpu_gather(const char *op, ct_tensor *out, const ct_tensor *x, int dim, const ct_tensor *index) {
  ct_status st = check_range(op, index, dim, x->shape[dim]);
  if (st != CT_OK || out->numel == 0) return st;
  ct_tensor xb;
  line_base_geom(&xb, x, index->shape, dim);
  int64_t c[2] = {(int64_t)ct__elsize(x->dtype), x->strides[dim] * (int64_t)ct__elsize(x->dtype)};
  const ct_tensor *ts[3] = {out, index, &xb};
  ct__loop(3, ts, gather_row, c);
  return CT_OK;
}

/* ---- scatter / scatter_add --------------------------------------------------- */

/* Rows of (self line bases, index, src). Serial: repeated indices along dim
 * would race; in order, the last write wins for scatter (as torch's CPU loop). */
typedef struct scatter_ctx {
  ct_dtype dtype;
  int64_t dim_stride; /* bytes */
  bool add;
} scatter_ctx;

static void scatter_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  const scatter_ctx *c = vctx;
  size_t es = ct__elsize(c->dtype);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = *(const int64_t *)(d[1] + i * s[1]);
    char *dst = d[0] + i * s[0] + v * c->dim_stride;
    const char *src = d[2] + i * s[2];
    if (c->add)
      ct__cpu_add_elem(dst, src, c->dtype);
    else
      ct_move_elem(dst, src, (int)es);
  }
}

ct_status ct__cpu_scatter(ct_tensor *self, int dim, const ct_tensor *index, const ct_tensor *src,
                          bool add) {
  ct_status st = check_range(add ? "scatter_add" : "scatter", index, dim, self->shape[dim]);
  if (st != CT_OK || index->numel == 0) return st;
  ct_tensor sb;
  line_base_geom(&sb, self, index->shape, dim);
  scatter_ctx c = {self->dtype, self->strides[dim] * (int64_t)ct__elsize(self->dtype), add};
  const ct_tensor *ts[3] = {&sb, index, src};
  ct_loop L;
  ct__loop_init(&L, 3, ts);
  ct__loop_run(&L, scatter_row, &c, INT64_MAX);
  return CT_OK;
}

/* ---- masked_select and count_nonzero ----------------------------------------- */

typedef struct msel_ctx {
  char *out;
  int64_t out_stride; /* bytes */
  int64_t left;       /* capacity of out still free */
  size_t es;
} msel_ctx;

/* Rows of (x, mask), serial in row-major order: appends x where mask. */
static void msel_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  msel_ctx *c = vctx;
  for (int64_t i = 0; i < n && c->left > 0; i++) {
    if (!*(const bool *)(d[1] + i * s[1])) continue;
    ct_move_elem(c->out, d[0] + i * s[0], (int)c->es);
    c->out += c->out_stride;
    c->left--;
  }
}

ct_status ct__cpu_masked_select(ct_tensor *out, const ct_tensor *x, const ct_tensor *mask) {
  msel_ctx c = {ct__data(out), out->strides[0] * (int64_t)ct__elsize(out->dtype), out->numel,
                ct__elsize(x->dtype)};
  if (out->numel == 0) return CT_OK;
  const ct_tensor *ts[2] = {x, mask};
  ct_loop L;
  ct__loop_init(&L, 2, ts);
  ct__loop_run(&L, msel_row, &c, INT64_MAX);
  return CT_OK;
}

/* Rows of a bool tensor, parallel: each row adds its count atomically. */
static void count_row(char **d, const int64_t *s, int64_t n, void *ctx) {
  int64_t k = 0;
  if (s[0] == 1) {
    const bool *p = (const bool *)d[0];
    for (int64_t i = 0; i < n; i++) k += p[i];
  } else {
    for (int64_t i = 0; i < n; i++) k += *(const bool *)(d[0] + i * s[0]);
  }
  atomic_fetch_add_explicit((_Atomic int64_t *)ctx, k, memory_order_relaxed);
}

ct_status ct__cpu_count_nonzero(const ct_tensor *mask, int64_t *count) {
  _Atomic int64_t total = 0;
  const ct_tensor *ts[1] = {mask};
  ct__loop(1, ts, count_row, (void *)&total);
  *count = atomic_load(&total);
  return CT_OK;
}

/* ---- triangle (tril / triu) ---------------------------------------------------- */

/* Rows of the last two dims (n, m), split across threads: row i keeps columns
 * j with j - i <= k (lower) or j - i >= k (upper) and zeroes the rest. */
typedef struct tri_ctx {
  ct_tensor *out;
  const ct_tensor *x;
  int64_t k;
  bool upper, in_place;
} tri_ctx;

static void zero_cols(char *p, int64_t stride, int64_t n, size_t es) {
  if (stride == (int64_t)es) {
    memset(p, 0, (size_t)n * es);
    return;
  }
  for (int64_t j = 0; j < n; j++) memset(p + j * stride, 0, es);
}

static void tri_rows(int64_t r0, int64_t r1, void *vctx) {
  const tri_ctx *c = vctx;
  const ct_tensor *o = c->out, *x = c->x;
  int nd = o->ndim;
  int64_t n = o->shape[nd - 2], m = o->shape[nd - 1];
  size_t es = ct__elsize(o->dtype);
  int64_t ocs = o->strides[nd - 1] * (int64_t)es, xcs = x->strides[nd - 1] * (int64_t)es;
  for (int64_t r = r0; r < r1; r++) {
    int64_t i = r % n, rest = r / n;
    int64_t oo = i * o->strides[nd - 2], xo = i * x->strides[nd - 2];
    for (int d = nd - 3; d >= 0; d--) {
      int64_t id = rest % o->shape[d];
      rest /= o->shape[d];
      oo += id * o->strides[d];
      xo += id * x->strides[d];
    }
    char *orow = (char *)o->storage->data + (size_t)(o->offset + oo) * es;
    const char *xrow = (const char *)x->storage->data + (size_t)(x->offset + xo) * es;
    /* kept columns [lo, hi) */
    int64_t lo, hi;
    if (c->upper) {
      lo = i + c->k < 0 ? 0 : (i + c->k > m ? m : i + c->k);
      hi = m;
    } else {
      lo = 0;
      hi = i + c->k + 1 < 0 ? 0 : (i + c->k + 1 > m ? m : i + c->k + 1);
    }
    zero_cols(orow, ocs, lo, es);
    zero_cols(orow + hi * ocs, ocs, m - hi, es);
    if (c->in_place) continue;
    if (ocs == (int64_t)es && xcs == (int64_t)es) {
      memcpy(orow + lo * ocs, xrow + lo * xcs, (size_t)(hi - lo) * es);
    } else {
      for (int64_t j = lo; j < hi; j++) ct_move_elem(orow + j * ocs, xrow + j * xcs, (int)es);
    }
  }
}

ct_status ct__cpu_triangle(ct_tensor *out, const ct_tensor *x, int64_t k, bool upper) {
  if (out->numel == 0) return CT_OK;
  int nd = out->ndim;
  bool same = ct__data(out) == ct__data(x);
  for (int d = 0; d < nd && same; d++) same = out->strides[d] == x->strides[d];
  tri_ctx c = {out, x, k, upper, same};
  int64_t m = out->shape[nd - 1];
  int64_t rows = out->numel / m;
  ct__parallel_for(rows, (CT_PARALLEL_GRAIN + m - 1) / m, tri_rows, &c);
  return CT_OK;
}
