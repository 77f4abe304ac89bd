/* checkpoint.c: training checkpoints as one safetensors file.
 *
 * Contents: the model's state under its torch state_dict names
 * ("conv1.weight", ...), the optimizer's state under "optim.<param>.<kind>"
 * ("optim.0.momentum_buffer"), the lr schedule's position as the f64 vector
 * "sched.state" (ct_lr_scheduler_state; absent without a schedule and from
 * earlier checkpoints), and the metadata as 0-d tensors "meta.*" (i64,
 * or f64 for real numbers): ct_save_safetensors writes no "__metadata__" map,
 * and tensors keep the file readable by any safetensors reader. A model
 * trained on your own data (csv:FILE, folder:DIR) also has "meta.data.*":
 * the class names and CSV columns as '\n'-separated u8 text, the sample
 * geometry, the normalization statistics and where the data came from (what
 * eval and predict need); checkpoints without them load as before.
 *
 * Saving is ct_save_safetensors: "<path>.tmp.<pid>", fsync, rename over
 * <path>, fsync of the folder; so a crash or kill -9 at any moment leaves the
 * previous checkpoint or the new one, whole (tests/cli/kill_save.c kills
 * saves at random moments). A killed save leaves its temporary file, which
 * the next run removes before it trains (cli_checkpoint_prepare). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define CKPT_FORMAT 1
#define META_PREFIX "meta."
#define OPTIM_PREFIX "optim."
#define SCHED_STATE "sched.state"

/* ---- Metadata fields --------------------------------------------------------- */

typedef enum field_kind { F_I64, F_U64, F_F64 } field_kind;
typedef struct field {
  const char *name;
  field_kind kind;
  size_t offset;
  bool optional; /* absent in checkpoints of earlier versions: see cli_ckpt_meta */
} field;

#define I64(n, m) \
  { "meta." n, F_I64, offsetof(cli_ckpt_meta, m), false }
#define U64(n, m) \
  { "meta." n, F_U64, offsetof(cli_ckpt_meta, m), false }
#define F64(n, m) \
  { "meta." n, F_F64, offsetof(cli_ckpt_meta, m), false }
static const field fields[] = {
    I64("model", model),
    I64("dataset", dataset),
    I64("optimizer", optim),
    I64("epoch", epoch),
    I64("batch", batch),
    U64("seed", seed),
    U64("rng_seed", rng_seed),
    U64("rng_offset", rng_offset),
    I64("step_count", step_count),
    I64("batch_size", batch_size),
    F64("lr", lr),
    F64("momentum", momentum),
    F64("weight_decay", weight_decay),
    I64("limit_train", limit_train),
    I64("limit_test", limit_test),
    F64("epoch_loss_sum", epoch_loss_sum),
    I64("epoch_samples", epoch_samples),
    F64("epoch_seconds", epoch_seconds),
    F64("epoch_wait_seconds", epoch_wait_seconds),
    F64("accuracy", accuracy),
    {"meta.lr_schedule", F_I64, offsetof(cli_ckpt_meta, schedule), true},
    {"meta.lr_step_size", F_I64, offsetof(cli_ckpt_meta, step_size), true},
    {"meta.lr_gamma", F_F64, offsetof(cli_ckpt_meta, gamma), true},
    {"meta.augment", F_I64, offsetof(cli_ckpt_meta, augment), true},
    {"meta.label_smoothing", F_F64, offsetof(cli_ckpt_meta, label_smoothing), true},
    {"meta.amp", F_I64, offsetof(cli_ckpt_meta, amp), true},
    {"meta.amp_scale", F_F64, offsetof(cli_ckpt_meta, amp_scale), true},
    {"meta.amp_growth_tracker", F_I64, offsetof(cli_ckpt_meta, amp_growth_tracker), true},
    {"meta.world_size", F_I64, offsetof(cli_ckpt_meta, world_size), true},
};
#define NFIELDS ((int)(sizeof fields / sizeof fields[0]))
/* meta.format, the fields, meta.model_name and meta.dataset_name (u8 text). */
#define NMETA (NFIELDS + 3)

