/* addmm, baddbmm and outer: values against a float64 reference computed here
 * (broadcast inputs, every beta/alpha path, transposed operands, integer and
 * half dtypes), finite-difference gradients, PyTorch as an oracle for values
 * and gradients, and errors. */
#include <unistd.h>

#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

/* Row-major (B, n, m) reference of beta * input + alpha * (a @ b); input has
 * shape is[0..in) broadcast against (B, n, m) (trailing alignment). */
static double *ref_baddbmm(const double *inp, const int64_t *is, int in, const double *a,
                           const double *b, int64_t B, int64_t n, int64_t k, int64_t m, double beta,
                           double alpha) {
  double *out = malloc(sizeof(double) * (size_t)(B * n * m + 1));
  int64_t full[3] = {B, n, m};
  for (int64_t t = 0; t < B; t++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) s += a[(t * n + i) * k + p] * b[(t * k + p) * m + j];
        int64_t c[3] = {t, i, j}, off = 0;
        for (int d = 0; d < in; d++) {
          int64_t size = is[d], idx = c[3 - in + d];
          (void)full;
          off = off * size + (size == 1 ? 0 : idx);
        }
        double v = alpha * s;
        if (beta != 0) v += beta * inp[off];
        out[(t * n + i) * m + j] = v;
      }
  return out;
}

static int64_t numel_of(const int64_t *s, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; d++) p *= s[d];
  return p;
}

typedef struct mm_case {
  int64_t B, n, k, m;
  int64_t ishape[3];
  int ind;
  double beta, alpha;
} mm_case;

static void check_mm_case(const mm_case *c, bool batched, ct_dtype dt, ct_test_layout lay) {
  int64_t B = batched ? c->B : 1;
  int64_t as[3] = {B, c->n, c->k}, bs[3] = {B, c->k, c->m};
  int nd = batched ? 3 : 2, off = batched ? 0 : 1;
  int64_t na = B * c->n * c->k, nb = B * c->k * c->m, ni = numel_of(c->ishape, c->ind);
  bool integral = !ct_dtype_is_floating(dt);
  double *av = ct_test_random(na, -1, 1, 3), *bv = ct_test_random(nb, -1, 1, 5),
         *iv = ct_test_random(ni, -1, 1, 7);
  if (integral)
    for (int64_t i = 0; i < na + nb + ni; i++) {
      double *v = i < na ? &av[i] : i < na + nb ? &bv[i - na] : &iv[i - na - nb];
      *v = floor(*v * 4.5 + 0.5);
    }
  ct_test_round_to(av, na, dt), ct_test_round_to(bv, nb, dt), ct_test_round_to(iv, ni, dt);
  ct_tensor *a = ct_test_make(av, as + off, nd, dt, lay),
            *b = ct_test_make(bv, bs + off, nd, dt, lay),
            *inp = ct_test_make(iv, c->ishape, c->ind, dt, CT_LAYOUT_CONTIG);
  if (c->beta == 0 && ni > 0 && ct_dtype_is_floating(dt)) /* not read: nan doesn't propagate */
    inp =
        ct_full(c->ishape, c->ind, NAN, &(ct_tensor_opts){.dtype = dt, .device = ct_test_device()});
  ct_tensor *r =
      batched ? ct_baddbmm(inp, a, b, c->beta, c->alpha) : ct_addmm(inp, a, b, c->beta, c->alpha);
  double *ref = ref_baddbmm(iv, c->ishape, c->ind, av, bv, B, c->n, c->k, c->m, c->beta, c->alpha);
  double tol = dt == CT_F64 ? 1e-12 : dt == CT_F32 ? 1e-5 : dt == CT_F16 ? 1e-2 : 5e-2;
  if (integral) tol = 0;
  WITH_CONTEXT(CHECK_CLOSE(r, ref, tol, tol * (double)(c->k + 1)),
               "%s %s layout %s (B %lld n %lld k %lld m %lld, beta %g alpha %g)",
               batched ? "baddbmm" : "addmm", ct_dtype_name(dt), ct_test_layout_names[lay],
               (long long)B, (long long)c->n, (long long)c->k, (long long)c->m, c->beta, c->alpha);
  if (r) WITH_CONTEXT(CHECK(ct_dtype_of(r) == dt), "result dtype");
  free(av), free(bv), free(iv), free(ref);
}

