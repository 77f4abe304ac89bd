/* The PyTorch comparisons of the advanced-indexing tests (test_adv_index.c,
 * test_adv_index_mask.c), whose scripts save, for each case name, the result
 * and x's gradient under the loss sum(r * arange(numel)) ("<name>",
 * "<name>_g"), and for index_put with accumulate 0 and 1 the result and the
 * gradients of x and v under sum(r * r) ("p<acc>", "p<acc>_gx", "p<acc>_gv"). */
#ifndef CT_TEST_ADV_INDEX_ORACLE_H
#define CT_TEST_ADV_INDEX_ORACLE_H

#include "ct_test.h"

/* x (a leaf requiring grad) indexed by sets[c] (ns[c] entries) for each case. */
static void check_index_like_torch(const char *dir, ct_tensor *x, ct_tensor *sets[][4],
                                   const int *ns, const char *const *names, int count) {
  for (int c = 0; c < count; c++) {
    ct_set_grad(x, NULL);
    ct_tensor *r = ct_index(x, sets[c], ns[c]);
    CHECK_LIKE_TORCH(dir, names[c], r, names[c], 0, 0);
    if (!r) continue;
    ct_tensor_opts o = ct_test_opts(CT_F64);
    ct_tensor *w = ct_reshape(ct_arange(0, (double)ct_numel(r), 1, &o), ct_shape(r), ct_ndim(r));
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(r, w), NULL), NULL, NULL));
    char g[16];
    snprintf(g, sizeof g, "%s_g", names[c]);
    CHECK_LIKE_TORCH(dir, g, ct_grad(x), g, 0, 0);
  }
}

/* x.index_put(idx, v, accumulate) for accumulate 0 and 1 (x, v leaves
 * requiring grad). */
static void check_put_like_torch(const char *dir, ct_tensor *x, ct_tensor *const *idx, int n,
                                 ct_tensor *v) {
  for (int acc = 0; acc < 2; acc++) {
    ct_set_grad(x, NULL), ct_set_grad(v, NULL);
    ct_tensor *r = ct_index_put(x, idx, n, v, acc);
    char s[16];
    snprintf(s, sizeof s, "p%d", acc);
    CHECK_LIKE_TORCH(dir, s, r, s, 1e-14, 1e-14);
    if (!r) continue;
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(r, r), NULL), NULL, NULL));
    snprintf(s, sizeof s, "p%d_gx", acc);
    CHECK_LIKE_TORCH(dir, s, ct_grad(x), s, 1e-14, 1e-14);
    snprintf(s, sizeof s, "p%d_gv", acc);
    CHECK_LIKE_TORCH(dir, s, ct_grad(v), s, 1e-14, 1e-14);
  }
}

#endif /* CT_TEST_ADV_INDEX_ORACLE_H */
