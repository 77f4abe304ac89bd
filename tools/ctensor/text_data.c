/* text_data.c: the byte-level text dataset of `--dataset fortunes`: the
 * corpus (the fortune files of Debian's `fortunes` package, or of any folder
 * given with --data-dir), split into training bytes (the first 90%) and
 * validation bytes (the last 10%), cut into windows of GPT_CONTEXT + 1
 * bytes: input bytes 0..T-1, target bytes 1..T (the next byte of each).
 *
 * Windows do not overlap (window i starts at byte i * T), so an epoch reads
 * each training byte once as an input. Samples are rows of two (N, T) i64
 * tensors (ct_tensor_dataset_new), which the data loader batches and
 * shuffles like any other dataset. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { TEXT_VALIDATION_PERCENT = 10 };

/* Fortune files: regular files whose names have no '.' (the package also
 * holds NAME.dat indexes and NAME.u8 links to NAME). */
static bool is_corpus_file(const char *dir, const char *name, char *path, size_t pathsz) {
  if (name[0] == '.' || strchr(name, '.')) return false;
  struct stat st;
  int n = snprintf(path, pathsz, "%s/%s", dir, name);
  return n > 0 && (size_t)n < pathsz && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the bytes of path to *buf (size *n, capacity *cap). */
static bool append_file(const char *path, uint8_t **buf, int64_t *n, int64_t *cap) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "ctensor: fortunes: cannot read %s: %s\n", cli_shown(path), strerror(errno));
    return false;
  }
  bool ok = true;
  for (;;) {
    if (*cap - *n < 65536) {
      int64_t c = *cap ? *cap * 2 : 1 << 20;
      uint8_t *nb = realloc(*buf, (size_t)c);
      if (!nb) {
        fprintf(stderr, "ctensor: fortunes: out of memory reading %s\n", cli_shown(path));
        ok = false;
        break;
      }
      *buf = nb, *cap = c;
    }
    size_t got = fread(*buf + *n, 1, (size_t)(*cap - *n), f);
    *n += (int64_t)got;
    if (got == 0) {
      if (ferror(f)) {
        fprintf(stderr, "ctensor: fortunes: error reading %s\n", cli_shown(path));
        ok = false;
      }
      break;
    }
  }
  fclose(f);
  return ok;
}

bool cli_text_read_corpus(const char *dir, uint8_t **bytes, int64_t *n) {
  *bytes = NULL, *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr,
            "ctensor: fortunes: cannot open the folder %s: %s (install the Debian package "
            "fortunes, or give --data-dir DIR, a folder of text files)\n",
            cli_shown(dir), strerror(errno));
    return false;
  }
  char **names = NULL, path[4096];
  size_t count = 0, cap = 0;
  bool ok = true;
  for (struct dirent *e; ok && (e = readdir(d));) {
    if (!is_corpus_file(dir, e->d_name, path, sizeof path)) continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      ok = nn != NULL;
      if (ok) names = nn;
    }
    if (ok && (names[count] = strdup(e->d_name)) != NULL)
      count++;
    else
      ok = false;
  }
  closedir(d);
  if (!ok) fprintf(stderr, "ctensor: fortunes: out of memory listing %s\n", cli_shown(dir));
  /* Sorted: the same corpus (and split) whatever order the folder lists. */
  if (ok && count) qsort(names, count, sizeof *names, by_name);
  int64_t capb = 0;
  for (size_t i = 0; ok && i < count; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    ok = append_file(path, bytes, n, &capb);
  }
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
  if (ok && *n == 0) {
    fprintf(stderr,
            "ctensor: fortunes: no text in %s (%zu file(s) without a '.' in their name, 0 bytes)\n",
            cli_shown(dir), count);
    ok = false;
  }
  if (!ok) {
    free(*bytes);
    *bytes = NULL, *n = 0;
  }
  return ok;
}

int64_t cli_text_train_bytes(int64_t n) { return n - n * TEXT_VALIDATION_PERCENT / 100; }

double cli_unigram_entropy(const uint8_t *bytes, int64_t n) {
  int64_t count[256] = {0};
  for (int64_t i = 0; i < n; i++) count[bytes[i]]++;
  double h = 0;
  for (int c = 0; c < 256; c++)
    if (count[c]) {
      double p = (double)count[c] / (double)n;
      h -= p * log(p);
    }
  return h;
}

/* The windows of bytes[0, n): (N, T) inputs and targets, N = (n - 1) / T. */
static ct_dataset *windows(const uint8_t *bytes, int64_t n) {
  const int64_t T = GPT_CONTEXT, N = n > 1 ? (n - 1) / T : 0;
  ct_tensor *x = ct_empty(CT_SHAPE(N, T), &(ct_tensor_opts){.dtype = CT_I64});
  ct_tensor *y = ct_empty(CT_SHAPE(N, T), &(ct_tensor_opts){.dtype = CT_I64});
  if (!x || !y) {
    ct_free(x), ct_free(y);
    return NULL;
  }
  int64_t *xi = ct_data_ptr(x), *yi = ct_data_ptr(y);
  for (int64_t w = 0; w < N; w++)
    for (int64_t t = 0; t < T; t++) {
      xi[w * T + t] = bytes[w * T + t];
      yi[w * T + t] = bytes[w * T + t + 1];
    }
  ct_dataset *ds = ct_tensor_dataset_new(x, y);
  ct_free(x), ct_free(y); /* the dataset holds its own references */
  return ds;
}

ct_dataset *cli_text_open(const char *dir, bool train) {
  uint8_t *bytes;
  int64_t n;
  if (!cli_text_read_corpus(dir, &bytes, &n)) return NULL;
  int64_t split = cli_text_train_bytes(n);
  ct_dataset *ds = train ? windows(bytes, split) : windows(bytes + split, n - split);
  if (!ds) cli_error("fortunes: building the windows");
  free(bytes);
  return ds;
}
