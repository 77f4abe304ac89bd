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

/* The kernels, per dtype: arg_reduce_t.h */
#define CT_TEMPLATE "backend/cpu/arg_reduce_t.h"
#include "backend/cpu/for_reduce_types.h"
#undef CT_TEMPLATE

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
  int64_t a = g->gm.R * s / c->S, b = g->gm.R * (s + 1) / c->S;
  *r0 = a;
  *n = b - a;
  *stride = g->gm.nr ? g->gm.rx[0] : 0;
  return base + a * *stride;
}

static void arg_row_tasks(int64_t begin, int64_t end, void *vctx) {
  const arg_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  if (c->S == 1) { /* a range of outputs, walked incrementally */
    ct_rkept_it it;
    ct__rkept_begin(g, begin, false, &it);
    int64_t st = g->gm.nr ? g->gm.rx[0] : 0;
    for (int64_t k = begin; k < end; k++, ct__rkept_next(g, &it)) {
      c->idx[k] = -1;
      c->row(g->x + it.xo, st, g->gm.R, 0, &c->best[k], &c->idx[k]);
    }
    return;
  }
  for (int64_t t = begin; t < end; t++) {
    int64_t k = t / c->S, s = t % c->S, r0, n, st;
    ct_rkept_it it;
    ct__rkept_begin(g, k, false, &it);
    const char *p = split_run(c, g->x + it.xo, s, &r0, &n, &st);
    int64_t *bi = &c->idx[s * g->gm.K + k];
    *bi = -1;
    c->row(p, st, n, r0, &c->best[s * g->gm.K + k], bi);
  }
}

static void arg_col_tasks(int64_t begin, int64_t end, void *vctx) {
  const arg_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  int64_t cs = g->gm.kx[g->gm.nk - 1];
  for (int64_t t = begin; t < end; t++) {
    int64_t grp = t / c->S, s = t % c->S;
    int64_t outer = grp / c->nblk, j0 = (grp % c->nblk) * CT_ARG_COL_BLOCK;
    int64_t m = c->M - j0 < CT_ARG_COL_BLOCK ? c->M - j0 : CT_ARG_COL_BLOCK;
    int64_t r0, n, st, k0 = outer * c->M + j0;
    ct_rkept_it it;
    ct__rkept_begin(g, outer, true, &it);
    const char *p = split_run(c, g->x + it.xo + j0 * cs, s, &r0, &n, &st);
    int64_t *bi = &c->idx[s * g->gm.K + k0];
    bi[0] = -1;
    c->col(p, st, n, r0, m, cs, &c->best[s * g->gm.K + k0], bi);
  }
}

/* The kernels of each dtype, [0] max, [1] min. */
#define ENTRY(E, S) \
  [CT_##E] = {{arg_row_max_##S, arg_row_min_##S}, {arg_col_max_##S, arg_col_min_##S}},
static const struct {
  arg_row_fn row[2];
  arg_col_fn col[2];
} kernels[CT_DTYPE_COUNT] = {ENTRY(F32, f32) ENTRY(F64, f64) ENTRY(F16, f16) ENTRY(BF16, bf16)
                                 ENTRY(I8, i8) ENTRY(U8, u8) ENTRY(I16, i16) ENTRY(I32, i32)
                                     ENTRY(I64, i64) ENTRY(BOOL, b8)};
#undef ENTRY

/* Splits of the dim per group (S, depending on the shapes only: results
 * don't depend on the thread count); returns the number of tasks. */
static int64_t plan_tasks(arg_ctx *c) {
  const ct_reduce_geom *m = &c->g->gm;
  int64_t groups, width = 1;
  if (m->column) {
    c->M = m->kshape[m->nk - 1];
    c->nblk = (c->M + CT_ARG_COL_BLOCK - 1) / CT_ARG_COL_BLOCK;
    groups = m->K / c->M * c->nblk;
    width = c->M < CT_ARG_COL_BLOCK ? c->M : CT_ARG_COL_BLOCK;
  } else {
    groups = m->K;
  }
  c->S = (m->R * width + CT_ARG_SPLIT - 1) / CT_ARG_SPLIT;
  if (c->S > m->R) c->S = m->R;
  if (c->S < 1) c->S = 1;
  return groups * c->S;
}

/* Merges the splits into split 0 in index order: a later split wins only if
 * strictly better (or the first nan). */
static void merge_splits(arg_ctx *c, bool is_max, bool floating) {
  int64_t K = c->g->gm.K;
  for (int64_t s = 1; s < c->S; s++)
    for (int64_t k = 0; k < K; k++) {
      ct_racc *b = &c->best[k], v = c->best[s * K + k];
      if (floating ? ct_arg_later_wins_f(is_max, v.d, b->d)
                   : ct_arg_later_wins_i(is_max, v.i, b->i)) {
        *b = v;
        c->idx[k] = c->idx[s * K + k];
      }
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
  if (g.gm.K == 0) return CT_OK;
  CT_ASSERT(g.gm.R > 0 && g.gm.nr <= 1);
  arg_ctx c = {
      .g = &g, .row = kernels[x->dtype].row[!is_max], .col = kernels[x->dtype].col[!is_max]};
  CT_ASSERT(c.row);
  int64_t ntasks = plan_tasks(&c);
  c.best = ct__malloc(sizeof(ct_racc) * (size_t)(c.S * g.gm.K));
  c.idx = ct__malloc(sizeof(int64_t) * (size_t)(c.S * g.gm.K));
  if (!c.best || !c.idx) {
    free(c.best);
    free(c.idx);
    return ct__fail_status(CT_ERR_OOM, "%s: out of host memory", is_max ? "argmax" : "argmin");
  }
  ct__parallel_for(ntasks, g.gm.K * g.gm.R >= CT_PARALLEL_GRAIN ? 1 : ntasks + 1,
                   g.gm.column ? arg_col_tasks : arg_row_tasks, &c);
  merge_splits(&c, is_max, ct_dtype_is_floating(x->dtype));
  ct_rkept_it it;
  ct__rkept_begin(&g, 0, false, &it);
  for (int64_t k = 0; k < g.gm.K; k++, ct__rkept_next(&g, &it)) {
    int o = 0;
    if (values) ct__rstore(g.out[o] + it.oo[o], x->dtype, c.best[k]), o++;
    if (indices) *(int64_t *)(g.out[o] + it.oo[o]) = c.idx[k];
  }
  free(c.best);
  free(c.idx);
  return CT_OK;
}
