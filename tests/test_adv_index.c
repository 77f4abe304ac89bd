/* Advanced indexing (ct_index, ct_index_put(_)): values against a float64
 * reference written here (adjacent and separated indexed dims, broadcast and
 * 0-d indices, negative values, NULL dims, every layout, several dtypes),
 * accumulation of repeated points, finite-difference gradients, PyTorch as
 * an oracle for values and gradients, and errors. */
#include <unistd.h>

#include "adv_index_oracle.h"
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

/* ---- Reference ---- */

typedef struct idx_spec {
  int n; /* entries; NULL ones have nd = -1 */
  int nd[4];
  int64_t shape[4][4];
  double vals[4][16];
} idx_spec;

typedef struct ref_geom {
  int ndim, bpos, nb;
  int64_t shape[8];
  int xdim[8];
  int64_t bshape[8];
} ref_geom;

static void ref_plan(const int64_t *xs, int xn, const idx_spec *s, ref_geom *g) {
  g->nb = 0;
  for (int k = 0; k < s->n; k++) { /* broadcast the index shapes, trailing aligned */
    if (s->nd[k] < 0) continue;
    int nd = s->nd[k] > g->nb ? s->nd[k] : g->nb;
    int64_t out[8];
    for (int d = 0; d < nd; d++) {
      int da = d - (nd - g->nb), db = d - (nd - s->nd[k]);
      int64_t a = da >= 0 ? g->bshape[da] : 1, b = db >= 0 ? s->shape[k][db] : 1;
      out[d] = a == 1 ? b : a;
    }
    memcpy(g->bshape, out, sizeof out);
    g->nb = nd;
  }
  int first = -1, last = -1;
  for (int k = 0; k < s->n; k++)
    if (s->nd[k] >= 0) last = k, first = first < 0 ? k : first;
  bool adjacent = true;
  for (int k = first; k <= last; k++) adjacent = adjacent && s->nd[k] >= 0;
  /* adjacent: x[:first] + B + x[last+1:]; else B + the dims not indexed */
  g->bpos = adjacent ? first : 0;
  int r = 0;
  if (adjacent) {
    for (int d = 0; d < first; d++) g->xdim[r] = d, g->shape[r++] = xs[d];
    for (int b = 0; b < g->nb; b++) g->xdim[r] = -1, g->shape[r++] = g->bshape[b];
    for (int d = last + 1; d < xn; d++) g->xdim[r] = d, g->shape[r++] = xs[d];
  } else {
    for (int b = 0; b < g->nb; b++) g->xdim[r] = -1, g->shape[r++] = g->bshape[b];
    for (int d = 0; d < xn; d++)
      if (d >= s->n || s->nd[d] < 0) g->xdim[r] = d, g->shape[r++] = xs[d];
  }
  g->ndim = r;
}

/* Value of index k at broadcast coordinates bc. */
static int64_t ref_idx(const idx_spec *s, int k, const ref_geom *g, const int64_t *bc,
                       int64_t size) {
  int64_t off = 0;
  for (int d = 0; d < s->nd[k]; d++) {
    int64_t sz = s->shape[k][d], c = bc[g->nb - s->nd[k] + d];
    off = off * sz + (sz == 1 ? 0 : c);
  }
  int64_t v = (int64_t)s->vals[k][off];
  return v < 0 ? v + size : v;
}

/* The flat x offset of result element e. */
static int64_t ref_source(const int64_t *xs, int xn, const idx_spec *s, const ref_geom *g,
                          int64_t e) {
  int64_t rc[8], xc[8] = {0};
  for (int d = g->ndim - 1; d >= 0; d--) rc[d] = e % g->shape[d], e /= g->shape[d];
  for (int d = 0; d < g->ndim; d++)
    if (g->xdim[d] >= 0) xc[g->xdim[d]] = rc[d];
  for (int k = 0; k < s->n; k++)
    if (s->nd[k] >= 0) xc[k] = ref_idx(s, k, g, rc + g->bpos, xs[k]);
  int64_t off = 0;
  for (int d = 0; d < xn; d++) off = off * xs[d] + xc[d];
  return off;
}

static int64_t prod(const int64_t *s, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; d++) p *= s[d];
  return p;
}

/* The spec's index tensors (NULL entries kept) of dtype dt. */
static void make_indices(const idx_spec *s, ct_dtype dt, ct_tensor **out) {
  for (int k = 0; k < s->n; k++)
    out[k] =
        s->nd[k] < 0 ? NULL : ct_test_make(s->vals[k], s->shape[k], s->nd[k], dt, CT_LAYOUT_CONTIG);
}

#define NONE \
  { 0 }
