/* Internal definitions of the data pipeline: the dataset object, the fast
 * batch path that built-in datasets offer to the data loader, and the image
 * store shared by the MNIST and CIFAR-10 readers. Nothing here is public API. */
#ifndef CT_DATA_INTERNAL_H
#define CT_DATA_INTERNAL_H

#include "core/internal.h"

/* Shape and dtype of one sample's input and target (rows of a batch). */
typedef struct ct__sample_meta {
  int input_ndim, target_ndim;
  int64_t input_shape[CT_MAX_DIMS], target_shape[CT_MAX_DIMS];
  ct_dtype input_dtype, target_dtype;
} ct__sample_meta;

/* What a built-in dataset offers the loader besides get: it writes whole
 * batches straight into preallocated tensors, with no per-sample tensor. */
typedef struct ct__batch_ops {
  void (*sample_meta)(void *self, ct__sample_meta *out);
  /* Writes samples idx[0..count) (already bounds-checked) into the
   * contiguous CPU tensors inputs (count, input_shape...) and targets
   * (count, target_shape...). epoch drives random transforms. Thread-safe. */
  ct_status (*fill)(void *self, const int64_t *idx, int64_t count, int64_t epoch, ct_tensor *inputs,
                    ct_tensor *targets);
} ct__batch_ops;

struct ct_dataset {
  ct_dataset_vtable vt;
  void *self;
  const ct__batch_ops *fast; /* NULL for user datasets */
  _Atomic int64_t epoch;     /* for random transforms (ct_dataset_set_epoch) */
};

/* A dataset with a fast batch path (built-ins). Takes ownership of self
 * (destroyed through vt->destroy, also on failure). */
ct_dataset *ct__dataset_new_fast(const ct_dataset_vtable *vt, const ct__batch_ops *fast,
                                 void *self);

/* ---- Device staging (device_stage.c) ------------------------------------------ *
 * The data loader's copy of the next batch to a GPU on a stream of its own. */
typedef struct ct__device_stage ct__device_stage;
ct__device_stage *ct__device_stage_new(ct_device device);
void ct__device_stage_free(ct__device_stage *s); /* a copy in flight ends on its own */
/* Takes ownership of the host batch (pinned) and starts its copy. */
ct_status ct__device_stage_put(ct__device_stage *s, ct_tensor *inputs, ct_tensor *targets,
                               int64_t index);
bool ct__device_stage_full(const ct__device_stage *s);
/* Hands the staged device batch to *out, ordered on the caller's stream. */
ct_status ct__device_stage_take(ct__device_stage *s, ct_batch *out);
/* Discards a staged batch; its memory is reused only after its copy. */
void ct__device_stage_drop(ct__device_stage *s);

/* ---- Image datasets (MNIST, CIFAR-10) ---------------------------------------- */

/* n images (c, h, w) u8 in one buffer and their labels. */
typedef struct ct__image_store {
  uint8_t *pixels; /* (n, c, h, w), row-major; malloc'd */
  uint8_t *labels; /* (n); malloc'd */
  int64_t n, c, h, w;
  ct_transform_opts tf;
  int64_t out_h, out_w;     /* after the crop */
  float scale[3], shift[3]; /* channel k uses [min(k, 2)]: byte * scale + shift */
} ct__image_store;

/* Validates transforms against the image size and precomputes the affine
 * map bytes -> floats. name is used in messages ("mnist_open"). */
ct_status ct__image_store_init_transforms(ct__image_store *s, const ct_transform_opts *tf,
                                          const char *name);
/* The dataset over a copy of *s; takes ownership of s->pixels and s->labels
 * (freed on failure too). */
ct_dataset *ct__image_dataset_new(const ct__image_store *s);

/* Reads a CIFAR-10 binary batch of exactly `records` records (10000 in a real
 * file; fewer in the fuzz target) into pixels (records x 3072 bytes) and
 * labels (records bytes): CT_ERR_FORMAT naming the file (and the record) for
 * another size or a label above 9, CT_ERR_IO for a missing or unreadable one. */
ct_status ct__cifar_read_batch(const char *path, int64_t records, uint8_t *pixels, uint8_t *labels);

/* Writes image `index` after transforms (random choices from (seed, epoch,
 * index)) into out, (c, out_h, out_w) f32 contiguous. */
void ct__transform_image(const ct__image_store *s, int64_t index, int64_t epoch, float *out);
/* The same for the (c, h, w) bytes at src, which need not be in s->pixels
 * (the image folder decodes each sample into a buffer of its own). */
void ct__transform_pixels(const ct__image_store *s, const uint8_t *src, int64_t index,
                          int64_t epoch, float *out);

/* ---- Image files (image_decode.c) -------------------------------------------------- */

/* Decodes the PNG or JPEG file at path (told apart by their signatures) into
 * *pixels: h * w * 3 bytes, RGB interleaved (gray images replicated, alpha
 * composed on black), ct__malloc'd. CT_ERR_IO for a file that cannot be read,
 * CT_ERR_FORMAT naming the file for anything else wrong in it,
 * CT_ERR_UNAVAILABLE when the library was built without its decoder. */
ct_status ct__image_decode(const char *path, uint8_t **pixels, int64_t *h, int64_t *w);

#endif /* CT_DATA_INTERNAL_H */
