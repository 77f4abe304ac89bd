/* cmd_eval.c: `ctensor eval`: rebuilds the model a checkpoint names, loads
 * its weights and reports test accuracy and loss; and the evaluation loop
 * that `train` runs after every epoch. */
#include <math.h>
#include <stdlib.h>

#include "cli.h"

ct_status cli_evaluate(ct_module *model, ct_dataloader *test, ct_device dev, bool regression,
                       cli_eval_result *out) {
  *out = (cli_eval_result){0};
  double t0 = cli_now(), loss_sum = 0;
  ct_status st = ct_dataloader_start_epoch(test, 0, 0);
  if (st != CT_OK) return st;
  bool was_training = ct_module_is_training(model);
  ct_module_train(model, false);
  ct_no_grad_begin();
  for (;;) {
    ct_batch b = {0};
    if ((st = ct_dataloader_next(test, &b)) != CT_OK || !b.inputs) break;
    double l = 0, c = 0;
    ct_scope_begin();
    ct_tensor *x = ct_to(b.inputs, dev, &(ct_to_opts){.non_blocking = true});
    ct_tensor *y = ct_to(b.targets, dev, &(ct_to_opts){.non_blocking = true});
    ct_tensor *logits = ct_module_forward(model, x);
    ct_tensor *loss, *correct;
    if (regression) { /* (B, 1) values against (B) targets */
      loss =
          ct_mse_loss(ct_flatten(logits, 0, -1), y, &(ct_loss_opts){.reduction = CT_REDUCTION_SUM});
      correct = ct_scalar(0, NULL);
    } else {
      loss = ct_cross_entropy(logits, y, &(ct_loss_opts){.reduction = CT_REDUCTION_SUM});
      correct = ct_sum(ct_eq(ct_argmax(logits, 1, false), y), NULL);
    }
    if (!loss || !correct || ct_item(loss, &l) != CT_OK || ct_item(correct, &c) != CT_OK)
      st = ct_last_error() != CT_OK ? ct_last_error() : CT_ERR_INTERNAL;
    ct_scope_end();
    out->total += ct_numel(b.targets); /* samples, or bytes of text windows */
    ct_batch_release(&b);
    if (st != CT_OK) break;
    loss_sum += l;
    out->correct += (int64_t)c;
  }
  ct_no_grad_end();
  ct_module_train(model, was_training);
  out->loss = out->total ? loss_sum / (double)out->total : NAN;
  out->seconds = cli_now() - t0;
  return st;
}

int cmd_eval(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse_options(argc, argv, true, &o);
  if (rc == -1) return CLI_OK;
  if (rc != CLI_OK) return rc;
  ct_device dev;
  if ((rc = cli_resolve_device(&o, &dev)) != CLI_OK) return rc;

  char err[1024];
  cli_ckpt ck;
  if (!cli_checkpoint_load(o.checkpoint, &ck, err, sizeof err)) {
    fprintf(stderr, "ctensor eval: cannot read checkpoint %s: %s\n", cli_shown(o.checkpoint), err);
    return CLI_FAIL;
  }
  const cli_ckpt_meta *m = &ck.meta;
  /* 500 images, or 64 windows of text (8192 bytes, 2M logits) per batch. */
  if (!o.batch_size_set) o.batch_size = m->model == MODEL_GPT ? 64 : 500;
  cli_dataset ds = (cli_dataset)m->dataset;
  int64_t limit = o.limit_test_set ? o.limit_test : m->limit_test;
  int64_t channels, size;
  cli_dataset_geometry(ds, &channels, &size);
  const cli_data_info *d = &m->data;
  ct_module *model = d->num_classes > 0 ? cli_model_new_for((cli_model)m->model, d->channels,
                                                            d->height, d->width, d->num_classes)
                                        : cli_model_new((cli_model)m->model, channels, size);
  ct_dataset *test = NULL;
  cli_user_data ud = {0};
  ct_dataloader *dl = NULL;
  rc = CLI_FAIL;
  if (!model || ct_module_to(model, dev) != CT_OK) {
    cli_error("building the model");
    goto done;
  }
  if (!cli_checkpoint_restore_model(&ck, model, err, sizeof err)) {
    fprintf(stderr, "ctensor eval: checkpoint %s does not fit model %s: %s\n",
            cli_shown(o.checkpoint), cli_model_name((int)m->model), err);
    goto done;
  }
  if (cli_dataset_is_user(ds)) { /* the test data the checkpoint names, or --test-data */
    cli_data_info info = *d;
    o.dataset = ds;
    o.seed = m->seed;
    o.limit_test = limit;
    if (cli_user_data_open(&o, true, &info, &ud) != CLI_OK) goto done;
    test = ud.test;
  } else if (!(test = cli_open_dataset(ds, o.data_dir, false, limit, m->seed, 0, NULL))) {
    goto done;
  }
  if (cli_require_samples("eval", test, ds, o.data_dir, false) != CLI_OK) goto done;
  dl = ct_dataloader_new(
      test,
      &(ct_dataloader_opts){.batch_size = o.batch_size, .num_workers = o.workers, .device = dev});
  if (!dl) {
    cli_error("creating the data loader");
    goto done;
  }
  cli_print_run_line(&o, dev, "model %s \u00b7 dataset %s %lld test \u00b7 precision f32",
                     cli_model_name((int)m->model), cli_dataset_name((int)m->dataset),
                     (long long)ct_dataset_length(test));
  if (!o.quiet) {
    printf("checkpoint %s: model %s, dataset %s, %lld epoch(s)", cli_shown(o.checkpoint),
           cli_model_name((int)m->model), cli_dataset_name((int)m->dataset), (long long)m->epoch);
    if (m->batch > 0) printf(" and %lld batch(es)", (long long)m->batch);
    printf(", %lld optimizer steps; evaluating on %s\n", (long long)m->step_count,
           ct_device_name(dev));
  }
  cli_eval_result ev;
  bool regression = d->num_classes == 1;
  if (cli_evaluate(model, dl, dev, regression, &ev) != CT_OK) {
    cli_error("evaluating");
    goto done;
  }
  if (regression)
    printf("test rmse: %.6f (%lld samples)\n", sqrt(ev.loss), (long long)ev.total);
  else
    printf("test accuracy: %.2f%% (%lld/%lld)\n",
           ev.total ? 100.0 * (double)ev.correct / (double)ev.total : 0.0, (long long)ev.correct,
           (long long)ev.total);
  printf("test loss: %.6f\n", ev.loss);
  rc = CLI_OK;
done:
  ct_dataloader_free(dl);
  if (ud.base_train || ud.base_test)
    cli_user_data_free(&ud); /* test is one of its views */
  else
    ct_dataset_free(test);
  ct_module_free(model);
  cli_checkpoint_free(&ck);
  return rc;
}
