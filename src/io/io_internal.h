/* Internal helpers of the file readers (src/io, src/data): names that come
 * from files or users, made safe to print and checked as UTF-8. */
#ifndef CT_IO_INTERNAL_H
#define CT_IO_INTERNAL_H

#include "core/internal.h"

/* Room for one escaped name in a message (ct_escape_name truncates beyond). */
#define CT_NAME_MSG 320

/* Bytes of the well-formed UTF-8 sequence at s[0..n) (no overlong forms, no
 * surrogates, at most U+10FFFF), or 0 when s does not start with one. */
size_t ct__utf8_seq_len(const unsigned char *s, size_t n);
/* Whether s[0..n) is well-formed UTF-8 throughout. */
bool ct__utf8_valid(const char *s, size_t n);

/* The safetensors rule for a tensor name, shared by the writer and the
 * reader: non-empty, well-formed UTF-8, not "__metadata__". NULL when name
 * (len bytes) is acceptable, else the reason ("is empty", ...). */
const char *ct__st_name_problem(const char *name, size_t len);

#endif /* CT_IO_INTERNAL_H */
