/* train_loop.c: the epochs of `ctensor train`: the training steps, the
 * loss and progress, the evaluation after each epoch, its report and metrics
 * line, checkpoints, and Ctrl-C / SIGTERM (save, then stop). With several
 * processes (mpirun) every rank runs this loop on its shard and they agree
 * on when to stop; rank 0 alone reports and saves. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

/* The loop goes on (a function's result that is no exit code). */
#define GO_ON (-1)

/* ---- Signals ---------------------------------------------------------------- */

/* The signal (SIGINT, SIGTERM) that asked to stop, set by the handler
 * (async-signal-safe: only this store); the loop checks it after each batch
 * and exits with 128 + the signal after saving. */
static volatile sig_atomic_t g_interrupted = 0;
static void on_signal(int sig) { g_interrupted = sig; }

void train_catch_signals(train_run *r) {
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the program at once */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  const char *hook = getenv("CTENSOR_TEST_INTERRUPT_AFTER_BATCHES");
  if (hook) cli_parse_i64(hook, 0, INT64_MAX, &r->interrupt_after);
}

/* ---- The loss ----------------------------------------------------------------- */

/* The epoch's running loss sum (loss_meter, train.h). On the CPU each
 * batch's loss is read at once (ct_item costs nothing there). On a GPU a
 * read synchronizes the device, and one per step would keep the host from
 * queuing the next batch's copy and kernels while the GPU works; so the sum
 * accumulates in an f64 device scalar (no grad; an f32 loss times n is exact
 * in f64, so it is the CPU's sum, bit for bit) and is read back only when
 * the progress line is due (at most every LOSS_READ_MIN_S), at least every
 * LOSS_READ_MAX_S (so a nan stops the run within about a second), at the end
 * of the epoch and on an interrupt. A non-finite loss is caught at those
 * reads. */
#define LOSS_READ_MIN_S 0.2
#define LOSS_READ_MAX_S 1.0

/* Starts an epoch at `sum` (a resumed epoch's partial sum) after `batch`. */
static bool meter_start(loss_meter *m, double sum, int64_t batch) {
  m->sum = sum;
  m->last = 0;
  m->read_batch = batch;
  m->read_at = cli_now();
  return !m->acc || ct_fill_(m->acc, sum) != NULL;
}

/* Adds one batch's loss (mean over its n samples). */
static bool meter_add(loss_meter *m, const ct_tensor *loss, int64_t n) {
  if (!m->acc) {
    if (ct_item(loss, &m->last) != CT_OK) return false;
    m->sum += m->last * (double)n;
    return true;
  }
  ct_no_grad_begin();
  bool ok = ct_add_scaled_(m->acc, loss, (double)n) != NULL; /* the sum stays on the device */
  ct_no_grad_end();
  return ok;
}

/* Whether to read the sum after `batch` (always on the CPU). */
static bool meter_due(const loss_meter *m, const cli_progress *pg, int64_t batch, int64_t nb) {
  if (!m->acc || batch >= nb) return true;
  double since = cli_now() - m->read_at;
  return since >= LOSS_READ_MAX_S || (since >= LOSS_READ_MIN_S && cli_progress_due(pg, batch));
}

/* Brings `sum` up to `batch` (GPU: one synchronizing read). */
static bool meter_read(loss_meter *m, int64_t batch) {
  if (m->acc && m->read_batch < batch && ct_item(m->acc, &m->sum) != CT_OK) return false;
  m->read_batch = batch;
  m->read_at = cli_now();
  return true;
}

/* After meter_read: false, with the message, if the loss became nan or inf
 * in the batches since the previous read (`from` + 1 to `batch`, 1-based). */
static bool meter_check(const loss_meter *m, int64_t epoch, int64_t from, int64_t batch) {
  if (!m->acc) {
    if (isfinite(m->last)) return true;
    fprintf(stderr,
            "ctensor train: the loss became %g at epoch %lld, batch %lld; try a lower --lr\n",
            m->last, (long long)epoch + 1, (long long)batch);
    return false;
  }
  if (isfinite(m->sum)) return true;
  fprintf(stderr,
          "ctensor train: the loss became nan or inf at epoch %lld, in batches %lld-%lld "
          "(running sum %g); try a lower --lr\n",
          (long long)epoch + 1, (long long)from + 1, (long long)batch, m->sum);
  return false;
}

