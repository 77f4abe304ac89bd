/* bench_gpu.c: times ctensor's CUDA backend next to raw CUDA runtime calls.
 *
 * Workloads (the GPU targets of docs/benchmarks.md, "GPU benchmarks"):
 *   gpu_copy_2p28_f32      device-to-device copy of 2^28 f32 (1 GiB): ct_copy_ between
 *                          two CUDA tensors, and a raw cudaMemcpyAsync (the reference
 *                          bandwidth; bytes = read + write = 2 * 4 * 2^28)
 *   gpu_add_2p28_f32       ct_add, a fresh result per call    (bytes = 3 * 4 * 2^28)
 *   gpu_add_out_2p28_f32   ct_add_out into a preallocated out
 *   gpu_mul_2p28_f32       ct_mul, fresh result
 *   gpu_mul_out_2p28_f32   ct_mul_out
 *   gpu_sum_2p28_f32       ct_sum over all 2^28 elements      (bytes = 4 * 2^28)
 *   gpu_add_transposed_2p28_f32  ct_add_out of a (16384, 16384) matrix and another one
 *                          transposed: the strided kernel, whose index arithmetic (one
 *                          division per element) the contiguous workloads never run
 *                          (bytes = 3 * 4 * 2^28)
 *   gpu_matmul_8192_{f16,bf16,f32}  8192^3 products, fresh result, TF32 off
 *                          (flops = 2 * 8192^3)
 *   gpu_launch_1elem_f32   host time per op of ct_add on 1-element CUDA tensors, a loop
 *                          of 1000 with one ct_synchronize at its end
 *   gpu_enqueue_1elem_f32  the same op, host time of enqueueing 200 ops only (the queue
 *                          is drained, untimed, before each sample)
 *   gpu_h2d_256MiB_pinned  ct_to(non_blocking) of a ct_pin_memory'd 256 MiB tensor, and
 *                          a raw cudaMemcpyAsync from cudaHostAlloc'd memory
 *
 * Method. Every result is checked once before it is timed (fresh random inputs, the
 * output poisoned with NaN first where there is one; a wrong result is reported as an
 * error and not timed). Device work is timed with events (ct_event_* for ctensor,
 * cudaEvent_t for the raw calls) around `inner` back-to-back calls: after 3 untimed
 * calls, a warm-up of >= 3 calls and >= 10% of the budget (each synchronized) sets
 * `inner` so that a trial lasts >= 20 ms; then 7 to 100 trials within the budget; the median and the minimum
 * per-call times are kept. Host-side per-op costs use clock_gettime(CLOCK_MONOTONIC).
 * bench/peers_gpu.py times PyTorch and CuPy the same way.
 *
 * Output: JSON lines as bench_core (bench_util.h), metrics gbps, tflops, ns_per_op;
 * "samples" counts trials and "inner" the calls per trial.
 *
 * Usage: bench_gpu [--budget SECONDS] [--only NAME] [--threads N] [--small]
 * --small: 2^18 elements, 256^3 products and a 1 MiB copy (names follow the
 * sizes: gpu_add_2p18_f32, gpu_matmul_256_f16, gpu_h2d_1MiB_pinned), to run
 * every check and code path of this program quickly, on the emulated GPU in
 * the tests (bench_gpu[cuda_emulated]); not a measurement.
 * Exits 77 (after a message on stderr) when no CUDA device is usable.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include <ctensor.h>

#include "bench_util.h"

/* Sizes (--small divides them, see the top) and the workload names that carry them. */
static int big_log2 = 28; /* 2^28 f32: 1 GiB per array, 20x the L2 */
#define N_BIG ((int64_t)1 << big_log2)
static int64_t N_MAT = 8192;
static int64_t N_H2D = (int64_t)64 << 20; /* 64 Mi f32: 256 MiB */
#define TRIAL_S 20e-3
#define MIN_TRIALS 7
#define MAX_TRIALS 100
#define LAUNCH_LOOP 1000  /* ops per sample, then one synchronize */
#define ENQUEUE_BATCH 200 /* ops per sample, below the launch queue's depth */
#define SAMPLE_STEP 4099  /* stride of the elements checked on the host */

static ct_device dev;
static char fail_msg[512]; /* the first failure inside a timed region */

static void fail(const char *what, const char *detail) {
  if (!fail_msg[0])
    snprintf(fail_msg, sizeof fail_msg, "%s: %s", what, detail && *detail ? detail : "failed");
}

static void ct_fail(const char *what) { fail(what, ct_last_error_message()); }

static bool cuda_ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return true;
  fail(what, cudaGetErrorString(e));
  return false;
}