static ct_tensor *scalar_tensor(const void *value, ct_dtype dtype) {
  static const int64_t no_shape[1] = {1};
  return ct_from_data(value, no_shape, 0, &(ct_tensor_opts){.dtype = dtype});
}

static ct_tensor *text_tensor(const char *s) {
  int64_t n = (int64_t)strlen(s);
  return ct_from_data(s, &n, 1, &(ct_tensor_opts){.dtype = CT_U8});
}

/* ---- Your own data's fields (meta.data.*) ---------------------------------------- */

#define DATA_TENSORS 9

/* The meta.data.* tensors of info into t/names (DATA_TENSORS of them). */
static void data_tensors(const cli_data_info *info, ct_tensor **t, const char **names) {
  int64_t geometry[5] = {info->num_classes, info->channels, info->height, info->width,
                         info->num_stats};
  int64_t five = 5, ns = info->num_stats;
  names[0] = "meta.data.geometry";
  t[0] = ct_from_data(geometry, &five, 1, &(ct_tensor_opts){.dtype = CT_I64});
  names[1] = "meta.data.val_split";
  t[1] = scalar_tensor(&info->val_split, CT_F64);
  names[2] = "meta.data.mean";
  t[2] = ct_from_data(info->mean, &ns, 1, &(ct_tensor_opts){.dtype = CT_F64});
  names[3] = "meta.data.std";
  t[3] = ct_from_data(info->std, &ns, 1, &(ct_tensor_opts){.dtype = CT_F64});
  /* Text fields with a leading byte, so that none is empty: '=' then the text. */
  const char *texts[5] = {info->source, info->test_source, info->class_names, info->feature_names,
                          info->target_name};
  static const char *text_names[5] = {"meta.data.source", "meta.data.test_source",
                                      "meta.data.class_names", "meta.data.feature_names",
                                      "meta.data.target_name"};
  for (int i = 0; i < 5; i++) {
    size_t len = strlen(texts[i]);
    char *buf = malloc(len + 2);
    names[4 + i] = text_names[i];
    t[4 + i] = NULL;
    if (!buf) continue;
    buf[0] = '=';
    memcpy(buf + 1, texts[i], len + 1);
    t[4 + i] = text_tensor(buf);
    free(buf);
  }
}

/* ---- Saving -------------------------------------------------------------------- */

/* Whether a save could create its temporary "<path>.tmp.<pid>" next to
 * path, as it does first; false with errno. Any file of that name is stale:
 * this process is not saving yet. */
static bool can_create_next_to(const char *path) {
  size_t len = strlen(path) + 32;
  char *probe = malloc(len);
  if (!probe) return errno = ENOMEM, false;
  snprintf(probe, len, "%s.tmp.%ld", path, (long)getpid());
  unlink(probe);
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
  int err = errno;
  if (fd >= 0) {
    close(fd);
    unlink(probe);
  }
  free(probe);
  errno = err;
  return fd >= 0;
}

int cli_checkpoint_prepare(const char *cmd, const char *path, bool quiet) {
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
    if (S_ISDIR(sb.st_mode))
      fprintf(stderr,
              "ctensor %s: --checkpoint %s is a folder: name a file (such as %s/run.safetensors)\n",
              cmd, cli_shown(path), cli_shown(path));
    else
      fprintf(stderr, "ctensor %s: --checkpoint %s is not a regular file\n", cmd, cli_shown(path));
    return CLI_FAIL;
  }
  if (!can_create_next_to(path)) {
    fprintf(stderr, "ctensor %s: cannot save checkpoints to %s: %s (creating a file next to it)\n",
            cmd, cli_shown(path), strerror(errno));
    return CLI_FAIL;
  }
  int removed = 0;
  if (ct_safetensors_remove_stale(path, &removed) != CT_OK)
    fprintf(stderr, "ctensor %s: warning: %s\n", cmd, ct_last_error_message());
  else if (removed && !quiet)
    fprintf(stderr,
            "ctensor %s: removed %d temporary file(s) that an interrupted save to %s left\n", cmd,
            removed, cli_shown(path));
  return CLI_OK;
}

