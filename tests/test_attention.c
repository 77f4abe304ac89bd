/* scaled_dot_product_attention: the fused kernels against an unfused f64
 * reference on the host (softmax(scale q k^T + mask) v, written out), on
 * every floating dtype, with causal, bool and float masks, L != S, sizes
 * that are not multiples of the tiles, broadcast batch dims; gradients by
 * finite differences in f64 (dropout included: a fixed generator state gives
 * the same mask); dropout's mask statistics and its equality across
 * devices; torch.nn.functional.scaled_dot_product_attention as an oracle;
 * the errors. torch older than 2.0 has no F.scaled_dot_product_attention:
 * the script then runs the reference composition torch's documentation
 * gives for it. */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

/* The reference: q (BH, L, E), k (BH, S, E), v (BH, S, Ev), mask (BH, L, S)
 * additive or NULL -> (BH, L, Ev), in long double. */
static double *ref_sdpa(const double *q, const double *k, const double *v, const double *mask,
                        bool causal, int64_t BH, int64_t L, int64_t S, int64_t E, int64_t Ev,
                        double scale) {
  double *out = calloc((size_t)(BH * L * Ev + 1), sizeof(double));
  long double *w = malloc(sizeof(long double) * (size_t)(S + 1));
  for (int64_t b = 0; b < BH; b++)
    for (int64_t i = 0; i < L; i++) {
      long double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < S; j++) {
        long double s = 0;
        for (int64_t e = 0; e < E; e++)
          s += (long double)q[(b * L + i) * E + e] * k[(b * S + j) * E + e];
        s *= scale;
        if (mask) s += mask[(b * L + i) * S + j];
        if (causal && j > i) s = -INFINITY;
        w[j] = s;
        if (s > m) m = s;
      }
      for (int64_t j = 0; j < S; j++) sum += (w[j] = expl(w[j] - m));
      for (int64_t e = 0; e < Ev; e++) {
        long double acc = 0;
        for (int64_t j = 0; j < S; j++) acc += w[j] / sum * v[(b * S + j) * Ev + e];
        out[(b * L + i) * Ev + e] = S == 0 ? 0.0 : m == -INFINITY ? NAN : (double)acc;
      }
    }
  free(w);
  return out;
}

/* x repeated `rep` times along a new leading dim (a broadcast made explicit). */
static double *repeat(const double *x, int64_t n, int64_t rep) {
  double *r = malloc(sizeof(double) * (size_t)(n * rep + 1));
  for (int64_t t = 0; t < rep; t++) memcpy(r + t * n, x, sizeof(double) * (size_t)n);
  return r;
}

typedef enum { MASK_NONE, MASK_CAUSAL, MASK_BOOL, MASK_FLOAT } mask_kind;
static const char *const mask_names[] = {"none", "causal", "bool", "float"};

/* One comparison with the reference: q (B, H, L, E) in `layout`, k and v
 * (B, H, S, .); a bool mask of shape (L, S), a float mask of shape (B, 1, L, S). */
