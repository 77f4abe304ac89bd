/* conv2d on oneDNN (conv_onednn.h; the library is loaded by onednn.c).
 *
 * A oneDNN primitive is made for one geometry and dtype, and making one
 * (choosing the implementation, generating its code) costs far more than a
 * small convolution: the primitives live in a small cache keyed by the
 * direction, the dtype and the geometry, least recently used evicted. Each
 * entry keeps, per operand whose blocked layout (nChw16c & co.) differs from
 * the tensor's plain one (NCHW, OIHW / GOIHW), the reorder between the two:
 * inputs are reordered in before, outputs out after.
 *
 * oneDNN runs single-threaded (no OpenMP team: onednn.c says why); the batch
 * is split over ctensor's pool instead, as the BLAS's products are: each task
 * runs the primitive of its sub-batch size on its samples, with its own
 * scratchpad and reorder buffers; for grad_w (and grad_b) each task sums its
 * samples into f32 partial sums, added up at the end. Calls are serialized by
 * one mutex (the cache and the task buffers are shared).
 *
 * Which cases go to oneDNN (measured_faster) is decided from measurements of
 * both paths per layer (docs/design-notes.md, "Convolutions through oneDNN");
 * CT_ONEDNN=all sends it every case it computes, for tests and measures. */
#include "backend/cpu/conv_onednn.h"

#include "backend/cpu/onednn.h"

#include <stdatomic.h>

static atomic_uint_fast64_t onednn_calls;
uint64_t ct__conv_onednn_calls(void) { return atomic_load(&onednn_calls); }

#if defined(CT_HAVE_DNNL)
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm_bf16.h"
#include "core/half.h"
#include "core/internal.h"
#include "core/parallel.h"

enum { FWD, BWD_DATA, BWD_WEIGHTS };

/* Whether oneDNN measured faster than ctensor's kernel for this case (an
 * AVX-512 CPU with AVX512-BF16, 2 threads, the training benchmarks' layers:
 * docs/design-notes.md, "Convolutions through oneDNN"). ctensor's direct
 * kernels for few input channels (conv_avx512.c) win the forward and grad_x
 * of layers with 1 or 3 input channels (oneDNN 2-4x slower), oneDNN wins
 * everything from 6 input channels on (1.2-6x) and grad_w at 1 input
 * channel (1.5-3x), not at 3. Measured without groups or dilation, on
 * convolutions of millions of multiply-adds: other cases stay on ctensor's
 * kernels. */
static bool measured_faster(int kind, ct_dtype dt, const conv_geom *g) {
  (void)dt;
  if (g->G != 1 || g->dh != 1 || g->dw != 1) return false;
  double macs = (double)g->N * (double)g->Co * (double)g->P * (double)g->K;
  if (macs < 1048576.0) return false; /* the per-call overhead would show */
  if (g->C >= 4) return true;
  return kind == BWD_WEIGHTS && g->C == 1;
}

static bool use_onednn(int kind, ct_dtype dt, const conv_geom *g) {
  ct_onednn_mode mode = ct__onednn_mode();
  if (mode == CT_ONEDNN_OFF) return false;
  if (dt != CT_F32 && !(dt == CT_BF16 && ct__gemm_bf16_available())) return false;
  if (g->N == 0 || g->K == 0 || g->P == 0 || g->Co == 0) return false;
  if (mode != CT_ONEDNN_ALL && !measured_faster(kind, dt, g)) return false;
  return ct__onednn_ready();
}

typedef struct prim_key {
  int kind;
  ct_dtype dt;
  bool bias;
  int64_t N, C, H, W, Co, kH, kW, Ho, Wo, G, sh, sw, ph, pw, dh, dw;
} prim_key;

/* One operand of a primitive: the tensor's plain layout, and where the
 * primitive wants its own, that layout and the reorder between the two. */
