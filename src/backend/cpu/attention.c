/* CPU fused scaled dot-product attention, forward and backward
 * (backend.h's sdpa slots; the shared rules in core/sdpa_math.h).
 *
 * Forward: one pool task per (problem b, tile of SDPA_BR query rows); it
 * walks the keys in tiles of SDPA_BC with the online softmax (running
 * maximum m and sum l per row, the output rescaled when m grows) and writes
 * the output and each row's logsumexp m + log l. The (L, S) scores exist
 * only as one SDPA_BR x SDPA_BC tile per task.
 * Backward (FlashAttention-2's formulas, P recomputed from the scores and
 * lse): D_i = dO_i . O_i first, then one task per (b, key tile) sums
 * grad_k and grad_v over the query tiles, and one task per (b, query tile)
 * sums grad_q over the key tiles. Two passes recompute the scores twice,
 * but every output element has one writer: no atomics, results independent
 * of the thread count. With enough problems to share among the threads
 * (BH >= 2 x threads), one task per problem makes a single pass instead,
 * adding grad_q key tile by key tile (FlashAttention-2's order): the same
 * sums in the same order, so the same results.
 * f32 and f64 natively; f16/bf16 computed in f32 (copies of the operands). */
#include <math.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/nn_util.h"
#include "core/alloc.h"
#include "core/exp_math.h"
#include "core/parallel.h"
#include "core/sdpa_math.h"

/* query rows and keys per tile: 128 x 256 ran in 0.41 s where 64 x 64 took
 * 0.67 s (bench_attention, T = 1024, 2 threads): fewer, larger BLAS calls */
#define SDPA_BR 128
#define SDPA_BC 256

typedef struct sdpa_ctx {
  const ct_sdpa_params *p;
  const char *q, *k, *v, *mask, *g;
  char *out, *lse, *delta, *gq, *gk, *gv;
  bool f64;
  int64_t tiles; /* tiles per problem of the current pass */
  bool failed;   /* a task's scratch could not be allocated */
} sdpa_ctx;

#define CT_TEMPLATE "backend/cpu/attention_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

/* The four tile buffers of a task (scores/weights, dropped weights, dS, and
 * a row of dropout factors), one allocation. */
static void *tile_scratch(sdpa_ctx *c, size_t es) {
  void *s = ct__malloc(es * (3 * SDPA_BR * SDPA_BC + SDPA_BC));
  if (!s) c->failed = true;
  return s;
}

typedef enum { PASS_FWD, PASS_DELTA, PASS_DKDV, PASS_DQ, PASS_ONE } sdpa_pass;
typedef struct pass_job {
  sdpa_ctx *c;
  sdpa_pass pass;
} pass_job;

static void run_task(int64_t task, void *vj) {
  const pass_job *j = vj;
  sdpa_ctx *c = j->c;
  const ct_sdpa_params *p = c->p;
  int64_t b = task / c->tiles, t0 = task % c->tiles;
  bool f64 = c->f64;
  int64_t rows = j->pass == PASS_DKDV ? p->S : p->L, blk = j->pass == PASS_DKDV ? SDPA_BC : SDPA_BR;
  int64_t x0 = t0 * blk, n = rows - x0 < blk ? rows - x0 : blk;
  if (j->pass == PASS_DELTA) {
    if (f64)
      sdpa_delta_f64(c, b, x0, n);
    else
      sdpa_delta_f32(c, b, x0, n);
    return;
  }
  size_t es = f64 ? sizeof(double) : sizeof(float);
  char *s = tile_scratch(c, es);
  if (!s) return;
  char *pd = s + es * SDPA_BR * SDPA_BC, *ds = pd + es * SDPA_BR * SDPA_BC;
  char *f = ds + es * SDPA_BR * SDPA_BC;
  if (j->pass == PASS_ONE) { /* all of problem b: grad_k, grad_v and grad_q in one pass */
    memset(c->gq + (size_t)(b * p->L * p->E) * es, 0, es * (size_t)(p->L * p->E));
    for (int64_t j0 = 0; j0 < p->S; j0 += SDPA_BC) {
      int64_t nc = p->S - j0 < SDPA_BC ? p->S - j0 : SDPA_BC;
      if (f64)
        sdpa_dkdv_tile_f64(c, b, j0, nc, (double *)s, (double *)pd, (double *)ds, (double *)f,
                           true);
      else
        sdpa_dkdv_tile_f32(c, b, j0, nc, (float *)s, (float *)pd, (float *)ds, (float *)f, true);
    }
  } else if (f64) {
    if (j->pass == PASS_FWD)
      sdpa_fwd_tile_f64(c, b, x0, n, (double *)s, (double *)f);
    else if (j->pass == PASS_DKDV)
      sdpa_dkdv_tile_f64(c, b, x0, n, (double *)s, (double *)pd, (double *)ds, (double *)f, false);
    else
      sdpa_dq_tile_f64(c, b, x0, n, (double *)s, (double *)pd, (double *)ds, (double *)f);
  } else {
    if (j->pass == PASS_FWD)
      sdpa_fwd_tile_f32(c, b, x0, n, (float *)s, (float *)f);
    else if (j->pass == PASS_DKDV)
      sdpa_dkdv_tile_f32(c, b, x0, n, (float *)s, (float *)pd, (float *)ds, (float *)f, false);
    else
      sdpa_dq_tile_f32(c, b, x0, n, (float *)s, (float *)pd, (float *)ds, (float *)f);
  }
  ct__free(s);
}

