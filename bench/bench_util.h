/* bench_util.h: the timing method and output format shared by the C benchmarks.
 *
 * time_it: a warm-up (>= 3 calls and >= 10% of the budget) whose mean sets
 * `inner`, the calls per sample (a sample lasts >= 2 ms); then 7 to 200 samples
 * within the budget, timed with clock_gettime(CLOCK_MONOTONIC). The median and
 * the minimum per-call times are kept. bench/peers_*.py do exactly the same.
 *
 * Output: one JSON object per line on stdout, e.g.
 *   {"bench":"add_10M_f32","impl":"ctensor","threads":2,"median_s":...,"min_s":...,
 *    "samples":...,"inner":...,"minflt_per_iter":...,"gbps":...}
 */
#ifndef CT_BENCH_UTIL_H
#define CT_BENCH_UTIL_H

typedef void (*bench_fn)(void *ctx);

typedef struct timing {
  double median_s; /* median of per-call times over the samples */
  double min_s;    /* fastest sample, per call */
  int samples;
  long inner;      /* calls per sample */
  double minflt;   /* minor page faults per call (getrusage) */
} timing;

extern int bench_threads;     /* threads for ctensor and the C loops */
extern double bench_budget_s; /* seconds of timed samples per (workload, impl) */

/* Parses [--threads N] [--budget SECONDS] [--only NAME], sets ctensor's and
 * OpenMP's threads, prints the {"meta":...} line. Returns 0, or 2 on bad usage. */
int bench_init(int argc, char **argv, const char *prog, const char **only);
/* Whether workload `name` was selected by --only (substrings separated by
 * commas, any of which may match; NULL: all). */
int bench_want(const char *only, const char *name);

timing time_it(bench_fn fn, void *ctx);
/* Pieces of that method, for programs that time differently (CUDA events):
 * a monotonic clock in seconds, minor page faults so far, and the median/min
 * of n per-call times (sorted in place) into r. */
double bench_now_s(void);
long bench_minor_faults(void);
void bench_summarize(timing *r, double *times, int n);

/* A metric derived from the median time t: work / t (GB/s, GFLOP/s) or t * k
 * (ns per op, ms per run). */
typedef enum metric_kind { RATE, SCALED } metric_kind;
/* One JSON line with the timing and one derived metric (metric NULL: none). */
void emit(const char *bench, const char *impl, timing t, const char *metric, metric_kind kind,
          double k);
/* One JSON line saying the implementation failed (e.g. an op not implemented). */
void emit_error(const char *bench, const char *impl, const char *what);

#endif /* CT_BENCH_UTIL_H */