/* meter_read then meter_check; CLI_OK, or CLI_FAIL after the message. */
static int read_loss(loss_meter *m, cli_progress *pg, int64_t epoch, int64_t batch) {
  int64_t from = m->read_batch;
  if (!meter_read(m, batch)) {
    cli_progress_end(pg);
    cli_error("training step");
    return CLI_FAIL;
  }
  if (!meter_check(m, epoch, from, batch)) {
    cli_progress_end(pg);
    return CLI_FAIL;
  }
  return CLI_OK;
}

/* ---- Several processes (under mpirun) ---------------------------------------- */

/* *out = OR of `local` over the ranks (local itself in one process); false on
 * failure (the library's error). */
static bool dist_any(const train_run *r, bool local, bool *out) {
  *out = local;
  if (r->world == 1) return true;
  ct_tensor *t = ct_scalar(local, &(ct_tensor_opts){.dtype = CT_I32, .device = r->dev});
  double v = 0;
  bool ok = t && ct_dist_all_reduce_(t, CT_DIST_MAX) == CT_OK && ct_item(t, &v) == CT_OK;
  ct_free(t);
  *out = v != 0;
  return ok;
}

/* Sums of the epoch's loss and sample count over the ranks, in place; false on
 * failure. */
static bool dist_sum2(const train_run *r, double *a, int64_t *b) {
  if (r->world == 1) return true;
  double v[2] = {*a, (double)*b};
  ct_tensor *h = ct_from_data(v, (int64_t[]){2}, 1, &(ct_tensor_opts){.dtype = CT_F64});
  ct_tensor *t = ct_to(h, r->dev, NULL);
  bool ok = t && ct_dist_all_reduce_(t, CT_DIST_SUM) == CT_OK;
  ct_tensor *back = ok ? ct_to(t, ct_cpu(), NULL) : NULL;
  if (back) memcpy(v, ct_data_ptr(back), sizeof v);
  ct_free(h), ct_free(t), ct_free(back);
  *a = v[0], *b = (int64_t)v[1];
  return back != NULL;
}

static void print_resume_hint(const cli_opts *o) {
  fprintf(stderr, "resume with: ctensor train --resume --checkpoint %s --epochs %lld",
          cli_shell_word(o->checkpoint), (long long)o->epochs);
  if (o->data_dir) fprintf(stderr, " --data-dir %s", cli_shell_word(o->data_dir));
  if (o->metrics) fprintf(stderr, " --metrics %s", cli_shell_word(o->metrics));
  fprintf(stderr, "\n");
}

void train_free(train_run *r) {
  ct_dataloader_free(r->train_dl);
  ct_dataloader_free(r->test_dl);
  if (r->user.base_train ||
      r->user.base_test) { /* your own data: train_ds, test_ds are its views */
    cli_user_data_free(&r->user);
  } else {
    ct_dataset_free(r->train_ds);
    ct_dataset_free(r->test_ds);
  }
  ct_lr_scheduler_free(r->sched); /* before the optimizer it borrows */
  ct_optimizer_free(r->opt);
  ct_grad_scaler_free(r->scaler);
  ct_module_free(r->model);
  ct_free(r->loss.acc);
  cli_checkpoint_free(&r->ck);
}

/* ---- One epoch --------------------------------------------------------------------- */

/* Where an epoch stands. A resumed epoch starts part way, with the totals of
 * its first part. */
typedef struct epoch_state {
  int64_t epoch, nb, batch; /* batch: the next one (0-based), of nb */
  int64_t samples;          /* over all ranks before this process's part, then this rank's added */
  int64_t samples_here;     /* this process ran since the epoch (re)started */
  double wait, prior_seconds, t0, seconds, loss_sum;
  cli_progress pg;
} epoch_state;

