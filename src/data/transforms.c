/* Per-sample image transforms: bytes to f32 in [0, 1], normalize, random crop
 * with zero padding, random horizontal flip, fused into one pass that writes
 * each output float once. Random choices come from one Philox block keyed by
 * the seed with counter (index, epoch), so they depend only on (seed, epoch,
 * sample index): never on the worker, the thread or the order of calls. */
#include <math.h>

#include "core/philox.h"
#include "data/data_internal.h"

ct_status ct__image_store_init_transforms(ct__image_store *s, const ct_transform_opts *tf,
                                          const char *name) {
  s->tf = tf ? *tf : (ct_transform_opts){0};
  s->out_h = s->h;
  s->out_w = s->w;
  for (int k = 0; k < 3; k++) {
    double mean = 0, std = 1;
    if (s->tf.normalize && k < s->c) { /* channels past c are unused */
      mean = s->tf.mean[k];
      std = s->tf.std[k];
      if (!isfinite(mean) || !isfinite(std) || std <= 0)
        return ct__fail_status(CT_ERR_ARG,
                               "%s: normalize needs finite means and positive stds (channel %d: "
                               "mean %g, std %g)", name, k, mean, std);
    }
    /* (byte / 255 - mean) / std == byte * scale + shift */
    s->scale[k] = (float)(1.0 / (255.0 * std));
    s->shift[k] = (float)(-mean / std);
  }
  if (s->tf.random_crop < 0 || s->tf.crop_padding < 0)
    return ct__fail_status(CT_ERR_ARG, "%s: random_crop (%lld) and crop_padding (%lld) must be >= 0",
                           name, (long long)s->tf.random_crop, (long long)s->tf.crop_padding);
  if (s->tf.random_crop > 0) {
    int64_t pad = s->tf.crop_padding, crop = s->tf.random_crop;
    if (pad > (int64_t)1 << 20 || crop > s->h + 2 * pad || crop > s->w + 2 * pad)
      return ct__fail_status(CT_ERR_ARG,
                             "%s: random_crop %lld does not fit images of %lldx%lld padded by %lld",
                             name, (long long)crop, (long long)s->h, (long long)s->w,
                             (long long)pad);
    s->out_h = s->out_w = crop;
  } else if (s->tf.crop_padding > 0) {
    return ct__fail_status(CT_ERR_ARG, "%s: crop_padding %lld given without random_crop", name,
                           (long long)s->tf.crop_padding);
  }
  return CT_OK;
}

/* Uniform integer in [0, range) from a 32-bit word (multiply-shift). */
static int64_t pick(uint32_t w, int64_t range) {
  return (int64_t)(((uint64_t)w * (uint64_t)range) >> 32);
}

void ct__transform_image(const ct__image_store *s, int64_t index, int64_t epoch, float *out) {
  ct__transform_pixels(s, s->pixels + (size_t)index * (size_t)(s->c * s->h * s->w), index, epoch,
                       out);
}

void ct__transform_pixels(const ct__image_store *s, const uint8_t *src, int64_t index,
                          int64_t epoch, float *out) {
  const int64_t c = s->c, h = s->h, w = s->w, oh = s->out_h, ow = s->out_w;
  /* Output pixel (y, x) reads source (y + y0, x0 + x) or, flipped,
   * (y + y0, x0 + ow - 1 - x); sources outside the image are padding (0). */
  int64_t y0 = 0, x0 = 0;
  bool flip = false;
  if (s->tf.random_crop > 0 || s->tf.random_hflip) {
    uint32_t ctr[4] = {(uint32_t)index, (uint32_t)((uint64_t)index >> 32), (uint32_t)epoch,
                       (uint32_t)((uint64_t)epoch >> 32)};
    uint32_t key[2] = {(uint32_t)s->tf.seed, (uint32_t)(s->tf.seed >> 32)};
    uint32_t r[4];
    ct_philox4x32_10(ctr, key, r);
    if (s->tf.random_crop > 0) {
      int64_t pad = s->tf.crop_padding;
      y0 = pick(r[0], h + 2 * pad - oh + 1) - pad;
      x0 = pick(r[1], w + 2 * pad - ow + 1) - pad;
    }
    flip = s->tf.random_hflip && (r[2] >> 31);
  }
  for (int64_t k = 0; k < c; k++) {
    const float a = s->scale[k < 2 ? k : 2], b = s->shift[k < 2 ? k : 2];
    const uint8_t *plane = src + k * h * w;
    float *dst = out + k * oh * ow;
    if (y0 == 0 && x0 == 0 && oh == h && ow == w && !flip) {
      /* The common case (no crop): a straight conversion the compiler vectorizes. */
      for (int64_t i = 0; i < h * w; i++) dst[i] = (float)plane[i] * a + b;
      continue;
    }
    for (int64_t y = 0; y < oh; y++) {
      const int64_t sy = y + y0;
      float *row = dst + y * ow;
      if (sy < 0 || sy >= h) {
        for (int64_t x = 0; x < ow; x++) row[x] = b;
        continue;
      }
      const uint8_t *srow = plane + sy * w;
      for (int64_t x = 0; x < ow; x++) {
        const int64_t sx = x0 + (flip ? ow - 1 - x : x);
        row[x] = (sx >= 0 && sx < w) ? (float)srow[sx] * a + b : b;
      }
    }
  }
}
