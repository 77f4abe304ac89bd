/* Bool masks in advanced indexing (x[mask], x[:, mask], masks mixed with
 * integer indices, x[mask] = v with and without accumulate): values against
 * a float64 reference written here, finite-difference gradients, PyTorch as
 * an oracle for values and gradients, and errors. */
#include "adv_index_oracle.h"
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static const int64_t XS[3] = {4, 5, 6};

/* The masks: true where vals[i] is nonzero. */
static const double M0[4] = {1, 0, 1, 1};    /* dim 0 */
static const double M1[5] = {0, 1, 1, 0, 1}; /* dim 1 */
static const double M01[20] = {1, 0, 0, 1, 0, 0, 1, 1, 0, 0,
                               0, 0, 0, 0, 0, 1, 0, 1, 1, 0}; /* 0,1 */

/* A case: x[idx] where position k holds a mask (mask_nd dims, from vals),
 * an i64 index (int_n values) or nothing (NULL). */
typedef struct mask_case {
  const char *name;
  int n;
  int kind[3]; /* 0 NULL, 1 mask, 2 integer */
  const double *vals[3];
  int nd[3];      /* a mask's dims, or 1 */
  int64_t len[3]; /* an integer index's length */
} mask_case;

static const double J2[3] = {5, -6, 2};
static const mask_case CASES[] = {
    {"x[m0]", 1, {1}, {M0}, {1}, {0}},
    {"x[m01]", 1, {1}, {M01}, {2}, {0}},
    {"x[:, m1]", 2, {0, 1}, {NULL, M1}, {1, 1}, {0}},
    {"x[m0, :, j]", 3, {1, 0, 2}, {M0, NULL, J2}, {1, 1, 1}, {0, 0, 3}},
    {"x[m01, j]", 2, {1, 2}, {M01, J2 + 2}, {2, 1}, {0, 1}},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static ct_tensor *case_index(const mask_case *c, int k) {
  if (c->kind[k] == 0) return NULL;
  if (c->kind[k] == 2)
    return ct_test_make(c->vals[k], (int64_t[]){c->len[k]}, 1, CT_I64, CT_LAYOUT_CONTIG);
  int d0 = 0;
  for (int i = 0; i < k; i++) d0 += c->nd[i];
  return ct_test_make(c->vals[k], XS + d0, c->nd[k], CT_BOOL, CT_LAYOUT_CONTIG);
}

/* The reference geometry: the points (x coordinates of the indexed dims),
 * the result's shape and, per result element, its x offset. */
typedef struct ref {
  int ndim;
  int64_t shape[3], numel;
  int64_t src[128];
} ref;

static void ref_case(const mask_case *c, ref *r) {
  int dims[3], nd = 0, d = 0;
  int64_t pts[32][3], K = 1; /* the points, as torch expands the masks */
  bool have = false;
  for (int k = 0; k < c->n; k++) {
    if (c->kind[k] == 0) {
      d++;
      continue;
    }
    int64_t col[32][3], n = 0;
    if (c->kind[k] == 1) { /* coordinates of the true elements, row-major */
      int64_t size = c->nd[k] == 1 ? XS[d] : XS[d] * XS[d + 1];
      for (int64_t e = 0; e < size; e++)
        if (c->vals[k][e] != 0) {
          if (c->nd[k] == 1)
            col[n][0] = e;
          else
            col[n][0] = e / XS[d + 1], col[n][1] = e % XS[d + 1];
          n++;
        }
    } else
      for (; n < c->len[k]; n++)
        col[n][0] = (int64_t)c->vals[k][n] + (c->vals[k][n] < 0 ? XS[d] : 0);
    /* broadcast (K) with (n): one of them is 1 in these cases */
    int64_t Kn = have ? (K > n ? K : n) : n;
    for (int64_t p = Kn - 1; p >= 0; p--) {
      for (int i = 0; i < c->nd[k]; i++) pts[p][nd + i] = col[n == 1 ? 0 : p][i];
      for (int i = 0; i < nd; i++) pts[p][i] = pts[K == 1 ? 0 : p][i];
    }
    for (int i = 0; i < c->nd[k]; i++) dims[nd++] = d++;
    K = Kn, have = true;
  }
  bool adjacent = dims[nd - 1] - dims[0] == nd - 1;
  int bpos = adjacent ? dims[0] : 0, free_dims[3], nf = 0;
  for (int x = 0; x < 3; x++) {
    bool idx = false;
    for (int i = 0; i < nd; i++) idx = idx || dims[i] == x;
    if (!idx) free_dims[nf++] = x;
  }
  r->ndim = nf + 1;
  for (int q = 0, f = 0; q < r->ndim; q++) r->shape[q] = q == bpos ? K : XS[free_dims[f++]];
  r->numel = 1;
  for (int q = 0; q < r->ndim; q++) r->numel *= r->shape[q];
  for (int64_t e = 0; e < r->numel; e++) {
    int64_t rc[4], xc[3], t = e;
    for (int q = r->ndim - 1; q >= 0; q--) rc[q] = t % r->shape[q], t /= r->shape[q];
    for (int q = 0, f = 0; q < r->ndim; q++)
      if (q == bpos)
        for (int i = 0; i < nd; i++) xc[dims[i]] = pts[rc[q]][i];
      else
        xc[free_dims[f++]] = rc[q];
    r->src[e] = (xc[0] * XS[1] + xc[1]) * XS[2] + xc[2];
  }
}

static ct_tensor *index_of(const mask_case *c, const ct_tensor *x) {
  ct_tensor *idx[3];
  for (int k = 0; k < c->n; k++) idx[k] = case_index(c, k);
  return ct_index(x, idx, c->n);
}

CT_TEST(mask_index_values) {
  const ct_dtype dts[] = {CT_F64, CT_F32, CT_I32, CT_BOOL};
  double *xv = ct_test_random(120, -3, 3, 7);
  for (int i = 0; i < 120; i++) xv[i] = floor(xv[i] * 10) / 4;
  for (int ci = 0; ci < NCASES; ci++) {
    ref r;
    ref_case(&CASES[ci], &r);
    double want[128];
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        double xr[120];
        memcpy(xr, xv, sizeof xr);
        ct_test_round_to(xr, 120, dts[di]);
        for (int64_t e = 0; e < r.numel; e++) want[e] = xr[r.src[e]];
        ct_tensor *got = index_of(&CASES[ci], ct_test_make(xr, XS, 3, dts[di], (ct_test_layout)l));
        WITH_CONTEXT(ct_test_check_shape(__FILE__, __LINE__, "index", got, r.shape, r.ndim),
                     "%s %s", CASES[ci].name, ct_dtype_name(dts[di]));
        WITH_CONTEXT(CHECK_CLOSE(got, want, 0, 0), "%s %s layout %s", CASES[ci].name,
                     ct_dtype_name(dts[di]), ct_test_layout_names[l]);
      }
  }
  free(xv);
}