/* The schedule's position as a 1-d f64 tensor (NULL with the library's error). */
static ct_tensor *sched_tensor(const ct_lr_scheduler *sched) {
  int64_t n = ct_lr_scheduler_state(sched, NULL, 0);
  double *v = calloc((size_t)n + 1, sizeof *v);
  if (!v) return NULL;
  ct_lr_scheduler_state(sched, v, (int)n);
  ct_tensor *t = ct_from_data(v, &n, 1, &(ct_tensor_opts){.dtype = CT_F64});
  free(v);
  return t;
}

ct_status cli_checkpoint_save(const char *path, ct_module *model, ct_optimizer *opt,
                              const ct_lr_scheduler *sched, const cli_ckpt_meta *meta) {
  int n_model = ct_module_state(model, NULL, NULL, 0);
  int n_opt = opt ? ct_optimizer_state(opt, NULL, NULL, 0) : 0;
  if (n_model < 0 || n_opt < 0) return ct_last_error() ? ct_last_error() : CT_ERR_INTERNAL;
  const int n_data = meta->data.num_classes > 0 ? DATA_TENSORS : 0;
  int total = n_model + n_opt + NMETA + (sched != NULL) + n_data;
  ct_tensor **tensors = calloc((size_t)total, sizeof *tensors);
  const char **names = calloc((size_t)total, sizeof *names);
  char **owned = calloc((size_t)(n_opt + 1), sizeof *owned);         /* "optim." names */
  ct_tensor **made = calloc(NMETA + 1 + DATA_TENSORS, sizeof *made); /* meta, sched, data */
  ct_status st = CT_OK;
  if (!tensors || !names || !owned || !made) {
    st = CT_ERR_OOM;
    goto done;
  }
  ct_module_state(model, tensors, names, n_model);
  if (n_opt) {
    ct_optimizer_state(opt, tensors + n_model, names + n_model, n_opt);
    for (int i = 0; i < n_opt; i++) {
      const char *base = names[n_model + i];
      size_t len = strlen(OPTIM_PREFIX) + strlen(base) + 1;
      if (!(owned[i] = malloc(len))) {
        st = CT_ERR_OOM;
        goto done;
      }
      snprintf(owned[i], len, OPTIM_PREFIX "%s", base);
      names[n_model + i] = owned[i];
    }
  }
  int k = n_model + n_opt, nm = 0;
  int64_t format = CKPT_FORMAT;
  made[nm++] = scalar_tensor(&format, CT_I64);
  names[k++] = "meta.format";
  for (int i = 0; i < NFIELDS; i++) {
    const void *p = (const char *)meta + fields[i].offset;
    made[nm++] = scalar_tensor(p, fields[i].kind == F_F64 ? CT_F64 : CT_I64); /* u64 as its bits */
    names[k++] = fields[i].name;
  }
  made[nm++] = text_tensor(cli_model_name((int)meta->model));
  names[k++] = "meta.model_name";
  made[nm++] = text_tensor(cli_dataset_name((int)meta->dataset));
  names[k++] = "meta.dataset_name";
  if (sched) {
    made[nm++] = sched_tensor(sched);
    names[k++] = SCHED_STATE;
  }
  if (n_data) {
    data_tensors(&meta->data, made + nm, names + k);
    nm += n_data;
    k += n_data;
  }
  for (int i = 0; i < nm; i++) {
    if (!made[i]) {
      st = ct_last_error();
      goto done;
    }
    tensors[n_model + n_opt + i] = made[i];
  }

  st = ct_save_safetensors(path, tensors, names, total);
done:
  for (int i = 0; i < NMETA + 1 + DATA_TENSORS && made; i++) ct_free(made[i]);
  for (int i = 0; i < n_opt && owned; i++) free(owned[i]);
  free(made);
  free(owned);
  free(tensors);
  free(names);
  return st;
}

