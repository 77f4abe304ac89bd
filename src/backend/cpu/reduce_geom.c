/* Iteration geometry of CPU reductions: dims sorted into memory order,
 * coalesced into kept and reduced groups, and a walker over reduced runs. */
#include "backend/cpu/reduce.h"

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

void ct__rgeom_init(ct_rgeom *g, const ct_tensor *x, const bool *mask, int nout,
                    ct_tensor *const *outs) {
  memset(g, 0, sizeof *g);
  g->nout = nout;
  g->x = ct__data(x);
  g->xsize = ct__elsize(x->dtype);
  for (int o = 0; o < nout; o++) g->out[o] = ct__data(outs[o]);
  g->K = 1;
  g->R = 1;
  int order[CT_MAX_DIMS], n = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (mask[d]) g->R *= x->shape[d];
    else g->K *= x->shape[d];
    if (x->shape[d] != 1) order[n++] = d;
  }
  /* Stable insertion sort by decreasing |stride| of x: memory order. */
  for (int i = 1; i < n; i++) {
    int d = order[i], j = i;
    while (j > 0 && iabs64(x->strides[order[j - 1]]) < iabs64(x->strides[d])) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = d;
  }
  int64_t es = (int64_t)g->xsize;
  for (int i = 0; i < n; i++) {
    int d = order[i];
    int64_t size = x->shape[d], xs = x->strides[d] * es;
    if (mask[d]) {
      if (g->nr > 0 && g->rx[g->nr - 1] == xs * size) {
        g->rshape[g->nr - 1] *= size;
        g->rx[g->nr - 1] = xs;
      } else {
        g->rshape[g->nr] = size;
        g->rx[g->nr++] = xs;
      }
    } else {
      int64_t os[CT_RG_MAX_OUT];
      for (int o = 0; o < nout; o++) os[o] = outs[o]->strides[d] * (int64_t)ct__elsize(outs[o]->dtype);
      bool merge = g->nk > 0 && g->kx[g->nk - 1] == xs * size;
      for (int o = 0; o < nout && merge; o++) merge = g->ko[o][g->nk - 1] == os[o] * size;
      int k = merge ? g->nk - 1 : g->nk++;
      g->kshape[k] = merge ? g->kshape[k] * size : size;
      g->kx[k] = xs;
      for (int o = 0; o < nout; o++) g->ko[o][k] = os[o];
    }
  }
  /* COLUMN when the innermost kept dim is faster in memory than every
   * reduced dim (or nothing is reduced: then outputs are copied in blocks). */
  g->column = g->nk > 0 && (g->nr == 0 || iabs64(g->kx[g->nk - 1]) < iabs64(g->rx[g->nr - 1]));
}

void ct__rkept_begin(const ct_rgeom *g, int64_t k, bool skip_inner, ct_rkept_it *it) {
  it->nd = skip_inner ? g->nk - 1 : g->nk;
  it->xo = 0;
  for (int o = 0; o < g->nout; o++) it->oo[o] = 0;
  for (int d = it->nd - 1; d >= 0; d--) {
    it->idx[d] = k % g->kshape[d];
    k /= g->kshape[d];
    it->xo += it->idx[d] * g->kx[d];
    for (int o = 0; o < g->nout; o++) it->oo[o] += it->idx[d] * g->ko[o][d];
  }
}

void ct__rgeom_walk(const ct_rgeom *g, const char *base, int64_t r0, int64_t r1, ct_rseg_fn fn,
                    void *ctx) {
  if (r0 >= r1) return;
  int nr = g->nr;
  if (nr == 0) {
    fn(base, 0, 1, ctx);
    return;
  }
  int64_t idx[CT_MAX_DIMS], rest = r0;
  const char *p = base;
  for (int d = nr - 1; d >= 0; d--) {
    idx[d] = rest % g->rshape[d];
    rest /= g->rshape[d];
    p += idx[d] * g->rx[d];
  }
  int64_t inner = g->rshape[nr - 1], step = g->rx[nr - 1];
  int64_t pos = r0;
  while (pos < r1) {
    int64_t n = inner - idx[nr - 1];
    if (n > r1 - pos) n = r1 - pos;
    fn(p, step, n, ctx);
    pos += n;
    if (pos >= r1) break;
    p += n * step;
    idx[nr - 1] += n;
    for (int d = nr - 1; d > 0 && idx[d] == g->rshape[d]; d--) {
      p += g->rx[d - 1] - g->rshape[d] * g->rx[d];
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}
