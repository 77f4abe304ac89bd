/* Data pipeline: IDX (MNIST) and CIFAR-10 readers on small files written here
 * in the real formats (and corrupted variants), the tensor dataset,
 * transforms, and the data loader (order, determinism across worker counts,
 * resuming, shutdown mid-epoch, worker errors), and its delivery on a GPU
 * when one is visible. */
#include "ct_test.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data_internal.h"
#include "data/idx.h"

/* ---- Files ----------------------------------------------------------------------- */

static char tmp_root[64];

static const char *tmpdir(void) {
  strcpy(tmp_root, "/tmp/ct_test_data_XXXXXX");
  if (!mkdtemp(tmp_root)) {
    perror("mkdtemp");
    abort();
  }
  return tmp_root;
}

static void rmtree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Writes bytes to dir/name, gzip-compressed if the name ends in .gz. */
static void write_file(const char *dir, const char *name, const uint8_t *bytes, size_t n) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  size_t len = strlen(name);
  if (len > 3 && !strcmp(name + len - 3, ".gz")) {
    gzFile f = gzopen(p, "wb");
    CHECK(f != NULL);
    if (n) CHECK(gzwrite(f, bytes, (unsigned)n) == (int)n);
    gzclose(f);
  } else {
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (n) CHECK(fwrite(bytes, 1, n, f) == n);
    fclose(f);
  }
}

/* An IDX file: magic, dims, then `data_bytes` bytes of data (pixel k = k * 7 + 3). */
static uint8_t *make_idx(uint32_t magic, const uint32_t *dims, int ndim, size_t data_bytes,
                         size_t *size) {
  size_t header = 4 + 4 * (size_t)ndim;
  uint8_t *b = malloc(header + data_bytes + 1);
  put_be32(b, magic);
  for (int d = 0; d < ndim; d++) put_be32(b + 4 + 4 * d, dims[d]);
  for (size_t k = 0; k < data_bytes; k++) b[header + k] = (uint8_t)(k * 7 + 3);
  *size = header + data_bytes;
  return b;
}

/* A small MNIST pair in dir: n images of rows x cols and labels i % 10. */
static void write_mnist(const char *dir, const char *prefix, uint32_t n, uint32_t rows,
                        uint32_t cols, bool gz_images, bool gz_labels) {
  size_t size;
  char name[128];
  uint8_t *img = make_idx(CT_IDX_IMAGES, (uint32_t[]){n, rows, cols}, 3, (size_t)n * rows * cols, &size);
  snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", prefix, gz_images ? ".gz" : "");
  write_file(dir, name, img, size);
  free(img);
  uint8_t *lbl = make_idx(CT_IDX_LABELS, (uint32_t[]){n}, 1, n, &size);
  for (uint32_t i = 0; i < n; i++) lbl[8 + i] = (uint8_t)(i % 10);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", prefix, gz_labels ? ".gz" : "");
  write_file(dir, name, lbl, size);
  free(lbl);
}

static double val(const ct_tensor *t, int64_t i) {
  double *v = ct_test_values(t);
  double x = v[i];
  free(v);
  return x;
}

/* ---- IDX ------------------------------------------------------------------------ */

CT_TEST(mnist_reads_gzip_and_raw) {
  const char *dir = tmpdir();
  write_mnist(dir, "train", 5, 4, 3, true, false);
  write_mnist(dir, "t10k", 3, 4, 3, false, true);
  ct_dataset *tr = ct_mnist_open(dir, true, NULL);
  ct_dataset *te = ct_mnist_open(dir, false, NULL);
  CHECK_OK(tr);
  CHECK_OK(te);
  if (tr && te) {
    CHECK(ct_dataset_length(tr) == 5);
    CHECK(ct_dataset_length(te) == 3);
    ct_sample s;
    CHECK_STATUS_OK(ct_dataset_get(tr, 2, &s));
    CHECK_SHAPE(s.input, 1, 4, 3);
    CHECK(ct_dtype_of(s.input) == CT_F32 && ct_dtype_of(s.target) == CT_I64 && ct_ndim(s.target) == 0);
    double want[12];
    for (int k = 0; k < 12; k++) want[k] = (double)(uint8_t)((2 * 12 + k) * 7 + 3) / 255.0;
    CHECK_CLOSE(s.input, want, 1e-6, 1e-7);
    CHECK(val(s.target, 0) == 2);
    /* in scope: freed by the test's scope end (and ct_free is fine too) */
    ct_free(s.input);
    CHECK_ERR(ct_dataset_get(tr, 5, &s) == CT_OK, CT_ERR_ARG);
    CHECK_ERR(ct_dataset_get(tr, -1, &s) == CT_OK, CT_ERR_ARG);
  }
  ct_dataset_free(tr);
  ct_dataset_free(te);
  rmtree(dir);
}

/* Writes a corrupted image file (gz or raw) next to good labels and checks
 * that opening fails with CT_ERR_FORMAT naming the file and `needle`. */
static void check_bad_images(const uint8_t *bytes, size_t n, bool gz, const char *needle) {
  const char *dir = tmpdir();
  write_mnist(dir, "train", 5, 4, 3, false, false);
  char name[64];
  snprintf(name, sizeof name, "train-images-idx3-ubyte%s", gz ? ".gz" : "");
  write_file(dir, name, bytes, n);
  CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, needle);
  CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, name);
  rmtree(dir);
}

/* Cuts the last `cut` bytes off dir/name (cut < 0: half of the file). */
static void shorten(const char *dir, const char *name, off_t cut) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  struct stat sb;
  CHECK(stat(p, &sb) == 0);
  CHECK(truncate(p, cut < 0 ? sb.st_size / 2 : sb.st_size - cut) == 0);
}

