/* cmd_info.c: `ctensor info`: what ctensor will run on: devices, threads,
 * BLAS, build options, the library's version and each backend's (where it
 * was loaded from, the versions of its libraries, or why it is missing). For
 * each GPU: name, memory, compute capability, multiprocessors and ctensor's
 * allocator statistics; the CUDA driver and runtime versions, or why there
 * is no GPU; the default device and, for the CPU, why (exit 1 when CT_DEVICE
 * names a device that cannot be used, as the other commands). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

/* The last error's message without its "function: " prefix. */
static const char *reason(void) {
  const char *m = ct_last_error_message();
  const char *c = strstr(m, ": ");
  return c ? c + 2 : m;
}

/* "13.0" from CUDA's 13000 (1000 * major + 10 * minor), or the reason. */
static void print_version(const char *label, ct_status (*get)(int *)) {
  int v = 0;
  if (get(&v) == CT_OK) {
    printf("  %s: %d.%d\n", label, v / 1000, v % 1000 / 10);
  } else {
    printf("  %s: none (%s)\n", label, reason());
    ct_clear_error();
  }
}

static void print_gpu(int i) {
  ct_cuda_device_properties p;
  printf("  %s:", ct_device_name(ct_cuda(i)));
  if (ct_cuda_get_device_properties(i, &p) != CT_OK) {
    printf(" properties unavailable (%s)\n", reason());
    ct_clear_error();
    return;
  }
  printf(" %s\n", p.name);
  /* usable: one this build has code for (ct_cuda_set_device refuses the others) */
  int previous = ct_cuda_current_device();
  bool usable = ct_cuda_set_device(i) == CT_OK;
  if (usable) ct_cuda_set_device(previous);
  ct_clear_error();
  printf("    memory: %.1f GiB, compute capability %d.%d, %d SMs%s\n",
         (double)p.total_memory / (double)(1u << 30), p.major, p.minor, p.multiprocessor_count,
         usable ? "" : " (not usable: this build has no code for it)");
  printf("    pci %04x:%02x:%02x, %s\n", (unsigned)p.pci_domain_id, (unsigned)p.pci_bus_id,
         (unsigned)p.pci_device_id, p.uuid);
  ct_memory_stats ms;
  if (ct_memory_stats_get(ct_cuda(i), &ms) == CT_OK) {
    print_mib("    ctensor allocated ", ms.allocated);
    print_mib(", reserved ", ms.reserved);
    printf("\n");
  }
  ct_clear_error();
}

/* Each backend and engine: where it was loaded from and the versions of the
 * libraries it runs on, or why it is not available. Loads them. */
static void print_backends(void) {
  printf("\nbackends:\n");
  for (int i = 0; i < ct_backend_count(); i++) {
    ct_backend_info b;
    if (ct_backend_get_info(i, &b) != CT_OK) continue;
    if (!b.available) {
      printf("  %s: %s\n", b.name, b.error);
      continue;
    }
    printf("  %s: %s, ctensor %s\n", b.name, b.builtin ? "built in" : b.file, b.version);
    if (*b.libraries) printf("    %s\n", b.libraries);
  }
  ct_clear_error();
}

static void print_cuda(void) {
  char buf[512];
  printf("\ncuda:\n");
  bool emulated = strstr(ct_build_info(), "cuda=EMULATED") != NULL; /* tests/cuda_emu/lib */
  ct_backend_info b;
  bool present = ct_backend_get_info(1, &b) == CT_OK && b.available;
  printf("  backend: %s\n", !present   ? "not available (see backends)"
                            : emulated ? "on an emulated GPU (tests only)"
                                       : "loaded");
  if (read_keyed_line("/proc/driver/nvidia/version", "NVRM version", buf, sizeof buf))
    printf("  NVIDIA kernel driver: %s\n", buf);
  print_version("driver (supports CUDA)", ct_cuda_driver_version);
  print_version("runtime", ct_cuda_runtime_version);
  int n = ct_cuda_device_count();
  printf("  devices visible: %d\n", n);
  const char *why = ct_cuda_unavailable_reason();
  if (*why) printf("  no usable GPU: %s\n", why);
  for (int i = 0; i < n; i++) print_gpu(i);
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
  printf("  model: %s\n",
         read_keyed_line("/proc/cpuinfo", "model name", buf, sizeof buf) ? buf : "unknown");
  printf("  logical cpus online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
  printf("  ctensor threads: %d\n", ct_get_num_threads());
  if (read_keyed_line("/proc/meminfo", "MemTotal", buf, sizeof buf)) printf("  memory: %s\n", buf);
  ct_memory_stats ms;
  if (ct_memory_stats_get(ct_cpu(), &ms) == CT_OK) {
    print_mib("  ctensor host cache: allocated ", ms.allocated);
    print_mib(", reserved ", ms.reserved);
    printf("\n");
  }

  /* The CPU BLAS, loaded by the library on first use (loaded now). */
  ct_backend_info cpu;
  if (ct_backend_get_info(0, &cpu) == CT_OK) { /* "<BLAS>; oneDNN: <what, or why not>" */
    const char *dnn = strstr(cpu.libraries, "; oneDNN: ");
    printf("\nblas: %.*s\n", (int)(dnn ? dnn - cpu.libraries : (ptrdiff_t)strlen(cpu.libraries)),
           cpu.libraries);
    if (dnn) printf("onednn: %s\n", dnn + strlen("; oneDNN: "));
  }

  print_backends();
  print_cuda();

  /* The default device and why: CT_DEVICE, or the GPU found, or why none. */
  ct_device d;
  const char *env = getenv("CT_DEVICE");
  printf("\ndefault device: ");
  if (ct_resolve_default_device(&d) != CT_OK) {
    printf("none: %s\n", ct_last_error_message());
    ct_clear_error();
    return CLI_FAIL; /* as `train` would: an explicit CT_DEVICE is never replaced */
  }
  printf("%s", ct_device_name(d));
  if (env && *env)
    printf(" (CT_DEVICE=%s)", cli_shown(env));
  else if (d.type == CT_DEVICE_CPU)
    printf(" (no GPU: %s)", ct_cuda_unavailable_reason());
  printf("\n");
  return CLI_OK;
}
