/* How a reduction is planned and what each step computes: the one definition
 * both backends compile (backend/cpu/reduce*.c, arg_reduce.c;
 * backend/cuda/reduce.cu, reduce_vec.cuh, arg_reduce.cu).
 *
 *  - The geometry: x's dims, in memory order (decreasing |stride|, size-1
 *    dims dropped), split into kept dims (K outputs) and reduced dims (R
 *    elements each), neighbours that stay contiguous merged. Output k is the
 *    row-major index over the kept shape, reduced element r the row-major
 *    index over the reduced shape (both outer to inner). COLUMN: the
 *    innermost kept dim is faster in memory than every reduced dim, so
 *    neighbouring outputs read neighbouring elements.
 *  - The plan: an op runs one or two passes; each pass folds a transformed
 *    element into an 8-byte accumulator (double for the F_ passes, int64 for
 *    the I_ and NZ_ ones); between them a per-output value (aux: the max, the
 *    mean, the scale); the finish turns the accumulators into the result.
 *
 * The backends decide only how the work is cut (threads, blocks, splits) and
 * in which order partial accumulators are merged. Adding a reduction: its
 * enum and name in ops/op_table.h (CT_REDUCE_OPS), its public function and
 * gradient in ops/reduce.c and autograd/grad_reduce.c, and here its plan
 * (ct_reduce_plan_of), its passes if new (CT_RPASSES with their init, fold
 * and merge), aux and finish. */
#ifndef CT_CORE_REDUCE_PLAN_H
#define CT_CORE_REDUCE_PLAN_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/host_device.h"
#include "ops/op_table.h"

/* ---- Passes ------------------------------------------------------------------------
 * X(NAME): aux is the per-output value computed after pass 1, P the norm order. */
#define CT_RPASSES(X)                                \
  X(F_SUM)            /* sum x */                    \
  X(F_PROD)           /* product x */                \
  X(F_MAX)            /* max x, nan propagates */    \
  X(F_MIN)            /* min x, nan propagates */    \
  X(F_ABS_SUM)        /* sum |x| */                  \
  X(F_ABS_MAX)        /* max |x|, nan propagates */  \
  X(F_ABS_MIN)        /* min |x|, nan propagates */  \
  X(F_NONZERO)        /* count of x != 0 */          \
  X(F_SQ_SUM)         /* sum x^2 */                  \
  X(F_EXP_SUM)        /* sum exp(x - aux) */         \
  X(F_DEV_SQ_SUM)     /* sum (x - aux)^2 */          \
  X(F_SCALED_SQ_SUM)  /* sum (|x| / aux)^2 */        \
  X(F_SCALED_POW_SUM) /* sum (|x| / aux)^P */        \
  X(F_POW_SUM)        /* sum |x|^P */                \
  X(I_SUM)            /* sum x (wraps around) */     \
  X(I_PROD)           /* product x (wraps around) */ \
  X(I_MAX)                                           \
  X(I_MIN)                                           \
  X(NZ_ALL) /* 1 if every x != 0 */                  \
  X(NZ_ANY) /* 1 if some x != 0 */

typedef enum {
#define X(N) CT_RP_##N,
  CT_RPASSES(X)
#undef X
      CT_RP_COUNT
} ct_rpass;

/* Whether the pass folds into int64 (integer or bool x; NZ: any x as 0/1). */
CT_HOST_DEVICE CT_CONSTEXPR bool ct_rpass_is_int(int pass) { return pass >= CT_RP_I_SUM; }

/* NaN-propagating max and min (a nan accumulator stays nan). */
CT_HOST_DEVICE double ct_nanmax(double a, double b) { return (b > a || b != b) && a == a ? b : a; }
CT_HOST_DEVICE double ct_nanmin(double a, double b) { return (b < a || b != b) && a == a ? b : a; }
CT_HOST_DEVICE float ct_nanmaxf(float a, float b) { return (b > a || b != b) && a == a ? b : a; }
CT_HOST_DEVICE float ct_nanminf(float a, float b) { return (b < a || b != b) && a == a ? b : a; }

