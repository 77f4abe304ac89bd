/* Datasets over other datasets: a subset (samples by index), a concatenation
 * and the random split into subsets. They keep the fast batch path of what
 * they wrap (data_internal.h), so a loader over a subset of an image folder
 * still decodes on its workers, with the loader's epoch driving the random
 * transforms. */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"

/* One sample of a wrapped dataset: through its fill when it has one (which
 * takes the epoch explicitly), else through its get. */
static ct_status get_from(const ct_dataset *d, int64_t index, int64_t epoch, ct_sample *out) {
  if (!d->fast) return d->vt.get(d->self, index, out);
  ct__sample_meta m;
  d->fast->sample_meta(d->self, &m);
  int64_t in_shape[CT_MAX_DIMS + 1] = {1}, tg_shape[CT_MAX_DIMS + 1] = {1};
  memcpy(in_shape + 1, m.input_shape, sizeof(int64_t) * (size_t)m.input_ndim);
  memcpy(tg_shape + 1, m.target_shape, sizeof(int64_t) * (size_t)m.target_ndim);
  ct_tensor *x = ct__empty(in_shape, m.input_ndim + 1, m.input_dtype, ct_cpu());
  ct_tensor *y = x ? ct__empty(tg_shape, m.target_ndim + 1, m.target_dtype, ct_cpu()) : NULL;
  ct_status st = y ? d->fast->fill(d->self, &index, 1, epoch, x, y) : ct_last_error();
  if (st == CT_OK) { /* drop the leading 1 */
    out->input = ct__view_of(x, x->dtype, x->shape + 1, x->strides + 1, x->ndim - 1, 0);
    out->target = ct__view_of(y, y->dtype, y->shape + 1, y->strides + 1, y->ndim - 1, 0);
    if (!out->input || !out->target) st = ct_last_error();
  }
  ct__release(x);
  ct__release(y);
  return st;
}

/* Row i of the contiguous batch tensor b as an untracked (1, ...) view. */
static ct_tensor *batch_rows(const ct_tensor *b, int64_t i) {
  int64_t shape[CT_MAX_DIMS];
  memcpy(shape, b->shape, sizeof(int64_t) * (size_t)b->ndim);
  shape[0] = 1;
  return ct__view_of(b, b->dtype, shape, b->strides, b->ndim, b->offset + i * b->strides[0]);
}

/* ---- Subset ---------------------------------------------------------------------- */

typedef struct subset {
  ct_dataset *base;
  int64_t *idx, n;
  ct_dataset *owner; /* for the epoch of get */
} subset;

static int64_t subset_length(void *self) { return ((subset *)self)->n; }

static ct_status subset_get(void *self, int64_t index, ct_sample *out) {
  subset *s = self;
  return get_from(s->base, s->idx[index], atomic_load(&s->owner->epoch), out);
}

static void subset_meta(void *self, ct__sample_meta *m) {
  subset *s = self;
  s->base->fast->sample_meta(s->base->self, m);
}

static ct_status subset_fill(void *self, const int64_t *idx, int64_t count, int64_t epoch,
                             ct_tensor *inputs, ct_tensor *targets) {
  subset *s = self;
  int64_t *mapped = ct__malloc_array((size_t)(count ? count : 1), sizeof *mapped);
  if (!mapped) return ct__fail_status(CT_ERR_OOM, "subset: out of host memory");
  for (int64_t i = 0; i < count; i++) mapped[i] = s->idx[idx[i]];
  ct_status st = s->base->fast->fill(s->base->self, mapped, count, epoch, inputs, targets);
  ct__free(mapped);
  return st;
}

static void subset_destroy(void *self) {
  subset *s = self;
  ct__free(s->idx);
  ct__free(s);
}

static const ct_dataset_vtable subset_vt = {
    .length = subset_length, .get = subset_get, .destroy = subset_destroy};
static const ct__batch_ops subset_ops = {.sample_meta = subset_meta, .fill = subset_fill};