CT_TEST(mnist_rejects_bad_files) {
  size_t size;
  for (int gz = 0; gz < 2; gz++) {
    uint8_t *good = make_idx(CT_IDX_IMAGES, (uint32_t[]){5, 4, 3}, 3, 60, &size);
    /* wrong magic (a label file's) */
    put_be32(good, CT_IDX_LABELS);
    check_bad_images(good, size, gz, "bad magic number 0x00000801");
    put_be32(good, 0x00000c03); /* ints, not bytes */
    check_bad_images(good, size, gz, "magic");
    put_be32(good, CT_IDX_IMAGES);
    /* truncated header, truncated data, trailing data */
    check_bad_images(good, 2, gz, "truncated header");
    check_bad_images(good, 10, gz, "truncated header");
    check_bad_images(good, size - 1, gz,
                     "truncated: header promises 5 images of 4x3 (60 bytes), file holds 59 bytes");
    check_bad_images(good, 16, gz, "file holds 0 bytes");
    uint8_t *longer = make_idx(CT_IDX_IMAGES, (uint32_t[]){5, 4, 3}, 3, 61, &size);
    check_bad_images(longer, size, gz, "longer than its header says");
    free(longer);
    free(good);
    /* huge dims: overflow, and large-but-representable with little data */
    uint8_t *huge = make_idx(CT_IDX_IMAGES, (uint32_t[]){1u << 31, 1u << 31, 1u << 31}, 3, 10, &size);
    check_bad_images(huge, size, gz, "too large");
    free(huge);
    huge = make_idx(CT_IDX_IMAGES, (uint32_t[]){0xffffffffu, 0xffffffffu, 0xffffffffu}, 3, 10, &size);
    check_bad_images(huge, size, gz, "too large");
    free(huge);
    huge = make_idx(CT_IDX_IMAGES, (uint32_t[]){60000000, 28, 28}, 3, 1000, &size);
    check_bad_images(huge, size, gz,
                     "header promises 60000000 images of 28x28 (47040000000 bytes), file holds 1000 bytes");
    free(huge);
    uint8_t *zero = make_idx(CT_IDX_IMAGES, (uint32_t[]){5, 0, 3}, 3, 0, &size);
    check_bad_images(zero, size, gz, "rows 0");
    free(zero);
  }
  /* a gzip stream cut short, and garbage after a gzip magic */
  {
    const char *dir = tmpdir();
    write_mnist(dir, "train", 50, 28, 28, true, false);
    shorten(dir, "train-images-idx3-ubyte.gz", -1);
    CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, "truncated");
    write_file(dir, "train-images-idx3-ubyte.gz", (const uint8_t *)"\x1f\x8b\x08\x00garbagegarbagegarbage", 24);
    ct_clear_error();
    CHECK(ct_mnist_open(dir, true, NULL) == NULL);
    CHECK(ct_last_error() == CT_ERR_FORMAT);
    CHECK(strstr(ct_last_error_message(), "train-images-idx3-ubyte.gz") != NULL);
    ct_clear_error();
    rmtree(dir);
  }
  /* A gzip stream cut anywhere in its 8-byte trailer (CRC-32, length) holds
   * all the data, yet cannot be verified: refused. A wrong CRC is caught. */
  for (int cut = 1; cut <= 8; cut++) {
    const char *dir = tmpdir();
    write_mnist(dir, "train", 5, 4, 3, false, true);
    shorten(dir, "train-labels-idx1-ubyte.gz", cut);
    CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT,
                  "train-labels-idx1-ubyte.gz: truncated: the gzip stream ends before its trailer");
    rmtree(dir);
  }
  {
    const char *dir = tmpdir();
    write_mnist(dir, "train", 5, 4, 3, false, true);
    char p[512];
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", dir);
    FILE *f = fopen(p, "r+b");
    CHECK(f && fseek(f, -8, SEEK_END) == 0);
    int c = f ? fgetc(f) : 0;
    CHECK(f && fseek(f, -8, SEEK_END) == 0 && fputc(c ^ 1, f) != EOF);
    if (f) fclose(f);
    CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, "corrupt gzip data");
    rmtree(dir);
  }
}

/* A label outside 0..9 is refused when the file is opened (not later, by the
 * loss), naming the file, the first bad index and its value. */
CT_TEST(mnist_rejects_labels_out_of_range) {
  for (int gz = 0; gz < 2; gz++) {
    const char *dir = tmpdir();
    write_mnist(dir, "t10k", 6, 4, 3, false, false);
    size_t size;
    uint8_t *lbl = make_idx(CT_IDX_LABELS, (uint32_t[]){6}, 1, 6, &size);
    const uint8_t labels[6] = {0, 9, 3, 10, 255, 1};
    memcpy(lbl + 8, labels, 6);
    write_file(dir, gz ? "t10k-labels-idx1-ubyte.gz" : "t10k-labels-idx1-ubyte", lbl, size);
    if (gz) {
      char p[512];
      snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
      unlink(p);
    }
    CHECK_ERR_MSG(
        ct_mnist_open(dir, false, NULL), CT_ERR_FORMAT,
        gz ? "t10k-labels-idx1-ubyte.gz: label 3 is 10 (MNIST and Fashion-MNIST have classes 0..9)"
           : "t10k-labels-idx1-ubyte: label 3 is 10");
    free(lbl);
    rmtree(dir);
  }
}

