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

/* ---- Your own data: CSV files and image folders ------------------------------- */

/* Header handling of ct_csv_dataset_open. */
typedef enum ct_csv_header {
  CT_CSV_HEADER_AUTO = 0, /* a first line with a non-numeric cell in a numeric column is a header */
  CT_CSV_HEADER_YES,
  CT_CSV_HEADER_NO        /* columns are then named by their index: "0", "1", ... */
} ct_csv_header;

/* Options of ct_csv_dataset_open; a zeroed struct (or NULL) reads a
 * comma-separated file with header detection, the last column as a class
 * label and every other column as a feature, normalized with statistics
 * computed on the file. Columns are given by name (header) or by 0-based
 * index written as a decimal string ("3"). */
typedef struct ct_csv_opts {
  char delimiter;              /* 0 means ',' */
  ct_csv_header header;
  const char *target;          /* the target column; NULL: the last one */
  bool no_target;              /* the file has no target (prediction inputs): targets are 0 */
  const char *const *features; /* the feature columns in this order; NULL: all but the target */
  int64_t num_features;
  bool regression;             /* target is a float (f32, shape ()); else class labels */
  /* Classification: labels (strings or integers) map to 0..k-1 in sorted
   * order (numerically when every label is an integer, else bytewise), unless
   * class_names gives the mapping (e.g. a training set's, for its test file):
   * then a label not among them is CT_ERR_FORMAT. */
  const char *const *class_names;
  int64_t num_classes;
  /* Features become (x - mean) / std per column. mean and std (num_features
   * values each, std > 0) are used as given; else they are computed on the
   * file (population std; a constant column gets std 1). */
  bool normalize;
  const double *mean, *std;
} ct_csv_opts;

/* A CSV file read into memory: samples are (F) f32 feature rows and a 0-d
 * i64 class index (or f32 value for regression). Cells may be quoted ("a,b",
 * "" for a quote); blank lines are skipped. A missing file is CT_ERR_IO; a
 * ragged row, a non-numeric feature cell, a non-numeric regression target,
 * an unknown column or an empty file is CT_ERR_FORMAT naming the file, the
 * line, the column and the value. */
CT_API ct_dataset *ct_csv_dataset_open(const char *path, const ct_csv_opts *opts);

/* What a CSV dataset knows about its columns: pointers into the dataset
 * (valid while it lives); save them with a model to predict on new rows.
 * NULL (CT_ERR_ARG) when d is not a CSV dataset. */
typedef struct ct_csv_info {
  int64_t num_features;
  const char *const *feature_names;
  const char *target_name;         /* NULL with no_target */
  bool regression;
  int64_t num_classes;             /* 0 for regression */
  const char *const *class_names;  /* class index -> label text */
  bool normalized;
  const double *mean, *std;        /* num_features each (0 and 1 without normalize) */
} ct_csv_info;
CT_API const ct_csv_info *ct_csv_dataset_info(const ct_dataset *d);

/* Options of ct_image_folder_open. Every image is decoded, converted to
 * `channels` (1: grayscale by ITU-R 601 luma; 3: RGB, gray images
 * replicated), resized (bilinear, pixel centers aligned as torchvision's
 * Resize without antialiasing) to resize_h x resize_w, center-cropped to
 * center_crop x center_crop, then given the transforms of the built-in
 * readers (normalize, random crop with padding, random flip; ct_transform_opts). */
typedef struct ct_image_folder_opts {
  int channels;             /* 1 or 3; 0 means 3 */
  int64_t resize_h, resize_w; /* 0, 0: no resize (every image must then have the first one's size) */
  int64_t center_crop;      /* 0: none */
  ct_transform_opts transforms;
  /* The class names in index order (e.g. a training folder's, for its test
   * folder): a subfolder not among them is CT_ERR_FORMAT. NULL: the
   * subfolders, sorted bytewise. */
  const char *const *class_names;
  int64_t num_classes;
} ct_image_folder_opts;

/* An image-classification folder: dir/CLASS/IMAGE, one subfolder per class
 * (sorted bytewise; hidden entries skipped), images are files ending in .png,
 * .jpg or .jpeg (any case; other files are skipped). Only the file list is
 * read here (and the first image, for its size when there is no resize):
 * images are decoded in ct_dataset_get, so the loader's workers decode in
 * parallel. Samples: (channels, H, W) f32 and a 0-d i64 class index. No
 * class folder, a class folder without images or a bad option is CT_ERR_FORMAT
 * / CT_ERR_ARG at open; a corrupt or mis-sized image is CT_ERR_FORMAT naming
 * the file at get. PNG needs libpng, JPEG libjpeg(-turbo) at build time;
 * a library built without one returns CT_ERR_UNAVAILABLE saying so. */
CT_API ct_dataset *ct_image_folder_open(const char *dir, const ct_image_folder_opts *opts);

/* What an image folder holds; pointers valid while the dataset lives. NULL
 * (CT_ERR_ARG) when d is not an image folder. */
typedef struct ct_image_folder_info {
  int64_t num_classes;
  const char *const *class_names;
  int64_t channels, height, width; /* of a sample */
  const char *const *paths;        /* sample index -> file path */
  const int64_t *labels;           /* sample index -> class index */
} ct_image_folder_info;
CT_API const ct_image_folder_info *ct_image_folder_info_of(const ct_dataset *d);

/* Decodes one PNG or JPEG file to (channels, H, W) f32 with the folder
 * options' resize, crop and normalization, without random transforms (a
 * random crop becomes a center crop of its size): what prediction on a
 * single image needs. */
CT_API ct_tensor *ct_image_load(const char *path, const ct_image_folder_opts *opts);

/* The samples indices[0..n) of d, in that order (indices are checked:
 * CT_ERR_ARG). Keeps a pointer to d, which must outlive it. */
CT_API ct_dataset *ct_subset_new(ct_dataset *d, const int64_t *indices, int64_t n);
/* The parts one after the other (count >= 1; pointers kept, the parts must
 * outlive it). CT_ERR_SHAPE / CT_ERR_DTYPE when the parts' samples differ
 * (checked on their first samples). */
CT_API ct_dataset *ct_concat_dataset_new(ct_dataset *const *parts, int64_t count);
/* Splits d into count subsets of lengths[0..count) samples (summing to
 * ct_dataset_length(d)) over a random permutation that depends only on seed
 * (as the loader's shuffle at epoch 0). Writes out[0..count); on failure
 * none is left allocated. Free each with ct_dataset_free before d. */
CT_API ct_status ct_random_split(ct_dataset *d, const int64_t *lengths, int64_t count, uint64_t seed,
                                 ct_dataset **out);

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