/* ---- Loading ------------------------------------------------------------------- */

static int find(const cli_ckpt *ck, const char *name) {
  for (int i = 0; i < ck->n; i++)
    if (!strcmp(ck->names[i], name)) return i;
  return -1;
}

void cli_checkpoint_free(cli_ckpt *ck) {
  ct_safetensors_free(ck->tensors, ck->names, ck->n);
  *ck = (cli_ckpt){0};
}

/* Reads one 1-element meta tensor of dtype `dtype` into 8 bytes at out. */
static bool read_meta(const cli_ckpt *ck, const char *name, ct_dtype dtype, void *out, char *err,
                      size_t errsz) {
  int i = find(ck, name);
  if (i < 0) {
    snprintf(err, errsz, "the checkpoint lacks %s", name);
    return false;
  }
  if (ct_dtype_of(ck->tensors[i]) != dtype || ct_numel(ck->tensors[i]) != 1) {
    snprintf(err, errsz, "%s should be one %s value", name, ct_dtype_name(dtype));
    return false;
  }
  if (ct_copy_to_host(ck->tensors[i], out, 8) != CT_OK) {
    snprintf(err, errsz, "reading %s: %s", name, ct_last_error_message());
    return false;
  }
  return true;
}

/* A meta.data text tensor ('=' + text) into out (size bytes). */
static bool read_data_text(const cli_ckpt *ck, const char *name, char *out, size_t size, char *err,
                           size_t errsz) {
  int i = find(ck, name);
  const ct_tensor *t = i >= 0 ? ck->tensors[i] : NULL;
  int64_t n = t ? ct_numel(t) : 0;
  char *buf = t && ct_dtype_of(t) == CT_U8 && ct_ndim(t) == 1 && n >= 1 && (size_t)n <= size
                  ? malloc((size_t)n)
                  : NULL;
  bool ok = buf && ct_copy_to_host(t, buf, (size_t)n) == CT_OK && buf[0] == '=' &&
            memchr(buf, 0, (size_t)n) == NULL;
  if (ok) {
    memcpy(out, buf + 1, (size_t)n - 1);
    out[n - 1] = 0;
  } else {
    snprintf(err, errsz, "%s should be u8 text of at most %zu bytes starting with '='", name,
             size - 1);
  }
  free(buf);
  return ok;
}

