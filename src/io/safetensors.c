/* safetensors files: ct_save_safetensors (atomic: temporary file, fsync,
 * rename, fsync of the folder), ct_load_safetensors (from a file or, for
 * fuzzing, a buffer) and the removal of temporaries a killed save left.
 *
 * Layout: u64 little-endian N, N bytes of JSON header (padded with spaces to
 * a multiple of 8), then the data buffer: each tensor's bytes, C order,
 * little-endian, at the header's data_offsets. The reader validates the whole
 * header (safetensors_header.c) before it allocates any tensor. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "io/safetensors.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

static const char *st_dtype_name(ct_dtype d) {
  static const char *const names[CT_DTYPE_COUNT] = {
      [CT_F32] = "F32", [CT_F64] = "F64", [CT_F16] = "F16", [CT_BF16] = "BF16", [CT_I8] = "I8",
      [CT_U8] = "U8",   [CT_I16] = "I16", [CT_I32] = "I32", [CT_I64] = "I64",   [CT_BOOL] = "BOOL"};
  return names[d];
}

/* ---- Reading -------------------------------------------------------------------- */

/* Where the bytes come from: a file or a memory image. */
typedef struct source {
  FILE *f;
  const unsigned char *buf;
  uint64_t size;
  const char *what;
} source;

static ct_status read_at(const source *s, uint64_t offset, void *dst, size_t n) {
  if (n == 0) return CT_OK;
  if (s->buf) {
    memcpy(dst, s->buf + offset, n);
    return CT_OK;
  }
  if (fseeko(s->f, (off_t)offset, SEEK_SET) != 0 || fread(dst, 1, n, s->f) != n)
    return ct__fail_status(CT_ERR_IO, "load_safetensors: %s: read failed at byte %llu: %s", s->what,
                           (unsigned long long)offset,
                           ferror(s->f) ? strerror(errno) : "end of file");
  return CT_OK;
}

void ct_safetensors_free(ct_tensor **tensors, char **names, int n) {
  for (int i = 0; i < n; i++) {
    if (tensors) ct_free(tensors[i]);
    if (names) free(names[i]);
  }
  free(tensors);
  free(names);
}

static ct_status load(const source *s, ct_tensor ***out_tensors, char ***out_names, int *out_n) {
  if (s->size < 8)
    return ct__fail_status(CT_ERR_FORMAT,
                           "load_safetensors: %s: %llu bytes is too short for the "
                           "8-byte header size",
                           s->what, (unsigned long long)s->size);
  unsigned char le[8];
  ct_status st = read_at(s, 0, le, 8);
  if (st != CT_OK) return st;
  uint64_t hsize = 0;
  for (int i = 7; i >= 0; i--) hsize = hsize << 8 | le[i];
  if (hsize > CT_SAFETENSORS_MAX_HEADER || hsize > s->size - 8)
    return ct__fail_status(CT_ERR_FORMAT,
                           "load_safetensors: %s: header size %llu exceeds %s (%llu "
                           "bytes)",
                           s->what, (unsigned long long)hsize,
                           hsize > s->size - 8 ? "the file" : "the limit",
                           hsize > s->size - 8 ? (unsigned long long)(s->size - 8)
                                               : (unsigned long long)CT_SAFETENSORS_MAX_HEADER);
  char *json = ct__malloc(hsize ? hsize : 1);
  if (!json)
    return ct__fail_status(CT_ERR_OOM, "load_safetensors: %s: out of host memory", s->what);
  st = read_at(s, 8, json, hsize);
  ct__st_header h = {0};
  uint64_t data_start = 8 + hsize;
  if (st == CT_OK) st = ct__st_parse_header(json, hsize, s->size - data_start, s->what, &h);
  free(json);
  if (st != CT_OK) return st;

  size_t cnt = (size_t)(h.n ? h.n : 1);
  ct_tensor **tensors = ct__calloc(cnt, sizeof *tensors);
  char **names = ct__calloc(cnt, sizeof *names);
  if (!tensors || !names)
    st = ct__fail_status(CT_ERR_OOM, "load_safetensors: %s: out of host memory", s->what);
  for (int i = 0; i < h.n && st == CT_OK; i++) {
    ct__st_entry *e = &h.entries[i];
    char tn[CT_NAME_MSG];
    tensors[i] = ct__empty(e->shape, e->ndim, e->dtype, ct_cpu());
    if (!tensors[i]) {
      st = ct_last_error();
      break;
    }
    size_t nbytes = (size_t)(e->end - e->begin);
    st = read_at(s, data_start + e->begin, ct__data(tensors[i]), nbytes);
    if (st == CT_OK && e->dtype == CT_BOOL) {
      const unsigned char *b = ct__data(tensors[i]);
      for (size_t j = 0; j < nbytes && st == CT_OK; j++)
        if (b[j] > 1)
          st = ct__fail_status(CT_ERR_FORMAT,
                               "load_safetensors: %s: tensor '%s': bool element "
                               "%zu holds %u (expected 0 or 1)",
                               s->what, ct_escape_name(e->name, tn, sizeof tn), j, b[j]);
    }
    names[i] = e->name; /* moved out of the header */
    e->name = NULL;
  }
  if (st != CT_OK) {
    ct_safetensors_free(tensors, names, h.n);
    ct__st_header_free(&h);
    return st;
  }
  *out_tensors = tensors;
  *out_names = names;
  *out_n = h.n;
  ct__st_header_free(&h);
  return CT_OK;
}

