/* bench_load: what starting ctensor costs a program, in fresh processes.
 *
 * Each run is a new process (this program executed again with --once) that
 * opens libctensor with dlopen, so the dynamic loader's work is inside the
 * timing, then times each first use:
 *   load        dlopen of libctensor.so (RTLD_NOW): no CUDA, NCCL or MPI
 *               library is mapped (backends load on first use)
 *   first_op    ct_ones + ct_add of 1000 floats (the CPU backend's first op)
 *   first_gemm  a 64x64 matmul: the CPU BLAS is loaded on first use
 *   cuda_load   ct_backend_get_info of the CUDA backend: libctensor-cuda.so
 *               and the CUDA libraries it needs (cudart, cuBLAS, cuDNN)
 *   cuda_query  ct_cuda_device_count: the driver's start (no GPU: an error)
 *   process     the whole run, from spawning the process to its exit
 *               (process_cpu_only: the same run without the CUDA phases)
 * The peers' "process" is the same for a Python program doing the first op
 * with NumPy and with PyTorch (`import numpy`, `import torch`).
 * Output: JSON lines in bench_util.h's format, one per phase, median and
 * minimum over the runs, and the ratio of the peers' process time to
 * ctensor's. (Not linked with bench_util.c, which needs libctensor linked.)
 *   bench_load [--runs N] [--no-peers] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <ctensor.h>

extern char **environ;

#ifndef CT_LIBRARY_FILE
#error "CT_LIBRARY_FILE: the path of libctensor.so (bench/CMakeLists.txt)"
#endif

enum { PHASES = 5, MAX_RUNS = 200 };
static const char *const phase_names[PHASES] = {"load", "first_op", "first_gemm", "cuda_load",
                                                "cuda_query"};

static double bench_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define SYM(name) __typeof__(name) *p_##name = (__typeof__(name) *)dlsym(lib, #name)

/* One run: prints the phases' seconds on one line (the CUDA phases 0 when
 * `cuda` is false). */
static int once(bool cuda) {
  double t[PHASES + 1];
  t[0] = bench_now_s();
  void *lib = dlopen(CT_LIBRARY_FILE, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "bench_load: %s\n", dlerror());
    return 1;
  }
  t[1] = bench_now_s();
  SYM(ct_ones);
  SYM(ct_add);
  SYM(ct_matmul);
  SYM(ct_backend_count);
  SYM(ct_backend_get_info);
  SYM(ct_cuda_device_count);
  if (!p_ct_ones || !p_ct_add || !p_ct_matmul || !p_ct_backend_count || !p_ct_backend_get_info ||
      !p_ct_cuda_device_count) {
    fprintf(stderr, "bench_load: a function is missing from %s\n", CT_LIBRARY_FILE);
    return 1;
  }
  ct_tensor *x = p_ct_ones(CT_SHAPE(1000), NULL);
  if (!x || !p_ct_add(x, x)) return 1;
  t[2] = bench_now_s();
  ct_tensor *m = p_ct_ones(CT_SHAPE(64, 64), NULL);
  if (!m || !p_ct_matmul(m, m)) return 1;
  t[3] = bench_now_s();
  if (!cuda) {
    printf("%.9f %.9f %.9f 0 0\n", t[1] - t[0], t[2] - t[1], t[3] - t[2]);
    return 0;
  }
  for (int i = 0, n = p_ct_backend_count(); i < n; i++) {
    ct_backend_info info;
    if (p_ct_backend_get_info(i, &info) == CT_OK && strcmp(info.name, "cuda") == 0) {
      if (!info.available) fprintf(stderr, "bench_load: cuda: %s\n", info.error);
      break;
    }
  }
  t[4] = bench_now_s();
  (void)p_ct_cuda_device_count();
  t[5] = bench_now_s();
  for (int p = 0; p < PHASES; p++) printf("%.9f%c", t[p + 1] - t[p], p == PHASES - 1 ? '\n' : ' ');
  return 0;
}

/* Runs argv in a new process; its wall time in seconds (stdout into `out`
 * when not NULL), or -1. */
