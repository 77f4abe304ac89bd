/* CPU remaps: out[c] = x[src(c)] with src given per dim (flip, roll, tile,
 * interleave, reflect/replicate padding; backend/params.h, ct_remap_source). Contract: backend.h,
 * `remap`. A task is a range of output rows (the last dim); the source row is found from the row's
 * coordinates, and the row itself is copied in runs: one run when the last dim is kept, two (around
 * the wrap) when it is rolled, element by element otherwise. */
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/convert.h"

typedef struct remap_ctx {
  ct_tensor *out;
  const ct_tensor *x;
  const ct_remap_params *p;
} remap_ctx;

/* n elements from src (stride xs bytes) to dst (stride os bytes). */
static void move_run(char *dst, int64_t os, const char *src, int64_t xs, int64_t n, int es) {
  if (os == es && xs == es) {
    memcpy(dst, src, (size_t)(n * es));
    return;
  }
  for (int64_t j = 0; j < n; j++) ct_move_elem(dst + j * os, src + j * xs, es);
}

static void remap_rows(int64_t r0, int64_t r1, void *vc) {
  const remap_ctx *c = vc;
  const ct_tensor *o = c->out, *x = c->x;
  int nd = o->ndim, es = (int)ct__elsize(o->dtype), last = nd - 1;
  int64_t m = o->shape[last];
  int64_t os = o->strides[last] * es, xs = x->strides[last] * es;
  char *obase = (char *)ct__data(o);
  const char *xbase = (const char *)ct__data(x);
  for (int64_t r = r0; r < r1; r++) {
    int64_t rest = r, oo = 0, xo = 0;
    for (int d = nd - 2; d >= 0; d--) {
      int64_t i = rest % o->shape[d];
      rest /= o->shape[d];
      oo += i * o->strides[d];
      xo += ct_remap_source(c->p, d, i, x->shape[d]) * x->strides[d];
    }
    char *orow = obase + oo * es;
    const char *xrow = xbase + xo * es;
    switch (c->p->kind[last]) {
      case CT_REMAP_FLIP:
        for (int64_t j = 0; j < m; j++) ct_move_elem(orow + j * os, xrow + (m - 1 - j) * xs, es);
        break;
      case CT_REMAP_ROLL: { /* out[s..m) = x[0..m-s), out[0..s) = x[m-s..m) */
        int64_t s = c->p->shift[last];
        move_run(orow + s * os, os, xrow, xs, m - s, es);
        move_run(orow, os, xrow + (m - s) * xs, xs, s, es);
        break;
      }
      case CT_REMAP_SAME:
        move_run(orow, os, xrow, xs, m, es);
        break;
      default: /* tile, interleave, padding */
        for (int64_t j = 0; j < m; j++)
          ct_move_elem(orow + j * os, xrow + ct_remap_source(c->p, last, j, x->shape[last]) * xs,
                       es);
    }
  }
}

ct_status ct__cpu_remap(ct_tensor *out, const ct_tensor *x, const ct_remap_params *p) {
  if (out->numel == 0) return CT_OK;
  remap_ctx c = {out, x, p};
  int64_t m = out->shape[out->ndim - 1];
  ct__parallel_for(out->numel / m, (CT_PARALLEL_GRAIN + m - 1) / m, remap_rows, &c);
  return CT_OK;
}