/* The accumulator's starting value (the identity of the pass). */
CT_HOST_DEVICE double ct_rpass_init_f(int pass) {
  switch (pass) {
    case CT_RP_F_PROD:
      return 1.0;
    case CT_RP_F_MAX:
      return -INFINITY;
    case CT_RP_F_MIN:
    case CT_RP_F_ABS_MIN:
      return INFINITY;
    default:
      return 0.0;
  }
}
CT_HOST_DEVICE int64_t ct_rpass_init_i(int pass) {
  switch (pass) {
    case CT_RP_I_PROD:
    case CT_RP_NZ_ALL:
      return 1;
    case CT_RP_I_MAX:
      return INT64_MIN;
    case CT_RP_I_MIN:
      return INT64_MAX;
    default:
      return 0;
  }
}

/* Folds element v (x as double) into accumulator a. */
CT_HOST_DEVICE double ct_rpass_fold_f(int pass, double a, double v, double aux, double P) {
  switch (pass) {
    case CT_RP_F_SUM:
      return a + v;
    case CT_RP_F_PROD:
      return a * v;
    case CT_RP_F_MAX:
      return ct_nanmax(a, v);
    case CT_RP_F_MIN:
      return ct_nanmin(a, v);
    case CT_RP_F_ABS_SUM:
      return a + fabs(v);
    case CT_RP_F_ABS_MAX:
      return ct_nanmax(a, fabs(v));
    case CT_RP_F_ABS_MIN:
      return ct_nanmin(a, fabs(v));
    case CT_RP_F_NONZERO:
      return a + (double)(v != 0);
    case CT_RP_F_SQ_SUM:
      return a + v * v;
    case CT_RP_F_EXP_SUM:
      return a + exp(v - aux);
    case CT_RP_F_DEV_SQ_SUM:
      return a + (v - aux) * (v - aux);
    case CT_RP_F_SCALED_SQ_SUM:
      return a + (fabs(v) / aux) * (fabs(v) / aux);
    case CT_RP_F_SCALED_POW_SUM:
      return a + pow(fabs(v) / aux, P);
    default:
      return a + pow(fabs(v), P); /* CT_RP_F_POW_SUM */
  }
}
/* Folds element v (x as int64; for NZ_ passes 1 if x != 0, else 0) into a. */
CT_HOST_DEVICE int64_t ct_rpass_fold_i(int pass, int64_t a, int64_t v) {
  switch (pass) {
    case CT_RP_I_SUM:
      return (int64_t)((uint64_t)a + (uint64_t)v);
    case CT_RP_I_PROD:
      return (int64_t)((uint64_t)a * (uint64_t)v);
    case CT_RP_I_MAX:
      return v > a ? v : a;
    case CT_RP_I_MIN:
      return v < a ? v : a;
    case CT_RP_NZ_ALL:
      return a & v;
    default:
      return a | v; /* CT_RP_NZ_ANY */
  }
}

/* Merges two partial accumulators of a pass. */
CT_HOST_DEVICE double ct_rpass_merge_f(int pass, double a, double b) {
  switch (pass) {
    case CT_RP_F_PROD:
      return a * b;
    case CT_RP_F_MAX:
    case CT_RP_F_ABS_MAX:
      return ct_nanmax(a, b);
    case CT_RP_F_MIN:
    case CT_RP_F_ABS_MIN:
      return ct_nanmin(a, b);
    default:
      return a + b;
  }
}
CT_HOST_DEVICE int64_t ct_rpass_merge_i(int pass, int64_t a, int64_t b) {
  return ct_rpass_fold_i(pass, a, b); /* every integer pass folds as it merges */
}

/* ---- argmax / argmin: the first extreme, nan counting as the extreme -------------- */

/* Whether v, seen after the best b, replaces it: strictly better, or the
 * first nan (a nan best stays). Floating values as double, integers as int64
 * (an int64 does not fit a double exactly). */
CT_HOST_DEVICE bool ct_arg_later_wins_f(bool is_max, double v, double b) {
  return b == b && ((is_max ? v > b : v < b) || v != v);
}
CT_HOST_DEVICE bool ct_arg_later_wins_i(bool is_max, int64_t v, int64_t b) {
  return is_max ? v > b : v < b;
}
/* Whether candidate (v, index i) is preferred over (b, index j), in any
 * order of discovery (merging partial results); an index < 0 means nothing
 * seen. Ties and nans go to the smaller index: the sequential result. */