static ct_status check_out_args(ct_tensor ***tensors, char ***names, int *n) {
  if (!tensors || !names || !n)
    return ct__fail_status(CT_ERR_ARG, "load_safetensors: tensors, names and n must not be NULL");
  *tensors = NULL;
  *names = NULL;
  *n = 0;
  return CT_OK;
}

ct_status ct__load_safetensors_buffer(const void *data, size_t size, const char *what,
                                      ct_tensor ***tensors, char ***names, int *n) {
  ct_status st = check_out_args(tensors, names, n);
  if (st != CT_OK) return st;
  if (!data && size) return ct__fail_status(CT_ERR_ARG, "load_safetensors: buffer is NULL");
  char shown[CT_NAME_MSG];
  source s = {.buf = data,
              .size = size,
              .what = ct_escape_name(what ? what : "<buffer>", shown, sizeof shown)};
  return load(&s, tensors, names, n);
}

ct_status ct_load_safetensors(const char *path, ct_tensor ***tensors, char ***names, int *n) {
  ct_status st = check_out_args(tensors, names, n);
  if (st != CT_OK) return st;
  if (!path) return ct__fail_status(CT_ERR_ARG, "load_safetensors: path is NULL");
  char shown[CT_NAME_MSG];
  ct_escape_name(path, shown, sizeof shown);
  FILE *f = fopen(path, "rb");
  if (!f)
    return ct__fail_status(CT_ERR_IO, "load_safetensors: %s: cannot open: %s", shown,
                           strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0) {
    st =
        ct__fail_status(CT_ERR_IO, "load_safetensors: %s: cannot stat: %s", shown, strerror(errno));
    fclose(f);
    return st;
  }
  if (!S_ISREG(sb.st_mode)) {
    fclose(f);
    return ct__fail_status(CT_ERR_IO, "load_safetensors: %s: %s", shown,
                           S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file");
  }
  source s = {.f = f, .size = (uint64_t)sb.st_size, .what = shown};
  st = load(&s, tensors, names, n);
  fclose(f);
  return st;
}

/* ---- Writing --------------------------------------------------------------------- */

/* A growing text buffer. */
typedef struct text {
  char *s;
  size_t len, cap;
  bool oom;
} text;

static void put(text *t, const char *s, size_t n) {
  if (t->oom) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + n + 1) cap *= 2;
    char *p = ct__realloc(t->s, cap);
    if (!p) {
      t->oom = true;
      return;
    }
    t->s = p;
    t->cap = cap;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = '\0';
}
static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }
static void putu(text *t, uint64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  put(t, b, (size_t)n);
}
/* A JSON string literal. */
static void put_json_string(text *t, const char *s) {
  put(t, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') {
      char e[2] = {'\\', (char)*c};
      put(t, e, 2);
    } else if (*c < 0x20) {
      char e[8];
      snprintf(e, sizeof e, "\\u%04x", *c);
      put(t, e, 6);
    } else {
      put(t, (const char *)c, 1);
    }
  }
  put(t, "\"", 1);
}

