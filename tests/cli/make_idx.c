/* make_idx.c: writes a small synthetic MNIST-like dataset in the real IDX
 * format (raw, uncompressed) for the CLI tests:
 *   make_idx DIR NTRAIN NTEST
 * Class k (0..9) is a bright 6x6 block at a class-specific place over
 * uniform noise, so that every model learns it in a few steps; a quarter of
 * the labels are then redrawn at random, so that test accuracy stays well
 * below 100% and comparisons of accuracies mean something. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t rng = 12345;
static uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}

static int write_be32(FILE *f, uint32_t v) {
  unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                        (unsigned char)v};
  return fwrite(b, 1, 4, f) == 4 ? 0 : -1;
}

static int write_split(const char *dir, const char *prefix, uint32_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, prefix);
  FILE *fi = fopen(path, "wb");
  snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, prefix);
  FILE *fl = fopen(path, "wb");
  if (!fi || !fl) return perror(path), -1;
  int rc = write_be32(fi, 0x00000803) | write_be32(fi, n) | write_be32(fi, 28) |
           write_be32(fi, 28) | write_be32(fl, 0x00000801) | write_be32(fl, n);
  for (uint32_t i = 0; i < n && !rc; i++) {
    unsigned char img[28 * 28];
    unsigned char label = (unsigned char)(next() % 10);
    for (int p = 0; p < 28 * 28; p++) img[p] = (unsigned char)(next() % 80);
    int r0 = 2 + (label / 5) * 13 + (int)(next() % 3), c0 = 1 + (label % 5) * 5;
    for (int r = r0; r < r0 + 6; r++)
      for (int c = c0; c < c0 + 6 && c < 28; c++)
        img[r * 28 + c] = (unsigned char)(200 + next() % 56);
    if (next() % 4 == 0) label = (unsigned char)(next() % 10); /* label noise: accuracy < 100% */
    if (fwrite(img, 1, sizeof img, fi) != sizeof img || fwrite(&label, 1, 1, fl) != 1) rc = -1;
  }
  if (fclose(fi) != 0 || fclose(fl) != 0) rc = -1;
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: make_idx DIR NTRAIN NTEST\n");
    return 2;
  }
  if (write_split(argv[1], "train", (uint32_t)atoi(argv[2])) ||
      write_split(argv[1], "t10k", (uint32_t)atoi(argv[3])))
    return 1;
  return 0;
}