static const mm_case MM_CASES[] = {
    {2, 3, 4, 5, {3, 5}, 2, 1, 1}, {2, 3, 4, 5, {5}, 1, 0.5, 1}, {2, 3, 4, 5, {3, 1}, 2, 0, 2},
    {2, 3, 4, 5, {1}, 1, 2, -1.5}, {3, 4, 7, 2, {0}, 0, 1, 3},   {2, 1, 3, 1, {1, 1}, 2, -1, 1},
    {1, 3, 0, 4, {4}, 1, 2, 1},    {2, 0, 3, 4, {4}, 1, 1, 1},   {4, 5, 6, 3, {5, 3}, 2, 1, 0},
};

CT_TEST(addmm_baddbmm_values) {
  const ct_dtype dts[] = {CT_F64, CT_F32, CT_I64, CT_I32, CT_F16, CT_BF16};
  for (size_t i = 0; i < sizeof MM_CASES / sizeof MM_CASES[0]; i++)
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
      for (int lay = CT_LAYOUT_CONTIG; lay <= CT_LAYOUT_OFFSET; lay++)
        for (int batched = 0; batched < 2; batched++) {
          mm_case c = MM_CASES[i];
          if (batched && c.ind == 2) { /* also a batched input shape */
            c.ishape[2] = c.ishape[1], c.ishape[1] = c.ishape[0], c.ishape[0] = c.B, c.ind = 3;
          }
          if (!ct_dtype_is_floating(dts[d]) &&
              (c.beta != floor(c.beta) || c.alpha != floor(c.alpha)))
            continue;
          check_mm_case(&c, batched, dts[d], (ct_test_layout)lay);
        }
}

CT_TEST(outer_values) {
  double av[3] = {1, -2, 0.5}, bv[4] = {3, 0.25, -1, 2};
  ct_tensor *a = ct_test_make(av, CT_SHAPE(3), CT_F64, CT_LAYOUT_SLICED),
            *b = ct_test_make(bv, CT_SHAPE(4), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *r = ct_outer(a, b);
  double ref[12];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) ref[i * 4 + j] = av[i] * bv[j];
  CHECK_SHAPE(r, 3, 4);
  CHECK_CLOSE(r, ref, 0, 0);
  CHECK(ct_dtype_of(r) == CT_F64); /* promoted as mul */
  ct_tensor *e = ct_outer(ct_test_make(av, CT_SHAPE(0), CT_I64, CT_LAYOUT_CONTIG), b);
  CHECK_SHAPE(e, 0, 4);
}

/* ---- gradients ---- */

static ct_tensor *f_addmm(ct_tensor *const *in, void *ctx) {
  const double *ba = ctx;
  return ct_addmm(in[0], in[1], in[2], ba[0], ba[1]);
}
static ct_tensor *f_baddbmm(ct_tensor *const *in, void *ctx) {
  const double *ba = ctx;
  return ct_baddbmm(in[0], in[1], ct_transpose(in[2], 1, 2), ba[0], ba[1]);
}
static ct_tensor *f_outer(ct_tensor *const *in, void *ctx) {
  (void)ctx;
  return ct_outer(in[0], in[1]);
}