/* Positions the data and the lr for the epoch and starts its clocks. */
static int begin_epoch(train_run *r, epoch_state *e, int64_t epoch) {
  bool partial = epoch == r->start_epoch && r->start_batch > 0;
  int64_t skip = partial ? r->start_batch : 0;
  /* A resumed epoch's totals so far (over all ranks) restart on rank 0 alone:
   * the ranks' sums are added at the end of the epoch. */
  bool carry = partial && r->rank == 0;
  *e = (epoch_state){.epoch = epoch,
                     .nb = ct_dataloader_num_batches(r->train_dl),
                     .batch = skip,
                     .samples = carry ? r->resumed.epoch_samples : 0,
                     .prior_seconds = partial ? r->resumed.epoch_seconds : 0,
                     .wait = partial ? r->resumed.epoch_wait_seconds : 0};
  if (skip > e->nb) {
    fprintf(
        stderr,
        "ctensor train: the checkpoint's position (batch %lld) is past the epoch's %lld batches\n",
        (long long)skip, (long long)e->nb);
    return CLI_FAIL;
  }
  ct_dataset_set_epoch(r->train_ds, epoch);
  if (r->train_base) ct_dataset_set_epoch(r->train_base, epoch);
  ct_lr_scheduler_set_epoch(r->sched, epoch); /* no-op for none */
  if (ct_dataloader_start_epoch(r->train_dl, epoch, skip) != CT_OK) {
    cli_error("starting the epoch");
    return CLI_FAIL;
  }
  cli_progress_begin(&e->pg, r->o.quiet, epoch, r->o.epochs, e->nb, skip);
  ct_module_train(r->model, true);
  if (!meter_start(&r->loss, carry ? r->resumed.epoch_loss_sum : 0, skip)) {
    cli_error("resetting the loss sum");
    return CLI_FAIL;
  }
  e->t0 = cli_now();
  return CLI_OK;
}

/* One optimizer step on batch b (n samples); false with the library's error. */
static bool train_step(train_run *r, const ct_batch *b, int64_t n) {
  const cli_opts *o = &r->o;
  const ct_loss_opts loss_opts = {.label_smoothing = o->label_smoothing};
  ct_scope_begin();
  ct_tensor *x = ct_to(b->inputs, r->dev, &(ct_to_opts){.non_blocking = true});
  ct_tensor *y = ct_to(b->targets, r->dev, &(ct_to_opts){.non_blocking = true});
  if (o->amp != AMP_NONE)
    ct_autocast_begin(r->dev.type, o->amp == AMP_F16 ? CT_F16 : CT_BF16, true);
  ct_tensor *out = ct_module_forward(r->model, x);
  ct_tensor *loss = r->data.num_classes == 1 /* regression: one output, the value */
                        ? ct_mse_loss(ct_flatten(out, 0, -1), y, NULL)
                        : ct_cross_entropy(out, y, &loss_opts);
  if (o->amp != AMP_NONE) ct_autocast_end();
  ct_optimizer_zero_grad(r->opt);
  bool ok = loss && ct_backward(ct_grad_scaler_scale(r->scaler, loss), NULL, NULL) == CT_OK &&
            (r->world == 1 || ct_dist_average_gradients(r->model) == CT_OK) &&
            ct_grad_scaler_step(r->scaler, r->opt, NULL) == CT_OK &&
            ct_grad_scaler_update(r->scaler) == CT_OK && meter_add(&r->loss, loss, n);
  ct_scope_end();
  return ok;
}

/* After a batch: whether to stop now. With several processes the ranks
 * must stop at the same batch: they agree on a signal any of them got,
 * after every batch on the CPU, every 16 on a GPU (an agreement waits for
 * the queued work). CLI_OK, or CLI_FAIL after the message. */
static int should_stop(train_run *r, epoch_state *e, bool *stop) {
  *stop = g_interrupted != 0;
  if (r->world == 1) return CLI_OK;
  *stop = false;
  if (e->batch % (r->dev.type == CT_DEVICE_CUDA ? 16 : 1) != 0 && e->batch != e->nb) return CLI_OK;
  if (!dist_any(r, g_interrupted != 0, stop)) {
    cli_progress_end(&e->pg);
    cli_error("agreeing on a stop across the processes");
    return CLI_FAIL;
  }
  if (*stop && !g_interrupted) g_interrupted = SIGINT;
  return CLI_OK;
}