static void check_case(ct_dtype dt, int64_t B, int64_t H, int64_t L, int64_t S, int64_t E,
                       int64_t Ev, mask_kind mk, ct_test_layout layout, double scale,
                       unsigned seed) {
  int64_t BH = B * H;
  double *q = ct_test_random(BH * L * E, -1.5, 1.5, seed),
         *k = ct_test_random(BH * S * E, -1.5, 1.5, seed + 1);
  double *v = ct_test_random(BH * S * Ev, -2, 2, seed + 2);
  ct_test_round_to(q, BH * L * E, dt), ct_test_round_to(k, BH * S * E, dt),
      ct_test_round_to(v, BH * S * Ev, dt);
  double *mraw = ct_test_random(B * L * S, -3, 3, seed + 3), *mfull = NULL;
  ct_tensor *mask = NULL;
  if (mk == MASK_BOOL) { /* about a fifth of the keys hidden, but never a whole row */
    for (int64_t t = 0; t < L * S; t++) mraw[t] = (mraw[t] > -1.8 || t % S == 0) ? 1 : 0;
    mask = ct_test_make(mraw, CT_SHAPE(L, S), CT_BOOL, CT_LAYOUT_CONTIG);
    double *add = malloc(sizeof(double) * (size_t)(L * S));
    for (int64_t t = 0; t < L * S; t++) add[t] = mraw[t] ? 0 : -INFINITY;
    mfull = repeat(add, L * S, BH);
    free(add);
  } else if (mk == MASK_FLOAT) {
    ct_test_round_to(mraw, B * L * S, dt);
    mask = ct_test_make(mraw, CT_SHAPE(B, 1, L, S), dt, CT_LAYOUT_CONTIG);
    mfull = malloc(sizeof(double) * (size_t)(BH * L * S));
    for (int64_t b = 0; b < BH; b++)
      memcpy(mfull + b * L * S, mraw + (b / H) * L * S, sizeof(double) * (size_t)(L * S));
  }
  ct_tensor *tq = ct_test_make(q, CT_SHAPE(B, H, L, E), dt, layout);
  ct_tensor *tk = ct_test_make(k, CT_SHAPE(B, H, S, E), dt, CT_LAYOUT_CONTIG);
  ct_tensor *tv = ct_test_make(v, CT_SHAPE(B, H, S, Ev), dt, CT_LAYOUT_SLICED);
  ct_tensor *o =
      ct_scaled_dot_product_attention(tq, tk, tv, mask, mk == MASK_CAUSAL, 0.0, scale, NULL);
  double eff = scale != 0 ? scale : 1 / sqrt((double)E);
  double *exp = ref_sdpa(q, k, v, mfull, mk == MASK_CAUSAL, BH, L, S, E, Ev, eff);
  double tol = dt == CT_F64 ? 1e-12 : dt == CT_F32 ? 2e-5 : dt == CT_F16 ? 4e-3 : 3e-2;
  WITH_CONTEXT(CHECK_SHAPE(o, B, H, L, Ev), "shape");
  WITH_CONTEXT(CHECK_CLOSE(o, exp, tol, tol),
               "dtype=%s L=%lld S=%lld E=%lld Ev=%lld mask=%s layout=%s", ct_dtype_name(dt),
               (long long)L, (long long)S, (long long)E, (long long)Ev, mask_names[mk],
               ct_test_layout_names[layout]);
  CHECK(o && ct_dtype_of(o) == dt);
  free(q), free(k), free(v), free(mraw), free(mfull), free(exp);
}

CT_TEST(sdpa_matches_reference_all_dtypes_and_masks) {
  ct_dtype dts[4] = {CT_F64, CT_F32, CT_F16, CT_BF16};
  for (int d = 0; d < 4; d++)
    for (int mk = 0; mk < 4; mk++) {
      check_case(dts[d], 2, 3, 37, 53, 16, 24, (mask_kind)mk, CT_LAYOUT_TRANSPOSED, 0.0,
                 10 + (unsigned)mk);
      check_case(dts[d], 1, 2, 53, 29, 8, 8, (mask_kind)mk, CT_LAYOUT_CONTIG, 0.0,
                 20 + (unsigned)mk);
    }
}

/* Several tiles of rows and keys, ragged ends, a given scale. */
CT_TEST(sdpa_spans_tiles) {
  for (int mk = 0; mk < 4; mk++) {
    /* the CPU's tiles are 128 rows x 256 keys, CUDA's fused kernels' 32 x up to 32 */
    check_case(CT_F32, 1, 2, 300, 530, 32, 20, (mask_kind)mk, CT_LAYOUT_OFFSET, 0.3,
               30 + (unsigned)mk);
    check_case(CT_F64, 1, 1, 67, 600, 5, 3, (mask_kind)mk, CT_LAYOUT_CONTIG, 0.0,
               40 + (unsigned)mk);
  }
  check_case(CT_F32, 1, 1, 1, 1, 1, 1, MASK_NONE, CT_LAYOUT_CONTIG, 0.0, 50);
  check_case(CT_F32, 2, 1, 3, 1, 4, 2, MASK_CAUSAL, CT_LAYOUT_CONTIG, 0.0, 51);
}

/* Batch dims broadcast (keys and values shared by the heads), 3-d and 2-d
 * inputs, a fully masked row (nan, as torch's math path), and S = 0. */
