/* Distributed data parallel over MPI, run by ctest as `mpiexec -n 2
 * test_dist` (tests/CMakeLists.txt): all_reduce (sum, avg, max, min) and
 * broadcast for every dtype, coalesced all-reduce, errors, data sharding
 * across real ranks, and data-parallel training of a small MLP that must end
 * with the same parameters on every rank and the same as one process training
 * on whole batches. Exits 77 (skipped) in a build without MPI or when not
 * started by a launcher. A standalone main (not ct_test.c's): MPI needs
 * init and finalize around all tests. Works with any world size that divides
 * the training batch (24).
 *
 * `test_dist --stall` checks the collectives' time limit instead (run by
 * check_dist_stall.sh): rank 1 stops itself (SIGSTOP) before an all-reduce,
 * and rank 0, with a limit of a few seconds, must end the job with a message
 * naming rank 1 rather than wait forever. */
#define _POSIX_C_SOURCE 200809L
#include <ctensor.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, world, failures;

#define CHECK(cond)                                                                               \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed (%s)\n", rank, __FILE__, __LINE__, #cond, \
              ct_last_error_message());                                                           \
      failures++;                                                                                 \
    }                                                                                             \
  } while (0)
#define CHECK_MSG(cond, ...)                                         \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, "\n");                                         \
      failures++;                                                    \
    }                                                                \
  } while (0)
/* expr must fail with code and a message containing needle. */
#define CHECK_FAILS(expr, code, needle)                                                       \
  do {                                                                                        \
    ct_clear_error();                                                                         \
    ct_status st_ = (expr);                                                                   \
    CHECK_MSG(st_ == (code) && strstr(ct_last_error_message(), needle),                       \
              "%s: expected %s with \"%s\", got %s: %s", #expr, ct_status_name(code), needle, \
              ct_status_name(st_), ct_last_error_message());                                  \
    ct_clear_error();                                                                         \
  } while (0)

/* Elements of t as doubles (row-major), into out (numel of them). */
static void values(const ct_tensor *t, double *out) {
  ct_tensor *d = ct_cast(t, CT_F64);
  if (!d || ct_copy_to_host(d, out, sizeof(double) * (size_t)ct_numel(t)) != CT_OK) {
    for (int64_t i = 0; i < ct_numel(t); i++) out[i] = NAN;
  }
  ct_free(d);
}

/* A (2, 3) tensor of dtype dt on rank r: element i is v(r, i); through a
 * transposed (3, 2) buffer when strided, so that it is not contiguous. */
static double v(int r, int i, ct_dtype dt) {
  if (dt == CT_BOOL) return (double)((r + i) % 3 == 0); /* i=0: rank 0 only ... */
  return (double)((r + 1) * (i + 1) % 7) - (ct_dtype_is_floating(dt) || dt == CT_I8 ? 2 : 0);
}
static ct_tensor *make(int r, ct_dtype dt, bool strided) {
  double h[6];
  for (int i = 0; i < 6; i++) h[i] = v(r, i, dt);
  ct_tensor *t64 = ct_from_data(h, CT_SHAPE(2, 3), &(ct_tensor_opts){.dtype = CT_F64});
  ct_tensor *t = ct_cast(t64, dt);
  ct_free(t64);
  if (!strided) return t;
  ct_tensor *buf = ct_contiguous(ct_t(t)); /* (3, 2) */
  ct_tensor *view = ct_t(buf);             /* (2, 3), strides (1, 2) */
  ct_free(t);
  ct_free(buf);
  return view;
}

static const ct_dtype all_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8,
                                      CT_U8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
#define N_DTYPES (int)(sizeof all_dtypes / sizeof all_dtypes[0])

