/* cmd_predict.c: `ctensor predict --checkpoint P INPUT...`: the class of each
 * image file or CSV row, with a model trained on your own data. The
 * checkpoint holds what prediction needs (user_data.c, checkpoint.c): the
 * class names, the CSV feature columns and their normalization, the image
 * size, channels and normalization. One line per row or image:
 *   INPUT: NAME (class K, p=0.97)         an image
 *   INPUT row R: NAME (class K, p=0.97)   a CSV row (R counts data rows from 1) */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { PREDICT_BATCH = 256 };

static void predict_usage(FILE *f) {
  fprintf(f,
          "usage: ctensor predict --checkpoint P [--device D] [--disable-cuda] INPUT...\n"
          "\n"
          "The class of each INPUT with a model trained on --dataset csv:FILE or folder:DIR:\n"
          "  folder models: INPUT is a PNG or JPEG image (resized and normalized as in training)\n"
          "  csv models:    INPUT is a CSV file with the training's feature columns (by name in\n"
          "                 its header; the target column, if present, is ignored): one line per "
          "row\n"
          "Each line: INPUT[ row R]: NAME (class K, p=P), P the model's probability.\n");
}

/* Prints the classes of the rows of probs (n, k) f32 on any device. */
static bool print_classes(const ct_tensor *logits, const char *input, int64_t first_row, bool rows,
                          const cli_data_info *info) {
  ct_tensor *p = info->num_classes == 1 ? ct_contiguous(logits) : ct_softmax(logits, 1);
  int64_t n = p ? ct_size(p, 0) : 0, k = info->num_classes;
  float *v = p ? malloc(sizeof(float) * (size_t)(n * k)) : NULL;
  if (!v || ct_copy_to_host(p, v, sizeof(float) * (size_t)(n * k)) != CT_OK) {
    free(v);
    return false;
  }
  for (int64_t i = 0; i < n && k == 1; i++) /* regression: the value */
    printf("%s row %lld: %s %g\n", cli_shown(input), (long long)(first_row + i + 1),
           cli_shown(info->target_name), v[i]);
  for (int64_t i = 0; i < n && k > 1; i++) {
    int64_t best = 0;
    for (int64_t c = 1; c < k; c++)
      if (v[i * k + c] > v[i * k + best]) best = c;
    char name[256];
    cli_data_name(info->class_names, best, name, sizeof name);
    if (rows)
      printf("%s row %lld: %s (class %lld, p=%.4f)\n", cli_shown(input),
             (long long)(first_row + i + 1), cli_shown(name), (long long)best, v[i * k + best]);
    else
      printf("%s: %s (class %lld, p=%.4f)\n", cli_shown(input), cli_shown(name), (long long)best,
             v[i * k + best]);
  }
  free(v);
  return true;
}

static bool predict_csv(ct_module *model, ct_device dev, const char *input,
                        const cli_data_info *info) {
  char *copy = NULL;
  const char **features = cli_data_names(info->feature_names, info->num_stats, &copy);
  ct_dataset *d = features
                      ? ct_csv_dataset_open(input, &(ct_csv_opts){.no_target = true,
                                                                  .features = features,
                                                                  .num_features = info->num_stats,
                                                                  .normalize = true,
                                                                  .mean = info->mean,
                                                                  .std = info->std})
                      : NULL;
  free(features);
  free(copy);
  if (!d) return false;
  ct_dataloader *dl = ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = PREDICT_BATCH});
  bool ok = dl != NULL;
  int64_t row = 0;
  while (ok) {
    ct_batch b = {0};
    if (ct_dataloader_next(dl, &b) != CT_OK) ok = false;
    if (!ok || !b.inputs) break;
    ct_scope_begin();
    ct_tensor *x = ct_to(b.inputs, dev, NULL);
    ct_tensor *logits = x ? ct_module_forward(model, x) : NULL;
    ok = logits && print_classes(logits, input, row, true, info);
    ct_scope_end();
    row += ct_size(b.inputs, 0);
    ct_batch_release(&b);
  }
  ct_dataloader_free(dl);
  ct_dataset_free(d);
  return ok;
}