static double run_process(char *const *argv, char *out, size_t outsz) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  double t0 = bench_now_s();
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  if (rc != 0) {
    close(fd[0]);
    return -1;
  }
  char sink[256];
  size_t got = 0;
  for (ssize_t n;
       (n = out ? read(fd[0], out + got, outsz - 1 - got) : read(fd[0], sink, sizeof sink)) > 0;)
    if (out) got += (size_t)n;
  if (out) out[got] = '\0';
  close(fd[0]);
  int status;
  waitpid(pid, &status, 0);
  double t = bench_now_s() - t0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

/* One JSON line: median and minimum of n times (sorted in place). */
static void report(const char *bench, const char *impl, double *times, int n) {
  qsort(times, (size_t)n, sizeof times[0], cmp_double);
  double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  printf(
      "{\"bench\":\"%s\",\"impl\":\"%s\",\"median_s\":%.9g,\"min_s\":%.9g,"
      "\"samples\":%d,\"ms\":%.4g}\n",
      bench, impl, median, times[0], n, median * 1e3);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--once") == 0) return once(true);
  if (argc == 2 && strcmp(argv[1], "--once-cpu") == 0) return once(false);
  int runs = 20, peers = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--no-peers") == 0)
      peers = 0;
    else {
      fprintf(stderr, "usage: bench_load [--runs N] [--no-peers]\n");
      return 2;
    }
  }
  if (runs < 1 || runs > MAX_RUNS) runs = 20;
  static double phase[PHASES][MAX_RUNS], process[3][MAX_RUNS], process_cpu[MAX_RUNS];
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  char *const child[] = {self, "--once", NULL};
  char *const child_cpu[] = {self, "--once-cpu", NULL};
  char *const numpy[] = {"/usr/bin/python3", "-c", "import numpy; numpy.ones(1000) + 1", NULL};
  char *const torch[] = {"/usr/bin/python3", "-c", "import torch; torch.ones(1000) + 1", NULL};
  printf("{\"meta\":{\"prog\":\"bench_load\",\"runs\":%d,\"library\":\"%s\"}}\n", runs,
         CT_LIBRARY_FILE);
  for (int r = 0; r < runs; r++) {
    char out[512];
    process[0][r] = run_process(child, out, sizeof out);
    if (process[0][r] < 0 || sscanf(out, "%lf %lf %lf %lf %lf", &phase[0][r], &phase[1][r],
                                    &phase[2][r], &phase[3][r], &phase[4][r]) != PHASES) {
      fprintf(stderr, "bench_load: run %d failed\n", r);
      return 1;
    }
    process_cpu[r] = run_process(child_cpu, NULL, 0);
    if (peers) {
      process[1][r] = run_process(numpy, NULL, 0);
      process[2][r] = run_process(torch, NULL, 0);
    }
  }
  for (int p = 0; p < PHASES; p++) {
    char name[64];
    snprintf(name, sizeof name, "start_%s", phase_names[p]);
    report(name, "ctensor", phase[p], runs);
  }
  report("start_process", "ctensor", process[0], runs);
  report("start_process_cpu_only", "ctensor", process_cpu, runs);
  if (peers) {
    const char *impl[] = {"numpy", "torch"};
    for (int k = 1; k < 3; k++) {
      if (process[k][0] < 0) {
        printf(
            "{\"bench\":\"start_process\",\"impl\":\"%s\",\"error\":\"python3 or the "
            "module is missing\"}\n",
            impl[k - 1]);
        continue;
      }
      report("start_process", impl[k - 1], process[k], runs);
      /* medians: both arrays are sorted by report() */
      printf(
          "{\"ratio\":\"start_process\",\"impl\":\"%s\",\"vs_ctensor\":%.3g,"
          "\"vs_ctensor_cpu_only\":%.3g}\n",
          impl[k - 1], process[k][runs / 2] / process[0][runs / 2],
          process[k][runs / 2] / process_cpu[runs / 2]);
    }
  }
  return 0;
}
