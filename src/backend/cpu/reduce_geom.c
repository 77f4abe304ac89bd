/* Iteration geometry of CPU reductions: core/reduce_plan.h's (dims sorted
 * into memory order, coalesced into kept and reduced groups) in bytes, the
 * walker over outputs and the walker over reduced runs. */
#include "backend/cpu/reduce.h"

void ct__rgeom_init(ct_rgeom *g, const ct_tensor *x, const bool *mask, int nout,
                    ct_tensor *const *outs) {
  static const int64_t zeros[CT_MAX_DIMS] = {0};
  int64_t eshape[CT_MAX_DIMS];
  bool k_empty = false, empty = x->numel == 0;
  if (empty) ct_reduce_empty_shape(x->ndim, x->shape, mask, eshape, &k_empty);
  const int64_t *os[CT_RG_MAX_OUT];
  int64_t ounit[CT_RG_MAX_OUT];
  for (int o = 0; o < nout; o++) {
    g->out[o] = ct__data(outs[o]);
    os[o] = k_empty ? zeros : outs[o]->strides;
    ounit[o] = (int64_t)ct__elsize(outs[o]->dtype);
  }
  g->x = ct__data(x);
  ct_reduce_geom_init(&g->gm, x->ndim, empty ? eshape : x->shape, empty ? zeros : x->strides,
                      (int64_t)ct__elsize(x->dtype), mask, nout, os, ounit);
}

void ct__rkept_begin(const ct_rgeom *g, int64_t k, bool skip_inner, ct_rkept_it *it) {
  const ct_reduce_geom *m = &g->gm;
  it->nd = skip_inner ? m->nk - 1 : m->nk;
  it->xo = 0;
  for (int o = 0; o < m->nout; o++) it->oo[o] = 0;
  for (int d = it->nd - 1; d >= 0; d--) {
    it->idx[d] = k % m->kshape[d];
    k /= m->kshape[d];
    it->xo += it->idx[d] * m->kx[d];
    for (int o = 0; o < m->nout; o++) it->oo[o] += it->idx[d] * m->ko[o][d];
  }
}

void ct__rgeom_walk(const ct_rgeom *g, const char *base, int64_t r0, int64_t r1, ct_rseg_fn fn,
                    void *ctx) {
  const ct_reduce_geom *m = &g->gm;
  if (r0 >= r1) return;
  int nr = m->nr;
  if (nr == 0) {
    fn(base, 0, 1, ctx);
    return;
  }
  int64_t idx[CT_MAX_DIMS], rest = r0;
  const char *p = base;
  for (int d = nr - 1; d >= 0; d--) {
    idx[d] = rest % m->rshape[d];
    rest /= m->rshape[d];
    p += idx[d] * m->rx[d];
  }
  int64_t inner = m->rshape[nr - 1], step = m->rx[nr - 1];
  int64_t pos = r0;
  while (pos < r1) {
    int64_t n = inner - idx[nr - 1];
    if (n > r1 - pos) n = r1 - pos;
    fn(p, step, n, ctx);
    pos += n;
    if (pos >= r1) break;
    p += n * step;
    idx[nr - 1] += n;
    for (int d = nr - 1; d > 0 && idx[d] == m->rshape[d]; d--) {
      p += m->rx[d - 1] - m->rshape[d] * m->rx[d];
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}
