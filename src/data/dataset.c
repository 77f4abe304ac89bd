/* Datasets: the generic object over a user vtable, the in-memory tensor
 * dataset, and the image dataset behind the MNIST and CIFAR-10 readers.
 * Built-ins also offer the loader a batch fill that writes rows straight
 * into the batch tensors (data_internal.h). */
#include <stdlib.h>

#include "data/data_internal.h"

/* ---- Generic ----------------------------------------------------------------- */

ct_dataset *ct__dataset_new_fast(const ct_dataset_vtable *vt, const ct__batch_ops *fast,
                                 void *self) {
  ct_dataset *d = ct__malloc(sizeof *d);
  if (!d) {
    if (vt->destroy) vt->destroy(self);
    return ct__fail(CT_ERR_OOM, "dataset_new: out of host memory");
  }
  d->vt = *vt;
  d->self = self;
  d->fast = fast;
  atomic_init(&d->epoch, 0);
  return d;
}

ct_dataset *ct_dataset_new(const ct_dataset_vtable *vtable, void *self) {
  if (!vtable || !vtable->length || !vtable->get)
    return ct__fail(CT_ERR_ARG, "dataset_new: the vtable needs length and get");
  return ct__dataset_new_fast(vtable, NULL, self);
}

void ct_dataset_free(ct_dataset *d) {
  if (!d) return;
  if (d->vt.destroy) d->vt.destroy(d->self);
  free(d);
}

int64_t ct_dataset_length(const ct_dataset *d) {
  if (!d) return -1;
  return d->vt.length(d->self);
}

ct_status ct_dataset_get(const ct_dataset *d, int64_t index, ct_sample *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "dataset_get: out is NULL");
  *out = (ct_sample){0};
  if (!d) return ct__fail_status(CT_ERR_ARG, "dataset_get: dataset is NULL");
  int64_t n = d->vt.length(d->self);
  if (index < 0 || index >= n)
    return ct__fail_status(CT_ERR_ARG, "dataset_get: index %lld out of range for a dataset of %lld",
                           (long long)index, (long long)n);
  ct_status st = d->vt.get(d->self, index, out);
  if (st != CT_OK || !out->input || !out->target) {
    ct_free(out->input);
    ct_free(out->target);
    *out = (ct_sample){0};
    if (st == CT_OK)
      return ct__fail_status(CT_ERR_INTERNAL, "dataset_get: get returned CT_OK without tensors");
    return st;
  }
  /* Built-ins return untracked tensors; user gets return whatever their
   * public calls tracked. Either way the caller owns them: track the
   * untracked ones like every public result. */
  if (out->input->scope_depth == 0) ct__track(out->input);
  if (out->target->scope_depth == 0) ct__track(out->target);
  return CT_OK;
}

void ct_dataset_set_epoch(ct_dataset *d, int64_t epoch) {
  if (d) atomic_store(&d->epoch, epoch);
}

/* ---- Tensor dataset ------------------------------------------------------------ */

typedef struct tensor_ds {
  ct_tensor *inputs, *targets; /* retained; CPU; same size of dim 0 */
} tensor_ds;

static int64_t tensor_ds_length(void *self) { return ((tensor_ds *)self)->inputs->shape[0]; }

/* Row i of t as an untracked view. */
static ct_tensor *row_view(const ct_tensor *t, int64_t i) {
  return ct__view_of(t, t->dtype, t->shape + 1, t->strides + 1, t->ndim - 1,
                     t->offset + i * t->strides[0]);
}

static ct_status tensor_ds_get(void *self, int64_t index, ct_sample *out) {
  tensor_ds *s = self;
  out->input = row_view(s->inputs, index);
  out->target = row_view(s->targets, index);
  if (!out->input || !out->target) return ct_last_error();
  return CT_OK;
}

static void tensor_ds_destroy(void *self) {
  tensor_ds *s = self;
  ct__release(s->inputs);
  ct__release(s->targets);
  free(s);
}

static void tensor_ds_meta(void *self, ct__sample_meta *m) {
  tensor_ds *s = self;
  m->input_ndim = s->inputs->ndim - 1;
  m->target_ndim = s->targets->ndim - 1;
  memcpy(m->input_shape, s->inputs->shape + 1, sizeof(int64_t) * (size_t)m->input_ndim);
  memcpy(m->target_shape, s->targets->shape + 1, sizeof(int64_t) * (size_t)m->target_ndim);
  m->input_dtype = s->inputs->dtype;
  m->target_dtype = s->targets->dtype;
}

/* Copies rows idx[] of src into the contiguous dst (count, ...). */
static ct_status gather_rows(const ct_tensor *src, const int64_t *idx, int64_t count, ct_tensor *dst) {
  if (src->numel == 0) return CT_OK;
  size_t row_bytes = (size_t)(src->numel / src->shape[0]) * ct__elsize(src->dtype);
  char *out = ct__data(dst);
  /* Rows are contiguous blocks when the dims after 0 are row-major. */
  ct_tensor probe = *src;
  probe.ndim = src->ndim - 1;
  memmove(probe.shape, src->shape + 1, sizeof(int64_t) * (size_t)probe.ndim);
  memmove(probe.strides, src->strides + 1, sizeof(int64_t) * (size_t)probe.ndim);
  if (ct__is_contiguous(&probe)) {
    const char *base = ct__data(src);
    for (int64_t i = 0; i < count; i++)
      memcpy(out + (size_t)i * row_bytes,
             base + (size_t)(idx[i] * src->strides[0]) * ct__elsize(src->dtype), row_bytes);
    return CT_OK;
  }
  for (int64_t i = 0; i < count; i++) {
    ct_tensor *from = row_view(src, idx[i]);
    ct_tensor *to = row_view(dst, i);
    bool ok = from && to && ct_copy_(to, from);
    ct__release(from);
    ct__release(to);
    if (!ok) return ct_last_error();
  }
  return CT_OK;
}

