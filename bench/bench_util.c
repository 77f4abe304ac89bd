/* bench_util.c: timing and JSON output shared by the C benchmarks (bench_util.h). */
#include "bench_util.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <ctensor.h>

#define MIN_SAMPLE_S 2e-3

int bench_threads = 1;
double bench_budget_s = 1.5;

double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long bench_minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Warm-up of >= 3 calls and >= 10% of the budget; returns the mean per call. */
static double warm_up(bench_fn fn, void *ctx) {
  long calls = 0;
  double t0 = bench_now_s(), t = t0;
  while (calls < 3 || t - t0 < 0.1 * bench_budget_s) {
    fn(ctx);
    calls++;
    t = bench_now_s();
  }
  return (t - t0) / (double)calls;
}

timing time_it(bench_fn fn, void *ctx) {
  enum { MAX_SAMPLES = 200, MIN_SAMPLES = 7 };
  double per_call = warm_up(fn, ctx);
  timing r = {0};
  r.inner = per_call >= MIN_SAMPLE_S ? 1 : (long)ceil(MIN_SAMPLE_S / per_call);
  r.samples = (int)(bench_budget_s / (per_call * (double)r.inner));
  if (r.samples < MIN_SAMPLES) r.samples = MIN_SAMPLES;
  if (r.samples > MAX_SAMPLES) r.samples = MAX_SAMPLES;
  double times[MAX_SAMPLES];
  long flt0 = bench_minor_faults();
  for (int s = 0; s < r.samples; s++) {
    double t0 = bench_now_s();
    for (long i = 0; i < r.inner; i++) fn(ctx);
    times[s] = (bench_now_s() - t0) / (double)r.inner;
  }
  r.minflt = (double)(bench_minor_faults() - flt0) / ((double)r.samples * (double)r.inner);
  bench_summarize(&r, times, r.samples);
  return r;
}

void bench_summarize(timing *r, double *times, int n) {
  qsort(times, (size_t)n, sizeof times[0], cmp_double);
  r->samples = n;
  r->median_s = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  r->min_s = times[0];
}

void emit(const char *bench, const char *impl, timing t, const char *metric, metric_kind kind,
          double k) {
  printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"threads\":%d,\"median_s\":%.9g,\"min_s\":%.9g,"
         "\"samples\":%d,\"inner\":%ld,\"minflt_per_iter\":%.4g",
         bench, impl, bench_threads, t.median_s, t.min_s, t.samples, t.inner, t.minflt);
  if (metric) printf(",\"%s\":%.6g", metric, kind == RATE ? k / t.median_s : k * t.median_s);
  printf("}\n");
  fflush(stdout);
}

void emit_error(const char *bench, const char *impl, const char *what) {
  printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"threads\":%d,\"error\":\"", bench, impl,
         bench_threads);
  for (const char *p = what ? what : "unknown"; *p; p++)
    putchar(*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '\'' : *p);
  printf("\"}\n");
  fflush(stdout);
}

int bench_want(const char *only, const char *name) {
  if (!only) return 1;
  for (const char *p = only; *p;) { /* each comma-separated part, as a substring of name */
    size_t len = strcspn(p, ",");
    for (const char *n = name; len && strlen(n) >= len; n++)
      if (strncmp(n, p, len) == 0) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

int bench_init(int argc, char **argv, const char *prog, const char **only) {
  const char *env = getenv("CT_NUM_THREADS");
  bench_threads = env && atoi(env) > 0 ? atoi(env) : omp_get_num_procs();
  *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      bench_threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
      bench_budget_s = atof(argv[++i]);
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      *only = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--threads N] [--budget SECONDS] [--only NAME]\n", prog);
      return 2;
    }
  }
  if (bench_threads < 1) bench_threads = 1;
  ct_set_num_threads(bench_threads); /* ctensor's OpenMP and OpenBLAS threads */
  omp_set_num_threads(bench_threads); /* the C loops' threads */
  printf("{\"meta\":\"%s\",\"threads\":%d,\"version\":\"%s\",\"build\":\"%s\"}\n", prog,
         bench_threads, ct_library_version(), ct_build_info());
  return 0;
}
