/* options.c: the command line of `ctensor train` and `ctensor eval`
 * (getopt_long), strict number parsing, names of models/datasets/optimizers,
 * and the choice of device. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- Names ------------------------------------------------------------------- */

typedef struct name_code {
  const char *name;
  int code;
} name_code;

static const name_code models[] = {
    {"mlp", MODEL_MLP},       {"cnn", MODEL_CNN}, {"simplecnn", MODEL_SIMPLECNN},
    {"resnet", MODEL_RESNET}, {"vit", MODEL_VIT}, {"gpt", MODEL_GPT}};
static const name_code datasets[] = {{"fashion-mnist", DATASET_FASHION_MNIST},
                                     {"mnist", DATASET_MNIST},
                                     {"cifar10", DATASET_CIFAR10},
                                     {"fortunes", DATASET_FORTUNES},
                                     {"csv", DATASET_CSV},
                                     {"folder", DATASET_FOLDER}};
static const name_code optims[] = {
    {"sgd", OPTIM_SGD}, {"adam", OPTIM_ADAM}, {"adamw", OPTIM_ADAMW}};
static const name_code schedules[] = {
    {"none", SCHED_NONE}, {"step", SCHED_STEP}, {"cosine", SCHED_COSINE}};
static const name_code amps[] = {
    {"none", AMP_NONE}, {"f16", AMP_F16}, {"bf16", AMP_BF16}, {"auto", AMP_AUTO}};
static const name_code augments[] = {
    {"none", 0}, {"hflip", AUG_HFLIP}, {"crop", AUG_CROP}, {"crop,hflip", AUG_CROP | AUG_HFLIP}};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *code_name(const name_code *t, int n, int code) {
  for (int i = 0; i < n; i++)
    if (t[i].code == code) return t[i].name;
  return NULL;
}
static bool name_code_parse(const name_code *t, int n, const char *s, int *out) {
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].name, s)) return *out = t[i].code, true;
  return false;
}

const char *cli_model_name(int m) { return code_name(models, COUNT(models), m); }
const char *cli_dataset_name(int d) { return code_name(datasets, COUNT(datasets), d); }
const char *cli_optim_name(int o) { return code_name(optims, COUNT(optims), o); }
const char *cli_schedule_name(int s) { return code_name(schedules, COUNT(schedules), s); }
const char *cli_augment_name(int a) { return code_name(augments, COUNT(augments), a); }
const char *cli_amp_name(int a) { return code_name(amps, COUNT(amps), a); }
static bool cli_model_parse(const char *s, cli_model *out) {
  int c;
  if (!name_code_parse(models, COUNT(models), s, &c)) return false;
  return *out = (cli_model)c, true;
}
static bool cli_dataset_parse(const char *s, cli_dataset *out) {
  int c;
  if (!strcmp(s, "fashion_mnist") || !strcmp(s, "fashionmnist")) s = "fashion-mnist";
  if (!strcmp(s, "cifar-10")) s = "cifar10";
  if (!name_code_parse(datasets, COUNT(datasets), s, &c)) return false;
  return *out = (cli_dataset)c, true;
}
static bool cli_optim_parse(const char *s, cli_optim *out) {
  int c;
  if (!name_code_parse(optims, COUNT(optims), s, &c)) return false;
  return *out = (cli_optim)c, true;
}

static bool cli_schedule_parse(const char *s, cli_schedule *out) {
  int c;
  if (!name_code_parse(schedules, COUNT(schedules), s, &c)) return false;
  return *out = (cli_schedule)c, true;
}
/* "none" or a comma-separated list of hflip, crop. */
static bool cli_augment_parse(const char *s, int *out) {
  if (!strcmp(s, "none")) return *out = 0, true;
  int flags = 0;
  const char *p = s;
  for (;;) {
    size_t len = strcspn(p, ",");
    if (len == 5 && !strncmp(p, "hflip", 5))
      flags |= AUG_HFLIP;
    else if (len == 4 && !strncmp(p, "crop", 4))
      flags |= AUG_CROP;
    else
      return false;
    if (!p[len]) break;
    p += len + 1;
  }
  return *out = flags, true;
}

