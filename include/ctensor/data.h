/* ctensor/data.h: datasets, transforms and the data loader.
 *
 *   ct_dataset *train = ct_mnist_open("/usr/share/datasets/fashion-mnist", true, NULL);
 *   ct_dataloader *dl = ct_dataloader_new(train, &(ct_dataloader_opts){
 *       .batch_size = 64, .shuffle = true, .seed = 1, .num_workers = 2});
 *   ct_batch b;
 *   ct_dataloader_start_epoch(dl, epoch, 0);
 *   while (ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
 *     ... b.inputs (64, 1, 28, 28) f32, b.targets (64) i64 ...
 *     ct_batch_release(&b);
 *   }
 *
 * The order of samples depends only on (seed, epoch), never on the number of
 * workers or the machine; workers prefetch batches on their own threads.
 *
 * Ownership: a ct_sample's tensors are like any returned tensor (registered
 * in the caller's scope, if one is open); a ct_batch's tensors belong to the
 * batch, are in no scope and are freed only by ct_batch_release (safe inside
 * or outside a scope; ct_scope_end never frees them). */
#ifndef CTENSOR_DATA_H
#define CTENSOR_DATA_H

#include "ctensor/api.h"
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

/* A user-defined dataset. get must be safe to call from several threads
 * (loader workers call it concurrently, on threads with no open scope); it
 * returns new references (released by the loader after copying them into the
 * batch). All samples must have the same input and target shapes and dtypes. */
typedef struct ct_dataset_vtable {
  int64_t (*length)(void *self);
  ct_status (*get)(void *self, int64_t index, ct_sample *out);
  void (*destroy)(void *self); /* may be NULL */
} ct_dataset_vtable;
CT_API ct_dataset *ct_dataset_new(const ct_dataset_vtable *vtable, void *self);
CT_API void ct_dataset_free(ct_dataset *d); /* NULL is a no-op */
CT_API int64_t ct_dataset_length(const ct_dataset *d);
CT_API ct_status ct_dataset_get(const ct_dataset *d, int64_t index, ct_sample *out);

/* Samples are rows of `inputs` and `targets` (same first dim; CPU tensors):
 * get returns views of the rows, the loader copies rows straight into its
 * batches. The dataset keeps references to both (do not write to them while a
 * loader runs). CT_ERR_SHAPE / CT_ERR_DEVICE otherwise. */
CT_API ct_dataset *ct_tensor_dataset_new(ct_tensor *inputs, ct_tensor *targets);

/* Per-sample transforms, applied in order by image datasets to a (C, H, W)
 * u8 image: bytes to f32 in [0, 1], then normalize, random crop with
 * padding, random horizontal flip (as torchvision's RandomCrop(size, padding)
 * + RandomHorizontalFlip + ToTensor + Normalize: padding is black, i.e. byte 0,
 * which is -mean/std after normalization). Random choices depend only on
 * (seed, epoch, sample index): one Philox 4x32-10 block with key = seed and
 * counter = (index, epoch) gives the crop offsets (words 0 and 1) and the flip
 * (top bit of word 2). A zeroed struct (or NULL) means no transform beyond
 * bytes to [0, 1]. Bad values (std <= 0, a crop larger than the padded image)
 * make the open fail with CT_ERR_ARG. */
typedef struct ct_transform_opts {
  bool normalize;
  double mean[3], std[3];       /* per channel (channels beyond 3 use [2]) */
  int64_t random_crop;          /* > 0: crop this size after zero padding */
  int64_t crop_padding;
  bool random_hflip;            /* flip with probability 0.5 */
  uint64_t seed;
} ct_transform_opts;

/* MNIST / Fashion-MNIST IDX files in dir: train-images-idx3-ubyte(.gz),
 * train-labels-idx1-ubyte(.gz), t10k-... (the .gz name is tried first; gzip
 * or raw). Samples: (1, rows, cols) f32 in [0, 1] (28x28 for MNIST; then
 * transforms) and a 0-d i64 label (0..9). The files are read once into
 * memory. Every header, count and size is checked before allocation; a bad
 * file (wrong magic, truncated, a gzip stream without its trailer, longer
 * than its header says, image and label counts differing, a label above 9)
 * is CT_ERR_FORMAT naming the file and the field (the first bad label's
 * index and value); a missing one is CT_ERR_IO saying how to get it. An empty
 * pair (0 images) opens as a dataset of length 0. */
CT_API ct_dataset *ct_mnist_open(const char *dir, bool train, const ct_transform_opts *transforms);
/* CIFAR-10 binary batches in dir: data_batch_1.bin .. data_batch_5.bin (train)
 * or test_batch.bin: each exactly 10000 records of 1 label byte (0..9) + 3072
 * pixel bytes. Samples: (3, 32, 32) f32 (then transforms) and a 0-d i64
 * label. A missing file is CT_ERR_IO (saying where to get the data); a size
 * that is not 10000 records or a label > 9 is CT_ERR_FORMAT naming the file
 * (and the record). */
