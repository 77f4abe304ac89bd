/* Image fixtures written at test time (no committed binaries): interleaved
 * 8-bit RGB pixels as a PNG (libpng's simplified API) or a JPEG (libjpeg),
 * for the image-folder test and the command-line tests' data maker
 * (tests/cli/make_user_data.c). Only where both libraries' headers are found
 * (__has_include(<png.h>) && __has_include(<jpeglib.h>)). */
#ifndef CT_TESTS_IMAGE_WRITE_H
#define CT_TESTS_IMAGE_WRITE_H

#include <stdint.h>

/* Write the w x h image rgb (h rows of w * 3 bytes) to path: 0 on success,
 * else nonzero with the reason printed on stderr. JPEG quality is 1..100. */
int ct_test_write_png(const char *path, const uint8_t *rgb, int w, int h);
int ct_test_write_jpeg(const char *path, const uint8_t *rgb, int w, int h, int quality);

#endif /* CT_TESTS_IMAGE_WRITE_H */
