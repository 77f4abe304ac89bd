/* cli.h: the pieces of the `ctensor` command-line program shared between its
 * files: options, models, datasets, checkpoints, progress output.
 *
 * Exit codes: 0 success, 1 runtime failure (missing dataset, unreadable or
 * corrupt checkpoint, library error), 2 bad usage (unknown option, bad
 * number), 130 interrupted by SIGINT (after saving a checkpoint). */
#ifndef CTENSOR_CLI_H
#define CTENSOR_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ctensor.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_INTERRUPTED = 130 };

/* ---- Enumerations stored (as codes) in checkpoints: never renumber. ---------- */

typedef enum cli_model {
  MODEL_MLP = 1,
  MODEL_CNN = 2,
  MODEL_SIMPLECNN = 3,
  MODEL_RESNET = 4,
  MODEL_VIT = 5,
  MODEL_GPT = 6
} cli_model;
typedef enum cli_dataset {
  DATASET_FASHION_MNIST = 1,
  DATASET_MNIST = 2,
  DATASET_CIFAR10 = 3,
  DATASET_FORTUNES = 4, /* bytes of text (text_data.c) */
  /* Your own data (user_data.c): --dataset csv:FILE, --dataset folder:DIR. */
  DATASET_CSV = 5,
  DATASET_FOLDER = 6
} cli_dataset;
typedef enum cli_optim { OPTIM_SGD = 1, OPTIM_ADAM = 2, OPTIM_ADAMW = 3 } cli_optim;
typedef enum cli_schedule { SCHED_NONE = 1, SCHED_STEP = 2, SCHED_COSINE = 3 } cli_schedule;
/* Mixed precision: f16 (with a gradient scaler), bf16, or auto (f16 on a GPU,
 * bf16 on the CPU, as torch.autocast's defaults). */
typedef enum cli_amp { AMP_NONE = 0, AMP_F16 = 1, AMP_BF16 = 2, AMP_AUTO = 3 } cli_amp;
/* --augment: a set of flags (stored as their sum). */
enum { AUG_HFLIP = 1, AUG_CROP = 2 };

const char *cli_model_name(int model);       /* NULL for an unknown code */
const char *cli_dataset_name(int dataset);   /* NULL for an unknown code */
const char *cli_optim_name(int optim);       /* NULL for an unknown code */
const char *cli_schedule_name(int schedule); /* NULL for an unknown code */
const char *cli_amp_name(int amp);           /* NULL for an unknown code */
/* "none", "hflip", "crop", "crop,hflip"; NULL for a set with unknown bits. */
const char *cli_augment_name(int augment);

/* ---- Options (options.c) ---------------------------------------------------- */

/* Everything `train` and `eval` take. *_set records options given explicitly
 * (a resumed run refuses ones that contradict its checkpoint). */
typedef struct cli_opts {
  cli_model model;
  cli_dataset dataset;
  cli_optim optim;
  const char *data_dir; /* NULL: the dataset's default */
  const char *device;   /* "auto", "cpu", "cuda:N" */
  bool disable_cuda;
  int64_t epochs;
  int64_t batch_size;
  double lr;              /* < 0: the optimizer's default */
  double momentum;        /* < 0: default */
  double weight_decay;    /* < 0: default */
  cli_schedule schedule;  /* --lr-schedule (default cosine) */
  int64_t step_size;      /* --lr-step-size; 0: ceil(epochs / 3) */
  double gamma;           /* --lr-gamma (default 0.1) */
  int augment;            /* AUG_* flags; < 0: the model's default */
  double label_smoothing; /* --label-smoothing; < 0: the model's default */
  cli_amp amp;            /* --amp (default none) */
  int workers;
  int threads;        /* --threads: the library's CPU threads; 0: its default */
  bool deterministic; /* --deterministic: ct_use_deterministic_algorithms(true) */
  uint64_t seed;
  const char *checkpoint; /* NULL: none */
  bool resume;
  const char *metrics; /* NULL: none */
  /* Your own data: --target COLUMN (csv), --val-split F (the test fraction
   * split off when there is no test data of its own), --test-data FILE|DIR,
   * --image-size N (folder: images resized to N x N). */
  const char *target;
  bool regression; /* --regression: the csv target is a number (mean squared error) */
  double val_split;
  const char *test_data;
  int64_t image_size;
  int64_t limit_train; /* 0: all */
  int64_t limit_test;  /* 0: all */
  bool quiet;
  bool model_set, dataset_set, optim_set, batch_size_set, lr_set, momentum_set, weight_decay_set,
      seed_set, limit_train_set, limit_test_set, schedule_set, step_size_set, gamma_set,
      augment_set, label_smoothing_set, amp_set, val_split_set, image_size_set;
} cli_opts;

