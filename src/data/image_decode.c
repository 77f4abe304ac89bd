/* PNG and JPEG files to RGB bytes, for the image-folder dataset. PNG goes
 * through libpng's simplified API (no setjmp of ours), JPEG through
 * libjpeg(-turbo) with an error manager that jumps back here instead of
 * exiting the process. Both are optional at build time (CT_HAVE_PNG,
 * CT_HAVE_JPEG, set by CMake where it finds them): without one, its files
 * fail with CT_ERR_UNAVAILABLE saying what the build lacks. Libraries'
 * warnings about corrupt data are errors here: a half-decoded image would
 * otherwise train silently as gray. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "ctensor/io.h"
#include "data/data_internal.h"

#ifdef CT_HAVE_PNG
#include <png.h>
#endif
#ifdef CT_HAVE_JPEG
#include <jpeglib.h>
#endif

/* Larger images are refused before any allocation (64 Mpixel). */
#define CT_IMAGE_MAX_PIXELS ((int64_t)1 << 26)
/* Larger files are refused before reading (256 MiB). */
#define CT_IMAGE_MAX_FILE ((long)1 << 28)

static ct_status read_file(const char *real_path, const char *path, uint8_t **data, size_t *size) {
  FILE *f = fopen(real_path, "rb");
  if (!f)
    return ct__fail_status(CT_ERR_IO, "image_folder: cannot open %s: %s", path, strerror(errno));
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return ct__fail_status(CT_ERR_IO, "image_folder: cannot read %s", path);
  }
  if (n > CT_IMAGE_MAX_FILE) {
    fclose(f);
    return ct__fail_status(CT_ERR_FORMAT, "image_folder: %s is %ld bytes, above the %ld accepted",
                           path, n, CT_IMAGE_MAX_FILE);
  }
  uint8_t *buf = ct__malloc((size_t)(n ? n : 1));
  if (!buf) {
    fclose(f);
    return ct__fail_status(CT_ERR_OOM, "image_folder: out of host memory reading %s", path);
  }
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  if (got != (size_t)n) {
    ct__free(buf);
    return ct__fail_status(CT_ERR_IO, "image_folder: short read of %s", path);
  }
  *data = buf;
  *size = (size_t)n;
  return CT_OK;
}

#if defined(CT_HAVE_PNG) || defined(CT_HAVE_JPEG)
static ct_status check_size(const char *path, int64_t h, int64_t w) {
  if (h < 1 || w < 1 || h > CT_IMAGE_MAX_PIXELS / w)
    return ct__fail_status(CT_ERR_FORMAT,
                           "image_folder: %s is %lldx%lld pixels (accepted: 1 to %lld "
                           "pixels)",
                           path, (long long)w, (long long)h, (long long)CT_IMAGE_MAX_PIXELS);
  return CT_OK;
}
#endif

#ifdef CT_HAVE_PNG
static ct_status decode_png(const char *path, const uint8_t *data, size_t size, uint8_t **pixels,
                            int64_t *h, int64_t *w) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, data, size))
    return ct__fail_status(CT_ERR_FORMAT, "image_folder: %s is not a readable PNG: %s", path,
                           img.message);
  ct_status st = check_size(path, img.height, img.width);
  if (st != CT_OK) {
    png_image_free(&img);
    return st;
  }
  img.format = PNG_FORMAT_RGB;
  uint8_t *out = ct__malloc(PNG_IMAGE_SIZE(img));
  if (!out) {
    png_image_free(&img);
    return ct__fail_status(CT_ERR_OOM, "image_folder: out of host memory decoding %s", path);
  }
  if (!png_image_finish_read(&img, NULL, out, 0, NULL) ||
      (img.warning_or_error & PNG_IMAGE_ERROR)) {
    st = ct__fail_status(CT_ERR_FORMAT, "image_folder: %s is a corrupt PNG: %s", path, img.message);
    png_image_free(&img);
    ct__free(out);
    return st;
  }
  *pixels = out;
  *h = img.height;
  *w = img.width;
  return CT_OK;
}
#endif

#ifdef CT_HAVE_JPEG
typedef struct jpeg_fail {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} jpeg_fail;

static void jpeg_error_exit(j_common_ptr cinfo) {
  jpeg_fail *f = (jpeg_fail *)cinfo->err;
  f->mgr.format_message(cinfo, f->message);
  longjmp(f->jump, 1);
}

/* Warnings (level -1) are corrupt data: fail. Trace messages are dropped. */
static void jpeg_emit(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_error_exit(cinfo);
}

static ct_status decode_jpeg(const char *path, const uint8_t *data, size_t size, uint8_t **pixels,
                             int64_t *h, int64_t *w) {
  struct jpeg_decompress_struct cinfo;
  jpeg_fail fail;
  /* Written between setjmp and a longjmp: volatile, so the error path sees it. */
  uint8_t *volatile out = NULL;
  cinfo.err = jpeg_std_error(&fail.mgr);
  fail.mgr.error_exit = jpeg_error_exit;
  fail.mgr.emit_message = jpeg_emit;
  fail.message[0] = 0;
  if (setjmp(fail.jump)) {
    jpeg_destroy_decompress(&cinfo);
    ct__free(out);
    return ct__fail_status(CT_ERR_FORMAT, "image_folder: %s is a corrupt JPEG: %s", path,
                           fail.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  ct_status st = check_size(path, cinfo.image_height, cinfo.image_width);
  if (st != CT_OK) {
    jpeg_destroy_decompress(&cinfo);
    return st;
  }
  jpeg_start_decompress(&cinfo);
  const size_t row = (size_t)cinfo.output_width * 3;
  out = ct__malloc(row * cinfo.output_height);
  if (!out) {
    jpeg_destroy_decompress(&cinfo);
    return ct__fail_status(CT_ERR_OOM, "image_folder: out of host memory decoding %s", path);
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW r = out + row * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_decompress(&cinfo);
  *h = cinfo.output_height;
  *w = cinfo.output_width;
  jpeg_destroy_decompress(&cinfo);
  *pixels = out;
  return CT_OK;
}
#endif

ct_status ct__image_decode(const char *real_path, uint8_t **pixels, int64_t *h, int64_t *w) {
  *pixels = NULL;
  uint8_t *data = NULL;
  size_t size = 0;
  char shown[512]; /* the path as messages show it */
  const char *path = ct_escape_name(real_path, shown, sizeof shown);
  ct_status st = read_file(real_path, path, &data, &size);
  if (st != CT_OK) return st;
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  bool is_png = size >= 8 && memcmp(data, png_sig, 8) == 0;
  bool is_jpeg = size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff;
  if (is_png) {
#ifdef CT_HAVE_PNG
    st = decode_png(path, data, size, pixels, h, w);
#else
    st = ct__fail_status(CT_ERR_UNAVAILABLE,
                         "image_folder: %s is a PNG, but this ctensor was built "
                         "without libpng (Debian: libpng-dev)",
                         path);
#endif
  } else if (is_jpeg) {
#ifdef CT_HAVE_JPEG
    st = decode_jpeg(path, data, size, pixels, h, w);
#else
    st = ct__fail_status(CT_ERR_UNAVAILABLE,
                         "image_folder: %s is a JPEG, but this ctensor was built "
                         "without libjpeg (Debian: libjpeg62-turbo-dev)",
                         path);
#endif
  } else {
    st = ct__fail_status(CT_ERR_FORMAT,
                         "image_folder: %s is neither a PNG nor a JPEG (%zu bytes; "
                         "its first bytes are not either signature)",
                         path, size);
  }
  ct__free(data);
  return st;
}