static ct_status tensor_ds_fill(void *self, const int64_t *idx, int64_t count, int64_t epoch,
                                ct_tensor *inputs, ct_tensor *targets) {
  tensor_ds *s = self;
  ct_status st = gather_rows(s->inputs, idx, count, inputs);
  return st != CT_OK ? st : gather_rows(s->targets, idx, count, targets);
}

static const ct_dataset_vtable tensor_ds_vtable = {
    .length = tensor_ds_length, .get = tensor_ds_get, .destroy = tensor_ds_destroy};
static const ct__batch_ops tensor_ds_ops = {.sample_meta = tensor_ds_meta, .fill = tensor_ds_fill};

ct_dataset *ct_tensor_dataset_new(ct_tensor *inputs, ct_tensor *targets) {
  if (!inputs || !targets) return NULL; /* keeps the error already recorded */
  if (inputs->ndim < 1 || targets->ndim < 1 || inputs->shape[0] != targets->shape[0]) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    return ct__fail(CT_ERR_SHAPE,
                    "tensor_dataset_new: inputs %s and targets %s need the same size of dim 0",
                    ct__shape_str(inputs, a, sizeof a), ct__shape_str(targets, b, sizeof b));
  }
  if (!ct__is_cpu(inputs) || !ct__is_cpu(targets))
    return ct__fail(CT_ERR_DEVICE, "tensor_dataset_new: inputs (%s) and targets (%s) must be on the cpu",
                    ct_device_name(ct__device(inputs)), ct_device_name(ct__device(targets)));
  tensor_ds *s = ct__malloc(sizeof *s);
  if (!s) return ct__fail(CT_ERR_OOM, "tensor_dataset_new: out of host memory");
  s->inputs = ct__retain(inputs);
  s->targets = ct__retain(targets);
  return ct__dataset_new_fast(&tensor_ds_vtable, &tensor_ds_ops, s);
}

/* ---- Image dataset (MNIST, CIFAR-10) -------------------------------------------- */

static int64_t image_ds_length(void *self) { return ((ct__image_store *)self)->n; }

static ct_status image_ds_get_epoch(ct__image_store *s, int64_t index, int64_t epoch, ct_sample *out) {
  out->input = ct__empty((int64_t[]){s->c, s->out_h, s->out_w}, 3, CT_F32, ct_cpu());
  out->target = ct__empty(NULL, 0, CT_I64, ct_cpu());
  if (!out->input || !out->target) return ct_last_error();
  ct__transform_image(s, index, epoch, ct__data(out->input));
  *(int64_t *)ct__data(out->target) = s->labels[index];
  return CT_OK;
}

static void image_ds_meta(void *self, ct__sample_meta *m) {
  ct__image_store *s = self;
  *m = (ct__sample_meta){.input_ndim = 3, .target_ndim = 0, .input_dtype = CT_F32,
                         .target_dtype = CT_I64};
  m->input_shape[0] = s->c;
  m->input_shape[1] = s->out_h;
  m->input_shape[2] = s->out_w;
}

static ct_status image_ds_fill(void *self, const int64_t *idx, int64_t count, int64_t epoch,
                               ct_tensor *inputs, ct_tensor *targets) {
  ct__image_store *s = self;
  float *x = ct__data(inputs);    /* (count, c, out_h, out_w) */
  int64_t *y = ct__data(targets); /* (count) */
  const int64_t per = s->c * s->out_h * s->out_w;
  for (int64_t i = 0; i < count; i++) {
    ct__transform_image(s, idx[i], epoch, x + i * per);
    y[i] = s->labels[idx[i]];
  }
  return CT_OK;
}

static void image_ds_destroy(void *self) {
  ct__image_store *s = self;
  free(s->pixels);
  free(s->labels);
  free(s);
}

/* get reads the epoch set by ct_dataset_set_epoch through the dataset, so the
 * vtable's get goes through a small trampoline holding the dataset. */
typedef struct image_ds {
  ct__image_store store; /* first: the batch ops see a ct__image_store */
  ct_dataset *owner;
} image_ds;

static ct_status image_ds_get(void *self, int64_t index, ct_sample *out) {
  image_ds *s = self;
  return image_ds_get_epoch(&s->store, index, atomic_load(&s->owner->epoch), out);
}

static const ct_dataset_vtable image_ds_vtable = {
    .length = image_ds_length, .get = image_ds_get, .destroy = image_ds_destroy};
static const ct__batch_ops image_ds_ops = {.sample_meta = image_ds_meta, .fill = image_ds_fill};

ct_dataset *ct__image_dataset_new(const ct__image_store *store) {
  image_ds *s = ct__malloc(sizeof *s);
  if (!s) {
    free(store->pixels);
    free(store->labels);
    return ct__fail(CT_ERR_OOM, "out of host memory");
  }
  s->store = *store;
  s->owner = NULL;
  ct_dataset *d = ct__dataset_new_fast(&image_ds_vtable, &image_ds_ops, s);
  if (d) s->owner = d;
  return d;
}