/* The batches of the epoch, to its end or to a stop; CLI_OK or CLI_FAIL. */
static int run_batches(train_run *r, epoch_state *e) {
  int rc;
  for (;;) {
    ct_batch b = {0};
    if (ct_dataloader_next(r->train_dl, &b) != CT_OK) {
      cli_progress_end(&e->pg);
      cli_error("loading a batch");
      return CLI_FAIL;
    }
    if (!b.inputs) return CLI_OK;
    e->wait += b.wait_seconds;
    int64_t n = ct_size(b.inputs, 0);
    bool ok = train_step(r, &b, n);
    ct_batch_release(&b);
    if (!ok) {
      cli_progress_end(&e->pg);
      cli_error("training step");
      return CLI_FAIL;
    }
    e->samples += n;
    e->samples_here += n;
    e->batch++;
    r->batches_run++;
    if (meter_due(&r->loss, &e->pg, e->batch, e->nb)) {
      if ((rc = read_loss(&r->loss, &e->pg, e->epoch, e->batch)) != CLI_OK) return rc;
      cli_progress_update(&e->pg, e->batch, r->loss.sum / (double)e->samples, e->samples_here);
    }
    if (r->interrupt_after > 0 && r->batches_run == r->interrupt_after) raise(SIGINT);
    bool stop;
    if ((rc = should_stop(r, e, &stop)) != CLI_OK) return rc;
    if (stop) return CLI_OK;
  }
}

/* The epoch's totals once its batches are done: the last read of the loss
 * (a no-op when the last batch's was one; it also waits for the GPU's queued
 * work, which belongs in the epoch's time), the sums over the ranks. */
static int close_batches(train_run *r, epoch_state *e) {
  int rc = read_loss(&r->loss, &e->pg, e->epoch, e->batch);
  if (rc != CLI_OK) return rc;
  e->loss_sum = r->loss.sum;
  if (!dist_sum2(r, &e->loss_sum, &e->samples)) {
    cli_progress_end(&e->pg);
    cli_error("adding up the epoch's loss across the processes");
    return CLI_FAIL;
  }
  e->seconds = e->prior_seconds + (cli_now() - e->t0);
  cli_progress_end(&e->pg);
  return CLI_OK;
}

/* What a checkpoint taken now holds besides the position. */
static cli_ckpt_meta checkpoint_meta(const train_run *r) {
  const cli_opts *o = &r->o;
  ct_grad_scaler_state scaler_state = ct_grad_scaler_get_state(r->scaler);
  cli_ckpt_meta meta = {.model = o->model,
                        .dataset = o->dataset,
                        .optim = o->optim,
                        .seed = o->seed,
                        .step_count = ct_optimizer_step_count(r->opt),
                        .batch_size = o->batch_size,
                        .lr = o->lr,
                        .momentum = o->momentum,
                        .weight_decay = o->weight_decay,
                        .limit_train = o->limit_train,
                        .limit_test = o->limit_test,
                        .schedule = o->schedule,
                        .step_size = o->step_size,
                        .gamma = o->gamma,
                        .augment = o->augment,
                        .label_smoothing = o->label_smoothing,
                        .amp = o->amp,
                        .amp_scale = scaler_state.scale,
                        .amp_growth_tracker = scaler_state.growth_tracker,
                        .world_size = r->world,
                        .accuracy = r->last_accuracy,
                        .data = r->data};
  ct_generator_get_state(ct_default_generator(), &meta.rng_seed, &meta.rng_offset);
  return meta;
}

/* Stopped mid-epoch: saves the exact position; returns the exit code. */
static int save_mid_epoch(train_run *r, const epoch_state *e) {
  cli_ckpt_meta meta = checkpoint_meta(r);
  meta.epoch = e->epoch;
  meta.batch = e->batch;
  meta.epoch_loss_sum = e->loss_sum;
  meta.epoch_samples = e->samples;
  meta.epoch_seconds = e->seconds;
  meta.epoch_wait_seconds = e->wait;
  int code = 128 + g_interrupted;
  r->finalize = true;
  if (r->rank != 0) return code; /* rank 0 reports and saves */
  fprintf(stderr, "\ninterrupted at epoch %lld, batch %lld/%lld\n", (long long)e->epoch + 1,
          (long long)e->batch, (long long)e->nb);
  if (!r->o.checkpoint) {
    fprintf(stderr, "no --checkpoint was given: nothing saved\n");
  } else if (cli_checkpoint_save(r->o.checkpoint, r->model, r->opt, r->sched, &meta) != CT_OK) {
    cli_error("saving the checkpoint");
    code = CLI_FAIL;
  } else {
    fprintf(stderr, "checkpoint saved to %s\n", cli_shown(r->o.checkpoint));
    print_resume_hint(&r->o);
  }
  return code;
}