static void test_all_reduce(void) {
  for (int di = 0; di < N_DTYPES; di++)
    for (int op = CT_DIST_SUM; op <= CT_DIST_MIN; op++)
      for (int strided = 0; strided < 2; strided++) {
        ct_dtype dt = all_dtypes[di];
        if (op == CT_DIST_AVG && !ct_dtype_is_floating(dt)) continue;
        ct_scope_begin();
        ct_tensor *t = make(rank, dt, strided);
        CHECK(t && ct_is_contiguous(t) == !strided);
        uint32_t version = ct_version(t);
        ct_status st = ct_dist_all_reduce_(t, (ct_dist_op)op);
        CHECK_MSG(st == CT_OK, "all_reduce %s op %d: %s", ct_dtype_name(dt), op,
                  ct_last_error_message());
        CHECK(ct_version(t) != version);
        double got[6];
        values(t, got);
        for (int i = 0; i < 6; i++) {
          double s = 0, mx = -INFINITY, mn = INFINITY;
          for (int r = 0; r < world; r++) {
            double x = v(r, i, dt);
            s += x;
            mx = fmax(mx, x);
            mn = fmin(mn, x);
          }
          double want = op == CT_DIST_SUM   ? (dt == CT_BOOL ? mx : s)
                        : op == CT_DIST_AVG ? s / world
                        : op == CT_DIST_MAX ? mx
                                            : mn;
          /* the average is rounded to the dtype (exact for 2 and 4 ranks) */
          double tol = op != CT_DIST_AVG ? 0
                       : dt == CT_F16    ? 1e-3
                       : dt == CT_BF16   ? 8e-3
                       : dt == CT_F32    ? 1e-7
                                         : 1e-15;
          CHECK_MSG(fabs(got[i] - want) <= tol * fabs(want),
                    "all_reduce %s op %d strided %d [%d]: got %g, want %g", ct_dtype_name(dt), op,
                    strided, i, got[i], want);
        }
        ct_scope_end();
      }
}

static void test_broadcast(void) {
  for (int root = 0; root < world; root++)
    for (int di = 0; di < N_DTYPES; di++)
      for (int strided = 0; strided < 2; strided++) {
        ct_dtype dt = all_dtypes[di];
        ct_scope_begin();
        ct_tensor *t = make(rank, dt, strided);
        CHECK(ct_dist_broadcast_(t, root) == CT_OK);
        double got[6];
        values(t, got);
        for (int i = 0; i < 6; i++)
          CHECK_MSG(got[i] == v(root, i, dt), "broadcast %s from %d [%d]: got %g, want %g",
                    ct_dtype_name(dt), root, i, got[i], v(root, i, dt));
        ct_scope_end();
      }
  /* a leaf that requires grad (a parameter) can be written */
  ct_scope_begin();
  ct_tensor *w = ct_full(CT_SHAPE(4), rank + 1.0, &(ct_tensor_opts){.requires_grad = true});
  CHECK(ct_dist_broadcast_(w, 0) == CT_OK);
  CHECK(ct_dist_all_reduce_(w, CT_DIST_SUM) == CT_OK);
  double got[4];
  values(w, got);
  CHECK(got[3] == world && ct_requires_grad(w) && ct_is_leaf(w));
  ct_scope_end();
}

static void test_coalesced(void) {
  ct_scope_begin();
  ct_tensor *ts[6] = {make(rank, CT_F32, false), make(rank, CT_F64, false),
                      make(rank, CT_F32, true),  NULL,
                      make(rank, CT_I32, false), make(rank, CT_F16, true)};
  CHECK(ct_dist_all_reduce_coalesced_(ts, 6, CT_DIST_SUM) == CT_OK);
  const ct_dtype dts[6] = {CT_F32, CT_F64, CT_F32, CT_F32, CT_I32, CT_F16};
  for (int k = 0; k < 6; k++) {
    if (!ts[k]) continue;
    double got[6];
    values(ts[k], got);
    for (int i = 0; i < 6; i++) {
      double s = 0;
      for (int r = 0; r < world; r++) s += v(r, i, dts[k]);
      CHECK_MSG(got[i] == s, "coalesced tensor %d [%d]: got %g, want %g", k, i, got[i], s);
    }
  }
  CHECK(ct_dist_all_reduce_coalesced_(ts, 0, CT_DIST_AVG) == CT_OK);
  ct_scope_end();
}

