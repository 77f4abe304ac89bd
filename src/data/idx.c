/* MNIST / Fashion-MNIST: the IDX reader (gzip or raw, through zlib, which
 * reads uncompressed files transparently) and ct_mnist_open. Every header
 * field is validated and the data size computed with overflow checks before
 * anything is allocated; the buffer then grows with the bytes actually read,
 * so a header that lies about its size costs no more memory than the file. A
 * gzip stream must end with its trailer (whose CRC-32 zlib checks), and every
 * label must be a class (0..9). Messages name the file, escaped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data/data_internal.h"
#include "data/idx.h"
#include "io/io_internal.h"

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* "60000 images of 28x28" or "60000 labels" */
static const char *describe(const ct__idx *h, char *buf, size_t size) {
  if (h->ndim == 3)
    snprintf(buf, size, "%lld images of %lldx%lld", (long long)h->dims[0], (long long)h->dims[1],
             (long long)h->dims[2]);
  else
    snprintf(buf, size, "%lld labels", (long long)h->dims[0]);
  return buf;
}

ct_status ct__idx_parse_header(const uint8_t *buf, size_t size, const char *name, uint32_t magic,
                               ct__idx *out) {
  if (!out || (!buf && size) || !name || (magic != CT_IDX_IMAGES && magic != CT_IDX_LABELS))
    return ct__fail_status(CT_ERR_ARG,
                           "idx_parse_header: out, buf (%zu bytes) and name must not be "
                           "NULL and magic 0x%08x must be 0x%08x or 0x%08x",
                           size, magic, CT_IDX_IMAGES, CT_IDX_LABELS);
  const int ndim = magic == CT_IDX_IMAGES ? 3 : 1;
  const char *kind = ndim == 3 ? "image" : "label";
  *out = (ct__idx){.ndim = ndim, .header_bytes = 4 + 4 * (size_t)ndim};
  if (size < 4)
    return ct__fail_status(CT_ERR_FORMAT,
                           "%s: truncated header: %zu bytes, an IDX file starts with "
                           "a 4-byte magic number",
                           name, size);
  uint32_t m = be32(buf);
  if (m != magic)
    return ct__fail_status(CT_ERR_FORMAT,
                           "%s: bad magic number 0x%08x (an IDX %s file starts with 0x%08x: "
                           "unsigned bytes, %d dim%s)",
                           name, m, kind, magic, ndim, ndim > 1 ? "s" : "");
  if (size < out->header_bytes)
    return ct__fail_status(CT_ERR_FORMAT,
                           "%s: truncated header: %zu bytes, an IDX %s header has %zu", name, size,
                           kind, out->header_bytes);
  uint64_t total = 1;
  bool overflow = false;
  for (int d = 0; d < ndim; d++) {
    out->dims[d] = be32(buf + 4 + 4 * d);
    if (d > 0 && out->dims[d] == 0)
      return ct__fail_status(CT_ERR_FORMAT, "%s: header gives %s %lld (must be > 0)", name,
                             d == 1 ? "rows" : "cols", (long long)out->dims[d]);
    overflow |= __builtin_mul_overflow(total, (uint64_t)out->dims[d], &total);
  }
  char what[96];
  /* Sizes beyond 2^48 bytes are no real file: refuse them as hostile too. */
  if (overflow || total > ((uint64_t)1 << 48))
    return ct__fail_status(CT_ERR_FORMAT, "%s: header promises %s: too large to be a real file",
                           name, describe(out, what, sizeof what));
  out->data_bytes = (size_t)total;
  return CT_OK;
}

static ct_status truncated(const char *name, const ct__idx *h, size_t holds) {
  char what[96];
  return ct__fail_status(CT_ERR_FORMAT,
                         "%s: truncated: header promises %s (%zu bytes), file holds %zu bytes "
                         "after the %zu-byte header",
                         name, describe(h, what, sizeof what), h->data_bytes, holds,
                         h->header_bytes);
}

static ct_status trailing(const char *name, const ct__idx *h) {
  char what[96];
  return ct__fail_status(
      CT_ERR_FORMAT, "%s: longer than its header says: %s (%zu bytes) are followed by more data",
      name, describe(h, what, sizeof what), h->data_bytes);
}