/* The end of an epoch: evaluation, its line, the metrics line, the
 * checkpoint. GO_ON, or the exit code. A metrics line that cannot be
 * written ends the run before the checkpoint: a resumed run then repeats the
 * epoch and writes its line, so that no epoch goes without one. */
static int end_epoch(train_run *r, const epoch_state *e) {
  const cli_opts *o = &r->o;
  cli_eval_result *ev = &r->ev;
  const bool regression = r->data.num_classes == 1;
  if (cli_evaluate(r->model, r->test_dl, r->dev, regression, ev) != CT_OK) {
    cli_error("evaluating");
    return CLI_FAIL;
  }
  double accuracy = ev->total ? (double)ev->correct / (double)ev->total : 0;
  r->last_accuracy = accuracy;
  /* The best epoch: the highest accuracy, or for regression the lowest test loss (kept negated). */
  double score = regression ? -ev->loss : accuracy;
  if (r->best_epoch == 0 || score > r->best_accuracy)
    r->best_accuracy = score, r->best_epoch = e->epoch + 1;
  cli_epoch_report rep = {.epoch = e->epoch + 1,
                          .loss = e->samples ? e->loss_sum / (double)e->samples : NAN,
                          .accuracy = accuracy,
                          .test_loss = ev->loss,
                          .test_correct = ev->correct,
                          .test_samples = ev->total,
                          .lr = ct_optimizer_get_lr(r->opt),
                          .seconds = e->seconds,
                          .images_per_second = e->seconds > 0 ? (double)e->samples / e->seconds : 0,
                          .data_wait_seconds = e->wait,
                          .eval_seconds = ev->seconds};
  if (!o->quiet && cli_dataset_is_text(o->dataset)) {
    /* Losses per byte, in nats and bits, beside the unigram baseline. */
    printf(
        "epoch %lld/%lld: loss %.4f nats/byte (%.3f bits/byte), validation loss %.4f (%.3f "
        "bits/byte), unigram baseline %.4f (%.3f bits/byte), next-byte accuracy %.2f%%, "
        "%.1f s, %.0f bytes/s\n",
        (long long)rep.epoch, (long long)o->epochs, rep.loss, rep.loss / log(2.0), ev->loss,
        ev->loss / log(2.0), r->unigram, r->unigram / log(2.0), 100 * accuracy, e->seconds,
        rep.images_per_second * GPT_CONTEXT);
    fflush(stdout);
  } else if (!o->quiet && regression) {
    printf("epoch %lld/%lld: loss %.4f, test loss %.4f, test rmse %.4f, %.1f s\n",
           (long long)rep.epoch, (long long)o->epochs, rep.loss, ev->loss, sqrt(ev->loss),
           e->seconds);
    fflush(stdout);
  } else if (!o->quiet) {
    printf(
        "epoch %lld/%lld: loss %.4f, test loss %.4f, test accuracy %.2f%% (%lld/%lld), %.1f s, "
        "%.0f img/s, "
        "data wait %.1f%%\n",
        (long long)rep.epoch, (long long)o->epochs, rep.loss, ev->loss, 100 * accuracy,
        (long long)ev->correct, (long long)ev->total, e->seconds, rep.images_per_second,
        e->seconds > 0 ? 100 * e->wait / e->seconds : 0);
    fflush(stdout);
  }
  if (cli_metrics_write(&r->metrics, &rep) != CLI_OK) return CLI_FAIL;
  if (o->checkpoint && r->rank == 0) {
    cli_ckpt_meta meta = checkpoint_meta(r);
    meta.epoch = e->epoch + 1;
    meta.batch = 0;
    if (cli_checkpoint_save(o->checkpoint, r->model, r->opt, r->sched, &meta) != CT_OK) {
      cli_error("saving the checkpoint");
      return CLI_FAIL;
    }
  }
  return GO_ON;
}

