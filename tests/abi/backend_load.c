/* How a program linked against the shared library finds its CUDA backend
 * (tests/abi/check_backends.sh sets the scene).
 *   backend_load absent TEXT    the CUDA backend is unavailable; its info,
 *                               ct_cuda_unavailable_reason and asking for
 *                               cuda:0 say TEXT; the default device is the
 *                               CPU and CPU ops work
 *   backend_load loaded PATH    it was loaded from PATH (a prefix of the path)
 *   backend_load cpu_only -     a CPU-only program (tensors on an explicit
 *                               cpu device, CT_DEVICE=cpu, a DataLoader
 *                               with workers and no pinning) loads no plugin
 * Before anything else, the program checks that starting ctensor mapped no
 * CUDA, NCCL or MPI library (backends load on first use). */
#include <ctensor.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what) {
  fprintf(stderr, "backend_load: %s\n", what);
  return 1;
}

/* A plugin's library in this process's memory map, or NULL. */
static const char *mapped_plugin_library(void) {
  static char line[4096];
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return NULL;
  const char *found = NULL;
  while (!found && fgets(line, sizeof line, f)) {
    static const char *const libs[] = {"libcudart", "libcublas", "libcudnn",   "libcusolver",
                                       "libnccl",   "libmpi",    "libctensor-"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
      if (strstr(line, libs[i])) found = line;
  }
  fclose(f);
  return found;
}

/* Two epochs of a DataLoader (2 workers, no pinning) over 64 CPU samples,
 * then: no plugin mapped. */
static int cpu_only(void) {
  ct_tensor_opts cpu = {.device = ct_cpu()};
  ct_tensor *x = ct_randn(CT_SHAPE(64, 3), &cpu), *y = ct_arange(0, 64, 1, &cpu);
  ct_dataset *ds = x && y ? ct_tensor_dataset_new(x, y) : NULL;
  ct_dataloader *dl =
      ds ? ct_dataloader_new(
               ds, &(ct_dataloader_opts){.batch_size = 10, .shuffle = true, .num_workers = 2})
         : NULL;
  if (!dl) return fail(ct_last_error_message());
  int64_t samples = 0;
  for (int epoch = 0; epoch < 2; epoch++) {
    if (ct_dataloader_start_epoch(dl, epoch, 0) != CT_OK) return fail(ct_last_error_message());
    for (;;) {
      ct_batch b;
      if (ct_dataloader_next(dl, &b) != CT_OK) return fail(ct_last_error_message());
      if (!b.inputs) break;
      samples += ct_size(b.inputs, 0);
      ct_batch_release(&b);
    }
  }
  ct_dataloader_free(dl);
  ct_dataset_free(ds);
  ct_free(x);
  ct_free(y);
  if (samples != 128) return fail("the loader did not deliver 2 epochs of 64 samples");
  if (ct_default_device().type != CT_DEVICE_CPU) return fail("CT_DEVICE=cpu is not the default");
  const char *m = mapped_plugin_library();
  if (m) {
    fprintf(stderr, "backend_load: a CPU-only DataLoader mapped %s", m);
    return 1;
  }
  printf("a CPU-only DataLoader (2 epochs, 128 samples) mapped no plugin\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) return fail("usage: backend_load absent TEXT | loaded PATH | cpu_only -");
  printf("ctensor %s\n", ct_library_version());
  const char *m = mapped_plugin_library();
  if (m) {
    fprintf(stderr, "backend_load: mapped before any use of a backend: %s", m);
    return 1;
  }
  if (strcmp(argv[1], "cpu_only") == 0) return cpu_only();
  ct_backend_info b;
  if (ct_backend_get_info(1, &b) != CT_OK || strcmp(b.name, "cuda") != 0)
    return fail("backend 1 is not cuda");
  printf("cuda: available=%d file='%s' libraries='%s' error='%s'\n", b.available, b.file,
         b.libraries, b.error);
  if (strcmp(argv[1], "loaded") == 0) {
    if (!b.available) return fail("the CUDA backend did not load");
    if (strncmp(b.file, argv[2], strlen(argv[2])) != 0) return fail("loaded from elsewhere");
    if (strcmp(b.version, ct_library_version()) != 0)
      return fail("version differs from the core's");
    return 0;
  }
  if (b.available) return fail("the CUDA backend loaded, expected it absent");
  if (!strstr(b.error, argv[2])) return fail("its error does not say what was expected");
  if (ct_cuda_is_available() || ct_cuda_device_count() != 0) return fail("a GPU is reported");
  const char *why = ct_cuda_unavailable_reason();
  printf("unavailable reason: %s\n", why);
  if (!strstr(why, argv[2])) return fail("ct_cuda_unavailable_reason does not say it");
  if (ct_default_device().type != CT_DEVICE_CPU) return fail("the default device is not the CPU");
  ct_device d;
  if (ct_device_parse("cuda:0", &d) == CT_OK) return fail("cuda:0 was accepted");
  printf("cuda:0: %s\n", ct_last_error_message());
  if (ct_last_error() != CT_ERR_UNAVAILABLE || !strstr(ct_last_error_message(), argv[2]))
    return fail("asking for cuda:0 does not say what is missing");
  ct_clear_error();
  /* the CPU still works */
  double s = 0;
  ct_tensor *x = ct_arange(0, 5, 1, NULL), *sum = ct_sum(x, NULL);
  ct_status st = ct_item(sum, &s);
  ct_free(sum);
  ct_free(x);
  if (st != CT_OK || s != 10) return fail("a CPU op failed");
  return 0;
}
