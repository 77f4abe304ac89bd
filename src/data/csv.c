/* The CSV dataset: a delimited text file read into memory as (F) f32 feature
 * rows and class indices (or float targets). The file is parsed once into
 * cells (RFC 4180 quoting), columns are chosen by name or index, labels are
 * mapped to sorted class indices, and the features are standardized with
 * statistics kept in the dataset so a program can save them with its model.
 * The rows then live in a tensor dataset, whose fast batch path the loader
 * uses. Every error names the file, the line, the column and the value. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/io.h"
#include "data/data_internal.h"

#define CSV_MAX_FILE ((long)1 << 31) /* 2 GiB: read whole */

typedef struct csv_row {
  char **cells;
  int64_t ncells, line;
} csv_row;

typedef struct csv_data {
  ct_dataset *inner; /* the tensor dataset of the rows */
  ct_csv_info info;
  char **feature_names, *target_name, **class_names;
  double *mean, *std;
} csv_data;

/* ---- Parsing ----------------------------------------------------------------------- */

/* Splits text (modified in place: cells are unquoted and terminated there)
 * into rows; blank lines are skipped. */
static ct_status parse_rows(const char *path, char *text, size_t size, char delim,
                            csv_row **rows_out, int64_t *nrows_out) {
  csv_row *rows = NULL;
  int64_t nrows = 0, cap_rows = 0, line = 1;
  size_t i = 0;
  while (i < size) {
    int64_t start_line = line;
    char **cells = NULL;
    int64_t ncells = 0, cap = 0;
    bool blank = true;
    for (;;) { /* one cell */
      char *out = text + i, *cell = out;
      if (i < size && text[i] == '"') {
        blank = false;
        i++;
        for (;;) {
          if (i >= size) {
            ct__free(cells);
            for (int64_t r = 0; r < nrows; r++) ct__free(rows[r].cells);
            ct__free(rows);
            return ct__fail_status(CT_ERR_FORMAT,
                                   "csv_dataset_open: %s line %lld: a quoted cell is "
                                   "not closed before the end of the file",
                                   path, (long long)start_line);
          }
          if (text[i] == '"') {
            if (i + 1 < size && text[i + 1] == '"') {
              *out++ = '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (text[i] == '\n') line++;
          *out++ = text[i++];
        }
      }
      while (i < size && text[i] != delim && text[i] != '\n') {
        if (text[i] != '\r' && text[i] != ' ' && text[i] != '\t') blank = false;
        *out++ = text[i++];
      }
      char end = i < size ? text[i] : '\n';
      if (out > cell && out[-1] == '\r') out--;
      *out = 0; /* out <= text + i: writes over the delimiter or newline at worst */
      if (i < size) i++;
      if (ncells == cap) {
        cap = cap ? 2 * cap : 16;
        char **c = ct__realloc_array(cells, (size_t)cap, sizeof *c);
        if (!c) {
          ct__free(cells);
          for (int64_t r = 0; r < nrows; r++) ct__free(rows[r].cells);
          ct__free(rows);
          return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory reading %s",
                                 path);
        }
        cells = c;
      }
      cells[ncells++] = cell;
      if (end == delim) blank = false;
      if (end == '\n') {
        line++;
        break;
      }
    }
    if (blank) {
      ct__free(cells);
      continue;
    }
    if (nrows == cap_rows) {
      cap_rows = cap_rows ? 2 * cap_rows : 256;
      csv_row *r = ct__realloc_array(rows, (size_t)cap_rows, sizeof *r);
      if (!r) {
        ct__free(cells);
        for (int64_t k = 0; k < nrows; k++) ct__free(rows[k].cells);
        ct__free(rows);
        return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory reading %s", path);
      }
      rows = r;
    }
    rows[nrows++] = (csv_row){.cells = cells, .ncells = ncells, .line = start_line};
  }
  *rows_out = rows;
  *nrows_out = nrows;
  return CT_OK;
}

/* A whole cell as a finite number (surrounding blanks allowed). */
static bool parse_number(const char *s, double *v) {
  while (*s == ' ' || *s == '\t') s++;
  if (!*s) return false;
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  while (*end == ' ' || *end == '\t') end++;
  if (*end || !isfinite(x)) return false;
  *v = x;
  return true;
}

/* parse_number for a cell stored as float32 (features, regression targets):
 * finite in float32 too, so that no value turns to inf when stored or when
 * the normalization sums over the column. */
static bool parse_float32(const char *s, double *v) {
  return parse_number(s, v) && fabs(*v) <= FLT_MAX;
}

static bool parse_integer(const char *s, long long *v) {
  while (*s == ' ' || *s == '\t') s++;
  if (!*s) return false;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  while (*end == ' ' || *end == '\t') end++;
  if (*end || errno) return false;
  *v = x;
  return true;
}

/* ---- Columns --------------------------------------------------------------------------- */

/* The column named spec (a header name first, else a decimal index). */
static int64_t find_column(char *const *names, int64_t ncols, const char *spec) {
  for (int64_t c = 0; c < ncols; c++)
    if (!strcmp(names[c], spec)) return c;
  long long k;
  if (parse_integer(spec, &k) && k >= 0 && k < ncols) return k;
  return -1;
}

static char *column_list(char *const *names, int64_t ncols, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = 0;
  for (int64_t c = 0; c < ncols && used + 8 < size; c++) {
    int w = snprintf(buf + used, size - used, "%s%s", c ? ", " : "", names[c]);
    if (w < 0 || (size_t)w >= size - used) {
      snprintf(buf + used, size - used, ", ...");
      break;
    }
    used += (size_t)w;
  }
  return buf;
}

/* ---- Labels ------------------------------------------------------------------------------- */

static int cmp_label_text(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_label_int(const void *a, const void *b) {
  long long x = 0, y = 0;
  parse_integer(*(char *const *)a, &x);
  parse_integer(*(char *const *)b, &y);
  return x < y ? -1 : x > y;
}

/* The distinct labels of column `col`, sorted (as numbers when all are
 * integers); ct__malloc'd array of ct__strdup'd names. */
static ct_status collect_classes(csv_row *rows, int64_t first, int64_t nrows, int64_t col,
                                 char ***names_out, int64_t *count_out) {
  char **v = ct__malloc_array((size_t)(nrows - first ? nrows - first : 1), sizeof *v);
  if (!v) return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  bool all_int = true;
  for (int64_t r = first; r < nrows; r++) {
    long long k;
    v[r - first] = rows[r].cells[col];
    all_int = all_int && parse_integer(v[r - first], &k);
  }
  int64_t n = nrows - first;
  qsort(v, (size_t)n, sizeof *v, cmp_label_text);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (u == 0 || strcmp(v[u - 1], v[i])) v[u++] = v[i];
  if (all_int) qsort(v, (size_t)u, sizeof *v, cmp_label_int);
  for (int64_t i = 0; i < u; i++) {
    char *s = ct__strdup(v[i]);
    if (!s) {
      for (int64_t k = 0; k < i; k++) ct__free(v[k]);
      ct__free(v);
      return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
    }
    v[i] = s;
  }
  *names_out = v;
  *count_out = u;
  return CT_OK;
}

/* ---- The dataset ----------------------------------------------------------------------------- */

static int64_t csv_length(void *self) {
  csv_data *c = self;
  return c->inner->vt.length(c->inner->self);
}
static ct_status csv_get(void *self, int64_t index, ct_sample *out) {
  csv_data *c = self;
  return c->inner->vt.get(c->inner->self, index, out);
}
static void csv_meta(void *self, ct__sample_meta *m) {
  csv_data *c = self;
  c->inner->fast->sample_meta(c->inner->self, m);
}
static ct_status csv_fill(void *self, const int64_t *idx, int64_t count, int64_t epoch,
                          ct_tensor *inputs, ct_tensor *targets) {
  csv_data *c = self;
  return c->inner->fast->fill(c->inner->self, idx, count, epoch, inputs, targets);
}

static void free_names(char **v, int64_t n) {
  if (!v) return;
  for (int64_t i = 0; i < n; i++) ct__free(v[i]);
  ct__free(v);
}

static void csv_destroy(void *self) {
  csv_data *c = self;
  ct_dataset_free(c->inner);
  free_names(c->feature_names, c->info.num_features);
  free_names(c->class_names, c->info.num_classes);
  ct__free(c->target_name);
  ct__free(c->mean);
  ct__free(c->std);
  ct__free(c);
}

static const ct_dataset_vtable csv_vt = {
    .length = csv_length, .get = csv_get, .destroy = csv_destroy};
static const ct__batch_ops csv_ops = {.sample_meta = csv_meta, .fill = csv_fill};

const ct_csv_info *ct_csv_dataset_info(const ct_dataset *d) {
  if (!d || d->vt.get != csv_get)
    return ct__fail(CT_ERR_ARG, "csv_dataset_info: not a CSV dataset");
  return &((csv_data *)d->self)->info;
}

/* Everything open needs between parsing and the dataset (freed by build's caller). */
typedef struct csv_build {
  const char *path;
  ct_csv_opts o;
  csv_row *rows;
  int64_t nrows, first; /* first data row (1 after a header) */
  char **names;         /* column names */
  int64_t ncols;
  int64_t *feat, nfeat, target;
  csv_data *c;
} csv_build;

static bool header_detected(const csv_build *b) {
  if (b->o.header == CT_CSV_HEADER_YES) return true;
  if (b->o.header == CT_CSV_HEADER_NO) return false;
  const csv_row *r0 = &b->rows[0];
  double v;
  for (int64_t c = 0; c < r0->ncells; c++) {
    if (parse_number(r0->cells[c], &v)) continue;
    if (b->nrows < 2) return true;
    if (c < b->rows[1].ncells && parse_number(b->rows[1].cells[c], &v)) return true;
  }
  return false;
}

static ct_status choose_columns(csv_build *b) {
  const ct_csv_opts *o = &b->o;
  char list[512];
  b->target = -1;
  if (!o->no_target) {
    b->target = o->target ? find_column(b->names, b->ncols, o->target) : b->ncols - 1;
    if (b->target < 0)
      return ct__fail_status(CT_ERR_FORMAT,
                             "csv_dataset_open: %s has no target column '%s' (columns: "
                             "%s)",
                             b->path, o->target,
                             column_list(b->names, b->ncols, list, sizeof list));
  }
  int64_t want = o->features ? o->num_features : b->ncols - (b->target >= 0);
  if (o->features && o->num_features < 1)
    return ct__fail_status(CT_ERR_ARG, "csv_dataset_open: features given with num_features %lld",
                           (long long)o->num_features);
  if (want < 1)
    return ct__fail_status(CT_ERR_FORMAT,
                           "csv_dataset_open: %s has no feature column besides the "
                           "target",
                           b->path);
  b->feat = ct__malloc_array((size_t)want, sizeof *b->feat);
  if (!b->feat) return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  b->nfeat = 0;
  for (int64_t c = 0; c < (o->features ? want : b->ncols); c++) {
    int64_t col = c;
    if (o->features) {
      col = o->features[c] ? find_column(b->names, b->ncols, o->features[c]) : -1;
      if (col < 0)
        return ct__fail_status(CT_ERR_FORMAT,
                               "csv_dataset_open: %s has no feature column '%s' "
                               "(columns: %s)",
                               b->path, o->features[c] ? o->features[c] : "(null)",
                               column_list(b->names, b->ncols, list, sizeof list));
      if (col == b->target)
        return ct__fail_status(CT_ERR_ARG,
                               "csv_dataset_open: column '%s' is both a feature and the "
                               "target",
                               b->names[col]);
    } else if (col == b->target) {
      continue;
    }
    b->feat[b->nfeat++] = col;
  }
  return CT_OK;
}

static ct_status check_rows(const csv_build *b) {
  for (int64_t r = 0; r < b->nrows; r++)
    if (b->rows[r].ncells != b->ncols)
      return ct__fail_status(CT_ERR_FORMAT,
                             "csv_dataset_open: %s line %lld has %lld cells, the %s has "
                             "%lld (a ragged row)",
                             b->path, (long long)b->rows[r].line, (long long)b->rows[r].ncells,
                             b->first ? "header" : "first line", (long long)b->ncols);
  if (b->nrows - b->first < 1)
    return ct__fail_status(CT_ERR_FORMAT, "csv_dataset_open: %s has no data rows", b->path);
  return CT_OK;
}

static ct_status bad_cell(const csv_build *b, int64_t r, int64_t col, const char *what) {
  char name[128], value[96];
  return ct__fail_status(CT_ERR_FORMAT,
                         "csv_dataset_open: %s line %lld, column %lld ('%s'): '%s' is %s", b->path,
                         (long long)b->rows[r].line, (long long)col + 1,
                         ct_escape_name(b->names[col], name, sizeof name),
                         ct_escape_name(b->rows[r].cells[col], value, sizeof value), what);
}

/* The feature matrix (n, F), normalized, into x. */
static ct_status fill_features(csv_build *b, float *x) {
  const int64_t n = b->nrows - b->first, F = b->nfeat;
  csv_data *c = b->c;
  double *vals = ct__malloc_array((size_t)(n * F), sizeof *vals);
  if (!vals) return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  for (int64_t r = 0; r < n; r++)
    for (int64_t f = 0; f < F; f++) {
      int64_t col = b->feat[f];
      if (!parse_float32(b->rows[b->first + r].cells[col], &vals[r * F + f])) {
        ct__free(vals);
        return bad_cell(b, b->first + r, col,
                        "not a number in float32's range (feature cells must be finite "
                        "float32 numbers)");
      }
    }
  for (int64_t f = 0; f < F; f++) {
    double mean = 0, std = 1;
    if (b->o.normalize && b->o.mean) {
      mean = b->o.mean[f];
      std = b->o.std[f];
    } else if (b->o.normalize) {
      double s = 0, ss = 0;
      for (int64_t r = 0; r < n; r++) s += vals[r * F + f];
      mean = s / (double)n;
      for (int64_t r = 0; r < n; r++) ss += (vals[r * F + f] - mean) * (vals[r * F + f] - mean);
      std = sqrt(ss / (double)n);
      if (!(std > 0)) std = 1;
    }
    c->mean[f] = mean;
    c->std[f] = std;
    for (int64_t r = 0; r < n; r++) x[r * F + f] = (float)((vals[r * F + f] - mean) / std);
  }
  ct__free(vals);
  return CT_OK;
}

static ct_status fill_targets(csv_build *b, ct_tensor *y) {
  const int64_t n = b->nrows - b->first, t = b->target;
  csv_data *c = b->c;
  if (t < 0) {
    memset(ct__data(y), 0, (size_t)n * ct__elsize(y->dtype));
    return CT_OK;
  }
  if (b->o.regression) {
    float *v = ct__data(y);
    for (int64_t r = 0; r < n; r++) {
      double d;
      if (!parse_float32(b->rows[b->first + r].cells[t], &d))
        return bad_cell(b, b->first + r, t,
                        "not a number in float32's range (a regression target must be a "
                        "finite float32 number)");
      v[r] = (float)d;
    }
    return CT_OK;
  }
  int64_t *v = ct__data(y);
  for (int64_t r = 0; r < n; r++) {
    const char *label = b->rows[b->first + r].cells[t];
    int64_t k = 0;
    while (k < c->info.num_classes && strcmp(c->class_names[k], label)) k++;
    if (k == c->info.num_classes)
      return bad_cell(b, b->first + r, t, "not one of the given class names");
    v[r] = k;
  }
  return CT_OK;
}

static ct_status build_dataset(csv_build *b) {
  const ct_csv_opts *o = &b->o;
  csv_data *c = b->c;
  c->info.num_features = b->nfeat;
  c->feature_names = ct__calloc((size_t)b->nfeat, sizeof(char *));
  c->mean = ct__malloc_array((size_t)b->nfeat, sizeof(double));
  c->std = ct__malloc_array((size_t)b->nfeat, sizeof(double));
  if (!c->feature_names || !c->mean || !c->std)
    return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  for (int64_t f = 0; f < b->nfeat; f++)
    if (!(c->feature_names[f] = ct__strdup(b->names[b->feat[f]])))
      return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  if (b->target >= 0 && !(c->target_name = ct__strdup(b->names[b->target])))
    return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  c->info.regression = o->regression;
  if (b->target >= 0 && !o->regression) {
    if (o->class_names) {
      c->class_names = ct__calloc((size_t)o->num_classes, sizeof(char *));
      if (!c->class_names)
        return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
      for (int64_t k = 0; k < o->num_classes; k++) {
        if (!o->class_names[k])
          return ct__fail_status(CT_ERR_ARG, "csv_dataset_open: class_names[%lld] is NULL",
                                 (long long)k);
        if (!(c->class_names[k] = ct__strdup(o->class_names[k])))
          return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
        c->info.num_classes = k + 1;
      }
    } else {
      ct_status st = collect_classes(b->rows, b->first, b->nrows, b->target, &c->class_names,
                                     &c->info.num_classes);
      if (st != CT_OK) return st;
    }
  }
  const int64_t n = b->nrows - b->first;
  ct_tensor *x = ct__empty((int64_t[]){n, b->nfeat}, 2, CT_F32, ct_cpu());
  ct_tensor *y = x ? ct__empty((int64_t[]){n}, 1, o->regression ? CT_F32 : CT_I64, ct_cpu()) : NULL;
  ct_status st = y ? fill_features(b, ct__data(x)) : ct_last_error();
  if (st == CT_OK) st = fill_targets(b, y);
  if (st == CT_OK) {
    c->inner = ct_tensor_dataset_new(x, y);
    if (!c->inner) st = ct_last_error();
  }
  ct__release(x);
  ct__release(y);
  if (st != CT_OK) return st;
  c->info.feature_names = (const char *const *)c->feature_names;
  c->info.target_name = c->target_name;
  c->info.class_names = (const char *const *)c->class_names;
  c->info.normalized = o->normalize;
  c->info.mean = c->mean;
  c->info.std = c->std;
  return CT_OK;
}

static ct_status check_opts(const char *path, const ct_csv_opts *o) {
  if (!path) return ct__fail_status(CT_ERR_ARG, "csv_dataset_open: path is NULL");
  if (o->delimiter == '"' || o->delimiter == '\n' || o->delimiter == '\r')
    return ct__fail_status(CT_ERR_ARG,
                           "csv_dataset_open: the delimiter cannot be a quote or a newline");
  if ((unsigned)o->header > CT_CSV_HEADER_NO)
    return ct__fail_status(CT_ERR_ARG, "csv_dataset_open: header %d is not a ct_csv_header",
                           (int)o->header);
  if (o->class_names && (o->num_classes < 1 || o->regression))
    return ct__fail_status(CT_ERR_ARG,
                           "csv_dataset_open: class_names need num_classes >= 1 (got %lld) "
                           "and classification",
                           (long long)o->num_classes);
  if (o->normalize && (!o->mean) != (!o->std))
    return ct__fail_status(CT_ERR_ARG, "csv_dataset_open: give both mean and std, or neither");
  return CT_OK;
}

static ct_status read_text(const char *real_path, char **text, size_t *size) {
  char shown[512];
  const char *path = ct_escape_name(real_path, shown, sizeof shown);
  FILE *f = fopen(real_path, "rb");
  if (!f)
    return ct__fail_status(CT_ERR_IO, "csv_dataset_open: cannot open %s: %s", path,
                           strerror(errno));
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n < 0 || n > CSV_MAX_FILE || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return ct__fail_status(n > CSV_MAX_FILE ? CT_ERR_FORMAT : CT_ERR_IO,
                           "csv_dataset_open: cannot read %s%s", path,
                           n > CSV_MAX_FILE ? " (larger than 2 GiB)" : "");
  }
  char *buf = ct__malloc((size_t)n + 1);
  if (!buf) {
    fclose(f);
    return ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory reading %s", path);
  }
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  if (got != (size_t)n) {
    ct__free(buf);
    return ct__fail_status(CT_ERR_IO, "csv_dataset_open: short read of %s", path);
  }
  buf[n] = 0;
  *text = buf;
  *size = (size_t)n;
  return CT_OK;
}

ct_dataset *ct_csv_dataset_open(const char *path, const ct_csv_opts *opts) {
  csv_build b = {.o = opts ? *opts : (ct_csv_opts){0}};
  if (!b.o.delimiter) b.o.delimiter = ',';
  if (check_opts(path, &b.o) != CT_OK) return NULL;
  char shown[512]; /* the path as messages show it */
  b.path = ct_escape_name(path, shown, sizeof shown);
  char *text = NULL;
  size_t size = 0;
  if (read_text(path, &text, &size) != CT_OK) return NULL;
  ct_status st = parse_rows(b.path, text, size, b.o.delimiter, &b.rows, &b.nrows);
  if (st == CT_OK && b.nrows == 0)
    st = ct__fail_status(CT_ERR_FORMAT, "csv_dataset_open: %s is empty (no rows)", b.path);
  char **index_names = NULL;
  if (st == CT_OK) {
    b.ncols = b.rows[0].ncells;
    b.first = header_detected(&b) ? 1 : 0;
    if (b.first) {
      b.names = b.rows[0].cells;
    } else {
      index_names = ct__calloc((size_t)b.ncols, sizeof *index_names);
      for (int64_t c = 0; index_names && c < b.ncols; c++) {
        char num[24];
        snprintf(num, sizeof num, "%lld", (long long)c);
        if (!(index_names[c] = ct__strdup(num))) break;
      }
      if (!index_names || !index_names[b.ncols - 1])
        st = ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
      b.names = index_names;
    }
  }
  if (st == CT_OK) st = check_rows(&b);
  if (st == CT_OK) st = choose_columns(&b);
  if (st == CT_OK && b.o.normalize && b.o.mean)
    for (int64_t f = 0; f < b.nfeat && st == CT_OK; f++)
      if (!isfinite(b.o.mean[f]) || !(b.o.std[f] > 0) || !isfinite(b.o.std[f]))
        st = ct__fail_status(CT_ERR_ARG,
                             "csv_dataset_open: feature %lld ('%s'): mean %g, std %g (need "
                             "finite values, std > 0)",
                             (long long)f, b.names[b.feat[f]], b.o.mean[f], b.o.std[f]);
  if (st == CT_OK && !(b.c = ct__calloc(1, sizeof *b.c)))
    st = ct__fail_status(CT_ERR_OOM, "csv_dataset_open: out of host memory");
  if (st == CT_OK) st = build_dataset(&b);
  ct_dataset *d = NULL;
  if (st == CT_OK) {
    d = ct__dataset_new_fast(&csv_vt, &csv_ops, b.c); /* owns b.c from here, also on failure */
    b.c = NULL;
  }
  if (b.c) csv_destroy(b.c);
  if (index_names) free_names(index_names, b.ncols);
  for (int64_t r = 0; r < b.nrows; r++) ct__free(b.rows[r].cells);
  ct__free(b.rows);
  ct__free(b.feat);
  ct__free(text);
  return d;
}
