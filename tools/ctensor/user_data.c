/* user_data.c: training on your own data: --dataset csv:FILE (rows of
 * features and a class column, for the mlp) and --dataset folder:DIR (one
 * subfolder of PNG/JPEG images per class). The test data is a file or
 * folder of its own (--test-data, or DIR/train + DIR/test) or a seeded
 * random split of the training data (--val-split). What prediction needs
 * (class names, normalization, geometry) goes to cli_data_info, which the
 * checkpoint keeps; eval reopens the same test data from it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

bool cli_dataset_is_user(cli_dataset d) { return d == DATASET_CSV || d == DATASET_FOLDER; }

const char *cli_data_name(const char *list, int64_t i, char *buf, size_t size) {
  const char *p = list;
  for (int64_t k = 0; k < i && p; k++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  size_t n = p ? strcspn(p, "\n") : 0;
  if (n >= size) n = size - 1;
  if (p) memcpy(buf, p, n);
  buf[n] = 0;
  return buf;
}

void cli_user_data_free(cli_user_data *ud) {
  ct_dataset_free(ud->limited[0]);
  ct_dataset_free(ud->limited[1]);
  ct_dataset_free(ud->split[0]);
  ct_dataset_free(ud->split[1]);
  ct_dataset_free(ud->base_train);
  ct_dataset_free(ud->base_test);
  *ud = (cli_user_data){0};
}

/* Joins names[0..n) with '\n' into out (size bytes); false if they do not fit. */
static bool join_names(const char *const *names, int64_t n, char *out, size_t size) {
  size_t used = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (strchr(names[i], '\n') || used + len + 2 > size) return false;
    if (i) out[used++] = '\n';
    memcpy(out + used, names[i], len);
    used += len;
  }
  out[used] = 0;
  return true;
}

const char **cli_data_names(const char *list, int64_t n, char **copy) {
  *copy = strdup(list);
  const char **v = calloc((size_t)n + 1, sizeof *v);
  if (!*copy || !v) {
    free(*copy);
    free(v);
    *copy = NULL;
    return NULL;
  }
  char *p = *copy;
  for (int64_t i = 0; i < n; i++) {
    v[i] = p;
    char *nl = p ? strchr(p, '\n') : NULL;
    if (nl)
      *nl = 0, p = nl + 1;
    else
      p = p + strlen(p);
  }
  return v;
}

static bool is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Copies a path into a cli_data_info field; false (after saying so) if too long. */
static bool copy_path(char *dst, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= CLI_DATA_PATH) {
    fprintf(stderr, "ctensor: the path %s is longer than the %d bytes a checkpoint keeps\n",
            cli_shown(src), CLI_DATA_PATH - 1);
    return false;
  }
  if (n) memcpy(dst, src, n);
  dst[n] = 0;
  return true;
}

/* How many of n samples the test part of a split gets: the fraction,
 * rounded, at least 1 and leaving at least 1 to train on. */
static int64_t test_count(int64_t n, double fraction) {
  int64_t k = (int64_t)llround((double)n * fraction);
  if (k < 1) k = 1;
  if (k > n - 1) k = n - 1;
  return k;
}

static int fail(const char *what) {
  cli_error(what);
  return CLI_FAIL;
}

/* ---- CSV ------------------------------------------------------------------------- */

/* The test rows: a file of their own read with the training columns,
 * classes and statistics. */
static ct_dataset *csv_open_with(const char *path, const cli_data_info *info) {
  char *fcopy = NULL, *ccopy = NULL;
  int64_t nf = info->num_stats;
  const char **features = cli_data_names(info->feature_names, nf, &fcopy);
  const char **classes = cli_data_names(info->class_names, info->num_classes, &ccopy);
  ct_dataset *d = NULL;
  const bool regression = info->num_classes == 1;
  if (features && classes)
    d = ct_csv_dataset_open(path, &(ct_csv_opts){.target = info->target_name,
                                                 .features = features,
                                                 .num_features = nf,
                                                 .regression = regression,
                                                 .class_names = regression ? NULL : classes,
                                                 .num_classes = regression ? 0 : info->num_classes,
                                                 .normalize = true,
                                                 .mean = info->mean,
                                                 .std = info->std});
  free(features);
  free(classes);
  free(fcopy);
  free(ccopy);
  return d;
}

