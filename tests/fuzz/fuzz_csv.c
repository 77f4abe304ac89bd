/* libFuzzer target for the CSV dataset reader (ct_csv_dataset_open): any
 * input must either open or fail with CT_ERR_FORMAT (never crash, read or
 * write out of bounds, leak or abort); an opened dataset's features are
 * finite and its class indices in range. The first byte picks the options
 * (delimiter, header mode, regression, normalization); the rest is the file,
 * on a memfd. Build and run: README.md here. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctensor/data.h"
#include "data/data_internal.h"

static void check_samples(ct_dataset *d) {
  const ct_csv_info *info = ct_csv_dataset_info(d);
  if (!info) abort();
  ct_scope_begin();
  for (int64_t i = 0; i < ct_dataset_length(d); i++) {
    ct_sample s;
    if (ct_dataset_get(d, i, &s) != CT_OK) abort();
    const float *x = ct__data(s.input);
    for (int64_t f = 0; f < info->num_features; f++)
      if (!isfinite(x[f])) abort();
    if (!info->regression) {
      int64_t y = *(const int64_t *)ct__data(s.target);
      if (y < 0 || y >= info->num_classes) abort();
    }
  }
  ct_scope_end();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  ct_csv_opts o = {.delimiter = (data[0] & 1) ? ';' : ',',
                   .header = (ct_csv_header)((data[0] >> 1) % 3),
                   .regression = (data[0] >> 3) & 1,
                   .normalize = (data[0] >> 4) & 1};
  int fd = memfd_create("fuzz_csv", 0);
  if (fd < 0) return 0;
  if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ct_clear_error();
  ct_dataset *d = ct_csv_dataset_open(path, &o);
  if (d) {
    check_samples(d);
    ct_dataset_free(d);
  } else if (ct_last_error() != CT_ERR_FORMAT) {
    fprintf(stderr, "unexpected %s: %s\n", ct_status_name(ct_last_error()),
            ct_last_error_message());
    abort();
  }
  close(fd);
  return 0;
}