/* Names that are not UTF-8 appear escaped in the readers' messages. */
CT_TEST(reader_messages_escape_names) {
  const char *dir = tmpdir();
  char sub[256];
  snprintf(sub, sizeof sub, "%s/d\xff\x1b", dir);
  CHECK(mkdir(sub, 0700) == 0);
  write_mnist(sub, "train", 5, 4, 3, false, false);
  size_t size;
  uint8_t *lbl = make_idx(CT_IDX_LABELS, (uint32_t[]){5}, 1, 5, &size);
  put_be32(lbl, CT_IDX_IMAGES);
  write_file(sub, "train-labels-idx1-ubyte", lbl, size);
  free(lbl);
  CHECK_ERR_MSG(ct_mnist_open(sub, true, NULL), CT_ERR_FORMAT,
                "d\\xff\\x1b/train-labels-idx1-ubyte: bad magic");
  CHECK_ERR_MSG(ct_mnist_open(sub, false, NULL), CT_ERR_IO,
                "d\\xff\\x1b/t10k-images-idx3-ubyte(.gz) not found");
  CHECK_ERR_MSG(ct_cifar10_open(sub, false, NULL), CT_ERR_IO,
                "d\\xff\\x1b/test_batch.bin not found");
  write_file(sub, "test_batch.bin", (const uint8_t *)"x", 1);
  CHECK_ERR_MSG(ct_cifar10_open(sub, false, NULL), CT_ERR_FORMAT,
                "d\\xff\\x1b/test_batch.bin: size 1 bytes");
  rmtree(sub);
  rmtree(dir);
}

CT_TEST(mnist_count_mismatch_and_missing) {
  const char *dir = tmpdir();
  write_mnist(dir, "train", 5, 4, 3, true, true);
  size_t size;
  uint8_t *lbl = make_idx(CT_IDX_LABELS, (uint32_t[]){4}, 1, 4, &size);
  write_file(dir, "train-labels-idx1-ubyte.gz", lbl, size);
  CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, "holds 5 images but");
  CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, "train-labels-idx1-ubyte.gz holds 4 labels");
  /* a label file with an image magic */
  put_be32(lbl, CT_IDX_IMAGES);
  write_file(dir, "train-labels-idx1-ubyte.gz", lbl, size);
  CHECK_ERR_MSG(ct_mnist_open(dir, true, NULL), CT_ERR_FORMAT, "train-labels-idx1-ubyte.gz: bad magic");
  free(lbl);
  /* the test split is missing */
  CHECK_ERR_MSG(ct_mnist_open(dir, false, NULL), CT_ERR_IO, "t10k-images-idx3-ubyte");
  CHECK_ERR_MSG(ct_mnist_open(dir, false, NULL), CT_ERR_IO, "dataset-fashion-mnist");
  CHECK_ERR_MSG(ct_mnist_open("/nonexistent/dir", true, NULL), CT_ERR_IO, "/usr/share/datasets/fashion-mnist");
  CHECK_ERR(ct_mnist_open(NULL, true, NULL), CT_ERR_ARG);
  rmtree(dir);
}

