/* Template of the CPU reduction pass loops (reduce_kernels_t.h), included
 * once per (input dtype, accumulator class) with
 *   CT_T      the element's storage type (uint16_t for f16/bf16)
 *   CT_NAME   the instance's suffix (f32, nz_f16, ...)
 *   CT_ACC    the accumulator (double or int64_t) and CT_FIELD its ct_racc field
 *   CT_LOAD   a function CT_ACC (const CT_T *q): the element as it is folded
 *   CT_FOLD   a function CT_ACC (int pass, CT_ACC a, CT_ACC v, double aux, double P)
 *   CT_MERGE  a function CT_ACC (int pass, CT_ACC a, CT_ACC b)
 * (the folds and merges of core/reduce_plan.h). The row and column loops take
 * the pass as an argument and are always inlined into one kernel per (pass,
 * dtype), where it is a constant: the fold's switch disappears.
 *
 * Contiguous rows are folded into CT_RLANES independent lane accumulators
 * (merged at the end), which removes the loop-carried dependency so that the
 * compiler vectorizes the loop without reassociating floating-point math. */

/* ROW: n elements at p with byte stride s into *acc. */
static CT_ALWAYS_INLINE void CT_CAT(rrow_, CT_NAME)(const char *p, int64_t s, int64_t n,
                                                    ct_racc *acc, double aux, double P, int pass) {
  CT_ACC a = acc->CT_FIELD;
  int64_t i = 0;
  if (s == (int64_t)sizeof(CT_T) && n >= CT_RLANES) {
    const CT_T *x = (const CT_T *)p;
    CT_ACC l[CT_RLANES];
    for (int k = 0; k < CT_RLANES; k++) l[k] = (CT_ACC)CT_RINIT(pass);
    for (; i + CT_RLANES <= n; i += CT_RLANES)
      for (int k = 0; k < CT_RLANES; k++) l[k] = CT_FOLD(pass, l[k], CT_LOAD(x + i + k), aux, P);
    for (int k = 0; k < CT_RLANES; k++) a = CT_MERGE(pass, a, l[k]);
  }
  for (; i < n; i++) a = CT_FOLD(pass, a, CT_LOAD((const CT_T *)(p + i * s)), aux, P);
  acc->CT_FIELD = a;
}

/* COLUMN: nrows rows (stride rs) of m elements (stride cs) into acc[0..m)
 * (aux[0..m) per output, or NULL). Contiguous rows go in tiles of
 * CT_RCOL_TILE columns whose accumulators stay in registers over all rows;
 * leftover columns update acc in memory. */
static CT_ALWAYS_INLINE void CT_CAT(rcol_, CT_NAME)(const char *p, int64_t rs, int64_t nrows,
                                                    int64_t m, int64_t cs, ct_racc *acc,
                                                    const double *aux, double P, int pass) {
  int64_t j0 = 0;
  if (cs == (int64_t)sizeof(CT_T) && m < CT_RCOL_TILE && CT_RCOL_TILE % m == 0 && rs == m * cs) {
    /* Few columns, rows back to back: CT_RCOL_TILE / m rows form one
     * contiguous tile; lane k belongs to column k % m. */
    int64_t g = CT_RCOL_TILE / m, r = 0;
    CT_ACC l[CT_RCOL_TILE];
    double ax[CT_RCOL_TILE];
    for (int k = 0; k < CT_RCOL_TILE; k++) {
      l[k] = (CT_ACC)CT_RINIT(pass);
      ax[k] = aux ? aux[k % m] : 0.0;
    }
    const CT_T *x = (const CT_T *)p;
    for (; r + g <= nrows; r += g, x += CT_RCOL_TILE)
      for (int k = 0; k < CT_RCOL_TILE; k++) l[k] = CT_FOLD(pass, l[k], CT_LOAD(x + k), ax[k], P);
    for (int k = 0; k < CT_RCOL_TILE; k++)
      acc[k % m].CT_FIELD = CT_MERGE(pass, acc[k % m].CT_FIELD, l[k]);
    for (; r < nrows; r++)
      for (int64_t j = 0; j < m; j++)
        acc[j].CT_FIELD =
            CT_FOLD(pass, acc[j].CT_FIELD, CT_LOAD((const CT_T *)(p + r * rs) + j), ax[j], P);
    return;
  }
  if (cs == (int64_t)sizeof(CT_T)) {
    for (; j0 + CT_RCOL_TILE <= m; j0 += CT_RCOL_TILE) {
      CT_ACC l[CT_RCOL_TILE];
      double ax[CT_RCOL_TILE];
      for (int k = 0; k < CT_RCOL_TILE; k++) {
        l[k] = acc[j0 + k].CT_FIELD;
        ax[k] = aux ? aux[j0 + k] : 0.0;
      }
      for (int64_t r = 0; r < nrows; r++) {
        const CT_T *x = (const CT_T *)(p + r * rs) + j0;
        for (int k = 0; k < CT_RCOL_TILE; k++) l[k] = CT_FOLD(pass, l[k], CT_LOAD(x + k), ax[k], P);
      }
      for (int k = 0; k < CT_RCOL_TILE; k++) acc[j0 + k].CT_FIELD = l[k];
    }
  }
  if (j0 == m) return;
  for (int64_t r = 0; r < nrows; r++) {
    const char *row = p + r * rs;
    for (int64_t j = j0; j < m; j++)
      acc[j].CT_FIELD = CT_FOLD(pass, acc[j].CT_FIELD, CT_LOAD((const CT_T *)(row + j * cs)),
                                aux ? aux[j] : 0.0, P);
  }
}