typedef struct operand {
  int arg;                  /* DNNL_ARG_* of the convolution */
  bool output;              /* written by it (reordered out after) */
  dnnl_memory_desc_t user;  /* the tensor's layout (f32 partial sums for grad_w, grad_b) */
  dnnl_memory_desc_t inner; /* the primitive's */
  dnnl_primitive_t reorder; /* user -> inner (input), inner -> user (output); NULL: same layout */
  size_t inner_bytes;
} operand;

enum { MAX_OPERANDS = 4, CACHE_SIZE = 24 };
typedef struct prim_entry {
  bool used;
  bool failed; /* oneDNN has no implementation for it (not asked again) */
  prim_key key;
  uint64_t stamp; /* last use */
  dnnl_primitive_t conv;
  operand op[MAX_OPERANDS];
  int nop;
  size_t scratch_bytes; /* the most any of its primitives needs (user-managed scratchpads) */
} prim_entry;

/* The cache, and each task's buffers (grown as needed, kept): the reordered
 * operands, the scratchpad, and for grad_w its partial sums. One convolution
 * at a time uses them (cache.lock). */
enum { MAX_TASKS = 256 };
static struct {
  pthread_mutex_t lock;
  prim_entry entries[CACHE_SIZE];
  uint64_t clock;
  dnnl_primitive_attr_t attr; /* user-managed scratchpad */
  void *task_buf[MAX_TASKS];
  size_t task_bytes[MAX_TASKS];
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static prim_key key_of(int kind, ct_dtype dt, bool bias, const conv_geom *g, int64_t mb) {
  prim_key k;
  memset(&k, 0, sizeof k); /* padding too: keys are compared with memcmp */
  k.kind = kind, k.dt = dt, k.bias = bias;
  k.N = mb, k.C = g->C, k.H = g->H, k.W = g->W, k.Co = g->Co, k.kH = g->kH, k.kW = g->kW;
  k.Ho = g->Ho, k.Wo = g->Wo, k.G = g->G, k.sh = g->sh, k.sw = g->sw, k.ph = g->ph, k.pw = g->pw;
  k.dh = g->dh, k.dw = g->dw;
  return k;
}

static void entry_clear(prim_entry *e) {
  for (int i = 0; i < e->nop; i++)
    if (e->op[i].reorder) ct__dnnl.primitive_destroy(e->op[i].reorder);
  if (e->conv) ct__dnnl.primitive_destroy(e->conv);
  memset(e, 0, sizeof *e);
}

/* ---- Memory descriptors of the tensors (plain layouts) ---------------------- */

static dnnl_data_type_t dnnl_dt(ct_dtype dt) { return dt == CT_BF16 ? dnnl_bf16 : dnnl_f32; }

typedef struct conv_mds {
  dnnl_memory_desc_t x, w, b, y;          /* the tensors' layouts */
  dnnl_memory_desc_t w32, b32;            /* grad_w, grad_b partial sums: f32 */
  dnnl_memory_desc_t x_any, w_any, y_any; /* left to the primitive */
} conv_mds;

static bool make_mds(const prim_key *k, conv_mds *m) {
  dnnl_data_type_t t = dnnl_dt(k->dt);
  int64_t Cg = k->C / k->G, Cog = k->Co / k->G;
  dnnl_dims_t xd = {k->N, k->C, k->H, k->W}, yd = {k->N, k->Co, k->Ho, k->Wo}, bd = {k->Co};
  dnnl_dims_t wd = {k->Co, Cg, k->kH, k->kW}, gwd = {k->G, Cog, Cg, k->kH, k->kW};
  bool grouped = k->G > 1;
  int wn = grouped ? 5 : 4;
  const dnnl_dim_t *wdims = grouped ? gwd : wd;
  dnnl_format_tag_t wtag = grouped ? dnnl_goihw : dnnl_oihw;
  __typeof__(dnnl_memory_desc_init_by_tag) *init = ct__dnnl.memory_desc_init_by_tag;
  return init(&m->x, 4, xd, t, dnnl_nchw) == dnnl_success &&
         init(&m->y, 4, yd, t, dnnl_nchw) == dnnl_success &&
         init(&m->b, 1, bd, t, dnnl_a) == dnnl_success &&
         init(&m->w, wn, wdims, t, wtag) == dnnl_success &&
         init(&m->b32, 1, bd, dnnl_f32, dnnl_a) == dnnl_success &&
         init(&m->w32, wn, wdims, dnnl_f32, wtag) == dnnl_success &&
         init(&m->x_any, 4, xd, t, dnnl_format_tag_any) == dnnl_success &&
         init(&m->y_any, 4, yd, t, dnnl_format_tag_any) == dnnl_success &&
         init(&m->w_any, wn, wdims, t, dnnl_format_tag_any) == dnnl_success;
}

static size_t scratch_of(const_dnnl_primitive_desc_t pd) {
  const dnnl_memory_desc_t *md = ct__dnnl.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  return md ? ct__dnnl.memory_desc_get_size(md) : 0;
}

/* Operand `arg` of the primitive described by pd: the tensor's layout
 * `user`, the primitive's as pd says, and a reorder when they differ. */
static bool add_operand(prim_entry *e, const_dnnl_primitive_desc_t pd, dnnl_query_t query, int arg,
                        const dnnl_memory_desc_t *user, bool output) {
  operand *o = &e->op[e->nop++];
  o->arg = arg, o->output = output, o->user = *user;
  /* A bias is the second "weights" of its primitive. */
  int index = arg == DNNL_ARG_BIAS || arg == DNNL_ARG_DIFF_BIAS ? 1 : 0;
  const dnnl_memory_desc_t *inner = ct__dnnl.primitive_desc_query_md(pd, query, index);
  if (!inner) return false;
  o->inner = *inner;
  if (ct__dnnl.memory_desc_equal(inner, user)) return true;
  o->inner_bytes = ct__dnnl.memory_desc_get_size(inner);
  dnnl_primitive_desc_t rpd;
  const dnnl_memory_desc_t *from = output ? inner : user, *to = output ? user : inner;
  dnnl_engine_t eng = ct__onednn_engine();
  if (ct__dnnl.reorder_primitive_desc_create(&rpd, from, eng, to, eng, cache.attr) != dnnl_success)
    return false;
  size_t sb = scratch_of(rpd);
  if (sb > e->scratch_bytes) e->scratch_bytes = sb;
  dnnl_status_t st = ct__dnnl.primitive_create(&o->reorder, rpd);
  ct__dnnl.primitive_desc_destroy(rpd);
  return st == dnnl_success;
}

/* Makes the primitive of e->key and its operands; false when oneDNN has
 * none or fails. */
static bool entry_build(prim_entry *e) {
  const prim_key *k = &e->key;
  conv_mds m;
  if (!make_mds(k, &m)) return false;
  dnnl_engine_t eng = ct__onednn_engine();
  dnnl_convolution_desc_t d;
  dnnl_dims_t strides = {k->sh, k->sw}, dil = {k->dh - 1, k->dw - 1}, pad = {k->ph, k->pw};
  /* The forward descriptor is also the hint of the backward ones. */
  dnnl_primitive_desc_t fwd = NULL, pd = NULL;
  if (ct__dnnl.conv_forward_desc_init(&d, dnnl_forward_training, dnnl_convolution_direct, &m.x_any,
                                      &m.w_any, k->bias ? &m.b : NULL, &m.y_any, strides, dil, pad,
                                      pad) != dnnl_success ||
      ct__dnnl.primitive_desc_create(&fwd, &d, cache.attr, eng, NULL) != dnnl_success)
    return false;
  bool ok = true;
  if (k->kind == FWD) {
    pd = fwd, fwd = NULL;
  } else if (k->kind == BWD_DATA) {
    ok = ct__dnnl.conv_backward_data_desc_init(&d, dnnl_convolution_direct, &m.x_any, &m.w_any,
                                               &m.y_any, strides, dil, pad, pad) == dnnl_success &&
         ct__dnnl.primitive_desc_create(&pd, &d, cache.attr, eng, fwd) == dnnl_success;
  } else { /* f32 partial sums for grad_w and grad_b, summed over the tasks */
    dnnl_memory_desc_t w32_any;
    ok = ct__dnnl.memory_desc_init_by_tag(&w32_any, m.w32.ndims, m.w32.dims, dnnl_f32,
                                          dnnl_format_tag_any) == dnnl_success &&
         ct__dnnl.conv_backward_weights_desc_init(&d, dnnl_convolution_direct, &m.x_any, &w32_any,
                                                  k->bias ? &m.b32 : NULL, &m.y_any, strides, dil,
                                                  pad, pad) == dnnl_success &&
         ct__dnnl.primitive_desc_create(&pd, &d, cache.attr, eng, fwd) == dnnl_success;
  }
  if (fwd) ct__dnnl.primitive_desc_destroy(fwd);
  if (!ok) return false;
  e->scratch_bytes = scratch_of(pd);
  if (k->kind == FWD) {
    ok = add_operand(e, pd, dnnl_query_src_md, DNNL_ARG_SRC, &m.x, false) &&
         add_operand(e, pd, dnnl_query_weights_md, DNNL_ARG_WEIGHTS, &m.w, false) &&
         (!k->bias || add_operand(e, pd, dnnl_query_weights_md, DNNL_ARG_BIAS, &m.b, false)) &&
         add_operand(e, pd, dnnl_query_dst_md, DNNL_ARG_DST, &m.y, true);
  } else if (k->kind == BWD_DATA) {
    ok = add_operand(e, pd, dnnl_query_diff_dst_md, DNNL_ARG_DIFF_DST, &m.y, false) &&
         add_operand(e, pd, dnnl_query_weights_md, DNNL_ARG_WEIGHTS, &m.w, false) &&
         add_operand(e, pd, dnnl_query_diff_src_md, DNNL_ARG_DIFF_SRC, &m.x, true);
  } else {
    ok = add_operand(e, pd, dnnl_query_src_md, DNNL_ARG_SRC, &m.x, false) &&
         add_operand(e, pd, dnnl_query_diff_dst_md, DNNL_ARG_DIFF_DST, &m.y, false) &&
         add_operand(e, pd, dnnl_query_diff_weights_md, DNNL_ARG_DIFF_WEIGHTS, &m.w32, true) &&
         (!k->bias ||
          add_operand(e, pd, dnnl_query_diff_weights_md, DNNL_ARG_DIFF_BIAS, &m.b32, true));
  }
  ok = ok && ct__dnnl.primitive_create(&e->conv, pd) == dnnl_success;
  ct__dnnl.primitive_desc_destroy(pd);
  return ok;
}

/* The entry of key (made on a miss, evicting the least recently used);
 * NULL when oneDNN cannot compute it. Under cache.lock. */
static prim_entry *lookup(const prim_key *key) {
  prim_entry *victim = &cache.entries[0];
  for (int i = 0; i < CACHE_SIZE; i++) {
    prim_entry *e = &cache.entries[i];
    if (e->used && memcmp(&e->key, key, sizeof *key) == 0) {
      e->stamp = ++cache.clock;
      return e->failed ? NULL : e;
    }
    if (!e->used || (victim->used && e->stamp < victim->stamp)) victim = e;
  }
  if (victim->used) entry_clear(victim);
  victim->used = true, victim->key = *key, victim->stamp = ++cache.clock;
  if (!entry_build(victim)) {
    entry_clear(victim);
    victim->used = true, victim->failed = true, victim->key = *key;
    victim->stamp = cache.clock;
    return NULL;
  }
  return victim;
}

/* The primitives' attributes: scratchpads given by the caller (each task
 * its own), so that tasks run the same primitive at once. */
static bool make_attr(void) {
  if (ct__dnnl.primitive_attr_create(&cache.attr) != dnnl_success) return false;
  if (ct__dnnl.primitive_attr_set_scratchpad_mode(cache.attr, dnnl_scratchpad_mode_user) ==
      dnnl_success)
    return true;
  ct__dnnl.primitive_attr_destroy(cache.attr);
  cache.attr = NULL;
  return false;
}

/* ---- Execution: the batch split over ctensor's pool ------------------------- */

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* Operand i of a task: its first element (the task's samples for x, out,
 * grad_out, grad_x; the same weights for all; the task's partial sums). */
typedef struct conv_run {
  int kind;
  int nt;
  int64_t N;
  prim_entry *e[2]; /* for the tasks of q and q+1 samples (N = q*nt + r) */
  char *data[MAX_OPERANDS];
  size_t sample_bytes[MAX_OPERANDS]; /* per sample, 0: not split by sample */
  size_t partial_bytes;              /* grad_w + grad_b partial sums of one task */
  size_t gw_bytes;                   /* grad_w's part of them */
  ct_tensor *grad_w, *grad_b;        /* the sums' destinations (BWD_WEIGHTS) */
  atomic_bool failed;
} conv_run;

static void task_range(const conv_run *r, int64_t t, int64_t *n0, int64_t *n1) {
  *n0 = r->N * t / r->nt, *n1 = r->N * (t + 1) / r->nt;
}

/* Task t's samples on its primitive. Its buffer: the partial sums (at the
 * start, where sum_partials reads them), the scratchpad, the reordered
 * operands. */
static bool execute_task(const conv_run *r, int64_t t) {
  int64_t n0, n1;
  task_range(r, t, &n0, &n1);
  prim_entry *e = r->e[n1 - n0 == r->N / r->nt ? 0 : 1];
  char *partial = cache.task_buf[t];
  char *scratch = partial + round64(r->partial_bytes);
  char *buf = scratch + round64(e->scratch_bytes);
  dnnl_engine_t eng = ct__onednn_engine();
  dnnl_stream_t s = ct__onednn_stream();
  dnnl_memory_t um[MAX_OPERANDS] = {0}, im[MAX_OPERANDS] = {0}, sm = NULL;
  dnnl_exec_arg_t args[MAX_OPERANDS + 1];
  dnnl_memory_desc_t smd;
  dnnl_dims_t sdims = {(dnnl_dim_t)(e->scratch_bytes ? e->scratch_bytes : 1)};
  bool ok = ct__dnnl.memory_desc_init_by_tag(&smd, 1, sdims, dnnl_u8, dnnl_a) == dnnl_success &&
            ct__dnnl.memory_create(&sm, &smd, eng, scratch) == dnnl_success;
  for (int i = 0; ok && i < e->nop; i++) {
    const operand *o = &e->op[i];
    char *user = r->data[i] ? r->data[i] + (size_t)n0 * r->sample_bytes[i] : NULL;
    if (o->arg == DNNL_ARG_DIFF_WEIGHTS) user = partial;
    if (o->arg == DNNL_ARG_DIFF_BIAS) user = partial + r->gw_bytes;
    ok = ct__dnnl.memory_create(&um[i], &o->user, eng, user) == dnnl_success;
    if (ok && o->reorder) {
      ok = ct__dnnl.memory_create(&im[i], &o->inner, eng, buf) == dnnl_success;
      buf += round64(o->inner_bytes);
    }
    args[i] = (dnnl_exec_arg_t){o->arg, im[i] ? im[i] : um[i]};
    if (ok && o->reorder && !o->output) {
      dnnl_exec_arg_t ra[3] = {
          {DNNL_ARG_FROM, um[i]}, {DNNL_ARG_TO, im[i]}, {DNNL_ARG_SCRATCHPAD, sm}};
      ok = ct__dnnl.primitive_execute(o->reorder, s, 3, ra) == dnnl_success;
    }
  }
  if (ok) {
    args[e->nop] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
    ok = ct__dnnl.primitive_execute(e->conv, s, e->nop + 1, args) == dnnl_success;
  }
  for (int i = 0; ok && i < e->nop; i++) {
    const operand *o = &e->op[i];
    if (!o->reorder || !o->output) continue;
    dnnl_exec_arg_t ra[3] = {
        {DNNL_ARG_FROM, im[i]}, {DNNL_ARG_TO, um[i]}, {DNNL_ARG_SCRATCHPAD, sm}};
    ok = ct__dnnl.primitive_execute(o->reorder, s, 3, ra) == dnnl_success;
  }
  ok = ok && ct__dnnl.stream_wait(s) == dnnl_success;
  for (int i = 0; i < e->nop; i++) {
    if (im[i]) ct__dnnl.memory_destroy(im[i]);
    if (um[i]) ct__dnnl.memory_destroy(um[i]);
  }
  if (sm) ct__dnnl.memory_destroy(sm);
  return ok;
}

static void conv_task(int64_t t, void *vr) {
  conv_run *r = vr;
  int saved = ct__onednn_single_thread_begin(); /* the task is one thread's share */
  if (!execute_task(r, t)) atomic_store(&r->failed, true);
  ct__onednn_single_thread_end(saved);
}

/* Grows the task buffers to `bytes` each; false when memory is short. */
static bool task_buffers(int nt, size_t bytes) {
  for (int t = 0; t < nt; t++) {
    if (cache.task_bytes[t] >= bytes) continue;
    void *p = ct__aligned_alloc(64, bytes); /* through the library's allocation hook */
    if (!p) return false;
    ct__free(cache.task_buf[t]);
    cache.task_buf[t] = p, cache.task_bytes[t] = bytes;
  }
  return true;
}

static size_t task_bytes_of(const prim_entry *e, size_t partial) {
  size_t b = round64(e->scratch_bytes) + round64(partial);
  for (int i = 0; i < e->nop; i++) b += round64(e->op[i].inner_bytes);
  return b > 64 ? b : 64;
}

/* grad_w (and grad_b) = the sum of the tasks' f32 partial sums, in the
 * tensors' dtype. */
static void sum_partials(const conv_run *r) {
  int64_t nw = r->grad_w->numel, nb = r->grad_b ? r->grad_b->numel : 0;
  bool bf16 = r->grad_w->dtype == CT_BF16;
  for (int64_t i = 0; i < nw + nb; i++) {
    float s = 0;
    for (int t = 0; t < r->nt; t++) s += ((const float *)cache.task_buf[t])[i];
    char *dst = i < nw ? ct__data(r->grad_w) : ct__data(r->grad_b);
    int64_t j = i < nw ? i : i - nw;
    if (bf16)
      ((uint16_t *)dst)[j] = ct_f32_to_bf16(s);
    else
      ((float *)dst)[j] = s;
  }
}

/* Runs the convolution of `kind` over the batch, split into tasks of
 * ctensor's pool, each a single-threaded oneDNN primitive on its samples. */
static bool run(conv_run *r, ct_dtype dt, bool bias, const conv_geom *g) {
  int nt = ct__num_threads();
  if (nt > MAX_TASKS) nt = MAX_TASKS;
  if (nt > g->N) nt = (int)g->N;
  r->nt = nt, r->N = g->N;
  int64_t q = g->N / nt;
  pthread_mutex_lock(&cache.lock);
  if (!cache.attr && !make_attr()) {
    pthread_mutex_unlock(&cache.lock);
    return false;
  }
  prim_key k0 = key_of(r->kind, dt, bias, g, q), k1 = key_of(r->kind, dt, bias, g, q + 1);
  r->e[0] = lookup(&k0);
  r->e[1] = g->N % nt ? lookup(&k1) : r->e[0];
  bool ok = r->e[0] && r->e[1];
  if (ok) {
    size_t b0 = task_bytes_of(r->e[0], r->partial_bytes),
           b1 = task_bytes_of(r->e[1], r->partial_bytes);
    ok = task_buffers(nt, b0 > b1 ? b0 : b1);
  }
  if (ok) {
    atomic_init(&r->failed, false);
    if (nt == 1)
      conv_task(0, r);
    else
      ct__parallel_run(nt, conv_task, r);
    ok = !atomic_load(&r->failed);
  }
  if (ok && r->kind == BWD_WEIGHTS) sum_partials(r);
  pthread_mutex_unlock(&cache.lock);
  if (ok) atomic_fetch_add(&onednn_calls, 1);
  return ok;
}

bool ct__conv_onednn_forward(const conv_geom *g, ct_tensor *out, const ct_tensor *x,
                             const ct_tensor *w, const ct_tensor *bias) {
  if (w->dtype != x->dtype || out->dtype != x->dtype || (bias && bias->dtype != x->dtype) ||
      !use_onednn(FWD, x->dtype, g))
    return false;
  size_t es = ct__elsize(x->dtype);
  conv_run r = {.kind = FWD};
  int n = 0;
  r.data[n] = ct__data(x), r.sample_bytes[n++] = (size_t)(g->C * g->H * g->W) * es;
  r.data[n++] = ct__data(w);
  if (bias) r.data[n++] = ct__data(bias);
  r.data[n] = ct__data(out), r.sample_bytes[n] = (size_t)(g->Co * g->P) * es;
  return run(&r, x->dtype, bias != NULL, g);
}

void ct__conv_onednn_backward(const conv_geom *g, ct_tensor *grad_x, ct_tensor *grad_w,
                              ct_tensor *grad_b, const ct_tensor *grad_out, const ct_tensor *x,
                              const ct_tensor *w, bool *did_x, bool *did_w) {
  *did_x = *did_w = false;
  ct_dtype dt = x->dtype;
  if (w->dtype != dt || grad_out->dtype != dt || (grad_x && grad_x->dtype != dt) ||
      (grad_w && grad_w->dtype != dt) || (grad_b && grad_b->dtype != dt))
    return;
  size_t es = ct__elsize(dt);
  size_t xs = (size_t)(g->C * g->H * g->W) * es, ys = (size_t)(g->Co * g->P) * es;
  if (grad_x && use_onednn(BWD_DATA, dt, g)) {
    conv_run r = {.kind = BWD_DATA};
    r.data[0] = ct__data(grad_out), r.sample_bytes[0] = ys;
    r.data[1] = ct__data(w);
    r.data[2] = ct__data(grad_x), r.sample_bytes[2] = xs;
    *did_x = run(&r, dt, false, g);
  }
  if (grad_w && use_onednn(BWD_WEIGHTS, dt, g)) {
    conv_run r = {.kind = BWD_WEIGHTS};
    r.data[0] = ct__data(x), r.sample_bytes[0] = xs;
    r.data[1] = ct__data(grad_out), r.sample_bytes[1] = ys;
    r.gw_bytes = (size_t)grad_w->numel * sizeof(float);
    r.partial_bytes = r.gw_bytes + (size_t)(grad_b ? grad_b->numel : 0) * sizeof(float);
    r.grad_w = grad_w, r.grad_b = grad_b;
    *did_w = run(&r, dt, grad_b != NULL, g);
  }
}

#else /* built without dnnl.h: ctensor's own kernels always */

bool ct__conv_onednn_forward(const conv_geom *g, ct_tensor *out, const ct_tensor *x,
                             const ct_tensor *w, const ct_tensor *bias) {
  (void)g, (void)out, (void)x, (void)w, (void)bias;
  return false;
}

void ct__conv_onednn_backward(const conv_geom *g, ct_tensor *grad_x, ct_tensor *grad_w,
                              ct_tensor *grad_b, const ct_tensor *grad_out, const ct_tensor *x,
                              const ct_tensor *w, bool *did_x, bool *did_w) {
  (void)g, (void)grad_x, (void)grad_w, (void)grad_b, (void)grad_out, (void)x, (void)w;
  *did_x = *did_w = false;
}

#endif
