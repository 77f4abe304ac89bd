/* CPU sort: stable argsort of rows by LSD radix sort of the keys of
 * core/sort_math.h (8-bit digits: 4 passes for 32-bit keys, 8 for 64-bit;
 * a pass whose digit is the same for every key is skipped). Contract:
 * backend.h, `argsort`.
 * Many rows: a task per row, each sorted alone. A few long rows: each row in
 * SORT_PARTS fixed parts; a pass counts digits per part in parallel, turns the
 * counts into each (digit, part)'s first slot (digit-major, part-minor, which
 * keeps the order of equal digits: stable), then scatters the parts in
 * parallel. The parts depend on n only: results never depend on threads. */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/alloc.h"
#include "core/sort_math.h"

#define SORT_PARTS 32
#define SORT_LONG 65536 /* rows at least this long are sorted in parts */
#define SORT_SMALL 32   /* rows at most this long: insertion sort */

typedef struct sort_ctx {
  const ct_tensor *x;
  int64_t *idx; /* the result (rows, n) */
  int64_t n;
  bool descending;
  /* the long-row path */
  void *keys[2];
  int64_t *ids[2];
  int64_t (*counts)[256]; /* SORT_PARTS x 256 */
  int src, shift;
} sort_ctx;

#define CT_KEY uint32_t
#define CT_S u32
#include "backend/cpu/sort_t.h"
#undef CT_KEY
#undef CT_S

#define CT_KEY uint64_t
#define CT_S u64
#include "backend/cpu/sort_t.h"
#undef CT_KEY
#undef CT_S

ct_status ct__cpu_argsort(ct_tensor *indices, const ct_tensor *x, bool descending) {
  if (x->numel == 0) return CT_OK;
  sort_ctx c = {
      .x = x, .idx = ct__data(indices), .n = x->shape[x->ndim - 1], .descending = descending};
  return x->dtype == CT_F32 ? argsort_run_u32(&c) : argsort_run_u64(&c);
}
