/* The image-folder dataset (ct_image_folder_open, ct_image_load): PNG and
 * JPEG fixtures written at test time with libpng and libjpeg, decoded,
 * converted, resized and cropped against float64 references computed here;
 * the loader's workers against ct_dataset_get; and every bad folder or file
 * failing with its name. Skipped (77) in a build without the decoders. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "ctensor/data.h"

#if __has_include(<png.h>) && __has_include(<jpeglib.h>)
#include "image_write.h"

static char root[64];

static void make_root(void) {
  strcpy(root, "/tmp/ct_test_imgdir_XXXXXX");
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    abort();
  }
}

static void rm_rf(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[768];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
      rm_rf(p);
    else
      unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static const char *path_of(const char *rel) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  return p;
}

static void make_dir(const char *rel) { CHECK(mkdir(path_of(rel), 0700) == 0); }

/* An RGB PNG of h x w from interleaved bytes. */
static void write_png(const char *rel, const uint8_t *rgb, int h, int w) {
  CHECK_MSG(ct_test_write_png(path_of(rel), rgb, w, h) == 0, "png write: %s", rel);
}

/* A JPEG (quality 100) of h x w from interleaved RGB bytes. */
static void write_jpeg(const char *rel, const uint8_t *rgb, int h, int w) {
  CHECK_MSG(ct_test_write_jpeg(path_of(rel), rgb, w, h, 100) == 0, "jpeg write: %s", rel);
}

static void write_bytes(const char *rel, const void *data, size_t n) {
  FILE *f = fopen(path_of(rel), "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

/* Pixel (y, x) channel k of the pattern image number `seed`. */
static uint8_t pattern(int seed, int y, int x, int k) {
  return (uint8_t)(seed * 40 + y * 17 + x * 5 + k * 70);
}

static uint8_t *pattern_image(int seed, int h, int w) {
  uint8_t *p = malloc((size_t)h * (size_t)w * 3);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < 3; k++) p[(y * w + x) * 3 + k] = pattern(seed, y, x, k);
  return p;
}

static double *values(const ct_tensor *t) { return ct_test_values(t); }

/* Two classes ("cat", "dog") of PNG 5x4 images; "dog" gets a JPEG too. */
static void make_small_folder(void) {
  make_dir("cat");
  make_dir("dog");
  make_dir(".hidden");
  for (int i = 0; i < 3; i++) {
    uint8_t *p = pattern_image(i, 4, 5);
    char rel[64];
    snprintf(rel, sizeof rel, "%s/img%d.png", i < 2 ? "cat" : "dog", i);
    write_png(rel, p, 4, 5);
    free(p);
  }
  uint8_t flat[4 * 5 * 3];
  for (int i = 0; i < 60; i++) flat[i] = (uint8_t)(i % 3 == 0 ? 200 : i % 3 == 1 ? 100 : 50);
  write_jpeg("dog/z.JPG", flat, 4, 5);
  write_bytes("dog/notes.txt", "not an image", 12);
}

CT_TEST(image_folder_decodes_png_and_jpeg) {
  make_root();
  make_small_folder();
  ct_dataset *d = ct_image_folder_open(root, NULL);
  CHECK_OK(d);
  if (!d) return rm_rf(root);
  CHECK(ct_dataset_length(d) == 4);
  const ct_image_folder_info *info = ct_image_folder_info_of(d);
  CHECK(info->num_classes == 2 && !strcmp(info->class_names[0], "cat") &&
        !strcmp(info->class_names[1], "dog"));
  CHECK(info->channels == 3 && info->height == 4 && info->width == 5);
  const int64_t want_label[4] = {0, 0, 1, 1};
  for (int64_t i = 0; i < 4; i++) {
    ct_sample s;
    CHECK_STATUS_OK(ct_dataset_get(d, i, &s));
    if (!s.input) continue;
    CHECK(ct_ndim(s.input) == 3 && ct_size(s.input, 0) == 3 && ct_size(s.input, 1) == 4 &&
          ct_size(s.input, 2) == 5);
    double *x = values(s.input), *y = values(s.target);
    CHECK_MSG(y[0] == (double)want_label[i], "sample %lld label %g", (long long)i, y[0]);
    for (int k = 0; k < 3; k++)
      for (int yy = 0; yy < 4; yy++)
        for (int xx = 0; xx < 5; xx++) {
          double got = x[(k * 4 + yy) * 5 + xx];
          if (i < 3) { /* PNG: exact bytes / 255 */
            double want = pattern((int)i, yy, xx, k) / 255.0;
            CHECK_MSG(fabs(got - want) < 1e-6, "png %lld (%d,%d,%d): %g vs %g", (long long)i, k, yy,
                      xx, got, want);
          } else { /* JPEG at quality 100 of a flat color: within 3 levels */
            double want = (k == 0 ? 200 : k == 1 ? 100 : 50) / 255.0;
            CHECK_MSG(fabs(got - want) <= 3.0 / 255, "jpeg (%d,%d,%d): %g vs %g", k, yy, xx, got,
                      want);
          }
        }
    free(x);
    free(y);
    ct_free(s.input);
    ct_free(s.target);
  }
  /* the loader's workers give what get gives */
  ct_dataloader *dl =
      ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 4, .num_workers = 2});
  ct_batch b;
  CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
  if (b.inputs) {
    double *bx = values(b.inputs);
    for (int64_t i = 0; i < 4; i++) {
      ct_sample s;
      CHECK_STATUS_OK(ct_dataset_get(d, i, &s));
      double *x = values(s.input);
      for (int j = 0; j < 60; j++) CHECK(bx[i * 60 + j] == x[j]);
      free(x);
      ct_free(s.input);
      ct_free(s.target);
    }
    free(bx);
  }
  ct_batch_release(&b);
  ct_dataloader_free(dl);
  ct_dataset_free(d);
  CHECK_ERR(ct_image_folder_info_of(NULL), CT_ERR_ARG);
  rm_rf(root);
}

