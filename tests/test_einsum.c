/* einsum: values and gradients against PyTorch over explicit and implicit
 * equations (products, batched products, traces, diagonals, sums,
 * transposes, ellipses with broadcasting, three operands, 0-d operands), a
 * float64 reference written here for a matrix product and a trace,
 * finite-difference gradients, and the errors of malformed equations. */
#include <unistd.h>

#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

typedef struct ein_case {
  const char *eq;
  int n;
  int64_t shapes[3][5];
  int nd[3];
} ein_case;

static const ein_case CASES[] = {
    {"ij,jk->ik", 2, {{3, 4}, {4, 5}}, {2, 2}},
    {"ij,jk", 2, {{3, 4}, {4, 5}}, {2, 2}},
    {"bhqd,bhkd->bhqk", 2, {{2, 3, 4, 5}, {2, 3, 6, 5}}, {4, 4}},
    {"ii", 1, {{4, 4}}, {2}},
    {"ii->i", 1, {{4, 4}}, {2}},
    {"iji->j", 1, {{3, 2, 3}}, {3}},
    {"ij->", 1, {{3, 4}}, {2}},
    {"ij->ji", 1, {{3, 4}}, {2}},
    {"ba", 1, {{3, 4}}, {2}},
    {"...ij->...ji", 1, {{2, 3, 4, 5}}, {4}},
    {"...ij,...jk->...ik", 2, {{2, 1, 3, 4}, {5, 4, 2}}, {4, 3}},
    {"i,j->ij", 2, {{3}, {4}}, {1, 1}},
    {"i,i->", 2, {{5}, {5}}, {1, 1}},
    {"ij,jk,kl->il", 3, {{2, 3}, {3, 4}, {4, 5}}, {2, 2, 2}},
    {"abc,cd,ad->b", 3, {{2, 3, 4}, {4, 5}, {2, 5}}, {3, 2, 2}},
    {",ij->ij", 2, {{0}, {2, 3}}, {0, 2}},
    {"bij,bjk->bik", 2, {{3, 2, 4}, {3, 4, 2}}, {3, 3}},
    {"Ab,bA->A", 2, {{3, 4}, {4, 3}}, {2, 2}},
    {"i j , j k -> k i", 2, {{3, 4}, {4, 5}}, {2, 2}},
    {"ij...,j...->i...", 2, {{3, 4, 2}, {4, 2}}, {3, 2}},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

static void case_inputs(const ein_case *c, int ci, ct_tensor **in) {
  for (int k = 0; k < c->n; k++)
    in[k] = ct_gradcheck_input(c->shapes[k], c->nd[k], -1, 1, (unsigned)(ci * 7 + k));
}

/* torch computes every case from the inputs the C side saves. */
static const char *TORCH_SCRIPT =
    "import sys, os, numpy as np, torch\n"
    "d = sys.argv[1]\n"
    "i = 0\n"
    "while os.path.exists(f'{d}/eq{i}.txt'):\n"
    "    eq = open(f'{d}/eq{i}.txt').read()\n"
    "    ops = []\n"
    "    while os.path.exists(f'{d}/in{i}_{len(ops)}.npy'):\n"
    "        ops.append(torch.tensor(np.load(f'{d}/in{i}_{len(ops)}.npy'), requires_grad=True))\n"
    "    r = torch.einsum(eq, *ops)\n"
    "    np.save(f'{d}/out{i}.npy', r.detach().numpy())\n"
    "    (r * r).sum().backward()\n"
    "    for k, t in enumerate(ops): np.save(f'{d}/g{i}_{k}.npy', t.grad.numpy())\n"
    "    i += 1\n";

CT_TEST(einsum_matches_pytorch) {
  if (!ct_test_python_with_torch()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  char dir[] = "/tmp/ct_einsum_XXXXXX", path[256];
  if (!mkdtemp(dir)) return;
  for (int ci = 0; ci < NCASES; ci++) {
    ct_tensor *in[3];
    case_inputs(&CASES[ci], ci, in);
    snprintf(path, sizeof path, "%s/eq%d.txt", dir, ci);
    FILE *f = fopen(path, "w");
    if (f) fputs(CASES[ci].eq, f), fclose(f);
    for (int k = 0; k < CASES[ci].n; k++) {
      snprintf(path, sizeof path, "%s/in%d_%d.npy", dir, ci, k);
      CHECK_STATUS_OK(ct_save_npy(path, in[k]));
    }
  }
  snprintf(path, sizeof path, "%s/gen.py", dir);
  FILE *f = fopen(path, "w");
  if (f) fputs(TORCH_SCRIPT, f), fclose(f);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s %s %s", ct_test_python_with_torch(), path, dir);
  CHECK_MSG(system(cmd) == 0, "the torch script failed: %s", cmd);
  for (int ci = 0; ci < NCASES; ci++) {
    ct_tensor *in[3];
    case_inputs(&CASES[ci], ci, in);
    ct_tensor *r = ct_einsum(CASES[ci].eq, in, CASES[ci].n);
    char name[32];
    snprintf(name, sizeof name, "out%d", ci);
    WITH_CONTEXT(CHECK_LIKE_TORCH(dir, CASES[ci].eq, r, name, 1e-12, 1e-12), "\"%s\"",
                 CASES[ci].eq);
    if (!r) continue;
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(r, r), NULL), NULL, NULL));
    for (int k = 0; k < CASES[ci].n; k++) {
      snprintf(name, sizeof name, "g%d_%d", ci, k);
      WITH_CONTEXT(CHECK_LIKE_TORCH(dir, name, ct_grad(in[k]), name, 1e-12, 1e-12),
                   "\"%s\" grad %d", CASES[ci].eq, k);
    }
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* A matrix product and a trace against sums written here, in f32. */
CT_TEST(einsum_values) {
  double av[12], bv[20];
  for (int i = 0; i < 12; i++) av[i] = i * 0.5 - 2;
  for (int i = 0; i < 20; i++) bv[i] = 1.0 / (i + 1);
  for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
    ct_tensor *a = ct_test_make(av, CT_SHAPE(3, 4), CT_F32, (ct_test_layout)l);
    ct_tensor *b = ct_test_make(bv, CT_SHAPE(4, 5), CT_F32, (ct_test_layout)l);
    double ref[15] = {0};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 5; j++)
        for (int k = 0; k < 4; k++) ref[i * 5 + j] += av[i * 4 + k] * bv[k * 5 + j];
    ct_tensor *r = ct_einsum("ik,kj->ij", (ct_tensor *[]){a, b}, 2);
    CHECK_SHAPE(r, 3, 5);
    CHECK_CLOSE(r, ref, 1e-6, 1e-6);
    ct_tensor *sq = ct_test_make(bv, CT_SHAPE(4, 4), CT_F64, (ct_test_layout)l);
    double tr = bv[0] + bv[5] + bv[10] + bv[15];
    CHECK_CLOSE(ct_einsum("ii", &sq, 1), (&tr), 1e-15, 0);
  }
}

