/* The image-folder dataset: DIR/CLASS/IMAGE. Opening lists the files only;
 * each sample is decoded (image_decode.c), converted to the channels asked
 * for, resized (bilinear), center-cropped, then transformed as the built-in
 * readers' images (transforms.c) inside get and the batch fill, which the
 * loader's workers call in parallel. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctensor/io.h"
#include "data/data_internal.h"

/* A name as messages show it (ct_escape_name), in a buffer of the enclosing block. */
#define SHOWN(s) ct_escape_name((s), (char[256]){0}, 256)

typedef struct image_folder {
  ct__image_store store; /* c, h, w: after resize and center crop; tf; out_h/out_w */
  ct_image_folder_opts opts;
  ct_image_folder_info info;
  char **classes;
  char **paths;
  int64_t *labels;
  int64_t n, num_classes;
  ct_dataset *owner; /* for the epoch of get */
} image_folder;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_image_name(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot) return false;
  return !strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg");
}

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = ct__malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  s[la] = '/';
  memcpy(s + la + 1, b, lb + 1);
  return s;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A growable list of strings. */
typedef struct strlist {
  char **v;
  int64_t n, cap;
} strlist;

static bool strlist_push(strlist *l, char *s) {
  if (!s) return false;
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 16;
    char **v = ct__realloc_array(l->v, (size_t)cap, sizeof *v);
    if (!v) {
      ct__free(s);
      return false;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return true;
}

static void strlist_free(strlist *l) {
  for (int64_t i = 0; i < l->n; i++) ct__free(l->v[i]);
  ct__free(l->v);
  *l = (strlist){0};
}

/* The entries of dir that are directories (want_dirs) or image files, sorted. */
static ct_status list_dir(const char *dir, bool want_dirs, strlist *out) {
  DIR *d = opendir(dir);
  if (!d)
    return ct__fail_status(CT_ERR_IO, "image_folder_open: cannot open the folder %s", SHOWN(dir));
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue; /* hidden, . and .. */
    char *full = join(dir, e->d_name);
    if (!full) break;
    bool keep = want_dirs ? is_dir(full) : (is_image_name(e->d_name) && !is_dir(full));
    ct__free(full);
    if (keep && !strlist_push(out, ct__strdup(e->d_name))) {
      closedir(d);
      return ct__fail_status(CT_ERR_OOM, "image_folder_open: out of host memory");
    }
  }
  closedir(d);
  if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
  return CT_OK;
}

static void folder_destroy(void *self) {
  image_folder *f = self;
  for (int64_t i = 0; i < f->num_classes; i++) ct__free(f->classes[i]);
  for (int64_t i = 0; i < f->n; i++) ct__free(f->paths[i]);
  ct__free(f->classes);
  ct__free(f->paths);
  ct__free(f->labels);
  ct__free(f);
}

/* Bilinear resize of (c, h, w) bytes to (c, oh, ow), sampling at pixel
 * centers (src = (dst + 0.5) * in / out - 0.5, clamped), rounded. */