CT_HOST_DEVICE bool ct_arg_better_f(bool is_max, double v, int64_t i, double b, int64_t j) {
  if (j < 0) return i >= 0;
  if (i < 0) return false;
  return i < j ? !ct_arg_later_wins_f(is_max, b, v) : ct_arg_later_wins_f(is_max, v, b);
}
CT_HOST_DEVICE bool ct_arg_better_i(bool is_max, int64_t v, int64_t i, int64_t b, int64_t j) {
  if (j < 0) return i >= 0;
  if (i < 0) return false;
  return i < j ? !ct_arg_later_wins_i(is_max, b, v) : ct_arg_later_wins_i(is_max, v, b);
}

/* ---- Plans ------------------------------------------------------------------------- */

typedef struct ct_reduce_plan {
  int npass; /* 1 or 2; 0 for an unknown op */
  ct_rpass pass[2];
} ct_reduce_plan;

/* The passes of op over x of a floating (f64: double) or integer/bool dtype;
 * p: the norm order. */
CT_HOST_DEVICE ct_reduce_plan ct_reduce_plan_of(ct_reduce_op op, bool floating, bool f64,
                                                double p) {
  ct_reduce_plan pl;
  pl.npass = 1;
  pl.pass[1] = CT_RP_F_SUM;
  switch (op) {
    case CT_ROP_SUM:
    case CT_ROP_MEAN:
      pl.pass[0] = floating ? CT_RP_F_SUM : CT_RP_I_SUM;
      break;
    case CT_ROP_PROD:
      pl.pass[0] = floating ? CT_RP_F_PROD : CT_RP_I_PROD;
      break;
    case CT_ROP_MAX:
      pl.pass[0] = floating ? CT_RP_F_MAX : CT_RP_I_MAX;
      break;
    case CT_ROP_MIN:
      pl.pass[0] = floating ? CT_RP_F_MIN : CT_RP_I_MIN;
      break;
    case CT_ROP_ALL:
      pl.pass[0] = CT_RP_NZ_ALL;
      break;
    case CT_ROP_ANY:
      pl.pass[0] = CT_RP_NZ_ANY;
      break;
    case CT_ROP_LOGSUMEXP:
      pl.npass = 2, pl.pass[0] = CT_RP_F_MAX, pl.pass[1] = CT_RP_F_EXP_SUM;
      break;
    case CT_ROP_VAR:
    case CT_ROP_STD:
      pl.npass = 2, pl.pass[0] = CT_RP_F_SUM, pl.pass[1] = CT_RP_F_DEV_SQ_SUM;
      break;
    case CT_ROP_NORM:
      if (p == 0)
        pl.pass[0] = CT_RP_F_NONZERO;
      else if (p == 1)
        pl.pass[0] = CT_RP_F_ABS_SUM;
      else if (p == INFINITY)
        pl.pass[0] = CT_RP_F_ABS_MAX;
      else if (p == -INFINITY)
        pl.pass[0] = CT_RP_F_ABS_MIN;
      /* Squares of f32/f16/bf16 values can't overflow or underflow an f64 sum. */
      else if (p == 2 && !f64)
        pl.pass[0] = CT_RP_F_SQ_SUM;
      /* Otherwise scale by max |x| first (overflow-safe; torch returns inf for [1e200, 1e200]). */
      else if (p > 0)
        pl.npass = 2, pl.pass[0] = CT_RP_F_ABS_MAX,
        pl.pass[1] = p == 2 ? CT_RP_F_SCALED_SQ_SUM : CT_RP_F_SCALED_POW_SUM;
      else
        pl.pass[0] = CT_RP_F_POW_SUM;
      break;
    default:
      pl.npass = 0, pl.pass[0] = CT_RP_F_SUM;
      break;
  }
  return pl;
}