/* Runs a pass over BH problems x tiles of `rows` on the pool, or on this
 * thread alone when the BLAS may not be called from every thread. */
static ct_status run_pass(sdpa_ctx *c, sdpa_pass pass, int64_t rows, int64_t blk) {
  c->tiles = (rows + blk - 1) / blk;
  int64_t n = c->p->BH * c->tiles;
  pass_job j = {c, pass};
  if (n == 0) return CT_OK;
  if (ct__blas_max_threads() < ct__num_threads())
    for (int64_t t = 0; t < n; t++) run_task(t, &j);
  else
    ct__parallel_run(n, run_task, &j);
  if (c->failed)
    return ct__fail_status(CT_ERR_OOM, "scaled_dot_product_attention: out of host memory");
  return CT_OK;
}

/* The f32 working copies of half operands (NULL passes; f32/f64 retained). */
static ct_tensor *work_copy(const ct_tensor *t, bool copy, bool *fail) {
  if (!t) return NULL;
  if (ct__is_half(t->dtype)) return ct__nn_f32(t, copy, fail);
  return ct__retain(t);
}

ct_status ct__cpu_sdpa(ct_tensor *out, ct_tensor *lse, const ct_tensor *q, const ct_tensor *k,
                       const ct_tensor *v, const ct_tensor *mask, const ct_sdpa_params *p) {
  ct_status st = ct__blas_load("scaled_dot_product_attention");
  if (st != CT_OK) return st;
  bool fail = false;
  ct_tensor *qw = work_copy(q, true, &fail), *kw = work_copy(k, true, &fail);
  ct_tensor *vw = work_copy(v, true, &fail), *mw = work_copy(mask, true, &fail);
  ct_tensor *ow = work_copy(out, false, &fail);
  if (fail)
    st = ct__fail_status(CT_ERR_OOM, "scaled_dot_product_attention: out of host memory");
  else {
    sdpa_ctx c = {.p = p,
                  .f64 = q->dtype == CT_F64,
                  .q = ct__data(qw),
                  .k = ct__data(kw),
                  .v = ct__data(vw),
                  .mask = mw ? ct__data(mw) : NULL,
                  .out = ct__data(ow),
                  .lse = ct__data(lse)};
    st = run_pass(&c, PASS_FWD, p->L, SDPA_BR);
  }
  ct__release(qw), ct__release(kw), ct__release(vw), ct__release(mw);
  if (ct__is_half(out->dtype)) return ct__nn_back(out, ow, st);
  ct__release(ow);
  return st;
}

ct_status ct__cpu_sdpa_backward(ct_tensor *grad_q, ct_tensor *grad_k, ct_tensor *grad_v,
                                const ct_tensor *grad_out, const ct_tensor *q, const ct_tensor *k,
                                const ct_tensor *v, const ct_tensor *out, const ct_tensor *lse,
                                const ct_tensor *mask, const ct_sdpa_params *p) {
  ct_status st = ct__blas_load("scaled_dot_product_attention_backward");
  if (st != CT_OK) return st;
  bool fail = false, f64 = q->dtype == CT_F64;
  ct_tensor *qw = work_copy(q, true, &fail), *kw = work_copy(k, true, &fail);
  ct_tensor *vw = work_copy(v, true, &fail), *mw = work_copy(mask, true, &fail);
  ct_tensor *ow = work_copy(out, true, &fail), *gw = work_copy(grad_out, true, &fail);
  ct_tensor *gqw = work_copy(grad_q, false, &fail), *gkw = work_copy(grad_k, false, &fail);
  ct_tensor *gvw = work_copy(grad_v, false, &fail);
  void *delta = fail ? NULL : ct__malloc_array((size_t)(p->BH * p->L + 1), f64 ? 8 : 4);
  if (!delta)
    st = ct__fail_status(CT_ERR_OOM, "scaled_dot_product_attention_backward: out of host memory");
  else {
    sdpa_ctx c = {.p = p,
                  .f64 = f64,
                  .q = ct__data(qw),
                  .k = ct__data(kw),
                  .v = ct__data(vw),
                  .mask = mw ? ct__data(mw) : NULL,
                  .g = ct__data(gw),
                  .out = ct__data(ow),
                  .lse = ct__data(lse),
                  .delta = delta,
                  .gq = ct__data(gqw),
                  .gk = ct__data(gkw),
                  .gv = ct__data(gvw)};
    st = run_pass(&c, PASS_DELTA, p->L, SDPA_BR);
    if (st == CT_OK && p->BH >= 2 * (int64_t)ct__num_threads()) {
      st = run_pass(&c, PASS_ONE, 1, 1);
    } else {
      if (st == CT_OK) st = run_pass(&c, PASS_DKDV, p->S, SDPA_BC);
      if (st == CT_OK) st = run_pass(&c, PASS_DQ, p->L, SDPA_BR);
    }
  }
  ct__free(delta);
  ct__release(qw), ct__release(kw), ct__release(vw), ct__release(mw), ct__release(ow);
  ct__release(gw);
  if (!ct__is_half(q->dtype)) {
    ct__release(gqw), ct__release(gkw), ct__release(gvw);
    return st;
  }
  st = ct__nn_back(grad_q, gqw, st);
  st = ct__nn_back(grad_k, gkw, st);
  return ct__nn_back(grad_v, gvw, st);
}