/* The optional meta.data.* fields (none: num_classes stays 0). */
static bool read_data_info(const cli_ckpt *ck, cli_data_info *info, char *err, size_t errsz) {
  *info = (cli_data_info){0};
  int g = find(ck, "meta.data.geometry");
  if (g < 0) return true;
  int64_t geometry[5];
  const ct_tensor *t = ck->tensors[g];
  if (ct_dtype_of(t) != CT_I64 || ct_numel(t) != 5 ||
      ct_copy_to_host(t, geometry, sizeof geometry) != CT_OK) {
    snprintf(err, errsz, "meta.data.geometry should be 5 i64 values");
    return false;
  }
  info->num_classes = geometry[0];
  info->channels = geometry[1];
  info->height = geometry[2];
  info->width = geometry[3];
  info->num_stats = geometry[4];
  if (info->num_classes < 1 || info->num_classes > 1000000 || info->channels < 1 ||
      info->channels > 3 || info->height < 1 || info->height > 4096 || info->width < 1 ||
      info->width > 1 << 20 || info->num_stats < 1 || info->num_stats > CLI_DATA_MAX_STATS) {
    snprintf(err, errsz, "meta.data.geometry has a value out of range");
    return false;
  }
  if (!read_meta(ck, "meta.data.val_split", CT_F64, &info->val_split, err, errsz)) return false;
  if (!(info->val_split >= 0 && info->val_split < 1)) {
    snprintf(err, errsz, "meta.data.val_split has a value out of range");
    return false;
  }
  const char *stat_names[2] = {"meta.data.mean", "meta.data.std"};
  double *stats[2] = {info->mean, info->std};
  for (int s = 0; s < 2; s++) {
    int i = find(ck, stat_names[s]);
    t = i >= 0 ? ck->tensors[i] : NULL;
    if (!t || ct_dtype_of(t) != CT_F64 || ct_numel(t) != info->num_stats ||
        ct_copy_to_host(t, stats[s], sizeof(double) * (size_t)info->num_stats) != CT_OK) {
      snprintf(err, errsz, "%s should be %lld f64 values", stat_names[s],
               (long long)info->num_stats);
      return false;
    }
  }
  for (int64_t k = 0; k < info->num_stats; k++)
    if (!isfinite(info->mean[k]) || !(info->std[k] > 0) || !isfinite(info->std[k])) {
      snprintf(err, errsz, "meta.data.mean/std: entry %lld is not finite with std > 0",
               (long long)k);
      return false;
    }
  return read_data_text(ck, "meta.data.source", info->source, sizeof info->source, err, errsz) &&
         read_data_text(ck, "meta.data.test_source", info->test_source, sizeof info->test_source,
                        err, errsz) &&
         read_data_text(ck, "meta.data.class_names", info->class_names, sizeof info->class_names,
                        err, errsz) &&
         read_data_text(ck, "meta.data.feature_names", info->feature_names,
                        sizeof info->feature_names, err, errsz) &&
         read_data_text(ck, "meta.data.target_name", info->target_name, sizeof info->target_name,
                        err, errsz);
}