CT_TEST(products_gradients) {
  const double coefs[][2] = {{1, 1}, {0.5, -2}, {0, 1.5}};
  for (int i = 0; i < 3; i++) {
    ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(4), -1, 1, 1),
                        ct_gradcheck_input(CT_SHAPE(3, 5), -1, 1, 2),
                        ct_gradcheck_input(CT_SHAPE(5, 4), -1, 1, 3)};
    WITH_CONTEXT(CHECK_GRADIENTS("addmm", f_addmm, (void *)coefs[i], in, 3), "beta %g alpha %g",
                 coefs[i][0], coefs[i][1]);
    ct_tensor *bin[3] = {ct_gradcheck_input(CT_SHAPE(3, 1), -1, 1, 4),
                         ct_gradcheck_input(CT_SHAPE(2, 3, 5), -1, 1, 5),
                         ct_gradcheck_input(CT_SHAPE(2, 4, 5), -1, 1, 6)};
    WITH_CONTEXT(CHECK_GRADIENTS("baddbmm", f_baddbmm, (void *)coefs[i], bin, 3),
                 "beta %g alpha %g", coefs[i][0], coefs[i][1]);
  }
  ct_tensor *oin[2] = {ct_gradcheck_input(CT_SHAPE(3), -1, 1, 7),
                       ct_gradcheck_input(CT_SHAPE(4), -1, 1, 8)};
  CHECK_GRADIENTS("outer", f_outer, NULL, oin, 2);
}

