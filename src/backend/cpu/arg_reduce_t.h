/* Template of the CPU argmax/argmin kernels (arg_reduce.c), included once per
 * dtype (for_reduce_types.h): values compare as double for floating dtypes,
 * as int64 else, with core/reduce_plan.h's ct_arg_later_wins_f / _i. is_max
 * is a constant in each kernel (always inlined into arg_row_max_<S> and so
 * on).
 *
 * ROW: folds n elements (byte stride s), whose dim indices start at i0, into
 * (*best, *bi); *bi < 0 means nothing seen yet. COLUMN: nrows rows (stride
 * rs) of m elements (stride cs) into best[0..m), bi[0..m). */
#ifdef CT_IS_FLOAT
#define CT_ACC double
#define CT_FIELD d
#define CT_LATER_WINS ct_arg_later_wins_f
#else
#define CT_ACC int64_t
#define CT_FIELD i
#define CT_LATER_WINS ct_arg_later_wins_i
#endif
#define CT_LOAD CT_CAT(ct__rload_, CT_S)

static CT_ALWAYS_INLINE void CT_CAT(arg_row_, CT_S)(const char *p, int64_t s, int64_t n, int64_t i0,
                                                    ct_racc *best, int64_t *bi, bool is_max) {
  CT_ACC b = best->CT_FIELD;
  int64_t idx = *bi, i = 0;
  if (idx < 0 && n > 0) {
    b = CT_LOAD((const CT_T *)p);
    idx = i0;
    i = 1;
  }
  for (; i < n; i++) {
    CT_ACC v = CT_LOAD((const CT_T *)(p + i * s));
    if (CT_LATER_WINS(is_max, v, b)) {
      b = v;
      idx = i0 + i;
    }
  }
  best->CT_FIELD = b;
  *bi = idx;
}

static CT_ALWAYS_INLINE void CT_CAT(arg_col_, CT_S)(const char *p, int64_t rs, int64_t nrows,
                                                    int64_t i0, int64_t m, int64_t cs,
                                                    ct_racc *best, int64_t *bi, bool is_max) {
  int64_t r = 0;
  if (bi[0] < 0 && nrows > 0) {
    for (int64_t j = 0; j < m; j++) {
      best[j].CT_FIELD = CT_LOAD((const CT_T *)(p + j * cs));
      bi[j] = i0;
    }
    r = 1;
  }
  for (; r < nrows; r++) {
    const char *row = p + r * rs;
    for (int64_t j = 0; j < m; j++) {
      CT_ACC v = CT_LOAD((const CT_T *)(row + j * cs));
      if (CT_LATER_WINS(is_max, v, best[j].CT_FIELD)) {
        best[j].CT_FIELD = v;
        bi[j] = i0 + r;
      }
    }
  }
}

static void CT_CAT(arg_row_max_, CT_S)(const char *p, int64_t s, int64_t n, int64_t i0,
                                       ct_racc *best, int64_t *bi) {
  CT_CAT(arg_row_, CT_S)(p, s, n, i0, best, bi, true);
}
static void CT_CAT(arg_row_min_, CT_S)(const char *p, int64_t s, int64_t n, int64_t i0,
                                       ct_racc *best, int64_t *bi) {
  CT_CAT(arg_row_, CT_S)(p, s, n, i0, best, bi, false);
}
static void CT_CAT(arg_col_max_, CT_S)(const char *p, int64_t rs, int64_t nrows, int64_t i0,
                                       int64_t m, int64_t cs, ct_racc *best, int64_t *bi) {
  CT_CAT(arg_col_, CT_S)(p, rs, nrows, i0, m, cs, best, bi, true);
}
static void CT_CAT(arg_col_min_, CT_S)(const char *p, int64_t rs, int64_t nrows, int64_t i0,
                                       int64_t m, int64_t cs, ct_racc *best, int64_t *bi) {
  CT_CAT(arg_col_, CT_S)(p, rs, nrows, i0, m, cs, best, bi, false);
}

#undef CT_ACC
#undef CT_FIELD
#undef CT_LATER_WINS
#undef CT_LOAD
