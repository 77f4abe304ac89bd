/* NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Layout: the magic "\x93NUMPY", a major and a minor version byte, the header
 * length (u16 little-endian in 1.0, u32 in 2.0/3.0), then the header: a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ending in '\n', then the raw elements.
 *
 * The reader treats its input as hostile: the header length is capped, the
 * dict is parsed by a small strict tokenizer that never reads past its
 * bounds, every size is computed with overflow checks, and the data size is
 * compared with what the file holds before anything is allocated. Any problem
 * is CT_ERR_FORMAT with a message naming the file (escaped: ct_escape_name)
 * and the field at fault. Bytes after the data are ignored, as NumPy does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io_internal.h"
#include "ops/ops_internal.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* NumPy itself refuses headers over 10000 bytes by default; a valid header
 * for 8 dims is under 300 bytes. */
#define NPY_MAX_HEADER 65536

static bool host_is_big_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 0;
}

/* ---- Input: a memory buffer or a FILE ------------------------------------ */

typedef struct npy_src {
  FILE *f; /* NULL for a buffer */
  const unsigned char *buf;
  size_t size, pos; /* buffer: total and consumed bytes */
  bool io_error;    /* a read error (errno saved in err) */
  int err;
} npy_src;

/* Reads up to n bytes; returns how many were read (fewer at end of input or
 * on a read error, which sets io_error). */
static size_t src_read(npy_src *s, void *dst, size_t n) {
  if (!s->f) {
    size_t avail = s->size - s->pos, k = n < avail ? n : avail;
    if (k) memcpy(dst, s->buf + s->pos, k);
    s->pos += k;
    return k;
  }
  size_t k = fread(dst, 1, n, s->f);
  if (k < n && ferror(s->f)) {
    s->io_error = true;
    s->err = errno;
  }
  return k;
}

/* Bytes left in the input if known (a buffer or a regular file), else SIZE_MAX. */
static size_t src_remaining(npy_src *s) {
  if (!s->f) return s->size - s->pos;
  struct stat st;
  long pos = ftell(s->f);
  if (pos < 0 || fstat(fileno(s->f), &st) != 0 || !S_ISREG(st.st_mode)) return SIZE_MAX;
  return (uint64_t)st.st_size > (uint64_t)pos ? (size_t)((uint64_t)st.st_size - (uint64_t)pos) : 0;
}

static ct_status read_error(npy_src *s) {
  return ct__fail_status(CT_ERR_IO, "read error: %s", strerror(s->err));
}

/* ---- The header dict ---------------------------------------------------------- */

typedef struct npy_header {
  ct_dtype dtype;
  size_t elsize;
  bool swap; /* stored in the other byte order than the host's */
  bool fortran;
  int ndim;
  int64_t shape[CT_MAX_DIMS];
} npy_header;

typedef struct cursor {
  const char *s;
  size_t n, i;
} cursor;