bool cli_checkpoint_load(const char *path, cli_ckpt *ck, char *err, size_t errsz) {
  *ck = (cli_ckpt){0};
  if (ct_load_safetensors(path, &ck->tensors, &ck->names, &ck->n) != CT_OK) {
    snprintf(err, errsz, "%s", ct_last_error_message());
    return false;
  }
  int64_t format;
  if (find(ck, "meta.format") < 0) {
    snprintf(err, errsz,
             "%s is a safetensors file but not a ctensor training checkpoint (no meta.format)",
             cli_shown(path));
    goto fail;
  }
  if (!read_meta(ck, "meta.format", CT_I64, &format, err, errsz)) goto fail;
  if (format != CKPT_FORMAT) {
    snprintf(err, errsz, "%s: checkpoint format %lld, this program reads format %d",
             cli_shown(path), (long long)format, CKPT_FORMAT);
    goto fail;
  }
  /* The optional fields' values when absent: how earlier versions trained. */
  ck->meta.schedule = SCHED_NONE;
  ck->meta.step_size = 0;
  ck->meta.gamma = 0.1;
  ck->meta.augment = 0;
  ck->meta.label_smoothing = 0;
  ck->meta.amp = AMP_NONE;
  ck->meta.amp_scale = 1;
  ck->meta.amp_growth_tracker = 0;
  ck->meta.world_size = 1;
  for (int i = 0; i < NFIELDS; i++) {
    void *p = (char *)&ck->meta + fields[i].offset;
    if (fields[i].optional && find(ck, fields[i].name) < 0) continue;
    if (!read_meta(ck, fields[i].name, fields[i].kind == F_F64 ? CT_F64 : CT_I64, p, err, errsz))
      goto fail;
  }
  const cli_ckpt_meta *m = &ck->meta;
  const char *bad = !cli_model_name((int)m->model)                          ? "meta.model"
                    : !cli_dataset_name((int)m->dataset)                    ? "meta.dataset"
                    : !cli_optim_name((int)m->optim)                        ? "meta.optimizer"
                    : m->epoch < 0                                          ? "meta.epoch"
                    : m->batch < 0                                          ? "meta.batch"
                    : m->step_count < 0 || m->step_count == INT64_MAX       ? "meta.step_count"
                    : m->batch_size < 1                                     ? "meta.batch_size"
                    : m->batch_size > (1 << 20)                             ? "meta.batch_size"
                    : !(m->lr > 0 && m->lr <= 1e6)                          ? "meta.lr"
                    : !(m->momentum >= 0 && m->momentum < 1)                ? "meta.momentum"
                    : !(m->weight_decay >= 0 && m->weight_decay <= 1e6)     ? "meta.weight_decay"
                    : m->limit_train < 0                                    ? "meta.limit_train"
                    : m->limit_test < 0                                     ? "meta.limit_test"
                    : m->epoch_samples < 0                                  ? "meta.epoch_samples"
                    : !cli_schedule_name((int)m->schedule)                  ? "meta.lr_schedule"
                    : m->step_size < 0                                      ? "meta.lr_step_size"
                    : !(m->gamma > 0 && m->gamma <= 1e6)                    ? "meta.lr_gamma"
                    : !cli_augment_name((int)m->augment)                    ? "meta.augment"
                    : !(m->label_smoothing >= 0 && m->label_smoothing <= 1) ? "meta.label_smoothing"
                    : m->amp != AMP_NONE && m->amp != AMP_F16 && m->amp != AMP_BF16 ? "meta.amp"
                    : !(m->amp_scale > 0 && isfinite(m->amp_scale)) ? "meta.amp_scale"
                    : m->amp_growth_tracker < 0                     ? "meta.amp_growth_tracker"
                    : m->world_size < 1                             ? "meta.world_size"
                                                                    : NULL;
  if (bad && !strcmp(bad, "meta.step_count")) { /* INT64_MAX: no room for another step */
    snprintf(err, errsz, "%s: meta.step_count %lld is out of range [0, %lld)", cli_shown(path),
             (long long)m->step_count, (long long)INT64_MAX);
    goto fail;
  }
  if (bad) {
    snprintf(err, errsz, "%s: %s has a value out of range", cli_shown(path), bad);
    goto fail;
  }
  if (!read_data_info(ck, &ck->meta.data, err, errsz)) goto fail;
  if (cli_dataset_is_user((cli_dataset)m->dataset) != (m->data.num_classes > 0)) {
    snprintf(err, errsz, "%s: meta.dataset %s %s meta.data.*", cli_shown(path),
             cli_dataset_name((int)m->dataset),
             m->data.num_classes > 0 ? "is a built-in dataset, but the checkpoint has"
                                     : "is your own data, but the checkpoint lacks");
    goto fail;
  }
  return true;
fail:
  cli_checkpoint_free(ck);
  return false;
}