static bool predict_image(ct_module *model, ct_device dev, const char *input,
                          const cli_data_info *info) {
  ct_image_folder_opts fo = {
      .channels = (int)info->channels, .resize_h = info->height, .resize_w = info->width};
  fo.transforms.normalize = true;
  for (int k = 0; k < 3; k++) {
    fo.transforms.mean[k] = info->mean[k < info->num_stats ? k : 0];
    fo.transforms.std[k] = info->std[k < info->num_stats ? k : 0];
  }
  ct_scope_begin();
  ct_tensor *img = ct_image_load(input, &fo);
  ct_tensor *x = img ? ct_to(ct_unsqueeze(img, 0), dev, NULL) : NULL;
  ct_tensor *logits = x ? ct_module_forward(model, x) : NULL;
  bool ok = logits && print_classes(logits, input, 0, false, info);
  ct_scope_end();
  return ok;
}

int cmd_predict(int argc, char **argv) {
  static const struct option longopts[] = {{"checkpoint", required_argument, NULL, 'c'},
                                           {"device", required_argument, NULL, 'd'},
                                           {"disable-cuda", no_argument, NULL, 'n'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  cli_opts o = {.device = "auto"};
  optind = 0;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
    if (c == 'h') {
      predict_usage(stdout);
      return CLI_OK;
    }
    if (c == 'c')
      o.checkpoint = optarg;
    else if (c == 'd')
      o.device = optarg;
    else if (c == 'n')
      o.disable_cuda = true;
    else {
      fprintf(stderr, "ctensor predict: %s '%s'\n\n",
              c == ':' ? "option needs a value" : "unknown option", cli_shown(argv[optind - 1]));
      predict_usage(stderr);
      return CLI_USAGE;
    }
  }
  if (!o.checkpoint || optind >= argc) {
    fprintf(stderr, "ctensor predict: %s\n\n",
            !o.checkpoint ? "--checkpoint PATH is required" : "no INPUT to predict");
    predict_usage(stderr);
    return CLI_USAGE;
  }
  ct_device dev;
  int rc = cli_resolve_device(&o, &dev);
  if (rc != CLI_OK) return rc;
  char err[1024];
  cli_ckpt ck;
  if (!cli_checkpoint_load(o.checkpoint, &ck, err, sizeof err)) {
    fprintf(stderr, "ctensor predict: cannot read checkpoint %s: %s\n", cli_shown(o.checkpoint),
            err);
    return CLI_FAIL;
  }
  const cli_ckpt_meta *m = &ck.meta;
  const cli_data_info *info = &m->data;
  if (info->num_classes <= 0) {
    fprintf(stderr,
            "ctensor predict: %s was trained on %s; predict takes models trained on your own data "
            "(--dataset csv:FILE or folder:DIR)\n",
            cli_shown(o.checkpoint), cli_dataset_name((int)m->dataset));
    cli_checkpoint_free(&ck);
    return CLI_FAIL;
  }
  ct_module *model = cli_model_new_for((cli_model)m->model, info->channels, info->height,
                                       info->width, info->num_classes);
  rc = CLI_FAIL;
  if (!model || ct_module_to(model, dev) != CT_OK) {
    cli_error("building the model");
    goto done;
  }
  if (!cli_checkpoint_restore_model(&ck, model, err, sizeof err)) {
    fprintf(stderr, "ctensor predict: checkpoint %s does not fit model %s: %s\n",
            cli_shown(o.checkpoint), cli_model_name((int)m->model), err);
    goto done;
  }
  ct_module_train(model, false);
  ct_no_grad_begin();
  rc = CLI_OK;
  for (int i = optind; i < argc; i++) {
    bool ok = m->dataset == DATASET_CSV ? predict_csv(model, dev, argv[i], info)
                                        : predict_image(model, dev, argv[i], info);
    if (!ok) {
      cli_error(m->dataset == DATASET_CSV ? "predicting on the CSV rows"
                                          : "predicting on the image");
      rc = CLI_FAIL; /* the other inputs still get their lines */
    }
  }
  ct_no_grad_end();
done:
  ct_module_free(model);
  cli_checkpoint_free(&ck);
  return rc;
}
