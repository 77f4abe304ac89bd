/* Random numbers: Philox known-answer vectors, golden values for seed 42
 * (checked against an independent implementation here, and pinned bit for bit
 * so every backend must reproduce them), determinism, statistics, thread
 * independence, dtypes, errors. */
#include <inttypes.h>
#include <pthread.h>

#include "core/philox.h"
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* Pointer to test opts of dtype d on the device under test. */
#define TOPTS(d) ((ct_tensor_opts[1]){ct_test_opts(d)})

/* ---- An independent scalar Philox 4x32-10, written after Random123 ---- */

static uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  return (uint32_t)p;
}
static void ref_round(uint32_t c[4], const uint32_t k[2]) {
  uint32_t hi0, hi1;
  uint32_t lo0 = mulhilo(0xD2511F53u, c[0], &hi0);
  uint32_t lo1 = mulhilo(0xCD9E8D57u, c[2], &hi1);
  uint32_t r[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  memcpy(c, r, sizeof r);
}
static void ref_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4], k[2] = {key[0], key[1]};
  memcpy(c, ctr, sizeof c);
  ref_round(c, k);
  for (int r = 1; r < 10; r++) {
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
    ref_round(c, k);
  }
  memcpy(out, c, sizeof c);
}
/* Word `word` of block `block` of the stream (seed, offset 0). */
static uint32_t ref_word(uint64_t seed, uint64_t block, int word) {
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  ref_philox(ctr, key, out);
  return out[word];
}

CT_TEST(philox_known_answers) {
  /* Random123 kat_vectors, philox4x32_10. */
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int v = 0; v < 3; v++) {
    uint32_t lib[4], ref[4];
    ct_philox4x32_10(kat[v], kat[v] + 4, lib);
    ref_philox(kat[v], kat[v] + 4, ref);
    for (int j = 0; j < 4; j++) {
      CHECK_MSG(lib[j] == kat[v][6 + j], "vector %d word %d: library %08x, expected %08x", v, j,
                lib[j], kat[v][6 + j]);
      CHECK_MSG(ref[j] == kat[v][6 + j], "vector %d word %d: test reference %08x, expected %08x", v,
                j, ref[j], kat[v][6 + j]);
    }
  }
}

/* The values of a random tensor as doubles (exact for every dtype). */
static double *vals(const ct_tensor *t) {
  CHECK_OK(t);
  return ct_test_values(t);
}

static bool same_bits_f32(double got, uint32_t want) {
  float f = (float)got, w;
  memcpy(&w, &want, 4);
  return memcmp(&f, &w, 4) == 0;
}
static bool same_bits_f64(double got, uint64_t want) {
  double w;
  memcpy(&w, &want, 8);
  return memcmp(&got, &w, 8) == 0;
}