CT_TEST(sdpa_broadcast_and_edges) {
  int64_t B = 2, H = 3, L = 9, S = 11, E = 4, Ev = 5;
  double *q = ct_test_random(B * H * L * E, -1, 1, 60), *k = ct_test_random(B * S * E, -1, 1, 61);
  double *v = ct_test_random(B * S * Ev, -1, 1, 62);
  ct_tensor *tq = ct_test_make(q, CT_SHAPE(B, H, L, E), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *tk = ct_test_make(k, CT_SHAPE(B, 1, S, E), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *tv = ct_test_make(v, CT_SHAPE(B, 1, S, Ev), CT_F64, CT_LAYOUT_CONTIG);
  double *kf = malloc(sizeof(double) * (size_t)(B * H * S * E)),
         *vf = malloc(sizeof(double) * (size_t)(B * H * S * Ev));
  for (int64_t b = 0; b < B * H; b++) {
    memcpy(kf + b * S * E, k + (b / H) * S * E, sizeof(double) * (size_t)(S * E));
    memcpy(vf + b * S * Ev, v + (b / H) * S * Ev, sizeof(double) * (size_t)(S * Ev));
  }
  double *exp = ref_sdpa(q, kf, vf, NULL, true, B * H, L, S, E, Ev, 0.5);
  CHECK_CLOSE(ct_scaled_dot_product_attention(tq, tk, tv, NULL, true, 0, 0.5, NULL), exp, 1e-12,
              1e-12);
  /* 2-d: one problem */
  double *e2 = ref_sdpa(q, k, v, NULL, false, 1, L, S, E, Ev, 1 / 2.0);
  ct_tensor *q2 = ct_test_make(q, CT_SHAPE(L, E), CT_F64, CT_LAYOUT_TRANSPOSED);
  ct_tensor *k2 = ct_test_make(k, CT_SHAPE(S, E), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *v2 = ct_test_make(v, CT_SHAPE(S, Ev), CT_F64, CT_LAYOUT_CONTIG);
  CHECK_CLOSE(ct_scaled_dot_product_attention(q2, k2, v2, NULL, false, 0, 0, NULL), e2, 1e-12,
              1e-12);
  /* a row with every key masked gives nan; the others are unaffected */
  double mv[2 * 3] = {1, 1, 1, 0, 0, 0};
  ct_tensor *m = ct_test_make(mv, CT_SHAPE(2, 3), CT_BOOL, CT_LAYOUT_CONTIG);
  ct_tensor *q3 = ct_test_make(q, CT_SHAPE(2, 2), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *k3 = ct_test_make(k, CT_SHAPE(3, 2), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *v3 = ct_test_make(v, CT_SHAPE(3, 1), CT_F64, CT_LAYOUT_CONTIG);
  double *e3 = ref_sdpa(q, k, v, NULL, false, 1, 1, 3, 2, 1, 1 / sqrt(2.0));
  CHECK_CLOSE(ct_scaled_dot_product_attention(q3, k3, v3, m, false, 0, 0, NULL),
              ((double[]){e3[0], NAN}), 1e-12, 1e-12);
  /* no keys: zeros */
  ct_tensor *k0 =
      ct_zeros(CT_SHAPE(2, 0, 4), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *v0 =
      ct_zeros(CT_SHAPE(2, 0, 3), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *q0 =
      ct_ones(CT_SHAPE(2, 5, 4), &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  ct_tensor *o0 = ct_scaled_dot_product_attention(q0, k0, v0, NULL, false, 0, 0, NULL);
  CHECK_SHAPE(o0, 2, 5, 3);
  CHECK_CLOSE(o0, ((double[30]){0}), 0, 0);
  free(q), free(k), free(v), free(kf), free(vf), free(exp), free(e2), free(e3);
}

/* ---- gradients ---- */

typedef struct grad_ctx {
  const ct_tensor *mask;
  bool causal;
  double p, scale;
  ct_generator *g;
} grad_ctx;

static ct_tensor *sdpa_fn(ct_tensor *const *in, void *vctx) {
  const grad_ctx *c = vctx;
  if (c->g) ct_generator_set_state(c->g, 1234, 5); /* the same dropout mask every call */
  return ct_scaled_dot_product_attention(in[0], in[1], in[2], c->mask, c->causal, c->p, c->scale,
                                         c->g);
}

CT_TEST(sdpa_gradients_finite_differences) {
  ct_generator *g = ct_generator_new(1);
  double mv[5 * 7];
  for (int t = 0; t < 35; t++) mv[t] = (t % 3 != 1 || t % 7 == 0) ? 1 : 0;
  ct_tensor *bm = ct_test_make(mv, CT_SHAPE(5, 7), CT_BOOL, CT_LAYOUT_CONTIG);
  double *fv = ct_test_random(2 * 5 * 7, -1, 1, 70);
  ct_tensor *fm = ct_test_make(fv, CT_SHAPE(2, 1, 5, 7), CT_F64, CT_LAYOUT_CONTIG);
  grad_ctx cases[] = {{NULL, false, 0, 0, NULL}, {NULL, true, 0, 0.7, NULL},
                      {bm, false, 0, 0, NULL},   {fm, false, 0, 0, NULL},
                      {NULL, false, 0.3, 0, g},  {NULL, true, 0.5, 0, g}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(2, 2, 5, 3), -1, 1, 80 + (unsigned)c),
                        ct_gradcheck_input(CT_SHAPE(2, 2, 7, 3), -1, 1, 90 + (unsigned)c),
                        ct_gradcheck_input(CT_SHAPE(2, 2, 7, 4), -1, 1, 100 + (unsigned)c)};
    char name[64];
    snprintf(name, sizeof name, "sdpa case %zu", c);
    CHECK_GRADIENTS(name, sdpa_fn, &cases[c], in, 3);
  }
  /* keys and values broadcast over the heads: their gradients summed back */
  ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(2, 3, 6, 3), -1, 1, 110),
                      ct_gradcheck_input(CT_SHAPE(2, 1, 4, 3), -1, 1, 111),
                      ct_gradcheck_input(CT_SHAPE(4, 2), -1, 1, 112)};
  CHECK_GRADIENTS("sdpa broadcast", sdpa_fn, &cases[1], in, 3);
  /* several tiles (the CPU's are 128 x 256), causal or not; one feature per
   * row keeps the finite differences affordable */
  ct_tensor *big[3] = {ct_gradcheck_input(CT_SHAPE(1, 300, 1), -1, 1, 120),
                       ct_gradcheck_input(CT_SHAPE(1, 270, 1), -1, 1, 121),
                       ct_gradcheck_input(CT_SHAPE(1, 270, 1), -1, 1, 122)};
  CHECK_GRADIENTS("sdpa tiles", sdpa_fn, &cases[0], big, 3);
  CHECK_GRADIENTS("sdpa tiles causal", sdpa_fn, &cases[1], big, 3);
  free(fv);
  ct_generator_free(g);
}

/* The error of f32 against f64 on the same (f32-rounded) inputs, forward
 * and backward, spanning tiles, in units of the f64 result's largest
 * magnitude. The CPU's f32 tiles take core/exp_math.h's exponential (1.11
 * ulp where libm's expf is within 1); the products' rounding dominates:
 * measured on the CPU (CT_SDPA_PRINT_ERROR=1), 6.9e-7 / 6.7e-7 / 7.4e-7 /
 * 6.0e-7 (out, grad_q, grad_k, grad_v) with libm's expf, and 6.9e-7 /
 * 6.3e-7 / 7.4e-7 / 6.0e-7 with the polynomial. Bounded here at 2e-6, ten
 * times under the 2e-5 the reference comparisons allow f32. */
CT_TEST(sdpa_f32_error_bound) {
  int64_t L = 300, S = 530, E = 64, Ev = 32;
  const int64_t shapes[4][3] = {{2, L, E}, {2, S, E}, {2, S, Ev}, {2, L, Ev}};
  double *vals[4], *res[2][4] = {{0}};
  for (int i = 0; i < 4; i++) {
    vals[i] = ct_test_random(shapes[i][0] * shapes[i][1] * shapes[i][2], -2, 2, 150 + (unsigned)i);
    ct_test_round_to(vals[i], shapes[i][0] * shapes[i][1] * shapes[i][2], CT_F32);
  }
  for (int d = 0; d < 2; d++) {
    ct_tensor *t[4];
    for (int i = 0; i < 4; i++) {
      t[i] = ct_test_make(vals[i], shapes[i], 3, d ? CT_F64 : CT_F32, CT_LAYOUT_CONTIG);
      if (i < 3) ct_requires_grad_(t[i], true);
    }
    ct_tensor *o = ct_scaled_dot_product_attention(t[0], t[1], t[2], NULL, false, 0, 0, NULL);
    CHECK_STATUS_OK(ct_backward(o, t[3], NULL));
    res[d][0] = o ? ct_test_values(o) : NULL;
    for (int i = 0; i < 3; i++)
      res[d][i + 1] = ct_grad(t[i]) ? ct_test_values(ct_grad(t[i])) : NULL;
  }
  const int64_t n[4] = {2 * L * Ev, 2 * L * E, 2 * S * E, 2 * S * Ev};
  const char *names[4] = {"out", "grad_q", "grad_k", "grad_v"};
  for (int i = 0; i < 4; i++) {
    CHECK(res[0][i] && res[1][i]);
    if (!res[0][i] || !res[1][i]) continue;
    double big = 0, err = 0;
    for (int64_t e = 0; e < n[i]; e++) {
      big = fmax(big, fabs(res[1][i][e]));
      err = fmax(err, fabs(res[0][i][e] - res[1][i][e]));
    }
    if (getenv("CT_SDPA_PRINT_ERROR")) printf("%s: %.3g\n", names[i], err / big);
    WITH_CONTEXT(CHECK(err <= 2e-6 * big), "%s: f32 error %g of %g", names[i], err, big);
  }
  for (int i = 0; i < 4; i++) free(vals[i]), free(res[0][i]), free(res[1][i]);
}

/* ---- dropout ---- */

/* With v the identity, the output is the dropped weights themselves: each is
 * 0 or the softmax weight / (1 - p); about p of them are 0. The same
 * generator state gives the same mask on the CPU and on this device. */
CT_TEST(sdpa_dropout_mask) {
  int64_t L = 40, S = 50;
  double p = 0.25;
  double *q = ct_test_random(L * 8, -1, 1, 130), *k = ct_test_random(S * 8, -1, 1, 131);
  double *eye = calloc((size_t)(S * S), sizeof(double));
  for (int64_t j = 0; j < S; j++) eye[j * S + j] = 1;
  ct_tensor *tq = ct_test_make(q, CT_SHAPE(1, L, 8), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *tk = ct_test_make(k, CT_SHAPE(1, S, 8), CT_F64, CT_LAYOUT_CONTIG);
  ct_tensor *tv = ct_test_make(eye, CT_SHAPE(1, S, S), CT_F64, CT_LAYOUT_CONTIG);
  ct_generator *g = ct_generator_new(7);
  ct_tensor *o = ct_scaled_dot_product_attention(tq, tk, tv, NULL, false, p, 0, g);
  double *w = ref_sdpa(q, k, eye, NULL, false, 1, L, S, 8, S, 1 / sqrt(8.0));
  double *got = o ? ct_test_values(o) : NULL;
  int64_t zeros = 0, bad = 0;
  for (int64_t t = 0; got && t < L * S; t++) {
    if (got[t] == 0)
      zeros++;
    else if (fabs(got[t] - w[t] / (1 - p)) > 1e-12)
      bad++;
  }
  CHECK(got != NULL);
  CHECK_MSG(bad == 0, "%lld weights neither dropped nor scaled", (long long)bad);
  double frac = (double)zeros / (double)(L * S); /* 2000 draws: sd 0.0097 */
  CHECK_MSG(fabs(frac - p) < 0.05, "dropped fraction %g for p %g", frac, p);
  /* the CPU draws the same mask from the same generator state */
  ct_generator_set_state(g, 7, 0);
  ct_tensor *oc =
      ct_scaled_dot_product_attention(ct_to(tq, ct_cpu(), NULL), ct_to(tk, ct_cpu(), NULL),
                                      ct_to(tv, ct_cpu(), NULL), NULL, false, p, 0, g);
  CHECK_CLOSE(oc, got, 1e-12, 1e-12);
  /* a second call draws another mask */
  ct_tensor *o2 = ct_scaled_dot_product_attention(tq, tk, tv, NULL, false, p, 0, g);
  double *got2 = o2 ? ct_test_values(o2) : NULL;
  int64_t differ = 0;
  for (int64_t t = 0; got && got2 && t < L * S; t++) differ += (got[t] == 0) != (got2[t] == 0);
  CHECK(differ > 0);
  /* p = 1 drops everything */
  CHECK_CLOSE(ct_scaled_dot_product_attention(tq, tk, tv, NULL, false, 1.0, 0, g),
              ((double[2000]){0}), 0, 0);
  free(q), free(k), free(eye), free(w), free(got), free(got2);
  ct_generator_free(g);
}

/* ---- PyTorch ---- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "import math\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):\n"
    "    if hasattr(F, 'scaled_dot_product_attention'):  # torch >= 2.1 has scale=\n"
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, "
    "is_causal=is_causal, scale=scale)\n"
    "    # older torch: the reference implementation its documentation gives\n"
    "    L, S = q.size(-2), k.size(-2); s = 1 / math.sqrt(q.size(-1)) if scale is None else scale\n"
    "    bias = torch.zeros(L, S, dtype=q.dtype)\n"
    "    if is_causal: bias.masked_fill_(~torch.ones(L, S, dtype=torch.bool).tril(), "
    "float('-inf'))\n"
    "    if attn_mask is not None:\n"
    "        bias = bias.masked_fill(~attn_mask, float('-inf')) if attn_mask.dtype == torch.bool "
    "else attn_mask + bias\n"
    "    return torch.softmax(q @ k.transpose(-2, -1) * s + bias, dim=-1) @ v\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "q = torch.randn(2, 3, 37, 16, dtype=torch.float64); k = torch.randn(2, 3, 53, 16, "
    "dtype=torch.float64)\n"
    "v = torch.randn(2, 3, 53, 24, dtype=torch.float64); go = torch.randn(2, 3, 37, 24, "
    "dtype=torch.float64)\n"
    "fm = torch.randn(2, 1, 37, 53, dtype=torch.float64); bm = torch.rand(37, 53) > 0.2; bm[:, 0] "
    "= True\n"
    "for n, t in [('q', q), ('k', k), ('v', v), ('go', go), ('fm', fm), ('bm', bm)]: save(n, t)\n"
    "cases = [('plain', dict()), ('causal', dict(is_causal=True)), ('float', dict(attn_mask=fm)),\n"
    "         ('bool', dict(attn_mask=bm)), ('scale', dict(scale=0.2, is_causal=True))]\n"
    "for name, kw in cases:\n"
    "    a, b, c = (t.clone().requires_grad_() for t in (q, k, v))\n"
    "    o = sdpa(a, b, c, **kw); o.backward(go)\n"
    "    save(name, o); save(name + '_gq', a.grad); save(name + '_gk', b.grad); save(name + '_gv', "
    "c.grad)\n";

CT_TEST(sdpa_matches_pytorch) {
  static const char *dir;
  static bool tried;
  if (!tried) dir = ct_test_torch_outputs("sdpa", TORCH_SCRIPT), tried = true;
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *go = ct_test_load_output(dir, "go"), *fm = ct_test_load_output(dir, "fm");
  ct_tensor *bm = ct_cast(ct_test_load_output(dir, "bm"), CT_BOOL);
  struct {
    const char *name;
    const ct_tensor *mask;
    bool causal;
    double scale;
  } cases[] = {{"plain", NULL, false, 0},
               {"causal", NULL, true, 0},
               {"float", fm, false, 0},
               {"bool", bm, false, 0},
               {"scale", NULL, true, 0.2}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ct_tensor *q = ct_requires_grad_(ct_test_load_output(dir, "q"), true);
    ct_tensor *k = ct_requires_grad_(ct_test_load_output(dir, "k"), true);
    ct_tensor *v = ct_requires_grad_(ct_test_load_output(dir, "v"), true);
    ct_tensor *o = ct_scaled_dot_product_attention(q, k, v, cases[c].mask, cases[c].causal, 0,
                                                   cases[c].scale, NULL);
    char n[64];
    CHECK_LIKE_TORCH(dir, cases[c].name, o, cases[c].name, 1e-10, 1e-10);
    CHECK_STATUS_OK(ct_backward(o, go, NULL));
    const char *sfx[3] = {"_gq", "_gk", "_gv"};
    ct_tensor *ins[3] = {q, k, v};
    for (int i = 0; i < 3; i++) {
      snprintf(n, sizeof n, "%s%s", cases[c].name, sfx[i]);
      CHECK_LIKE_TORCH(dir, n, ct_grad(ins[i]), n, 1e-9, 1e-9);
    }
  }
}

/* ---- errors ---- */

CT_TEST(sdpa_bad_arguments) {
  ct_tensor_opts f = {.dtype = CT_F32, .device = ct_test_device()},
                 d = {.dtype = CT_F64, .device = ct_test_device()};
  ct_tensor *q = ct_ones(CT_SHAPE(2, 4, 8), &f), *k = ct_ones(CT_SHAPE(2, 6, 8), &f),
            *v = ct_ones(CT_SHAPE(2, 6, 5), &f);
  CHECK_ERR_MSG(
      ct_scaled_dot_product_attention(ct_ones(CT_SHAPE(8), &f), k, v, NULL, false, 0, 0, NULL),
      CT_ERR_SHAPE, "query of at least 2 dims");
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(q, ct_ones(CT_SHAPE(2, 6, 7), &f), v, NULL, false,
                                                0, 0, NULL),
                CT_ERR_SHAPE, "key (2, 6, 7)");
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(q, k, ct_ones(CT_SHAPE(2, 5, 5), &f), NULL, false,
                                                0, 0, NULL),
                CT_ERR_SHAPE, "value (2, 5, 5)");
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(q, ct_ones(CT_SHAPE(3, 6, 8), &f), v, NULL, false,
                                                0, 0, NULL),
                CT_ERR_SHAPE, "do not broadcast");
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(q, ct_ones(CT_SHAPE(2, 6, 8), &d), v, NULL, false,
                                                0, 0, NULL),
                CT_ERR_DTYPE, "f32, f64 and f32");
  ct_tensor *qi =
      ct_ones(CT_SHAPE(2, 4, 8), &(ct_tensor_opts){.dtype = CT_I32, .device = ct_test_device()});
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(qi, k, v, NULL, false, 0, 0, NULL), CT_ERR_DTYPE,
                "floating query");
  CHECK_ERR_MSG(
      ct_scaled_dot_product_attention(q, k, v, ct_ones(CT_SHAPE(4, 5), &f), false, 0, 0, NULL),
      CT_ERR_SHAPE, "attn_mask of shape (4, 5) does not broadcast to (2, 4, 6)");
  CHECK_ERR_MSG(
      ct_scaled_dot_product_attention(q, k, v, ct_ones(CT_SHAPE(4, 6), &d), false, 0, 0, NULL),
      CT_ERR_DTYPE, "got f64");
  CHECK_ERR_MSG(
      ct_scaled_dot_product_attention(q, k, v, ct_ones(CT_SHAPE(4, 6), &f), true, 0, 0, NULL),
      CT_ERR_ARG, "is_causal");
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(q, k, v, NULL, false, 1.5, 0, NULL), CT_ERR_ARG,
                "dropout_p must be in [0, 1], got 1.5");
  CHECK_ERR_MSG(ct_scaled_dot_product_attention(q, k, v, NULL, false, 0, INFINITY, NULL),
                CT_ERR_ARG, "scale");
  CHECK(ct_scaled_dot_product_attention(NULL, k, v, NULL, false, 0, 0, NULL) == NULL);
}

