/* CPU reductions: the iteration geometry and the per-pass kernel tables
 * (internal to the CPU backend's reduce family).
 *
 * The geometry and the passes are core/reduce_plan.h's (shared with the CUDA
 * backend), with byte strides here: K outputs, each reducing R elements, kept
 * dims kshape[nk] (x byte strides kx, output byte strides ko) and reduced
 * dims rshape[nr] (x byte strides rx), both outer to inner in memory order.
 * Two layouts follow:
 *   ROW     the innermost reduced dim is the fastest in memory: each output
 *           reduces rows of x (contiguous when rx[nr-1] is the element size);
 *   COLUMN  the innermost kept dim is the fastest: a block of neighbouring
 *           outputs is updated together from each row of x, so the inner loop
 *           runs along contiguous memory and vectorizes.
 */
#ifndef CT_CPU_REDUCE_H
#define CT_CPU_REDUCE_H

#include "backend/cpu/cpu_loop.h"
#include "core/reduce_plan.h"

#define CT_RG_MAX_OUT CT_REDUCE_MAX_OUT

/* The shared geometry (gm, byte strides) with the data it walks. */
typedef struct ct_rgeom {
  ct_reduce_geom gm;
  const char *x;
  char *out[CT_RG_MAX_OUT];
} ct_rgeom;

/* x (any strides), mask[d] for reduced dims, outs[nout] of x's ndim with size
 * 1 on reduced dims (any strides). Also works for ndim 0 (K = R = 1). */
void ct__rgeom_init(ct_rgeom *g, const ct_tensor *x, const bool *mask, int nout,
                    ct_tensor *const *outs);

/* Walks outputs in row-major order, keeping their byte offsets in x (xo) and
 * in each output (oo). With `skip_inner`, indices run over the kept dims
 * without the innermost one (COLUMN blocks). */
typedef struct ct_rkept_it {
  int nd;
  int64_t idx[CT_MAX_DIMS];
  int64_t xo, oo[CT_RG_MAX_OUT];
} ct_rkept_it;
/* Positions it at output k. */
void ct__rkept_begin(const ct_rgeom *g, int64_t k, bool skip_inner, ct_rkept_it *it);
/* Moves it to the next output. */
static inline void ct__rkept_next(const ct_rgeom *g, ct_rkept_it *it) {
  const ct_reduce_geom *m = &g->gm;
  for (int d = it->nd - 1; d >= 0; d--) {
    it->xo += m->kx[d];
    for (int o = 0; o < m->nout; o++) it->oo[o] += m->ko[o][d];
    if (++it->idx[d] < m->kshape[d]) return;
    it->xo -= m->kx[d] * m->kshape[d];
    for (int o = 0; o < m->nout; o++) it->oo[o] -= m->ko[o][d] * m->kshape[d];
    it->idx[d] = 0;
  }
}

/* Calls fn(p, stride, n, ctx) on the runs of reduced elements [r0, r1) of one
 * output whose first element is at base: each run goes along the innermost
 * reduced dim (stride in bytes; n = 1 and stride 0 when nothing is reduced). */
typedef void (*ct_rseg_fn)(const char *p, int64_t stride, int64_t n, void *ctx);
void ct__rgeom_walk(const ct_rgeom *g, const char *base, int64_t r0, int64_t r1, ct_rseg_fn fn,
                    void *ctx);

/* ---- Pass kernels --------------------------------------------------------
 * A reduction runs one or two passes (core/reduce_plan.h); each pass folds a
 * transformed element into an 8-byte accumulator: double for the F_ passes
 * (floating x), int64 for the I_ passes (integer/bool x) and for
 * NZ_ALL/NZ_ANY (any x). */
typedef union ct_racc {
  double d;
  int64_t i;
} ct_racc;

/* Folds n elements at p (byte stride s) into *acc. */
typedef void (*ct_rrow_fn)(const char *p, int64_t s, int64_t n, ct_racc *acc, double aux, double P);
/* Folds nrows rows (byte stride rs) of m elements each (byte stride cs) into
 * acc[0..m) (aux[0..m) per output, or NULL when the pass uses none). */
typedef void (*ct_rcol_fn)(const char *p, int64_t rs, int64_t nrows, int64_t m, int64_t cs,
                           ct_racc *acc, const double *aux, double P);

typedef struct ct_rkernel {
  ct_rrow_fn row;
  ct_rcol_fn col;
} ct_rkernel;

/* Stores accumulator v (double for floating dtypes, int64 else) as dt at p:
 * a finished value; integers wrap to the width, bool takes "nonzero". */
static inline void ct__rstore(char *p, ct_dtype dt, ct_racc v) {
  switch (dt) {
    case CT_F32:
      *(float *)p = (float)v.d;
      break;
    case CT_F64:
      *(double *)p = v.d;
      break;
    case CT_F16:
    case CT_BF16:
      ct__half_store(p, dt, (float)v.d);
      break;
    case CT_I8:
      *(int8_t *)p = (int8_t)v.i;
      break;
    case CT_U8:
      *(uint8_t *)p = (uint8_t)v.i;
      break;
    case CT_I16:
      *(int16_t *)p = (int16_t)v.i;
      break;
    case CT_I32:
      *(int32_t *)p = (int32_t)v.i;
      break;
    case CT_I64:
      *(int64_t *)p = v.i;
      break;
    case CT_BOOL:
      *(bool *)p = v.i != 0;
      break;
    default:
      break;
  }
}

/* The kernels of pass for x's dtype ({NULL, NULL} if the pair is invalid). */
ct_rkernel ct__rkernel(ct_rpass pass, ct_dtype dtype);
/* The accumulator's starting value, and a[i] = merge(a[i], b[i]) for i < n. */
ct_racc ct__rpass_init(ct_rpass pass);
void ct__rpass_merge(ct_rpass pass, ct_racc *a, const ct_racc *b, int64_t n);

/* The element at q as a pass folds it: floating dtypes as double (halves
 * exact), integers and bool as int64. */
static inline double ct__rload_f32(const float *q) { return (double)*q; }
static inline double ct__rload_f64(const double *q) { return *q; }
static inline double ct__rload_f16(const uint16_t *q) { return (double)ct_f16_to_f32(*q); }
static inline double ct__rload_bf16(const uint16_t *q) { return (double)ct_bf16_to_f32(*q); }
static inline int64_t ct__rload_i8(const int8_t *q) { return *q; }
static inline int64_t ct__rload_u8(const uint8_t *q) { return *q; }
static inline int64_t ct__rload_i16(const int16_t *q) { return *q; }
static inline int64_t ct__rload_i32(const int32_t *q) { return *q; }
static inline int64_t ct__rload_i64(const int64_t *q) { return *q; }
static inline int64_t ct__rload_b8(const bool *q) { return *q; }

/* Sum of n contiguous floats, blocked pairwise (accurate for long rows). */
double ct__sum_f32(const float *x, int64_t n);

#endif /* CT_CPU_REDUCE_H */
