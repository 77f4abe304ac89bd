/* Internal interface of the safetensors reader: the header parser (a strict
 * JSON parser for the header's subset, with every size and offset validated)
 * and a loader from memory, used by ct_load_safetensors and the fuzz target. */
#ifndef CT_IO_SAFETENSORS_H
#define CT_IO_SAFETENSORS_H

#include "core/internal.h"

/* The header is at most this many bytes (what the safetensors library allows). */
#define CT_SAFETENSORS_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

/* One tensor of a header: bytes [begin, end) of the data buffer. */
typedef struct ct__st_entry {
  char *name;
  ct_dtype dtype;
  int ndim;
  int64_t shape[CT_MAX_DIMS];
  uint64_t begin, end;
} ct__st_entry;

typedef struct ct__st_header {
  ct__st_entry *entries; /* in the header's order */
  int n;
} ct__st_header;

/* Parses and validates the JSON header (len bytes, not NUL-terminated) of a
 * file whose data buffer (after the header) has data_size bytes: syntax
 * (UTF-8 strings), names as the writer allows them, no duplicate keys, known dtypes, shapes of at
 * most CT_MAX_DIMS non-negative sizes, numel x dtype size = end - begin without overflow, offsets
 * sorted, contiguous, non-overlapping and covering the buffer exactly, strides that fit 64 bits
 * even in empty tensors, and an optional "__metadata__" object of strings. `what` (the path,
 * already escaped) prefixes messages. On failure records CT_ERR_FORMAT (or CT_ERR_OOM) and returns
 * its code. */
ct_status ct__st_parse_header(const char *json, size_t len, uint64_t data_size, const char *what,
                              ct__st_header *out);
void ct__st_header_free(ct__st_header *h);

/* ct_load_safetensors on a file image held in memory. */
ct_status ct__load_safetensors_buffer(const void *data, size_t size, const char *what,
                                      ct_tensor ***tensors, char ***names, int *n);

#endif /* CT_IO_SAFETENSORS_H */