CT_TEST(golden_seed_42) {
  /* Pinned outputs of seed 42 (offset 0). Any backend must give exactly these. */
  static const uint32_t rand_f32[8] = {0x3f1ceaf0, 0x3eefea92, 0x3d95fa80, 0x3eae8566,
                                       0x3f7cdb21, 0x3ea774d8, 0x3f038f5a, 0x3ee89c0c};
  static const uint32_t randn_f32[8] = {0xbf785e59, 0x3e46acec, 0xbf9e28cd, 0x3ff6433e,
                                        0xbd95e015, 0x3e0e79fe, 0xbf8da732, 0x3ea7430b};
  static const uint64_t rand_f64[4] = {0x3fddfd524ee73abc, 0x3fd5d0acf5c4afd4, 0x3fd4ee9b3f7f36c8,
                                       0x3fdd1381bee0e3d6};
  static const uint64_t randn_f64[4] = {0xbfe54ac03c1a032a, 0x3ff0938db380d761, 0xbff6f135c80fefcb,
                                        0x3fdb16fd5e6389c7};
  static const int64_t randint_i64[8] = {-57, 71, 17, -93, 3, 25, -6, -49};
  static const int64_t randint_wide[4] = {4032209561764687955, 1676099747649114285,
                                          1421568470513557799, 3768957615469451886};
  const double two_pi = 6.283185307179586476925;

  ct_tensor_opts o32 = ct_test_opts(CT_F32), o64 = ct_test_opts(CT_F64), oi = ct_test_opts(CT_I64);
  ct_manual_seed(42);
  double *v = vals(ct_rand(CT_SHAPE(8), &o32));
  for (int i = 0; v && i < 8; i++) {
    /* independent: (w >> 8) 2^-24 of word i%4 of block i/4 */
    double ref = (double)(ref_word(42, (uint64_t)i / 4, i % 4) >> 8) / 16777216.0;
    CHECK_MSG(v[i] == ref, "rand f32 [%d] = %.9g, reference %.9g", i, v[i], ref);
    CHECK_MSG(same_bits_f32(v[i], rand_f32[i]), "rand f32 [%d] = %.9g differs from the pinned value", i, v[i]);
  }
  free(v);

  ct_manual_seed(42);
  v = vals(ct_randn(CT_SHAPE(8), &o32));
  for (int i = 0; v && i < 8; i++) {
    int pair = (i % 4) / 2;
    uint32_t wa = ref_word(42, (uint64_t)i / 4, 2 * pair), wb = ref_word(42, (uint64_t)i / 4, 2 * pair + 1);
    double u1 = (double)((wa >> 8) + 1) / 16777216.0, th = two_pi * (double)(wb >> 8) / 16777216.0;
    double ref = sqrt(-2 * log(u1)) * (i % 2 ? sin(th) : cos(th));
    CHECK_MSG(fabs(v[i] - ref) <= 2e-6 * (1 + fabs(ref)), "randn f32 [%d] = %.9g, reference %.9g", i, v[i], ref);
    CHECK_MSG(same_bits_f32(v[i], randn_f32[i]), "randn f32 [%d] = %.9g differs from the pinned value", i, v[i]);
  }
  free(v);

  ct_manual_seed(42);
  v = vals(ct_rand(CT_SHAPE(4), &o64));
  for (int i = 0; v && i < 4; i++) {
    uint64_t x = ref_word(42, (uint64_t)i / 2, 2 * (i % 2)) |
                 (uint64_t)ref_word(42, (uint64_t)i / 2, 2 * (i % 2) + 1) << 32;
    double ref = (double)(x >> 11) / 9007199254740992.0;
    CHECK_MSG(v[i] == ref, "rand f64 [%d] = %.17g, reference %.17g", i, v[i], ref);
    CHECK_MSG(same_bits_f64(v[i], rand_f64[i]), "rand f64 [%d] = %.17g differs from the pinned value", i, v[i]);
  }
  free(v);

  ct_manual_seed(42);
  v = vals(ct_randn(CT_SHAPE(4), &o64));
  for (int i = 0; v && i < 4; i++) {
    uint64_t b = (uint64_t)i / 2;
    uint64_t x1 = ref_word(42, b, 0) | (uint64_t)ref_word(42, b, 1) << 32;
    uint64_t x2 = ref_word(42, b, 2) | (uint64_t)ref_word(42, b, 3) << 32;
    double u1 = (double)((x1 >> 11) + 1) / 9007199254740992.0;
    double th = two_pi * (double)(x2 >> 11) / 9007199254740992.0;
    double ref = sqrt(-2 * log(u1)) * (i % 2 ? sin(th) : cos(th));
    CHECK_MSG(fabs(v[i] - ref) <= 1e-14 * (1 + fabs(ref)), "randn f64 [%d] = %.17g, reference %.17g", i, v[i], ref);
    CHECK_MSG(same_bits_f64(v[i], randn_f64[i]), "randn f64 [%d] = %.17g differs from the pinned value", i, v[i]);
  }
  free(v);

  ct_manual_seed(42);
  ct_tensor *ri = ct_randint(-100, 100, CT_SHAPE(8), &oi);
  CHECK_OK(ri);
  if (ri) {
    int64_t got[8];
    ct_tensor *c = ct_to(ri, ct_cpu(), NULL);
    memcpy(got, ct_data_ptr(c), sizeof got);
    for (int i = 0; i < 8; i++) {
      int64_t ref = -100 + (int64_t)(ref_word(42, (uint64_t)i / 4, i % 4) % 200u);
      CHECK_MSG(got[i] == ref && got[i] == randint_i64[i], "randint [%d] = %" PRId64 ", reference %" PRId64, i,
                got[i], ref);
    }
  }
  ct_manual_seed(42);
  ct_tensor *rw = ct_randint(INT64_MIN / 2, INT64_MAX / 2, CT_SHAPE(4), &oi);
  CHECK_OK(rw);
  if (rw) {
    int64_t got[4];
    ct_tensor *c = ct_to(rw, ct_cpu(), NULL);
    memcpy(got, ct_data_ptr(c), sizeof got);
    for (int i = 0; i < 4; i++)
      CHECK_MSG(got[i] == randint_wide[i], "randint wide [%d] = %" PRId64 " differs from the pinned value", i, got[i]);
  }
}