CT_TEST(idx_parse_buffer) {
  size_t size;
  uint8_t *b = make_idx(CT_IDX_LABELS, (uint32_t[]){3}, 1, 3, &size);
  ct__idx h;
  const uint8_t *data;
  CHECK_STATUS_OK(ct__idx_parse(b, size, "x", CT_IDX_LABELS, &h, &data));
  CHECK(h.ndim == 1 && h.dims[0] == 3 && h.data_bytes == 3 && data == b + 8);
  CHECK_ERR_MSG(ct__idx_parse(b, size, "x", CT_IDX_IMAGES, &h, &data) == CT_OK, CT_ERR_FORMAT, "x: bad magic");
  CHECK_ERR_MSG(ct__idx_parse(b, size - 1, "x", CT_IDX_LABELS, &h, &data) == CT_OK, CT_ERR_FORMAT, "truncated");
  CHECK_ERR_MSG(ct__idx_parse(b, 3, "x", CT_IDX_LABELS, &h, &data) == CT_OK, CT_ERR_FORMAT, "truncated header");
  CHECK_ERR_MSG(ct__idx_parse(b, 0, "x", CT_IDX_LABELS, &h, &data) == CT_OK, CT_ERR_FORMAT, "truncated header");
  /* NULL where the parsers write, or a magic of neither kind: argument errors, no crash. */
  CHECK_ERR(ct__idx_parse(b, size, "x", CT_IDX_LABELS, NULL, &data) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__idx_parse(b, size, "x", CT_IDX_LABELS, &h, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__idx_parse(NULL, size, "x", CT_IDX_LABELS, &h, &data) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__idx_parse_header(b, size, "x", 0x1234, &h) == CT_OK, CT_ERR_ARG);
  uint8_t *out;
  CHECK_ERR(ct__idx_read_file("/nonexistent", CT_IDX_LABELS, NULL, &out) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__idx_read_file("/nonexistent", CT_IDX_LABELS, &h, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__idx_read_file(NULL, CT_IDX_LABELS, &h, &out) == CT_OK, CT_ERR_ARG);
  free(b);
}

/* ---- CIFAR-10 --------------------------------------------------------------------- */

enum { REC = 3073, RECS = 10000 };

static uint8_t *make_cifar(void) {
  uint8_t *b = malloc((size_t)REC * RECS);
  for (size_t i = 0; i < RECS; i++) {
    b[i * REC] = (uint8_t)(i % 10);
    for (size_t k = 0; k < 3072; k++) b[i * REC + 1 + k] = (uint8_t)(i + k * 3);
  }
  return b;
}

CT_TEST(cifar_reads_batches) {
  const char *dir = tmpdir();
  uint8_t *b = make_cifar();
  write_file(dir, "test_batch.bin", b, (size_t)REC * RECS);
  ct_dataset *te = ct_cifar10_open(dir, false, NULL);
  CHECK_OK(te);
  if (te) {
    CHECK(ct_dataset_length(te) == 10000);
    ct_sample s;
    CHECK_STATUS_OK(ct_dataset_get(te, 1234, &s));
    CHECK_SHAPE(s.input, 3, 32, 32);
    CHECK(val(s.target, 0) == 4);
    double *v = ct_test_values(s.input);
    CHECK(fabs(v[0] - (uint8_t)1234 / 255.0) < 1e-6);
    CHECK(fabs(v[2000] - (uint8_t)(1234 + 2000 * 3) / 255.0) < 1e-6);
    free(v);
  }
  ct_dataset_free(te);
  /* train: five batch files (links to the same bytes) */
  CHECK_ERR_MSG(ct_cifar10_open(dir, true, NULL), CT_ERR_IO, "data_batch_1.bin not found");
  CHECK_ERR_MSG(ct_cifar10_open(dir, true, NULL), CT_ERR_IO, "https://www.cs.toronto.edu/~kriz/cifar.html");
  char src[512], dst[512];
  snprintf(src, sizeof src, "%s/test_batch.bin", dir);
  for (int i = 1; i <= 5; i++) {
    snprintf(dst, sizeof dst, "%s/data_batch_%d.bin", dir, i);
    CHECK(symlink(src, dst) == 0);
  }
  ct_dataset *tr = ct_cifar10_open(dir, true, NULL);
  CHECK_OK(tr);
  if (tr) {
    CHECK(ct_dataset_length(tr) == 50000);
    ct_sample s;
    CHECK_STATUS_OK(ct_dataset_get(tr, 41234, &s));
    CHECK(val(s.target, 0) == 4);
    CHECK(fabs(val(s.input, 0) - (uint8_t)1234 / 255.0) < 1e-6);
  }
  ct_dataset_free(tr);
  free(b);
  rmtree(dir);
}

CT_TEST(cifar_rejects_bad_files) {
  const char *dir = tmpdir();
  uint8_t *b = make_cifar();
  write_file(dir, "test_batch.bin", b, (size_t)REC * 2 + 5);
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, NULL), CT_ERR_FORMAT, "not a whole number of 3073-byte records");
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, NULL), CT_ERR_FORMAT, "test_batch.bin");
  write_file(dir, "test_batch.bin", b, (size_t)REC * 2);
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, NULL), CT_ERR_FORMAT, "test_batch.bin: holds 2 records");
  write_file(dir, "test_batch.bin", b, 0);
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, NULL), CT_ERR_FORMAT, "holds 0 records");
  b[(size_t)1234 * REC] = 10;
  write_file(dir, "test_batch.bin", b, (size_t)REC * RECS);
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, NULL), CT_ERR_FORMAT, "test_batch.bin: record 1234 has label 10");
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, &(ct_transform_opts){.random_crop = 40}), CT_ERR_FORMAT,
                "record 1234");
  b[(size_t)1234 * REC] = 3;
  write_file(dir, "test_batch.bin", b, (size_t)REC * RECS);
  CHECK_ERR_MSG(ct_cifar10_open(dir, false, &(ct_transform_opts){.random_crop = 40}), CT_ERR_ARG,
                "random_crop 40");
  CHECK_ERR(ct_cifar10_open(NULL, false, NULL), CT_ERR_ARG);
  /* The batch reader with a small record count (the fuzz target's), and NULLs. */
  write_file(dir, "small.bin", b, (size_t)REC * 3);
  char p[512];
  snprintf(p, sizeof p, "%s/small.bin", dir);
  uint8_t px[3 * 3072], lb[3];
  CHECK_STATUS_OK(ct__cifar_read_batch(p, 3, px, lb));
  CHECK(lb[0] == 0 && lb[1] == 1 && lb[2] == 2 && px[3072] == 1);
  CHECK_ERR_MSG(ct__cifar_read_batch(p, 2, px, lb) == CT_OK, CT_ERR_FORMAT, "holds 3 records");
  CHECK_ERR(ct__cifar_read_batch(p, 3, NULL, lb) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__cifar_read_batch(p, 3, px, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__cifar_read_batch(p, 0, px, lb) == CT_OK, CT_ERR_ARG);
  free(b);
  rmtree(dir);
}

/* ---- Transforms ------------------------------------------------------------------- */

