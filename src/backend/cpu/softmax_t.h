/* Template of the CPU softmax kernels (softmax.c), included once per native
 * floating type (core/for_float_types.h): the row kernel (the softmax dim
 * innermost) and the column block kernel, with sums in double, from
 * softmax.c's smax_exp_<S> (the exp of a value <= 0 or nan) and
 * smax_sum_<S> (the double sum of n values). */

/* NaN-propagating max of n contiguous values (a lane holding nan keeps it). */
static CT_T CT_CAT(max_, CT_S)(const CT_T *x, int64_t n) {
  CT_T l[2 * CT_SMAX_LANES];
  for (int k = 0; k < 2 * CT_SMAX_LANES; k++) l[k] = -INFINITY;
  int64_t i = 0;
  for (; i + 2 * CT_SMAX_LANES <= n; i += 2 * CT_SMAX_LANES)
    for (int k = 0; k < 2 * CT_SMAX_LANES; k++) {
      CT_T v = x[i + k];
      CT_T mv = v > l[k] ? v : l[k]; /* a nan lane stays nan */
      l[k] = v != v ? v : mv;
    }
  CT_T m = -INFINITY;
  for (; i < n; i++) m = ((x[i] > m) | (x[i] != x[i])) ? x[i] : m;
  for (int k = 0; k < 2 * CT_SMAX_LANES; k++) m = ((l[k] > m) | (l[k] != l[k])) ? l[k] : m;
  return m;
}

/* One row of n contiguous values (out may be x). */
static void CT_CAT(row_, CT_S)(const CT_T *x, CT_T *o, int64_t n, bool log_) {
  CT_T m = CT_CAT(max_, CT_S)(x, n);
  if (log_) {
    double s = CT_CAT(sum_exp_, CT_S)(x, n, m);
    CT_T ls = (CT_T)log(s);
    for (int64_t i = 0; i < n; i++) o[i] = (x[i] - m) - ls;
  } else {
    for (int64_t i = 0; i < n; i++) o[i] = CT_CAT(smax_exp_, CT_S)(x[i] - m);
    CT_T s = (CT_T)CT_CAT(smax_sum_, CT_S)(o, n);
    for (int64_t i = 0; i < n; i++) o[i] = o[i] / s;
  }
}

/* A block of m inner positions: rows r = 0..n-1 at x + r * inner. */
static void CT_CAT(col_, CT_S)(const CT_T *x, CT_T *o, int64_t n, int64_t inner, int64_t m,
                               bool log_) {
  CT_T mx[CT_SMAX_BLOCK];
  double s[CT_SMAX_BLOCK];
  CT_T f[CT_SMAX_BLOCK];
  for (int64_t j = 0; j < m; j++) mx[j] = -INFINITY, s[j] = 0;
  for (int64_t r = 0; r < n; r++) {
    const CT_T *xr = x + r * inner;
    for (int64_t j = 0; j < m; j++) {
      CT_T mv = xr[j] > mx[j] ? xr[j] : mx[j];
      mx[j] = xr[j] != xr[j] ? xr[j] : mv; /* a nan stays */
    }
  }
  for (int64_t r = 0; r < n; r++) {
    const CT_T *xr = x + r * inner;
    CT_T *orow = o + r * inner;
    if (log_) {
      for (int64_t j = 0; j < m; j++) s[j] += (double)CT_CAT(smax_exp_, CT_S)(xr[j] - mx[j]);
    } else {
      for (int64_t j = 0; j < m; j++) {
        CT_T e = CT_CAT(smax_exp_, CT_S)(xr[j] - mx[j]);
        orow[j] = e;
        s[j] += (double)e;
      }
    }
  }
  for (int64_t j = 0; j < m; j++) f[j] = log_ ? (CT_T)log(s[j]) : (CT_T)s[j];
  for (int64_t r = 0; r < n; r++) {
    const CT_T *xr = x + r * inner;
    CT_T *orow = o + r * inner;
    if (log_)
      for (int64_t j = 0; j < m; j++) orow[j] = (xr[j] - mx[j]) - f[j];
    else
      for (int64_t j = 0; j < m; j++) orow[j] = orow[j] / f[j];
  }
}
