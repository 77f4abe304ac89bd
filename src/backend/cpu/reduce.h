/* CPU reductions: the shared iteration geometry and the per-pass kernel
 * tables (internal to the CPU backend's reduce family).
 *
 * A reduction of x over a set of dims is seen as K outputs, each reducing R
 * elements. The geometry orders x's dims by decreasing stride (memory order),
 * drops size-1 dims and merges neighbours that stay contiguous, giving
 *   kept dims    kshape[nk]  (x byte strides kx, output byte strides ko)
 *   reduced dims rshape[nr]  (x byte strides rx)
 * both listed outer to inner. Output k is the row-major index over kshape;
 * reduced element r is the row-major index over rshape. Two layouts follow:
 *   ROW     the innermost reduced dim is the fastest in memory: each output
 *           reduces rows of x (contiguous when rx[nr-1] is the element size);
 *   COLUMN  the innermost kept dim is the fastest: a block of neighbouring
 *           outputs is updated together from each row of x, so the inner loop
 *           runs along contiguous memory and vectorizes.
 */
#ifndef CT_CPU_REDUCE_H
#define CT_CPU_REDUCE_H

#include "backend/cpu/cpu_loop.h"

#define CT_RG_MAX_OUT 2

typedef struct ct_rgeom {
  int nk, nr, nout;
  int64_t kshape[CT_MAX_DIMS];
  int64_t kx[CT_MAX_DIMS];                /* bytes */
  int64_t ko[CT_RG_MAX_OUT][CT_MAX_DIMS]; /* bytes */
  int64_t rshape[CT_MAX_DIMS];
  int64_t rx[CT_MAX_DIMS];                /* bytes */
  int64_t K, R;                           /* outputs; elements reduced into each */
  const char *x;
  char *out[CT_RG_MAX_OUT];
  size_t xsize;                           /* element size of x */
  bool column;                            /* COLUMN layout (see above) */
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
  for (int d = it->nd - 1; d >= 0; d--) {
    it->xo += g->kx[d];
    for (int o = 0; o < g->nout; o++) it->oo[o] += g->ko[o][d];
    if (++it->idx[d] < g->kshape[d]) return;
    it->xo -= g->kx[d] * g->kshape[d];
    for (int o = 0; o < g->nout; o++) it->oo[o] -= g->ko[o][d] * g->kshape[d];
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
 * A reduction runs one or two passes; each pass folds a transformed element
 * into an 8-byte accumulator: double for the F_ passes (floating x), int64
 * for the I_ passes (integer/bool x) and for NZ_ALL/NZ_ANY (any x). aux is a
 * per-output value computed after pass 1 (the mean, the max, the scale); P is
 * the norm order. X(NAME) */
#define CT_RPASSES(X)                                                      \
  X(F_SUM)          /* sum x */                                            \
  X(F_PROD)         /* product x */                                        \
  X(F_MAX)          /* max x, nan propagates */                            \
  X(F_MIN)          /* min x, nan propagates */                            \
  X(F_ABS_SUM)      /* sum |x| */                                          \
  X(F_ABS_MAX)      /* max |x|, nan propagates */                          \
  X(F_ABS_MIN)      /* min |x|, nan propagates */                          \
  X(F_NONZERO)      /* count of x != 0 */                                  \
  X(F_SQ_SUM)       /* sum x^2 */                                          \
  X(F_EXP_SUM)      /* sum exp(x - aux) */                                 \
  X(F_DEV_SQ_SUM)   /* sum (x - aux)^2 */                                  \
  X(F_SCALED_SQ_SUM)  /* sum (|x| / aux)^2 */                              \
  X(F_SCALED_POW_SUM) /* sum (|x| / aux)^P */                              \
  X(F_POW_SUM)      /* sum |x|^P */                                        \
  X(I_SUM)          /* sum x (wraps around) */                             \
  X(I_PROD)         /* product x (wraps around) */                         \
  X(I_MAX)                                                                 \
  X(I_MIN)                                                                 \
  X(NZ_ALL)         /* 1 if every x != 0 */                                \
  X(NZ_ANY)         /* 1 if some x != 0 */

typedef enum {
#define X(N) CT_RP_##N,
  CT_RPASSES(X)
#undef X
  CT_RP_COUNT
} ct_rpass;

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

/* The kernels of pass for x's dtype ({NULL, NULL} if the pair is invalid). */
ct_rkernel ct__rkernel(ct_rpass pass, ct_dtype dtype);
/* The accumulator's starting value, and a[i] = merge(a[i], b[i]) for i < n. */
ct_racc ct__rpass_init(ct_rpass pass);
void ct__rpass_merge(ct_rpass pass, ct_racc *a, const ct_racc *b, int64_t n);
/* Whether the pass folds into int64 (else double). */
static inline bool ct__rpass_is_int(ct_rpass pass) { return pass >= CT_RP_I_SUM; }

/* Sum of n contiguous floats, blocked pairwise (accurate for long rows). */
double ct__sum_f32(const float *x, int64_t n);

/* NaN-propagating max/min shared by the kernels. */
static inline double ct__nanmax(double a, double b) { return (b > a || b != b) && a == a ? b : a; }
static inline double ct__nanmin(double a, double b) { return (b < a || b != b) && a == a ? b : a; }

#endif /* CT_CPU_REDUCE_H */