/* The header for the tensors, padded with spaces to a multiple of 8. */
static ct_status build_header(text *h, ct_tensor *const *tensors, const char *const *names, int n) {
  uint64_t offset = 0;
  puts_(h, "{");
  for (int i = 0; i < n; i++) {
    const ct_tensor *t = tensors[i];
    if (i) puts_(h, ",");
    put_json_string(h, names[i]);
    puts_(h, ":{\"dtype\":\"");
    puts_(h, st_dtype_name(t->dtype));
    puts_(h, "\",\"shape\":[");
    for (int d = 0; d < t->ndim; d++) {
      if (d) puts_(h, ",");
      putu(h, (uint64_t)t->shape[d]);
    }
    puts_(h, "],\"data_offsets\":[");
    putu(h, offset);
    puts_(h, ",");
    offset += ct_nbytes(t);
    putu(h, offset);
    puts_(h, "]}");
  }
  puts_(h, "}");
  while (!h->oom && h->len % 8) puts_(h, " ");
  return h->oom ? ct__fail_status(CT_ERR_OOM, "save_safetensors: out of host memory") : CT_OK;
}

static ct_status check_save_args(const char *path, ct_tensor *const *tensors,
                                 const char *const *names, int n) {
  if (!path) return ct__fail_status(CT_ERR_ARG, "save_safetensors: path is NULL");
  if (n < 0 || (n > 0 && (!tensors || !names)))
    return ct__fail_status(CT_ERR_ARG, "save_safetensors: expected arrays of %d tensors and names",
                           n);
  char tn[CT_NAME_MSG];
  for (int i = 0; i < n; i++) {
    if (!tensors[i]) return ct__fail_status(CT_ERR_ARG, "save_safetensors: tensor %d is NULL", i);
    if (!names[i]) return ct__fail_status(CT_ERR_ARG, "save_safetensors: name %d is NULL", i);
    /* The reader applies the same rule (safetensors_header.c). */
    const char *problem = ct__st_name_problem(names[i], strlen(names[i]));
    if (problem)
      return ct__fail_status(CT_ERR_ARG, "save_safetensors: name %d ('%s') %s", i,
                             ct_escape_name(names[i], tn, sizeof tn), problem);
    for (int j = 0; j < i; j++)
      if (!strcmp(names[i], names[j]))
        return ct__fail_status(CT_ERR_ARG, "save_safetensors: name '%s' appears twice (%d and %d)",
                               ct_escape_name(names[i], tn, sizeof tn), j, i);
  }
  return CT_OK;
}

static ct_status write_all(FILE *f, const void *p, size_t n, const char *tmp) {
  if (n && fwrite(p, 1, n, f) != n)
    return ct__fail_status(CT_ERR_IO, "save_safetensors: writing %s: %s", tmp, strerror(errno));
  return CT_OK;
}

/* Writes the file body into f. tmp: the file's name, escaped, for messages. */
static ct_status write_body(FILE *f, const text *h, ct_tensor *const *tensors, int n,
                            const char *tmp) {
  unsigned char le[8];
  for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)h->len >> (8 * i));
  ct_status st = write_all(f, le, 8, tmp);
  if (st == CT_OK) st = write_all(f, h->s, h->len, tmp);
  for (int i = 0; i < n && st == CT_OK; i++) {
    size_t nbytes = ct_nbytes(tensors[i]);
    if (nbytes == 0) continue;
    void *host = ct__malloc(nbytes);
    if (!host)
      return ct__fail_status(CT_ERR_OOM, "save_safetensors: out of host memory (%zu bytes)",
                             nbytes);
    st = ct_copy_to_host(tensors[i], host, nbytes);
    if (st == CT_OK) st = write_all(f, host, nbytes, tmp);
    free(host);
  }
  return st;
}

/* The folder of path ("." for a bare name) into buf; false if it does not fit. */
static bool folder_of(const char *path, char *buf, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) return snprintf(buf, cap, ".") < (int)cap;
  size_t len = slash == path ? 1 : (size_t)(slash - path);
  if (len >= cap) return false;
  memcpy(buf, path, len);
  buf[len] = '\0';
  return true;
}

/* Makes a rename in path's folder durable. Best effort: a folder that cannot
 * be opened for reading (write and search permission only) still took the
 * rename, which a crash of the machine (not of the process) might undo. */
static void sync_folder_of(const char *path) {
  char dir[4096];
  if (!folder_of(path, dir, sizeof dir)) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)fsync(fd);
  close(fd);
}

