/* CPU argmax/argmin along one dim (the backend's `arg_reduce` slot): values
 * and i64 indices of the first maximum/minimum; nan counts as the extreme
 * (the first nan wins).
 *
 * Shapes: x (..., n at dim, ...); values/indices have x's ndim with size 1 at
 * dim. Geometry and parallel decomposition as the other reductions (reduce.h,
 * reduce.c): ROW (each output scans a run) or COLUMN (a block of neighbouring
 * outputs scans rows together), groups x splits of the dim, partial results
 * merged in index order so that ties keep the first index. */
#include <stdlib.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/reduce.h"

#define CT_ARG_COL_BLOCK 256
#define CT_ARG_SPLIT (1 << 16)

/* X(NAME, ENUM, T, FIELD, ACC, LOAD(q)) */
#define CT_ARG_DTYPES(X)                                               \
  X(f32, CT_F32, float, d, double, (double)*(q))                       \
  X(f64, CT_F64, double, d, double, *(q))                              \
  X(f16, CT_F16, uint16_t, d, double, (double)ct_f16_to_f32(*(q)))     \
  X(bf16, CT_BF16, uint16_t, d, double, (double)ct_bf16_to_f32(*(q)))  \
  X(i8, CT_I8, int8_t, i, int64_t, (int64_t)*(q))                      \
  X(u8, CT_U8, uint8_t, i, int64_t, (int64_t)*(q))                     \
  X(i16, CT_I16, int16_t, i, int64_t, (int64_t)*(q))                   \
  X(i32, CT_I32, int32_t, i, int64_t, (int64_t)*(q))                   \
  X(i64, CT_I64, int64_t, i, int64_t, *(q))                            \
  X(b8, CT_BOOL, bool, i, int64_t, (int64_t)*(q))

/* Whether v replaces the current best b: strictly better, or a first nan
 * (v != v is false for integers, so the nan tests vanish there). */
#define BETTER_MAX(v, b) ((b) == (b) && ((v) > (b) || (v) != (v)))
#define BETTER_MIN(v, b) ((b) == (b) && ((v) < (b) || (v) != (v)))

/* ROW: folds n elements (byte stride s), whose dim indices start at i0, into
 * (*best, *bi); *bi < 0 means nothing seen yet. COLUMN: nrows rows (stride
 * rs) of m elements (stride cs) into best[0..m), bi[0..m). */
