/* ct_use_deterministic_algorithms: the flag round-trips, and with it on the
 * ops that write with atomics on CUDA (scatter_add, index_put with
 * accumulate, and what is built on them: embedding's backward, bincount)
 * and the plain writes with repeated indices (scatter, index_put) give the
 * same bits on every call, equal to the CPU's (which adds in source order),
 * for f32/f64/f16/bf16 and integers, 1-d and n-d, many repeated indices, an
 * all-same index and an empty one. On the emulated GPU blocks run in
 * shuffled orders, so an order-dependent sum would show; there the test also
 * counts kernel launches to see that the flag switches paths. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* The emulated GPU's call counts (tests/cuda_emu/lib/emu_calls.h), absent
 * (NULL) elsewhere. */
extern long emu_calls(const char *name) __attribute__((weak));
extern void emu_calls_reset(void) __attribute__((weak));

static const ct_dtype float_dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16};

/* Sets the flag for a test and gives back the previous setting. */
static bool deterministic(bool on) {
  bool was = ct_are_deterministic_algorithms_enabled();
  ct_use_deterministic_algorithms(on);
  return was;
}

/* n values of mixed magnitudes (2^-8 .. 2^8): their float sums depend on the
 * order of the additions. */
static double *mixed_values(int64_t n, unsigned seed) {
  double *v = ct_test_random(n, -1, 1, seed), *e = ct_test_random(n, -8, 8, seed + 1);
  for (int64_t i = 0; i < n; i++) v[i] = ldexp(v[i], (int)floor(e[i]));
  free(e);
  return v;
}

/* n indices in [0, size). */
static ct_tensor *random_index(int64_t n, int64_t size, const int64_t *shape, int nd,
                               unsigned seed) {
  double *v = ct_test_random(n, 0, (double)size, seed);
  for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
  ct_tensor *t = ct_test_make(v, shape, nd, CT_I64, CT_LAYOUT_CONTIG);
  free(v);
  return t;
}

static ct_tensor *on_cpu(const ct_tensor *t) { return ct_to(t, ct_cpu(), NULL); }

/* a and b hold the same bits (their values as doubles compared bytewise:
 * halves and f32 convert exactly, -0 and 0 differ). */
static bool same_bits(const ct_tensor *a, const ct_tensor *b) {
  if (!a || !b || ct_numel(a) != ct_numel(b)) return false;
  double *va = ct_test_values(a), *vb = ct_test_values(b);
  bool same = memcmp(va, vb, sizeof(double) * (size_t)ct_numel(a)) == 0;
  free(va);
  free(vb);
  return same;
}

/* dev_expr three times on the device under test: the same bits every time,
 * and those of cpu_expr (the same op with its operands on the CPU). */
#define CHECK_REPEATS_LIKE_CPU(what, dev_expr, cpu_expr)                                   \
  do {                                                                                     \
    ct_tensor *first_ = (dev_expr);                                                        \
    CHECK_OK(first_);                                                                      \
    for (int rep_ = 0; rep_ < 2; rep_++)                                                   \
      CHECK_MSG(same_bits(first_, (dev_expr)), "%s: call %d differs from the first", what, \
                rep_ + 2);                                                                 \
    CHECK_MSG(same_bits(first_, (cpu_expr)), "%s: differs from the CPU", what);            \
  } while (0)

CT_TEST(flag_round_trips) {
  bool was = deterministic(true);
  CHECK(ct_are_deterministic_algorithms_enabled());
  ct_use_deterministic_algorithms(false);
  CHECK(!ct_are_deterministic_algorithms_enabled());
  ct_use_deterministic_algorithms(true);
  ct_use_deterministic_algorithms(true);
  CHECK(ct_are_deterministic_algorithms_enabled());
  deterministic(was);
}