static ct_tensor *f_einsum(ct_tensor *const *in, void *ctx) {
  const ein_case *c = ctx;
  return ct_einsum(c->eq, in, c->n);
}

CT_TEST(einsum_gradients) {
  const int picks[] = {0, 2, 5, 10, 13, 14};
  for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++) {
    int ci = picks[p];
    ct_tensor *in[3];
    case_inputs(&CASES[ci], ci, in);
    WITH_CONTEXT(CHECK_GRADIENTS("einsum", f_einsum, (void *)&CASES[ci], in, CASES[ci].n), "\"%s\"",
                 CASES[ci].eq);
  }
}

CT_TEST(einsum_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_ones(CT_SHAPE(3, 4), &o), *b = ct_ones(CT_SHAPE(4, 5), &o);
  ct_tensor *ab[2] = {a, b};
  CHECK_ERR_MSG(ct_einsum("ij,jk->ik", ab, 1), CT_ERR_ARG,
                "more terms than the 1 operands given (position 3)");
  CHECK_ERR_MSG(ct_einsum("ij->ij", ab, 2), CT_ERR_ARG, "1 input terms for 2 operands");
  CHECK_ERR_MSG(ct_einsum("i1,jk", ab, 2), CT_ERR_ARG, "invalid character '1' at position 1");
  CHECK_ERR_MSG(ct_einsum("ij,jk->i.k", ab, 2), CT_ERR_ARG, "'.' at position 8");
  CHECK_ERR_MSG(ct_einsum("...i...,jk", ab, 2), CT_ERR_ARG, "second ellipsis at position 4");
  CHECK_ERR_MSG(ct_einsum("ij,jk->ik->i", ab, 2), CT_ERR_ARG, "second '->' at position 9");
  CHECK_ERR_MSG(ct_einsum("ij,jk-ik", ab, 2), CT_ERR_ARG, "stray '-' at position 5");
  CHECK_ERR_MSG(ct_einsum("ij,jk->iz", ab, 2), CT_ERR_ARG, "output label 'z'");
  CHECK_ERR_MSG(ct_einsum("ij,jk->ii", ab, 2), CT_ERR_ARG, "appears twice");
  CHECK_ERR_MSG(ct_einsum("ijk,jk", ab, 2), CT_ERR_SHAPE,
                "position 0 of \"ijk,jk\" has 3 labels for an operand of 2 dims");
  CHECK_ERR_MSG(ct_einsum("ij,ik", ab, 2), CT_ERR_SHAPE, "sizes 3 and 4");
  CHECK_ERR_MSG(ct_einsum("ii", &a, 1), CT_ERR_SHAPE, "label 'i' repeated");
  ct_clear_error();
  CHECK_ERR(ct_einsum(NULL, ab, 2), CT_ERR_ARG);
  CHECK_ERR(ct_einsum("ij", ab, 0), CT_ERR_ARG);
  CHECK(ct_einsum("ij", (ct_tensor *[]){NULL}, 1) == NULL);
}