/* ---- Numbers ----------------------------------------------------------------- */

bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || strchr(s, '-')) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || end == s) return false;
  *out = v;
  return true;
}

bool cli_parse_f64(const char *s, double lo, double hi, double *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || end == s || !isfinite(v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* ---- Usage ------------------------------------------------------------------- */

void cli_usage(FILE *f) {
  fprintf(
      f,
      "usage: ctensor <command> [options]\n"
      "\n"
      "commands:\n"
      "  info                 devices, threads, BLAS, build and library versions\n"
      "  train [options]      train a model (defaults: a CNN on Fashion-MNIST on the best device)\n"
      "  eval --checkpoint P  test accuracy and loss of a checkpoint\n"
      "  predict --checkpoint P INPUT...\n"
      "                       the class (index and name) of each image file or CSV row\n"
      "                       (ctensor predict --help)\n"
      "  generate --checkpoint P [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K]\n"
      "           [--seed S] [--device D] [--threads N]\n"
      "                       sample bytes from a --model gpt checkpoint (ctensor generate "
      "--help)\n"
      "\n"
      "train options:\n"
      "  --model mlp|cnn|simplecnn|resnet|vit|gpt\n"
      "                                       model (default cnn)\n"
      "  --dataset fashion-mnist|mnist|cifar10|fortunes|csv:FILE|folder:DIR\n"
      "                                       dataset (default fashion-mnist; fortunes for gpt);\n"
      "                                       csv:FILE: rows of features and a class column "
      "(mlp);\n"
      "                                       folder:DIR: DIR/CLASS/*.png|jpg (cnn, resnet, vit, "
      "mlp)\n"
      "  --data-dir DIR                       dataset files (default "
      "/usr/share/datasets/<dataset>;\n"
      "                                       fortunes: /usr/share/games/fortunes)\n"
      "  --target COLUMN                      csv: the class column, by name or index (default "
      "the\n"
      "                                       last); every other column is a feature\n"
      "  --regression                         csv: the target is a number: mean squared error,\n"
      "                                       one output (default: class labels)\n"
      "  --test-data FILE|DIR                 csv/folder: test data of its own (folder: DIR/test\n"
      "                                       is used when DIR/train and DIR/test exist)\n"
      "  --val-split F                        csv/folder without test data: the test fraction "
      "split\n"
      "                                       off at random (seeded by --seed; default 0.2)\n"
      "  --image-size N                       folder: images resized to N x N (default 32)\n"
      "  --device auto|cpu|cuda[:N]           device (default auto: CT_DEVICE, else cuda:0, else "
      "cpu)\n"
      "  --disable-cuda                       run on the CPU\n"
      "  --epochs N                           total epochs (default 10)\n"
      "  --batch-size N                       (default 64; 32 for gpt)\n"
      "  --optimizer sgd|adam|adamw           (default adam; sgd for resnet, adamw for vit and "
      "gpt)\n"
      "  --lr X                               initial learning rate (default 0.01 sgd, 0.05 for "
      "resnet;\n"
      "                                       adam/adamw 0.001, 0.002 for mlp)\n"
      "  --lr-schedule none|step|cosine       lr per epoch (default cosine: from --lr down to 0 "
      "over\n"
      "                                       --epochs, as torch's "
      "CosineAnnealingLR(T_max=epochs))\n"
      "  --lr-step-size N, --lr-gamma X       step: lr times X every N epochs (default "
      "ceil(epochs/3), 0.1)\n"
      "  --momentum X                         sgd momentum (default 0.9)\n"
      "  --weight-decay X                     (default 0; adamw 0.01; resnet 5e-4, vit 0.05)\n"
      "  --label-smoothing X                  of the training loss, in [0, 1] (default 0;\n"
      "                                       resnet 0.1)\n"
      "  --augment none|hflip|crop|crop,hflip random training transforms: horizontal flip, random\n"
      "                                       crop after zero padding by size/8 (default: hflip "
      "for\n"
      "                                       cnn and vit, crop,hflip for resnet, none for mlp "
      "and\n"
      "                                       simplecnn)\n"
      "  --amp none|auto|f16|bf16             mixed precision: products and convolutions in "
      "f16/bf16,\n"
      "                                       f32 weights; f16 with dynamic loss scaling (default "
      "none;\n"
      "                                       auto: f16 on a GPU, bf16 on the CPU)\n"
      "  --workers N                          data loading threads (default 2)\n"
      "  --threads N                          CPU threads of the computation (default: the CPUs\n"
      "                                       this process may use; CT_NUM_THREADS)\n"
      "  --deterministic                      deterministic GPU algorithms (sort-based instead of\n"
      "                                       atomic sums): the same run gives the same bits\n"
      "  --seed N                             initialization and data order (default 1)\n"
      "  --checkpoint PATH                    save model, optimizer and position after every "
      "epoch\n"
      "                                       and on Ctrl-C (one safetensors file)\n"
      "  --resume                             continue from --checkpoint\n"
      "  --metrics PATH                       one JSON line per epoch (appended to on --resume)\n"
      "  --limit-train N, --limit-test N      use only the first N samples\n"
      "  --quiet                              print only the final accuracy\n"
      "\n"
      "eval options:\n"
      "  --checkpoint PATH (required), --data-dir DIR, --test-data FILE|DIR (csv/folder\n"
      "  checkpoints: other labeled data), --device D, --disable-cuda,\n"
      "  --batch-size N (default 500; gpt 64), --workers N, --limit-test N (default: as in "
      "training), "
      "--quiet\n"
      "\n"
      "exit status: 0 success, 1 failure, 2 bad usage, 130/143 stopped by SIGINT/SIGTERM "
      "(checkpoint saved)\n");
}

/* ---- Parsing ----------------------------------------------------------------- */

enum {
  OPT_MODEL = 256,
  OPT_DATASET,
  OPT_DATA_DIR,
  OPT_DEVICE,
  OPT_DISABLE_CUDA,
  OPT_EPOCHS,
  OPT_BATCH_SIZE,
  OPT_OPTIMIZER,
  OPT_LR,
  OPT_MOMENTUM,
  OPT_WEIGHT_DECAY,
  OPT_WORKERS,
  OPT_SEED,
  OPT_CHECKPOINT,
  OPT_RESUME,
  OPT_METRICS,
  OPT_LIMIT_TRAIN,
  OPT_LIMIT_TEST,
  OPT_QUIET,
  OPT_LR_SCHEDULE,
  OPT_LR_STEP_SIZE,
  OPT_LR_GAMMA,
  OPT_AUGMENT,
  OPT_LABEL_SMOOTHING,
  OPT_AMP,
  OPT_THREADS,
  OPT_DETERMINISTIC,
  OPT_TARGET,
  OPT_VAL_SPLIT,
  OPT_TEST_DATA,
  OPT_IMAGE_SIZE,
  OPT_REGRESSION
};

static const struct option train_long[] = {
    {"model", required_argument, NULL, OPT_MODEL},
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"data-dir", required_argument, NULL, OPT_DATA_DIR},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"disable-cuda", no_argument, NULL, OPT_DISABLE_CUDA},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
    {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
    {"lr", required_argument, NULL, OPT_LR},
    {"lr-schedule", required_argument, NULL, OPT_LR_SCHEDULE},
    {"lr-step-size", required_argument, NULL, OPT_LR_STEP_SIZE},
    {"lr-gamma", required_argument, NULL, OPT_LR_GAMMA},
    {"augment", required_argument, NULL, OPT_AUGMENT},
    {"label-smoothing", required_argument, NULL, OPT_LABEL_SMOOTHING},
    {"amp", required_argument, NULL, OPT_AMP},
    {"momentum", required_argument, NULL, OPT_MOMENTUM},
    {"weight-decay", required_argument, NULL, OPT_WEIGHT_DECAY},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
    {"seed", required_argument, NULL, OPT_SEED},
    {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"limit-train", required_argument, NULL, OPT_LIMIT_TRAIN},
    {"limit-test", required_argument, NULL, OPT_LIMIT_TEST},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"target", required_argument, NULL, OPT_TARGET},
    {"val-split", required_argument, NULL, OPT_VAL_SPLIT},
    {"test-data", required_argument, NULL, OPT_TEST_DATA},
    {"image-size", required_argument, NULL, OPT_IMAGE_SIZE},
    {"regression", no_argument, NULL, OPT_REGRESSION},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

static const struct option eval_long[] = {{"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
                                          {"data-dir", required_argument, NULL, OPT_DATA_DIR},
                                          {"device", required_argument, NULL, OPT_DEVICE},
                                          {"disable-cuda", no_argument, NULL, OPT_DISABLE_CUDA},
                                          {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
                                          {"workers", required_argument, NULL, OPT_WORKERS},
                                          {"limit-test", required_argument, NULL, OPT_LIMIT_TEST},
                                          {"test-data", required_argument, NULL, OPT_TEST_DATA},
                                          {"quiet", no_argument, NULL, OPT_QUIET},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};

enum { NOT_MINE = -2 }; /* an option parser's answer: another parser's option */

/* a and b are what the user typed (shown escaped) or empty strings. */
static int bad(const char *cmd, const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "ctensor %s: ", cmd);
  fprintf(stderr, fmt, cli_shown(a), cli_shown(b));
  fprintf(stderr, "\n\n");
  cli_usage(stderr);
  return CLI_USAGE;
}

/* The options that shape the training (model, data, optimizer, schedule,
 * augmentation, precision): CLI_OK, CLI_USAGE after the message, or
 * NOT_MINE for another option. */
static int model_option(const char *cmd, int c, const char *arg, cli_opts *o) {
  switch (c) {
    case OPT_MODEL:
      if (!cli_model_parse(arg, &o->model))
        return bad(cmd, "--model: expected mlp, cnn, simplecnn, resnet, vit or gpt, got '%s'%s",
                   arg, "");
      o->model_set = true;
      return CLI_OK;
    case OPT_DATASET:
      /* Your own data: csv:FILE or folder:DIR (the path goes where --data-dir does). */
      if (!strncmp(arg, "csv:", 4) || !strncmp(arg, "folder:", 7)) {
        o->dataset = arg[0] == 'c' ? DATASET_CSV : DATASET_FOLDER;
        o->data_dir = strchr(arg, ':') + 1;
        if (!*o->data_dir) return bad(cmd, "--dataset %s: the path is empty%s", arg, "");
        o->dataset_set = true;
        return CLI_OK;
      }
      if (!cli_dataset_parse(arg, &o->dataset) || cli_dataset_is_user(o->dataset))
        return bad(cmd,
                   "--dataset: expected fashion-mnist, mnist, cifar10, fortunes, csv:FILE or "
                   "folder:DIR, got '%s'%s",
                   arg, "");
      o->dataset_set = true;
      return CLI_OK;
    case OPT_TARGET:
      if (!*arg) return bad(cmd, "--target: empty column name%s%s", "", "");
      o->target = arg;
      return CLI_OK;
    case OPT_REGRESSION:
      o->regression = true;
      return CLI_OK;
    case OPT_VAL_SPLIT:
      if (!cli_parse_f64(arg, 0, 1, &o->val_split) || o->val_split <= 0 || o->val_split >= 1)
        return bad(cmd, "--val-split: expected a fraction between 0 and 1 (exclusive), got '%s'%s",
                   arg, "");
      o->val_split_set = true;
      return CLI_OK;
    case OPT_IMAGE_SIZE:
      if (!cli_parse_i64(arg, 8, 1024, &o->image_size))
        return bad(cmd, "--image-size: expected an integer from 8 to 1024, got '%s'%s", arg, "");
      o->image_size_set = true;
      return CLI_OK;
    case OPT_OPTIMIZER:
      if (!cli_optim_parse(arg, &o->optim))
        return bad(cmd, "--optimizer: expected sgd, adam or adamw, got '%s'%s", arg, "");
      o->optim_set = true;
      return CLI_OK;
    case OPT_LR:
      if (!cli_parse_f64(arg, 0, 1e6, &o->lr) || o->lr <= 0)
        return bad(cmd, "--lr: expected a positive number, got '%s'%s", arg, "");
      o->lr_set = true;
      return CLI_OK;
    case OPT_LR_SCHEDULE:
      if (!cli_schedule_parse(arg, &o->schedule))
        return bad(cmd, "--lr-schedule: expected none, step or cosine, got '%s'%s", arg, "");
      o->schedule_set = true;
      return CLI_OK;
    case OPT_LR_STEP_SIZE:
      if (!cli_parse_i64(arg, 1, 1000000, &o->step_size))
        return bad(cmd, "--lr-step-size: expected an integer from 1 to 1000000, got '%s'%s", arg,
                   "");
      o->step_size_set = true;
      return CLI_OK;
    case OPT_LR_GAMMA:
      if (!cli_parse_f64(arg, 0, 1e6, &o->gamma) || o->gamma <= 0)
        return bad(cmd, "--lr-gamma: expected a positive number, got '%s'%s", arg, "");
      o->gamma_set = true;
      return CLI_OK;
    case OPT_AUGMENT:
      if (!cli_augment_parse(arg, &o->augment))
        return bad(cmd,
                   "--augment: expected none or a comma-separated list of hflip, crop, got '%s'%s",
                   arg, "");
      o->augment_set = true;
      return CLI_OK;
    case OPT_LABEL_SMOOTHING:
      if (!cli_parse_f64(arg, 0, 1, &o->label_smoothing))
        return bad(cmd, "--label-smoothing: expected a number in [0, 1], got '%s'%s", arg, "");
      o->label_smoothing_set = true;
      return CLI_OK;
    case OPT_AMP: {
      int a;
      if (!name_code_parse(amps, COUNT(amps), arg, &a))
        return bad(cmd, "--amp: expected none, auto, f16 or bf16, got '%s'%s", arg, "");
      o->amp = (cli_amp)a;
      o->amp_set = true;
      return CLI_OK;
    }
    case OPT_MOMENTUM:
      if (!cli_parse_f64(arg, 0, 1, &o->momentum) || o->momentum >= 1)
        return bad(cmd, "--momentum: expected a number in [0, 1), got '%s'%s", arg, "");
      o->momentum_set = true;
      return CLI_OK;
    case OPT_WEIGHT_DECAY:
      if (!cli_parse_f64(arg, 0, 1e6, &o->weight_decay))
        return bad(cmd, "--weight-decay: expected a number >= 0, got '%s'%s", arg, "");
      o->weight_decay_set = true;
      return CLI_OK;
  }
  return NOT_MINE;
}

/* The options of the run itself (where, how long, files, output): CLI_OK,
 * CLI_USAGE after the message, or NOT_MINE. */
static int run_option(const char *cmd, int c, const char *arg, cli_opts *o) {
  int64_t i64;
  switch (c) {
    case OPT_DATA_DIR:
      if (!*arg) return bad(cmd, "--data-dir: empty path%s%s", "", "");
      o->data_dir = arg;
      return CLI_OK;
    case OPT_TEST_DATA:
      if (!*arg) return bad(cmd, "--test-data: empty path%s%s", "", "");
      o->test_data = arg;
      return CLI_OK;
    case OPT_DEVICE:
      o->device = arg;
      return CLI_OK;
    case OPT_DISABLE_CUDA:
      o->disable_cuda = true;
      return CLI_OK;
    case OPT_EPOCHS:
      if (!cli_parse_i64(arg, 1, 1000000, &o->epochs))
        return bad(cmd, "--epochs: expected an integer from 1 to 1000000, got '%s'%s", arg, "");
      return CLI_OK;
    case OPT_BATCH_SIZE:
      if (!cli_parse_i64(arg, 1, 1 << 20, &o->batch_size))
        return bad(cmd, "--batch-size: expected an integer from 1 to 1048576, got '%s'%s", arg, "");
      o->batch_size_set = true;
      return CLI_OK;
    case OPT_WORKERS:
      if (!cli_parse_i64(arg, 0, 256, &i64))
        return bad(cmd, "--workers: expected an integer from 0 to 256, got '%s'%s", arg, "");
      o->workers = (int)i64;
      return CLI_OK;
    case OPT_THREADS:
      if (!cli_parse_i64(arg, 1, 1024, &i64))
        return bad(cmd, "--threads: expected an integer from 1 to 1024, got '%s'%s", arg, "");
      o->threads = (int)i64;
      return CLI_OK;
    case OPT_SEED:
      if (!cli_parse_u64(arg, &o->seed))
        return bad(cmd, "--seed: expected a non-negative integer, got '%s'%s", arg, "");
      o->seed_set = true;
      return CLI_OK;
    case OPT_CHECKPOINT:
      if (!*arg) return bad(cmd, "--checkpoint: empty path%s%s", "", "");
      o->checkpoint = arg;
      return CLI_OK;
    case OPT_RESUME:
      o->resume = true;
      return CLI_OK;
    case OPT_METRICS:
      if (!*arg) return bad(cmd, "--metrics: empty path%s%s", "", "");
      o->metrics = arg;
      return CLI_OK;
    case OPT_LIMIT_TRAIN:
      if (!cli_parse_i64(arg, 1, INT64_MAX, &o->limit_train))
        return bad(cmd, "--limit-train: expected a positive integer, got '%s'%s", arg, "");
      o->limit_train_set = true;
      return CLI_OK;
    case OPT_LIMIT_TEST:
      if (!cli_parse_i64(arg, 1, INT64_MAX, &o->limit_test))
        return bad(cmd, "--limit-test: expected a positive integer, got '%s'%s", arg, "");
      o->limit_test_set = true;
      return CLI_OK;
    case OPT_QUIET:
      o->quiet = true;
      return CLI_OK;
    case OPT_DETERMINISTIC:
      o->deterministic = true;
      return CLI_OK;
  }
  return NOT_MINE;
}

int cli_parse_options(int argc, char **argv, bool is_eval, cli_opts *o) {
  const char *cmd = is_eval ? "eval" : "train";
  *o = (cli_opts){.model = MODEL_CNN,
                  .dataset = DATASET_FASHION_MNIST,
                  .optim = OPTIM_ADAM,
                  .device = "auto",
                  .epochs = 10,
                  .batch_size = 64,
                  .lr = -1,
                  .momentum = -1,
                  .weight_decay = -1,
                  .schedule = SCHED_COSINE,
                  .gamma = 0.1,
                  .augment = -1,
                  .label_smoothing = -1,
                  .workers = 2,
                  .val_split = 0.2,
                  .image_size = 32,
                  .seed = 1};
  optind = 0; /* glibc: full reinitialization */
  opterr = 0;
  const struct option *longopts = is_eval ? eval_long : train_long;
  for (;;) {
    int c = getopt_long(argc, argv, ":h", longopts, NULL);
    if (c == -1) break;
    const char *arg = optarg;
    int rc;
    switch (c) {
      case 'h':
        cli_usage(stdout);
        return -1;
      case ':':
        return bad(cmd, "option '%s' needs a value%s", argv[optind - 1], "");
      case '?':
        if (optopt) {
          char s[3] = {'-', (char)optopt, 0};
          return bad(cmd, "unknown option '%s'%s", s, "");
        }
        return bad(cmd, "unknown option '%s'%s", argv[optind - 1], "");
      default:
        if ((rc = model_option(cmd, c, arg, o)) == NOT_MINE &&
            (rc = run_option(cmd, c, arg, o)) == NOT_MINE)
          return bad(cmd, "unexpected option '%s'%s", argv[optind - 1], "");
        if (rc != CLI_OK) return rc;
    }
  }
  if (optind < argc) return bad(cmd, "unexpected argument '%s'%s", argv[optind], "");
  /* CSV rows train the mlp unless told otherwise. */
  if (o->dataset == DATASET_CSV && !o->model_set && !o->resume) o->model = MODEL_MLP;
  /* A resumed run takes its checkpoint's optimizer. */
  if (!o->optim_set && !o->resume) o->optim = cli_model_default_optim(o->model);
  if ((o->target || o->regression) && o->dataset != DATASET_CSV && !o->resume)
    return bad(cmd, "--target and --regression apply to --dataset csv:FILE only%s%s", "", "");
  if (o->image_size_set && o->dataset != DATASET_FOLDER && !o->resume)
    return bad(cmd, "--image-size applies to --dataset folder:DIR only%s%s", "", "");
  if (!is_eval && (o->val_split_set || o->test_data) && !cli_dataset_is_user(o->dataset) &&
      !o->resume)
    return bad(cmd, "--val-split and --test-data apply to csv:FILE and folder:DIR only%s%s", "",
               "");
  if (o->resume && !o->checkpoint) return bad(cmd, "--resume needs --checkpoint PATH%s%s", "", "");
  if (is_eval && !o->checkpoint) return bad(cmd, "--checkpoint PATH is required%s%s", "", "");
  if (o->momentum_set && o->optim != OPTIM_SGD && !o->resume)
    return bad(cmd, "--momentum applies to --optimizer sgd only%s%s", "", "");
  if ((o->step_size_set || o->gamma_set) && o->schedule != SCHED_STEP && !o->resume)
    return bad(cmd, "--lr-step-size and --lr-gamma apply to --lr-schedule step only%s%s", "", "");
  return CLI_OK;
}

/* ---- Devices ----------------------------------------------------------------- */

void cli_error(const char *what) {
  const char *msg = ct_last_error_message();
  fprintf(stderr, "ctensor: %s: %s\n", what, msg && *msg ? msg : "unknown error");
}

enum { SHOWN_BUFFERS = 4, SHOWN_SIZE = 1024 };

static char *next_shown_buffer(void) {
  static char bufs[SHOWN_BUFFERS][SHOWN_SIZE];
  static int next;
  char *b = bufs[next];
  next = (next + 1) % SHOWN_BUFFERS;
  return b;
}

const char *cli_shown(const char *name) {
  return ct_escape_name(name, next_shown_buffer(), SHOWN_SIZE);
}

const char *cli_shell_word(const char *path) {
  char *b = next_shown_buffer();
  if (path && *path &&
      strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+=:,@%") ==
          strlen(path)) {
    snprintf(b, SHOWN_SIZE, "%s", path);
    return b;
  }
  /* bash's $'...' reads ct_escape_name's \xNN and \\ back as the bytes; only ' needs more. */
  char escaped[SHOWN_SIZE];
  ct_escape_name(path ? path : "", escaped, sizeof escaped);
  size_t o = 0;
  b[o++] = '$', b[o++] = '\'';
  for (const char *c = escaped; *c && o + 4 < SHOWN_SIZE; c++) {
    if (*c == '\'') b[o++] = '\\';
    b[o++] = *c;
  }
  b[o++] = '\'';
  b[o] = '\0';
  return b;
}

int cli_resolve_device(const cli_opts *o, ct_device *out) {
  if (o->disable_cuda) {
    if (strcmp(o->device, "auto") && strcmp(o->device, "cpu")) {
      fprintf(stderr, "ctensor: --disable-cuda contradicts --device %s\n", cli_shown(o->device));
      return CLI_USAGE;
    }
    *out = ct_cpu();
    return CLI_OK;
  }
  if (!strcmp(o->device, "auto")) {
    ct_status st = ct_resolve_default_device(out); /* CT_DEVICE, when set, is a request */
    if (st == CT_OK) return CLI_OK;
    cli_error("--device auto");
    return st == CT_ERR_UNAVAILABLE ? CLI_FAIL : CLI_USAGE;
  }
  ct_status st = ct_device_parse(o->device, out);
  if (st == CT_OK) return CLI_OK;
  cli_error("--device");
  if (st == CT_ERR_UNAVAILABLE) return CLI_FAIL;
  fprintf(stderr, "expected auto, cpu, cuda or cuda:N\n");
  return CLI_USAGE;
}