/* ---- PyTorch ---- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "def leaf(*s): return torch.randn(*s, dtype=torch.float64, requires_grad=True)\n"
    "i, a, b = leaf(1, 4), leaf(3, 5), leaf(5, 4)\n"
    "bi, ba, bb = leaf(3, 4), leaf(2, 3, 5), leaf(2, 5, 4)\n"
    "u, v = leaf(3), leaf(4)\n"
    "for n, t in [('i', i), ('a', a), ('b', b), ('bi', bi), ('ba', ba), ('bb', bb), ('u', u), "
    "('v', v)]: save(n, t)\n"
    "r = torch.addmm(i, a, b, beta=0.5, alpha=-2.0); save('addmm', r)\n"
    "r.backward(torch.ones_like(r) * torch.arange(4.0, dtype=torch.float64))\n"
    "for n, t in [('i', i), ('a', a), ('b', b)]: save('addmm_g' + n, t.grad)\n"
    "r = torch.baddbmm(bi, ba, bb, beta=2.0, alpha=0.25); save('baddbmm', r); r.sum().backward()\n"
    "for n, t in [('bi', bi), ('ba', ba), ('bb', bb)]: save('baddbmm_g' + n, t.grad)\n"
    "r = torch.outer(u, v); save('outer', r); (r * r).sum().backward()\n"
    "save('outer_gu', u.grad); save('outer_gv', v.grad)\n";

CT_TEST(products_match_pytorch) {
  const char *dir = ct_test_torch_outputs("products", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  const char *names[8] = {"i", "a", "b", "bi", "ba", "bb", "u", "v"};
  ct_tensor *t[8];
  for (int k = 0; k < 8; k++) t[k] = ct_requires_grad_(ct_test_load_output(dir, names[k]), true);
  ct_tensor *r = ct_addmm(t[0], t[1], t[2], 0.5, -2.0);
  CHECK_LIKE_TORCH(dir, "addmm", r, "addmm", 1e-12, 1e-12);
  ct_tensor *w =
      ct_expand(ct_arange(0, 4, 1, &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()}),
                CT_SHAPE(3, 4));
  CHECK_STATUS_OK(ct_backward(r, w, NULL));
  CHECK_LIKE_TORCH(dir, "addmm grad input", ct_grad(t[0]), "addmm_gi", 1e-12, 1e-12);
  CHECK_LIKE_TORCH(dir, "addmm grad mat1", ct_grad(t[1]), "addmm_ga", 1e-12, 1e-12);
  CHECK_LIKE_TORCH(dir, "addmm grad mat2", ct_grad(t[2]), "addmm_gb", 1e-12, 1e-12);
  r = ct_baddbmm(t[3], t[4], t[5], 2.0, 0.25);
  CHECK_LIKE_TORCH(dir, "baddbmm", r, "baddbmm", 1e-12, 1e-12);
  CHECK_STATUS_OK(ct_backward(ct_sum(r, NULL), NULL, NULL));
  CHECK_LIKE_TORCH(dir, "baddbmm grad input", ct_grad(t[3]), "baddbmm_gbi", 1e-12, 1e-12);
  CHECK_LIKE_TORCH(dir, "baddbmm grad b1", ct_grad(t[4]), "baddbmm_gba", 1e-12, 1e-12);
  CHECK_LIKE_TORCH(dir, "baddbmm grad b2", ct_grad(t[5]), "baddbmm_gbb", 1e-12, 1e-12);
  r = ct_outer(t[6], t[7]);
  CHECK_LIKE_TORCH(dir, "outer", r, "outer", 1e-12, 1e-12);
  CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(r, r), NULL), NULL, NULL));
  CHECK_LIKE_TORCH(dir, "outer grad a", ct_grad(t[6]), "outer_gu", 1e-12, 1e-12);
  CHECK_LIKE_TORCH(dir, "outer grad b", ct_grad(t[7]), "outer_gv", 1e-12, 1e-12);
}

CT_TEST(products_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_ones(CT_SHAPE(3, 4), &o), *b = ct_ones(CT_SHAPE(4, 5), &o);
  CHECK_ERR_MSG(ct_addmm(ct_ones(CT_SHAPE(4), &o), a, b, 1, 1), CT_ERR_SHAPE,
                "addmm: input of shape (4,)");
  CHECK_ERR_MSG(ct_addmm(ct_ones(CT_SHAPE(5), &o), a, a, 1, 1), CT_ERR_SHAPE,
                "cannot be multiplied");
  CHECK_ERR_MSG(ct_addmm(ct_ones(CT_SHAPE(5), &o), a, ct_ones(CT_SHAPE(4), &o), 1, 1), CT_ERR_SHAPE,
                "expected 2-d");
  ct_tensor_opts o64 = ct_test_opts(CT_F64);
  CHECK_ERR_MSG(ct_addmm(ct_ones(CT_SHAPE(5), &o64), a, b, 1, 1), CT_ERR_DTYPE, "f64, f32 and f32");
  ct_tensor_opts oi = ct_test_opts(CT_I32);
  ct_tensor *ai = ct_ones(CT_SHAPE(3, 4), &oi), *bi = ct_ones(CT_SHAPE(4, 5), &oi);
  CHECK_ERR_MSG(ct_addmm(ct_ones(CT_SHAPE(5), &oi), ai, bi, 0.5, 1), CT_ERR_ARG, "beta (0.5)");
  ct_tensor_opts ob = ct_test_opts(CT_BOOL);
  CHECK_ERR(ct_addmm(ct_ones(CT_SHAPE(5), &ob), ct_ones(CT_SHAPE(3, 4), &ob),
                     ct_ones(CT_SHAPE(4, 5), &ob), 1, 1),
            CT_ERR_DTYPE);
  ct_tensor *a3 = ct_ones(CT_SHAPE(2, 3, 4), &o), *b3 = ct_ones(CT_SHAPE(3, 4, 5), &o);
  CHECK_ERR_MSG(ct_baddbmm(ct_ones(CT_SHAPE(5), &o), a3, b3, 1, 1), CT_ERR_SHAPE,
                "baddbmm: shapes (2, 3, 4) and (3, 4, 5)");
  CHECK_ERR_MSG(ct_baddbmm(ct_ones(CT_SHAPE(5), &o), a, b, 1, 1), CT_ERR_SHAPE, "expected 3-d");
  CHECK_ERR_MSG(ct_outer(a, b), CT_ERR_SHAPE, "outer: expected 1-d");
  ct_clear_error();
  CHECK(ct_addmm(NULL, a, b, 1, 1) == NULL);
  CHECK(ct_outer(NULL, NULL) == NULL);
}
