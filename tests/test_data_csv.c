/* The CSV dataset (ct_csv_dataset_open) and the datasets over datasets
 * (ct_subset_new, ct_concat_dataset_new, ct_random_split): small CSV files
 * written at test time, compared with float64 references computed here, and
 * every bad input's message (file, line, column, value). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_test.h"
#include "ctensor/data.h"

static char tmp_path[64];

/* Writes text to a new temporary file; returns its path (static buffer). */
static const char *write_csv(const char *text) {
  strcpy(tmp_path, "/tmp/ct_test_csv_XXXXXX");
  int fd = mkstemp(tmp_path);
  if (fd < 0) {
    perror("mkstemp");
    abort();
  }
  size_t n = strlen(text);
  CHECK(write(fd, text, n) == (ssize_t)n);
  close(fd);
  return tmp_path;
}

static double at(const ct_tensor *t, int64_t i) {
  double *v = ct_test_values(t);
  double x = v[i];
  free(v);
  return x;
}

/* Sample i's features (F of them) and target. */
static void sample(const ct_dataset *d, int64_t i, double *x, int64_t F, double *y) {
  ct_sample s;
  CHECK_STATUS_OK(ct_dataset_get(d, i, &s));
  if (!s.input) return;
  CHECK(ct_ndim(s.input) == 1 && ct_size(s.input, 0) == F && ct_ndim(s.target) == 0);
  for (int64_t f = 0; f < F; f++) x[f] = at(s.input, f);
  *y = at(s.target, 0);
  ct_free(s.input);
  ct_free(s.target);
}

CT_TEST(csv_header_labels_and_normalization) {
  const char *p = write_csv(
      "x1,x2,species\n"
      "1.0,10,versicolor\n"
      "2.0,20,setosa\n"
      "\n"
      "3.0,60,virginica\r\n"
      "6.0,30,setosa\n");
  ct_dataset *d = ct_csv_dataset_open(p, &(ct_csv_opts){.normalize = true});
  CHECK_OK(d);
  if (!d) return;
  CHECK(ct_dataset_length(d) == 4);
  const ct_csv_info *info = ct_csv_dataset_info(d);
  CHECK_OK(info);
  CHECK(info->num_features == 2 && !strcmp(info->feature_names[0], "x1") &&
        !strcmp(info->feature_names[1], "x2") && !strcmp(info->target_name, "species"));
  CHECK(info->num_classes == 3 && !strcmp(info->class_names[0], "setosa") &&
        !strcmp(info->class_names[1], "versicolor") && !strcmp(info->class_names[2], "virginica"));
  /* float64 reference: population mean and std per column */
  const double col[2][4] = {{1, 2, 3, 6}, {10, 20, 60, 30}};
  const int64_t labels[4] = {1, 0, 2, 0};
  double mean[2], sd[2];
  for (int f = 0; f < 2; f++) {
    mean[f] = (col[f][0] + col[f][1] + col[f][2] + col[f][3]) / 4;
    double ss = 0;
    for (int r = 0; r < 4; r++) ss += (col[f][r] - mean[f]) * (col[f][r] - mean[f]);
    sd[f] = sqrt(ss / 4);
    CHECK(fabs(info->mean[f] - mean[f]) < 1e-12 && fabs(info->std[f] - sd[f]) < 1e-12);
  }
  for (int64_t r = 0; r < 4; r++) {
    double x[2], y = -1;
    sample(d, r, x, 2, &y);
    for (int f = 0; f < 2; f++)
      CHECK_MSG(fabs(x[f] - (col[f][r] - mean[f]) / sd[f]) < 1e-6, "row %lld feature %d: %g",
                (long long)r, f, x[f]);
    CHECK(y == (double)labels[r]);
  }
  ct_dataset_free(d);
  CHECK_ERR(ct_csv_dataset_info(NULL), CT_ERR_ARG);
  unlink(p);
}

