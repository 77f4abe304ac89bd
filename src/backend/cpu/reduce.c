/* CPU reductions (the backend's `reduce` slot): turns an op into one or two
 * passes (reduce.h), runs them over the geometry in parallel and writes the
 * finished values.
 *
 * Parallel decomposition: the K outputs form G groups (ROW: one output each;
 * COLUMN: blocks of up to CT_RCOL_BLOCK neighbouring outputs) and each
 * group's R reduced elements are cut into S splits of about CT_RSPLIT
 * elements of work, so that an all-dims reduction of a big tensor (G = 1)
 * still spreads over every thread. The G * S tasks write partial accumulators
 * part[s][k], merged over s in order afterwards. S depends only on the
 * shapes, never on the thread count, so results are deterministic. */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/reduce.h"

#define CT_RCOL_BLOCK 256      /* outputs per COLUMN task */
#define CT_RSPLIT (1 << 16)    /* elements of work per split of one group */

/* ---- Plans: which passes an op runs ----------------------------------------- */

typedef struct rplan {
  int npass;
  ct_rpass pass[2];
} rplan;

static rplan make_plan(ct_reduce_op op, ct_dtype dt, double p) {
  bool fl = ct_dtype_is_floating(dt);
  switch (op) {
  case CT_ROP_SUM:
  case CT_ROP_MEAN: return (rplan){1, {fl ? CT_RP_F_SUM : CT_RP_I_SUM}};
  case CT_ROP_PROD: return (rplan){1, {fl ? CT_RP_F_PROD : CT_RP_I_PROD}};
  case CT_ROP_MAX: return (rplan){1, {fl ? CT_RP_F_MAX : CT_RP_I_MAX}};
  case CT_ROP_MIN: return (rplan){1, {fl ? CT_RP_F_MIN : CT_RP_I_MIN}};
  case CT_ROP_ALL: return (rplan){1, {CT_RP_NZ_ALL}};
  case CT_ROP_ANY: return (rplan){1, {CT_RP_NZ_ANY}};
  case CT_ROP_LOGSUMEXP: return (rplan){2, {CT_RP_F_MAX, CT_RP_F_EXP_SUM}};
  case CT_ROP_VAR:
  case CT_ROP_STD: return (rplan){2, {CT_RP_F_SUM, CT_RP_F_DEV_SQ_SUM}};
  case CT_ROP_NORM:
    if (p == 0) return (rplan){1, {CT_RP_F_NONZERO}};
    if (p == 1) return (rplan){1, {CT_RP_F_ABS_SUM}};
    if (p == INFINITY) return (rplan){1, {CT_RP_F_ABS_MAX}};
    if (p == -INFINITY) return (rplan){1, {CT_RP_F_ABS_MIN}};
    /* Squares of f32/f16/bf16 values can't overflow or underflow an f64 sum. */
    if (p == 2 && dt != CT_F64) return (rplan){1, {CT_RP_F_SQ_SUM}};
    /* Otherwise scale by max |x| first (overflow-safe). */
    if (p == 2) return (rplan){2, {CT_RP_F_ABS_MAX, CT_RP_F_SCALED_SQ_SUM}};
    if (p > 0) return (rplan){2, {CT_RP_F_ABS_MAX, CT_RP_F_SCALED_POW_SUM}};
    return (rplan){1, {CT_RP_F_POW_SUM}};
  default: break;
  }
  return (rplan){0, {CT_RP_F_SUM}};
}

/* The per-output value pass 2 needs, from pass 1's accumulator. */
static double aux_of(ct_reduce_op op, double a1, int64_t R) {
  switch (op) {
  case CT_ROP_LOGSUMEXP: return isinf(a1) ? 0.0 : a1;        /* as torch: +-inf max -> 0 */
  case CT_ROP_VAR:
  case CT_ROP_STD: return a1 / (double)R;                     /* the mean */
  case CT_ROP_NORM: return a1 > 0 && isfinite(a1) ? a1 : 1.0; /* the scale */
  default: return 0.0;
  }
}

/* The result of a floating op from the pass accumulators. */
static double finish_f(ct_reduce_op op, const rplan *pl, double a1, double a2, double aux,
                       int64_t R, double p) {
  switch (op) {
  case CT_ROP_MEAN: return a1 / (double)R;
  case CT_ROP_LOGSUMEXP: return log(a2) + aux;
  case CT_ROP_VAR:
  case CT_ROP_STD: {
    double dof = (double)R - p;
    double v = a2 / (dof > 0 ? dof : 0.0); /* torch: max(0, N - correction) */
    return op == CT_ROP_STD ? sqrt(v) : v;
  }
  case CT_ROP_NORM:
    switch (pl->pass[pl->npass - 1]) {
    case CT_RP_F_SQ_SUM: return sqrt(a1);
    case CT_RP_F_SCALED_SQ_SUM: return a1 > 0 && isfinite(a1) ? a1 * sqrt(a2) : a1;
    case CT_RP_F_SCALED_POW_SUM: return a1 > 0 && isfinite(a1) ? a1 * pow(a2, 1.0 / p) : a1;
    case CT_RP_F_POW_SUM: return pow(a1, 1.0 / p);
    default: return a1;
    }
  default: return a1;
  }
}

