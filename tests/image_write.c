/* The image fixtures' writers (image_write.h). */
#include "image_write.h"

#if __has_include(<png.h>) && __has_include(<jpeglib.h>)
#include <stdio.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h: it uses FILE and size_t */
#include <png.h>

int ct_test_write_png(const char *path, const uint8_t *rgb, int w, int h) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = (png_uint_32)w;
  img.height = (png_uint_32)h;
  img.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&img, path, 0, rgb, 0, NULL))
    return fprintf(stderr, "%s: %s\n", path, img.message), 1;
  return 0;
}

int ct_test_write_jpeg(const char *path, const uint8_t *rgb, int w, int h, int quality) {
  FILE *f = fopen(path, "wb");
  if (!f) return perror(path), 1;
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  for (int y = 0; y < h; y++) {
    JSAMPROW row = (JSAMPROW)(rgb + (size_t)y * (size_t)w * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  if (fclose(f) != 0) return perror(path), 1;
  return 0;
}
#endif
