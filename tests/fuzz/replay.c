/* replay.c: runs a fuzz target's LLVMFuzzerTestOneInput over files and
 * folders of inputs (its corpus), without libFuzzer: so that every build with
 * tests (with GCC too, and under ASan/UBSan in the sanitizer build) keeps the
 * corpus as a regression test of the reader.
 *   fuzz_x_replay PATH...      (a folder: each regular file in it) */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return perror(path), 1;
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0) return perror(path), fclose(f), 1;
  size_t n = (size_t)sb.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  bool ok = buf && fread(buf, 1, n, f) == n;
  fclose(f);
  if (!ok) return fprintf(stderr, "%s: cannot read\n", path), free(buf), 1;
  LLVMFuzzerTestOneInput(buf, n); /* a finding aborts or traps */
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int inputs = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) return perror(argv[i]), 1;
    if (!S_ISDIR(sb.st_mode)) {
      bad += run_file(argv[i]), inputs++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) return perror(argv[i]), 1;
    for (struct dirent *e; (e = readdir(d));) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
      bad += run_file(p), inputs++;
    }
    closedir(d);
  }
  printf("replayed %d inputs\n", inputs);
  return bad || inputs == 0;
}
