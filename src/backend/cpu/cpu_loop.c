/* The CPU strided loop and the f16/bf16 row adapter. */
#include "backend/cpu/bf16_rows.h"
#include "backend/cpu/cpu_loop.h"

#include "core/parallel.h"

void ct__loop_init(ct_loop *L, int nargs, const ct_tensor *const *ts) {
  const ct_tensor *o = ts[0];
  L->nargs = nargs;
  L->numel = o->numel;
  for (int a = 0; a < nargs; a++) L->data[a] = ct__data(ts[a]);
  /* an empty loop: no byte strides (those of a huge dim beside a 0 overflow) */
  if (o->numel == 0) {
    L->ndim = 1, L->shape[0] = 0;
    for (int a = 0; a < nargs; a++) L->strides[a][0] = (int64_t)ct__elsize(ts[a]->dtype);
    return;
  }
  /* Drop size-1 dims, then merge neighbours that are contiguous for everyone. */
  int n = 0;
  for (int d = 0; d < o->ndim; d++) {
    if (o->shape[d] == 1) continue;
    L->shape[n] = o->shape[d];
    for (int a = 0; a < nargs; a++)
      L->strides[a][n] = ts[a]->strides[d] * (int64_t)ct__elsize(ts[a]->dtype);
    if (n > 0) {
      bool merge = true;
      for (int a = 0; a < nargs && merge; a++)
        merge = L->strides[a][n - 1] == L->strides[a][n] * L->shape[n];
      if (merge) {
        L->shape[n - 1] *= L->shape[n];
        for (int a = 0; a < nargs; a++) L->strides[a][n - 1] = L->strides[a][n];
        continue;
      }
    }
    n++;
  }
  if (n == 0) { /* scalar or all size-1 */
    L->shape[0] = 1;
    for (int a = 0; a < nargs; a++) L->strides[a][0] = (int64_t)ct__elsize(ts[a]->dtype);
    n = 1;
  }
  L->ndim = n;
}

/* Runs rows covering linear elements [begin, end). */
static void run_range(const ct_loop *L, ct_loop_fn fn, void *ctx, int64_t begin, int64_t end) {
  int nd = L->ndim, na = L->nargs;
  int64_t row = L->shape[nd - 1];
  int64_t idx[CT_MAX_DIMS];
  int64_t rest = begin;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rest % L->shape[d];
    rest /= L->shape[d];
  }
  char *ptr[CT_LOOP_MAX_ARGS];
  int64_t inner[CT_LOOP_MAX_ARGS];
  for (int a = 0; a < na; a++) {
    inner[a] = L->strides[a][nd - 1];
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += idx[d] * L->strides[a][d];
    ptr[a] = L->data[a] + off;
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = row - idx[nd - 1];
    if (n > end - pos) n = end - pos;
    fn(ptr, inner, n, ctx);
    pos += n;
    if (pos >= end) break;
    /* advance to the start of the next row */
    for (int a = 0; a < na; a++) ptr[a] += n * inner[a];
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] == L->shape[d]; d--) {
      for (int a = 0; a < na; a++) ptr[a] += L->strides[a][d - 1] - L->shape[d] * L->strides[a][d];
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

/* Chunks of a parallel loop: at most CT_CHUNKS_PER_THREAD per thread, so
 * that a thread the system does not schedule in time delays only its chunk
 * (the pool's threads take chunks as they come: core/parallel.h). */
#define CT_CHUNKS_PER_THREAD 4
static int64_t chunks_of(int64_t n, int64_t grain) {
  int64_t chunks = n / grain, most = (int64_t)CT_CHUNKS_PER_THREAD * ct__num_threads();
  return chunks < most ? chunks : most;
}

typedef struct loop_chunks {
  const ct_loop *L;
  ct_loop_fn fn;
  void *ctx;
  int64_t chunks;
} loop_chunks;
static void loop_chunk(int64_t c, void *vc) {
  const loop_chunks *k = vc;
  int64_t n = k->L->numel;
  /* chunk boundaries aligned to 16 elements keep vector loops whole */
  int64_t b = (n * c / k->chunks) & ~(int64_t)15;
  int64_t e = c == k->chunks - 1 ? n : (n * (c + 1) / k->chunks) & ~(int64_t)15;
  run_range(k->L, k->fn, k->ctx, b, e);
}

void ct__loop_run(const ct_loop *L, ct_loop_fn fn, void *ctx, int64_t grain) {
  if (L->numel == 0) return;
  if (grain <= 0) grain = CT_PARALLEL_GRAIN;
  if (L->numel < grain || ct__num_threads() <= 1) {
    run_range(L, fn, ctx, 0, L->numel);
    return;
  }
  loop_chunks k = {L, fn, ctx, chunks_of(L->numel, grain)};
  ct__parallel_run(k.chunks, loop_chunk, &k);
}

typedef struct range_chunks {
  int64_t n, chunks;
  ct_range_fn fn;
  void *ctx;
} range_chunks;
static void range_chunk(int64_t c, void *vc) {
  const range_chunks *k = vc;
  k->fn(k->n * c / k->chunks, k->n * (c + 1) / k->chunks, k->ctx);
}

void ct__parallel_for(int64_t n, int64_t grain, ct_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain <= 0) grain = CT_PARALLEL_GRAIN;
  if (n < grain || ct__num_threads() <= 1) {
    fn(0, n, ctx);
    return;
  }
  range_chunks k = {n, chunks_of(n, grain), fn, ctx};
  ct__parallel_run(k.chunks, range_chunk, &k);
}

void ct__half_rows(char **data, const int64_t *strides, int64_t n, void *vctx) {
  ct_half_ctx *c = vctx;
  float buf[CT_LOOP_MAX_ARGS][CT_HALF_BLOCK];
  for (int64_t done = 0; done < n; done += CT_HALF_BLOCK) {
    int64_t m = n - done < CT_HALF_BLOCK ? n - done : CT_HALF_BLOCK;
    char *ptrs[CT_LOOP_MAX_ARGS];
    int64_t st[CT_LOOP_MAX_ARGS];
    for (int a = 0; a < c->nargs; a++) {
      char *base = data[a] + done * strides[a];
      if (ct__is_half(c->dtypes[a])) {
        if ((a > 0 || !c->out_is_written) && c->dtypes[a] == CT_BF16 && strides[a] == 2)
          ct__bf16_to_f32_row(buf[a], (const uint16_t *)base, m); /* vectorized */
        else if (a > 0 || !c->out_is_written)
          for (int64_t i = 0; i < m; i++)
            buf[a][i] = ct__half_load(base + i * strides[a], c->dtypes[a]);
        ptrs[a] = (char *)buf[a];
        st[a] = sizeof(float);
      } else {
        ptrs[a] = base;
        st[a] = strides[a];
      }
    }
    c->f32_fn(ptrs, st, m, c->f32_ctx);
    if (c->out_is_written && ct__is_half(c->dtypes[0])) {
      char *base = data[0] + done * strides[0];
      if (c->dtypes[0] == CT_BF16 && strides[0] == 2)
        ct__bf16_from_f32_row((uint16_t *)base, buf[0], m);
      else
        for (int64_t i = 0; i < m; i++)
          ct__half_store(base + i * strides[0], c->dtypes[0], buf[0][i]);
    }
  }
}
