/* libFuzzer target for the CIFAR-10 batch reader (ct__cifar_read_batch): any
 * input must either read or fail with CT_ERR_FORMAT (never crash, read or
 * write out of bounds, leak or abort). The first byte picks the record count
 * the file must hold (1 to 4: a real file holds 10000, too many to fuzz);
 * the rest is the file, on a memfd. Build and run: README.md here. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/data_internal.h"

enum { MAX_RECORDS = 4, PIXELS = 3072 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int64_t records = 1 + data[0] % MAX_RECORDS;
  int fd = memfd_create("fuzz_cifar", 0);
  if (fd < 0) return 0;
  if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  uint8_t *pixels = malloc((size_t)records * PIXELS), labels[MAX_RECORDS];
  ct_clear_error();
  if (ct__cifar_read_batch(path, records, pixels, labels) == CT_OK) {
    for (int64_t i = 0; i < records; i++)
      if (labels[i] > 9) abort(); /* a label the reader should have refused */
  } else if (ct_last_error() != CT_ERR_FORMAT) {
    fprintf(stderr, "unexpected %s: %s\n", ct_status_name(ct_last_error()),
            ct_last_error_message());
    abort();
  }
  free(pixels);
  close(fd);
  return 0;
}