static const int64_t XS[3] = {4, 5, 6};
static const idx_spec SPECS[] = {
    /* x[i, j]: i (2, 2), j (2,) broadcast */
    {2, {2, 1}, {{2, 2}, {2}}, {{0, -1, 2, 1}, {4, -5}}},
    /* x[:, i, j] */
    {3, {-1, 2, 1}, {NONE, {2, 2}, {2}}, {NONE, {0, -1, 2, 3}, {5, -6}}},
    /* x[i, :, j]: separated, block in front */
    {3, {2, -1, 1}, {{2, 2}, NONE, {2}}, {{0, -1, 2, 1}, NONE, {5, -6}}},
    /* x[i]: one index, 1-d, with repeats (the only case with repeated points) */
    {1, {1}, {{5}}, {{3, 0, 3, -4, 1}}},
    /* x[:, :, j] */
    {3, {-1, -1, 1}, {NONE, NONE, {3}}, {NONE, NONE, {5, 0, 2}}},
    /* x[0-d, :, j] */
    {3, {0, -1, 1}, {NONE, NONE, {3}}, {{2}, NONE, {5, 0, -2}}},
    /* x[empty] */
    {1, {1}, {{0}}, {NONE}},
    /* x[i, j, k] all dims, 0-d result block */
    {3, {0, 0, 0}, {NONE, NONE, NONE}, {{1}, {-2}, {3}}},
};
#define NSPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

CT_TEST(index_values) {
  const ct_dtype dts[] = {CT_F64, CT_F32, CT_F16, CT_I32, CT_U8, CT_BOOL, CT_I64};
  int64_t nx = prod(XS, 3);
  double *xv = ct_test_random(nx, -3, 3, 1);
  for (int i = 0; i < nx; i++) xv[i] = floor(xv[i] * 10) / 4;
  for (int si = 0; si < NSPECS; si++) {
    ref_geom g;
    ref_plan(XS, 3, &SPECS[si], &g);
    int64_t nr = prod(g.shape, g.ndim);
    double *ref = malloc(sizeof(double) * (size_t)(nr + 1));
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        ct_dtype dt = dts[di];
        double xr[120];
        memcpy(xr, xv, sizeof xr);
        ct_test_round_to(xr, nx, dt);
        for (int64_t e = 0; e < nr; e++) ref[e] = xr[ref_source(XS, 3, &SPECS[si], &g, e)];
        ct_tensor *x = ct_test_make(xr, XS, 3, dt, (ct_test_layout)l);
        ct_tensor *idx[4];
        make_indices(&SPECS[si], di % 2 ? CT_I32 : CT_I64, idx);
        ct_tensor *r = ct_index(x, idx, SPECS[si].n);
        WITH_CONTEXT(ct_test_check_shape(__FILE__, __LINE__, "index", r, g.shape, g.ndim),
                     "case %d %s layout %s", si, ct_dtype_name(dt), ct_test_layout_names[l]);
        WITH_CONTEXT(CHECK_CLOSE(r, ref, 0, 0), "case %d %s layout %s", si, ct_dtype_name(dt),
                     ct_test_layout_names[l]);
      }
    free(ref);
  }
  free(xv);
}

/* x.index_put(idx, v, accumulate) against the reference, in place and not. */
CT_TEST(index_put_values) {
  const ct_dtype dts[] = {CT_F64, CT_F32, CT_BF16, CT_I64, CT_I16, CT_U8};
  int64_t nx = prod(XS, 3);
  for (int si = 0; si < NSPECS; si++) {
    ref_geom g;
    ref_plan(XS, 3, &SPECS[si], &g);
    int64_t nr = prod(g.shape, g.ndim);
    /* values of the result's last dim only (broadcast over the rest) */
    int64_t vlen = g.ndim ? g.shape[g.ndim - 1] : 1;
    double vv[8] = {1, -2, 3, 5, 7, 11, 13, 17};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
      for (int acc = 0; acc < 2; acc++)
        for (int inplace = 0; inplace < 2; inplace++) {
          /* without accumulate, repeats leave an unspecified one on CUDA */
          if (!acc && si == 3) continue;
          ct_dtype dt = dts[di];
          double xr[120], ref[120];
          for (int64_t i = 0; i < nx; i++) xr[i] = (double)(i % 7);
          memcpy(ref, xr, sizeof ref);
          for (int64_t e = 0; e < nr; e++) {
            int64_t o = ref_source(XS, 3, &SPECS[si], &g, e);
            double v = vv[e % vlen];
            ref[o] = acc ? ref[o] + v : v;
          }
          ct_test_round_to(ref, nx, dt);
          ct_tensor *x =
              ct_test_make(xr, XS, 3, dt, inplace ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_SLICED);
          ct_tensor *v = ct_test_make(vv, (int64_t[]){vlen}, g.ndim ? 1 : 0, dt, CT_LAYOUT_CONTIG);
          ct_tensor *idx[4];
          make_indices(&SPECS[si], CT_I64, idx);
          ct_tensor *r = inplace ? ct_index_put_(x, idx, SPECS[si].n, v, acc)
                                 : ct_index_put(x, idx, SPECS[si].n, v, acc);
          WITH_CONTEXT(CHECK_CLOSE(r, ref, 0, 0), "case %d %s accumulate %d in place %d", si,
                       ct_dtype_name(dt), acc, inplace);
          if (inplace) WITH_CONTEXT(CHECK(r == x), "index_put_ returns x");
        }
  }
}