CT_TEST(transforms_normalize_crop_flip) {
  const char *dir = tmpdir();
  write_mnist(dir, "train", 20, 6, 5, true, true);
  /* normalize */
  ct_dataset *d = ct_mnist_open(dir, true, &(ct_transform_opts){.normalize = true, .mean = {0.5}, .std = {0.25}});
  CHECK_OK(d);
  ct_sample s;
  if (d) {
    CHECK_STATUS_OK(ct_dataset_get(d, 3, &s));
    double want[30];
    for (int k = 0; k < 30; k++) want[k] = ((uint8_t)((3 * 30 + k) * 7 + 3) / 255.0 - 0.5) / 0.25;
    CHECK_CLOSE(s.input, want, 1e-5, 1e-5);
  }
  ct_dataset_free(d);
  CHECK_ERR_MSG(ct_mnist_open(dir, true, &(ct_transform_opts){.normalize = true, .std = {0}}), CT_ERR_ARG, "std");
  CHECK_ERR(ct_mnist_open(dir, true, &(ct_transform_opts){.crop_padding = 2}), CT_ERR_ARG);

  /* crop with padding + flip: the result is a (possibly mirrored) window of
   * the zero-padded image; same (seed, epoch, index) -> same result */
  ct_transform_opts tf = {.random_crop = 4, .crop_padding = 2, .random_hflip = true, .seed = 7};
  d = ct_mnist_open(dir, true, &tf);
  CHECK_OK(d);
  if (!d) return;
  int changed = 0, flipped = 0, unflipped = 0;
  for (int64_t i = 0; i < 20; i++) {
    ct_dataset_set_epoch(d, 0);
    ct_sample a, b, c;
    CHECK_STATUS_OK(ct_dataset_get(d, i, &a));
    CHECK_STATUS_OK(ct_dataset_get(d, i, &b));
    ct_dataset_set_epoch(d, 1);
    CHECK_STATUS_OK(ct_dataset_get(d, i, &c));
    CHECK_SHAPE(a.input, 1, 4, 4);
    double *va = ct_test_values(a.input), *vb = ct_test_values(b.input), *vc = ct_test_values(c.input);
    CHECK(memcmp(va, vb, 16 * sizeof(double)) == 0);
    changed += memcmp(va, vc, 16 * sizeof(double)) != 0;
    /* find the window: padded image P (10 x 9), out[y][x] = P[y+oy][ox + (f ? 3-x : x)] */
    int matches = 0;
    for (int f = 0; f < 2; f++)
      for (int oy = 0; oy <= 6; oy++)
        for (int ox = 0; ox <= 5; ox++) {
          bool ok = true;
          for (int y = 0; y < 4 && ok; y++)
            for (int x = 0; x < 4 && ok; x++) {
              int sy = oy + y - 2, sx = ox + (f ? 3 - x : x) - 2;
              double p = (sy >= 0 && sy < 6 && sx >= 0 && sx < 5)
                             ? (uint8_t)((i * 30 + sy * 5 + sx) * 7 + 3) / 255.0 : 0.0;
              ok = fabs(va[y * 4 + x] - p) < 1e-6;
            }
          if (ok) {
            matches++;
            if (f) flipped++; else unflipped++;
          }
        }
    CHECK_MSG(matches >= 1, "sample %lld is no window of the padded image", (long long)i);
    free(va), free(vb), free(vc);
  }
  CHECK(changed >= 10); /* a new epoch changes (most) crops */
  CHECK(flipped > 0 && unflipped > 0);
  ct_dataset_free(d);
  rmtree(dir);
}

/* ---- Tensor dataset ---------------------------------------------------------------- */

CT_TEST(tensor_dataset_rows) {
  ct_tensor *x = ct_reshape(ct_arange(0, 30, 1, NULL), CT_SHAPE(10, 3));
  ct_tensor *y = ct_arange(0, 10, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  CHECK_OK(d);
  CHECK(ct_dataset_length(d) == 10);
  ct_sample s;
  CHECK_STATUS_OK(ct_dataset_get(d, 4, &s));
  CHECK_CLOSE(s.input, ((double[]){12, 13, 14}), 0, 0);
  CHECK(val(s.target, 0) == 4);
  ct_dataset_free(d);
  CHECK_ERR(ct_tensor_dataset_new(x, ct_arange(0, 9, 1, NULL)), CT_ERR_SHAPE);
  CHECK_ERR(ct_tensor_dataset_new(x, ct_scalar(1, NULL)), CT_ERR_SHAPE);
  /* non-contiguous inputs go through the loader correctly */
  ct_tensor *xt = ct_transpose(ct_reshape(ct_arange(0, 30, 1, NULL), CT_SHAPE(3, 10)), 0, 1); /* (10, 3) */
  d = ct_tensor_dataset_new(xt, y);
  ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 4, .num_workers = 1});
  ct_batch b;
  CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
  CHECK_SHAPE(b.inputs, 4, 3);
  CHECK_CLOSE(b.inputs, ((double[]){0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23}), 0, 0);
  ct_batch_release(&b);
  ct_batch_release(&b); /* twice: a no-op */
  ct_dataloader_free(dl);
  ct_dataset_free(d);
}

/* ---- Data loader ------------------------------------------------------------------- */

/* A user dataset: input (2) f32 = {i, -i}, target i64 = i; get fails with
 * CT_ERR_IO at fail_at, and returns a wrong shape at bad_shape_at. */
typedef struct user_ds {
  int64_t n, fail_at, bad_shape_at;
} user_ds;
static int64_t user_len(void *self) { return ((user_ds *)self)->n; }
static ct_status user_get(void *self, int64_t i, ct_sample *out) {
  user_ds *u = self;
  if (i == u->fail_at) return ct__fail_status(CT_ERR_IO, "user dataset: disk on fire at %lld", (long long)i);
  float v[3] = {(float)i, (float)-i, 0};
  out->input = ct_from_data(v, CT_SHAPE(i == u->bad_shape_at ? 3 : 2), NULL);
  out->target = ct_scalar((double)i, &(ct_tensor_opts){.dtype = CT_I64});
  return CT_OK;
}
static const ct_dataset_vtable user_vt = {.length = user_len, .get = user_get};

/* The targets of a whole epoch, in delivery order (n entries), checking shapes. */
static int64_t *epoch_targets(ct_dataloader *dl, int64_t n, int64_t epoch, int64_t skip) {
  int64_t *out = calloc((size_t)n + 1, sizeof *out), k = 0;
  CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, epoch, skip));
  ct_batch b;
  int64_t expect_index = skip;
  while (ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
    CHECK(b.index == expect_index++);
    CHECK(b.wait_seconds >= 0);
    double *v = ct_test_values(b.targets);
    for (int64_t i = 0; i < ct_numel(b.targets) && k < n; i++) out[k++] = (int64_t)v[i];
    free(v);
    ct_batch_release(&b);
  }
  CHECK(b.inputs == NULL && b.targets == NULL);
  out[n] = k; /* count in the extra slot */
  return out;
}