static void resize_bilinear(const uint8_t *src, int64_t c, int64_t h, int64_t w, uint8_t *dst,
                            int64_t oh, int64_t ow) {
  const double sy = (double)h / (double)oh, sx = (double)w / (double)ow;
  for (int64_t y = 0; y < oh; y++) {
    double fy = ((double)y + 0.5) * sy - 0.5;
    if (fy < 0) fy = 0;
    int64_t y0 = (int64_t)fy, y1 = y0 + 1 < h ? y0 + 1 : h - 1;
    double ay = fy - (double)y0;
    for (int64_t x = 0; x < ow; x++) {
      double fx = ((double)x + 0.5) * sx - 0.5;
      if (fx < 0) fx = 0;
      int64_t x0 = (int64_t)fx, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
      double ax = fx - (double)x0;
      for (int64_t k = 0; k < c; k++) {
        const uint8_t *p = src + k * h * w;
        double v = (1 - ay) * ((1 - ax) * p[y0 * w + x0] + ax * p[y0 * w + x1]) +
                   ay * ((1 - ax) * p[y1 * w + x0] + ax * p[y1 * w + x1]);
        dst[(k * oh + y) * ow + x] = (uint8_t)lrint(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  }
}

/* Decodes path and brings it to (c, store.h, store.w) bytes in *out (ct__malloc'd). */
static ct_status load_bytes(const ct_image_folder_opts *o, const ct__image_store *s,
                            const char *path, uint8_t **out) {
  *out = NULL;
  uint8_t *rgb;
  int64_t h, w;
  ct_status st = ct__image_decode(path, &rgb, &h, &w);
  if (st != CT_OK) return st;
  const int64_t c = s->c;
  /* Interleaved RGB to planar (c, h, w). */
  uint8_t *planar = ct__malloc((size_t)(c * h * w));
  if (!planar) {
    ct__free(rgb);
    return ct__fail_status(CT_ERR_OOM, "image_folder: out of host memory for %s", SHOWN(path));
  }
  for (int64_t i = 0; i < h * w; i++) {
    const uint8_t *px = rgb + 3 * i;
    if (c == 1)
      planar[i] = (uint8_t)((299 * px[0] + 587 * px[1] + 114 * px[2] + 500) / 1000);
    else
      for (int64_t k = 0; k < 3; k++) planar[k * h * w + i] = px[k];
  }
  ct__free(rgb);
  int64_t rh = o->resize_h ? o->resize_h : h, rw = o->resize_w ? o->resize_w : w;
  if (rh != h || rw != w) {
    uint8_t *r = ct__malloc((size_t)(c * rh * rw));
    if (!r) {
      ct__free(planar);
      return ct__fail_status(CT_ERR_OOM, "image_folder: out of host memory for %s", SHOWN(path));
    }
    resize_bilinear(planar, c, h, w, r, rh, rw);
    ct__free(planar);
    planar = r;
  }
  if (o->center_crop > 0) {
    int64_t cs = o->center_crop, top = (rh - cs) / 2, left = (rw - cs) / 2;
    if (cs > rh || cs > rw) {
      ct__free(planar);
      return ct__fail_status(CT_ERR_FORMAT,
                             "image_folder: %s is %lldx%lld after resize, smaller than "
                             "the center crop %lld",
                             SHOWN(path), (long long)rw, (long long)rh, (long long)cs);
    }
    for (int64_t k = 0; k < c; k++)
      for (int64_t y = 0; y < cs; y++)
        memmove(planar + (k * cs + y) * cs, planar + (k * rh + top + y) * rw + left, (size_t)cs);
    rh = rw = cs;
  }
  if (rh != s->h || rw != s->w) {
    ct__free(planar);
    return ct__fail_status(CT_ERR_FORMAT,
                           "image_folder: %s is %lldx%lld, the dataset's images are "
                           "%lldx%lld (set a resize to mix sizes)",
                           SHOWN(path), (long long)rw, (long long)rh, (long long)s->w,
                           (long long)s->h);
  }
  *out = planar;
  return CT_OK;
}

static ct_status folder_sample(const image_folder *f, int64_t index, int64_t epoch, float *x,
                               int64_t *y) {
  uint8_t *bytes;
  ct_status st = load_bytes(&f->opts, &f->store, f->paths[index], &bytes);
  if (st != CT_OK) return st;
  ct__transform_pixels(&f->store, bytes, index, epoch, x);
  ct__free(bytes);
  *y = f->labels[index];
  return CT_OK;
}

static int64_t folder_length(void *self) { return ((image_folder *)self)->n; }

static void folder_meta(void *self, ct__sample_meta *m) {
  image_folder *f = self;
  *m = (ct__sample_meta){
      .input_ndim = 3, .target_ndim = 0, .input_dtype = CT_F32, .target_dtype = CT_I64};
  m->input_shape[0] = f->store.c;
  m->input_shape[1] = f->store.out_h;
  m->input_shape[2] = f->store.out_w;
}

static ct_status folder_fill(void *self, const int64_t *idx, int64_t count, int64_t epoch,
                             ct_tensor *inputs, ct_tensor *targets) {
  image_folder *f = self;
  float *x = ct__data(inputs);
  int64_t *y = ct__data(targets);
  const int64_t per = f->store.c * f->store.out_h * f->store.out_w;
  for (int64_t i = 0; i < count; i++) {
    ct_status st = folder_sample(f, idx[i], epoch, x + i * per, y + i);
    if (st != CT_OK) return st;
  }
  return CT_OK;
}

static ct_status folder_get(void *self, int64_t index, ct_sample *out) {
  image_folder *f = self;
  out->input =
      ct__empty((int64_t[]){f->store.c, f->store.out_h, f->store.out_w}, 3, CT_F32, ct_cpu());
  out->target = ct__empty(NULL, 0, CT_I64, ct_cpu());
  if (!out->input || !out->target) return ct_last_error();
  return folder_sample(f, index, atomic_load(&f->owner->epoch), ct__data(out->input),
                       ct__data(out->target));
}

static const ct_dataset_vtable folder_vt = {
    .length = folder_length, .get = folder_get, .destroy = folder_destroy};
static const ct__batch_ops folder_ops = {.sample_meta = folder_meta, .fill = folder_fill};

/* Checks the options and sets the store's size from them (or from first_path). */
static ct_status folder_geometry(image_folder *f, const char *first_path) {
  ct_image_folder_opts *o = &f->opts;
  if (o->channels == 0) o->channels = 3;
  if (o->channels != 1 && o->channels != 3)
    return ct__fail_status(CT_ERR_ARG, "image_folder_open: channels must be 1 or 3 (got %d)",
                           o->channels);
  if (o->resize_h < 0 || o->resize_w < 0 || (o->resize_h == 0) != (o->resize_w == 0) ||
      o->resize_h > 1 << 16 || o->resize_w > 1 << 16 || o->center_crop < 0)
    return ct__fail_status(CT_ERR_ARG,
                           "image_folder_open: resize %lldx%lld (both 0 or both 1..65536) "
                           "and center_crop %lld (>= 0) are not valid",
                           (long long)o->resize_w, (long long)o->resize_h,
                           (long long)o->center_crop);
  int64_t h = o->resize_h, w = o->resize_w;
  if (h == 0) { /* the first image's size */
    uint8_t *px;
    ct_status st = ct__image_decode(first_path, &px, &h, &w);
    if (st != CT_OK) return st;
    ct__free(px);
  }
  if (o->center_crop > 0) {
    if (o->center_crop > h || o->center_crop > w)
      return ct__fail_status(CT_ERR_ARG,
                             "image_folder_open: center_crop %lld is larger than the "
                             "%lldx%lld images",
                             (long long)o->center_crop, (long long)w, (long long)h);
    h = w = o->center_crop;
  }
  f->store.c = o->channels;
  f->store.h = h;
  f->store.w = w;
  return ct__image_store_init_transforms(&f->store, &o->transforms, "image_folder_open");
}

/* The class folders to read: the given names (each must exist) or the subfolders. */
static ct_status folder_classes(image_folder *f, const char *dir, strlist *classes) {
  const ct_image_folder_opts *o = &f->opts;
  strlist found = {0};
  ct_status st = list_dir(dir, true, &found);
  if (st != CT_OK) return st;
  if (found.n == 0) {
    strlist_free(&found);
    return ct__fail_status(CT_ERR_FORMAT,
                           "image_folder_open: %s has no class subfolders (expected "
                           "%s/CLASS/IMAGE.png or .jpg)",
                           SHOWN(dir), SHOWN(dir));
  }
  if (!o->class_names) {
    *classes = found;
    return CT_OK;
  }
  for (int64_t i = 0; i < found.n; i++) {
    bool known = false;
    for (int64_t k = 0; k < o->num_classes && !known; k++)
      known = o->class_names[k] && !strcmp(o->class_names[k], found.v[i]);
    if (!known) {
      st = ct__fail_status(CT_ERR_FORMAT,
                           "image_folder_open: %s/%s is a class not among the %lld "
                           "given (the training data's)",
                           SHOWN(dir), SHOWN(found.v[i]), (long long)o->num_classes);
      strlist_free(&found);
      return st;
    }
  }
  strlist_free(&found);
  for (int64_t k = 0; k < o->num_classes; k++)
    if (!o->class_names[k] || !strlist_push(classes, ct__strdup(o->class_names[k]))) {
      strlist_free(classes);
      return o->class_names[k]
                 ? ct__fail_status(CT_ERR_OOM, "image_folder_open: out of host memory")
                 : ct__fail_status(CT_ERR_ARG,
                                   "image_folder_open: class_names[%lld] "
                                   "is NULL",
                                   (long long)k);
    }
  return CT_OK;
}

ct_dataset *ct_image_folder_open(const char *dir, const ct_image_folder_opts *opts) {
  if (!dir) return ct__fail(CT_ERR_ARG, "image_folder_open: dir is NULL");
  if (opts && opts->class_names && opts->num_classes < 1)
    return ct__fail(CT_ERR_ARG, "image_folder_open: class_names given with num_classes %lld",
                    (long long)opts->num_classes);
  image_folder *f = ct__calloc(1, sizeof *f);
  if (!f) return ct__fail(CT_ERR_OOM, "image_folder_open: out of host memory");
  f->opts = opts ? *opts : (ct_image_folder_opts){0};
  strlist classes = {0}, paths = {0};
  int64_t *labels = NULL, cap = 0;
  ct_status st = folder_classes(f, dir, &classes);
  for (int64_t k = 0; st == CT_OK && k < classes.n; k++) {
    char *sub = join(dir, classes.v[k]);
    strlist files = {0};
    st = sub ? list_dir(sub, false, &files)
             : ct__fail_status(CT_ERR_OOM,
                               "image_folder_open: out of "
                               "host memory");
    if (st == CT_OK && files.n == 0 && !f->opts.class_names)
      st = ct__fail_status(CT_ERR_FORMAT,
                           "image_folder_open: the class folder %s has no .png, .jpg or "
                           ".jpeg files",
                           SHOWN(sub));
    for (int64_t i = 0; st == CT_OK && i < files.n; i++) {
      if (paths.n == cap) {
        cap = cap ? 2 * cap : 64;
        int64_t *l = ct__realloc_array(labels, (size_t)cap, sizeof *l);
        if (!l)
          st = ct__fail_status(CT_ERR_OOM, "image_folder_open: out of host memory");
        else
          labels = l;
      }
      if (st == CT_OK) {
        labels[paths.n] = k;
        if (!strlist_push(&paths, join(sub, files.v[i])))
          st = ct__fail_status(CT_ERR_OOM, "image_folder_open: out of host memory");
      }
    }
    strlist_free(&files);
    ct__free(sub);
  }
  if (st == CT_OK && paths.n == 0)
    st = ct__fail_status(CT_ERR_FORMAT, "image_folder_open: %s has no images in its class folders",
                         SHOWN(dir));
  f->classes = classes.v;
  f->num_classes = classes.n;
  f->paths = paths.v;
  f->n = paths.n;
  f->labels = labels;
  if (st == CT_OK) st = folder_geometry(f, f->paths[0]);
  if (st != CT_OK) {
    folder_destroy(f);
    return NULL;
  }
  f->info = (ct_image_folder_info){.num_classes = f->num_classes,
                                   .class_names = (const char *const *)f->classes,
                                   .channels = f->store.c,
                                   .height = f->store.out_h,
                                   .width = f->store.out_w,
                                   .paths = (const char *const *)f->paths,
                                   .labels = f->labels};
  ct_dataset *d = ct__dataset_new_fast(&folder_vt, &folder_ops, f);
  if (d) f->owner = d;
  return d;
}

const ct_image_folder_info *ct_image_folder_info_of(const ct_dataset *d) {
  if (!d || d->vt.get != folder_get)
    return ct__fail(CT_ERR_ARG, "image_folder_info_of: not an image-folder dataset");
  return &((image_folder *)d->self)->info;
}

ct_tensor *ct_image_load(const char *path, const ct_image_folder_opts *opts) {
  if (!path) return ct__fail(CT_ERR_ARG, "image_load: path is NULL");
  image_folder f = {.opts = opts ? *opts : (ct_image_folder_opts){0}};
  /* Prediction: no random transforms; a random crop becomes a center crop of its size. */
  if (f.opts.transforms.random_crop > 0 &&
      (f.opts.center_crop == 0 || f.opts.center_crop > f.opts.transforms.random_crop))
    f.opts.center_crop = f.opts.transforms.random_crop;
  f.opts.transforms.random_crop = 0;
  f.opts.transforms.crop_padding = 0;
  f.opts.transforms.random_hflip = false;
  if (folder_geometry(&f, path) != CT_OK) return NULL;
  ct_tensor *t =
      ct__empty((int64_t[]){f.store.c, f.store.out_h, f.store.out_w}, 3, CT_F32, ct_cpu());
  if (!t) return NULL;
  uint8_t *bytes;
  if (load_bytes(&f.opts, &f.store, path, &bytes) != CT_OK) {
    ct__release(t);
    return NULL;
  }
  ct__transform_pixels(&f.store, bytes, 0, 0, ct__data(t));
  ct__free(bytes);
  ct__track(t);
  return t;
}