CT_TEST(csv_integer_labels_sort_numerically) {
  const char *p = write_csv("a,label\n0.5,10\n1.5,2\n2.5,1\n3.5,2\n");
  ct_dataset *d = ct_csv_dataset_open(p, NULL);
  CHECK_OK(d);
  if (!d) return;
  const ct_csv_info *info = ct_csv_dataset_info(d);
  CHECK(info->num_classes == 3 && !strcmp(info->class_names[0], "1") &&
        !strcmp(info->class_names[1], "2") && !strcmp(info->class_names[2], "10"));
  const double want_y[4] = {2, 1, 0, 1};
  for (int64_t r = 0; r < 4; r++) {
    double x = -1, y = -1;
    sample(d, r, &x, 1, &y);
    CHECK(x == 0.5 + (double)r && y == want_y[r]); /* no normalize: values as written */
  }
  ct_dataset_free(d);
  unlink(p);
}

CT_TEST(csv_columns_delimiter_quotes_regression) {
  const char *p = write_csv(
      "id;\"name; with delim\";w;price\n"
      "7;\"say \"\"hi\"\"\";2.5;100\n"
      "8;plain;-1e1;250.5\n");
  const char *feats[] = {"w", "0"};
  ct_dataset *d = ct_csv_dataset_open(p, &(ct_csv_opts){.delimiter = ';',
                                                        .target = "price",
                                                        .features = feats,
                                                        .num_features = 2,
                                                        .regression = true});
  CHECK_OK(d);
  if (!d) return;
  const ct_csv_info *info = ct_csv_dataset_info(d);
  CHECK(info->regression && info->num_classes == 0 && !strcmp(info->feature_names[0], "w") &&
        !strcmp(info->feature_names[1], "id") && !strcmp(info->target_name, "price"));
  double x[2] = {0, 0}, y = -1;
  sample(d, 0, x, 2, &y);
  CHECK(x[0] == 2.5 && x[1] == 7 && y == 100);
  sample(d, 1, x, 2, &y);
  CHECK(x[0] == -10 && x[1] == 8 && y == 250.5);
  ct_dataset_free(d);
  /* the quoted header cell, unquoted, names a column */
  const char *by_name[] = {"name; with delim"};
  CHECK_ERR_MSG(ct_csv_dataset_open(p, &(ct_csv_opts){.delimiter = ';',
                                                      .target = "price",
                                                      .features = by_name,
                                                      .num_features = 1,
                                                      .regression = true}),
                CT_ERR_FORMAT,
                "line 2, column 2 ('name; with delim'): 'say \"hi\"' is not a number");
  unlink(p);
}

CT_TEST(csv_given_statistics_classes_and_no_header) {
  const char *p = write_csv("1,2,b\n3,4,a\n");
  const char *classes[] = {"a", "b", "c"};
  const double mean[] = {1, 2}, sd[] = {2, 4};
  ct_dataset *d = ct_csv_dataset_open(p, &(ct_csv_opts){.header = CT_CSV_HEADER_NO,
                                                        .class_names = classes,
                                                        .num_classes = 3,
                                                        .normalize = true,
                                                        .mean = mean,
                                                        .std = sd});
  CHECK_OK(d);
  if (!d) return;
  const ct_csv_info *info = ct_csv_dataset_info(d);
  CHECK(info->num_classes == 3 && !strcmp(info->target_name, "2") &&
        !strcmp(info->feature_names[0], "0"));
  double x[2] = {0, 0}, y = -1;
  sample(d, 1, x, 2, &y);
  CHECK(x[0] == 1 && x[1] == 0.5 && y == 0);
  ct_dataset_free(d);
  /* prediction inputs: no target column, targets 0 */
  d = ct_csv_dataset_open(p, &(ct_csv_opts){.header = CT_CSV_HEADER_NO,
                                            .no_target = true,
                                            .features = (const char *[]){"1", "0"},
                                            .num_features = 2});
  CHECK_OK(d);
  if (d) {
    double x2[2] = {0, 0}, y2 = -1;
    sample(d, 0, x2, 2, &y2);
    CHECK(ct_csv_dataset_info(d)->num_features == 2 && x2[0] == 2 && x2[1] == 1 && y2 == 0);
    ct_dataset_free(d);
  }
  const char *two[] = {"a", "c"};
  CHECK_ERR_MSG(
      ct_csv_dataset_open(
          p, &(ct_csv_opts){.header = CT_CSV_HEADER_NO, .class_names = two, .num_classes = 2}),
      CT_ERR_FORMAT, "line 1, column 3 ('2'): 'b' is not one of the given class names");
  unlink(p);
}