/* Reports the outcome of one (workload, implementation): the timing line, or an error
 * line with the first failure. Clears the failure for the next one. */
static void report(const char *bench, const char *impl, bool ok, timing t, const char *metric,
                   metric_kind kind, double k) {
  if (ok && !fail_msg[0]) {
    emit(bench, impl, t, metric, kind, k);
  } else {
    emit_error(bench, impl, fail_msg[0] ? fail_msg : "failed");
    fprintf(stderr, "bench_gpu: %s / %s: %s\n", bench, impl, fail_msg[0] ? fail_msg : "failed");
  }
  fail_msg[0] = 0;
  ct_clear_error();
  (void)cudaGetLastError();
}

/* ---- Device timing ------------------------------------------------------------------ */

/* Events around a region of the default stream: ctensor's (for ctensor) or the
 * runtime's (for the raw baselines). ctensor's default stream is the legacy default
 * stream, so both order with everything else. */
typedef struct gtimer {
  bool raw;
  ct_event *ce[2];
  cudaEvent_t re[2];
} gtimer;

static bool gt_init(gtimer *t, bool raw) {
  memset(t, 0, sizeof *t);
  t->raw = raw;
  for (int i = 0; i < 2; i++) {
    if (raw) {
      if (!cuda_ok(cudaEventCreate(&t->re[i]), "cudaEventCreate")) return false;
    } else if (!(t->ce[i] = ct_event_new(dev, true))) {
      ct_fail("ct_event_new");
      return false;
    }
  }
  return true;
}

static void gt_free(gtimer *t) {
  for (int i = 0; i < 2; i++) {
    if (t->raw && t->re[i]) cudaEventDestroy(t->re[i]);
    ct_event_free(t->ce[i]);
  }
}

static bool gt_record(gtimer *t, int i) {
  if (t->raw) return cuda_ok(cudaEventRecord(t->re[i], 0), "cudaEventRecord");
  if (ct_event_record(t->ce[i], NULL) == CT_OK) return true;
  ct_fail("ct_event_record");
  return false;
}

static bool gt_elapsed_ms(gtimer *t, float *ms) {
  if (t->raw) {
    return cuda_ok(cudaEventSynchronize(t->re[1]), "cudaEventSynchronize") &&
           cuda_ok(cudaEventElapsedTime(ms, t->re[0], t->re[1]), "cudaEventElapsedTime");
  }
  if (ct_event_elapsed_ms(t->ce[0], t->ce[1], ms) == CT_OK) return true;
  ct_fail("ct_event_elapsed_ms");
  return false;
}

static bool sync_device(bool raw) {
  if (raw) return cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (ct_synchronize(dev) == CT_OK) return true;
  ct_fail("ct_synchronize");
  return false;
}

/* Median and min device time per call of fn, timed with events (see the top). */
static bool time_device(bench_fn fn, void *ctx, bool raw, timing *out) {
  timing r = {0};
  gtimer tm;
  bool ok = false;
  if (!gt_init(&tm, raw)) goto done;
  /* 3 untimed calls (module loading, library handles, caches), then synchronized calls
   * for >= 10% of the budget, whose mean sets `inner`. */
  for (int i = 0; i < 3; i++) {
    fn(ctx);
    if (fail_msg[0] || !sync_device(raw)) goto done;
  }
  long calls = 0;
  double t0 = bench_now_s();
  while (calls < 3 || bench_now_s() - t0 < 0.1 * bench_budget_s) {
    fn(ctx);
    calls++;
    if (fail_msg[0] || !sync_device(raw)) goto done;
  }
  double per_call = (bench_now_s() - t0) / (double)calls;
  r.inner = per_call >= TRIAL_S ? 1 : (long)ceil(TRIAL_S / per_call);
  int n = (int)(bench_budget_s / (per_call * (double)r.inner));
  n = n < MIN_TRIALS ? MIN_TRIALS : n > MAX_TRIALS ? MAX_TRIALS : n;
  double times[MAX_TRIALS];
  long flt0 = bench_minor_faults();
  for (int s = 0; s < n; s++) {
    float ms = 0;
    if (!gt_record(&tm, 0)) goto done;
    for (long i = 0; i < r.inner; i++) fn(ctx);
    if (fail_msg[0] || !gt_record(&tm, 1) || !gt_elapsed_ms(&tm, &ms)) goto done;
    times[s] = 1e-3 * (double)ms / (double)r.inner;
  }
  r.minflt = (double)(bench_minor_faults() - flt0) / ((double)n * (double)r.inner);
  bench_summarize(&r, times, n);
  ok = sync_device(raw) && !fail_msg[0];
done:
  gt_free(&tm);
  *out = r;
  return ok;
}