static void test_errors(void) {
  ct_scope_begin();
  ct_tensor *i = ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_I32});
  CHECK_FAILS(ct_dist_all_reduce_(i, CT_DIST_AVG), CT_ERR_DTYPE, "dist_all_reduce_: op avg");
  CHECK_FAILS(ct_dist_all_reduce_(i, (ct_dist_op)7), CT_ERR_ARG, "unknown reduce op");
  CHECK_FAILS(ct_dist_all_reduce_(NULL, CT_DIST_SUM), CT_ERR_ARG, "NULL");
  CHECK_FAILS(ct_dist_broadcast_(i, world), CT_ERR_ARG, "outside 0..");
  CHECK_FAILS(ct_dist_broadcast_(i, -1), CT_ERR_ARG, "root -1");
  CHECK_FAILS(ct_dist_init(NULL), CT_ERR_STATE, "already initialized");
  CHECK_FAILS(ct_dist_average_gradients(NULL), CT_ERR_ARG, "module is NULL");
  /* modules of different structure are refused on every rank, before any
   * collective that would mismatch */
  ct_module *m = ct_linear_new(3, rank == 0 ? 2 : 4, true, NULL);
  if (world > 1) {
    CHECK_FAILS(ct_dist_broadcast_module_(m, 0), CT_ERR_STATE, "differs across ranks");
  }
  ct_module_free(m);
  ct_module *seq = ct_sequential_new();
  ct_sequential_add(seq, ct_linear_new(2, 2, true, NULL));
  if (rank == 0) ct_sequential_add(seq, ct_linear_new(2, 2, false, NULL));
  if (world > 1) {
    CHECK_FAILS(ct_dist_average_gradients(seq), CT_ERR_STATE, "different numbers of parameters");
  }
  ct_module_free(seq);
  /* the group still works afterwards */
  CHECK(ct_dist_all_reduce_(i, CT_DIST_SUM) == CT_OK);
  CHECK(ct_dist_barrier() == CT_OK);
  ct_scope_end();
}

/* A parameter with a gradient on rank 0 only: the others contribute zeros;
 * one with a gradient nowhere stays without. */
static void test_missing_grads(void) {
  ct_scope_begin();
  ct_module *lin = ct_linear_new(2, 2, true, NULL);
  ct_tensor *w = ct_module_get(lin, "weight"), *b = ct_module_get(lin, "bias");
  if (rank == 0) CHECK(ct_set_grad(w, ct_ones(CT_SHAPE(2, 2), NULL)) == CT_OK);
  CHECK(ct_dist_average_gradients(lin) == CT_OK);
  CHECK(ct_grad(w) != NULL && ct_grad(b) == NULL);
  if (ct_grad(w)) {
    double got[4];
    values(ct_grad(w), got);
    CHECK_MSG(fabs(got[0] - 1.0 / world) < 1e-7, "missing grads: got %g, want %g", got[0],
              1.0 / world);
  }
  ct_module_free(lin);
  ct_scope_end();
}

