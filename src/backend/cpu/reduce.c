/* CPU reductions (the backend's `reduce` slot): turns an op into one or two
 * passes and finishes them (core/reduce_plan.h, shared with CUDA), runs the
 * passes over the geometry in parallel and writes the finished values.
 *
 * Parallel decomposition: the K outputs form G groups (ROW: one output each;
 * COLUMN: blocks of up to CT_RCOL_BLOCK neighbouring outputs) and each
 * group's R reduced elements are cut into S splits of about CT_RSPLIT
 * elements of work, so that an all-dims reduction of a big tensor (G = 1)
 * still spreads over every thread. The G * S tasks write partial accumulators
 * part[s][k], merged over s in order afterwards. S depends only on the
 * shapes, never on the thread count, so results are deterministic. */
#include <stdlib.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/reduce.h"

#define CT_RCOL_BLOCK 256   /* outputs per COLUMN task */
#define CT_RSPLIT (1 << 16) /* elements of work per split of one group */

/* ---- Running one pass ------------------------------------------------------- */

typedef struct pass_ctx {
  const ct_rgeom *g;
  ct_rkernel kern;
  ct_racc init;
  int64_t S;         /* splits per group */
  int64_t M, nblk;   /* COLUMN: innermost kept size, blocks per outer index */
  ct_racc *part;     /* [S][K] */
  const double *aux; /* [K] or NULL */
  double P;
} pass_ctx;

typedef struct row_seg {
  ct_rrow_fn fn;
  ct_racc *acc;
  double aux, P;
} row_seg;

static void row_seg_fn(const char *p, int64_t stride, int64_t n, void *vctx) {
  row_seg *c = vctx;
  c->fn(p, stride, n, c->acc, c->aux, c->P);
}

typedef struct col_seg {
  ct_rcol_fn fn;
  ct_racc *acc;
  int64_t m, cs;
  const double *aux;
  double P;
} col_seg;

static void col_seg_fn(const char *p, int64_t stride, int64_t n, void *vctx) {
  col_seg *c = vctx;
  c->fn(p, stride, n, c->m, c->cs, c->acc, c->aux, c->P);
}

/* Where split s of S of a group's R reduced elements begins. A ROW split
 * starts on a multiple of 64 elements: the kernels stream whole cache lines
 * from an aligned buffer instead of loads that straddle two lines (a 10M f32
 * sum cut at R * s / S ran 1.3x slower). Depends on the shapes only. */
static int64_t row_split(int64_t R, int64_t s, int64_t S) {
  if (s >= S) return R;
  return (R * s / S) & ~(int64_t)63;
}

/* ROW tasks. With one split per output (the common case) a task range is a
 * range of outputs walked incrementally; with several, t = k * S + s. */
static void row_tasks(int64_t begin, int64_t end, void *vctx) {
  const pass_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  ct_rkept_it it;
  if (c->S == 1) {
    /* one run per output when at most one reduced dim is left */
    int64_t step = g->gm.nr ? g->gm.rx[g->gm.nr - 1] : 0,
            n = g->gm.nr ? g->gm.rshape[g->gm.nr - 1] : 1;
    ct__rkept_begin(g, begin, false, &it);
    for (int64_t k = begin; k < end; k++, ct__rkept_next(g, &it)) {
      ct_racc *acc = &c->part[k];
      *acc = c->init;
      double aux = c->aux ? c->aux[k] : 0.0;
      if (g->gm.nr <= 1) {
        c->kern.row(g->x + it.xo, step, n, acc, aux, c->P);
      } else {
        row_seg seg = {c->kern.row, acc, aux, c->P};
        ct__rgeom_walk(g, g->x + it.xo, 0, g->gm.R, row_seg_fn, &seg);
      }
    }
    return;
  }
  for (int64_t t = begin; t < end; t++) {
    int64_t k = t / c->S, s = t % c->S;
    ct__rkept_begin(g, k, false, &it);
    ct_racc *acc = &c->part[s * g->gm.K + k];
    *acc = c->init;
    row_seg seg = {c->kern.row, acc, c->aux ? c->aux[k] : 0.0, c->P};
    ct__rgeom_walk(g, g->x + it.xo, row_split(g->gm.R, s, c->S), row_split(g->gm.R, s + 1, c->S),
                   row_seg_fn, &seg);
  }
}

static void col_tasks(int64_t begin, int64_t end, void *vctx) {
  const pass_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  int64_t cs = g->gm.kx[g->gm.nk - 1];
  for (int64_t t = begin; t < end; t++) {
    int64_t grp = t / c->S, s = t % c->S;
    int64_t outer = grp / c->nblk, j0 = (grp % c->nblk) * CT_RCOL_BLOCK;
    int64_t m = c->M - j0 < CT_RCOL_BLOCK ? c->M - j0 : CT_RCOL_BLOCK;
    int64_t k0 = outer * c->M + j0;
    ct_rkept_it it;
    ct__rkept_begin(g, outer, true, &it);
    ct_racc *acc = &c->part[s * g->gm.K + k0];
    for (int64_t j = 0; j < m; j++) acc[j] = c->init;
    col_seg seg = {c->kern.col, acc, m, cs, c->aux ? c->aux + k0 : NULL, c->P};
    ct__rgeom_walk(g, g->x + it.xo + j0 * cs, g->gm.R * s / c->S, g->gm.R * (s + 1) / c->S,
                   col_seg_fn, &seg);
  }
}