static void skip_ws(cursor *c) {
  while (c->i < c->n &&
         (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' || c->s[c->i] == '\r'))
    c->i++;
}
static bool at(cursor *c, char ch) { return c->i < c->n && c->s[c->i] == ch; }
static bool eat(cursor *c, char ch) {
  skip_ws(c);
  if (!at(c, ch)) return false;
  c->i++;
  return true;
}
/* The character at the cursor, for messages ("end of header" past the end). */
static const char *near(cursor *c, char buf[8]) {
  if (c->i >= c->n) return "the end of the header";
  unsigned char ch = (unsigned char)c->s[c->i];
  if (ch >= 0x20 && ch < 0x7f)
    snprintf(buf, 8, "'%c'", ch);
  else
    snprintf(buf, 8, "0x%02x", ch);
  return buf;
}

/* A quoted string without escapes into out (cap bytes with the NUL). */
static bool parse_string(cursor *c, char *out, size_t cap, const char *what) {
  char nb[8];
  skip_ws(c);
  if (!at(c, '\'') && !at(c, '"'))
    return ct__fail(CT_ERR_FORMAT, "header: expected a quoted string for %s, found %s at byte %zu",
                    what, near(c, nb), c->i),
           false;
  char q = c->s[c->i++];
  size_t len = 0;
  while (c->i < c->n && c->s[c->i] != q) {
    unsigned char ch = (unsigned char)c->s[c->i];
    if (ch == '\\' || ch < 0x20 || ch >= 0x7f)
      return ct__fail(CT_ERR_FORMAT, "header: unsupported character 0x%02x in %s", ch, what), false;
    if (len + 1 >= cap) return ct__fail(CT_ERR_FORMAT, "header: %s is too long", what), false;
    out[len++] = (char)ch;
    c->i++;
  }
  if (c->i >= c->n)
    return ct__fail(CT_ERR_FORMAT, "header: unterminated string in %s", what), false;
  c->i++;
  out[len] = 0;
  return true;
}

static bool parse_descr(cursor *c, npy_header *h) {
  char d[32];
  skip_ws(c);
  if (at(c, '['))
    return ct__fail(CT_ERR_FORMAT, "'descr' is a structured dtype, which is not supported"), false;
  if (!parse_string(c, d, sizeof d, "'descr'")) return false;
  static const struct {
    char kind;
    int size;
    ct_dtype dtype;
  } table[] = {{'f', 2, CT_F16}, {'f', 4, CT_F32}, {'f', 8, CT_F64},
               {'i', 1, CT_I8},  {'i', 2, CT_I16}, {'i', 4, CT_I32},
               {'i', 8, CT_I64}, {'u', 1, CT_U8},  {'b', 1, CT_BOOL}};
  char order = d[0];
  if (strlen(d) == 3 && (order == '<' || order == '>' || order == '=' || order == '|') &&
      d[2] >= '1' && d[2] <= '9') {
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
      if (table[k].kind == d[1] && table[k].size == d[2] - '0') {
        h->dtype = table[k].dtype;
        h->elsize = (size_t)table[k].size;
        bool file_big = order == '>', file_little = order == '<';
        h->swap = h->elsize > 1 && (host_is_big_endian() ? file_little : file_big);
        return true;
      }
    }
  }
  return ct__fail(CT_ERR_FORMAT,
                  "'descr' '%s' is not a supported dtype (f2 f4 f8 i1 i2 i4 i8 u1 b1, either byte "
                  "order)",
                  d),
         false;
}

static bool parse_fortran(cursor *c, npy_header *h) {
  skip_ws(c);
  if (c->n - c->i >= 4 && memcmp(c->s + c->i, "True", 4) == 0) {
    h->fortran = true;
    c->i += 4;
  } else if (c->n - c->i >= 5 && memcmp(c->s + c->i, "False", 5) == 0) {
    h->fortran = false;
    c->i += 5;
  } else {
    return ct__fail(CT_ERR_FORMAT, "'fortran_order' must be True or False"), false;
  }
  return true;
}

static bool parse_shape(cursor *c, npy_header *h) {
  char nb[8];
  if (!eat(c, '('))
    return ct__fail(CT_ERR_FORMAT, "'shape' must be a tuple, found %s", near(c, nb)), false;
  h->ndim = 0;
  for (;;) {
    skip_ws(c);
    if (at(c, ')')) break;
    bool neg = false;
    if (at(c, '-')) {
      neg = true;
      c->i++;
    }
    if (!(c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9'))
      return ct__fail(CT_ERR_FORMAT, "'shape' must hold integers, found %s", near(c, nb)), false;
    int64_t v = 0;
    while (c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
      int digit = c->s[c->i++] - '0';
      if (v > (INT64_MAX - digit) / 10)
        return ct__fail(CT_ERR_FORMAT, "'shape' has a dimension too large for 64 bits"), false;
      v = v * 10 + digit;
    }
    if (at(c, 'L') || at(c, 'l')) c->i++; /* Python 2 long literals, in old files */
    if (neg && v != 0)
      return ct__fail(CT_ERR_FORMAT, "'shape' has a negative dimension (-%lld)", (long long)v),
             false;
    if (h->ndim == CT_MAX_DIMS)
      return ct__fail(CT_ERR_FORMAT, "'shape' has more than %d dimensions", CT_MAX_DIMS), false;
    h->shape[h->ndim++] = v;
    if (eat(c, ',')) continue;
    skip_ws(c);
    if (!at(c, ')'))
      return ct__fail(CT_ERR_FORMAT, "'shape': expected ',' or ')', found %s", near(c, nb)), false;
  }
  c->i++; /* ')' */
  return true;
}

/* Parses the header text into h. */
static bool parse_header(const char *text, size_t len, npy_header *h) {
  cursor c = {text, len, 0};
  char nb[8];
  bool seen[3] = {false, false, false};
  static const char *const keys[3] = {"descr", "fortran_order", "shape"};
  if (!eat(&c, '{'))
    return ct__fail(CT_ERR_FORMAT, "header: expected a dict starting with '{', found %s",
                    near(&c, nb)),
           false;
  for (;;) {
    skip_ws(&c);
    if (at(&c, '}')) break;
    char key[32];
    if (!parse_string(&c, key, sizeof key, "a header key")) return false;
    int k = 0;
    while (k < 3 && strcmp(key, keys[k]) != 0) k++;
    if (k == 3) return ct__fail(CT_ERR_FORMAT, "header: unexpected key '%s'", key), false;
    if (seen[k]) return ct__fail(CT_ERR_FORMAT, "header: key '%s' appears twice", key), false;
    seen[k] = true;
    if (!eat(&c, ':'))
      return ct__fail(CT_ERR_FORMAT, "header: expected ':' after '%s', found %s", key,
                      near(&c, nb)),
             false;
    bool ok = k == 0 ? parse_descr(&c, h) : k == 1 ? parse_fortran(&c, h) : parse_shape(&c, h);
    if (!ok) return false;
    if (eat(&c, ',')) continue;
    skip_ws(&c);
    if (!at(&c, '}'))
      return ct__fail(CT_ERR_FORMAT, "header: expected ',' or '}' after '%s', found %s", key,
                      near(&c, nb)),
             false;
  }
  c.i++; /* '}' */
  skip_ws(&c);
  while (c.i < c.n && c.s[c.i] == 0) c.i++; /* tolerate NUL padding */
  if (c.i < c.n)
    return ct__fail(CT_ERR_FORMAT, "header: unexpected %s after the dict", near(&c, nb)), false;
  for (int k = 0; k < 3; k++)
    if (!seen[k]) return ct__fail(CT_ERR_FORMAT, "header: missing key '%s'", keys[k]), false;
  return true;
}

/* ---- Loading ---------------------------------------------------------------------- */

static void byteswap(void *data, size_t n, size_t elsize) {
  unsigned char *p = data;
  for (size_t i = 0; i < n; i++, p += elsize)
    for (size_t a = 0, b = elsize - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

static ct_tensor *load(npy_src *s) {
  unsigned char pre[12];
  size_t got = src_read(s, pre, 8);
  if (s->io_error) return read_error(s), NULL;
  if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
    return ct__fail(CT_ERR_FORMAT, "bad magic string (not a .npy file)");
  if (got < 8) return ct__fail(CT_ERR_FORMAT, "file is truncated in the version field");
  int major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0)
    return ct__fail(CT_ERR_FORMAT,
                    "unsupported format version %d.%d (1.0, 2.0 and 3.0 are supported)", major,
                    minor);
  size_t lenbytes = major == 1 ? 2 : 4;
  got = src_read(s, pre + 8, lenbytes);
  if (s->io_error) return read_error(s), NULL;
  if (got < lenbytes)
    return ct__fail(CT_ERR_FORMAT, "file is truncated in the header length field");
  uint32_t hlen = major == 1 ? (uint32_t)pre[8] | (uint32_t)pre[9] << 8
                             : (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
                                   (uint32_t)pre[11] << 24;
  if (hlen > NPY_MAX_HEADER)
    return ct__fail(CT_ERR_FORMAT, "header length %u exceeds the %d-byte limit", hlen,
                    NPY_MAX_HEADER);
  char *text = ct__malloc(hlen ? hlen : 1);
  if (!text) return ct__fail(CT_ERR_OOM, "out of memory for a %u-byte header", hlen);
  got = src_read(s, text, hlen);
  if (s->io_error) {
    free(text);
    return read_error(s), NULL;
  }
  if (got < hlen) {
    free(text);
    return ct__fail(CT_ERR_FORMAT, "header is truncated: %zu bytes present, %u expected", got,
                    hlen);
  }
  npy_header h = {0};
  bool ok = parse_header(text, hlen, &h);
  free(text);
  if (!ok) return NULL;

  /* Sizes, overflow-checked, and compared with the input before allocating.
   * The product of the dims with each 0 taken as 1, times the element size,
   * bounds every stride in bytes: a (0, 2^40, 2^40) array holds nothing, yet
   * its strides overflow, so it is refused like one too large to hold. */
  uint64_t span = h.elsize;
  bool empty = false;
  for (int d = 0; d < h.ndim; d++) {
    empty |= h.shape[d] == 0;
    if (__builtin_mul_overflow(span, (uint64_t)(h.shape[d] ? h.shape[d] : 1), &span) ||
        span > (uint64_t)INT64_MAX || span > SIZE_MAX) {
      char sh[CT_MAX_DIMS * 22 + 4];
      return ct__fail(CT_ERR_FORMAT,
                      "'shape' %s is too large: its size in bytes or a stride overflows 64 bits",
                      ct_shape_format(h.shape, h.ndim, sh, sizeof sh));
    }
  }
  int64_t numel = empty ? 0 : (int64_t)(span / h.elsize);
  size_t nbytes = (size_t)numel * h.elsize;
  size_t avail = src_remaining(s);
  if (avail < nbytes)
    return ct__fail(CT_ERR_FORMAT, "data is truncated: %zu bytes present, %zu expected", avail,
                    nbytes);

  /* Fortran order: the data is the C-order tensor of the reversed shape. */
  bool reversed = h.fortran && h.ndim > 1;
  int64_t fshape[CT_MAX_DIMS];
  for (int d = 0; d < h.ndim; d++) fshape[d] = reversed ? h.shape[h.ndim - 1 - d] : h.shape[d];
  ct_tensor *t = ct__empty(fshape, h.ndim, h.dtype, ct_cpu());
  if (!t) return NULL;
  if (nbytes) {
    got = src_read(s, ct__data(t), nbytes);
    if (s->io_error || got < nbytes) {
      ct__release(t);
      if (s->io_error) return read_error(s), NULL;
      return ct__fail(CT_ERR_FORMAT, "data is truncated: %zu bytes present, %zu expected", got,
                      nbytes);
    }
  }
  if (h.swap) byteswap(ct__data(t), (size_t)numel, h.elsize);
  if (h.dtype == CT_BOOL) { /* any nonzero byte is true; C bools must hold 0 or 1 */
    unsigned char *b = ct__data(t);
    for (int64_t i = 0; i < numel; i++) b[i] = b[i] != 0;
  }
  if (reversed) {
    int64_t rstrides[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    ct__contiguous_strides(fshape, h.ndim, rstrides);
    for (int d = 0; d < h.ndim; d++) strides[d] = rstrides[h.ndim - 1 - d];
    ct_tensor *view = ct__view_of(t, h.dtype, h.shape, strides, h.ndim, 0);
    ct_tensor *c = view ? ct__contiguous(view) : NULL;
    ct__release(view);
    ct__release(t);
    t = c;
  }
  return t;
}

/* Puts the operation and the file in front of the error that load recorded. */
static ct_tensor *name_failure(const char *op, const char *path) {
  char msg[768], name[CT_NAME_MSG];
  snprintf(msg, sizeof msg, "%s", ct_last_error_message());
  if (!path) return ct__fail(ct_last_error(), "%s: %s", op, msg);
  return ct__fail(ct_last_error(), "%s: %s: %s", op, ct_escape_name(path, name, sizeof name), msg);
}

ct_tensor *ct_load_npy_buffer(const void *data, size_t size) {
  if (!data && size) return ct__fail(CT_ERR_ARG, "load_npy_buffer: data is NULL");
  npy_src s = {.buf = data, .size = size};
  ct_tensor *t = load(&s);
  return t ? ct__track(t) : name_failure("load_npy_buffer", NULL);
}

ct_tensor *ct_load_npy(const char *path) {
  if (!path) return ct__fail(CT_ERR_ARG, "load_npy: path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) {
    ct__fail(CT_ERR_IO, "cannot open: %s", strerror(errno));
    return name_failure("load_npy", path);
  }
  npy_src s = {.f = f};
  ct_tensor *t = load(&s);
  fclose(f);
  return t ? ct__track(t) : name_failure("load_npy", path);
}

/* ---- Saving ------------------------------------------------------------------------ */

static const char *descr_of(ct_dtype d) {
  switch (d) {
    case CT_F32:
      return "<f4";
    case CT_F64:
      return "<f8";
    case CT_F16:
      return "<f2";
    case CT_I8:
      return "|i1";
    case CT_U8:
      return "|u1";
    case CT_I16:
      return "<i2";
    case CT_I32:
      return "<i4";
    case CT_I64:
      return "<i8";
    case CT_BOOL:
      return "|b1";
    default:
      return NULL; /* bf16: saved as f32 */
  }
}

ct_status ct_save_npy(const char *path, const ct_tensor *t) {
  if (!t)
    return ct_last_error() ? ct_last_error()
                           : ct__fail_status(CT_ERR_ARG, "save_npy: tensor is NULL");
  if (!path) return ct__fail_status(CT_ERR_ARG, "save_npy: path is NULL");

  /* A contiguous little-endian host image of the elements. */
  ct_tensor *c = ct__cast(t, t->dtype == CT_BF16 ? CT_F32 : t->dtype);
  ct_tensor *cc = c ? ct__contiguous(c) : NULL;
  ct__release(c);
  if (!cc) return ct_last_error();
  size_t nbytes = ct_nbytes(cc), es = ct__elsize(cc->dtype);
  void *owned = NULL;
  const void *data = NULL;
  if (ct__is_cpu(cc) && !(host_is_big_endian() && es > 1)) {
    data = ct__data(cc);
  } else {
    owned = ct__malloc(nbytes ? nbytes : 1);
    ct_status st =
        !owned ? ct__fail_status(CT_ERR_OOM, "save_npy: out of host memory (%zu bytes)", nbytes)
        : ct__is_cpu(cc) ? (memcpy(owned, ct__data(cc), nbytes), CT_OK)
        : nbytes         ? ct__backend_of(cc)->copy_to_host(owned, cc, nbytes, false)
                         : CT_OK;
    if (st != CT_OK) {
      free(owned);
      ct__release(cc);
      return st;
    }
    if (host_is_big_endian()) byteswap(owned, (size_t)cc->numel, es);
    data = owned;
  }

  /* Header: NumPy's own layout, padded with spaces to a multiple of 64 bytes
   * (magic and length included) and ending in '\n'. */
  char shape[CT_MAX_DIMS * 24 + 4];
  size_t sl = 0;
  shape[sl++] = '(';
  for (int d = 0; d < cc->ndim; d++)
    sl += (size_t)snprintf(shape + sl, sizeof shape - sl, d ? ", %lld" : "%lld",
                           (long long)cc->shape[d]);
  if (cc->ndim == 1) shape[sl++] = ',';
  shape[sl++] = ')';
  shape[sl] = 0;
  char header[512];
  int hl = snprintf(header + 10, sizeof header - 10,
                    "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr_of(cc->dtype),
                    shape);
  size_t total = 10 + (size_t)hl + 1;
  size_t padded = (total + 63) / 64 * 64;
  memset(header + 10 + hl, ' ', padded - total);
  header[padded - 1] = '\n';
  memcpy(header, NPY_MAGIC, NPY_MAGIC_LEN);
  header[6] = 1;
  header[7] = 0;
  header[8] = (char)((padded - 10) & 0xff);
  header[9] = (char)((padded - 10) >> 8);

  ct_status st = CT_OK;
  char name[CT_NAME_MSG];
  ct_escape_name(path, name, sizeof name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = ct__fail_status(CT_ERR_IO, "save_npy: %s: cannot open for writing: %s", name,
                         strerror(errno));
  } else {
    bool ok = fwrite(header, 1, padded, f) == padded &&
              (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
    int werr = errno;
    if (fclose(f) != 0 && ok) {
      ok = false;
      werr = errno;
    }
    /* A partial file is left in place: path may not be ours to remove
     * (a device such as /dev/full, a pipe). */
    if (!ok) st = ct__fail_status(CT_ERR_IO, "save_npy: %s: write error: %s", name, strerror(werr));
  }
  free(owned);
  ct__release(cc);
  return st;
}