/* Each rank's shard of a shuffled order: equal lengths, disjoint, covering. */
static void test_sharding(void) {
  enum { N = 13 };
  ct_scope_begin();
  ct_tensor *x = ct_zeros(CT_SHAPE(N, 1), NULL);
  ct_tensor *y = ct_arange(0, N, 1, &(ct_tensor_opts){.dtype = CT_I64});
  ct_dataset *d = ct_tensor_dataset_new(x, y);
  ct_dataloader *dl =
      ct_dataloader_new(d, &(ct_dataloader_opts){.batch_size = 2,
                                                 .shuffle = true,
                                                 .seed = 5,
                                                 .num_workers = 1,
                                                 .shard_rank = ct_dist_rank(),
                                                 .shard_count = ct_dist_world_size()});
  CHECK(dl != NULL);
  ct_tensor *count = ct_zeros(CT_SHAPE(N), &(ct_tensor_opts){.dtype = CT_I64});
  int64_t *c = ct_data_ptr(count), mine = 0;
  ct_batch bt;
  CHECK(ct_dataloader_start_epoch(dl, 3, 0) == CT_OK);
  while (ct_dataloader_next(dl, &bt) == CT_OK && bt.inputs) {
    const int64_t *idx = ct_data_ptr(bt.targets);
    for (int64_t i = 0; i < ct_numel(bt.targets); i++, mine++) c[idx[i]]++;
    ct_batch_release(&bt);
  }
  int64_t per_rank = (N + world - 1) / world;
  CHECK(mine == per_rank);
  ct_tensor *lens = ct_full(CT_SHAPE(2), (double)mine, &(ct_tensor_opts){.dtype = CT_I64});
  int64_t *l = ct_data_ptr(lens);
  l[1] = -mine;
  CHECK(ct_dist_all_reduce_(lens, CT_DIST_MAX) == CT_OK);
  CHECK_MSG(l[0] == -l[1], "shard lengths differ across ranks: %lld to %lld", (long long)-l[1],
            (long long)l[0]);
  CHECK(ct_dist_all_reduce_(count, CT_DIST_SUM) == CT_OK);
  int64_t total = 0, twice = 0;
  for (int i = 0; i < N; i++) {
    CHECK_MSG(c[i] >= 1 && c[i] <= 2, "index %d taken %lld times", i, (long long)c[i]);
    total += c[i];
    twice += c[i] == 2;
  }
  CHECK(total == per_rank * world && twice == per_rank * world - N); /* padding only */
  ct_dataloader_free(dl);
  ct_dataset_free(d);
  ct_scope_end();
}

/* ---- Data-parallel training ------------------------------------------------ */

static ct_module *mlp(ct_dtype dt, uint64_t seed) {
  ct_generator *gen = ct_generator_new(seed);
  ct_module_opts o = {.dtype = dt, .generator = gen};
  ct_module *m = ct_sequential_new();
  ct_sequential_add(m, ct_linear_new(4, 16, true, &o));
  ct_sequential_add(m, ct_tanh_new());
  ct_sequential_add(m, ct_linear_new(16, 3, true, &o));
  ct_generator_free(gen);
  return m;
}

static ct_optimizer *sgd(ct_module *m) {
  ct_tensor *ps[8];
  int n = ct_module_parameters(m, ps, NULL, 8);
  return ct_sgd_new(ps, n, &(ct_sgd_opts){.lr = 0.2, .momentum = 0.9});
}

/* One step on rows [lo, hi) of the batch (X, Y); how = 0: average the
 * gradients with ct_dist_average_gradients, 1: sum them (wrong, for the
 * control), 2: no communication (one process). */
static void step(ct_module *m, ct_optimizer *opt, const ct_tensor *X, const ct_tensor *Y,
                 int64_t lo, int64_t hi, int how) {
  ct_scope_begin();
  ct_module_zero_grad(m);
  ct_tensor *x = ct_narrow(X, 0, lo, hi - lo), *y = ct_narrow(Y, 0, lo, hi - lo);
  ct_tensor *loss = ct_mse_loss(ct_module_forward(m, x), y, NULL);
  CHECK(ct_backward(loss, NULL, NULL) == CT_OK);
  if (how == 0) CHECK(ct_dist_average_gradients(m) == CT_OK);
  if (how == 1) {
    ct_tensor *ps[8], *gs[8];
    int n = ct_module_parameters(m, ps, NULL, 8);
    for (int i = 0; i < n; i++) gs[i] = ct_grad(ps[i]);
    CHECK(ct_dist_all_reduce_coalesced_(gs, n, CT_DIST_SUM) == CT_OK);
  }
  CHECK(ct_optimizer_step(opt) == CT_OK);
  ct_scope_end();
}