CT_API ct_dataset *ct_cifar10_open(const char *dir, bool train,
                                   const ct_transform_opts *transforms);
/* Sets the epoch used by the random transforms of ct_dataset_get (the loader
 * passes its own epoch to its workers and also sets this one). */
CT_API void ct_dataset_set_epoch(ct_dataset *d, int64_t epoch);

typedef struct ct_dataloader ct_dataloader;

typedef struct ct_dataloader_opts {
  int64_t batch_size;   /* 0 means 1 */
  bool shuffle;
  uint64_t seed;        /* shuffle order = f(seed, epoch) */
  bool drop_last;
  int num_workers;      /* 0: load on the calling thread */
  int prefetch;         /* batches prepared ahead per worker; 0 means 2 */
  bool pin_memory;      /* batches in pinned memory; as torch, without a usable
                           GPU this prints one warning and does not pin */
  /* Distributed sharding, as torch's DistributedSampler (shard_count 0 or 1:
   * none). The whole order (above) is the same on every rank; rank r of W
   * takes its entries r, r + W, r + 2W, ..., ceil(N / W) of them, wrapping
   * around to the first ones as padding, or floor(N / W) with drop_last (then
   * the tail is dropped), so that every rank gets the same number of samples
   * and batches. Usually .shard_rank = ct_dist_rank(), .shard_count =
   * ct_dist_world_size(). CT_ERR_ARG unless 0 <= shard_rank < shard_count. */
  int64_t shard_rank;
  int64_t shard_count;
  ct_device device;     /* where batches are delivered (zero value: the CPU). On a
                           GPU, batches are built in pinned memory and copied on a
                           stream of the loader's own while the caller computes on
                           the previous batch; the caller's current stream (of
                           that device, at the ct_dataloader_next call) waits
                           for the copy (on the GPU, not the host), and the
                           batch is recorded on it (ct_record_stream): using it
                           on another stream needs the same two steps there */
} ct_dataloader_opts;

/* A batch: inputs stacked along a new dim 0, targets likewise (contiguous
 * tensors on the loader's device, the CPU by default; image datasets:
 * (B, C, H, W) f32 and (B) i64). Owned by the
 * batch, in no scope: free with ct_batch_release. */
typedef struct ct_batch {
  ct_tensor *inputs;
  ct_tensor *targets;
  int64_t index;        /* batch number within the epoch */
  double wait_seconds;  /* time the caller waited for this batch */
} ct_batch;

/* The loader keeps a pointer to the dataset (which must outlive it). Worker
 * threads start here and wait for the first epoch. CT_ERR_ARG for negative
 * sizes or counts. */
CT_API ct_dataloader *ct_dataloader_new(ct_dataset *d, const ct_dataloader_opts *opts);
CT_API void ct_dataloader_free(ct_dataloader *dl); /* NULL is a no-op; stops workers */
/* Number of batches per epoch. */
CT_API int64_t ct_dataloader_num_batches(const ct_dataloader *dl);
/* Begins an epoch, also in the middle of another one (batches of the old
 * epoch still being built are discarded). With shuffle, the order is a
 * Fisher-Yates shuffle of 0..n-1 (i from n-1 down to 1 swaps i with
 * floor(u * (i + 1) / 2^64), u successive ct_generator_next_u64 draws of a
 * generator in state (seed, epoch << 32)); without, 0..n-1; with sharding,
 * this rank's entries of that order (shard_rank above). skip_batches
 * (0..num_batches) resumes part way through: the batches that follow are the
 * ones an uninterrupted epoch would give (for checkpoints). */
CT_API ct_status ct_dataloader_start_epoch(ct_dataloader *dl, int64_t epoch, int64_t skip_batches);
/* The next batch of the epoch, in order; at the end returns CT_OK with NULL
 * tensors (until the next start_epoch). Without a prior start_epoch, starts
 * epoch 0. If building the batch failed (on a worker or here), returns that
 * status with its message; the batch is then skipped and the next call goes
 * on with the following one. wait_seconds is the time spent in this call
 * (with a GPU device it includes building the following batch, which this
 * call starts copying). Several threads may call it (and start_epoch) on one
 * loader: calls run one at a time, and each batch goes once, in order, to
 * whichever thread asks next. */
CT_API ct_status ct_dataloader_next(ct_dataloader *dl, ct_batch *out);
/* Frees the batch's tensors and sets them to NULL (NULL b or tensors: no-op). */
CT_API void ct_batch_release(ct_batch *b);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_DATA_H */