/* ---- Running one pass ------------------------------------------------------- */

typedef struct pass_ctx {
  const ct_rgeom *g;
  ct_rkernel kern;
  ct_racc init;
  int64_t S;          /* splits per group */
  int64_t M, nblk;    /* COLUMN: innermost kept size, blocks per outer index */
  ct_racc *part;      /* [S][K] */
  const double *aux;  /* [K] or NULL */
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

/* ROW tasks. With one split per output (the common case) a task range is a
 * range of outputs walked incrementally; with several, t = k * S + s. */
static void row_tasks(int64_t begin, int64_t end, void *vctx) {
  const pass_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  ct_rkept_it it;
  if (c->S == 1) {
    /* one run per output when at most one reduced dim is left */
    int64_t step = g->nr ? g->rx[g->nr - 1] : 0, n = g->nr ? g->rshape[g->nr - 1] : 1;
    ct__rkept_begin(g, begin, false, &it);
    for (int64_t k = begin; k < end; k++, ct__rkept_next(g, &it)) {
      ct_racc *acc = &c->part[k];
      *acc = c->init;
      double aux = c->aux ? c->aux[k] : 0.0;
      if (g->nr <= 1) {
        c->kern.row(g->x + it.xo, step, n, acc, aux, c->P);
      } else {
        row_seg seg = {c->kern.row, acc, aux, c->P};
        ct__rgeom_walk(g, g->x + it.xo, 0, g->R, row_seg_fn, &seg);
      }
    }
    return;
  }
  for (int64_t t = begin; t < end; t++) {
    int64_t k = t / c->S, s = t % c->S;
    ct__rkept_begin(g, k, false, &it);
    ct_racc *acc = &c->part[s * g->K + k];
    *acc = c->init;
    row_seg seg = {c->kern.row, acc, c->aux ? c->aux[k] : 0.0, c->P};
    ct__rgeom_walk(g, g->x + it.xo, g->R * s / c->S, g->R * (s + 1) / c->S, row_seg_fn, &seg);
  }
}

static void col_tasks(int64_t begin, int64_t end, void *vctx) {
  const pass_ctx *c = vctx;
  const ct_rgeom *g = c->g;
  int64_t cs = g->kx[g->nk - 1];
  for (int64_t t = begin; t < end; t++) {
    int64_t grp = t / c->S, s = t % c->S;
    int64_t outer = grp / c->nblk, j0 = (grp % c->nblk) * CT_RCOL_BLOCK;
    int64_t m = c->M - j0 < CT_RCOL_BLOCK ? c->M - j0 : CT_RCOL_BLOCK;
    int64_t k0 = outer * c->M + j0;
    ct_rkept_it it;
    ct__rkept_begin(g, outer, true, &it);
    ct_racc *acc = &c->part[s * g->K + k0];
    for (int64_t j = 0; j < m; j++) acc[j] = c->init;
    col_seg seg = {c->kern.col, acc, m, cs, c->aux ? c->aux + k0 : NULL, c->P};
    ct__rgeom_walk(g, g->x + it.xo + j0 * cs, g->R * s / c->S, g->R * (s + 1) / c->S, col_seg_fn,
                   &seg);
  }
}

/* Runs pass over every output; result[k] gets output k's accumulator. */
static ct_status run_pass(const ct_rgeom *g, ct_rpass pass, ct_dtype dt, const double *aux,
                          double P, ct_racc *result) {
  pass_ctx c = {.g = g, .kern = ct__rkernel(pass, dt), .init = ct__rpass_init(pass), .aux = aux,
                .P = P};
  CT_ASSERT(c.kern.row && c.kern.col);
  int64_t groups, width;
  if (g->column) {
    c.M = g->kshape[g->nk - 1];
    c.nblk = (c.M + CT_RCOL_BLOCK - 1) / CT_RCOL_BLOCK;
    groups = g->K / c.M * c.nblk;
    width = c.M < CT_RCOL_BLOCK ? c.M : CT_RCOL_BLOCK;
  } else {
    groups = g->K;
    width = 1;
  }
  c.S = (g->R * width + CT_RSPLIT - 1) / CT_RSPLIT;
  if (c.S > g->R) c.S = g->R;
  if (c.S < 1) c.S = 1;
  if (c.S == 1) {
    c.part = result;
  } else {
    c.part = malloc(sizeof(ct_racc) * (size_t)(c.S * g->K));
    if (!c.part) return ct__fail_status(CT_ERR_OOM, "reduce: out of host memory for partial results");
  }
  int64_t ntasks = groups * c.S;
  int64_t work = g->K * g->R;
  ct__parallel_for(ntasks, work >= CT_PARALLEL_GRAIN ? 1 : ntasks + 1,
                   g->column ? col_tasks : row_tasks, &c);
  if (c.S > 1) {
    memcpy(result, c.part, sizeof(ct_racc) * (size_t)g->K);
    for (int64_t s = 1; s < c.S; s++) ct__rpass_merge(pass, result, c.part + s * g->K, g->K);
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
  const ct_racc *v = c->vals;
  ct_rkept_it it;
  ct__rkept_begin(c->g, begin, false, &it);
  char *o = c->g->out[0];
#define STORE_LOOP(expr)                                            \
  for (int64_t k = begin; k < end; k++, ct__rkept_next(c->g, &it)) { \
    char *p = o + it.oo[0];                                         \
    expr;                                                           \
  }                                                                 \
  break;
  switch (c->dt) {
  case CT_F32: STORE_LOOP(*(float *)p = (float)v[k].d)
  case CT_F64: STORE_LOOP(*(double *)p = v[k].d)
  case CT_F16:
  case CT_BF16: STORE_LOOP(ct__half_store(p, c->dt, (float)v[k].d))
  case CT_I8: STORE_LOOP(*(int8_t *)p = (int8_t)v[k].i)
  case CT_U8: STORE_LOOP(*(uint8_t *)p = (uint8_t)v[k].i)
  case CT_I16: STORE_LOOP(*(int16_t *)p = (int16_t)v[k].i)
  case CT_I32: STORE_LOOP(*(int32_t *)p = (int32_t)v[k].i)
  case CT_I64: STORE_LOOP(*(int64_t *)p = v[k].i)
  case CT_BOOL: STORE_LOOP(*(bool *)p = v[k].i != 0)
  default: break;
  }
#undef STORE_LOOP
}

/* ---- The slot ----------------------------------------------------------------- */

ct_status ct__cpu_reduce(ct_reduce_op op, ct_tensor *out, const ct_tensor *x,
                         const bool *reduce_mask, double p) {
  ct_rgeom g;
  ct__rgeom_init(&g, x, reduce_mask, 1, &out);
  if (g.K == 0) return CT_OK;
  rplan pl = make_plan(op, x->dtype, p);
  CT_ASSERT(pl.npass > 0);
  bool is_int = ct__rpass_is_int(pl.pass[0]);
  ct_racc *a1 = malloc(sizeof(ct_racc) * (size_t)g.K * (pl.npass == 2 ? 2 : 1));
  double *aux = pl.npass == 2 ? malloc(sizeof(double) * (size_t)g.K) : NULL;
  ct_status st = CT_OK;
  if (!a1 || (pl.npass == 2 && !aux)) {
    st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory", ct__reduce_names[op]);
    goto done;
  }
  ct_racc *a2 = pl.npass == 2 ? a1 + g.K : NULL;
  ct_racc init1 = ct__rpass_init(pl.pass[0]);
  if (g.R == 0) {
    for (int64_t k = 0; k < g.K; k++) a1[k] = init1;
  } else if ((st = run_pass(&g, pl.pass[0], x->dtype, NULL, p, a1)) != CT_OK) {
    goto done;
  }
  if (pl.npass == 2) {
    for (int64_t k = 0; k < g.K; k++) aux[k] = aux_of(op, a1[k].d, g.R);
    ct_racc init2 = ct__rpass_init(pl.pass[1]);
    if (g.R == 0) {
      for (int64_t k = 0; k < g.K; k++) a2[k] = init2;
    } else if ((st = run_pass(&g, pl.pass[1], x->dtype, aux, p, a2)) != CT_OK) {
      goto done;
    }
  }
  bool identity_finish = op == CT_ROP_SUM || op == CT_ROP_PROD || op == CT_ROP_MAX ||
                         op == CT_ROP_MIN || op == CT_ROP_ALL || op == CT_ROP_ANY;
  if (!is_int && !identity_finish)
    for (int64_t k = 0; k < g.K; k++)
      a1[k].d = finish_f(op, &pl, a1[k].d, a2 ? a2[k].d : 0.0, aux ? aux[k] : 0.0, g.R, p);
  store_ctx sc = {&g, a1, out->dtype};
  ct__parallel_for(g.K, CT_PARALLEL_GRAIN, store_tasks, &sc);
done:
  free(a1);
  free(aux);
  return st;
}