ct_status ct__idx_parse(const uint8_t *buf, size_t size, const char *name, uint32_t magic,
                        ct__idx *out, const uint8_t **data) {
  if (!data) return ct__fail_status(CT_ERR_ARG, "idx_parse: data is NULL");
  *data = NULL;
  ct_status st = ct__idx_parse_header(buf, size, name, magic, out);
  if (st != CT_OK) return st;
  size_t avail = size - out->header_bytes;
  if (avail < out->data_bytes) return truncated(name, out, avail);
  if (avail > out->data_bytes) return trailing(name, out);
  *data = buf + out->header_bytes;
  return CT_OK;
}

/* gzread into buf[0..n): bytes read, or -1 with the error recorded (a gzip
 * stream that ends early reads as a short count, i.e. truncation). */
static int64_t gz_read_all(gzFile f, const char *name, uint8_t *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    size_t want = n - got;
    unsigned chunk = want > (1u << 30) ? (1u << 30) : (unsigned)want;
    int r = gzread(f, buf + got, chunk);
    if (r < 0) {
      int code = Z_OK;
      const char *msg = gzerror(f, &code);
      if (code == Z_BUF_ERROR) break; /* unexpected end of a gzip stream */
      ct__fail(code == Z_ERRNO ? CT_ERR_IO : CT_ERR_FORMAT, "%s: %s: %s", name,
               code == Z_ERRNO ? "read error" : "corrupt gzip data", msg);
      return -1;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  return (int64_t)got;
}

ct_status ct__idx_read_file(const char *path, uint32_t magic, ct__idx *out, uint8_t **data) {
  if (!path || !out || !data)
    return ct__fail_status(CT_ERR_ARG, "idx_read_file: path, out and data must not be NULL");
  *data = NULL;
  char shown[CT_NAME_MSG];
  const char *name = ct_escape_name(path, shown, sizeof shown);
  errno = 0;
  gzFile f = gzopen(path, "rb");
  if (!f)
    return ct__fail_status(errno == ENOMEM ? CT_ERR_OOM : CT_ERR_IO, "%s: cannot open: %s", name,
                           errno ? strerror(errno) : "out of memory");
  gzbuffer(f, 1u << 18);
  uint8_t header[16];
  size_t header_max = magic == CT_IDX_IMAGES ? 16 : 8;
  int64_t got = gz_read_all(f, name, header, header_max);
  ct_status st =
      got < 0 ? ct_last_error() : ct__idx_parse_header(header, (size_t)got, name, magic, out);
  if (st != CT_OK) {
    gzclose(f);
    return st;
  }
  /* Grow the buffer as bytes arrive, 4 MiB first: a lying header meets
   * the end of the file before it gets memory. */
  const size_t first = (size_t)4 << 20;
  size_t need = out->data_bytes, cap = need < first ? need : first, have = 0;
  uint8_t *buf = ct__malloc(cap ? cap : 1);
  if (!buf) {
    gzclose(f);
    return ct__fail_status(CT_ERR_OOM, "%s: out of host memory for %zu bytes", name, cap);
  }
  for (;;) {
    int64_t r = gz_read_all(f, name, buf + have, cap - have);
    if (r < 0) goto fail;
    have += (size_t)r;
    if (have < cap || cap == need) break;
    size_t grown = cap > need / 2 ? need : 2 * cap;
    uint8_t *nb = ct__realloc(buf, grown);
    if (!nb) {
      ct__fail(CT_ERR_OOM, "%s: out of host memory for %zu bytes", name, grown);
      goto fail;
    }
    buf = nb;
    cap = grown;
  }
  if (have < need) {
    truncated(name, out, have);
    goto fail;
  }
  uint8_t extra;
  int64_t more = gz_read_all(f, name, &extra, 1);
  if (more < 0) goto fail;
  if (more > 0) {
    trailing(name, out);
    goto fail;
  }
  /* All the data arrived, but a gzip stream cut before its 8-byte trailer
   * (CRC-32 and length) reads as a clean end: zlib only notes it. */
  int code = Z_OK;
  gzerror(f, &code);
  if (code == Z_BUF_ERROR) {
    ct__fail(CT_ERR_FORMAT,
             "%s: truncated: the gzip stream ends before its trailer (CRC-32 and "
             "length), so the data cannot be verified",
             name);
    goto fail;
  }
  gzclose(f);
  *data = buf;
  return CT_OK;
fail:
  free(buf);
  gzclose(f);
  return ct_last_error();
}

/* ---- ct_mnist_open --------------------------------------------------------------- */

enum { MNIST_CLASSES = 10 };

/* dir/base.gz if it exists, else dir/base (which may not exist either). */
static char *find_file(const char *dir, const char *base) {
  size_t n = strlen(dir) + strlen(base) + 8;
  char *p = ct__malloc(n);
  if (!p) return ct__fail(CT_ERR_OOM, "mnist_open: out of host memory");
  struct stat st;
  snprintf(p, n, "%s/%s.gz", dir, base);
  if (stat(p, &st) == 0) return p;
  snprintf(p, n, "%s/%s", dir, base);
  if (stat(p, &st) == 0) return p;
  char shown[CT_NAME_MSG];
  ct__fail(CT_ERR_IO,
           "mnist_open: %s/%s(.gz) not found. For Fashion-MNIST install the Debian package "
           "dataset-fashion-mnist (files in /usr/share/datasets/fashion-mnist); MNIST has the "
           "same file names",
           ct_escape_name(dir, shown, sizeof shown), base);
  free(p);
  return NULL;
}

/* A label outside the classes would surface mid-epoch, as a loss's index
 * error far from its cause: refuse it here, naming the file and where. */
static ct_status check_labels(const char *path, const uint8_t *labels, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (labels[i] >= MNIST_CLASSES) {
      char shown[CT_NAME_MSG];
      return ct__fail_status(
          CT_ERR_FORMAT, "%s: label %lld is %u (MNIST and Fashion-MNIST have classes 0..%d)",
          ct_escape_name(path, shown, sizeof shown), (long long)i, labels[i], MNIST_CLASSES - 1);
    }
  return CT_OK;
}

ct_dataset *ct_mnist_open(const char *dir, bool train, const ct_transform_opts *transforms) {
  if (!dir) return ct__fail(CT_ERR_ARG, "mnist_open: dir is NULL");
  const char *prefix = train ? "train" : "t10k";
  char base[64];
  snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
  char *img_path = find_file(dir, base);
  snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
  char *lbl_path = img_path ? find_file(dir, base) : NULL;
  ct__image_store s = {0};
  ct__idx ih, lh;
  ct_dataset *d = NULL;
  if (!lbl_path) goto done;
  if (ct__idx_read_file(img_path, CT_IDX_IMAGES, &ih, &s.pixels) != CT_OK) goto done;
  if (ct__idx_read_file(lbl_path, CT_IDX_LABELS, &lh, &s.labels) != CT_OK) goto done;
  if (ih.dims[0] != lh.dims[0]) {
    char a[CT_NAME_MSG], b[CT_NAME_MSG];
    ct__fail(CT_ERR_FORMAT, "mnist_open: %s holds %lld images but %s holds %lld labels",
             ct_escape_name(img_path, a, sizeof a), (long long)ih.dims[0],
             ct_escape_name(lbl_path, b, sizeof b), (long long)lh.dims[0]);
    goto done;
  }
  if (check_labels(lbl_path, s.labels, lh.dims[0]) != CT_OK) goto done;
  s.n = ih.dims[0];
  s.c = 1;
  s.h = ih.dims[1];
  s.w = ih.dims[2];
  if (ct__image_store_init_transforms(&s, transforms, "mnist_open") != CT_OK) goto done;
  d = ct__image_dataset_new(&s);
  s.pixels = s.labels = NULL; /* owned by d now (or freed) */
done:
  free(s.pixels);
  free(s.labels);
  free(img_path);
  free(lbl_path);
  return d;
}