/* Writes the file at tmp (flushed to the disk), then renames it over path. */
static ct_status write_and_replace(const char *path, const char *tmp, const text *h,
                                   ct_tensor *const *tensors, int n) {
  char shown_tmp[CT_NAME_MSG], shown[CT_NAME_MSG];
  ct_escape_name(tmp, shown_tmp, sizeof shown_tmp);
  ct_escape_name(path, shown, sizeof shown);
  /* A file of this name is stale: this process is the one that saves to it.
   * O_EXCL creates a new file, never writes through a link planted there. */
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!f) {
    int err = errno;
    if (fd >= 0) close(fd), remove(tmp);
    return ct__fail_status(CT_ERR_IO, "save_safetensors: cannot create %s: %s", shown_tmp,
                           strerror(err));
  }
  ct_status st = write_body(f, h, tensors, n, shown_tmp);
  if (st == CT_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0))
    st = ct__fail_status(CT_ERR_IO, "save_safetensors: writing %s: %s", shown_tmp, strerror(errno));
  if (fclose(f) != 0 && st == CT_OK)
    st = ct__fail_status(CT_ERR_IO, "save_safetensors: closing %s: %s", shown_tmp, strerror(errno));
  if (st == CT_OK && rename(tmp, path) != 0)
    st = ct__fail_status(CT_ERR_IO, "save_safetensors: %s: cannot replace it with %s: %s", shown,
                         shown_tmp, strerror(errno));
  if (st != CT_OK)
    remove(tmp);
  else
    sync_folder_of(path);
  return st;
}

ct_status ct_save_safetensors(const char *path, ct_tensor *const *tensors, const char *const *names,
                              int n) {
  ct_status st = check_save_args(path, tensors, names, n);
  if (st != CT_OK) return st;
  text h = {0};
  st = build_header(&h, tensors, names, n);
  size_t tlen = strlen(path) + 32;
  char *tmp = st == CT_OK ? ct__malloc(tlen) : NULL;
  if (st == CT_OK && !tmp) st = ct__fail_status(CT_ERR_OOM, "save_safetensors: out of host memory");
  if (st == CT_OK) {
    /* The name ct_safetensors_remove_stale looks for. */
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    st = write_and_replace(path, tmp, &h, tensors, n);
  }
  free(tmp);
  free(h.s);
  return st;
}

/* ---- Temporaries a killed save left -------------------------------------------- */

/* The pid in "<base>.tmp.<pid>" (entry is a folder entry's name), or 0. */
static long stale_pid(const char *entry, const char *base, size_t base_len) {
  if (strncmp(entry, base, base_len) || strncmp(entry + base_len, ".tmp.", 5)) return 0;
  const char *digits = entry + base_len + 5;
  size_t nd = strlen(digits);
  if (nd == 0 || nd > 9 || digits[0] == '0' || strspn(digits, "0123456789") != nd) return 0;
  return strtol(digits, NULL, 10);
}

ct_status ct_safetensors_remove_stale(const char *path, int *removed) {
  if (removed) *removed = 0;
  if (!path || !*path)
    return ct__fail_status(CT_ERR_ARG, "safetensors_remove_stale: path is %s",
                           path ? "empty" : "NULL");
  char dir[4096], shown[CT_NAME_MSG];
  ct_escape_name(path, shown, sizeof shown);
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (!*base || !folder_of(path, dir, sizeof dir))
    return ct__fail_status(CT_ERR_ARG, "safetensors_remove_stale: %s: not a file name", shown);
  DIR *d = opendir(dir);
  if (!d)
    return ct__fail_status(CT_ERR_IO, "safetensors_remove_stale: %s: cannot read its folder: %s",
                           shown, strerror(errno));
  ct_status st = CT_OK;
  size_t base_len = strlen(base);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    long pid = stale_pid(e->d_name, base, base_len);
    struct stat sb;
    /* Only regular files (never what a symbolic link points to), only of
     * processes gone: a live process (EPERM: another user's) is saving now. */
    if (pid <= 0 || fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(sb.st_mode) || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    if (unlinkat(dirfd(d), e->d_name, 0) != 0) {
      char name[CT_NAME_MSG];
      st = ct__fail_status(CT_ERR_IO,
                           "safetensors_remove_stale: %s: cannot remove its stale temporary %s: %s",
                           shown, ct_escape_name(e->d_name, name, sizeof name), strerror(errno));
      break;
    }
    if (removed) (*removed)++;
  }
  closedir(d);
  return st;
}
