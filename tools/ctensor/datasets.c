/* datasets.c: the program's datasets: default locations, the standard
 * normalization of each, and a "first N samples" view for quick runs. */
#include <stdlib.h>

#include "cli.h"

const char *cli_default_data_dir(cli_dataset d) {
  switch (d) {
    case DATASET_FASHION_MNIST:
      return "/usr/share/datasets/fashion-mnist";
    case DATASET_MNIST:
      return "/usr/share/datasets/mnist";
    case DATASET_CIFAR10: /* /usr/share/datasets/<dataset>, as --help says */
      return "/usr/share/datasets/cifar10";
    case DATASET_FORTUNES:
      return "/usr/share/games/fortunes"; /* Debian package fortunes */
    case DATASET_CSV:                     /* named by --dataset csv:FILE / folder:DIR */
    case DATASET_FOLDER:
      break;
  }
  return ".";
}

/* Where a missing built-in dataset comes from: the files the program looks
 * for in dir and how to get them. */
static void print_data_source(cli_dataset d, const char *dir) {
  switch (d) {
    case DATASET_FASHION_MNIST:
      fprintf(stderr,
              "ctensor: fashion-mnist is read from %s (train-images-idx3-ubyte.gz, "
              "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz): "
              "install the Debian package dataset-fashion-mnist (scripts/install-deps.sh --data), "
              "or download them from https://github.com/zalandoresearch/fashion-mnist and pass "
              "their folder with --data-dir\n",
              cli_shown(dir));
      break;
    case DATASET_MNIST:
      fprintf(stderr,
              "ctensor: mnist is read from %s (train-images-idx3-ubyte.gz, "
              "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz, "
              "gzip or raw): download them from https://yann.lecun.com/exdb/mnist/ and pass their "
              "folder with --data-dir\n",
              cli_shown(dir));
      break;
    case DATASET_CIFAR10:
      fprintf(stderr,
              "ctensor: cifar10 is read from %s (data_batch_1.bin .. data_batch_5.bin, "
              "test_batch.bin): download the binary version (cifar-10-binary.tar.gz) from "
              "https://www.cs.toronto.edu/~kriz/cifar.html, extract it and pass its "
              "cifar-10-batches-bin folder with --data-dir\n",
              cli_shown(dir));
      break;
    default:
      break;
  }
}

bool cli_dataset_is_text(cli_dataset d) { return d == DATASET_FORTUNES; }

void cli_dataset_geometry(cli_dataset d, int64_t *channels, int64_t *size) {
  bool cifar = d == DATASET_CIFAR10;
  *channels = cifar ? 3 : 1;
  *size = cifar ? 32 : 28;
}

/* The first n samples of an inner dataset (which this view owns). The inner
 * dataset's random transforms read the inner dataset's epoch: the caller sets
 * it through the *base that cli_open_dataset returns. */
typedef struct limit_ds {
  ct_dataset *inner;
  int64_t n;
} limit_ds;

static int64_t limit_length(void *self) { return ((limit_ds *)self)->n; }
static ct_status limit_get(void *self, int64_t index, ct_sample *out) {
  return ct_dataset_get(((limit_ds *)self)->inner, index, out);
}
static void limit_destroy(void *self) {
  limit_ds *s = self;
  ct_dataset_free(s->inner);
  free(s);
}
static const ct_dataset_vtable limit_vtable = {limit_length, limit_get, limit_destroy};

ct_dataset *cli_open_dataset(cli_dataset d, const char *dir, bool train, int64_t limit,
                             uint64_t seed, int augment, ct_dataset **base) {
  if (!dir) dir = cli_default_data_dir(d);
  ct_transform_opts tf = {.normalize = true, .seed = seed};
  /* As torchvision's RandomCrop(size, padding=size / 8) + RandomHorizontalFlip. */
  tf.random_hflip = (augment & AUG_HFLIP) != 0;
  if (augment & AUG_CROP) {
    int64_t c, size;
    cli_dataset_geometry(d, &c, &size);
    tf.random_crop = size;
    tf.crop_padding = size / 8 > 0 ? size / 8 : 1;
  }
  if (base) *base = NULL;
  ct_dataset *ds;
  switch (d) {
    case DATASET_FASHION_MNIST:
      tf.mean[0] = tf.mean[1] = tf.mean[2] = 0.2860;
      tf.std[0] = tf.std[1] = tf.std[2] = 0.3530;
      ds = ct_mnist_open(dir, train, &tf);
      break;
    case DATASET_MNIST:
      tf.mean[0] = tf.mean[1] = tf.mean[2] = 0.1307;
      tf.std[0] = tf.std[1] = tf.std[2] = 0.3081;
      ds = ct_mnist_open(dir, train, &tf);
      break;
    case DATASET_CIFAR10:
      tf.mean[0] = 0.4914, tf.mean[1] = 0.4822, tf.mean[2] = 0.4465;
      tf.std[0] = 0.2470, tf.std[1] = 0.2435, tf.std[2] = 0.2616;
      ds = ct_cifar10_open(dir, train, &tf);
      break;
    case DATASET_FORTUNES:
      ds = cli_text_open(dir, train); /* says why itself when it fails */
      if (!ds) return NULL;
      break;
    default:
      return NULL;
  }
  if (base) *base = ds;
  if (!ds) {
    bool missing = ct_last_error() == CT_ERR_IO;
    cli_error("loading the dataset");
    if (missing) print_data_source(d, dir);
  }
  if (!ds || limit <= 0 || limit >= ct_dataset_length(ds)) return ds;
  limit_ds *s = malloc(sizeof *s);
  if (!s) {
    ct_dataset_free(ds);
    fprintf(stderr, "ctensor: loading the dataset: out of memory\n");
    return NULL;
  }
  s->inner = ds;
  s->n = limit;
  ct_dataset *view = ct_dataset_new(&limit_vtable, s); /* frees s (and ds) on failure */
  if (!view && base) *base = NULL;
  if (!view) cli_error("loading the dataset");
  return view;
}

int cli_require_samples(const char *cmd, const ct_dataset *ds, cli_dataset d, const char *dir,
                        bool train) {
  if (ct_dataset_length(ds) > 0) return CLI_OK;
  fprintf(stderr, "ctensor %s: the %s set of %s in %s holds no samples: nothing to %s\n", cmd,
          train ? "training" : "test", cli_dataset_name(d),
          cli_shown(dir ? dir : cli_default_data_dir(d)), train ? "train on" : "evaluate");
  return CLI_FAIL;
}
