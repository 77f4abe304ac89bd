/* CPU kernels of advanced indexing: index_linearize, index_gather, index_put.
 * Contracts: backend/backend.h; the index encoding: backend/params.h.
 *
 * The index points are made and checked in one serial pass (an index tensor
 * is small next to what it moves), so a bad index writes nothing. Gathers
 * run in parallel; puts run serially in row-major order, which makes
 * accumulation deterministic and lets the last duplicate win without
 * accumulate, as torch's CPU kernel. */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "backend/cpu/elem_add.h"
#include "core/convert.h"

ct_status ct__cpu_index_linearize(ct_tensor *lin, const ct_tensor *const *idx,
                                  const ct_adv_index_params *p) {
  int64_t *out = ct__data(lin);
  const int64_t *base[CT_MAX_DIMS];
  for (int k = 0; k < p->n; k++) base[k] = ct__data(idx[k]);
  int64_t c[CT_MAX_DIMS] = {0};
  int nd = lin->ndim;
  for (int64_t e = 0; e < lin->numel; e++) {
    int64_t v = 0;
    for (int k = 0; k < p->n; k++) {
      int64_t o = 0;
      for (int d = 0; d < nd; d++) o += c[d] * idx[k]->strides[d];
      int64_t i = base[k][o], size = p->sizes[k];
      if (i < -size || i >= size)
        return ct__fail_status(CT_ERR_ARG,
                               "index: index %lld is out of bounds for dim %d with size %lld",
                               (long long)i, p->dims[k], (long long)size);
      v += (i < 0 ? i + size : i) * p->radix[k];
    }
    out[e] = v;
    for (int d = nd - 1; d >= 0; d--) { /* next coordinates, row-major */
      if (++c[d] < lin->shape[d]) break;
      c[d] = 0;
    }
  }
  return CT_OK;
}

typedef struct adv_ctx {
  const ct_adv_index_params *p;
  ct_dtype dtype;
  bool accumulate;
} adv_ctx;

/* Rows of (out, src, lin). */
static void gather_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  const adv_ctx *c = vctx;
  int es = (int)ct__elsize(c->dtype);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = ct_adv_index_offset(c->p, *(const int64_t *)(d[2] + i * s[2]));
    ct_move_elem(d[0] + i * s[0], d[1] + i * s[1] + off * es, es);
  }
}

ct_status ct__cpu_index_gather(ct_tensor *out, const ct_tensor *src, const ct_tensor *lin,
                               const ct_adv_index_params *p) {
  adv_ctx c = {p, out->dtype, false};
  const ct_tensor *ts[3] = {out, src, lin};
  ct__loop(3, ts, gather_row, &c);
  return CT_OK;
}

/* Rows of (dst, values, lin). */
static void put_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  const adv_ctx *c = vctx;
  int es = (int)ct__elsize(c->dtype);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = ct_adv_index_offset(c->p, *(const int64_t *)(d[2] + i * s[2]));
    char *dst = d[0] + i * s[0] + off * es;
    if (c->accumulate)
      ct__cpu_add_elem(dst, d[1] + i * s[1], c->dtype);
    else
      ct_move_elem(dst, d[1] + i * s[1], es);
  }
}

ct_status ct__cpu_index_put(ct_tensor *dst, const ct_tensor *values, const ct_tensor *lin,
                            const ct_adv_index_params *p, bool accumulate) {
  adv_ctx c = {p, dst->dtype, accumulate};
  const ct_tensor *ts[3] = {dst, values, lin};
  ct_loop L;
  ct__loop_init(&L, 3, ts);
  ct__loop_run(&L, put_row, &c, INT64_MAX); /* serial: duplicates in order */
  return CT_OK;
}