/* One comparison of this device with the CPU, forward and backward: q (BH,
 * L, E), k (BH, S, E), v (BH, S, Ev), grad_out (BH, L, Ev) on both, with
 * `mk`'s mask (bool (L, S) or float (BH, L, S)) and dropout p (the same
 * generator state on both); within tol * (1 + |x|) of the CPU's results.
 * Halves: the CPU computes in f32; CUDA accumulates in f32 (rounding the
 * weights and dS to the half on its GEMM path); both round the results. */
static void match_cpu(ct_dtype dt, int64_t BH, int64_t L, int64_t S, int64_t E, int64_t Ev,
                      mask_kind mk, double p, double tol, unsigned seed) {
  double *vals[5] = {
      ct_test_random(BH * L * E, -1, 1, seed), ct_test_random(BH * S * E, -1, 1, seed + 1),
      ct_test_random(BH * S * Ev, -1, 1, seed + 2), ct_test_random(BH * L * Ev, -1, 1, seed + 3),
      ct_test_random(BH * L * S, -2, 2, seed + 4)};
  if (mk == MASK_BOOL) /* about a quarter hidden, never a whole row */
    for (int64_t t = 0; t < L * S; t++) vals[4][t] = vals[4][t] > -1 || t % S == 0;
  const int64_t shapes[5][3] = {{BH, L, E}, {BH, S, E}, {BH, S, Ev}, {BH, L, Ev}, {BH, L, S}};
  double *res[2][4] = {{0}};
  ct_generator *gen = ct_generator_new(3);
  for (int dev = 0; dev < 2; dev++) {
    ct_tensor *t[5];
    for (int i = 0; i < 5; i++) {
      t[i] = i < 4 || mk == MASK_FLOAT ? ct_test_make(vals[i], shapes[i], 3, dt, CT_LAYOUT_CONTIG)
             : mk == MASK_BOOL ? ct_test_make(vals[i], CT_SHAPE(L, S), CT_BOOL, CT_LAYOUT_CONTIG)
                               : NULL;
      if (dev == 1 && t[i]) t[i] = ct_to(t[i], ct_cpu(), NULL);
      if (i < 3) ct_requires_grad_(t[i], true);
    }
    ct_generator_set_state(gen, 11, 0);
    ct_tensor *o =
        ct_scaled_dot_product_attention(t[0], t[1], t[2], t[4], mk == MASK_CAUSAL, p, 0, gen);
    CHECK_STATUS_OK(ct_backward(o, t[3], NULL));
    res[dev][0] = o ? ct_test_values(o) : NULL;
    for (int i = 0; i < 3; i++)
      res[dev][i + 1] = ct_grad(t[i]) ? ct_test_values(ct_grad(t[i])) : NULL;
  }
  int64_t n[4] = {BH * L * Ev, BH * L * E, BH * S * E, BH * S * Ev};
  for (int i = 0; i < 4; i++) {
    CHECK(res[0][i] && res[1][i]);
    for (int64_t e = 0; res[0][i] && res[1][i] && e < n[i]; e++)
      if (!(fabs(res[0][i][e] - res[1][i][e]) <= tol * (1 + fabs(res[1][i][e])))) {
        CHECK_MSG(false,
                  "%s L=%lld S=%lld mask=%s p=%g result %d element %lld: %g here, %g on the CPU",
                  ct_dtype_name(dt), (long long)L, (long long)S, mask_names[mk], p, i, (long long)e,
                  res[0][i][e], res[1][i][e]);
        break;
      }
  }
  for (int i = 0; i < 5; i++) free(vals[i]);
  for (int i = 0; i < 4; i++) free(res[0][i]), free(res[1][i]);
  ct_generator_free(gen);
}