static int csv_info(const ct_dataset *d, cli_data_info *info) {
  const ct_csv_info *ci = ct_csv_dataset_info(d);
  if (!ci) return fail("reading the CSV columns");
  if (ci->num_features > CLI_DATA_MAX_STATS) {
    fprintf(stderr, "ctensor: the CSV has %lld feature columns; this program takes up to %d\n",
            (long long)ci->num_features, CLI_DATA_MAX_STATS);
    return CLI_FAIL;
  }
  if (ci->regression) {
    info->num_classes = 1; /* one output, the value */
  } else if (ci->num_classes < 2) {
    fprintf(stderr,
            "ctensor: the target column '%s' holds %lld class(es): classification needs 2 "
            "or more\n",
            cli_shown(ci->target_name), (long long)ci->num_classes);
    return CLI_FAIL;
  }
  if (!ci->regression) info->num_classes = ci->num_classes;
  info->channels = info->height = 1;
  info->width = ci->num_features;
  info->num_stats = ci->num_features;
  for (int64_t f = 0; f < ci->num_features; f++) {
    info->mean[f] = ci->mean[f];
    info->std[f] = ci->std[f];
  }
  snprintf(info->target_name, sizeof info->target_name, "%s", ci->target_name);
  if (!join_names(ci->class_names, ci->num_classes, info->class_names, sizeof info->class_names) ||
      !join_names(ci->feature_names, ci->num_features, info->feature_names,
                  sizeof info->feature_names)) {
    fprintf(stderr, "ctensor: the CSV's class or column names are too long to keep (%d bytes)\n",
            CLI_DATA_TEXT);
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* ---- Image folders ----------------------------------------------------------------- */

/* The folder options: square images of the saved size, normalized to
 * [-1, 1] (mean 0.5, std 0.5 per channel), training transforms from augment. */
static ct_image_folder_opts folder_opts(const cli_data_info *info, int augment, uint64_t seed) {
  ct_image_folder_opts fo = {
      .channels = (int)info->channels, .resize_h = info->height, .resize_w = info->width};
  fo.transforms.normalize = true;
  for (int k = 0; k < 3; k++) {
    fo.transforms.mean[k] = info->mean[k < info->num_stats ? k : 0];
    fo.transforms.std[k] = info->std[k < info->num_stats ? k : 0];
  }
  fo.transforms.seed = seed;
  fo.transforms.random_hflip = (augment & AUG_HFLIP) != 0;
  if (augment & AUG_CROP) {
    fo.transforms.random_crop = info->height;
    fo.transforms.crop_padding = info->height / 8 > 0 ? info->height / 8 : 1;
  }
  return fo;
}

static ct_dataset *folder_open_with(const char *dir, const cli_data_info *info, int augment,
                                    uint64_t seed) {
  char *ccopy = NULL;
  const char **classes = cli_data_names(info->class_names, info->num_classes, &ccopy);
  ct_dataset *d = NULL;
  if (classes) {
    ct_image_folder_opts fo = folder_opts(info, augment, seed);
    fo.class_names = classes;
    fo.num_classes = info->num_classes;
    d = ct_image_folder_open(dir, &fo);
  }
  free(classes);
  free(ccopy);
  return d;
}

static int folder_info(const char *dir, int64_t size, cli_data_info *info) {
  ct_image_folder_opts fo = {.resize_h = size, .resize_w = size};
  ct_dataset *d = ct_image_folder_open(dir, &fo);
  if (!d) return fail("opening the image folder");
  const ct_image_folder_info *fi = ct_image_folder_info_of(d);
  int rc = CLI_OK;
  if (fi->num_classes < 2) {
    fprintf(stderr, "ctensor: %s holds %lld class folder(s): classification needs 2 or more\n",
            cli_shown(dir), (long long)fi->num_classes);
    rc = CLI_FAIL;
  } else if (!join_names(fi->class_names, fi->num_classes, info->class_names,
                         sizeof info->class_names)) {
    fprintf(stderr, "ctensor: the class names of %s are too long to keep\n", cli_shown(dir));
    rc = CLI_FAIL;
  }
  info->num_classes = fi->num_classes;
  info->channels = 3;
  info->height = info->width = size;
  info->num_stats = 3;
  for (int k = 0; k < 3; k++) info->mean[k] = info->std[k] = 0.5;
  ct_dataset_free(d);
  return rc;
}

/* ---- Both ------------------------------------------------------------------------------ */

/* Opens the training data (or, for eval, the source again) once per use:
 * the training copy with the random transforms, the test copy without. */
static ct_dataset *open_source(const cli_opts *o, const char *path, const cli_data_info *info,
                               int augment, uint64_t seed) {
  return o->dataset == DATASET_CSV ? csv_open_with(path, info)
                                   : folder_open_with(path, info, augment, seed);
}

/* The same seeded split of both copies of the data: train from the first,
 * test from the second. */
static int split_sources(cli_user_data *ud, double fraction, uint64_t seed) {
  int64_t n = ct_dataset_length(ud->base_train);
  if (n < 2) {
    fprintf(stderr, "ctensor: %lld sample(s) cannot be split into training and test data\n",
            (long long)n);
    return CLI_FAIL;
  }
  int64_t k = test_count(n, fraction);
  int64_t lengths[2] = {n - k, k};
  ct_dataset *a[2], *b[2];
  if (ct_random_split(ud->base_train, lengths, 2, seed, a) != CT_OK)
    return fail("splitting the data");
  if (ct_random_split(ud->base_test, lengths, 2, seed, b) != CT_OK) {
    ct_dataset_free(a[0]);
    ct_dataset_free(a[1]);
    return fail("splitting the data");
  }
  ct_dataset_free(a[1]);
  ct_dataset_free(b[0]);
  ud->split[0] = a[0];
  ud->split[1] = b[1];
  ud->train = a[0];
  ud->test = b[1];
  return CLI_OK;
}

/* The first `limit` samples of *ds (limit > 0 and below its length), kept in *slot. */
static int apply_limit(ct_dataset **ds, int64_t limit, ct_dataset **slot) {
  int64_t n = ct_dataset_length(*ds);
  if (limit <= 0 || limit >= n) return CLI_OK;
  int64_t *idx = malloc(sizeof *idx * (size_t)limit);
  if (!idx) return fprintf(stderr, "ctensor: out of memory\n"), CLI_FAIL;
  for (int64_t i = 0; i < limit; i++) idx[i] = i;
  *slot = ct_subset_new(*ds, idx, limit);
  free(idx);
  if (!*slot) return fail("keeping the first samples (--limit-*)");
  *ds = *slot;
  return CLI_OK;
}

/* Each feature's mean and standard deviation over the rows the seeded split
 * keeps for training (the split split_sources makes again): the held-out
 * test rows must not shape the scaling the model learns with, nor through it
 * their own score. Fewer than 2 rows: left as they are (the split says why). */
static int train_rows_stats(const cli_opts *o, const char *path, double fraction,
                            cli_data_info *info) {
  ct_dataset *raw =
      ct_csv_dataset_open(path, &(ct_csv_opts){.target = o->target, .regression = o->regression});
  if (!raw) return fail("reading the CSV file");
  int64_t n = ct_dataset_length(raw), F = info->num_stats;
  if (n < 2) {
    ct_dataset_free(raw);
    return CLI_OK;
  }
  int64_t k = test_count(n, fraction), lengths[2] = {n - k, k};
  ct_dataset *part[2];
  if (ct_random_split(raw, lengths, 2, o->seed, part) != CT_OK) {
    ct_dataset_free(raw);
    return fail("splitting the data");
  }
  double mean[CLI_DATA_MAX_STATS] = {0}, m2[CLI_DATA_MAX_STATS] = {0};
  float row[CLI_DATA_MAX_STATS];
  int rc = CLI_OK;
  for (int64_t i = 0; i < lengths[0] && rc == CLI_OK; i++) { /* Welford, row by row */
    ct_sample smp = {0};
    if (ct_dataset_get(part[0], i, &smp) != CT_OK ||
        ct_copy_to_host(smp.input, row, sizeof(float) * (size_t)F) != CT_OK)
      rc = fail("reading the CSV rows for their statistics");
    for (int64_t f = 0; rc == CLI_OK && f < F; f++) {
      double d = row[f] - mean[f];
      mean[f] += d / (double)(i + 1);
      m2[f] += d * (row[f] - mean[f]);
    }
    ct_free(smp.input);
    ct_free(smp.target);
  }
  for (int64_t f = 0; rc == CLI_OK && f < F; f++) {
    double sd = sqrt(m2[f] / (double)lengths[0]);
    info->mean[f] = mean[f];
    info->std[f] = sd > 0 ? sd : 1;
  }
  ct_dataset_free(part[0]);
  ct_dataset_free(part[1]);
  ct_dataset_free(raw);
  return rc;
}

static int open_sets(const cli_opts *o, bool eval, cli_data_info *info, cli_user_data *ud);

int cli_user_data_open(const cli_opts *o, bool eval, cli_data_info *info, cli_user_data *ud) {
  int rc = open_sets(o, eval, info, ud);
  if (rc == CLI_OK && ud->train && !eval)
    rc = apply_limit(&ud->train, o->limit_train, &ud->limited[0]);
  if (rc == CLI_OK) rc = apply_limit(&ud->test, o->limit_test, &ud->limited[1]);
  return rc;
}

static int open_sets(const cli_opts *o, bool eval, cli_data_info *info, cli_user_data *ud) {
  *ud = (cli_user_data){0};
  const bool folder = o->dataset == DATASET_FOLDER;
  int rc = CLI_OK;
  if (!eval) {
    const char *src = o->data_dir;
    char train_dir[CLI_DATA_PATH + 8], test_dir[CLI_DATA_PATH + 8];
    snprintf(train_dir, sizeof train_dir, "%s/train", src);
    snprintf(test_dir, sizeof test_dir, "%s/test", src);
    const char *test_src = o->test_data;
    if (folder && is_dir(train_dir) && is_dir(test_dir)) { /* DIR/train and DIR/test */
      src = train_dir;
      if (!test_src) test_src = test_dir;
    }
    *info = (cli_data_info){0};
    if (!copy_path(info->source, src) || !copy_path(info->test_source, test_src)) return CLI_FAIL;
    info->val_split = test_src ? 0 : o->val_split;
    if (folder) {
      if ((rc = folder_info(src, o->image_size, info)) != CLI_OK) return rc;
    } else {
      ct_dataset *d = ct_csv_dataset_open(
          src, &(ct_csv_opts){.target = o->target, .regression = o->regression, .normalize = true});
      if (!d) return fail("reading the CSV file");
      rc = csv_info(d, info);
      ct_dataset_free(d);
      if (rc == CLI_OK && !test_src) rc = train_rows_stats(o, src, o->val_split, info);
      if (rc != CLI_OK) return rc;
    }
  }
  const char *test_src = o->test_data           ? o->test_data
                         : info->test_source[0] ? info->test_source
                                                : NULL;
  if (!eval || !test_src) { /* the training data: to train on, or to split again */
    if (!(ud->base_train = open_source(o, info->source, info, eval ? 0 : o->augment, o->seed)))
      return fail(o->dataset == DATASET_CSV ? "reading the CSV file" : "opening the image folder");
  }
  if (test_src) {
    if (!(ud->base_test = open_source(o, test_src, info, 0, o->seed)))
      return fail(o->dataset == DATASET_CSV ? "reading the test CSV file"
                                            : "opening the test image folder");
    ud->train = ud->base_train;
    ud->test = ud->base_test;
    return CLI_OK;
  }
  if (!(ud->base_test = open_source(o, info->source, info, 0, o->seed)))
    return fail("opening the data again for its test split");
  return split_sources(ud, info->val_split > 0 ? info->val_split : o->val_split, o->seed);
}