CT_TEST(csv_no_target_reads_every_column) {
  const char *p = write_csv("u,v\n1,2\n3,4\n");
  ct_dataset *d = ct_csv_dataset_open(p, &(ct_csv_opts){.no_target = true});
  CHECK_OK(d);
  if (!d) return;
  const ct_csv_info *info = ct_csv_dataset_info(d);
  CHECK(info->num_features == 2 && info->target_name == NULL && info->num_classes == 0);
  double x[2] = {0, 0}, y = -1;
  sample(d, 1, x, 2, &y);
  CHECK(x[0] == 3 && x[1] == 4 && y == 0);
  ct_dataset_free(d);
  unlink(p);
}

CT_TEST(csv_bad_files_name_line_column_value) {
  CHECK_ERR_MSG(ct_csv_dataset_open("/nonexistent/x.csv", NULL), CT_ERR_IO, "/nonexistent/x.csv");
  const char *p = write_csv("");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT, "is empty");
  unlink(p);
  p = write_csv("a,b\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT, "has no data rows");
  unlink(p);
  p = write_csv("a,b,c\n1,2,x\n3,4\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT,
                "line 3 has 2 cells, the header has 3");
  unlink(p);
  p = write_csv("a,b,c\n1,2,x\n3,oops,y\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT,
                "line 3, column 2 ('b'): 'oops' is not a number");
  unlink(p);
  p = write_csv("a,b,c\n1,,x\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT,
                "line 2, column 2 ('b'): '' is not a number");
  unlink(p);
  p = write_csv("a,b,c\n1,inf,x\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT, "'inf' is not a number");
  unlink(p);
  /* finite as a double, inf as the float32 the features are stored in */
  p = write_csv("a,b,c\n1,755e42,x\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT,
                "line 2, column 2 ('b'): '755e42' is not a number in float32's range");
  unlink(p);
  p = write_csv("a,b,c\n1,2,x\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, &(ct_csv_opts){.target = "d"}), CT_ERR_FORMAT,
                "no target column 'd' (columns: a, b, c)");
  CHECK_ERR_MSG(
      ct_csv_dataset_open(p, &(ct_csv_opts){.features = (const char *[]){"zz"}, .num_features = 1}),
      CT_ERR_FORMAT, "no feature column 'zz'");
  CHECK_ERR_MSG(
      ct_csv_dataset_open(p, &(ct_csv_opts){.features = (const char *[]){"c"}, .num_features = 1}),
      CT_ERR_ARG, "both a feature and the target");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, &(ct_csv_opts){.regression = true}), CT_ERR_FORMAT,
                "line 2, column 3 ('c'): 'x' is not a number in float32's range (a regression "
                "target");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, &(ct_csv_opts){.normalize = true, .mean = (double[]){0, 0}}),
                CT_ERR_ARG, "both mean and std");
  CHECK_ERR_MSG(
      ct_csv_dataset_open(
          p, &(ct_csv_opts){.normalize = true, .mean = (double[]){0, 0}, .std = (double[]){1, 0}}),
      CT_ERR_ARG, "feature 1 ('b'): mean 0, std 0");
  CHECK_ERR(ct_csv_dataset_open(p, &(ct_csv_opts){.delimiter = '"'}), CT_ERR_ARG);
  unlink(p);
  p = write_csv("a,b\n1,\"open\n2,3\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT, "line 2: a quoted cell is not closed");
  unlink(p);
  p = write_csv("x\n1\n");
  CHECK_ERR_MSG(ct_csv_dataset_open(p, NULL), CT_ERR_FORMAT,
                "no feature column besides the target");
  unlink(p);
}

/* ---- Subset, concatenation, random split --------------------------------------------- */

