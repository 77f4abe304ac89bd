/* Template of the CPU scans (scan.c), included once per element type with
 * CT_T (float, double, int64_t), CT_ACC (double, double, int64_t), CT_S (the
 * suffix) and CT_COMBINE (ct_scan_combine_f / _i) defined. Element k of a
 * scanned line is at line[k * step]; `reverse` walks it from the end. */

#define CT_NAME_(a, b) a##_##b
#define CT_NAME(a, b) CT_NAME_(a, b)

/* Running combine along one line of n elements (stride `step`) from acc. */
static void CT_NAME(scan_line, CT_S)(bool prod, bool reverse, CT_T *out, const CT_T *x, int64_t n,
                                     int64_t step, CT_ACC acc) {
  int64_t k = reverse ? (n - 1) * step : 0, dk = reverse ? -step : step;
  for (int64_t i = 0; i < n; i++, k += dk) {
    acc = CT_COMBINE(prod, acc, (CT_ACC)x[k]);
    out[k] = (CT_T)acc;
  }
}

/* The combine of a line's n elements. */
static CT_ACC CT_NAME(scan_total, CT_S)(bool prod, const CT_T *x, int64_t n) {
  CT_ACC acc = (CT_ACC)ct_scan_identity(prod);
  for (int64_t i = 0; i < n; i++) acc = CT_COMBINE(prod, acc, (CT_ACC)x[i]);
  return acc;
}

/* Lines of geometry (outer, n, inner): tasks are (o, block of columns), each
 * keeps its columns' accumulators on the stack and walks k, so every load and
 * store runs along contiguous columns. */
static void CT_NAME(scan_cols, CT_S)(int64_t t0, int64_t t1, void *vc) {
  const scan_ctx *c = vc;
  int64_t nblk = (c->inner + SCAN_COLS - 1) / SCAN_COLS;
  CT_ACC acc[SCAN_COLS];
  for (int64_t t = t0; t < t1; t++) {
    int64_t o = t / nblk, j0 = (t % nblk) * SCAN_COLS;
    int64_t w = c->inner - j0 < SCAN_COLS ? c->inner - j0 : SCAN_COLS;
    const CT_T *x = (const CT_T *)c->x + o * c->n * c->inner + j0;
    CT_T *out = (CT_T *)c->out + o * c->n * c->inner + j0;
    for (int64_t j = 0; j < w; j++) acc[j] = (CT_ACC)ct_scan_identity(c->prod);
    for (int64_t i = 0; i < c->n; i++) {
      int64_t k = (c->reverse ? c->n - 1 - i : i) * c->inner;
      for (int64_t j = 0; j < w; j++) {
        acc[j] = CT_COMBINE(c->prod, acc[j], (CT_ACC)x[k + j]);
        out[k + j] = (CT_T)acc[j];
      }
    }
  }
}

/* Whole rows (inner == 1), one task per row. */
static void CT_NAME(scan_rows, CT_S)(int64_t r0, int64_t r1, void *vc) {
  const scan_ctx *c = vc;
  for (int64_t r = r0; r < r1; r++)
    CT_NAME(scan_line, CT_S)
    (c->prod, c->reverse, (CT_T *)c->out + r * c->n, (const CT_T *)c->x + r * c->n, c->n, 1,
     (CT_ACC)ct_scan_identity(c->prod));
}

/* One long row in SCAN_PIECE pieces: pass 1 combines each piece, the pieces'
 * exclusive prefix is taken in order, pass 2 scans each piece from its
 * prefix. The pieces depend on n only, so results don't depend on threads. */
static void CT_NAME(piece_totals, CT_S)(int64_t p0, int64_t p1, void *vc) {
  const scan_ctx *c = vc;
  for (int64_t p = p0; p < p1; p++) {
    int64_t b = p * SCAN_PIECE, len = c->n - b < SCAN_PIECE ? c->n - b : SCAN_PIECE;
    ((CT_ACC *)c->totals)[p] = CT_NAME(scan_total, CT_S)(c->prod, (const CT_T *)c->row_x + b, len);
  }
}
static void CT_NAME(piece_scans, CT_S)(int64_t p0, int64_t p1, void *vc) {
  const scan_ctx *c = vc;
  for (int64_t p = p0; p < p1; p++) {
    int64_t b = p * SCAN_PIECE, len = c->n - b < SCAN_PIECE ? c->n - b : SCAN_PIECE;
    CT_NAME(scan_line, CT_S)
    (c->prod, c->reverse, (CT_T *)c->row_out + b, (const CT_T *)c->row_x + b, len, 1,
     ((CT_ACC *)c->totals)[p]);
  }
}
static ct_status CT_NAME(scan_long_rows, CT_S)(scan_ctx *c) {
  int64_t np = (c->n + SCAN_PIECE - 1) / SCAN_PIECE;
  CT_ACC *tot = ct__malloc((size_t)np * sizeof *tot);
  if (!tot) {
    ct__fail(CT_ERR_OOM, "%s: out of memory for %lld piece totals", c->prod ? "cumprod" : "cumsum",
             (long long)np);
    return CT_ERR_OOM;
  }
  c->totals = tot;
  for (int64_t r = 0; r < c->outer; r++) {
    c->row_x = (const CT_T *)c->x + r * c->n;
    c->row_out = (CT_T *)c->out + r * c->n;
    ct__parallel_for(np, 1, CT_NAME(piece_totals, CT_S), c);
    /* exclusive prefix in scan order (from the last piece when reversed) */
    CT_ACC acc = (CT_ACC)ct_scan_identity(c->prod);
    for (int64_t i = 0; i < np; i++) {
      int64_t p = c->reverse ? np - 1 - i : i;
      CT_ACC t = tot[p];
      tot[p] = acc;
      acc = CT_COMBINE(c->prod, acc, t);
    }
    ct__parallel_for(np, 1, CT_NAME(piece_scans, CT_S), c);
  }
  ct__free(tot);
  return CT_OK;
}

static ct_status CT_NAME(scan_run, CT_S)(scan_ctx *c) {
  if (c->inner == 1 && c->outer < 4 && c->n >= 4 * SCAN_PIECE)
    return CT_NAME(scan_long_rows, CT_S)(c);
  if (c->inner == 1) {
    ct__parallel_for(c->outer, (CT_PARALLEL_GRAIN + c->n - 1) / c->n, CT_NAME(scan_rows, CT_S), c);
    return CT_OK;
  }
  int64_t nblk = (c->inner + SCAN_COLS - 1) / SCAN_COLS;
  int64_t per = c->n * (c->inner < SCAN_COLS ? c->inner : SCAN_COLS);
  ct__parallel_for(c->outer * nblk, (CT_PARALLEL_GRAIN + per - 1) / per, CT_NAME(scan_cols, CT_S),
                   c);
  return CT_OK;
}

#undef CT_NAME
#undef CT_NAME_
