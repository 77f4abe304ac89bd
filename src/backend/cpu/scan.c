/* CPU scans: cumulative sums and products along one dim (cumsum, cumprod,
 * and the reversed scans their gradients use). Contract: backend.h,
 * `cumulative`. The contiguous input is seen as (outer, n, inner); three
 * decompositions, chosen by shape:
 *  - inner > 1: a task per (outer index, block of SCAN_COLS columns), which
 *    walks k with one accumulator per column (contiguous loads and stores);
 *  - rows (inner == 1), many of them: a task per row;
 *  - a few long rows: each row cut into SCAN_PIECE pieces scanned in two
 *    parallel passes (piece totals, then each piece from its prefix). */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/alloc.h"
#include "core/scan_math.h"

#define SCAN_COLS 64
#define SCAN_PIECE 65536

typedef struct scan_ctx {
  bool prod, reverse;
  void *out;
  const void *x;
  int64_t outer, n, inner;
  /* the long-row path: the row in work and the pieces' totals */
  void *row_out;
  const void *row_x;
  void *totals;
} scan_ctx;

#define CT_T float
#define CT_ACC double
#define CT_S f32
#define CT_COMBINE ct_scan_combine_f
#include "backend/cpu/scan_t.h"
#undef CT_T
#undef CT_ACC
#undef CT_S
#undef CT_COMBINE

#define CT_T double
#define CT_ACC double
#define CT_S f64
#define CT_COMBINE ct_scan_combine_f
#include "backend/cpu/scan_t.h"
#undef CT_T
#undef CT_ACC
#undef CT_S
#undef CT_COMBINE

#define CT_T int64_t
#define CT_ACC int64_t
#define CT_S i64
#define CT_COMBINE ct_scan_combine_i
#include "backend/cpu/scan_t.h"
#undef CT_T
#undef CT_ACC
#undef CT_S
#undef CT_COMBINE

ct_status ct__cpu_cumulative(bool prod, bool reverse, ct_tensor *out, const ct_tensor *x, int dim) {
  if (out->numel == 0) return CT_OK;
  scan_ctx c = {.prod = prod,
                .reverse = reverse,
                .out = ct__data(out),
                .x = ct__data(x),
                .outer = 1,
                .n = x->ndim ? x->shape[dim] : 1,
                .inner = 1};
  for (int d = 0; d < dim; d++) c.outer *= x->shape[d];
  for (int d = dim + 1; d < x->ndim; d++) c.inner *= x->shape[d];
  switch (x->dtype) {
    case CT_F32:
      return scan_run_f32(&c);
    case CT_F64:
      return scan_run_f64(&c);
    case CT_I64:
      return scan_run_i64(&c);
    default:
      CT_ASSERT(!"cumulative: dtype not cast by the op layer");
      return CT_ERR_DTYPE;
  }
}