/* Runs pass over every output; result[k] gets output k's accumulator. */
static ct_status run_pass(const ct_rgeom *g, ct_rpass pass, ct_dtype dt, const double *aux,
                          double P, ct_racc *result) {
  pass_ctx c = {
      .g = g, .kern = ct__rkernel(pass, dt), .init = ct__rpass_init(pass), .aux = aux, .P = P};
  CT_ASSERT(c.kern.row && c.kern.col);
  int64_t groups, width;
  if (g->gm.column) {
    c.M = g->gm.kshape[g->gm.nk - 1];
    c.nblk = (c.M + CT_RCOL_BLOCK - 1) / CT_RCOL_BLOCK;
    groups = g->gm.K / c.M * c.nblk;
    width = c.M < CT_RCOL_BLOCK ? c.M : CT_RCOL_BLOCK;
  } else {
    groups = g->gm.K;
    width = 1;
  }
  c.S = (g->gm.R * width + CT_RSPLIT - 1) / CT_RSPLIT;
  if (c.S > g->gm.R) c.S = g->gm.R;
  if (c.S < 1) c.S = 1;
  if (c.S == 1) {
    c.part = result;
  } else {
    c.part = ct__malloc(sizeof(ct_racc) * (size_t)(c.S * g->gm.K));
    if (!c.part)
      return ct__fail_status(CT_ERR_OOM, "reduce: out of host memory for partial results");
  }
  int64_t ntasks = groups * c.S;
  int64_t work = g->gm.K * g->gm.R;
  ct__parallel_for(ntasks, work >= CT_PARALLEL_GRAIN ? 1 : ntasks + 1,
                   g->gm.column ? col_tasks : row_tasks, &c);
  if (c.S > 1) {
    memcpy(result, c.part, sizeof(ct_racc) * (size_t)g->gm.K);
    for (int64_t s = 1; s < c.S; s++) ct__rpass_merge(pass, result, c.part + s * g->gm.K, g->gm.K);
    free(c.part);
  }
  return CT_OK;
}

/* ---- Writing results ---------------------------------------------------- */

typedef struct store_ctx {
  const ct_rgeom *g;
  const ct_racc *vals;
  ct_dtype dt;
} store_ctx;

/* out[k] = vals[k] converted to out's dtype, for outputs [begin, end). */
static void store_tasks(int64_t begin, int64_t end, void *vctx) {
  const store_ctx *c = vctx;
  ct_rkept_it it;
  ct__rkept_begin(c->g, begin, false, &it);
  for (int64_t k = begin; k < end; k++, ct__rkept_next(c->g, &it))
    ct__rstore(c->g->out[0] + it.oo[0], c->dt, c->vals[k]);
}

/* ---- The slot ----------------------------------------------------------------- */

ct_status ct__cpu_reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                         const bool *reduce_mask, double p) {
  ct_rgeom g;
  ct__rgeom_init(&g, x, reduce_mask, 1, &out);
  if (g.gm.K == 0) return CT_OK;
  ct_reduce_plan pl = ct_reduce_plan_of(op, ct_dtype_is_floating(x->dtype), x->dtype == CT_F64, p);
  CT_ASSERT(pl.npass > 0);
  ct_racc *a1 = ct__malloc(sizeof(ct_racc) * (size_t)g.gm.K * (pl.npass == 2 ? 2 : 1));
  double *aux = pl.npass == 2 ? ct__malloc(sizeof(double) * (size_t)g.gm.K) : NULL;
  ct_status st = CT_OK;
  if (!a1 || (pl.npass == 2 && !aux)) {
    st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory", ct__reduce_names[op]);
    goto done;
  }
  ct_racc *a2 = pl.npass == 2 ? a1 + g.gm.K : NULL;
  ct_racc init1 = ct__rpass_init(pl.pass[0]);
  if (g.gm.R == 0) {
    for (int64_t k = 0; k < g.gm.K; k++) a1[k] = init1;
  } else if ((st = run_pass(&g, pl.pass[0], x->dtype, NULL, p, a1)) != CT_OK) {
    goto done;
  }
  if (pl.npass == 2) {
    for (int64_t k = 0; k < g.gm.K; k++) aux[k] = ct_reduce_aux(op, a1[k].d, g.gm.R);
    ct_racc init2 = ct__rpass_init(pl.pass[1]);
    if (g.gm.R == 0) {
      for (int64_t k = 0; k < g.gm.K; k++) a2[k] = init2;
    } else if ((st = run_pass(&g, pl.pass[1], x->dtype, aux, p, a2)) != CT_OK) {
      goto done;
    }
  }
  if (!ct_reduce_finish_is_identity(op, &pl))
    for (int64_t k = 0; k < g.gm.K; k++)
      a1[k].d =
          ct_reduce_finish(op, &pl, a1[k].d, a2 ? a2[k].d : 0.0, aux ? aux[k] : 0.0, g.gm.R, p);
  store_ctx sc = {&g, a1, out->dtype};
  ct__parallel_for(g.gm.K, CT_PARALLEL_GRAIN, store_tasks, &sc);
done:
  free(a1);
  free(aux);
  return st;
}
