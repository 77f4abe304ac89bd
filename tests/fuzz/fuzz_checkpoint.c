/* libFuzzer target for `ctensor train`'s checkpoint reader: the input, as a
 * file (a memfd), goes through cli_checkpoint_load (the safetensors reader
 * and every meta.* check); when it loads, its tensors are restored into the
 * model and an Adam optimizer it names (each tensor's name, dtype and shape
 * checked). Any outcome but a crash, an out-of-bounds access, UB or a leak is
 * fine; a failure must say why. Build and run: README.md here. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

static void restore(const cli_ckpt *ck) {
  int64_t channels, size;
  cli_dataset_geometry((cli_dataset)ck->meta.dataset, &channels, &size);
  ct_module *model = cli_model_new((cli_model)ck->meta.model, channels, size);
  if (!model) abort(); /* the loader accepted a model it cannot build */
  /* The count comes first: the vision and GPT models have more parameter
   * tensors than any fixed array here would hold. */
  int n = ct_module_parameters(model, NULL, NULL, 0);
  ct_tensor **params = n > 0 ? malloc((size_t)n * sizeof *params) : NULL;
  if (params) ct_module_parameters(model, params, NULL, n);
  ct_optimizer *opt = params ? ct_adam_new(params, n, NULL) : NULL;
  free(params); /* the optimizer keeps its own list */
  char err[1024];
  err[0] = '\0';
  if (!cli_checkpoint_restore_model(ck, model, err, sizeof err) && !err[0]) abort();
  err[0] = '\0';
  if (opt && !cli_checkpoint_restore_optimizer(ck, opt, err, sizeof err) && !err[0]) abort();
  ct_optimizer_free(opt);
  ct_module_free(model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz_checkpoint", 0);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64], err[1024];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  cli_ckpt ck;
  err[0] = '\0';
  if (cli_checkpoint_load(path, &ck, err, sizeof err)) {
    restore(&ck);
    cli_checkpoint_free(&ck);
  } else if (!err[0] || ck.tensors || ck.names || ck.n) {
    abort(); /* a failure says why and leaves nothing behind */
  }
  ct_clear_error();
  close(fd);
  return 0;
}
