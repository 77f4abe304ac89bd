/* The IDX format of MNIST and Fashion-MNIST, parsed from memory (so that the
 * fuzz target needs no files) and from files (gzip or raw).
 *
 * An IDX file is a big-endian header, then the data:
 *   bytes 0-1   zero
 *   byte  2     element type (0x08: unsigned byte, the only one accepted)
 *   byte  3     number of dims (3 for images, 1 for labels)
 *   then one u32 per dim: (count, rows, cols) or (count)
 *   then count * rows * cols bytes, row-major. */
#ifndef CT_DATA_IDX_H
#define CT_DATA_IDX_H

#include "core/internal.h"

enum { CT_IDX_IMAGES = 0x00000803, CT_IDX_LABELS = 0x00000801 };

typedef struct ct__idx {
  int ndim;        /* 1 or 3 */
  int64_t dims[3]; /* count, then rows and cols for images */
  size_t header_bytes;
  size_t data_bytes; /* product of dims (overflow-checked) */
} ct__idx;

/* Parses and validates the header at buf[0..size) of a file called name
 * (for messages, already escaped: ct_escape_name), which must have the given
 * magic (CT_IDX_IMAGES or CT_IDX_LABELS; NULL pointers are CT_ERR_ARG): the magic, every dim
 * (nonzero rows and cols) and the product of the dims, without overflow.
 * Does not look at the data. CT_ERR_FORMAT naming name and the field. */
ct_status ct__idx_parse_header(const uint8_t *buf, size_t size, const char *name, uint32_t magic,
                               ct__idx *out);
/* Parses a whole IDX file held in memory: the header, then exactly
 * data_bytes bytes of data, which *data points to (inside buf). */
ct_status ct__idx_parse(const uint8_t *buf, size_t size, const char *name, uint32_t magic,
                        ct__idx *out, const uint8_t **data);
/* Reads the file at path (gzip or raw; messages name the path, escaped) into
 * a malloc'd buffer of exactly out->data_bytes bytes (*data). A file that
 * cannot be opened: CT_ERR_IO; a bad, truncated (a gzip stream without its
 * trailer included) or overlong one: CT_ERR_FORMAT. */
ct_status ct__idx_read_file(const char *path, uint32_t magic, ct__idx *out, uint8_t **data);

#endif /* CT_DATA_IDX_H */