/* max |a - b| / max |b| over all parameters. */
static double rel_diff(ct_module *a, ct_module *b) {
  ct_tensor *pa[8], *pb[8];
  int n = ct_module_parameters(a, pa, NULL, 8);
  CHECK(ct_module_parameters(b, pb, NULL, 8) == n);
  double num = 0, den = 0;
  for (int k = 0; k < n; k++) {
    int64_t m = ct_numel(pa[k]);
    double *x = malloc(sizeof(double) * (size_t)m), *y = malloc(sizeof(double) * (size_t)m);
    values(pa[k], x);
    values(pb[k], y);
    for (int64_t i = 0; i < m; i++) {
      num = fmax(num, fabs(x[i] - y[i]));
      den = fmax(den, fabs(y[i]));
    }
    free(x);
    free(y);
  }
  return den > 0 ? num / den : num;
}

static void test_training(ct_dtype dt, double tol) {
  enum { B = 24, STEPS = 10 };
  ct_scope_begin();
  ct_generator *gen = ct_generator_new(123);
  ct_tensor_opts o = {.dtype = dt, .generator = gen};
  /* the same batches on every rank; each rank trains on its 1/world of each */
  ct_tensor *X[STEPS], *Y[STEPS];
  for (int s = 0; s < STEPS; s++) {
    X[s] = ct_randn(CT_SHAPE(B, 4), &o);
    Y[s] = ct_randn(CT_SHAPE(B, 3), &o);
  }
  ct_generator_free(gen);
  /* different initial weights per rank: the broadcast must make them equal */
  ct_module *dp = mlp(dt, 1000 + (uint64_t)rank), *wrong = mlp(dt, 1000 + (uint64_t)rank);
  ct_module *ref = mlp(dt, 1000);
  CHECK(ct_dist_broadcast_module_(dp, 0) == CT_OK);
  CHECK(ct_dist_broadcast_module_(wrong, 0) == CT_OK);
  CHECK(rel_diff(dp, ref) == 0);
  ct_optimizer *o_dp = sgd(dp), *o_wrong = sgd(wrong), *o_ref = sgd(ref);
  int64_t part = B / world, lo = rank * part;
  for (int s = 0; s < STEPS; s++) {
    step(dp, o_dp, X[s], Y[s], lo, lo + part, 0);
    step(wrong, o_wrong, X[s], Y[s], lo, lo + part, 1);
    step(ref, o_ref, X[s], Y[s], 0, B, 2);
  }
  double vs_ref = rel_diff(dp, ref);
  CHECK_MSG(vs_ref < tol, "%s: data parallel vs one process: relative difference %.3g (tol %.1g)",
            ct_dtype_name(dt), vs_ref, tol);
  /* the parameters are bitwise the same on every rank */
  ct_module *r0 = mlp(dt, 99);
  ct_tensor *pd[8], *p0[8];
  int n = ct_module_parameters(dp, pd, NULL, 8);
  ct_module_parameters(r0, p0, NULL, 8);
  ct_no_grad_begin();
  for (int k = 0; k < n; k++) CHECK(ct_copy_(p0[k], pd[k]) != NULL);
  ct_no_grad_end();
  CHECK(ct_dist_broadcast_module_(r0, 0) == CT_OK);
  double vs_rank0 = rel_diff(dp, r0);
  CHECK_MSG(vs_rank0 == 0, "%s: parameters differ from rank 0's by %.3g", ct_dtype_name(dt),
            vs_rank0);
  /* control: summing instead of averaging is caught */
  double vs_wrong = rel_diff(wrong, ref);
  if (world > 1)
    CHECK_MSG(vs_wrong > 100 * tol, "%s: summed gradients were not told apart (%.3g)",
              ct_dtype_name(dt), vs_wrong);
  if (rank == 0)
    printf("training %s, %d ranks: vs one process %.3g, vs rank 0 %.3g, summing instead %.3g\n",
           ct_dtype_name(dt), world, vs_ref, vs_rank0, vs_wrong);
  ct_optimizer_free(o_dp);
  ct_optimizer_free(o_wrong);
  ct_optimizer_free(o_ref);
  ct_module_free(dp);
  ct_module_free(wrong);
  ct_module_free(ref);
  ct_module_free(r0);
  ct_scope_end();
}