CT_TEST(image_folder_gray_resize_crop_normalize) {
  make_root();
  make_dir("a");
  uint8_t *p = pattern_image(1, 4, 5);
  write_png("a/x.png", p, 4, 5);
  /* grayscale, resize to 6 x 8 (bilinear, pixel centers), center crop 4, normalize */
  ct_image_folder_opts o = {.channels = 1,
                            .resize_h = 6,
                            .resize_w = 8,
                            .center_crop = 4,
                            .transforms = {.normalize = true, .mean = {0.5}, .std = {0.25}}};
  ct_dataset *d = ct_image_folder_open(root, &o);
  CHECK_OK(d);
  if (d) {
    ct_sample s;
    CHECK_STATUS_OK(ct_dataset_get(d, 0, &s));
    CHECK(ct_ndim(s.input) == 3 && ct_size(s.input, 0) == 1 && ct_size(s.input, 1) == 4 &&
          ct_size(s.input, 2) == 4);
    double *x = values(s.input);
    double gray[4][5];
    for (int y = 0; y < 4; y++)
      for (int xx = 0; xx < 5; xx++)
        gray[y][xx] = floor((299.0 * pattern(1, y, xx, 0) + 587.0 * pattern(1, y, xx, 1) +
                             114.0 * pattern(1, y, xx, 2) + 500) /
                            1000);
    for (int oy = 0; oy < 4; oy++)
      for (int ox = 0; ox < 4; ox++) {
        int ry = oy + 1, rx = ox + 2; /* the crop's offset in the 6 x 8 resized image */
        double fy = fmax((ry + 0.5) * 4 / 6.0 - 0.5, 0), fx = fmax((rx + 0.5) * 5 / 8.0 - 0.5, 0);
        int y0 = (int)fy, x0 = (int)fx, y1 = y0 + 1 < 4 ? y0 + 1 : 3, x1 = x0 + 1 < 5 ? x0 + 1 : 4;
        double ay = fy - y0, ax = fx - x0;
        double v = (1 - ay) * ((1 - ax) * gray[y0][x0] + ax * gray[y0][x1]) +
                   ay * ((1 - ax) * gray[y1][x0] + ax * gray[y1][x1]);
        double want = (nearbyint(v) / 255.0 - 0.5) / 0.25;
        CHECK_MSG(fabs(x[oy * 4 + ox] - want) < 1e-5, "(%d,%d): %g vs %g", oy, ox, x[oy * 4 + ox],
                  want);
      }
    free(x);
    ct_free(s.input);
    ct_free(s.target);
    ct_dataset_free(d);
  }
  /* ct_image_load: the same preprocessing for one file */
  ct_tensor *t = ct_image_load(path_of("a/x.png"), &o);
  CHECK_OK(t);
  if (t) {
    CHECK(ct_size(t, 0) == 1 && ct_size(t, 1) == 4 && ct_size(t, 2) == 4);
    ct_free(t);
  }
  /* ct_image_load turns a random crop into a center crop of its size */
  t = ct_image_load(path_of("a/x.png"), &(ct_image_folder_opts){.transforms = {.random_crop = 3}});
  CHECK_OK(t);
  if (t) {
    CHECK(ct_size(t, 0) == 3 && ct_size(t, 1) == 3 && ct_size(t, 2) == 3);
    double *v = values(t); /* (0, 0) is the 4 x 5 image's (0, 1) */
    CHECK_MSG(fabs(v[0] - pattern(1, 0, 1, 0) / 255.0) < 1e-6, "center crop: %g", v[0]);
    free(v);
    ct_free(t);
  }
  /* random flip: the same (seed, epoch, index) gives the same image; over
   * epochs both orientations occur */
  o = (ct_image_folder_opts){.transforms = {.random_hflip = true, .seed = 3}};
  d = ct_image_folder_open(root, &o);
  CHECK_OK(d);
  if (d) {
    int flipped = 0;
    for (int64_t e = 0; e < 16; e++) {
      ct_dataset_set_epoch(d, e);
      ct_sample s;
      CHECK_STATUS_OK(ct_dataset_get(d, 0, &s));
      double *x = values(s.input);
      flipped += fabs(x[0] - pattern(1, 0, 4, 0) / 255.0) < 1e-6;
      free(x);
      ct_free(s.input);
      ct_free(s.target);
    }
    CHECK_MSG(flipped > 0 && flipped < 16, "flipped %d of 16 epochs", flipped);
    ct_dataset_free(d);
  }
  free(p);
  rm_rf(root);
}