/* Many repeats of few points: each gets every value, exactly (integers). */
CT_TEST(index_put_accumulate_repeats) {
  ct_tensor_opts o = ct_test_opts(CT_I64);
  int64_t n = 5000;
  ct_tensor *i = ct_remainder_scalar(ct_arange(0, (double)n, 1, &o), 3);
  ct_tensor *x = ct_zeros(CT_SHAPE(3), &o);
  ct_tensor *v = ct_ones(CT_SHAPE(1), &o);
  CHECK_OK(ct_index_put_(x, (ct_tensor *[]){i}, 1, v, true));
  CHECK_CLOSE(x, ((double[]){1667, 1667, 1666}), 0, 0);
  ct_tensor_opts of = ct_test_opts(CT_F32);
  ct_tensor *xf = ct_zeros(CT_SHAPE(3, 2), &of);
  CHECK_OK(ct_index_put_(xf, (ct_tensor *[]){i}, 1, ct_full(CT_SHAPE(2), 0.5, &of), true));
  CHECK_CLOSE(xf, ((double[]){833.5, 833.5, 833.5, 833.5, 833, 833}), 0, 0);
}

/* ---- gradients ---- */

typedef struct grad_case {
  int spec;
  bool put, acc;
} grad_case;

static ct_tensor *f_index(ct_tensor *const *in, void *ctx) {
  const grad_case *c = ctx;
  ct_tensor *idx[4];
  make_indices(&SPECS[c->spec], CT_I64, idx);
  if (!c->put) return ct_index(in[0], idx, SPECS[c->spec].n);
  return ct_index_put(in[0], idx, SPECS[c->spec].n, in[1], c->acc);
}

CT_TEST(index_gradients) {
  for (int si = 0; si < NSPECS; si++)
    for (int k = 0; k < 3; k++) {
      grad_case c = {si, k > 0, k == 2};
      if (c.put && !c.acc && si == 3) continue; /* repeated points: no derivative */
      ref_geom g;
      ref_plan(XS, 3, &SPECS[si], &g);
      ct_tensor *in[2] = {ct_gradcheck_input(XS, 3, -1, 1, (unsigned)si),
                          ct_gradcheck_input(g.shape + 1, g.ndim ? g.ndim - 1 : 0, -1, 1, 9)};
      WITH_CONTEXT(CHECK_GRADIENTS("index", f_index, &c, in, c.put ? 2 : 1),
                   "case %d put %d accumulate %d", si, c.put, c.acc);
    }
}