CT_TEST(dataloader_batches_and_order) {
  ct_tensor *x = ct_reshape(ct_arange(0, 20, 1, NULL), CT_SHAPE(10, 2));
  ct_tensor *y = ct_arange(0, 10, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  for (int w = 0; w < 3; w++) {
    ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 4, .num_workers = w});
    CHECK(ct_dataloader_num_batches(dl) == 3);
    ct_batch b;
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b)); /* starts epoch 0 */
    CHECK_SHAPE(b.inputs, 4, 2);
    CHECK_SHAPE(b.targets, 4);
    CHECK(ct_dtype_of(b.targets) == CT_I64);
    CHECK_CLOSE(b.inputs, ((double[]){0, 1, 2, 3, 4, 5, 6, 7}), 0, 0);
    ct_batch_release(&b);
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
    ct_batch_release(&b);
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b)); /* the last, partial batch */
    CHECK_SHAPE(b.inputs, 2, 2);
    CHECK_CLOSE(b.targets, ((double[]){8, 9}), 0, 0);
    ct_batch_release(&b);
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
    CHECK(b.inputs == NULL && b.targets == NULL);
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
    CHECK(b.inputs == NULL);
    ct_dataloader_free(dl);

    dl = ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 4, .drop_last = true, .num_workers = w});
    CHECK(ct_dataloader_num_batches(dl) == 2);
    int64_t *t = epoch_targets(dl, 10, 0, 0);
    CHECK(t[10] == 8);
    for (int i = 0; i < 8; i++) CHECK(t[i] == i);
    free(t);
    ct_dataloader_free(dl);
  }
  CHECK_ERR(ct_dataloader_new(NULL, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = -1}), CT_ERR_ARG);
  CHECK_ERR(ct_dataloader_new(d, &(ct_dataloader_opts){.num_workers = -2}), CT_ERR_ARG);
  ct_dataloader *dl = ct_dataloader_new(d, NULL); /* batch_size 0 means 1 */
  CHECK(ct_dataloader_num_batches(dl) == 10);
  CHECK_ERR(ct_dataloader_start_epoch(dl, 0, 11) == CT_OK, CT_ERR_ARG);
  ct_dataloader_free(dl);
  ct_dataloader_free(NULL);
  ct_dataset_free(d);
}

/* Inputs of every batch of one epoch, on the host, concatenated. */
static double *epoch_inputs(ct_dataloader *dl, int64_t epoch, int64_t skip, int64_t *count,
                            ct_device expect) {
  CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, epoch, skip));
  double *all = NULL;
  int64_t k = 0, index = skip;
  ct_batch b;
  while (ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
    CHECK(b.index == index++ && b.wait_seconds >= 0);
    CHECK(ct_device_equal(ct_device_of(b.inputs), expect));
    CHECK(ct_device_equal(ct_device_of(b.targets), expect));
    ct_scope_begin();
    /* use the batch on the caller's stream, as a training step does */
    ct_tensor *s = ct_add(ct_mul_scalar(b.inputs, 2), ct_unsqueeze(ct_cast(b.targets, CT_F32), 1));
    double *v = ct_test_values(s);
    ct_scope_end();
    int64_t n = ct_numel(b.inputs);
    all = realloc(all, sizeof(double) * (size_t)(k + n));
    memcpy(all + k, v, sizeof(double) * (size_t)n);
    free(v);
    k += n;
    ct_batch_release(&b);
  }
  *count = k;
  return all;
}

/* Batches delivered on a GPU are the CPU loader's, bit for bit, with workers,
 * restarts mid-epoch and a side stream current; without a GPU, asking for
 * one is CT_ERR_UNAVAILABLE. */
CT_TEST(dataloader_delivers_on_gpu) {
  const int64_t n = 1001;
  ct_manual_seed(3);
  ct_tensor *x = ct_rand(CT_SHAPE(n, 3), NULL);
  ct_tensor *y = ct_arange(0, (double)n, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  ct_dataloader_opts o = {.batch_size = 64, .shuffle = true, .seed = 9, .num_workers = 2};
  if (!ct_cuda_is_available()) {
    o.device = ct_cuda(0);
    CHECK_ERR(ct_dataloader_new(d, &o), CT_ERR_UNAVAILABLE);
    ct_dataset_free(d);
    ct_free(y);
    ct_free(x);
    ct_test_skip("no CUDA device: the GPU delivery was not exercised");
    return;
  }
  ct_dataloader *cpu = ct_dataloader_new(d, &o);
  o.device = ct_cuda(0);
  ct_dataloader *gpu = ct_dataloader_new(d, &o);
  ct_stream *side = ct_stream_new(ct_cuda(0));
  for (int round = 0; round < 3; round++) {
    /* round 1: a user stream is current; round 2: a restart 5 batches in */
    if (round == 1) CHECK_STATUS_OK(ct_stream_set_current(ct_cuda(0), side));
    int64_t skip = round == 2 ? 5 : 0, nc = 0, ng = 0;
    if (round == 2) { /* leave a staged copy in flight, then restart */
      ct_batch b;
      CHECK_STATUS_OK(ct_dataloader_start_epoch(gpu, 7, 0));
      CHECK_STATUS_OK(ct_dataloader_next(gpu, &b));
      ct_batch_release(&b);
    }
    double *a = epoch_inputs(cpu, round, skip, &nc, ct_cpu());
    double *g = epoch_inputs(gpu, round, skip, &ng, ct_cuda(0));
    CHECK(nc == ng && nc == (n - skip * 64) * 3);
    CHECK(a && g && memcmp(a, g, sizeof(double) * (size_t)nc) == 0);
    free(a);
    free(g);
  }
  CHECK_STATUS_OK(ct_stream_set_current(ct_cuda(0), NULL));
  /* A kernel's fault pending while the loader restarts and is freed with a
   * staged batch still copying: the loader must not take the report (it is
   * made once, to whoever synchronizes first). */
  ct_batch b;
  ct_tensor *bad = ct_from_data(((int64_t[]){7}), CT_SHAPE(1), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_cuda(0)});
  ct_tensor *xg = ct_to(x, ct_cuda(0), NULL);
  ct_tensor *g = ct_index_select(xg, 1, bad); /* x has 3 columns */
  CHECK_OK(g);
  CHECK_STATUS_OK(ct_dataloader_start_epoch(gpu, 0, 0));
  CHECK_STATUS_OK(ct_dataloader_next(gpu, &b));
  ct_batch_release(&b);
  CHECK_STATUS_OK(ct_dataloader_start_epoch(gpu, 1, 0));
  CHECK_STATUS_OK(ct_dataloader_next(gpu, &b));
  CHECK(b.index == 0);
  ct_batch_release(&b);
  ct_dataloader_free(gpu);
  CHECK_ERR_MSG(ct_synchronize(ct_cuda(0)) == CT_OK, CT_ERR_ARG, "index_select: index 7 is out of bounds");
  ct_free(g);
  ct_free(xg);
  ct_free(bad);
  ct_dataloader_free(cpu);
  CHECK_STATUS_OK(ct_synchronize(ct_cuda(0)));
  ct_stream_free(side);
  ct_dataset_free(d);
  ct_free(y);
  ct_free(x);
}

