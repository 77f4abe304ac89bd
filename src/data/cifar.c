/* CIFAR-10 binary batches: data_batch_1.bin .. data_batch_5.bin (train) or
 * test_batch.bin, each exactly 10000 records of 1 label byte (0..9) and 3072
 * pixel bytes (3 planes of 32x32, row-major). All files are read once into
 * one pixel buffer (n, 3, 32, 32) and one label buffer. Messages name the
 * file, escaped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "data/data_internal.h"
#include "io/io_internal.h"

enum { RECORD = 3073, PIXELS = 3072, PER_FILE = 10000, BLOCK = 500 /* records per fread */ };

static const char *const train_files[] = {"data_batch_1.bin", "data_batch_2.bin",
                                          "data_batch_3.bin", "data_batch_4.bin",
                                          "data_batch_5.bin"};
static const char *const test_files[] = {"test_batch.bin"};

ct_status ct__cifar_read_batch(const char *path, int64_t records, uint8_t *pixels,
                               uint8_t *labels) {
  if (!path || !pixels || !labels || records < 1 || records > PER_FILE)
    return ct__fail_status(CT_ERR_ARG,
                           "cifar_read_batch: path, pixels and labels must not be NULL "
                           "and records (%lld) in 1..%d",
                           (long long)records, PER_FILE);
  char name[CT_NAME_MSG];
  ct_escape_name(path, name, sizeof name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT)
      return ct__fail_status(CT_ERR_IO,
                             "cifar10_open: %s not found: download the binary version from "
                             "https://www.cs.toronto.edu/~kriz/cifar.html and extract "
                             "cifar-10-batches-bin (pass that folder)",
                             name);
    return ct__fail_status(CT_ERR_IO, "cifar10_open: cannot open %s: %s", name, strerror(errno));
  }
  uint8_t *block = ct__malloc((size_t)RECORD * BLOCK);
  ct_status st = CT_OK;
  struct stat sb;
  if (!block) {
    st = ct__fail_status(CT_ERR_OOM, "cifar10_open: out of host memory");
  } else if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = ct__fail_status(CT_ERR_IO, "cifar10_open: %s is not a regular file", name);
  } else if (sb.st_size % RECORD != 0) {
    st = ct__fail_status(CT_ERR_FORMAT,
                         "%s: size %lld bytes is not a whole number of 3073-byte records "
                         "(1 label + 3072 pixels); truncated or not a CIFAR-10 binary batch",
                         name, (long long)sb.st_size);
  } else if (sb.st_size / RECORD != records) {
    st = ct__fail_status(CT_ERR_FORMAT, "%s: holds %lld records, a CIFAR-10 batch file holds %lld",
                         name, (long long)(sb.st_size / RECORD), (long long)records);
  }
  for (int64_t r0 = 0; r0 < records && st == CT_OK; r0 += BLOCK) {
    size_t want = (size_t)(records - r0 < BLOCK ? records - r0 : BLOCK);
    if (fread(block, RECORD, want, f) != want) {
      st = ct__fail_status(ferror(f) ? CT_ERR_IO : CT_ERR_FORMAT,
                           "%s: read failed at record %lld (file changed while reading?)", name,
                           (long long)r0);
      break;
    }
    for (size_t i = 0; i < want && st == CT_OK; i++) {
      const uint8_t *rec = block + i * RECORD;
      if (rec[0] > 9)
        st = ct__fail_status(CT_ERR_FORMAT,
                             "%s: record %lld has label %d (CIFAR-10 labels are 0..9)", name,
                             (long long)r0 + (long long)i, rec[0]);
      labels[r0 + (int64_t)i] = rec[0];
      memcpy(pixels + (size_t)(r0 + (int64_t)i) * PIXELS, rec + 1, PIXELS);
    }
  }
  free(block);
  fclose(f);
  return st;
}

ct_dataset *ct_cifar10_open(const char *dir, bool train, const ct_transform_opts *transforms) {
  if (!dir) return ct__fail(CT_ERR_ARG, "cifar10_open: dir is NULL");
  const char *const *files = train ? train_files : test_files;
  const int nfiles = train ? 5 : 1;
  ct__image_store s = {.n = (int64_t)nfiles * PER_FILE, .c = 3, .h = 32, .w = 32};
  size_t path_len = strlen(dir) + 32;
  char *path = ct__malloc(path_len);
  s.pixels = ct__malloc((size_t)s.n * PIXELS);
  s.labels = ct__malloc((size_t)s.n);
  ct_dataset *d = NULL;
  if (!path || !s.pixels || !s.labels) {
    ct__fail(CT_ERR_OOM, "cifar10_open: out of host memory");
    goto done;
  }
  for (int i = 0; i < nfiles; i++) {
    snprintf(path, path_len, "%s/%s", dir, files[i]);
    if (ct__cifar_read_batch(path, PER_FILE, s.pixels + (size_t)i * PER_FILE * PIXELS,
                             s.labels + (size_t)i * PER_FILE) != CT_OK)
      goto done;
  }
  if (ct__image_store_init_transforms(&s, transforms, "cifar10_open") != CT_OK) goto done;
  d = ct__image_dataset_new(&s);
  s.pixels = s.labels = NULL; /* owned by d now (or freed) */
done:
  free(s.pixels);
  free(s.labels);
  free(path);
  return d;
}