/* In place on a non-leaf: the history rewritten, as torch. */
CT_TEST(index_put_inplace_gradient) {
  ct_tensor *w = ct_gradcheck_input(CT_SHAPE(4, 3), -1, 1, 3),
            *v = ct_gradcheck_input(CT_SHAPE(3), -1, 1, 4);
  ct_tensor *y = ct_mul_scalar(w, 2.0);
  ct_tensor *i = ct_test_make((double[]){2, 0}, CT_SHAPE(2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_OK(ct_index_put_(y, (ct_tensor *[]){i}, 1, v, false));
  CHECK_STATUS_OK(ct_backward(ct_sum(y, NULL), NULL, NULL));
  CHECK_CLOSE(ct_grad(w), ((double[]){0, 0, 0, 2, 2, 2, 0, 0, 0, 2, 2, 2}), 0, 0);
  CHECK_CLOSE(ct_grad(v), ((double[]){2, 2, 2}), 0, 0);
}

/* ---- PyTorch ---- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.randn(4, 5, 6, 3, dtype=torch.float64, requires_grad=True); save('x', x)\n"
    "i = torch.tensor([[0, -1], [2, 1]]); j = torch.tensor([4, -5]); k = torch.tensor([1, 2, 1])\n"
    "for n, t in [('i', i), ('j', j), ('k', k)]: save(n, t)\n"
    "cases = {'a': lambda x: x[i, j], 'b': lambda x: x[:, i, j], 'c': lambda x: x[i, :, j],\n"
    "         'd': lambda x: x[:, i, :, k[:2]], 'e': lambda x: x[k]}\n"
    "for n, f in cases.items():\n"
    "    x.grad = None; r = f(x); save(n, r)\n"
    "    (r * torch.arange(r.numel(), dtype=torch.float64).reshape(r.shape)).sum().backward()\n"
    "    save(n + '_g', x.grad)\n"
    "v = torch.randn(2, 1, 6, 3, dtype=torch.float64, requires_grad=True); save('v', v)\n"
    "for acc in (0, 1):\n"
    "    x.grad = None; v.grad = None\n"
    "    r = x.index_put((k[:2].reshape(2, 1), i[0]), v, accumulate=bool(acc)); save(f'p{acc}', "
    "r)\n"
    "    (r * r).sum().backward(); save(f'p{acc}_gx', x.grad); save(f'p{acc}_gv', v.grad)\n";

CT_TEST(index_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("adv_index", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x = ct_requires_grad_(ct_test_load_output(dir, "x"), true);
  ct_tensor *i = ct_cast(ct_test_load_output(dir, "i"), CT_I64),
            *j = ct_cast(ct_test_load_output(dir, "j"), CT_I32),
            *k = ct_cast(ct_test_load_output(dir, "k"), CT_I64);
  ct_tensor *k2 = ct_slice(k, 0, 0, 2, 1);
  ct_tensor *sets[5][4] = {{i, j}, {NULL, i, j}, {i, NULL, j}, {NULL, i, NULL, k2}, {k}};
  const int ns[5] = {2, 3, 3, 4, 1};
  const char *names[5] = {"a", "b", "c", "d", "e"};
  check_index_like_torch(dir, x, sets, ns, names, 5);
  ct_tensor *v = ct_requires_grad_(ct_test_load_output(dir, "v"), true);
  check_put_like_torch(dir, x, (ct_tensor *[]){ct_reshape(k2, CT_SHAPE(2, 1)), ct_select(i, 0, 0)},
                       2, v);
}

CT_TEST(index_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *x = ct_ones(CT_SHAPE(3, 4), &o);
  ct_tensor *i = ct_test_make((double[]){0, 3}, CT_SHAPE(2), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_index(x, (ct_tensor *[]){i}, 1)), CT_ERR_ARG,
                "index 3 is out of bounds for dim 0 with size 3");
  ct_tensor *neg = ct_test_make((double[]){-5}, CT_SHAPE(1), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_test_synced(ct_index(x, (ct_tensor *[]){NULL, neg}, 2)), CT_ERR_ARG,
                "index -5 is out of bounds for dim 1 with size 4");
  CHECK_ERR_MSG(ct_index(x, (ct_tensor *[]){i, i, i}, 3), CT_ERR_ARG,
                "3 indices for a tensor of 2 dims");
  CHECK_ERR_MSG(ct_index(x, (ct_tensor *[]){NULL, NULL}, 2), CT_ERR_ARG, "every index is NULL");
  CHECK_ERR_MSG(ct_index(x, (ct_tensor *[]){x}, 1), CT_ERR_DTYPE, "position 0 must be an integer");
  ct_tensor *i3 = ct_test_make((double[]){0, 1, 2}, CT_SHAPE(3), CT_I64, CT_LAYOUT_CONTIG);
  CHECK_ERR_MSG(ct_index(x, (ct_tensor *[]){i, i3}, 2), CT_ERR_SHAPE,
                "positions 0 and 1 (shapes (2,) and (3,)) don't broadcast");
  CHECK_ERR_MSG(ct_index_put(x, (ct_tensor *[]){i3}, 1, ct_ones(CT_SHAPE(3), &o), false),
                CT_ERR_SHAPE, "values of shape (3,) don't broadcast to the indexed shape (3, 4)");
  ct_tensor_opts ob = ct_test_opts(CT_F64), oi = ct_test_opts(CT_I32);
  CHECK_ERR_MSG(ct_index_put(ct_ones(CT_SHAPE(3), &oi), (ct_tensor *[]){i3}, 1,
                             ct_ones(CT_SHAPE(1), &ob), false),
                CT_ERR_DTYPE, "f64 can't be written into a i32");
  ct_tensor *e = ct_ones(CT_SHAPE(0, 2), &o);
  CHECK_ERR_MSG(ct_index(e, (ct_tensor *[]){i}, 1), CT_ERR_ARG, "dim 0 with size 0");
  CHECK_ERR_MSG(ct_index_put_(ct_expand(ct_ones(CT_SHAPE(1, 4), &o), CT_SHAPE(3, 4)),
                              (ct_tensor *[]){i3}, 1, ct_ones(CT_SHAPE(1), &o), false),
                CT_ERR_ARG, "share memory");
  ct_clear_error();
  CHECK(ct_index(NULL, (ct_tensor *[]){i}, 1) == NULL);
  CHECK(ct_index_put(x, (ct_tensor *[]){i}, 1, NULL, false) == NULL);
}