CT_TEST(dataloader_shuffle_is_deterministic) {
  const int64_t n = 1001;
  ct_tensor *x = ct_zeros(CT_SHAPE(n, 3), NULL);
  ct_tensor *y = ct_arange(0, (double)n, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *td = ct_tensor_dataset_new(x, y);
  user_ds u = {.n = n, .fail_at = -1, .bad_shape_at = -1};
  ct_dataset *ud = ct_dataset_new(&user_vt, &u);
  int64_t *ref0 = NULL, *ref1 = NULL;
  const int workers[] = {0, 1, 3};
  for (int di = 0; di < 2; di++)
    for (int wi = 0; wi < 3; wi++) {
      ct_dataloader *dl = ct_dataloader_new(di ? ud : td, &(ct_dataloader_opts){
          .batch_size = 32, .shuffle = true, .seed = 1234, .num_workers = workers[wi], .prefetch = 1 + wi});
      int64_t *e0 = epoch_targets(dl, n, 0, 0), *e1 = epoch_targets(dl, n, 1, 0);
      CHECK(e0[n] == n && e1[n] == n);
      if (!ref0) {
        ref0 = e0, ref1 = e1;
        /* a permutation, shuffled, and another one next epoch */
        char *seen = calloc((size_t)n, 1);
        int64_t in_place = 0;
        for (int64_t i = 0; i < n; i++) {
          CHECK(ref0[i] >= 0 && ref0[i] < n && !seen[ref0[i]]);
          if (ref0[i] >= 0 && ref0[i] < n) seen[ref0[i]] = 1;
          in_place += ref0[i] == i;
        }
        free(seen);
        CHECK(in_place < 20);
        CHECK(memcmp(ref0, ref1, sizeof(int64_t) * (size_t)n) != 0);
        ct_dataloader_free(dl);
        continue;
      }
      CHECK_MSG(memcmp(e0, ref0, sizeof(int64_t) * (size_t)n) == 0, "epoch 0 order differs (dataset %d, %d workers)", di, workers[wi]);
      CHECK_MSG(memcmp(e1, ref1, sizeof(int64_t) * (size_t)n) == 0, "epoch 1 order differs (dataset %d, %d workers)", di, workers[wi]);
      /* epoch 0 again: same as the first time */
      int64_t *again = epoch_targets(dl, n, 0, 0);
      CHECK(memcmp(again, ref0, sizeof(int64_t) * (size_t)n) == 0);
      free(again);
      /* resume: skip 5 batches of epoch 1 */
      int64_t *tail = epoch_targets(dl, n, 1, 5);
      CHECK(tail[n] == n - 5 * 32);
      CHECK(memcmp(tail, ref1 + 5 * 32, sizeof(int64_t) * (size_t)(n - 5 * 32)) == 0);
      free(tail);
      free(e0);
      free(e1);
      ct_dataloader_free(dl);
    }
  /* a different seed gives a different order */
  ct_dataloader *other = ct_dataloader_new(td, &(ct_dataloader_opts){.batch_size = 32, .shuffle = true, .seed = 1235});
  int64_t *o = epoch_targets(other, n, 0, 0);
  CHECK(memcmp(o, ref0, sizeof(int64_t) * (size_t)n) != 0);
  free(o);
  ct_dataloader_free(other);
  free(ref0);
  free(ref1);
  ct_dataset_free(td);
  ct_dataset_free(ud);
}

CT_TEST(dataloader_free_mid_epoch) {
  const char *dir = tmpdir();
  write_mnist(dir, "train", 500, 28, 28, true, true);
  ct_dataset *d = ct_mnist_open(dir, true, &(ct_transform_opts){.random_crop = 24, .random_hflip = true});
  CHECK_OK(d);
  for (int rep = 0; rep < 20; rep++) {
    ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){
        .batch_size = 7, .shuffle = true, .seed = (uint64_t)rep, .num_workers = 1 + rep % 4, .prefetch = 1 + rep % 3});
    CHECK_OK(dl);
    ct_batch b;
    for (int k = 0; k < rep % 5; k++) {
      CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
      CHECK_SHAPE(b.inputs, 7, 1, 24, 24);
      if (k == 1) {
        ct_scope_begin(); /* release inside a scope works too */
        ct_batch_release(&b);
        ct_scope_end();
      }
      ct_batch_release(&b);
    }
    if (rep % 3 == 0) CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, 3, 0)); /* restart mid-epoch */
    if (rep % 3 == 1) {
      CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
      ct_dataloader_free(dl); /* the batch outlives the loader */
      CHECK(ct_numel(b.targets) == 7);
      ct_batch_release(&b);
      continue;
    }
    ct_dataloader_free(dl);
  }
  /* a loader that never started, with workers */
  ct_dataloader_free(ct_dataloader_new(d, &(ct_dataloader_opts){.num_workers = 4}));
  /* pin_memory without a GPU: warns and does not pin */
  if (!ct_cuda_is_available()) {
    ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 10, .pin_memory = true});
    ct_batch b;
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
    CHECK(b.inputs && !ct_is_pinned(b.inputs));
    ct_batch_release(&b);
    ct_dataloader_free(dl);
  }
  ct_dataset_free(d);
  rmtree(dir);
}

