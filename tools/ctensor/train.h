/* train.h: what the two halves of `ctensor train` share: cmd_train.c (the
 * options, --resume, the data, the model and its state) and train_loop.c
 * (the epochs: steps, evaluation, metrics, checkpoints, signals). */
#ifndef CTENSOR_TRAIN_H
#define CTENSOR_TRAIN_H

#include "cli.h"

/* The epoch's running loss sum (over samples: batch loss * batch size). On
 * the CPU each batch's loss is read at once (ct_item costs nothing there);
 * on a GPU the sum accumulates in an f64 device scalar and is read only now
 * and then (train_loop.c). */
typedef struct loss_meter {
  ct_tensor *acc;     /* GPU: 0-d f64 running sum on the device; NULL on the CPU */
  double sum;         /* the running sum as of the last read */
  double last;        /* CPU: the last batch's loss */
  int64_t read_batch; /* batches of the epoch in `sum` */
  double read_at;     /* cli_now() of the last read */
} loss_meter;

/* One run: everything it owns (freed by train_free) and where it stands. */
typedef struct train_run {
  cli_opts o;
  ct_device dev;
  int rank, world; /* 0 and 1 in a single process; under mpirun, data parallel */
  ct_dataset *train_ds, *test_ds;
  ct_dataset
      *train_base; /* the image dataset under train_ds (borrowed): its epoch drives --augment */
  ct_dataloader *train_dl, *test_dl;
  ct_module *model;
  ct_optimizer *opt;
  ct_lr_scheduler *sched;
  ct_grad_scaler *scaler; /* --amp f16; disabled (a plain step) otherwise */
  cli_metrics metrics;
  loss_meter loss;
  cli_ckpt ck;           /* --resume: the checkpoint, until its tensors are restored */
  cli_ckpt_meta resumed; /* --resume: its metadata */
  int64_t start_epoch, start_batch;
  int64_t batches_run;     /* in this process */
  int64_t interrupt_after; /* test hook: raise SIGINT after this many batches */
  double last_accuracy;    /* of the last evaluation; < 0 before any */
  double unigram;          /* text: entropy of the training bytes, nats/byte (the baseline) */
  cli_eval_result ev;      /* the last evaluation */
  bool finalize;           /* ended by design (done or stopped): close the process group */
  cli_user_data user;   /* --dataset csv:FILE / folder:DIR: the datasets behind train_ds, test_ds */
  cli_data_info data;   /* ... and what the checkpoint records of them */
  double best_accuracy; /* the best test accuracy of this run's epochs (regression: -loss) */
  int64_t best_epoch;   /* its epoch, 1-based (0: none yet) */
  double t_start;       /* cli_now() when training started: the summary's wall time */
} train_run;

/* --lr-step-size, or a third of --epochs (rounded up). */
int64_t train_step_size(const cli_opts *o);
/* Catches SIGINT and SIGTERM (the loop saves and stops after the batch) and
 * reads the test hook CTENSOR_TEST_INTERRUPT_AFTER_BATCHES. */
void train_catch_signals(train_run *r);
/* Runs the epochs from r->start_epoch (and r->start_batch) to o.epochs;
 * returns the exit code (CLI_OK, CLI_FAIL, or 128 + the signal). */
int train_epochs(train_run *r);
void train_free(train_run *r);

#endif /* CTENSOR_TRAIN_H */