CT_TEST(image_folder_bad_folders_and_files) {
  make_root();
  CHECK_ERR_MSG(ct_image_folder_open(path_of("missing"), NULL), CT_ERR_IO,
                "cannot open the folder");
  CHECK_ERR_MSG(ct_image_folder_open(root, NULL), CT_ERR_FORMAT, "has no class subfolders");
  make_dir("empty");
  CHECK_ERR_MSG(ct_image_folder_open(root, NULL), CT_ERR_FORMAT,
                "empty has no .png, .jpg or .jpeg files");
  uint8_t *p = pattern_image(0, 4, 4);
  write_png("empty/ok.png", p, 4, 4);
  CHECK_ERR_MSG(ct_image_folder_open(root, &(ct_image_folder_opts){.channels = 2}), CT_ERR_ARG,
                "channels must be 1 or 3");
  CHECK_ERR_MSG(ct_image_folder_open(root, &(ct_image_folder_opts){.center_crop = 5}), CT_ERR_ARG,
                "center_crop 5 is larger");
  CHECK_ERR_MSG(ct_image_folder_open(root, &(ct_image_folder_opts){.resize_h = 4}), CT_ERR_ARG,
                "resize");
  CHECK_ERR_MSG(
      ct_image_folder_open(
          root, &(ct_image_folder_opts){.class_names = (const char *[]){"x"}, .num_classes = 1}),
      CT_ERR_FORMAT, "empty is a class not among the 1 given");
  /* corrupt files fail at get, naming the file; the dataset opens */
  make_dir("zbad");
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  uint8_t junk[40];
  memcpy(junk, png_sig, 8);
  memset(junk + 8, 0x5a, sizeof junk - 8);
  write_bytes("zbad/a_corrupt.png", junk, sizeof junk);
  write_png("zbad/b_big.png", p, 2, 8); /* another size */
  write_bytes("zbad/c_text.png", "hello", 5);
  uint8_t *j = pattern_image(0, 8, 8);
  write_jpeg("zbad/d_cut.jpg", j, 8, 8);
  FILE *f = fopen(path_of("zbad/d_cut.jpg"), "rb");
  uint8_t whole[4096];
  size_t n = f ? fread(whole, 1, sizeof whole, f) : 0;
  if (f) fclose(f);
  write_bytes("zbad/d_cut.jpg", whole, n / 2);
  ct_dataset *d = ct_image_folder_open(root, NULL);
  CHECK_OK(d);
  if (d) {
    CHECK(ct_dataset_length(d) == 5);
    ct_sample s;
    CHECK_ERR_MSG(ct_dataset_get(d, 1, &s) == CT_OK, CT_ERR_FORMAT,
                  "zbad/a_corrupt.png is not a readable PNG");
    CHECK_ERR_MSG(ct_dataset_get(d, 2, &s) == CT_OK, CT_ERR_FORMAT,
                  "zbad/b_big.png is 8x2, the dataset's images are 4x4");
    CHECK_ERR_MSG(ct_dataset_get(d, 3, &s) == CT_OK, CT_ERR_FORMAT,
                  "zbad/c_text.png is neither a PNG nor a JPEG");
    CHECK_ERR_MSG(ct_dataset_get(d, 4, &s) == CT_OK, CT_ERR_FORMAT,
                  "zbad/d_cut.jpg is a corrupt JPEG");
    /* the loader reports the worker's error and goes on */
    ct_dataloader *dl =
        ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 1, .num_workers = 2});
    ct_batch b;
    CHECK_STATUS_OK(ct_dataloader_next(dl, &b));
    ct_batch_release(&b);
    CHECK_ERR_MSG(ct_dataloader_next(dl, &b) == CT_OK, CT_ERR_FORMAT, "a_corrupt.png");
    ct_dataloader_free(dl);
    ct_dataset_free(d);
  }
  CHECK_ERR_MSG(ct_image_load(path_of("zbad/c_text.png"), NULL), CT_ERR_FORMAT,
                "neither a PNG nor a JPEG");
  CHECK_ERR_MSG(ct_image_load(path_of("zbad/none.png"), NULL), CT_ERR_IO, "cannot open");
  free(p);
  free(j);
  rm_rf(root);
}

#else
CT_TEST(image_folder_needs_decoders) {
  printf("skipped: built without png.h / jpeglib.h\n");
  exit(77);
}
#endif
