/* Template of the f32/f64 max and min row kernels (reduce_kernels.c),
 * included with CT_T (float, double) and CT_S (f32, f64): 32 lanes of CT_T
 * (not f64 lanes), updated by a select that keeps a nan once seen (nan > l
 * and nan < l are false, so a nan lane stays nan): vectorizes to compare +
 * blend, several times faster than the generic kernel. Short or strided rows
 * take the generic one. */
static CT_ALWAYS_INLINE void CT_CAT(row_minmax_, CT_S)(const char *p, int64_t s, int64_t n,
                                                       ct_racc *acc, bool is_max) {
  const int pass = is_max ? CT_RP_F_MAX : CT_RP_F_MIN;
  if (s != (int64_t)sizeof(CT_T) || n < 64) {
    CT_CAT(rrow_, CT_S)(p, s, n, acc, 0.0, 0.0, pass);
    return;
  }
  const CT_T *x = (const CT_T *)p;
  CT_T l[32];
  for (int k = 0; k < 32; k++) l[k] = x[k];
  int64_t i = 32;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 32; k++) {
      CT_T v = x[i + k];
      CT_T m = (is_max ? v > l[k] : v < l[k]) ? v : l[k];
      l[k] = v != v ? v : m;
    }
  double a = acc->d;
  for (int k = 0; k < 32; k++) a = ct_rpass_fold_f(pass, a, (double)l[k], 0.0, 0.0);
  for (; i < n; i++) a = ct_rpass_fold_f(pass, a, (double)x[i], 0.0, 0.0);
  acc->d = a;
}

static void CT_CAT(row_max_, CT_S)(const char *p, int64_t s, int64_t n, ct_racc *acc, double aux,
                                   double P) {
  CT_CAT(row_minmax_, CT_S)(p, s, n, acc, true);
}
static void CT_CAT(row_min_, CT_S)(const char *p, int64_t s, int64_t n, ct_racc *acc, double aux,
                                   double P) {
  CT_CAT(row_minmax_, CT_S)(p, s, n, acc, false);
}