/* Never returns on a working build: rank 1 stops, rank 0 times out and ends
 * the job (check_dist_stall.sh checks its message). */
static int stall(void) {
  if (ct_dist_init(&(ct_dist_opts){.timeout_s = 5}) != CT_OK) {
    fprintf(stderr, "dist_init: %s\n", ct_last_error_message());
    return 1;
  }
  rank = ct_dist_rank();
  CHECK(ct_dist_barrier() == CT_OK); /* both ranks are up */
  ct_tensor *t = ct_ones(CT_SHAPE(1000), NULL);
  if (rank == 1) raise(SIGSTOP);
  ct_status st = ct_dist_all_reduce_(t, CT_DIST_SUM);
  fprintf(stderr, "rank %d: the all-reduce returned (%s) though rank 1 is stopped\n", rank,
          ct_status_name(st));
  return 1;
}

int main(int argc, char **argv) {
  if (!ct_dist_is_available()) {
    printf("skipped: ctensor was built without MPI (%s)\n", ct_build_info());
    return 77;
  }
  if (ct_dist_env_world_size() < 2) {
    printf("skipped: start it with an MPI launcher, e.g. mpirun -np 2 test_dist\n");
    return 77;
  }
  if (argc > 1 && strcmp(argv[1], "--stall") == 0) return stall();
  /* A bad time limit is refused before MPI is touched. */
  CHECK_FAILS(ct_dist_init(&(ct_dist_opts){.timeout_s = -1}), CT_ERR_ARG, "timeout_s");
  setenv("CT_DIST_TIMEOUT", "soon", 1);
  CHECK_FAILS(ct_dist_init(NULL), CT_ERR_ARG, "CT_DIST_TIMEOUT='soon'");
  unsetenv("CT_DIST_TIMEOUT");
  CHECK(!ct_dist_is_initialized());
  if (ct_dist_init(NULL) != CT_OK) {
    fprintf(stderr, "dist_init: %s\n", ct_last_error_message());
    return 1;
  }
  rank = ct_dist_rank();
  world = ct_dist_world_size();
  CHECK(world == ct_dist_env_world_size() && rank >= 0 && rank < world);
  CHECK(ct_dist_is_initialized() && ct_dist_get_backend() == CT_DIST_BACKEND_MPI);
  CHECK(ct_dist_local_rank() >= 0 && ct_dist_local_rank() < world);
  test_all_reduce();
  test_broadcast();
  test_coalesced();
  test_errors();
  test_missing_grads();
  test_sharding();
  test_training(CT_F32, 1e-5);
  test_training(CT_F64, 1e-12);
  CHECK(ct_dist_barrier() == CT_OK);
  /* every rank reports the job's outcome */
  ct_tensor *f = ct_full(CT_SHAPE(1), failures, &(ct_tensor_opts){.dtype = CT_I64});
  int64_t total = ct_dist_all_reduce_(f, CT_DIST_SUM) == CT_OK ? *(int64_t *)ct_data_ptr(f) : -1;
  ct_free(f);
  CHECK(ct_dist_finalize() == CT_OK);
  CHECK(!ct_dist_is_initialized() && ct_dist_world_size() == 1);
  if (rank == 0) printf("test_dist: %d ranks, %lld failed checks\n", world, (long long)total);
  return failures || total != 0 ? 1 : 0;
}