CT_TEST(determinism_and_offsets) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_manual_seed(7);
  double *a = vals(ct_randn(CT_SHAPE(1001), &o));
  uint64_t seed, offset;
  ct_generator_get_state(ct_default_generator(), &seed, &offset);
  CHECK(seed == 7 && offset == 251); /* ceil(1001 / 4) blocks */
  ct_manual_seed(7);
  double *b = vals(ct_randn(CT_SHAPE(1001), &o));
  CHECK(a && b && memcmp(a, b, 1001 * sizeof *a) == 0);
  double *c = vals(ct_randn(CT_SHAPE(1001), &o)); /* continues the stream: differs */
  int same = 0;
  for (int i = 0; a && c && i < 1001; i++) same += a[i] == c[i];
  CHECK_MSG(same < 5, "%d equal values after advancing the stream", same);
  free(a), free(b), free(c);

  /* Consecutive fills of multiples of 4 elements concatenate into one fill. */
  ct_manual_seed(3);
  double *x1 = vals(ct_rand(CT_SHAPE(8), &o));
  double *x2 = vals(ct_rand(CT_SHAPE(12), &o));
  ct_manual_seed(3);
  double *y = vals(ct_rand(CT_SHAPE(20), &o));
  CHECK(x1 && x2 && y && memcmp(x1, y, 8 * sizeof *y) == 0 && memcmp(x2, y + 8, 12 * sizeof *y) == 0);
  free(x1), free(x2), free(y);

  /* Independent generators: same seed, same stream; the default one untouched. */
  ct_manual_seed(11);
  ct_generator *g1 = ct_generator_new(99), *g2 = ct_generator_new(99);
  ct_tensor_opts og1 = o, og2 = o;
  og1.generator = g1;
  og2.generator = g2;
  double *p = vals(ct_rand(CT_SHAPE(5, 7), &og1)), *q = vals(ct_rand(CT_SHAPE(5, 7), &og2));
  CHECK(p && q && memcmp(p, q, 35 * sizeof *p) == 0);
  ct_generator_get_state(ct_default_generator(), &seed, &offset);
  CHECK(seed == 11 && offset == 0);
  ct_generator_get_state(g1, &seed, &offset);
  CHECK(seed == 99 && offset == 9);
  /* set_state to another offset gives other values; back gives the same. */
  ct_generator_set_state(g2, 99, 1000);
  double *r = vals(ct_rand(CT_SHAPE(5, 7), &og2));
  CHECK(r && p && memcmp(r, p, 35 * sizeof *p) != 0);
  ct_generator_set_state(g2, 99, 0);
  double *s = vals(ct_rand(CT_SHAPE(5, 7), &og2));
  CHECK(s && p && memcmp(s, p, 35 * sizeof *p) == 0);
  /* next_u64: deterministic, one block each. */
  ct_generator_set_state(g1, 5, 0);
  uint64_t u1 = ct_generator_next_u64(g1), u2 = ct_generator_next_u64(g1);
  ct_generator_set_state(g2, 5, 0);
  CHECK(ct_generator_next_u64(g2) == u1 && u1 != u2);
  CHECK(u1 == ((uint64_t)ref_word(5, 0, 0) | (uint64_t)ref_word(5, 0, 1) << 32));
  free(p), free(q), free(r), free(s);
  ct_generator_free(g1);
  ct_generator_free(g2);
  ct_generator_free(NULL);
}