static ct_dataset *range_dataset(int64_t n, int64_t start) {
  ct_tensor *x =
      ct_arange((double)start, (double)(start + n), 1, &(ct_tensor_opts){.dtype = CT_F32});
  ct_tensor *y =
      ct_arange((double)start, (double)(start + n), 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  ct_free(x);
  ct_free(y);
  return d;
}

static int64_t target_of(const ct_dataset *d, int64_t i) {
  ct_sample s;
  if (ct_dataset_get(d, i, &s) != CT_OK) return -1;
  int64_t v = (int64_t)at(s.target, 0);
  ct_free(s.input);
  ct_free(s.target);
  return v;
}

CT_TEST(subset_concat_split) {
  ct_dataset *a = range_dataset(10, 0), *b = range_dataset(5, 100);
  CHECK_OK(a && b);
  ct_dataset *sub = ct_subset_new(a, (int64_t[]){7, 2, 2}, 3);
  CHECK_OK(sub);
  CHECK(ct_dataset_length(sub) == 3 && target_of(sub, 0) == 7 && target_of(sub, 2) == 2);
  CHECK_ERR_MSG(ct_subset_new(a, (int64_t[]){10}, 1), CT_ERR_ARG,
                "indices[0] = 10 is outside 0..9");
  ct_dataset *cat = ct_concat_dataset_new((ct_dataset *[]){a, b, sub}, 3);
  CHECK_OK(cat);
  CHECK(ct_dataset_length(cat) == 18 && target_of(cat, 9) == 9 && target_of(cat, 10) == 100 &&
        target_of(cat, 14) == 104 && target_of(cat, 15) == 7);
  /* the loader over the concatenation: the fast path gives the same rows */
  ct_dataloader *dl =
      ct_dataloader_new(cat, &(ct_dataloader_opts){.batch_size = 18, .num_workers = 2});
  CHECK_OK(dl);
  ct_batch bt;
  CHECK_STATUS_OK(ct_dataloader_next(dl, &bt));
  for (int64_t i = 0; bt.targets && i < 18; i++) CHECK(at(bt.targets, i) == target_of(cat, i));
  ct_batch_release(&bt);
  ct_dataloader_free(dl);
  ct_tensor *x2 = ct_zeros((int64_t[]){3, 2}, 2, &(ct_tensor_opts){.dtype = CT_F32});
  ct_tensor *y2 = ct_zeros((int64_t[]){3}, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *wide = ct_tensor_dataset_new(x2, y2);
  ct_free(x2);
  ct_free(y2);
  CHECK_ERR_MSG(ct_concat_dataset_new((ct_dataset *[]){a, wide}, 2), CT_ERR_SHAPE, "parts[1]");
  CHECK_ERR(ct_concat_dataset_new(NULL, 0), CT_ERR_ARG);

  ct_dataset *parts[2], *again[2];
  CHECK_STATUS_OK(ct_random_split(a, (int64_t[]){7, 3}, 2, 42, parts));
  CHECK_STATUS_OK(ct_random_split(a, (int64_t[]){7, 3}, 2, 42, again));
  CHECK(ct_dataset_length(parts[0]) == 7 && ct_dataset_length(parts[1]) == 3);
  int seen[10] = {0};
  bool same = true, identity = true;
  for (int p = 0; p < 2; p++)
    for (int64_t i = 0; i < ct_dataset_length(parts[p]); i++) {
      int64_t v = target_of(parts[p], i);
      if (v >= 0 && v < 10) seen[v]++;
      same = same && v == target_of(again[p], i);
      identity = identity && v == (p ? 7 : 0) + i;
    }
  for (int v = 0; v < 10; v++) CHECK_MSG(seen[v] == 1, "sample %d seen %d times", v, seen[v]);
  CHECK(same);
  CHECK(!identity); /* a shuffle of 10 by seed 42 is not the identity */
  CHECK_ERR_MSG(ct_random_split(a, (int64_t[]){7, 2}, 2, 1, parts + 0) == CT_OK, CT_ERR_ARG,
                "lengths sum to 9, the dataset has 10");
  for (int p = 0; p < 2; p++) {
    ct_dataset_free(parts[p]);
    ct_dataset_free(again[p]);
  }
  ct_dataset_free(cat);
  ct_dataset_free(wide);
  ct_dataset_free(sub);
  ct_dataset_free(a);
  ct_dataset_free(b);
}
