/* make_user_data: the fixtures of tests/cli/test_data.sh, written at test
 * time (no committed binaries):
 *   make_user_data csv FILE N      a separable 3-class CSV: header
 *                                  "petal,sepal,species", N rows around three
 *                                  centers (setosa (0, 0), versicolor (3, 0),
 *                                  virginica (0, 3))
 *   make_user_data regression FILE N   "a,b,price": price = 3a - 2b + 1 plus
 *                                  noise of +-0.05, a and b in [0, 1)
 *   make_user_data folder DIR N    DIR/train/{down,up}/ and DIR/test/{down,up}/:
 *                                  N (train) and N / 2 (test) images per class,
 *                                  bright in the top or bottom half, 12 to 20
 *                                  pixels square, every third a JPEG
 * The numbers come from a fixed xorshift generator: the same files on every
 * machine. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image_write.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

static int write_csv(const char *path, int n) {
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), 1;
  static const char *species[3] = {"setosa", "versicolor", "virginica"};
  static const double cx[3] = {0, 3, 0}, cy[3] = {0, 0, 3};
  fprintf(f, "petal,sepal,species\n");
  for (int i = 0; i < n; i++) {
    int k = i % 3;
    fprintf(f, "%.4f,%.4f,%s\n", cx[k] + uniform() - 0.5, cy[k] + uniform() - 0.5, species[k]);
  }
  return fclose(f) != 0;
}

static int write_regression(const char *path, int n) {
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), 1;
  fprintf(f, "a,b,price\n");
  for (int i = 0; i < n; i++) {
    double a = uniform(), b = uniform();
    fprintf(f, "%.4f,%.4f,%.4f\n", a, b, 3 * a - 2 * b + 1 + 0.1 * (uniform() - 0.5));
  }
  return fclose(f) != 0;
}

static int write_folder(const char *dir, int n) {
  static const char *splits[2] = {"train", "test"}, *classes[2] = {"down", "up"};
  char path[1024];
  if (mkdir(dir, 0755) != 0) return perror(dir), 1;
  for (int s = 0; s < 2; s++) {
    snprintf(path, sizeof path, "%s/%s", dir, splits[s]);
    if (mkdir(path, 0755) != 0) return perror(path), 1;
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s/%s/%s", dir, splits[s], classes[k]);
      if (mkdir(path, 0755) != 0) return perror(path), 1;
      for (int i = 0; i < (s ? n / 2 : n); i++) {
        int size = 12 + (int)(uniform() * 9);
        uint8_t *rgb = malloc((size_t)size * (size_t)size * 3);
        for (int y = 0; y < size; y++)
          for (int x = 0; x < size * 3; x++) {
            bool bright = (y < size / 2) == (k == 1);
            int v = (bright ? 200 : 50) + (int)(uniform() * 50) - 25;
            rgb[y * size * 3 + x] = (uint8_t)v;
          }
        snprintf(path, sizeof path, "%s/%s/%s/%03d.%s", dir, splits[s], classes[k], i,
                 i % 3 == 2 ? "jpg" : "png");
        int rc = i % 3 == 2 ? ct_test_write_jpeg(path, rgb, size, size, 95)
                            : ct_test_write_png(path, rgb, size, size);
        free(rgb);
        if (rc) return rc;
      }
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "csv")) return write_csv(argv[2], atoi(argv[3]));
  if (argc == 4 && !strcmp(argv[1], "folder")) return write_folder(argv[2], atoi(argv[3]));
  if (argc == 4 && !strcmp(argv[1], "regression")) return write_regression(argv[2], atoi(argv[3]));
  fprintf(stderr, "usage: make_user_data csv FILE N | regression FILE N | folder DIR N\n");
  return 2;
}