/* Mean and (population) variance of n doubles. */
static void moments(const double *v, int64_t n, double *mean, double *var) {
  double s = 0, ss = 0;
  for (int64_t i = 0; i < n; i++) s += v[i];
  *mean = s / (double)n;
  for (int64_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
  *var = ss / (double)n;
}

CT_TEST(statistics) {
  const int64_t n = 1000000;
  ct_manual_seed(2024);
  for (int k = 0; k < 2; k++) {
    ct_tensor_opts o = ct_test_opts(k ? CT_F64 : CT_F32);
    double *u = vals(ct_rand(CT_SHAPE(n), &o));
    double mean, var, lo = 1, hi = 0;
    if (!u) continue;
    moments(u, n, &mean, &var);
    for (int64_t i = 0; i < n; i++) lo = fmin(lo, u[i]), hi = fmax(hi, u[i]);
    /* sd of the mean 2.9e-4, of the variance ~8e-5 */
    CHECK_MSG(fabs(mean - 0.5) < 2e-3 && fabs(var - 1.0 / 12) < 6e-4, "rand: mean %g var %g", mean, var);
    CHECK_MSG(lo >= 0 && hi < 1 && lo < 1e-4 && hi > 1 - 1e-4, "rand: range [%g, %g]", lo, hi);
    free(u);

    double *z = vals(ct_randn(CT_SHAPE(n), &o));
    if (!z) continue;
    moments(z, n, &mean, &var);
    int64_t tail = 0, below = 0;
    double m3 = 0, m4 = 0;
    for (int64_t i = 0; i < n; i++) {
      tail += fabs(z[i]) > 1.959963984540054;
      below += z[i] < -0.6744897501960817; /* 25% quantile */
      m3 += z[i] * z[i] * z[i];
      m4 += z[i] * z[i] * z[i] * z[i];
    }
    m3 /= (double)n, m4 /= (double)n;
    CHECK_MSG(fabs(mean) < 5e-3 && fabs(var - 1) < 7e-3, "randn: mean %g var %g", mean, var);
    CHECK_MSG(fabs((double)tail / (double)n - 0.05) < 1.5e-3, "randn: P(|z| > 1.96) = %g", (double)tail / (double)n);
    CHECK_MSG(fabs((double)below / (double)n - 0.25) < 2.5e-3, "randn: P(z < q25) = %g", (double)below / (double)n);
    CHECK_MSG(fabs(m3) < 0.02 && fabs(m4 - 3) < 0.05, "randn: skew %g kurtosis %g", m3, m4);
    free(z);
  }

  ct_tensor_opts o = ct_test_opts(CT_F32);
  double mean, var;
  double *nv = vals(ct_normal(3, 2, CT_SHAPE(200000), &o));
  if (nv) {
    moments(nv, 200000, &mean, &var);
    CHECK_MSG(fabs(mean - 3) < 0.03 && fabs(sqrt(var) - 2) < 0.02, "normal(3, 2): mean %g sd %g", mean, sqrt(var));
  }
  free(nv);
  double *uv = vals(ct_uniform(-2, 5, CT_SHAPE(200000), &o));
  if (uv) {
    moments(uv, 200000, &mean, &var);
    double lo = 1e9, hi = -1e9;
    for (int i = 0; i < 200000; i++) lo = fmin(lo, uv[i]), hi = fmax(hi, uv[i]);
    CHECK_MSG(fabs(mean - 1.5) < 0.03 && fabs(var - 49.0 / 12) < 0.05 && lo >= -2 && hi < 5,
              "uniform(-2, 5): mean %g var %g range [%g, %g]", mean, var, lo, hi);
  }
  free(uv);

  /* randint: in range, every value about equally likely. */
  ct_tensor_opts oi = ct_test_opts(CT_I64);
  double *ri = vals(ct_randint(-3, 7, CT_SHAPE(100000), &oi));
  if (ri) {
    int64_t count[10] = {0}, bad = 0;
    for (int i = 0; i < 100000; i++) {
      if (ri[i] < -3 || ri[i] >= 7 || ri[i] != floor(ri[i])) bad++;
      else count[(int)ri[i] + 3]++;
    }
    CHECK(bad == 0);
    for (int k = 0; k < 10; k++) CHECK_MSG(labs((long)(count[k] - 10000)) < 500, "randint: value %d drawn %lld times", k - 3, (long long)count[k]);
  }
  free(ri);
  /* wide range (64-bit draws): in range, mean near the middle */
  double *rw = vals(ct_randint(-(1LL << 40), 1LL << 40, CT_SHAPE(100000), &oi));
  if (rw) {
    moments(rw, 100000, &mean, &var);
    double lo = 0, hi = 0;
    for (int i = 0; i < 100000; i++) lo = fmin(lo, rw[i]), hi = fmax(hi, rw[i]);
    CHECK_MSG(fabs(mean) < 0.02 * 1099511627776.0 && lo >= -1099511627776.0 && hi < 1099511627776.0,
              "randint wide: mean %g range [%g, %g]", mean, lo, hi);
  }
  free(rw);
  /* default dtype i64, as torch.randint */
  ct_tensor *rf = ct_randint(0, 5, CT_SHAPE(3), NULL);
  CHECK(rf && ct_dtype_of(rf) == CT_I64);

  /* bernoulli */
  ct_tensor *base = ct_zeros(CT_SHAPE(100000), &o);
  double *bv = vals(ct_bernoulli_scalar(base, 0.3, NULL));
  if (bv) {
    double ones = 0;
    int binary = 1;
    for (int i = 0; i < 100000; i++) ones += bv[i], binary &= bv[i] == 0 || bv[i] == 1;
    CHECK(binary);
    CHECK_MSG(fabs(ones / 100000 - 0.3) < 0.006, "bernoulli(0.3): rate %g", ones / 100000);
  }
  free(bv);
  double pv[6] = {0, 1, 0.5, 0, 1, 0.25};
  ct_tensor *p = ct_test_make(pv, CT_SHAPE(6), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *pe = ct_expand(ct_reshape(p, CT_SHAPE(1, 6)), CT_SHAPE(20000, 6));
  double *be = vals(ct_bernoulli(pe, NULL));
  if (be) {
    double count[6] = {0}, rate[6];
    for (int i = 0; i < 20000; i++)
      for (int j = 0; j < 6; j++) count[j] += be[i * 6 + j];
    for (int j = 0; j < 6; j++) rate[j] = count[j] / 20000;
    CHECK(count[0] == 0 && count[3] == 0 && count[1] == 20000 && count[4] == 20000);
    CHECK_MSG(fabs(rate[2] - 0.5) < 0.02 && fabs(rate[5] - 0.25) < 0.02, "bernoulli rates %g %g", rate[2], rate[5]);
  }
  free(be);
  ct_tensor *bt = ct_bernoulli(pe, NULL);
  CHECK(bt && ct_dtype_of(bt) == CT_F64 && ct_is_contiguous(bt));
  ct_tensor *bb = ct_bernoulli_scalar(ct_zeros(CT_SHAPE(4), &(ct_tensor_opts){.dtype = CT_BOOL, .device = ct_test_device()}), 1.0, NULL);
  double *bbv = vals(bb);
  CHECK(bb && ct_dtype_of(bb) == CT_BOOL && bbv && bbv[0] == 1 && bbv[3] == 1);
  free(bbv);
}

CT_TEST(thread_count_does_not_matter) {
  int saved = ct_get_num_threads();
  ct_tensor_opts o = ct_test_opts(CT_F32);
  double *r[2][3];
  for (int t = 0; t < 2; t++) {
    ct_set_num_threads(t ? 4 : 1);
    ct_manual_seed(123);
    r[t][0] = vals(ct_randn(CT_SHAPE(300001), &o));
    r[t][1] = vals(ct_rand(CT_SHAPE(300001), TOPTS(CT_F64)));
    r[t][2] = vals(ct_randint(0, 1000, CT_SHAPE(300001), TOPTS(CT_I32)));
  }
  ct_set_num_threads(saved);
  for (int k = 0; k < 3; k++) {
    CHECK_MSG(r[0][k] && r[1][k] && memcmp(r[0][k], r[1][k], 300001 * sizeof(double)) == 0,
              "fill %d differs between 1 and 4 threads", k);
    free(r[0][k]);
    free(r[1][k]);
  }
}

static void *draw_many(void *arg) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  for (int k = 0; k < 50; k++) ct_free(ct_rand(CT_SHAPE(1000), &o));
  (void)arg;
  return NULL;
}

CT_TEST(concurrent_users_get_disjoint_blocks) {
  ct_manual_seed(1);
  pthread_t th[4];
  for (int k = 0; k < 4; k++) CHECK(pthread_create(&th[k], NULL, draw_many, NULL) == 0);
  for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
  uint64_t seed, offset;
  ct_generator_get_state(ct_default_generator(), &seed, &offset);
  CHECK_MSG(seed == 1 && offset == 4 * 50 * 250, "offset %" PRIu64 " after 200 fills of 250 blocks", offset);
}

CT_TEST(half_and_double_dtypes) {
  const int n = 4000;
  /* f16/bf16 normals are the f32 normals rounded; uniforms use the dtype's
   * significand bits, so they are exact multiples of 2^-11 / 2^-8, below 1. */
  ct_manual_seed(5);
  double *z32 = vals(ct_randn(CT_SHAPE(n), TOPTS(CT_F32)));
  for (int h = 0; h < 2; h++) {
    ct_dtype d = h ? CT_BF16 : CT_F16;
    ct_manual_seed(5);
    ct_tensor *zh = ct_randn(CT_SHAPE(n), TOPTS(d));
    CHECK(zh && ct_dtype_of(zh) == d);
    double *zv = vals(zh);
    double *want = malloc(n * sizeof *want);
    memcpy(want, z32, n * sizeof *want);
    ct_test_round_to(want, n, d);
    CHECK(zv && memcmp(zv, want, n * sizeof *want) == 0);
    free(zv), free(want);
    double *u = vals(ct_rand(CT_SHAPE(n), TOPTS(d)));
    double scale = h ? 256 : 2048, mean = 0;
    for (int i = 0; u && i < n; i++) {
      CHECK_MSG(u[i] >= 0 && u[i] < 1 && u[i] * scale == floor(u[i] * scale), "rand %s [%d] = %g",
                ct_dtype_name(d), i, u[i]);
      mean += u[i] / n;
    }
    CHECK_MSG(fabs(mean - 0.5) < 0.03, "rand %s mean %g", ct_dtype_name(d), mean);
    free(u);
    double *ri = vals(ct_randint(-50, 50, CT_SHAPE(100), TOPTS(d)));
    for (int i = 0; ri && i < 100; i++) CHECK(ri[i] >= -50 && ri[i] < 50 && ri[i] == floor(ri[i]));
    free(ri);
  }
  free(z32);
  /* f64 uniform has 53 random bits: values are not all f32-representable */
  double *u64 = vals(ct_rand(CT_SHAPE(100), TOPTS(CT_F64)));
  int not_f32 = 0;
  for (int i = 0; u64 && i < 100; i++) not_f32 += (double)(float)u64[i] != u64[i];
  CHECK(not_f32 > 90);
  free(u64);
  /* integer dtypes for randint, and bool */
  ct_dtype ints[] = {CT_I8, CT_U8, CT_I16, CT_I32, CT_BOOL};
  for (int k = 0; k < 5; k++) {
    int64_t lo = ints[k] == CT_BOOL || ints[k] == CT_U8 ? 0 : -5, hi = ints[k] == CT_BOOL ? 2 : 100;
    ct_tensor *t = ct_randint(lo, hi, CT_SHAPE(1000), TOPTS(ints[k]));
    CHECK(t && ct_dtype_of(t) == ints[k]);
    double *v = vals(t);
    int ok = 1;
    for (int i = 0; v && i < 1000; i++) ok &= v[i] >= (double)lo && v[i] < (double)hi;
    CHECK_MSG(ok, "randint into %s out of range", ct_dtype_name(ints[k]));
    free(v);
  }
}

CT_TEST(in_place_and_views) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  /* A transposed view is filled in its own row-major order. */
  ct_tensor *base = ct_zeros(CT_SHAPE(4, 6), &o);
  ct_tensor *view = ct_transpose(base, 0, 1); /* (6, 4), not contiguous */
  uint32_t v0 = ct_version(base);
  ct_manual_seed(8);
  CHECK(ct_uniform_(view, -1, 1, NULL) == view);
  CHECK(ct_version(base) != v0);
  ct_manual_seed(8);
  double *want = vals(ct_uniform(-1, 1, CT_SHAPE(6, 4), &o));
  double *got = vals(view);
  CHECK(want && got && memcmp(want, got, 24 * sizeof *got) == 0);
  free(want), free(got);

  ct_manual_seed(8);
  ct_tensor *x = ct_empty(CT_SHAPE(3, 5), TOPTS(CT_F64));
  CHECK(ct_normal_(x, 10, 0.5, NULL) == x);
  ct_manual_seed(8);
  ct_tensor *y = ct_normal(10, 0.5, CT_SHAPE(3, 5), TOPTS(CT_F64));
  double *xv = vals(x), *yv = vals(y);
  CHECK(xv && yv && memcmp(xv, yv, 15 * sizeof *xv) == 0);
  free(xv), free(yv);

  /* requires_grad on creation; in-place on such a leaf is refused outside no_grad */
  ct_tensor_opts og = o;
  og.requires_grad = true;
  ct_tensor *w = ct_randn(CT_SHAPE(3), &og);
  CHECK(w && ct_requires_grad(w));
  CHECK_ERR_MSG(ct_normal_(w, 0, 1, NULL), CT_ERR_STATE,
                "normal_: a leaf tensor that requires grad");
  ct_no_grad_begin();
  CHECK(ct_normal_(w, 0, 1, NULL) == w);
  ct_no_grad_end();
  CHECK_ERR(ct_randint(0, 3, CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I64, .requires_grad = true}), CT_ERR_DTYPE);

  /* empty and scalar shapes */
  ct_tensor *e = ct_rand(CT_SHAPE(0, 3), &o);
  CHECK(e && ct_numel(e) == 0);
  ct_tensor *s = ct_randn(CT_SHAPE(), &o);
  CHECK(s && ct_ndim(s) == 0);
}

