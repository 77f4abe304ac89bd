/* ctensor/data.h: datasets, transforms and the data loader.
 *
 *   ct_dataset *train = ct_mnist_open("/usr/share/datasets/fashion-mnist", true, NULL);
 *   ct_dataloader *dl = ct_dataloader_new(train, &(ct_dataloader_opts){
 *       .batch_size = 64, .shuffle = true, .seed = 1, .num_workers = 2});
 *   ct_batch b;
 *   ct_dataloader_start_epoch(dl, epoch);
 *   while (ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
 *     ... b.inputs (64, 1, 28, 28) f32, b.targets (64) i64 ...
 *     ct_batch_release(&b);
 *   }
 *
 * The order of samples depends only on (seed, epoch), never on the number of
 * workers or the machine; workers prefetch batches on their own threads. */
#ifndef CTENSOR_DATA_H
#define CTENSOR_DATA_H

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_dataset ct_dataset;

/* One example: input and target are new references owned by the caller. */
typedef struct ct_sample {
  ct_tensor *input;
  ct_tensor *target;
} ct_sample;

/* A user-defined dataset. get must be safe to call from several threads. */
typedef struct ct_dataset_vtable {
  int64_t (*length)(void *self);
  ct_status (*get)(void *self, int64_t index, ct_sample *out);
  void (*destroy)(void *self); /* may be NULL */
} ct_dataset_vtable;
ct_dataset *ct_dataset_new(const ct_dataset_vtable *vtable, void *self);
void ct_dataset_free(ct_dataset *d); /* NULL is a no-op */
int64_t ct_dataset_length(const ct_dataset *d);
ct_status ct_dataset_get(const ct_dataset *d, int64_t index, ct_sample *out);

/* Samples are rows of `inputs` and `targets` (same first dim; CPU tensors).
 * The dataset keeps references to both. */
ct_dataset *ct_tensor_dataset_new(ct_tensor *inputs, ct_tensor *targets);

/* Per-sample transforms, applied in order by image datasets to a (C, H, W)
 * u8 image: bytes to f32 in [0, 1], then normalize, random crop with
 * padding, random horizontal flip. Random choices depend only on (seed,
 * epoch, sample index). */
typedef struct ct_transform_opts {
  bool normalize;
  double mean[3], std[3];       /* per channel (channels beyond 3 use [2]) */
  int64_t random_crop;          /* > 0: crop this size after zero padding */
  int64_t crop_padding;
  bool random_hflip;            /* flip with probability 0.5 */
  uint64_t seed;
} ct_transform_opts;

/* MNIST / Fashion-MNIST IDX files in dir: train-images-idx3-ubyte(.gz),
 * train-labels-idx1-ubyte(.gz), t10k-... (gzip or raw). Samples: (1, 28, 28)
 * f32 in [0, 1] (then transforms) and an i64 label. Every header, count and
 * size is checked before allocation; a bad file is CT_ERR_FORMAT naming the
 * file and the field; a missing one is CT_ERR_IO saying how to get it. */
ct_dataset *ct_mnist_open(const char *dir, bool train, const ct_transform_opts *transforms);
/* CIFAR-10 binary batches in dir: data_batch_1.bin .. data_batch_5.bin (train)
 * or test_batch.bin: records of 1 label byte + 3072 pixel bytes. Samples:
 * (3, 32, 32) f32 and an i64 label. */
ct_dataset *ct_cifar10_open(const char *dir, bool train, const ct_transform_opts *transforms);
/* Sets the epoch used by the dataset's random transforms. */
void ct_dataset_set_epoch(ct_dataset *d, int64_t epoch);

typedef struct ct_dataloader ct_dataloader;

typedef struct ct_dataloader_opts {
  int64_t batch_size;   /* 0 means 1 */
  bool shuffle;
  uint64_t seed;        /* shuffle order = f(seed, epoch) */
  bool drop_last;
  int num_workers;      /* 0: load on the calling thread */
  int prefetch;         /* batches prepared ahead per worker; 0 means 2 */
  bool pin_memory;      /* batches in pinned memory (needs a GPU) */
} ct_dataloader_opts;

/* A batch: inputs stacked along a new dim 0, targets likewise. */
typedef struct ct_batch {
  ct_tensor *inputs;
  ct_tensor *targets;
  int64_t index;        /* batch number within the epoch */
  double wait_seconds;  /* time the caller waited for this batch */
} ct_batch;

/* The loader keeps a reference to the dataset (which must outlive it). */
ct_dataloader *ct_dataloader_new(ct_dataset *d, const ct_dataloader_opts *opts);
void ct_dataloader_free(ct_dataloader *dl); /* NULL is a no-op; stops workers */
/* Number of batches per epoch. */
int64_t ct_dataloader_num_batches(const ct_dataloader *dl);
/* Begins an epoch (reshuffles with (seed, epoch)); skip_batches resumes part
 * way through (for checkpoints). */
ct_status ct_dataloader_start_epoch(ct_dataloader *dl, int64_t epoch, int64_t skip_batches);
/* The next batch of the epoch; at the end returns CT_OK with NULL tensors. */
ct_status ct_dataloader_next(ct_dataloader *dl, ct_batch *out);
void ct_batch_release(ct_batch *b);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_DATA_H */