ct_dataset *ct_subset_new(ct_dataset *d, const int64_t *indices, int64_t n) {
  if (!d) return ct__fail(CT_ERR_ARG, "subset_new: dataset is NULL");
  if (n < 0 || (n > 0 && !indices))
    return ct__fail(CT_ERR_ARG, "subset_new: %lld indices%s", (long long)n,
                    n > 0 ? " but indices is NULL" : "");
  int64_t len = ct_dataset_length(d);
  for (int64_t i = 0; i < n; i++)
    if (indices[i] < 0 || indices[i] >= len)
      return ct__fail(CT_ERR_ARG, "subset_new: indices[%lld] = %lld is outside 0..%lld",
                      (long long)i, (long long)indices[i], (long long)len - 1);
  subset *s = ct__calloc(1, sizeof *s);
  int64_t *idx = ct__malloc_array((size_t)(n ? n : 1), sizeof *idx);
  if (!s || !idx) {
    ct__free(s);
    ct__free(idx);
    return ct__fail(CT_ERR_OOM, "subset_new: out of host memory");
  }
  if (n) memcpy(idx, indices, sizeof *idx * (size_t)n);
  *s = (subset){.base = d, .idx = idx, .n = n};
  ct_dataset *out = ct__dataset_new_fast(&subset_vt, d->fast ? &subset_ops : NULL, s);
  if (out) s->owner = out;
  return out;
}

/* ---- Concatenation ------------------------------------------------------------------- */

typedef struct concat {
  ct_dataset **parts;
  int64_t *ends; /* ends[p]: samples in parts 0..p */
  int64_t count;
  bool fast;
  ct_dataset *owner;
} concat;

static int64_t concat_length(void *self) {
  concat *c = self;
  return c->ends[c->count - 1];
}

/* The part holding sample index, and the index within it. */
static int64_t concat_locate(const concat *c, int64_t index, int64_t *local) {
  int64_t p = 0;
  while (index >= c->ends[p]) p++;
  *local = index - (p ? c->ends[p - 1] : 0);
  return p;
}

static ct_status concat_get(void *self, int64_t index, ct_sample *out) {
  concat *c = self;
  int64_t local, p = concat_locate(c, index, &local);
  return get_from(c->parts[p], local, atomic_load(&c->owner->epoch), out);
}

static void concat_meta(void *self, ct__sample_meta *m) {
  concat *c = self;
  c->parts[0]->fast->sample_meta(c->parts[0]->self, m);
}

static ct_status concat_fill(void *self, const int64_t *idx, int64_t count, int64_t epoch,
                             ct_tensor *inputs, ct_tensor *targets) {
  concat *c = self;
  ct_status st = CT_OK;
  for (int64_t i = 0; i < count && st == CT_OK; i++) {
    int64_t local, p = concat_locate(c, idx[i], &local);
    ct_tensor *x = batch_rows(inputs, i), *y = batch_rows(targets, i);
    st = x && y ? c->parts[p]->fast->fill(c->parts[p]->self, &local, 1, epoch, x, y)
                : ct_last_error();
    ct__release(x);
    ct__release(y);
  }
  return st;
}

static void concat_destroy(void *self) {
  concat *c = self;
  ct__free(c->parts);
  ct__free(c->ends);
  ct__free(c);
}

static const ct_dataset_vtable concat_vt = {
    .length = concat_length, .get = concat_get, .destroy = concat_destroy};
static const ct__batch_ops concat_ops = {.sample_meta = concat_meta, .fill = concat_fill};

static bool same_meta(const ct__sample_meta *a, const ct__sample_meta *b) {
  if (a->input_ndim != b->input_ndim || a->target_ndim != b->target_ndim ||
      a->input_dtype != b->input_dtype || a->target_dtype != b->target_dtype)
    return false;
  for (int d = 0; d < a->input_ndim; d++)
    if (a->input_shape[d] != b->input_shape[d]) return false;
  for (int d = 0; d < a->target_ndim; d++)
    if (a->target_shape[d] != b->target_shape[d]) return false;
  return true;
}

/* The sample meta of a part: its own (fast path) or that of its first sample. */
static ct_status part_meta(const ct_dataset *d, ct__sample_meta *m) {
  *m = (ct__sample_meta){0};
  if (d->fast) {
    d->fast->sample_meta(d->self, m);
    return CT_OK;
  }
  if (d->vt.length(d->self) == 0) return CT_OK;
  ct_sample s = {0};
  ct_status st = d->vt.get(d->self, 0, &s);
  if (st == CT_OK && s.input && s.target) {
    m->input_ndim = s.input->ndim;
    m->target_ndim = s.target->ndim;
    memcpy(m->input_shape, s.input->shape, sizeof(int64_t) * (size_t)s.input->ndim);
    memcpy(m->target_shape, s.target->shape, sizeof(int64_t) * (size_t)s.target->ndim);
    m->input_dtype = s.input->dtype;
    m->target_dtype = s.target->dtype;
  }
  ct_free(s.input);
  ct_free(s.target);
  return st;
}