/* A signal during an epoch's last batch or its evaluation: stop (all ranks
 * together) once its checkpoint is saved. GO_ON, or the exit code. */
static int stop_after_epoch(train_run *r, int64_t epoch) {
  if (r->world > 1) {
    bool stop = false;
    if (!dist_any(r, g_interrupted != 0, &stop)) {
      cli_error("agreeing on a stop across the processes");
      return CLI_FAIL;
    }
    if (stop && !g_interrupted) g_interrupted = SIGINT;
  }
  if (!g_interrupted || epoch + 1 >= r->o.epochs) return GO_ON;
  r->finalize = true;
  if (r->rank != 0) return 128 + g_interrupted;
  fprintf(stderr, "\ninterrupted after epoch %lld\n", (long long)epoch + 1);
  if (r->o.checkpoint) {
    fprintf(stderr, "checkpoint saved to %s\n", cli_shown(r->o.checkpoint));
    print_resume_hint(&r->o);
  } else {
    fprintf(stderr, "no --checkpoint was given: nothing saved\n");
  }
  return 128 + g_interrupted;
}

/* The program's last words: what the run reached, how long it took and
 * where the model is (one line, rank 0). */
static void print_summary(const train_run *r) {
  const cli_opts *o = &r->o;
  int64_t epochs = o->epochs - r->start_epoch;
  printf("done: %lld epoch(s) in %.1f s; ", (long long)epochs, cli_now() - r->t_start);
  if (cli_dataset_is_text(o->dataset))
    printf("final validation loss %.4f nats/byte", r->ev.loss);
  else if (r->data.num_classes == 1)
    printf("final test rmse %.4f, best %.4f (epoch %lld)", sqrt(r->ev.loss),
           sqrt(-r->best_accuracy), (long long)r->best_epoch);
  else
    printf("final test accuracy %.2f%%, best %.2f%% (epoch %lld)",
           100.0 * (double)r->ev.correct / (double)r->ev.total, 100 * r->best_accuracy,
           (long long)r->best_epoch);
  if (o->checkpoint)
    printf("; checkpoint %s\n", cli_shown(o->checkpoint));
  else
    printf("; no checkpoint saved (--checkpoint PATH keeps the model)\n");
}

int train_epochs(train_run *r) {
  r->ev = (cli_eval_result){.loss = NAN};
  r->best_accuracy = -1;
  r->t_start = cli_now();
  for (int64_t epoch = r->start_epoch; epoch < r->o.epochs; epoch++) {
    epoch_state e;
    int rc;
    if ((rc = begin_epoch(r, &e, epoch)) != CLI_OK || (rc = run_batches(r, &e)) != CLI_OK ||
        (rc = close_batches(r, &e)) != CLI_OK)
      return rc;
    if (g_interrupted && e.batch < e.nb) return save_mid_epoch(r, &e);
    if ((rc = end_epoch(r, &e)) != GO_ON || (rc = stop_after_epoch(r, epoch)) != GO_ON) return rc;
  }
  if (r->ev.total && r->rank == 0 && cli_dataset_is_text(r->o.dataset))
    printf(
        "validation loss: %.4f nats/byte (%.4f bits/byte); unigram baseline %.4f nats/byte "
        "(%.4f bits/byte)\n",
        r->ev.loss, r->ev.loss / log(2.0), r->unigram, r->unigram / log(2.0));
  else if (r->ev.total && r->rank == 0 && r->data.num_classes == 1)
    printf("test rmse: %.4f (%lld samples)\n", sqrt(r->ev.loss), (long long)r->ev.total);
  else if (r->ev.total && r->rank == 0)
    printf("test accuracy: %.2f%% (%lld/%lld)\n",
           100.0 * (double)r->ev.correct / (double)r->ev.total, (long long)r->ev.correct,
           (long long)r->ev.total);
  if (r->ev.total && r->rank == 0) print_summary(r);
  r->finalize = true;
  return CLI_OK;
}