/* The per-output value pass 2 needs, from pass 1's accumulator a1. */
CT_HOST_DEVICE double ct_reduce_aux(ct_reduce_op op, double a1, int64_t R) {
  switch (op) {
    case CT_ROP_LOGSUMEXP:
      return isinf(a1) ? 0.0 : a1; /* as torch: +-inf max -> 0 */
    case CT_ROP_VAR:
    case CT_ROP_STD:
      return a1 / (double)R; /* the mean */
    case CT_ROP_NORM:
      return a1 > 0 && isfinite(a1) ? a1 : 1.0; /* the scale */
    default:
      return 0.0;
  }
}

/* Whether the result of op is pass 1's accumulator as it is (the integer
 * passes and sum, prod, max, min, all, any). */
CT_HOST_DEVICE bool ct_reduce_finish_is_identity(ct_reduce_op op, const ct_reduce_plan *pl) {
  return ct_rpass_is_int(pl->pass[0]) || op == CT_ROP_SUM || op == CT_ROP_PROD ||
         op == CT_ROP_MAX || op == CT_ROP_MIN;
}

/* The result of a floating op from the accumulators (a2: pass 2's) and aux;
 * p: the correction of var/std (divisor max(0, R - p), as torch), the norm
 * order. */
CT_HOST_DEVICE double ct_reduce_finish(ct_reduce_op op, const ct_reduce_plan *pl, double a1,
                                       double a2, double aux, int64_t R, double p) {
  switch (op) {
    case CT_ROP_MEAN:
      return a1 / (double)R;
    case CT_ROP_LOGSUMEXP:
      return log(a2) + aux;
    case CT_ROP_VAR:
    case CT_ROP_STD: {
      double dof = (double)R - p;
      double v = a2 / (dof > 0 ? dof : 0.0);
      return op == CT_ROP_STD ? sqrt(v) : v;
    }
    case CT_ROP_NORM:
      switch (pl->pass[pl->npass - 1]) {
        case CT_RP_F_SQ_SUM:
          return sqrt(a1);
        case CT_RP_F_SCALED_SQ_SUM:
          return a1 > 0 && isfinite(a1) ? a1 * sqrt(a2) : a1;
        case CT_RP_F_SCALED_POW_SUM:
          return a1 > 0 && isfinite(a1) ? a1 * pow(a2, 1.0 / p) : a1;
        case CT_RP_F_POW_SUM:
          return pow(a1, 1.0 / p);
        default:
          return a1;
      }
    default:
      return a1;
  }
}

/* ---- Geometry ---------------------------------------------------------------------- */

#define CT_REDUCE_MAX_DIMS 8 /* CT_MAX_DIMS */
#define CT_REDUCE_MAX_OUT 2  /* outputs sharing one geometry (arg_reduce's values, indices) */

typedef struct ct_reduce_geom {
  int nk, nr, nout;
  int64_t K, R; /* outputs; elements reduced into each */
  int64_t kshape[CT_REDUCE_MAX_DIMS], kx[CT_REDUCE_MAX_DIMS]; /* kept dims; x's strides */
  int64_t ko[CT_REDUCE_MAX_OUT][CT_REDUCE_MAX_DIMS];          /* kept dims' output strides */
  int64_t rshape[CT_REDUCE_MAX_DIMS], rx[CT_REDUCE_MAX_DIMS]; /* reduced dims; x's strides */
  bool column;                                                /* COLUMN layout (above) */
} ct_reduce_geom;

/* An empty input's geometry without overflow, for both backends' set-up:
 * beside a 0, the products of the other sizes (K, R) and the strides times
 * sizes can overflow. The caller gives the input strides 0 (never read).
 * With no output (a kept size 0: *k_empty) one 0 size; else the kept sizes as
 * they are (the output exists) and the reduced sizes 1 but one 0 (R = 0:
 * each output the identity). mask[d]: dim d is reduced. */
static inline void ct_reduce_empty_shape(int ndim, const int64_t *sizes, const bool *mask,
                                         int64_t *shape, bool *k_empty) {
  *k_empty = false;
  for (int d = 0; d < ndim; d++) *k_empty |= !mask[d] && sizes[d] == 0;
  bool zero_set = false;
  for (int d = 0; d < ndim; d++) {
    bool keep = !*k_empty && !mask[d];
    bool is_zero = sizes[d] == 0 && (*k_empty ? !mask[d] : mask[d]) && !zero_set;
    zero_set |= is_zero;
    shape[d] = keep ? sizes[d] : is_zero ? 0 : 1;
  }
}