CT_TEST(randperm_is_a_permutation) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  for (int64_t n = 0; n < 40; n += 7) {
    ct_manual_seed((uint64_t)n);
    ct_tensor *p = ct_randperm(n, &o);
    CHECK(p && ct_dtype_of(p) == CT_I64 && ct_numel(p) == n);
    CHECK(p && ct_device_equal(ct_device_of(p), ct_test_device()));
    double *v = vals(p);
    int *seen = calloc((size_t)n + 1, sizeof *seen), ok = 1, moved = 0;
    for (int64_t i = 0; v && i < n; i++) {
      if (v[i] < 0 || v[i] >= (double)n || seen[(int)v[i]]++) ok = 0;
      moved += v[i] != (double)i;
    }
    CHECK_MSG(ok, "randperm(%lld) is not a permutation", (long long)n);
    if (n > 10) CHECK(moved > n / 2);
    free(v), free(seen);
  }
  ct_manual_seed(42);
  ct_tensor *p8 = ct_randperm(8, NULL);
  CHECK_CLOSE(p8, ((double[]){2, 6, 4, 1, 0, 7, 5, 3}), 0, 0); /* pinned */
  uint64_t seed, offset;
  ct_generator_get_state(ct_default_generator(), &seed, &offset);
  CHECK(offset == 4); /* 7 draws, two per block */
}