/* Parses the options of `train` (is_eval false) or `eval`; argv[0] is the
 * command name. Returns CLI_OK, or CLI_USAGE after printing the problem and
 * the usage, or -1 after printing the help (exit 0). */
int cli_parse_options(int argc, char **argv, bool is_eval, cli_opts *o);
void cli_usage(FILE *f);
/* Strict number parsing: the whole string, in [lo, hi]; false otherwise. */
bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
bool cli_parse_u64(const char *s, uint64_t *out);
bool cli_parse_f64(const char *s, double lo, double hi, double *out);
/* The device named by the options (auto, cpu, cuda:N; --disable-cuda). Prints
 * the problem and returns CLI_USAGE or CLI_FAIL on failure: a device asked
 * for (--device cuda, or CT_DEVICE under auto) that cannot be used is a
 * failure with the reason, never a fallback to the CPU. */
int cli_resolve_device(const cli_opts *o, ct_device *out);
/* The line every command prints before it starts, on stderr (run_line.c):
 * "device <dev and why> · <fmt...> · threads N", fmt giving the model, the
 * data and the precision. For the CPU the reason is the option that asked
 * for it, or why no GPU can be used (ct_cuda_unavailable_reason); for a GPU
 * its name and memory. */
void cli_print_run_line(const cli_opts *o, ct_device dev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "f32", "amp f16 (...)", "amp bf16 (...)" for a resolved cli_amp. */
const char *cli_precision_name(int amp);
/* Prints "ctensor: <what>: <library message>" to stderr. */
void cli_error(const char *what);
/* A path or a name as messages show it (ct_escape_name: no raw control
 * characters or invalid UTF-8). The result lives in one of 4 static buffers,
 * reused in turn: enough for the names of one message. */
const char *cli_shown(const char *name);
/* A path as a word that a shell reads back as the same bytes: the path
 * itself when it is made of safe characters, else $'...' with escapes. Same
 * buffers as cli_shown. */
const char *cli_shell_word(const char *path);

/* ---- Datasets (datasets.c) -------------------------------------------------- */

const char *cli_default_data_dir(cli_dataset d);
/* Opens the train or test split with the standard normalization and the
 * random transforms `augment` (AUG_* flags, seeded by seed), keeping only the
 * first `limit` samples when limit > 0. *base (if base is not NULL) receives
 * the underlying image dataset, whose epoch (ct_dataset_set_epoch) drives
 * the transforms: the returned dataset itself when there is no limit. NULL
 * after printing the reason. */
ct_dataset *cli_open_dataset(cli_dataset d, const char *dir, bool train, int64_t limit,
                             uint64_t seed, int augment, ct_dataset **base);
/* Whether the dataset is text (byte windows for --model gpt), not images. */
bool cli_dataset_is_text(cli_dataset d);
/* Input geometry of a dataset's samples. */
void cli_dataset_geometry(cli_dataset d, int64_t *channels, int64_t *size);
/* CLI_OK if ds holds samples; else prints, for command cmd, that the split
 * (`train` or not) of dataset d in dir (NULL: the default) is empty and
 * returns CLI_FAIL: an empty set would train on nothing and report 0/0. */
int cli_require_samples(const char *cmd, const ct_dataset *ds, cli_dataset d, const char *dir,
                        bool train);

/* ---- Text (text_data.c): the byte-level corpus of --dataset fortunes -------- */

/* The corpus: every regular file of dir without a '.' in its name (the
 * fortune files, not their .dat indexes or .u8 links), sorted by name and
 * concatenated. false after printing the reason (no folder, no text). */
bool cli_text_read_corpus(const char *dir, uint8_t **bytes, int64_t *n);
/* How many of a corpus of n bytes train (the first 90%); the rest validate. */
int64_t cli_text_train_bytes(int64_t n);
/* The entropy of the byte distribution of bytes[0, n), in nats: the loss of
 * the best model that ignores context (the unigram baseline). */
double cli_unigram_entropy(const uint8_t *bytes, int64_t n);
/* The training or validation windows of the corpus in dir: samples are
 * GPT_CONTEXT input bytes and the GPT_CONTEXT bytes that follow each, as i64.
 * NULL after printing the reason. */
ct_dataset *cli_text_open(const char *dir, bool train);

/* ---- Models (models.c, model_gpt.c) ----------------------------------------- */

/* The GPT's geometry (model_gpt.c): context bytes, width, blocks, heads. */
enum { GPT_CONTEXT = 128, GPT_D = 128, GPT_LAYERS = 4, GPT_HEADS = 4 };
/* A new byte-level GPT on the CPU, initialized from the default generator;
 * forward maps (B, t) bytes (t <= GPT_CONTEXT) to logits (B, 256, t). */
ct_module *cli_gpt_new(void);

/* A new model for inputs (channels, size, size) with 10 classes, on the CPU,
 * initialized from the default generator. NULL with the library's error. */
ct_module *cli_model_new(cli_model m, int64_t channels, int64_t size);
/* The same for inputs (channels, height, width) and `classes` outputs (the
 * mlp flattens any input: a CSV row is (1, 1, features)). */
ct_module *cli_model_new_for(cli_model m, int64_t channels, int64_t height, int64_t width,
                             int64_t classes);
/* The optimizer a model trains with unless --optimizer says otherwise. */
cli_optim cli_model_default_optim(cli_model m);

/* ResNet of BasicBlocks (model_resnet.c): a stem conv3x3 (in_channels ->
 * stem) + BN + ReLU, then nstages (1 to CLI_RESNET_MAX_STAGES) stages of
 * blocks[i] >= 1 blocks of widths[i] channels, the first with strides[i],
 * then global average pooling and fc (-> classes). */
#define CLI_RESNET_MAX_STAGES 4
typedef struct cli_resnet_spec {
  int64_t in_channels, stem;
  int nstages;
  int64_t widths[CLI_RESNET_MAX_STAGES], blocks[CLI_RESNET_MAX_STAGES],
      strides[CLI_RESNET_MAX_STAGES];
  int64_t classes;
} cli_resnet_spec;
ct_module *cli_resnet_new(const cli_resnet_spec *s);
ct_module *cli_resnet_default(int64_t channels);              /* `--model resnet` */
ct_module *cli_resnet_for(int64_t channels, int64_t classes); /* ... with `classes` outputs */

/* Vision transformer (model_vit.c): patch embedding (conv patch x patch,
 * stride patch; size divisible by patch), learned position embeddings,
 * depth pre-norm GELU encoder layers (heads, feed-forward mlp), LayerNorm,
 * mean over the patches, linear head. */
typedef struct cli_vit_spec {
  int64_t in_channels, size, patch, dim, depth, heads, mlp, classes;
} cli_vit_spec;
ct_module *cli_vit_new(const cli_vit_spec *s);
ct_module *cli_vit_default(int64_t channels, int64_t size); /* `--model vit` */
ct_module *cli_vit_for(int64_t channels, int64_t size, int64_t classes);

/* ---- Your own data (user_data.c) ---------------------------------------------- */

enum { CLI_DATA_TEXT = 8192, CLI_DATA_PATH = 1024, CLI_DATA_MAX_STATS = 512 };
/* What a checkpoint of a model trained on csv:FILE or folder:DIR records for
 * eval and predict: where the data came from, the sample geometry, the class
 * names and the normalization. num_classes 0: a built-in dataset. */
typedef struct cli_data_info {
  int64_t num_classes;               /* 1: regression (one output, the value) */
  int64_t channels, height, width;   /* a sample: images (C, H, W); csv (1, 1, features) */
  double val_split;                  /* the test fraction split off the training data; 0: none */
  char source[CLI_DATA_PATH];        /* the FILE or DIR trained on */
  char test_source[CLI_DATA_PATH];   /* its test data (--test-data, DIR/test); "" for a split */
  char class_names[CLI_DATA_TEXT];   /* '\n'-separated, in class order */
  char feature_names[CLI_DATA_TEXT]; /* csv: '\n'-separated, in input order */
  char target_name[256];             /* csv */
  int64_t num_stats;                 /* csv: per feature; folder: per channel */
  double mean[CLI_DATA_MAX_STATS], std[CLI_DATA_MAX_STATS];
} cli_data_info;

/* The datasets of one run over your own data (freed by cli_user_data_free). */
typedef struct cli_user_data {
  ct_dataset *base_train, *base_test; /* the files as opened */
  ct_dataset *split[2];               /* a random split's parts (base_train's, base_test's) */
  ct_dataset *limited[2];             /* --limit-train, --limit-test: the first N of each */
  ct_dataset *train, *test;           /* what the loaders read (borrowed from the above) */
} cli_user_data;

bool cli_dataset_is_user(cli_dataset d); /* csv or folder */
/* Training: opens o->data_dir (the FILE or DIR of --dataset) and the test
 * data (--test-data, DIR/train + DIR/test, or a seeded --val-split), and
 * fills *info from the training data. Evaluation (info given, eval true):
 * the test data the checkpoint names (or o->test_data), with the
 * checkpoint's class names and normalization. --limit-train and --limit-test
 * keep the first N samples of each. CLI_OK, or CLI_FAIL after the message. */
int cli_user_data_open(const cli_opts *o, bool eval, cli_data_info *info, cli_user_data *ud);
void cli_user_data_free(cli_user_data *ud);
/* The n names of a '\n'-separated list: an array of pointers into *copy
 * (free both; NULL when out of memory). */
const char **cli_data_names(const char *list, int64_t n, char **copy);
/* The i-th name of a '\n'-separated list into buf ("" when absent). */
const char *cli_data_name(const char *list, int64_t i, char *buf, size_t size);

/* ---- Checkpoints (checkpoint.c) -------------------------------------------- */

/* Everything a checkpoint holds besides tensors of the model and optimizer. */
typedef struct cli_ckpt_meta {
  int64_t model, dataset, optim;
  int64_t epoch;                 /* the epoch to run next (0-based) */
  int64_t batch;                 /* the next batch within that epoch */
  uint64_t seed;                 /* data order and initialization */
  uint64_t rng_seed, rng_offset; /* the default generator's state */
  int64_t step_count;            /* optimizer steps taken */
  int64_t batch_size;
  double lr, momentum, weight_decay;
  int64_t limit_train, limit_test;
  /* Optional fields (absent from checkpoints of earlier versions, which read
   * as schedule none, step size 0, gamma 0.1, augment 0, label smoothing 0:
   * how those runs trained). */
  int64_t schedule, step_size, augment;
  double gamma, label_smoothing;
  int64_t amp;      /* cli_amp, resolved: none, f16 or bf16 */
  double amp_scale; /* the gradient scaler's state (f16) */
  int64_t amp_growth_tracker;
  int64_t world_size; /* processes that trained (mpirun -np); 1 when absent */
  /* The partial epoch (so that a resumed epoch reports the same loss). */
  double epoch_loss_sum; /* sum over samples of the training loss */
  int64_t epoch_samples;
  double epoch_seconds, epoch_wait_seconds;
  double accuracy; /* last test accuracy, < 0 if none yet */
  /* Optional: your own data (meta.data.*; num_classes 0 when absent). */
  cli_data_info data;
} cli_ckpt_meta;

/* Writes model state, "optim."-prefixed optimizer state (opt may be NULL),
 * the schedule's position "sched.state" (sched may be NULL) and "meta." tensors to path atomically
 * (ct_save_safetensors: a temporary file in the same directory, fsync, rename, fsync of the
 * directory). A failure leaves any previous file at path untouched. Returns CT_OK or prints nothing
 * and returns the error (message in ct_last_error_message()). */
ct_status cli_checkpoint_save(const char *path, ct_module *model, ct_optimizer *opt,
                              const ct_lr_scheduler *sched, const cli_ckpt_meta *meta);
/* Before a run that will save to path: removes the temporaries that killed
 * saves left there (ct_safetensors_remove_stale; says so unless quiet), then
 * checks that a checkpoint can be written there at all (not a folder, a
 * folder that exists and takes new files), so that a bad --checkpoint fails
 * now with its reason rather than after the first epoch. CLI_OK, or CLI_FAIL
 * after the message (cmd names the command). */
int cli_checkpoint_prepare(const char *cmd, const char *path, bool quiet);
/* A loaded checkpoint file. */
typedef struct cli_ckpt {
  ct_tensor **tensors;
  char **names;
  int n;
  cli_ckpt_meta meta;
} cli_ckpt;
/* Reads and validates the metadata of a checkpoint; on failure writes a
 * message to err (size errsz) and returns false. */
bool cli_checkpoint_load(const char *path, cli_ckpt *ck, char *err, size_t errsz);
void cli_checkpoint_free(cli_ckpt *ck);
/* Copies the model's tensors in (every state tensor must be present with its
 * shape and dtype, and no other non-"meta."/"optim." tensor). */
bool cli_checkpoint_restore_model(const cli_ckpt *ck, ct_module *model, char *err, size_t errsz);
bool cli_checkpoint_restore_optimizer(const cli_ckpt *ck, ct_optimizer *opt, char *err,
                                      size_t errsz);
/* Restores the schedule's position when the checkpoint holds one (sched NULL
 * or an earlier checkpoint without it: nothing to do). */
bool cli_checkpoint_restore_schedule(const cli_ckpt *ck, ct_lr_scheduler *sched, char *err,
                                     size_t errsz);

/* ---- Metrics (metrics.c) ------------------------------------------------------ */

/* The --metrics file: one JSON line per epoch. Every write is checked: a
 * full disk or a failing device ends the run with an error, never exit 0
 * with lines missing. */
typedef struct cli_metrics {
  FILE *f; /* NULL: no --metrics (or not this rank's) */
  const char *path;
  bool failed; /* a write failed (and was reported) */
} cli_metrics;

/* One epoch's line. */
typedef struct cli_epoch_report {
  int64_t epoch; /* 1-based */
  double loss, accuracy, test_loss, lr, seconds, images_per_second, data_wait_seconds, eval_seconds;
  int64_t test_correct, test_samples;
} cli_epoch_report;

/* Opens path (NULL: none) for writing, or on resume for appending after
 * dropping the lines of epochs past complete_epochs (a run killed between a
 * line and its checkpoint repeats that epoch). CLI_OK or CLI_FAIL after the
 * message. */
int cli_metrics_open(cli_metrics *m, const char *path, bool resume, int64_t complete_epochs);
/* Writes and flushes one line; CLI_OK or CLI_FAIL after the message. */
int cli_metrics_write(cli_metrics *m, const cli_epoch_report *r);
/* Closes the file; CLI_OK or CLI_FAIL after the message (a write that
 * failed only now). A no-op without a file. */
int cli_metrics_close(cli_metrics *m);

/* ---- Progress (progress.c) --------------------------------------------------- */

typedef struct cli_progress {
  bool tty, quiet;
  int64_t epoch, epochs, total, start_batch;
  double t0, last_draw;
  int64_t next_line; /* non-tty: the batch count of the next printed line */
  int width;         /* last line length drawn (tty) */
} cli_progress;

double cli_now(void); /* monotonic seconds */
void cli_progress_begin(cli_progress *p, bool quiet, int64_t epoch, int64_t epochs, int64_t total,
                        int64_t start_batch);
/* Whether cli_progress_update(p, done, ...) would print now: a caller whose
 * loss costs something to read (a GPU synchronization) reads it only then. */
bool cli_progress_due(const cli_progress *p, int64_t done);
/* done: batches finished in this epoch; loss: running mean; images: samples
 * processed since begin. */
void cli_progress_update(cli_progress *p, int64_t done, double loss, int64_t images);
/* Erases the bar (tty). */
void cli_progress_end(cli_progress *p);

/* ---- Commands ---------------------------------------------------------------- */

int cmd_info(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_generate(int argc, char **argv); /* cmd_generate.c */
int cmd_predict(int argc, char **argv);  /* cmd_predict.c */

/* Evaluates model on the test loader (no grad, eval mode). */
typedef struct cli_eval_result {
  double loss; /* mean over samples */
  int64_t correct, total;
  double seconds;
} cli_eval_result;
/* regression: the loss is the squared error of one output per sample, correct stays 0. */
ct_status cli_evaluate(ct_module *model, ct_dataloader *test, ct_device dev, bool regression,
                       cli_eval_result *out);

#endif /* CTENSOR_CLI_H */