CT_HOST_DEVICE int64_t ct_iabs64(int64_t v) { return v < 0 ? -v : v; }

/* The geometry of reducing x (ndim dims of shape, strides xs in elements)
 * over the dims with mask[d], into nout outputs of x's ndim with size 1 on
 * reduced dims (strides os[o]). Strides come out multiplied by xunit and
 * ounit[o] (the element sizes for byte strides, 1 for element strides).
 * Works for ndim 0 (K = R = 1). */
CT_HOST_DEVICE void ct_reduce_geom_init(ct_reduce_geom *g, int ndim, const int64_t *shape,
                                        const int64_t *xs, int64_t xunit, const bool *mask,
                                        int nout, const int64_t *const *os, const int64_t *ounit) {
  memset(g, 0, sizeof *g);
  g->nout = nout;
  g->K = 1;
  g->R = 1;
  int order[CT_REDUCE_MAX_DIMS], n = 0;
  for (int d = 0; d < ndim; d++) {
    if (mask[d])
      g->R *= shape[d];
    else
      g->K *= shape[d];
    if (shape[d] != 1) order[n++] = d;
  }
  /* Stable insertion sort by decreasing |stride| of x: memory order. */
  for (int i = 1; i < n; i++) {
    int d = order[i], j = i;
    while (j > 0 && ct_iabs64(xs[order[j - 1]]) < ct_iabs64(xs[d])) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = d;
  }
  for (int i = 0; i < n; i++) {
    int d = order[i];
    int64_t size = shape[d], st = xs[d] * xunit;
    if (mask[d]) {
      if (g->nr > 0 && g->rx[g->nr - 1] == st * size) {
        g->rshape[g->nr - 1] *= size;
        g->rx[g->nr - 1] = st;
      } else {
        g->rshape[g->nr] = size;
        g->rx[g->nr++] = st;
      }
    } else {
      bool merge = g->nk > 0 && g->kx[g->nk - 1] == st * size;
      for (int o = 0; o < nout && merge; o++)
        merge = g->ko[o][g->nk - 1] == os[o][d] * ounit[o] * size;
      int k = merge ? g->nk - 1 : g->nk++;
      g->kshape[k] = merge ? g->kshape[k] * size : size;
      g->kx[k] = st;
      for (int o = 0; o < nout; o++) g->ko[o][k] = os[o][d] * ounit[o];
    }
  }
  /* COLUMN when the innermost kept dim is faster in memory than every
   * reduced dim (or nothing is reduced: then outputs are copied in blocks). */
  g->column =
      g->nk > 0 && (g->nr == 0 || ct_iabs64(g->kx[g->nk - 1]) < ct_iabs64(g->rx[g->nr - 1]));
}

/* Offsets of output k in x and in output o (in the geometry's units). */
CT_HOST_DEVICE void ct_reduce_kept_offsets(const ct_reduce_geom *g, int64_t k, int o, int64_t *xo,
                                           int64_t *oo) {
  int64_t a = 0, b = 0;
  for (int d = g->nk - 1; d >= 0; d--) {
    int64_t q = k / g->kshape[d], r = k - q * g->kshape[d];
    k = q;
    a += r * g->kx[d];
    b += r * g->ko[o][d];
  }
  *xo = a;
  *oo = b;
}

/* Offset in x of reduced element r. */
CT_HOST_DEVICE int64_t ct_reduce_offset(const ct_reduce_geom *g, int64_t r) {
  if (g->nr == 1) return r * g->rx[0];
  int64_t off = 0;
  for (int d = g->nr - 1; d >= 0; d--) {
    int64_t q = r / g->rshape[d], m = r - q * g->rshape[d];
    r = q;
    off += m * g->rx[d];
  }
  return off;
}

#endif /* CT_CORE_REDUCE_PLAN_H */