CT_TEST(errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  CHECK_ERR(ct_rand(CT_SHAPE(2), TOPTS(CT_I64)), CT_ERR_DTYPE);
  CHECK_ERR(ct_randn(CT_SHAPE(2), TOPTS(CT_BOOL)), CT_ERR_DTYPE);
  CHECK_ERR(ct_normal(0, 1, CT_SHAPE(2), TOPTS(CT_I32)), CT_ERR_DTYPE);
  CHECK_ERR(ct_uniform(0, 1, CT_SHAPE(2), TOPTS(CT_U8)), CT_ERR_DTYPE);
  CHECK_ERR(ct_rand(CT_SHAPE(2, -1), &o), CT_ERR_SHAPE);
  CHECK_ERR_MSG(ct_randint(5, 5, CT_SHAPE(2), &o), CT_ERR_ARG, "low < high");
  CHECK_ERR(ct_randint(0, 300, CT_SHAPE(2), TOPTS(CT_U8)), CT_ERR_ARG);
  CHECK_ERR(ct_randint(-1, 1, CT_SHAPE(2), TOPTS(CT_BOOL)), CT_ERR_ARG);
  CHECK_ERR(ct_randint(0, (1 << 11) + 2, CT_SHAPE(2), TOPTS(CT_F16)), CT_ERR_ARG);
  CHECK_ERR(ct_randint(0, (1 << 24) + 2, CT_SHAPE(2), TOPTS(CT_I16)), CT_ERR_ARG);
  /* the zero value of opts->dtype means randint's default, i64, as NULL does */
  CHECK(ct_dtype_of(ct_randint(0, (1 << 24) + 2, CT_SHAPE(2), &o)) == CT_I64);
  CHECK_ERR(ct_normal(0, -1, CT_SHAPE(2), &o), CT_ERR_ARG);
  CHECK_ERR(ct_normal(NAN, 1, CT_SHAPE(2), &o), CT_ERR_ARG);
  CHECK_ERR(ct_uniform(1, 0, CT_SHAPE(2), &o), CT_ERR_ARG);
  CHECK_ERR(ct_uniform(-INFINITY, 0, CT_SHAPE(2), &o), CT_ERR_ARG);
  CHECK_ERR(ct_uniform(-1e38, 3e38, CT_SHAPE(2), &o), CT_ERR_ARG);
  CHECK_ERR(ct_randperm(-1, NULL), CT_ERR_ARG);
  ct_tensor *p = ct_test_make((double[]){0.5, 1.5}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_bernoulli(p, NULL), CT_ERR_ARG, "[0, 1]");
  ct_tensor *pn = ct_test_make((double[]){0.5, NAN}, CT_SHAPE(2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_ERR(ct_bernoulli(pn, NULL), CT_ERR_ARG);
  ct_tensor *pi = ct_zeros(CT_SHAPE(2), TOPTS(CT_I64));
  CHECK_ERR(ct_bernoulli(pi, NULL), CT_ERR_DTYPE);
  CHECK_ERR(ct_bernoulli_scalar(pi, 1.5, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_uniform_(pi, 0, 1, NULL), CT_ERR_DTYPE);
  ct_tensor *ex = ct_expand(ct_zeros(CT_SHAPE(1), &o), CT_SHAPE(4));
  CHECK_ERR(ct_normal_(ex, 0, 1, NULL), CT_ERR_ARG);
  /* NULL in, NULL out, keeping the first error */
  ct_clear_error();
  CHECK(ct_bernoulli(NULL, NULL) == NULL && ct_uniform_(NULL, 0, 1, NULL) == NULL &&
        ct_bernoulli_scalar(NULL, 0.5, NULL) == NULL && ct_normal_(NULL, 0, 1, NULL) == NULL);
  CHECK(ct_last_error() == CT_OK);
}
