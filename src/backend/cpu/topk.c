/* CPU top-k by radix selection: the k smallest sort keys of each row
 * (core/sort_math.h; the largest values are the smallest descending keys),
 * without sorting the row. Contract: backend.h, `topk`.
 * Pass 1 counts the keys' top TOPK_BITS bits per part of the row (SORT_PARTS
 * fixed parts, in parallel); the first bucket where the running count
 * reaches k is the threshold. Pass 2 copies the candidates (keys in buckets
 * up to the threshold, in index order) out of each part in parallel; only
 * they are sorted, by (key, index), so ties come in index order as in the
 * stable sort. Uniform data leaves about k + n / 2^TOPK_BITS candidates. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "core/alloc.h"
#include "core/sort_math.h"

#define TOPK_PARTS 32
#define TOPK_BITS 11
#define TOPK_BUCKETS (1 << TOPK_BITS)

typedef struct cand {
  uint64_t key;
  int64_t id;
} cand;

typedef struct topk_ctx {
  const ct_tensor *x;
  int64_t n, k;
  bool descending;
  const char *row; /* the row in work */
  uint32_t (*hist)[TOPK_BUCKETS];
  int64_t threshold;
  int64_t start[TOPK_PARTS]; /* each part's first candidate slot */
  cand *cands;
} topk_ctx;

static uint64_t key_at(const topk_ctx *c, int64_t i) {
  switch (c->x->dtype) {
    case CT_F32:
      return ct_sort_key_f32(((const float *)c->row)[i], c->descending);
    case CT_F64:
      return ct_sort_key_f64(((const double *)c->row)[i], c->descending);
    default:
      return ct_sort_key_i64(((const int64_t *)c->row)[i], c->descending);
  }
}
static int key_shift(const topk_ctx *c) { return (c->x->dtype == CT_F32 ? 32 : 64) - TOPK_BITS; }
static void part_range(const topk_ctx *c, int64_t p, int64_t *i0, int64_t *i1) {
  int64_t per = (c->n + TOPK_PARTS - 1) / TOPK_PARTS;
  *i0 = p * per < c->n ? p * per : c->n;
  *i1 = *i0 + per < c->n ? *i0 + per : c->n;
}

static void count_parts(int64_t p0, int64_t p1, void *vc) {
  topk_ctx *c = vc;
  int sh = key_shift(c);
  for (int64_t p = p0; p < p1; p++) {
    int64_t i0, i1;
    part_range(c, p, &i0, &i1);
    uint32_t *h = c->hist[p];
    memset(h, 0, sizeof c->hist[p]);
    for (int64_t i = i0; i < i1; i++) h[key_at(c, i) >> sh]++;
  }
}

static void collect_parts(int64_t p0, int64_t p1, void *vc) {
  topk_ctx *c = vc;
  int sh = key_shift(c);
  for (int64_t p = p0; p < p1; p++) {
    int64_t i0, i1, q = c->start[p];
    part_range(c, p, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
      uint64_t key = key_at(c, i);
      if ((int64_t)(key >> sh) <= c->threshold) c->cands[q++] = (cand){key, i};
    }
  }
}

/* Narrows the candidates (index order) while they are many: those whose key
 * bits above `shift` are below `prefix` are in the top k for sure; among
 * those equal to it, the next TOPK_BITS bits are counted and only the
 * buckets up to where k is reached are kept. Float keys cluster in their
 * high bits (all of [0.5, 1) shares one exponent), so one pass alone can
 * leave a large share of the row. Returns the number kept. */
static int64_t refine(cand *a, int64_t total, int64_t k, uint64_t prefix, int shift) {
  static const int64_t few = 4096;
  while (total > 2 * k + few && shift > 0) {
    int nsh = shift > TOPK_BITS ? shift - TOPK_BITS : 0, width = shift - nsh;
    uint64_t mask = ((uint64_t)1 << width) - 1;
    int64_t hist[TOPK_BUCKETS] = {0}, sure = 0;
    for (int64_t i = 0; i < total; i++) {
      uint64_t top = a[i].key >> shift;
      if (top < prefix)
        sure++;
      else
        hist[(a[i].key >> nsh) & mask]++;
    }
    int64_t need = k - sure, seen = 0, b = 0;
    for (; b < (int64_t)mask; b++) {
      seen += hist[b];
      if (seen >= need) break;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < total; i++) {
      uint64_t top = a[i].key >> shift;
      if (top < prefix || (int64_t)((a[i].key >> nsh) & mask) <= b) a[kept++] = a[i];
    }
    total = kept;
    prefix = (prefix << width) | (uint64_t)b;
    shift = nsh;
  }
  return total;
}

static int cmp_cand(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

ct_status ct__cpu_topk(ct_tensor *indices, const ct_tensor *x, int64_t k, bool largest) {
  int64_t n = x->shape[x->ndim - 1], rows = n ? x->numel / n : 0;
  if (k == 0 || rows == 0) return CT_OK;
  topk_ctx c = {.x = x, .n = n, .k = k, .descending = largest};
  c.hist = ct__malloc(sizeof(*c.hist) * TOPK_PARTS);
  if (!c.hist) goto oom;
  size_t es = ct__elsize(x->dtype);
  int64_t *out = ct__data(indices);
  for (int64_t r = 0; r < rows; r++) {
    c.row = (const char *)ct__data(x) + (size_t)(r * n) * es;
    ct__parallel_for(TOPK_PARTS, 1, count_parts, &c);
    int64_t seen = 0, b = 0;
    for (; b < TOPK_BUCKETS; b++) {
      for (int p = 0; p < TOPK_PARTS; p++) seen += c.hist[p][b];
      if (seen >= k) break;
    }
    c.threshold = b;
    int64_t total = 0;
    for (int p = 0; p < TOPK_PARTS; p++) {
      c.start[p] = total;
      for (int64_t q = 0; q <= b; q++) total += c.hist[p][q];
    }
    c.cands = ct__malloc_array((size_t)total, sizeof(cand));
    if (!c.cands) goto oom;
    ct__parallel_for(TOPK_PARTS, 1, collect_parts, &c);
    total = refine(c.cands, total, k, (uint64_t)b, key_shift(&c));
    qsort(c.cands, (size_t)total, sizeof(cand), cmp_cand);
    for (int64_t i = 0; i < k; i++) out[r * k + i] = c.cands[i].id;
    ct__free(c.cands);
  }
  ct__free(c.hist);
  return CT_OK;
oom:
  ct__free(c.hist);
  ct__fail(CT_ERR_OOM, "topk: out of memory for the selection of %lld of %lld elements",
           (long long)k, (long long)n);
  return CT_ERR_OOM;
}