static double dtype_tol(ct_dtype dt) {
  return dt == CT_F64 ? 1e-12 : dt == CT_F32 ? 1e-5 : dt == CT_F16 ? 4e-3 : 3e-2;
}

/* Head dims large enough that the CUDA kernels shrink their blocks to fit
 * shared memory: the device's results and gradients equal the CPU's, on
 * every floating dtype. */
CT_TEST(sdpa_large_heads_match_cpu) {
  ct_dtype dts[4] = {CT_F64, CT_F32, CT_F16, CT_BF16};
  for (int d = 0; d < 4; d++)
    match_cpu(dts[d], 2, 21, 19, 160, 150, MASK_CAUSAL, 0, dtype_tol(dts[d]), 140);
}

/* Every dtype and mask, with and without dropout, lengths that are not
 * multiples of any tile (CUDA: the GEMM path and its row kernels; CPU:
 * 128 x 256 tiles): forward and gradients equal the CPU's. */
CT_TEST(sdpa_masks_and_dtypes_match_cpu) {
  ct_dtype dts[4] = {CT_F64, CT_F32, CT_F16, CT_BF16};
  for (int d = 0; d < 4; d++)
    for (int mk = 0; mk < 4; mk++) {
      match_cpu(dts[d], 3, 45, 71, 24, 40, (mask_kind)mk, 0, dtype_tol(dts[d]),
                200 + 10 * (unsigned)mk);
      match_cpu(dts[d], 2, 33, 33, 16, 16, (mask_kind)mk, 0.2, dtype_tol(dts[d]),
                300 + 10 * (unsigned)mk);
    }
}

