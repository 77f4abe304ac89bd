/* Template of the CPU integer matmul (matmul.c), included once per integer
 * type (core/for_int_types.h: CT_T, CT_S, CT_UT, the unsigned accumulation
 * type: overflow wraps, defined, as torch's CPU integer matmul). int_rows_<S>: output rows
 * [r0, r1) of the B*n rows of an int_job, c[i, :] (+)= a[i, p] * b[p, :]. */
static void CT_CAT(int_rows_, CT_S)(int64_t r0, int64_t r1, void *ctx) {
  const int_job *j = ctx;
  int64_t n = j->out->shape[1], m = j->out->shape[2], k = j->a->shape[2];
  const int64_t *as = j->a->strides, *bs = j->b->strides;
  int64_t abs_ = j->a->shape[0] > 1 ? as[0] : 0, bbs = j->b->shape[0] > 1 ? bs[0] : 0;
  const CT_T *A = ct__data(j->a), *Bm = ct__data(j->b);
  CT_T *C = ct__data(j->out);
  for (int64_t r = r0; r < r1; r++) {
    int64_t bt = r / n, i = r % n;
    CT_T *c = C + r * m;
    if (!j->beta_one)
      for (int64_t q = 0; q < m; q++) c[q] = 0;
    const CT_T *arow = A + bt * abs_ + i * as[1];
    for (int64_t p = 0; p < k; p++) {
      CT_UT av = (CT_UT)arow[p * as[2]];
      const CT_T *brow = Bm + bt * bbs + p * bs[1];
      for (int64_t q = 0; q < m; q++) c[q] = (CT_T)((CT_UT)c[q] + av * (CT_UT)brow[q * bs[2]]);
    }
  }
}
