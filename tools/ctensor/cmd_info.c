/* cmd_info.c: `ctensor info`: what ctensor will run on: devices, threads,
 * BLAS, build options and library version.
 *
 * The public API has no CUDA device properties (name, total memory, compute
 * capability) nor CUDA driver/runtime versions; info prints what the API has
 * (device count, allocator statistics) and the kernel driver's version file
 * when present. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* OpenBLAS's own introspection (the library ctensor links for CPU GEMM). */
char *openblas_get_config(void);
char *openblas_get_corename(void);
int openblas_get_num_threads(void);

/* The value of the first line of `path` starting with `key` (after ':'),
 * trimmed, into buf; false if absent. */
static bool read_keyed_line(const char *path, const char *key, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) != 0) continue;
    const char *v = strchr(line, ':');
    v = v ? v + 1 : line + strlen(key);
    while (*v == ' ' || *v == '\t') v++;
    snprintf(buf, n, "%s", v);
    buf[strcspn(buf, "\n")] = '\0';
    found = true;
    break;
  }
  fclose(f);
  return found;
}

static void print_mib(const char *label, size_t bytes) {
  printf("%s%.1f MiB", label, (double)bytes / (1024.0 * 1024.0));
}

int cmd_info(int argc, char **argv) {
  if (argc > 1) {
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
      printf("usage: ctensor info\n");
      return CLI_OK;
    }
    fprintf(stderr, "ctensor info: unexpected argument '%s'\n\n", argv[1]);
    cli_usage(stderr);
    return CLI_USAGE;
  }
  printf("ctensor %s (header %d.%d.%d)\n", ct_library_version(), CTENSOR_VERSION_MAJOR,
         CTENSOR_VERSION_MINOR, CTENSOR_VERSION_PATCH);
  printf("build: %s\n", ct_build_info());

  char buf[512];
  printf("\ncpu:\n");
  printf("  model: %s\n", read_keyed_line("/proc/cpuinfo", "model name", buf, sizeof buf) ? buf : "unknown");
  printf("  logical cpus online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
  printf("  ctensor threads: %d\n", ct_get_num_threads());
  if (read_keyed_line("/proc/meminfo", "MemTotal", buf, sizeof buf)) printf("  memory: %s\n", buf);
  ct_memory_stats ms;
  if (ct_memory_stats_get(ct_cpu(), &ms) == CT_OK) {
    print_mib("  ctensor host cache: allocated ", ms.allocated);
    print_mib(", reserved ", ms.reserved);
    printf("\n");
  }

  printf("\nblas: %s\n", openblas_get_config());
  printf("  core: %s, threads: %d\n", openblas_get_corename(), openblas_get_num_threads());

  printf("\ncuda:\n");
  int n = ct_cuda_device_count();
  ct_clear_error();
  bool built = strstr(ct_build_info(), "cuda=ON") != NULL;
  printf("  backend compiled in: %s\n", built ? "yes" : "no");
  if (read_keyed_line("/proc/driver/nvidia/version", "NVRM version", buf, sizeof buf))
    printf("  NVIDIA kernel driver: %s\n", buf);
  printf("  devices visible: %d\n", n);
  for (int i = 0; i < n; i++) {
    printf("  %s", ct_device_name(ct_cuda(i)));
    if (ct_memory_stats_get(ct_cuda(i), &ms) == CT_OK) {
      print_mib(": ctensor allocated ", ms.allocated);
      print_mib(", reserved ", ms.reserved);
    }
    printf("\n");
  }
  if (n > 0)
    printf("  (name, total memory, compute capability and CUDA driver/runtime versions are not in "
           "ctensor's public API yet)\n");

  printf("\ndefault device: %s", ct_device_name(ct_default_device()));
  const char *env = getenv("CT_DEVICE");
  if (env && *env) printf(" (CT_DEVICE=%s)", env);
  printf("\n");
  return CLI_OK;
}