/* The CUDA GEMM path keeps its (L, S) scratch under a budget
 * (CT_CUDA_SDPA_SCRATCH bytes) by taking the problems in chunks, and sends
 * a problem larger than 4 budgets to the fused kernels. With a budget of
 * 40000 bytes: f32 L = S = 40 runs 7 problems in chunks (forward 6400
 * bytes a problem, 6 a chunk; backward 12800, 3 a chunk, and a last chunk
 * of fewer); L = S = 90 one problem at a time; L = S = 250 (250 KB and
 * more) on the fused kernels, masked, with dropout, f64 and bf16 too.
 * Results as the CPU's (which ignores the setting), and gradients by
 * finite differences in f64 across chunks. */
CT_TEST(sdpa_scratch_chunks_and_fallback) {
  const char *old = getenv("CT_CUDA_SDPA_SCRATCH");
  char *saved = old ? strdup(old) : NULL;
  setenv("CT_CUDA_SDPA_SCRATCH", "40000", 1);
  match_cpu(CT_F32, 7, 40, 40, 8, 8, MASK_NONE, 0, 1e-5, 400);
  match_cpu(CT_F32, 7, 40, 40, 8, 8, MASK_FLOAT, 0, 1e-5, 410);
  match_cpu(CT_BF16, 5, 40, 40, 8, 8, MASK_CAUSAL, 0.1, 3e-2, 420);
  match_cpu(CT_F32, 3, 90, 90, 4, 4, MASK_BOOL, 0, 1e-5, 430);
  match_cpu(CT_F32, 2, 250, 250, 4, 4, MASK_CAUSAL, 0, 1e-5, 440);
  match_cpu(CT_F64, 2, 250, 250, 4, 4, MASK_FLOAT, 0.2, 1e-12, 443);
  match_cpu(CT_BF16, 2, 250, 250, 4, 4, MASK_BOOL, 0, 3e-2, 446);
  check_case(CT_F16, 2, 3, 40, 41, 8, 8, MASK_FLOAT, CT_LAYOUT_CONTIG, 0.0, 450);
  grad_ctx c = {NULL, true, 0, 0, NULL};
  ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(5, 20, 2), -1, 1, 460),
                      ct_gradcheck_input(CT_SHAPE(5, 30, 2), -1, 1, 461),
                      ct_gradcheck_input(CT_SHAPE(5, 30, 3), -1, 1, 462)};
  CHECK_GRADIENTS("sdpa chunks", sdpa_fn, &c, in, 3);
  if (saved)
    setenv("CT_CUDA_SDPA_SCRATCH", saved, 1);
  else
    unsetenv("CT_CUDA_SDPA_SCRATCH");
  free(saved);
}