/* x[idx] = v (accumulate: +=) with v a scalar-like (1), a 0-d, or of the
 * indexed shape, in place and not. */
CT_TEST(mask_index_put_values) {
  const ct_dtype dts[] = {CT_F64, CT_F32, CT_I64};
  for (int ci = 0; ci < NCASES; ci++) {
    ref r;
    ref_case(&CASES[ci], &r);
    double vv[128];
    for (int64_t e = 0; e < r.numel; e++) vv[e] = (double)(e % 11) - 4;
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
      for (int vk = 0; vk < 3; vk++)
        for (int mode = 0; mode < 4; mode++) { /* accumulate x in place */
          bool acc = mode & 1, inplace = mode & 2;
          double xr[120], want[120];
          for (int i = 0; i < 120; i++) xr[i] = want[i] = (double)(i % 7);
          for (int64_t e = 0; e < r.numel; e++) {
            double v = vk == 2 ? vv[e] : 2.5;
            want[r.src[e]] = acc ? want[r.src[e]] + v : v;
          }
          ct_test_round_to(want, 120, dts[di]);
          ct_tensor *v =
              vk == 2   ? ct_test_make(vv, r.shape, r.ndim, dts[di], CT_LAYOUT_CONTIG)
              : vk == 1 ? ct_test_make((double[]){2.5}, NULL, 0, CT_F64, CT_LAYOUT_CONTIG)
                        : ct_test_make((double[]){2.5}, CT_SHAPE(1), dts[di], CT_LAYOUT_CONTIG);
          if (vk == 1 && dts[di] != CT_F64) v = ct_cast(v, dts[di]);
          ct_tensor *x = ct_test_make(xr, XS, 3, dts[di], CT_LAYOUT_TRANSPOSED);
          ct_tensor *idx[3];
          for (int k = 0; k < CASES[ci].n; k++) idx[k] = case_index(&CASES[ci], k);
          ct_tensor *got = inplace ? ct_index_put_(x, idx, CASES[ci].n, v, acc)
                                   : ct_index_put(x, idx, CASES[ci].n, v, acc);
          WITH_CONTEXT(CHECK_CLOSE(got, want, 0, 0), "%s %s values %d accumulate %d in place %d",
                       CASES[ci].name, ct_dtype_name(dts[di]), vk, acc, inplace);
          if (inplace) CHECK(got == x);
        }
  }
}

/* ---- gradients ---- */

typedef struct grad_case {
  int ci;
  bool put, acc;
} grad_case;

static ct_tensor *f_masked(ct_tensor *const *in, void *ctx) {
  const grad_case *g = ctx;
  const mask_case *c = &CASES[g->ci];
  if (!g->put) return index_of(c, in[0]);
  ct_tensor *idx[3];
  for (int k = 0; k < c->n; k++) idx[k] = case_index(c, k);
  /* through a non-leaf, in place: the history rewritten */
  return ct_index_put_(ct_mul_scalar(in[0], 1.5), idx, c->n, in[1], g->acc);
}