/* Host time per op of fn (which issues `batch` ops): with sync_in_sample, a sample is
 * the batch and one synchronize; without, the queue is drained before each sample and
 * only the enqueueing is timed. */
static bool time_host_ops(bench_fn fn, void *ctx, long batch, bool sync_in_sample, timing *out) {
  timing r = {0};
  r.inner = batch;
  long calls = 0;
  double t0 = bench_now_s();
  while (calls < 3 || bench_now_s() - t0 < 0.1 * bench_budget_s) {
    fn(ctx);
    calls++;
    if (fail_msg[0] || !sync_device(false)) return false;
  }
  double per_sample = (bench_now_s() - t0) / (double)calls;
  int n = (int)(bench_budget_s / per_sample);
  n = n < MIN_TRIALS ? MIN_TRIALS : n > 200 ? 200 : n;
  double times[200];
  long flt0 = bench_minor_faults();
  for (int s = 0; s < n; s++) {
    if (!sync_in_sample && !sync_device(false)) return false;
    double s0 = bench_now_s();
    fn(ctx);
    if (sync_in_sample && !sync_device(false)) return false;
    times[s] = (bench_now_s() - s0) / (double)batch;
    if (fail_msg[0]) return false;
  }
  if (!sync_device(false)) return false;
  r.minflt = (double)(bench_minor_faults() - flt0) / ((double)n * (double)batch);
  bench_summarize(&r, times, n);
  *out = r;
  return true;
}

/* ---- Checks ------------------------------------------------------------------------ */

/* Elements start, start+step, ... < end of a 1-d tensor as f32 on the host (malloc'd;
 * *n of them), or NULL. */
static float *host_slice(const ct_tensor *t, int64_t start, int64_t end, int64_t step, int64_t *n) {
  ct_tensor *s = ct_slice(t, 0, start, end, step);
  ct_tensor *f = s ? ct_cast(s, CT_F32) : NULL;
  ct_tensor *c = f ? ct_contiguous(f) : NULL;
  float *buf = NULL;
  if (c) {
    *n = ct_numel(c);
    buf = malloc((size_t)*n * sizeof(float));
    if (buf && ct_copy_to_host(c, buf, (size_t)*n * sizeof(float)) != CT_OK) {
      free(buf);
      buf = NULL;
    }
  }
  ct_free(c);
  ct_free(f);
  ct_free(s);
  return buf;
}

/* r = a OP b on every SAMPLE_STEP-th element and on the last 4096 (exact f32). */
static bool check_binary(const ct_tensor *r, const ct_tensor *a, const ct_tensor *b, char op) {
  int64_t n = ct_numel(a);
  int64_t ranges[2][3] = {{0, n, SAMPLE_STEP}, {n - 4096, n, 1}};
  bool ok = true;
  for (int k = 0; k < 2 && ok; k++) {
    int64_t nr = 0, na = 0, nb = 0;
    float *hr = host_slice(r, ranges[k][0], ranges[k][1], ranges[k][2], &nr);
    float *ha = host_slice(a, ranges[k][0], ranges[k][1], ranges[k][2], &na);
    float *hb = host_slice(b, ranges[k][0], ranges[k][1], ranges[k][2], &nb);
    if (!hr || !ha || !hb || nr != na || nr != nb) {
      ct_fail("check: reading back");
      ok = false;
    }
    for (int64_t i = 0; ok && i < nr; i++) {
      float want = op == '+' ? ha[i] + hb[i] : ha[i] * hb[i];
      if (!(hr[i] == want)) {
        char msg[160];
        snprintf(msg, sizeof msg, "element %lld is %.9g, expected %.9g",
                 (long long)(ranges[k][0] + i * ranges[k][2]), hr[i], want);
        fail("wrong result", msg);
        ok = false;
      }
    }
    free(hr);
    free(ha);
    free(hb);
  }
  return ok;
}