bool cli_checkpoint_restore_model(const cli_ckpt *ck, ct_module *model, char *err, size_t errsz) {
  int n = ct_module_state(model, NULL, NULL, 0);
  ct_tensor **dst = calloc((size_t)n + 1, sizeof *dst);
  const char **names = calloc((size_t)n + 1, sizeof *names);
  bool ok = false;
  if (!dst || !names) {
    snprintf(err, errsz, "out of memory");
    goto done;
  }
  ct_module_state(model, dst, names, n);
  /* Check everything first, then copy. */
  for (int i = 0; i < n; i++) {
    int j = find(ck, names[i]);
    if (j < 0) {
      snprintf(err, errsz, "the checkpoint has no %s (is it a checkpoint of model %s?)", names[i],
               cli_model_name((int)ck->meta.model));
      goto done;
    }
    const ct_tensor *src = ck->tensors[j];
    char a[96], b[96];
    if (ct_dtype_of(src) != ct_dtype_of(dst[i]) || ct_ndim(src) != ct_ndim(dst[i]) ||
        memcmp(ct_shape(src), ct_shape(dst[i]), sizeof(int64_t) * (size_t)ct_ndim(src)) != 0) {
      snprintf(err, errsz, "%s is %s %s in the checkpoint but the model needs %s %s", names[i],
               ct_dtype_name(ct_dtype_of(src)),
               ct_shape_format(ct_shape(src), ct_ndim(src), a, sizeof a),
               ct_dtype_name(ct_dtype_of(dst[i])),
               ct_shape_format(ct_shape(dst[i]), ct_ndim(dst[i]), b, sizeof b));
      goto done;
    }
  }
  for (int j = 0; j < ck->n; j++) {
    const char *name = ck->names[j];
    if (!strncmp(name, META_PREFIX, strlen(META_PREFIX)) ||
        !strncmp(name, OPTIM_PREFIX, strlen(OPTIM_PREFIX)) || !strcmp(name, SCHED_STATE))
      continue;
    bool known = false;
    for (int i = 0; i < n && !known; i++) known = !strcmp(names[i], name);
    if (!known) {
      snprintf(err, errsz, "the checkpoint holds %s, which model %s does not have", cli_shown(name),
               cli_model_name((int)ck->meta.model));
      goto done;
    }
  }
  ct_no_grad_begin();
  ok = true;
  for (int i = 0; i < n && ok; i++)
    if (!ct_copy_(dst[i], ck->tensors[find(ck, names[i])])) {
      snprintf(err, errsz, "restoring %s: %s", names[i], ct_last_error_message());
      ok = false;
    }
  ct_no_grad_end();
done:
  free(dst);
  free(names);
  return ok;
}

bool cli_checkpoint_restore_optimizer(const cli_ckpt *ck, ct_optimizer *opt, char *err,
                                      size_t errsz) {
  ct_tensor **t = calloc((size_t)ck->n + 1, sizeof *t);
  const char **names = calloc((size_t)ck->n + 1, sizeof *names);
  bool ok = false;
  if (!t || !names) {
    snprintf(err, errsz, "out of memory");
    goto done;
  }
  int k = 0;
  size_t plen = strlen(OPTIM_PREFIX);
  for (int j = 0; j < ck->n; j++)
    if (!strncmp(ck->names[j], OPTIM_PREFIX, plen)) {
      t[k] = ck->tensors[j];
      names[k++] = ck->names[j] + plen;
    }
  if (ct_optimizer_load_state(opt, t, names, k, ck->meta.step_count) != CT_OK) {
    snprintf(err, errsz, "restoring the optimizer state: %s", ct_last_error_message());
    goto done;
  }
  ok = true;
done:
  free(t);
  free(names);
  return ok;
}

bool cli_checkpoint_restore_schedule(const cli_ckpt *ck, ct_lr_scheduler *sched, char *err,
                                     size_t errsz) {
  int j = sched ? find(ck, SCHED_STATE) : -1;
  if (j < 0) return true; /* no schedule, or a checkpoint from before schedule states */
  const ct_tensor *t = ck->tensors[j];
  int64_t n = ct_numel(t);
  if (ct_dtype_of(t) != CT_F64 || ct_ndim(t) != 1 || n > 4096) {
    snprintf(err, errsz, "%s should be a vector of at most 4096 f64 values", SCHED_STATE);
    return false;
  }
  double *v = calloc((size_t)n + 1, sizeof *v);
  bool ok = v && ct_copy_to_host(t, v, (size_t)n * sizeof *v) == CT_OK &&
            ct_lr_scheduler_load_state(sched, v, (int)n) == CT_OK;
  if (!ok)
    snprintf(err, errsz, "restoring the lr schedule: %s",
             v ? ct_last_error_message() : "out of memory");
  free(v);
  return ok;
}