CT_TEST(scatter_add_repeated_indices) {
  bool was = deterministic(true);
  for (size_t di = 0; di < sizeof float_dtypes / sizeof float_dtypes[0]; di++) {
    ct_dtype dt = float_dtypes[di];
    /* n-d along dim 0 and dim 1: 300 sources into 5 rows / 3 columns */
    double *sv = mixed_values(300 * 6, 1), *xv = mixed_values(5 * 6, 3);
    ct_tensor *x = ct_test_make(xv, CT_SHAPE(5, 6), dt, CT_LAYOUT_CONTIG);
    ct_tensor *src = ct_test_make(sv, CT_SHAPE(300, 6), dt, CT_LAYOUT_TRANSPOSED);
    ct_tensor *ix = random_index(300 * 6, 5, CT_SHAPE(300, 6), 5);
    ct_tensor *xc = on_cpu(x), *sc = on_cpu(src), *ic = on_cpu(ix);
    CHECK_REPEATS_LIKE_CPU("scatter_add dim 0", ct_scatter_add(x, 0, ix, src),
                           ct_scatter_add(xc, 0, ic, sc));
    ct_tensor *src1 = ct_test_make(sv, CT_SHAPE(6, 300), dt, CT_LAYOUT_CONTIG);
    ct_tensor *ix1 = random_index(6 * 300, 3, CT_SHAPE(6, 300), 7);
    ct_tensor *x1 = ct_test_make(xv, CT_SHAPE(6, 3), dt, CT_LAYOUT_SLICED);
    ct_tensor *x1c = on_cpu(x1), *s1c = on_cpu(src1), *i1c = on_cpu(ix1);
    CHECK_REPEATS_LIKE_CPU("scatter_add dim 1", ct_scatter_add(x1, 1, ix1, src1),
                           ct_scatter_add(x1c, 1, i1c, s1c));
    /* 1-d: 2000 sources into 4 elements; all into one */
    ct_tensor *v = ct_test_make(sv, CT_SHAPE(1800), dt, CT_LAYOUT_CONTIG), *vc = on_cpu(v);
    ct_tensor *z =
        ct_zeros(CT_SHAPE(4), &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
    ct_tensor *zc = on_cpu(z), *i4 = random_index(1800, 4, CT_SHAPE(1800), 9), *i4c = on_cpu(i4);
    CHECK_REPEATS_LIKE_CPU("scatter_add 1-d", ct_scatter_add(z, 0, i4, v),
                           ct_scatter_add(zc, 0, i4c, vc));
    ct_tensor *same =
        ct_zeros(CT_SHAPE(1800), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
    ct_tensor *samec = on_cpu(same);
    CHECK_REPEATS_LIKE_CPU("scatter_add all-same index", ct_scatter_add(z, 0, same, v),
                           ct_scatter_add(zc, 0, samec, vc));
    /* an empty index leaves x as it was */
    ct_tensor *e =
        ct_empty(CT_SHAPE(0, 6), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
    ct_tensor *es =
        ct_empty(CT_SHAPE(0, 6), &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
    CHECK(same_bits(ct_scatter_add(x, 0, e, es), x));
    free(sv);
    free(xv);
  }
  deterministic(was);
}

CT_TEST(scatter_add_integers_and_bool) {
  bool was = deterministic(true);
  const ct_dtype dts[] = {CT_I8, CT_U8, CT_I16, CT_I32, CT_I64, CT_BOOL};
  double *sv = ct_test_random(500, 0, 100, 11);
  for (int64_t i = 0; i < 500; i++) sv[i] = floor(sv[i]) - (i % 3 == 0 ? 0 : 60);
  for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
    ct_dtype dt = dts[di];
    double sb[500];
    memcpy(sb, sv, sizeof sb);
    if (dt == CT_U8 || dt == CT_BOOL)
      for (int i = 0; i < 500; i++) sb[i] = fabs(sb[i]) < 30 ? 0 : fabs(sb[i]);
    ct_tensor *v = ct_test_make(sb, CT_SHAPE(500), dt, CT_LAYOUT_CONTIG), *vc = on_cpu(v);
    ct_tensor *z =
        ct_zeros(CT_SHAPE(7), &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
    ct_tensor *zc = on_cpu(z), *ix = random_index(500, 7, CT_SHAPE(500), 13), *ic = on_cpu(ix);
    CHECK_REPEATS_LIKE_CPU(ct_dtype_name(dt), ct_scatter_add(z, 0, ix, v),
                           ct_scatter_add(zc, 0, ic, vc));
  }
  free(sv);
  deterministic(was);
}

CT_TEST(scatter_last_duplicate_wins) {
  bool was = deterministic(true);
  double *sv = mixed_values(400 * 3, 15);
  ct_tensor *src = ct_test_make(sv, CT_SHAPE(400, 3), CT_F32, CT_LAYOUT_CONTIG), *sc = on_cpu(src);
  ct_tensor *x =
      ct_zeros(CT_SHAPE(6, 3), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *xc = on_cpu(x), *ix = random_index(1200, 6, CT_SHAPE(400, 3), 17), *ic = on_cpu(ix);
  CHECK_REPEATS_LIKE_CPU("scatter", ct_scatter(x, 0, ix, src), ct_scatter(xc, 0, ic, sc));
  free(sv);
  deterministic(was);
}

CT_TEST(index_put_repeated_points) {
  bool was = deterministic(true);
  for (size_t di = 0; di < sizeof float_dtypes / sizeof float_dtypes[0]; di++) {
    ct_dtype dt = float_dtypes[di];
    double *vv = mixed_values(700 * 4, 19), *xv = mixed_values(6 * 4, 21);
    ct_tensor *x = ct_test_make(xv, CT_SHAPE(6, 4), dt, CT_LAYOUT_TRANSPOSED), *xc = on_cpu(x);
    /* one index: rows of x, each repeated ~100 times */
    ct_tensor *i0 = random_index(700, 6, CT_SHAPE(700), 23), *i0c = on_cpu(i0);
    ct_tensor *vals = ct_test_make(vv, CT_SHAPE(700, 4), dt, CT_LAYOUT_CONTIG),
              *valc = on_cpu(vals);
    CHECK_REPEATS_LIKE_CPU("index_put accumulate rows", ct_index_put(x, &i0, 1, vals, true),
                           ct_index_put(xc, &i0c, 1, valc, true));
    CHECK_REPEATS_LIKE_CPU("index_put rows, last wins", ct_index_put(x, &i0, 1, vals, false),
                           ct_index_put(xc, &i0c, 1, valc, false));
    /* two indices: points (i, j), a value broadcast along them */
    ct_tensor *ij[2] = {random_index(700, 6, CT_SHAPE(700), 25),
                        random_index(700, 4, CT_SHAPE(700), 27)};
    ct_tensor *ijc[2] = {on_cpu(ij[0]), on_cpu(ij[1])};
    ct_tensor *pv = ct_test_make(vv, CT_SHAPE(700), dt, CT_LAYOUT_SLICED), *pvc = on_cpu(pv);
    CHECK_REPEATS_LIKE_CPU("index_put accumulate points", ct_index_put(x, ij, 2, pv, true),
                           ct_index_put(xc, ijc, 2, pvc, true));
    /* one point for everything (an all-same index), a scalar value broadcast */
    ct_tensor *same =
        ct_zeros(CT_SHAPE(700), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
    ct_tensor *s2[2] = {same, same}, *s2c[2] = {on_cpu(same), on_cpu(same)};
    CHECK_REPEATS_LIKE_CPU("index_put accumulate all-same", ct_index_put(x, s2, 2, pv, true),
                           ct_index_put(xc, s2c, 2, pvc, true));
    /* an empty index */
    ct_tensor *e =
        ct_empty(CT_SHAPE(0), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
    ct_tensor *ev =
        ct_empty(CT_SHAPE(0, 4), &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
    CHECK(same_bits(ct_index_put(x, &e, 1, ev, true), x));
    free(vv);
    free(xv);
  }
  deterministic(was);
}

/* The weight's gradient of sum(embedding(idx, w) * g). */
static ct_tensor *embedding_grad(const ct_tensor *idx, const ct_tensor *w0, const ct_tensor *g) {
  ct_tensor *w = ct_requires_grad_(ct_clone(w0), true);
  ct_tensor *loss = ct_sum(ct_mul(ct_embedding(idx, w), g), NULL);
  if (!loss || ct_backward(loss, NULL, NULL) != CT_OK) return NULL;
  return ct_grad(w);
}

CT_TEST(embedding_backward_repeated_tokens) {
  bool was = deterministic(true);
  for (size_t di = 0; di < sizeof float_dtypes / sizeof float_dtypes[0]; di++) {
    ct_dtype dt = float_dtypes[di];
    double *wv = mixed_values(10 * 8, 29), *gv = mixed_values(3 * 100 * 8, 31);
    ct_tensor *w = ct_test_make(wv, CT_SHAPE(10, 8), dt, CT_LAYOUT_CONTIG), *wc = on_cpu(w);
    ct_tensor *g = ct_test_make(gv, CT_SHAPE(3, 100, 8), dt, CT_LAYOUT_CONTIG), *gc = on_cpu(g);
    ct_tensor *idx = random_index(300, 10, CT_SHAPE(3, 100), 33), *ic = on_cpu(idx);
    CHECK_REPEATS_LIKE_CPU("embedding backward", embedding_grad(idx, w, g),
                           embedding_grad(ic, wc, gc));
    free(wv);
    free(gv);
  }
  deterministic(was);
}

CT_TEST(bincount_weights) {
  bool was = deterministic(true);
  double *wv = mixed_values(3000, 35);
  ct_tensor *wt = ct_test_make(wv, CT_SHAPE(3000), CT_F32, CT_LAYOUT_CONTIG), *wc = on_cpu(wt);
  ct_tensor *x = random_index(3000, 5, CT_SHAPE(3000), 37), *xc = on_cpu(x);
  CHECK_REPEATS_LIKE_CPU("bincount", ct_bincount(x, wt, 0), ct_bincount(xc, wc, 0));
  free(wv);
  deterministic(was);
}

CT_TEST(bad_index_still_reported) {
  bool was = deterministic(true);
  ct_tensor *x =
      ct_zeros(CT_SHAPE(4), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *src =
      ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  double bad[3] = {1, 4, 1};
  ct_tensor *ix = ct_test_make(bad, CT_SHAPE(3), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_scatter_add_(x, 0, ix, src)), CT_ERR_ARG, "scatter_add");
  deterministic(was);
}

/* On the emulated GPU: the flag switches between the atomic kernel (one
 * launch) and the sorted path (keys, sort, runs). */
CT_TEST(flag_switches_paths) {
  if (!emu_calls || ct_test_device().type != CT_DEVICE_CUDA) {
    ct_test_skip("kernel launches are counted on the emulated GPU only");
    return;
  }
  bool was = deterministic(false);
  ct_tensor *x =
      ct_zeros(CT_SHAPE(8), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *src =
      ct_ones(CT_SHAPE(100), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *ix = random_index(100, 8, CT_SHAPE(100), 39);
  CHECK_STATUS_OK(ct_synchronize(ct_test_device()));
  emu_calls_reset();
  CHECK_OK(ct_scatter_add_(x, 0, ix, src));
  long atomic_launches = emu_calls("kernel launch");
  ct_use_deterministic_algorithms(true);
  emu_calls_reset();
  CHECK_OK(ct_scatter_add_(x, 0, ix, src));
  long sorted_launches = emu_calls("kernel launch");
  CHECK_MSG(atomic_launches == 1 && sorted_launches >= 3,
            "scatter_add_ launched %ld kernels with the flag off, %ld with it on", atomic_launches,
            sorted_launches);
  deterministic(was);
}

/* An op with no deterministic algorithm fails under the flag, naming itself:
 * on the emulated GPU, cuDNN told to support no deterministic convolution
 * algorithm (a problem only nondeterministic ones take). */
CT_TEST(no_deterministic_algorithm_is_an_error) {
  if (!emu_calls || ct_test_device().type != CT_DEVICE_CUDA) {
    ct_test_skip("needs the emulated GPU's cuDNN, which can refuse deterministic algorithms");
    return;
  }
  bool was = deterministic(false);
  setenv("CT_EMU_CUDNN_NONDETERMINISTIC_ONLY", "1", 1);
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_ones(CT_SHAPE(2, 3, 7, 5), &o), *w = ct_ones(CT_SHAPE(4, 3, 3, 3), &o);
  CHECK_OK(ct_test_synced(ct_conv2d(x, w, NULL, NULL))); /* a nondeterministic algorithm runs */
  ct_use_deterministic_algorithms(true);
  CHECK_ERR_MSG(ct_conv2d(x, w, NULL, NULL), CT_ERR_UNAVAILABLE,
                "conv2d: cuDNN has no deterministic cudnnConvolutionForward algorithm");
  unsetenv("CT_EMU_CUDNN_NONDETERMINISTIC_ONLY");
  CHECK_OK(ct_test_synced(ct_conv2d(x, w, NULL, NULL))); /* a deterministic one again */
  deterministic(was);
}