/* ||C - A B|| / ||A B|| over 64 entries (8 rows x 8 columns), in double on the host. */
static bool check_matmul(const ct_tensor *a, const ct_tensor *b, const ct_tensor *c, double tol) {
  ct_tensor *a32 = ct_cast(a, CT_F32), *b32 = ct_cast(b, CT_F32), *c32 = ct_cast(c, CT_F32);
  float *rows[8] = {0}, *cols[8] = {0}, *crows[8] = {0};
  bool ok = a32 && b32 && c32;
  for (int k = 0; k < 8 && ok; k++) {
    int64_t i = (k * 1031 + 7) % N_MAT, j = (k * 2053 + 11) % N_MAT;
    ct_tensor *ra = ct_select(a32, 0, i), *rc = ct_select(c32, 0, i), *cb = ct_select(b32, 1, j);
    ct_tensor *ra_c = ra ? ct_contiguous(ra) : NULL, *rc_c = rc ? ct_contiguous(rc) : NULL,
              *cb_c = cb ? ct_contiguous(cb) : NULL;
    size_t bytes = N_MAT * sizeof(float);
    rows[k] = malloc(bytes);
    crows[k] = malloc(bytes);
    cols[k] = malloc(bytes);
    ok = ra_c && rc_c && cb_c && rows[k] && crows[k] && cols[k] &&
         ct_copy_to_host(ra_c, rows[k], bytes) == CT_OK &&
         ct_copy_to_host(rc_c, crows[k], bytes) == CT_OK &&
         ct_copy_to_host(cb_c, cols[k], bytes) == CT_OK;
    ct_free(ra); ct_free(rc); ct_free(cb); ct_free(ra_c); ct_free(rc_c); ct_free(cb_c);
  }
  if (!ok) ct_fail("check: reading back");
  double num = 0, den = 0;
  for (int ki = 0; ok && ki < 8; ki++) {
    for (int kj = 0; kj < 8; kj++) {
      int64_t j = (kj * 2053 + 11) % N_MAT;
      double ref = 0;
      for (int64_t p = 0; p < N_MAT; p++) ref += (double)rows[ki][p] * (double)cols[kj][p];
      double got = crows[ki][j];
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  }
  if (ok) {
    double err = sqrt(num / den);
    if (!(err <= tol)) { /* NaN fails too */
      char msg[120];
      snprintf(msg, sizeof msg, "relative error %.3g over 64 entries (tolerance %.1g)", err, tol);
      fail("wrong result", msg);
      ok = false;
    } else {
      fprintf(stderr, "bench_gpu: matmul check: relative error %.3g (tolerance %.1g)\n", err, tol);
    }
  }
  for (int k = 0; k < 8; k++) {
    free(rows[k]);
    free(cols[k]);
    free(crows[k]);
  }
  ct_free(a32);
  ct_free(b32);
  ct_free(c32);
  return ok;
}

/* ---- Large elementwise workloads: copy, add, mul, sum ---------------------------------- */

typedef struct big_ctx {
  ct_tensor *a, *b, *out;
  void *rsrc, *rdst; /* raw cudaMalloc'd buffers of the raw copy */
  char op;
} big_ctx;

static void run_ct_copy(void *p) {
  big_ctx *c = p;
  if (!ct_copy_(c->out, c->a)) ct_fail("ct_copy_");
}

static void run_raw_copy(void *p) {
  big_ctx *c = p;
  cuda_ok(cudaMemcpyAsync(c->rdst, c->rsrc, (size_t)N_BIG * sizeof(float), cudaMemcpyDeviceToDevice,
                          0),
          "cudaMemcpyAsync");
}

static void run_ct_binary(void *p) {
  big_ctx *c = p;
  ct_tensor *r = c->op == '+' ? ct_add(c->a, c->b) : ct_mul(c->a, c->b);
  if (!r) ct_fail(c->op == '+' ? "ct_add" : "ct_mul");
  ct_free(r);
}

static void run_ct_binary_out(void *p) {
  big_ctx *c = p;
  ct_tensor *r = c->op == '+' ? ct_add_out(c->out, c->a, c->b) : ct_mul_out(c->out, c->a, c->b);
  if (!r) ct_fail(c->op == '+' ? "ct_add_out" : "ct_mul_out");
}

static void run_ct_sum(void *p) {
  big_ctx *c = p;
  ct_tensor *s = ct_sum(c->a, NULL);
  if (!s) ct_fail("ct_sum");
  ct_free(s);
}

static void bench_copy(big_ctx *c, const char *w) {
  double gb = 2.0 * 4.0 * (double)N_BIG / 1e9;
  timing t = {0};
  /* ctensor: poison the destination, copy once, compare everything. */
  bool ok = ct_fill_(c->out, NAN) && ct_copy_(c->out, c->a);
  if (!ok) ct_fail("ct_copy_");
  else if (!ct_equal(c->out, c->a)) fail("wrong result", "ct_copy_: destination differs from source");
  else ok = time_device(run_ct_copy, c, false, &t);
  report(w, "ctensor", ok, t, "gbps", RATE, gb);

  /* Raw cudaMemcpyAsync between two cudaMalloc'd buffers holding the same data. */
  size_t bytes = (size_t)N_BIG * sizeof(float);
  float *h = malloc(bytes), *h2 = malloc(bytes);
  ok = h && h2 && cuda_ok(cudaMalloc(&c->rsrc, bytes), "cudaMalloc") &&
       cuda_ok(cudaMalloc(&c->rdst, bytes), "cudaMalloc");
  if (ok && ct_copy_to_host(c->a, h, bytes) != CT_OK) {
    ct_fail("ct_copy_to_host");
    ok = false;
  }
  ok = ok && cuda_ok(cudaMemcpy(c->rsrc, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy") &&
       cuda_ok(cudaMemset(c->rdst, 0xff, bytes), "cudaMemset");
  if (ok) run_raw_copy(c);
  ok = ok && !fail_msg[0] &&
       cuda_ok(cudaMemcpy(h2, c->rdst, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (ok && memcmp(h, h2, bytes) != 0) {
    fail("wrong result", "cudaMemcpyAsync: destination differs from source");
    ok = false;
  }
  if (ok) ok = time_device(run_raw_copy, c, true, &t);
  report(w, "cuda_memcpy", ok, t, "gbps", RATE, gb);
  free(h);
  free(h2);
  if (c->rsrc) cudaFree(c->rsrc);
  if (c->rdst) cudaFree(c->rdst);
  c->rsrc = c->rdst = NULL;
}

static void bench_binary(big_ctx *c, const char *w, char op, bool out) {
  c->op = op;
  timing t = {0};
  bool ok;
  ct_tensor *r = NULL;
  if (out) {
    ok = ct_fill_(c->out, NAN) &&
         (op == '+' ? ct_add_out(c->out, c->a, c->b) : ct_mul_out(c->out, c->a, c->b));
    if (!ok) ct_fail(w);
    else ok = check_binary(c->out, c->a, c->b, op);
  } else {
    r = op == '+' ? ct_add(c->a, c->b) : ct_mul(c->a, c->b);
    ok = r != NULL;
    if (!ok) ct_fail(w);
    else ok = check_binary(r, c->a, c->b, op);
    ct_free(r);
  }
  if (ok) ok = time_device(out ? run_ct_binary_out : run_ct_binary, c, false, &t);
  report(w, "ctensor", ok, t, "gbps", RATE, 3.0 * 4.0 * (double)N_BIG / 1e9);
}

/* out = a + b^T on (side, side) views of the flat arrays. Checked against the
 * CPU backend (b copied to the host whole, transposed there) at sampled rows,
 * so that no strided GPU kernel takes part in the check. */
static void run_ct_add_transposed(void *p) {
  big_ctx *c = p;
  if (!ct_add_out(c->out, c->a, c->b)) ct_fail("ct_add_out (transposed)");
}

/* Row `row` of a (side, side) tensor with contiguous rows, on the CPU. */
static ct_tensor *host_row(const ct_tensor *m, int64_t row) {
  ct_tensor *s = ct_slice(m, 0, row, row + 1, 1);
  ct_tensor *h = s ? ct_to(s, ct_cpu(), NULL) : NULL;
  ct_free(s);
  return h;
}

static void bench_add_transposed(big_ctx *flat, const char *w) {
  int64_t side = (int64_t)1 << (big_log2 / 2), shape[2] = {side, side};
  timing t = {0};
  ct_tensor *bv = ct_view(flat->b, shape, 2);
  big_ctx c = {ct_view(flat->a, shape, 2), bv ? ct_transpose(bv, 0, 1) : NULL,
               ct_view(flat->out, shape, 2), NULL, NULL, '+'};
  ct_free(bv);
  ct_tensor *hb = ct_to(flat->b, ct_cpu(), NULL), *hbv = hb ? ct_view(hb, shape, 2) : NULL,
            *hbt = hbv ? ct_transpose(hbv, 0, 1) : NULL;
  bool ok = c.a && c.b && c.out && hbt && ct_fill_(c.out, NAN) && ct_add_out(c.out, c.a, c.b);
  if (!ok) ct_fail(w);
  for (int64_t row = 0; ok && row < side; row += side / 8 + 1) {
    ct_tensor *got = host_row(c.out, row), *ha = host_row(c.a, row),
              *hbr = ct_slice(hbt, 0, row, row + 1, 1), *want = ha && hbr ? ct_add(ha, hbr) : NULL;
    ok = got && want && ct_equal(got, want);
    if (!ok) fail("wrong result", "ct_add_out of a transposed operand differs from the CPU's sum");
    ct_free(got);
    ct_free(ha);
    ct_free(hbr);
    ct_free(want);
  }
  ct_free(hbt);
  ct_free(hbv);
  ct_free(hb);
  if (ok) ok = time_device(run_ct_add_transposed, &c, false, &t);
  report(w, "ctensor", ok, t, "gbps", RATE, 3.0 * 4.0 * (double)N_BIG / 1e9);
  ct_free(c.a);
  ct_free(c.b);
  ct_free(c.out);
}

static void bench_sum(big_ctx *c, const char *w) {
  timing t = {0};
  double got = NAN, ref = NAN;
  ct_tensor *s = ct_sum(c->a, NULL);
  ct_tensor *a64 = ct_cast(c->a, CT_F64);
  ct_tensor *s64 = a64 ? ct_sum(a64, NULL) : NULL;
  bool ok = s && s64 && ct_item(s, &got) == CT_OK && ct_item(s64, &ref) == CT_OK;
  ct_free(s);
  ct_free(s64);
  ct_free(a64);
  if (!ok) {
    ct_fail("ct_sum");
  } else if (!(fabs(got - ref) <= 1e-5 * fabs(ref))) {
    char msg[120];
    snprintf(msg, sizeof msg, "ct_sum gives %.9g, the f64 sum %.9g", got, ref);
    fail("wrong result", msg);
    ok = false;
  } else {
    ok = time_device(run_ct_sum, c, false, &t);
  }
  report(w, "ctensor", ok, t, "gbps", RATE, 4.0 * (double)N_BIG / 1e9);
}

/* ---- Matrix products ------------------------------------------------------------------ */

typedef struct mm_ctx {
  ct_tensor *a, *b;
} mm_ctx;

static void run_ct_matmul(void *p) {
  mm_ctx *c = p;
  ct_tensor *r = ct_matmul(c->a, c->b);
  if (!r) ct_fail("ct_matmul");
  ct_free(r);
}

static void bench_matmul(const char *w, ct_dtype dt, double tol) {
  ct_tensor_opts o = {.dtype = dt, .device = dev};
  mm_ctx c = {ct_randn(CT_SHAPE(N_MAT, N_MAT), &o), ct_randn(CT_SHAPE(N_MAT, N_MAT), &o)};
  timing t = {0};
  ct_tensor *r = c.a && c.b ? ct_matmul(c.a, c.b) : NULL;
  bool ok = r != NULL;
  if (!ok) ct_fail("ct_matmul");
  else ok = check_matmul(c.a, c.b, r, tol);
  ct_free(r);
  if (ok) ok = time_device(run_ct_matmul, &c, false, &t);
  report(w, "ctensor", ok, t, "tflops", RATE, 2.0 * N_MAT * (double)N_MAT * N_MAT / 1e12);
  ct_free(c.a);
  ct_free(c.b);
}

/* ---- Per-op host cost ----------------------------------------------------------------- */

typedef struct small_ctx {
  ct_tensor *a, *b;
} small_ctx;

static void small_ops(small_ctx *c, long n) {
  for (long i = 0; i < n; i++) {
    ct_tensor *r = ct_add(c->a, c->b);
    if (!r) {
      ct_fail("ct_add");
      return;
    }
    ct_free(r);
  }
}
static void run_launch_loop(void *p) { small_ops(p, LAUNCH_LOOP); }
static void run_enqueue_batch(void *p) { small_ops(p, ENQUEUE_BATCH); }

static void bench_small(const char *only) {
  ct_tensor_opts o = {.device = dev};
  small_ctx c = {ct_full(CT_SHAPE(1), 1.0, &o), ct_full(CT_SHAPE(1), 2.0, &o)};
  ct_tensor *r = c.a && c.b ? ct_add(c.a, c.b) : NULL;
  double v = 0;
  bool ok = r && ct_item(r, &v) == CT_OK;
  ct_free(r);
  if (!ok) ct_fail("ct_add");
  else if (v != 3.0) fail("wrong result", "1 + 2 != 3");
  ok = !fail_msg[0];
  timing t = {0};
  if (bench_want(only, "gpu_launch_1elem_f32")) {
    bool k = ok && time_host_ops(run_launch_loop, &c, LAUNCH_LOOP, true, &t);
    report("gpu_launch_1elem_f32", "ctensor", k, t, "ns_per_op", SCALED, 1e9);
  }
  if (bench_want(only, "gpu_enqueue_1elem_f32")) {
    if (!ok) fail("ct_add", "failed");
    bool k = ok && time_host_ops(run_enqueue_batch, &c, ENQUEUE_BATCH, false, &t);
    report("gpu_enqueue_1elem_f32", "ctensor", k, t, "ns_per_op", SCALED, 1e9);
  }
  ct_free(c.a);
  ct_free(c.b);
}

/* ---- Host to device ------------------------------------------------------------------- */

typedef struct h2d_ctx {
  ct_tensor *pinned;
  void *hraw, *draw;
} h2d_ctx;

static void run_ct_h2d(void *p) {
  h2d_ctx *c = p;
  ct_tensor *d = ct_to(c->pinned, dev, &(ct_to_opts){.non_blocking = true});
  if (!d) ct_fail("ct_to");
  ct_free(d);
}

static void run_raw_h2d(void *p) {
  h2d_ctx *c = p;
  cuda_ok(cudaMemcpyAsync(c->draw, c->hraw, (size_t)N_H2D * sizeof(float), cudaMemcpyHostToDevice, 0),
          "cudaMemcpyAsync");
}

static void bench_h2d(const char *w) {
  size_t bytes = (size_t)N_H2D * sizeof(float);
  double gb = (double)bytes / 1e9;
  h2d_ctx c = {0};
  timing t = {0};
  ct_tensor *host = ct_rand(CT_SHAPE(N_H2D), NULL);
  c.pinned = host ? ct_pin_memory(host) : NULL;
  ct_free(host);
  bool ok = c.pinned && ct_is_pinned(c.pinned);
  if (!ok) {
    ct_fail("ct_pin_memory");
  } else {
    ct_tensor *d = ct_to(c.pinned, dev, &(ct_to_opts){.non_blocking = true});
    ct_tensor *back = d ? ct_to(d, ct_cpu(), NULL) : NULL;
    ok = back && ct_equal(back, c.pinned);
    if (!back) ct_fail("ct_to");
    else if (!ok) fail("wrong result", "ct_to: the device copy differs from the host tensor");
    ct_free(back);
    ct_free(d);
  }
  if (ok) ok = time_device(run_ct_h2d, &c, false, &t);
  report(w, "ctensor", ok, t, "gbps", RATE, gb);

  /* Raw: cudaHostAlloc'd source (the same data), cudaMalloc'd destination. */
  float *check = malloc(bytes);
  ok = c.pinned && check && cuda_ok(cudaHostAlloc(&c.hraw, bytes, cudaHostAllocDefault), "cudaHostAlloc") &&
       cuda_ok(cudaMalloc(&c.draw, bytes), "cudaMalloc");
  if (ok && ct_copy_to_host(c.pinned, c.hraw, bytes) != CT_OK) {
    ct_fail("ct_copy_to_host");
    ok = false;
  }
  ok = ok && cuda_ok(cudaMemset(c.draw, 0xff, bytes), "cudaMemset");
  if (ok) run_raw_h2d(&c);
  ok = ok && !fail_msg[0] && cuda_ok(cudaMemcpy(check, c.draw, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (ok && memcmp(check, c.hraw, bytes) != 0) {
    fail("wrong result", "cudaMemcpyAsync: the device copy differs from the host buffer");
    ok = false;
  }
  if (ok) ok = time_device(run_raw_h2d, &c, true, &t);
  report(w, "cuda_memcpy", ok, t, "gbps", RATE, gb);
  free(check);
  if (c.hraw) cudaFreeHost(c.hraw);
  if (c.draw) cudaFree(c.draw);
  ct_free(c.pinned);
}

/* ---- Main ------------------------------------------------------------------------------ */

static void print_gpu_meta(void) {
  struct cudaDeviceProp p;
  int drv = 0, rt = 0;
  size_t free_b = 0, total_b = 0;
  memset(&p, 0, sizeof p);
  cudaGetDeviceProperties(&p, 0);
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  cudaMemGetInfo(&free_b, &total_b);
  (void)cudaGetLastError();
  printf("{\"meta\":\"gpu\",\"name\":\"");
  for (const char *q = p.name; *q; q++) putchar(*q == '"' || *q == '\\' ? '\'' : *q);
  printf("\",\"cc\":\"%d.%d\",\"sms\":%d,\"mem_gib\":%.1f,\"free_gib\":%.1f,\"l2_mib\":%.1f,"
         "\"driver\":%d,\"runtime\":%d,\"tf32\":false}\n",
         p.major, p.minor, p.multiProcessorCount, (double)total_b / 1073741824.0,
         (double)free_b / 1073741824.0, (double)p.l2CacheSize / 1048576.0, drv, rt);
  fflush(stdout);
}

/* Takes --small out of argv (the rest goes to bench_init) and scales the sizes. */
static void parse_small(int *argc, char **argv) {
  int k = 1;
  for (int i = 1; i < *argc; i++) {
    if (strcmp(argv[i], "--small") == 0) {
      big_log2 = 18;
      N_MAT = 256;
      N_H2D = (int64_t)1 << 18; /* 1 MiB */
    } else {
      argv[k++] = argv[i];
    }
  }
  *argc = k;
}

int main(int argc, char **argv) {
  const char *only = NULL;
  parse_small(&argc, argv);
  int rc = bench_init(argc, argv, "bench_gpu", &only);
  if (rc) return rc;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0 || !ct_cuda_is_available()) {
    fprintf(stderr, "bench_gpu: no CUDA device (%s; ctensor: %s): nothing to measure\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
            ct_cuda_is_available() ? "available" : "no usable GPU");
    return 77;
  }
  dev = ct_cuda(0);
  ct_cuda_set_allow_tf32(false); /* the default; stated for the f32 products */
  ct_manual_seed(1234);
  print_gpu_meta();

  /* The workload names, which carry the sizes. */
  enum { COPY, ADD, ADD_OUT, MUL, MUL_OUT, SUM, ADD_T, N_BIG_WORK };
  static const char *const big_kind[N_BIG_WORK] = {"copy",    "add", "add_out",       "mul",
                                                   "mul_out", "sum", "add_transposed"};
  char big[N_BIG_WORK][64], mm[3][64], h2d[64];
  static const char *const mm_type[3] = {"f16", "bf16", "f32"};
  for (int i = 0; i < N_BIG_WORK; i++) snprintf(big[i], sizeof big[i], "gpu_%s_2p%d_f32", big_kind[i], big_log2);
  for (int i = 0; i < 3; i++) snprintf(mm[i], sizeof mm[i], "gpu_matmul_%lld_%s", (long long)N_MAT, mm_type[i]);
  snprintf(h2d, sizeof h2d, "gpu_h2d_%lldMiB_pinned", (long long)(N_H2D * 4 >> 20));

  bool any_big = false;
  for (int i = 0; i < N_BIG_WORK; i++) any_big |= bench_want(only, big[i]) != 0;
  if (any_big) {
    ct_tensor_opts o = {.device = dev};
    big_ctx c = {ct_rand(CT_SHAPE(N_BIG), &o), ct_rand(CT_SHAPE(N_BIG), &o),
                 ct_empty(CT_SHAPE(N_BIG), &o), NULL, NULL, '+'};
    if (!c.a || !c.b || !c.out) {
      fprintf(stderr, "bench_gpu: allocating 3 x %lld MiB: %s\n", (long long)(N_BIG * 4 >> 20),
              ct_last_error_message());
      for (int i = 0; i < N_BIG_WORK; i++)
        if (bench_want(only, big[i])) emit_error(big[i], "ctensor", ct_last_error_message());
      ct_clear_error();
    } else {
      if (bench_want(only, big[COPY])) bench_copy(&c, big[COPY]);
      if (bench_want(only, big[ADD])) bench_binary(&c, big[ADD], '+', false);
      if (bench_want(only, big[ADD_OUT])) bench_binary(&c, big[ADD_OUT], '+', true);
      if (bench_want(only, big[MUL])) bench_binary(&c, big[MUL], '*', false);
      if (bench_want(only, big[MUL_OUT])) bench_binary(&c, big[MUL_OUT], '*', true);
      if (bench_want(only, big[SUM])) bench_sum(&c, big[SUM]);
      if (bench_want(only, big[ADD_T])) bench_add_transposed(&c, big[ADD_T]);
    }
    ct_free(c.a);
    ct_free(c.b);
    ct_free(c.out);
    ct_cuda_empty_cache();
  }
  /* Tolerances of ||C - AB|| / ||AB|| against f64 products of the same (rounded)
   * inputs: f32 accumulation gives ~1e-6 (TF32 would give ~5e-4), f16 and bf16 add
   * the rounding of the output (~3e-4, ~2e-3). */
  if (bench_want(only, mm[0])) bench_matmul(mm[0], CT_F16, 2e-3);
  if (bench_want(only, mm[1])) bench_matmul(mm[1], CT_BF16, 1e-2);
  if (bench_want(only, mm[2])) bench_matmul(mm[2], CT_F32, 1e-4);
  ct_cuda_empty_cache();
  if (bench_want(only, "gpu_launch_1elem_f32") || bench_want(only, "gpu_enqueue_1elem_f32"))
    bench_small(only);
  if (bench_want(only, h2d)) bench_h2d(h2d);
  return 0;
}