CT_TEST(mask_index_gradients) {
  for (int ci = 0; ci < NCASES; ci++)
    for (int k = 0; k < 3; k++) {
      grad_case g = {ci, k > 0, k == 2};
      ref r;
      ref_case(&CASES[ci], &r);
      ct_tensor *in[2] = {ct_gradcheck_input(XS, 3, -1, 1, (unsigned)ci),
                          ct_gradcheck_input(r.shape, r.ndim, -1, 1, 9)};
      WITH_CONTEXT(CHECK_GRADIENTS("masked index", f_masked, &g, in, g.put ? 2 : 1),
                   "%s put %d accumulate %d", CASES[ci].name, g.put, g.acc);
    }
}

/* ---- PyTorch ---- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True); save('x', x)\n"
    "m = x.detach()[:, :, 0] > 0; b = x.detach()[0, 0, :] < 0.3; save('mk', m); save('bk', b)\n"
    "j = torch.tensor([2]); save('j', j)\n"
    "cases = {'a': lambda x: x[m], 'b': lambda x: x[:, :, b], 'c': lambda x: x[m, j],\n"
    "         'd': lambda x: x[m[:, 0], :, b] if b.sum() == m[:, 0].sum() else x[m[:, 0], j]}\n"
    "for n, f in cases.items():\n"
    "    x.grad = None; r = f(x); save(n, r)\n"
    "    (r * torch.arange(r.numel(), dtype=torch.float64).reshape(r.shape)).sum().backward()\n"
    "    save(n + '_g', x.grad)\n"
    "v = torch.randn(int(m.sum()), 5, dtype=torch.float64, requires_grad=True); save('v', v)\n"
    "for acc in (0, 1):\n"
    "    x.grad = None; v.grad = None\n"
    "    r = x.index_put((m,), v, accumulate=bool(acc)); save(f'p{acc}', r)\n"
    "    (r * r).sum().backward(); save(f'p{acc}_gx', x.grad); save(f'p{acc}_gv', v.grad)\n";

CT_TEST(mask_index_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("adv_index_mask", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x = ct_requires_grad_(ct_test_load_output(dir, "x"), true);
  ct_tensor *m = ct_cast(ct_test_load_output(dir, "mk"), CT_BOOL),
            *b = ct_cast(ct_test_load_output(dir, "bk"), CT_BOOL),
            *j = ct_cast(ct_test_load_output(dir, "j"), CT_I64);
  ct_tensor *m0 = ct_select(m, 1, 0);
  double *mv = ct_test_values(m0), *bv = ct_test_values(b);
  int64_t km = 0, kb = 0;
  for (int i = 0; i < 3; i++) km += mv[i] != 0;
  for (int i = 0; i < 5; i++) kb += bv[i] != 0;
  free(mv), free(bv);
  ct_tensor *sets[4][4] = {{m}, {NULL, NULL, b}, {m, j}, {m0, NULL, b}};
  if (km != kb) sets[3][1] = j, sets[3][2] = NULL; /* the script's other branch */
  const int ns[4] = {1, 3, 2, km != kb ? 2 : 3};
  const char *names[4] = {"a", "b", "c", "d"};
  check_index_like_torch(dir, x, sets, ns, names, 4);
  check_put_like_torch(dir, x, (ct_tensor *[]){m}, 1,
                       ct_requires_grad_(ct_test_load_output(dir, "v"), true));
}

CT_TEST(mask_index_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32), ob = ct_test_opts(CT_BOOL);
  ct_tensor *x = ct_ones(CT_SHAPE(3, 4), &o);
  CHECK_ERR_MSG(ct_index(x, (ct_tensor *[]){ct_ones(CT_SHAPE(4), &ob)}, 1), CT_ERR_SHAPE,
                "index: the mask at position 0 has shape (4,), but the dims 0 to 0 of the indexed "
                "tensor it covers are (3,)");
  CHECK_ERR_MSG(ct_index_put_(x, (ct_tensor *[]){NULL, ct_ones(CT_SHAPE(4, 1), &ob)}, 2,
                              ct_ones(CT_SHAPE(1), &o), false),
                CT_ERR_ARG, "index_put_: the indices cover 3 dims of a tensor of 2 dims");
  CHECK_ERR_MSG(ct_index_put(x, (ct_tensor *[]){ct_ones(NULL, 0, &ob)}, 1, x, false), CT_ERR_ARG,
                "index_put: the bool index at position 0 is 0-d");
  /* values that don't broadcast to (K, 4) */
  CHECK_ERR_MSG(ct_index_put(x, (ct_tensor *[]){ct_ones(CT_SHAPE(3), &ob)}, 1,
                             ct_ones(CT_SHAPE(2, 4), &o), false),
                CT_ERR_SHAPE, "values of shape (2, 4) don't broadcast to the indexed shape (3, 4)");
  ct_device other = ct_test_device().type == CT_DEVICE_CPU ? ct_cuda(0) : ct_cpu();
  if (other.type == CT_DEVICE_CUDA && !ct_cuda_is_available()) return;
  ct_tensor *mo = ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_BOOL, .device = other});
  CHECK_ERR_MSG(ct_index(x, (ct_tensor *[]){mo}, 1), CT_ERR_DEVICE,
                "index: expected all tensors on the same device");
}
