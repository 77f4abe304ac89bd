/* libFuzzer target for the IDX (MNIST) reader: any input must either parse
 * or fail with CT_ERR_FORMAT (never crash, read out of bounds, leak, abort
 * or allocate what the file does not hold). The first byte picks the path:
 *   bit 0: image header (0x00000803) or label header (0x00000801);
 *   bit 1: the in-memory parser (ct__idx_parse) or the file reader
 *          (ct__idx_read_file through zlib, on a memfd holding the rest, so
 *          gzip streams, raw files and truncation are all exercised).
 * Build and run: see README.md in this folder. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/idx.h"

static void check_error(void) {
  ct_status st = ct_last_error();
  if (st != CT_ERR_FORMAT && st != CT_ERR_OOM) {
    fprintf(stderr, "unexpected %s: %s\n", ct_status_name(st), ct_last_error_message());
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const uint32_t magic = (data[0] & 1) ? CT_IDX_LABELS : CT_IDX_IMAGES;
  const uint8_t *body = data + 1;
  size_t n = size - 1;
  ct__idx h;
  ct_clear_error();
  if (!(data[0] & 2)) {
    const uint8_t *pixels;
    if (ct__idx_parse(body, n, "fuzz", magic, &h, &pixels) == CT_OK) {
      if (h.header_bytes + h.data_bytes != n) abort();
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < h.data_bytes; i++) sink ^= pixels[i];
      (void)sink;
    } else {
      check_error();
    }
    return 0;
  }
  int fd = memfd_create("fuzz_idx", 0);
  if (fd < 0) return 0;
  if (n && write(fd, body, n) != (ssize_t)n) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  uint8_t *buf = NULL;
  if (ct__idx_read_file(path, magic, &h, &buf) == CT_OK) {
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < h.data_bytes; i++) sink ^= buf[i];
    (void)sink;
    free(buf);
  } else {
    check_error();
    if (buf) abort();
  }
  close(fd);
  return 0;
}