#define DEFINE_ARG(NAME, ENUM, T, FIELD, ACC, LOAD, WHICH, BETTER)                            \
  static void arg_row_##WHICH##_##NAME(const char *p, int64_t s, int64_t n, int64_t i0,      \
                                       ct_racc *best, int64_t *bi) {                         \
    ACC b = best->FIELD;                                                                     \
    int64_t idx = *bi, i = 0;                                                                \
    if (idx < 0 && n > 0) {                                                                  \
      const T *q = (const T *)p;                                                             \
      b = LOAD;                                                                              \
      idx = i0;                                                                              \
      i = 1;                                                                                 \
    }                                                                                        \
    for (; i < n; i++) {                                                                     \
      const T *q = (const T *)(p + i * s);                                                   \
      ACC v = LOAD;                                                                          \
      if (BETTER(v, b)) {                                                                    \
        b = v;                                                                               \
        idx = i0 + i;                                                                        \
      }                                                                                      \
    }                                                                                        \
    best->FIELD = b;                                                                         \
    *bi = idx;                                                                               \
  }                                                                                          \
  static void arg_col_##WHICH##_##NAME(const char *p, int64_t rs, int64_t nrows, int64_t i0, \
                                       int64_t m, int64_t cs, ct_racc *best, int64_t *bi) {  \
    int64_t r = 0;                                                                           \
    if (bi[0] < 0 && nrows > 0) {                                                            \
      for (int64_t j = 0; j < m; j++) {                                                      \
        const T *q = (const T *)(p + j * cs);                                                \
        best[j].FIELD = LOAD;                                                                \
        bi[j] = i0;                                                                          \
      }                                                                                      \
      r = 1;                                                                                 \
    }                                                                                        \
    for (; r < nrows; r++) {                                                                 \
      const char *row = p + r * rs;                                                          \
      for (int64_t j = 0; j < m; j++) {                                                      \
        const T *q = (const T *)(row + j * cs);                                              \
        ACC v = LOAD, b = best[j].FIELD;                                                     \
        if (BETTER(v, b)) {                                                                  \
          best[j].FIELD = v;                                                                 \
          bi[j] = i0 + r;                                                                    \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  }

#define DEFINE_BOTH(NAME, ENUM, T, FIELD, ACC, LOAD)                 \
  DEFINE_ARG(NAME, ENUM, T, FIELD, ACC, LOAD, max, BETTER_MAX)       \
  DEFINE_ARG(NAME, ENUM, T, FIELD, ACC, LOAD, min, BETTER_MIN)
CT_ARG_DTYPES(DEFINE_BOTH)
#undef DEFINE_BOTH

typedef void (*arg_row_fn)(const char *p, int64_t s, int64_t n, int64_t i0, ct_racc *best,
                           int64_t *bi);
typedef void (*arg_col_fn)(const char *p, int64_t rs, int64_t nrows, int64_t i0, int64_t m,
                           int64_t cs, ct_racc *best, int64_t *bi);

typedef struct arg_ctx {
  const ct_rgeom *g;
  arg_row_fn row;
  arg_col_fn col;
  int64_t S, M, nblk;
  ct_racc *best; /* [S][K] */
  int64_t *idx;  /* [S][K] */
} arg_ctx;

/* The run of split s of the dim for an output whose first element is base. */
static const char *split_run(const arg_ctx *c, const char *base, int64_t s, int64_t *r0,
                             int64_t *n, int64_t *stride) {
  const ct_rgeom *g = c->g;
  int64_t a = g->R * s / c->S, b = g->R * (s + 1) / c->S;
  *r0 = a;
  *n = b - a;
  *stride = g->nr ? g->rx[0] : 0;
  return base + a * *stride;
}

static void arg_row_tasks(int64_t begin, int64_t end, void *vctx) {
  const arg_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  if (c->S == 1) { /* a range of outputs, walked incrementally */
    ct_rkept_it it;
    ct__rkept_begin(g, begin, false, &it);
    int64_t st = g->nr ? g->rx[0] : 0;
    for (int64_t k = begin; k < end; k++, ct__rkept_next(g, &it)) {
      c->idx[k] = -1;
      c->row(g->x + it.xo, st, g->R, 0, &c->best[k], &c->idx[k]);
    }
    return;
  }
  for (int64_t t = begin; t < end; t++) {
    int64_t k = t / c->S, s = t % c->S, r0, n, st;
    ct_rkept_it it;
    ct__rkept_begin(g, k, false, &it);
    const char *p = split_run(c, g->x + it.xo, s, &r0, &n, &st);
    int64_t *bi = &c->idx[s * g->K + k];
    *bi = -1;
    c->row(p, st, n, r0, &c->best[s * g->K + k], bi);
  }
}

static void arg_col_tasks(int64_t begin, int64_t end, void *vctx) {
  const arg_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  int64_t cs = g->kx[g->nk - 1];
  for (int64_t t = begin; t < end; t++) {
    int64_t grp = t / c->S, s = t % c->S;
    int64_t outer = grp / c->nblk, j0 = (grp % c->nblk) * CT_ARG_COL_BLOCK;
    int64_t m = c->M - j0 < CT_ARG_COL_BLOCK ? c->M - j0 : CT_ARG_COL_BLOCK;
    int64_t r0, n, st, k0 = outer * c->M + j0;
    ct_rkept_it it;
    ct__rkept_begin(g, outer, true, &it);
    const char *p = split_run(c, g->x + it.xo + j0 * cs, s, &r0, &n, &st);
    int64_t *bi = &c->idx[s * g->K + k0];
    bi[0] = -1;
    c->col(p, st, n, r0, m, cs, &c->best[s * g->K + k0], bi);
  }
}

ct_status ct__cpu_arg_reduce(bool is_max, ct_tensor *values, ct_tensor *indices,
                             const ct_tensor *x, int dim) {
  bool mask[CT_MAX_DIMS] = {false};
  if (x->ndim > 0) mask[dim] = true;
  ct_tensor *outs[CT_RG_MAX_OUT];
  int nout = 0;
  if (values) outs[nout++] = values;
  if (indices) outs[nout++] = indices;
  if (nout == 0) return CT_OK;
  ct_rgeom g;
  ct__rgeom_init(&g, x, mask, nout, outs);
  if (g.K == 0) return CT_OK;
  CT_ASSERT(g.R > 0 && g.nr <= 1);
  arg_ctx c = {.g = &g};
  switch (x->dtype) {
#define PICK(NAME, ENUM, T, FIELD, ACC, LOAD)                      \
  case ENUM:                                                      \
    c.row = is_max ? arg_row_max_##NAME : arg_row_min_##NAME;     \
    c.col = is_max ? arg_col_max_##NAME : arg_col_min_##NAME;     \
    break;
    CT_ARG_DTYPES(PICK)
#undef PICK
  default: break;
  }
  CT_ASSERT(c.row);
  int64_t groups, width = 1;
  if (g.column) {
    c.M = g.kshape[g.nk - 1];
    c.nblk = (c.M + CT_ARG_COL_BLOCK - 1) / CT_ARG_COL_BLOCK;
    groups = g.K / c.M * c.nblk;
    width = c.M < CT_ARG_COL_BLOCK ? c.M : CT_ARG_COL_BLOCK;
  } else {
    groups = g.K;
  }
  c.S = (g.R * width + CT_ARG_SPLIT - 1) / CT_ARG_SPLIT;
  if (c.S > g.R) c.S = g.R;
  if (c.S < 1) c.S = 1;
  c.best = malloc(sizeof(ct_racc) * (size_t)(c.S * g.K));
  c.idx = malloc(sizeof(int64_t) * (size_t)(c.S * g.K));
  if (!c.best || !c.idx) {
    free(c.best);
    free(c.idx);
    return ct__fail_status(CT_ERR_OOM, "%s: out of host memory", is_max ? "argmax" : "argmin");
  }
  int64_t ntasks = groups * c.S;
  ct__parallel_for(ntasks, g.K * g.R >= CT_PARALLEL_GRAIN ? 1 : ntasks + 1,
                   g.column ? arg_col_tasks : arg_row_tasks, &c);
  /* Merge splits in index order: a later split wins only if strictly better
   * (or the first nan). */
  bool fl = ct_dtype_is_floating(x->dtype);
  for (int64_t s = 1; s < c.S; s++) {
    for (int64_t k = 0; k < g.K; k++) {
      ct_racc *b = &c.best[k], v = c.best[s * g.K + k];
      bool better = fl ? (is_max ? BETTER_MAX(v.d, b->d) : BETTER_MIN(v.d, b->d))
                       : (is_max ? BETTER_MAX(v.i, b->i) : BETTER_MIN(v.i, b->i));
      if (better) {
        *b = v;
        c.idx[k] = c.idx[s * g.K + k];
      }
    }
  }
  ct_rkept_it it;
  ct__rkept_begin(&g, 0, false, &it);
  for (int64_t k = 0; k < g.K; k++, ct__rkept_next(&g, &it)) {
    int o = 0;
    if (values) {
      char *vp = g.out[o] + it.oo[o];
      double d = fl ? c.best[k].d : (double)c.best[k].i;
      switch (x->dtype) {
      case CT_F32: *(float *)vp = (float)d; break;
      case CT_F64: *(double *)vp = d; break;
      case CT_F16:
      case CT_BF16: ct__half_store(vp, x->dtype, (float)d); break;
      case CT_I8: *(int8_t *)vp = (int8_t)c.best[k].i; break;
      case CT_U8: *(uint8_t *)vp = (uint8_t)c.best[k].i; break;
      case CT_I16: *(int16_t *)vp = (int16_t)c.best[k].i; break;
      case CT_I32: *(int32_t *)vp = (int32_t)c.best[k].i; break;
      case CT_I64: *(int64_t *)vp = c.best[k].i; break;
      case CT_BOOL: *(bool *)vp = c.best[k].i != 0; break;
      default: break;
      }
      o++;
    }
    if (indices) *(int64_t *)(g.out[o] + it.oo[o]) = c.idx[k];
  }
  free(c.best);
  free(c.idx);
  return CT_OK;
}