/* With a GPU device too: a batch whose build fails while it is being staged
 * (one call ahead) is reported by the call that would have returned it. */
CT_TEST(dataloader_worker_errors_propagate) {
  for (int w = 0; w < 6; w++) {
    if (w >= 3 && !ct_cuda_is_available()) break;
    user_ds u = {.n = 40, .fail_at = 13, .bad_shape_at = 33};
    ct_dataset *d = ct_dataset_new(&user_vt, &u);
    ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){
        .batch_size = 5, .num_workers = w % 3, .device = w >= 3 ? ct_cuda(0) : ct_cpu()});
    CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, 0, 0));
    ct_batch b;
    for (int k = 0; k < 8; k++) {
      ct_clear_error();
      ct_status st = ct_dataloader_next(dl, &b);
      if (k == 2) {
        CHECK(st == CT_ERR_IO && b.inputs == NULL);
        CHECK(strstr(ct_last_error_message(), "disk on fire at 13") != NULL);
      } else if (k == 6) {
        CHECK(st == CT_ERR_SHAPE && b.inputs == NULL);
        CHECK_MSG(strstr(ct_last_error_message(), "dataset index 33") != NULL, "%s", ct_last_error_message());
      } else {
        CHECK_STATUS_OK(st);
        CHECK_SHAPE(b.inputs, 5, 2);
        CHECK(b.index == k);
        if (b.inputs) CHECK(val(b.inputs, 2) == 5 * k + 1 && val(b.inputs, 3) == -(5 * k + 1));
        ct_batch_release(&b);
      }
    }
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
    CHECK(b.inputs == NULL);
    ct_dataloader_free(dl);
    ct_dataset_free(d);
  }
  CHECK_ERR(ct_dataset_new(NULL, NULL), CT_ERR_ARG);
}

/* ---- The real Fashion-MNIST (Debian's dataset-fashion-mnist) ------------------------- */

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

CT_TEST(fashion_mnist_real) {
  if (access(FASHION_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
    ct_test_skip("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  ct_dataset *tr = ct_mnist_open(FASHION_DIR, true, NULL);
  ct_dataset *te = ct_mnist_open(FASHION_DIR, false, NULL);
  CHECK_OK(tr);
  CHECK_OK(te);
  if (!tr || !te) return;
  CHECK(ct_dataset_length(tr) == 60000);
  CHECK(ct_dataset_length(te) == 10000);
  /* one epoch through the loader: labels 0..9, 6000 of each */
  ct_dataloader *dl = ct_dataloader_new(tr, &(ct_dataloader_opts){
      .batch_size = 64, .shuffle = true, .seed = 1, .num_workers = 2});
  CHECK(ct_dataloader_num_batches(dl) == 938);
  int64_t counts[10] = {0}, bad = 0, batches = 0;
  double wait = 0, lo = 1e9, hi = -1e9;
  struct timespec ts0, ts1;
  clock_gettime(CLOCK_MONOTONIC, &ts0);
  ct_batch b;
  CHECK_STATUS_OK(ct_dataloader_start_epoch(dl, 0, 0));
  while (ct_dataloader_next(dl, &b) == CT_OK && b.inputs) {
    const int64_t *y = ct_data_ptr(b.targets);
    const float *x = ct_data_ptr(b.inputs);
    for (int64_t i = 0; i < ct_numel(b.targets); i++) {
      if (y[i] < 0 || y[i] > 9) bad++;
      else counts[y[i]]++;
    }
    for (int64_t i = 0; i < ct_numel(b.inputs); i += 97) {
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
    }
    wait += b.wait_seconds;
    batches++;
    ct_batch_release(&b);
  }
  clock_gettime(CLOCK_MONOTONIC, &ts1);
  double secs = (double)(ts1.tv_sec - ts0.tv_sec) + 1e-9 * (double)(ts1.tv_nsec - ts0.tv_nsec);
  printf("fashion-mnist epoch, batch 64, 2 workers, no model: %lld batches in %.3f s "
         "(%.0f batches/s), waited %.3f s\n", (long long)batches, secs, (double)batches / secs, wait);
  CHECK(batches == 938 && bad == 0);
  for (int k = 0; k < 10; k++) CHECK(counts[k] == 6000);
  CHECK(lo >= 0 && hi <= 1 && hi > 0.9);
  ct_dataloader_free(dl);
  ct_dataset_free(tr);
  ct_dataset_free(te);
}