ct_dataset *ct_concat_dataset_new(ct_dataset *const *parts, int64_t count) {
  if (!parts || count < 1)
    return ct__fail(CT_ERR_ARG, "concat_dataset_new: needs at least one part (count %lld)",
                    (long long)count);
  ct__sample_meta first;
  bool fast = true;
  for (int64_t p = 0; p < count; p++) {
    if (!parts[p])
      return ct__fail(CT_ERR_ARG, "concat_dataset_new: parts[%lld] is NULL", (long long)p);
    fast = fast && parts[p]->fast;
    ct__sample_meta m;
    if (part_meta(parts[p], &m) != CT_OK) return NULL;
    if (p == 0)
      first = m;
    else if (!same_meta(&first, &m)) {
      char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
      ct_shape_format(first.input_shape, first.input_ndim, a, sizeof a);
      ct_shape_format(m.input_shape, m.input_ndim, b, sizeof b);
      return ct__fail(
          first.input_dtype != m.input_dtype || first.target_dtype != m.target_dtype ? CT_ERR_DTYPE
                                                                                     : CT_ERR_SHAPE,
          "concat_dataset_new: parts[%lld] has samples %s %s (targets %s), parts[0] %s %s "
          "(targets %s)",
          (long long)p, ct_dtype_name(m.input_dtype), b, ct_dtype_name(m.target_dtype),
          ct_dtype_name(first.input_dtype), a, ct_dtype_name(first.target_dtype));
    }
  }
  concat *c = ct__calloc(1, sizeof *c);
  ct_dataset **copy = ct__malloc_array((size_t)count, sizeof *copy);
  int64_t *ends = ct__malloc_array((size_t)count, sizeof *ends);
  if (!c || !copy || !ends) {
    ct__free(c);
    ct__free(copy);
    ct__free(ends);
    return ct__fail(CT_ERR_OOM, "concat_dataset_new: out of host memory");
  }
  int64_t total = 0;
  for (int64_t p = 0; p < count; p++) {
    copy[p] = parts[p];
    total += ct_dataset_length(parts[p]);
    ends[p] = total;
  }
  *c = (concat){.parts = copy, .ends = ends, .count = count, .fast = fast};
  ct_dataset *out = ct__dataset_new_fast(&concat_vt, fast ? &concat_ops : NULL, c);
  if (out) c->owner = out;
  return out;
}

/* ---- Random split -------------------------------------------------------------------- */

ct_status ct_random_split(ct_dataset *d, const int64_t *lengths, int64_t count, uint64_t seed,
                          ct_dataset **out) {
  if (!d || !lengths || !out || count < 1)
    return ct__fail_status(CT_ERR_ARG,
                           "random_split: needs a dataset, lengths, out and count >= 1 "
                           "(count %lld)",
                           (long long)count);
  int64_t n = ct_dataset_length(d), sum = 0;
  for (int64_t i = 0; i < count; i++) {
    if (lengths[i] < 0)
      return ct__fail_status(CT_ERR_ARG, "random_split: lengths[%lld] = %lld is negative",
                             (long long)i, (long long)lengths[i]);
    sum += lengths[i];
  }
  if (sum != n)
    return ct__fail_status(CT_ERR_ARG,
                           "random_split: lengths sum to %lld, the dataset has %lld samples",
                           (long long)sum, (long long)n);
  int64_t *perm = ct__malloc_array((size_t)(n ? n : 1), sizeof *perm);
  ct_generator *g = ct_generator_new(seed);
  if (!perm || !g) {
    ct__free(perm);
    ct_generator_free(g);
    return ct__fail_status(CT_ERR_OOM, "random_split: out of host memory");
  }
  /* The loader's shuffle of epoch 0 (ct_dataloader_start_epoch). */
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  ct_generator_set_state(g, seed, 0);
  for (int64_t i = n - 1; i > 0; i--) {
    uint64_t u = ct_generator_next_u64(g);
    int64_t j = (int64_t)(((unsigned __int128)u * (uint64_t)(i + 1)) >> 64);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  ct_generator_free(g);
  ct_status st = CT_OK;
  int64_t start = 0, made = 0;
  for (; made < count; made++) {
    out[made] = ct_subset_new(d, perm + start, lengths[made]);
    if (!out[made]) {
      st = ct_last_error();
      break;
    }
    start += lengths[made];
  }
  ct__free(perm);
  if (st != CT_OK)
    for (int64_t i = 0; i < made; i++) {
      ct_dataset_free(out[i]);
      out[i] = NULL;
    }
  return st;
}
