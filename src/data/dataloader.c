/* The data loader: batches in an order that depends only on (seed, epoch),
 * built on worker threads and delivered in order.
 *
 * Threads. Worker k claims the next batch number b under the mutex (only
 * while b < next_deliver + capacity, which bounds the prefetch and keeps
 * ring slot b % capacity free), builds it without the lock into fresh batch
 * tensors, then stores it in the ring and signals. ct_dataloader_next waits
 * for slot next_deliver % capacity. The permutation and the epoch are only
 * written while no worker is building (active == 0, under the mutex), so
 * workers read them without the lock. Workers never touch a scope: their
 * tensors are untracked, and the batches handed out are owned by the caller.
 *
 * Consumers. ct_dataloader_next and ct_dataloader_start_epoch hold
 * consumer_mu for their whole run, so any number of threads may consume one
 * loader: each batch goes once, in order, to whichever thread asks next, and
 * an epoch starts between two deliveries, never during one.
 *
 * Order. perm is Fisher-Yates over 0..n-1 driven by ct_generator_next_u64 of
 * a generator in state (seed, epoch << 32); batch b holds perm[b * batch_size
 * ..]. Nothing depends on the number of workers or on timing.
 *
 * Sharding (opts.shard_count W > 1, as torch's DistributedSampler): the
 * order above is computed for the whole dataset (N samples) into `full`,
 * the same on every rank; rank r keeps full[(r + i W) % N] for i < n, with
 * n = ceil(N / W) (the wrap repeats the first samples as padding) or, with
 * drop_last, floor(N / W). So every rank has n samples and the same number of
 * batches, and the shards are disjoint except for the padding.
 *
 * Device delivery (opts.device a GPU): batches are built pinned as above,
 * and ct_dataloader_next keeps one staged ahead, copied on the loader's own
 * stream (device_stage.c), so the copy of batch b+1 overlaps the caller's
 * work on batch b. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "data/data_internal.h"

typedef struct slot {
  bool ready;
  ct_status status; /* CT_OK, or the worker's error ... */
  char *message;    /* ... and its message (malloc'd) */
  ct_tensor *inputs, *targets;
} slot;

struct ct_dataloader {
  ct_dataset *ds;
  int64_t n, batch_size, num_batches;
  bool shuffle, pin;
  int pin_device; /* the GPU whose context the workers' pinned allocations use */
  uint64_t seed;
  ct_generator *gen;
  ct__sample_meta meta; /* fast path: row shapes */
  int64_t *perm;        /* (n): the order of the current epoch (of this shard) */
  int64_t full_n;       /* samples in the dataset (n is this shard's count) */
  int64_t *full;        /* (full_n): the whole order when sharded, else NULL */
  int64_t shard_rank, shard_count;
  int64_t epoch;
  bool started;
  /* Delivery on a GPU (opts.device): the next batch's copy, and an error met
   * while staging it, reported by the call that would have returned it. */
  ct__device_stage *stage;
  ct_status pending;
  char *pending_message;

  /* Delivery. With workers, all below is guarded by mu. */
  int64_t next_issue;   /* next batch a worker may claim */
  int64_t issue_end;    /* claims stop here (num_batches; lowered to pause) */
  int64_t next_deliver; /* next batch ct_dataloader_next returns */
  int64_t capacity;     /* ring slots: prefetch * num_workers */
  slot *ring;
  int num_workers, active;
  bool stop;
  pthread_t *threads;
  pthread_mutex_t mu;
  pthread_cond_t work_cv;      /* workers: a batch can be claimed, or stop */
  pthread_cond_t done_cv;      /* caller: a slot got ready, or active dropped */
  pthread_mutex_t consumer_mu; /* one next / start_epoch at a time (all builds) */
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ct_tensor *new_batch_tensor(const ct_dataloader *dl, int64_t count, const int64_t *row_shape,
                                   int row_ndim, ct_dtype dtype) {
  int64_t shape[CT_MAX_DIMS];
  if (row_ndim + 1 > CT_MAX_DIMS)
    return ct__fail(CT_ERR_SHAPE, "dataloader: samples of %d dims cannot be batched (at most %d)",
                    row_ndim, CT_MAX_DIMS - 1);
  shape[0] = count;
  memcpy(shape + 1, row_shape, sizeof(int64_t) * (size_t)row_ndim);
  return dl->pin ? ct__empty_pinned(shape, row_ndim + 1, dtype)
                 : ct__empty(shape, row_ndim + 1, dtype, ct_cpu());
}

/* Row i of the contiguous batch b as an untracked view. */
static ct_tensor *batch_row(const ct_tensor *b, int64_t i) {
  return ct__view_of(b, b->dtype, b->shape + 1, b->strides + 1, b->ndim - 1,
                     b->offset + i * b->strides[0]);
}

/* Copies sample tensor s into row i of batch b (same dtype and row shape). */
static ct_status put_row(ct_tensor *b, int64_t i, const ct_tensor *s) {
  size_t row_bytes = (size_t)s->numel * ct__elsize(s->dtype);
  if (ct__is_cpu(s) && ct__is_contiguous(s)) {
    if (row_bytes) memcpy((char *)ct__data(b) + (size_t)i * row_bytes, ct__data(s), row_bytes);
    return CT_OK;
  }
  ct_tensor *row = batch_row(b, i);
  bool ok = row && ct_copy_(row, s);
  ct__release(row);
  return ok ? CT_OK : ct_last_error();
}

static bool same_row(const ct_tensor *b, const ct_tensor *s) {
  if (b->ndim - 1 != s->ndim || b->dtype != s->dtype) return false;
  for (int d = 0; d < s->ndim; d++)
    if (b->shape[d + 1] != s->shape[d]) return false;
  return true;
}

static ct_status check_row(const char *what, const ct_tensor *b, const ct_tensor *s, int64_t index,
                           int64_t first_index) {
  if (same_row(b, s)) return CT_OK;
  char got[CT_SHAPE_STR_MAX], want[CT_SHAPE_STR_MAX];
  ct_shape_format(s->shape, s->ndim, got, sizeof got);
  ct_shape_format(b->shape + 1, b->ndim - 1, want, sizeof want);
  return ct__fail_status(
      b->dtype != s->dtype ? CT_ERR_DTYPE : CT_ERR_SHAPE,
      "dataloader: dataset index %lld gives %s %s %s, but index %lld in the same "
      "batch gave %s %s (samples of a batch must match)",
      (long long)index, what, ct_dtype_name(s->dtype), got, (long long)first_index,
      ct_dtype_name(b->dtype), want);
}

/* A user dataset: one get per sample, copied into batch tensors sized on the
 * first sample. */
static ct_status build_generic(ct_dataloader *dl, const int64_t *idx, int64_t count, slot *out) {
  ct_status st = CT_OK;
  for (int64_t i = 0; i < count && st == CT_OK; i++) {
    ct_sample s = {0};
    st = dl->ds->vt.get(dl->ds->self, idx[i], &s);
    if (st == CT_OK && (!s.input || !s.target))
      st = ct__fail_status(CT_ERR_ARG,
                           "dataloader: dataset get(%lld) returned CT_OK without tensors",
                           (long long)idx[i]);
    else if (st != CT_OK && ct_last_error() != st)
      ct__fail_status(st, "dataloader: dataset get(%lld) failed with %s", (long long)idx[i],
                      ct_status_name(st));
    if (st == CT_OK && i == 0) {
      out->inputs = new_batch_tensor(dl, count, s.input->shape, s.input->ndim, s.input->dtype);
      out->targets = out->inputs ? new_batch_tensor(dl, count, s.target->shape, s.target->ndim,
                                                    s.target->dtype)
                                 : NULL;
      if (!out->targets) st = ct_last_error();
    }
    if (st == CT_OK) st = check_row("an input", out->inputs, s.input, idx[i], idx[0]);
    if (st == CT_OK) st = check_row("a target", out->targets, s.target, idx[i], idx[0]);
    if (st == CT_OK) st = put_row(out->inputs, i, s.input);
    if (st == CT_OK) st = put_row(out->targets, i, s.target);
    ct_free(s.input);
    ct_free(s.target);
  }
  return st;
}

/* Builds batch b of the current epoch into out (inputs/targets, or status
 * and message). Runs on a worker or on the caller's thread. */
static void build_batch(ct_dataloader *dl, int64_t b, slot *out) {
  *out = (slot){.ready = true};
  ct_clear_error();
  int64_t start = b * dl->batch_size;
  int64_t count = dl->n - start < dl->batch_size ? dl->n - start : dl->batch_size;
  const int64_t *idx = dl->perm + start;
  ct_status st;
  if (dl->ds->fast) {
    const ct__sample_meta *m = &dl->meta;
    out->inputs = new_batch_tensor(dl, count, m->input_shape, m->input_ndim, m->input_dtype);
    out->targets =
        out->inputs ? new_batch_tensor(dl, count, m->target_shape, m->target_ndim, m->target_dtype)
                    : NULL;
    st = out->targets
             ? dl->ds->fast->fill(dl->ds->self, idx, count, dl->epoch, out->inputs, out->targets)
             : ct_last_error();
  } else {
    st = build_generic(dl, idx, count, out);
  }
  if (st != CT_OK) {
    ct__release(out->inputs);
    ct__release(out->targets);
    out->inputs = out->targets = NULL;
    out->status = st;
    const char *msg = ct_last_error() == st ? ct_last_error_message() : "";
    out->message = ct__strdup(*msg ? msg : "dataloader: a batch failed without a message");
  }
}

static void slot_clear(slot *s) {
  ct__release(s->inputs);
  ct__release(s->targets);
  free(s->message);
  *s = (slot){0};
}

static void *worker_main(void *arg) {
  ct_dataloader *dl = arg;
  /* A new thread's CUDA device is GPU 0: pinning there would make a context on
   * GPU 0 in every process of a multi-GPU job. */
  if (dl->pin && ct_cuda_set_device(dl->pin_device) != CT_OK) ct_clear_error();
  pthread_mutex_lock(&dl->mu);
  for (;;) {
    while (!dl->stop &&
           !(dl->next_issue < dl->issue_end && dl->next_issue < dl->next_deliver + dl->capacity))
      pthread_cond_wait(&dl->work_cv, &dl->mu);
    if (dl->stop) break;
    int64_t b = dl->next_issue++;
    dl->active++;
    pthread_mutex_unlock(&dl->mu);
    slot built;
    build_batch(dl, b, &built);
    pthread_mutex_lock(&dl->mu);
    dl->ring[b % dl->capacity] = built;
    dl->active--;
    pthread_cond_broadcast(&dl->done_cv);
  }
  pthread_mutex_unlock(&dl->mu);
  return NULL;
}

static void stop_workers(ct_dataloader *dl, int started) {
  pthread_mutex_lock(&dl->mu);
  dl->stop = true;
  pthread_cond_broadcast(&dl->work_cv);
  pthread_mutex_unlock(&dl->mu);
  for (int i = 0; i < started; i++) pthread_join(dl->threads[i], NULL);
}

void ct_dataloader_free(ct_dataloader *dl) {
  if (!dl) return;
  if (dl->threads) stop_workers(dl, dl->num_workers);
  if (dl->ring)
    for (int64_t i = 0; i < dl->capacity; i++) slot_clear(&dl->ring[i]);
  if (dl->threads) {
    pthread_mutex_destroy(&dl->mu);
    pthread_cond_destroy(&dl->work_cv);
    pthread_cond_destroy(&dl->done_cv);
  }
  pthread_mutex_destroy(&dl->consumer_mu);
  ct__device_stage_free(dl->stage);
  free(dl->pending_message);
  free(dl->threads);
  free(dl->ring);
  free(dl->perm);
  free(dl->full);
  ct_generator_free(dl->gen);
  free(dl);
}

ct_dataloader *ct_dataloader_new(ct_dataset *d, const ct_dataloader_opts *opts) {
  ct_dataloader_opts o = opts ? *opts : (ct_dataloader_opts){0};
  if (!d) return ct__fail(CT_ERR_ARG, "dataloader_new: dataset is NULL");
  if (o.batch_size < 0 || o.num_workers < 0 || o.num_workers > 1024 || o.prefetch < 0 ||
      o.prefetch > 1024)
    return ct__fail(CT_ERR_ARG,
                    "dataloader_new: batch_size (%lld) must be >= 0, num_workers (%d) and prefetch "
                    "(%d) in 0..1024",
                    (long long)o.batch_size, o.num_workers, o.prefetch);
  int64_t shards = o.shard_count ? o.shard_count : 1;
  if (shards < 1 || o.shard_rank < 0 || o.shard_rank >= shards)
    return ct__fail(CT_ERR_ARG,
                    "dataloader_new: shard_rank %lld must be in 0..shard_count-1 "
                    "(shard_count %lld)",
                    (long long)o.shard_rank, (long long)o.shard_count);
  int64_t full_n = ct_dataset_length(d);
  if (full_n < 0)
    return ct__fail(CT_ERR_ARG, "dataloader_new: the dataset's length is %lld", (long long)full_n);
  /* this shard's samples: padded up, or with drop_last cut down, to N / W */
  int64_t n = shards == 1 ? full_n : o.drop_last ? full_n / shards : (full_n + shards - 1) / shards;
  ct_dataloader *dl = ct__calloc(1, sizeof *dl);
  if (!dl) return ct__fail(CT_ERR_OOM, "dataloader_new: out of host memory");
  pthread_mutex_init(&dl->consumer_mu, NULL);
  dl->ds = d;
  dl->n = n;
  dl->full_n = full_n;
  dl->shard_rank = o.shard_rank;
  dl->shard_count = shards;
  dl->batch_size = o.batch_size ? o.batch_size : 1;
  dl->num_batches =
      o.drop_last ? n / dl->batch_size : n / dl->batch_size + (n % dl->batch_size != 0);
  dl->shuffle = o.shuffle;
  dl->seed = o.seed;
  /* As torch: pinning without a GPU warns and does not pin. */
  /* Only pinning or a GPU asks the CUDA backend anything: a CPU loader must
   * not load it (its start-up costs time and memory, and can fail). */
  dl->pin = o.pin_memory && ct_cuda_is_available();
  dl->pin_device = o.device.type == CT_DEVICE_CUDA ? o.device.index : 0;
  if (dl->pin && o.device.type != CT_DEVICE_CUDA) dl->pin_device = ct_cuda_current_device();
  if (o.device.type == CT_DEVICE_CUDA) {
    if (o.device.index < 0 || o.device.index >= ct_cuda_device_count()) {
      ct_dataloader_free(dl);
      return ct__fail(CT_ERR_UNAVAILABLE, "dataloader_new: %s is not available (%d GPU(s) visible)",
                      ct_device_name(o.device), ct_cuda_device_count());
    }
    dl->pin = true; /* asynchronous copies need pinned sources */
    if (!(dl->stage = ct__device_stage_new(o.device))) {
      ct_dataloader_free(dl);
      return NULL;
    }
  } else if (o.pin_memory && !dl->pin)
    fprintf(stderr,
            "ctensor: warning: dataloader: pin_memory is set but no GPU is available; "
            "batches will not be pinned\n");
  if (d->fast) d->fast->sample_meta(d->self, &dl->meta);
  dl->num_workers = o.num_workers;
  dl->capacity = (int64_t)(o.prefetch ? o.prefetch : 2) * (o.num_workers ? o.num_workers : 1);
  dl->perm = ct__malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  dl->gen = ct_generator_new(o.seed);
  dl->ring = ct__calloc((size_t)dl->capacity, sizeof *dl->ring);
  if (shards > 1) dl->full = ct__malloc(sizeof(int64_t) * (size_t)(full_n ? full_n : 1));
  if (!dl->perm || !dl->gen || !dl->ring || (shards > 1 && !dl->full)) {
    ct_dataloader_free(dl);
    return ct__fail(CT_ERR_OOM, "dataloader_new: out of host memory");
  }
  if (o.num_workers > 0) {
    dl->threads = ct__calloc((size_t)o.num_workers, sizeof *dl->threads);
    if (!dl->threads) {
      ct_dataloader_free(dl);
      return ct__fail(CT_ERR_OOM, "dataloader_new: out of host memory");
    }
    pthread_mutex_init(&dl->mu, NULL);
    pthread_cond_init(&dl->work_cv, NULL);
    pthread_cond_init(&dl->done_cv, NULL);
    for (int i = 0; i < o.num_workers; i++) {
      int rc = pthread_create(&dl->threads[i], NULL, worker_main, dl);
      if (rc != 0) {
        stop_workers(dl, i);
        dl->num_workers = 0; /* joined already */
        free(dl->threads);
        dl->threads = NULL;
        pthread_mutex_destroy(&dl->mu);
        pthread_cond_destroy(&dl->work_cv);
        pthread_cond_destroy(&dl->done_cv);
        ct_dataloader_free(dl);
        return ct__fail(CT_ERR_UNAVAILABLE, "dataloader_new: cannot start worker thread %d: %s", i,
                        strerror(rc));
      }
    }
  }
  return dl;
}

int64_t ct_dataloader_num_batches(const ct_dataloader *dl) { return dl ? dl->num_batches : 0; }

static void make_order(ct_dataloader *dl, int64_t epoch) {
  int64_t n = dl->full_n, *p = dl->full ? dl->full : dl->perm;
  for (int64_t i = 0; i < n; i++) p[i] = i;
  if (dl->shuffle) {
    ct_generator_set_state(dl->gen, dl->seed, (uint64_t)epoch << 32);
    for (int64_t i = n - 1; i > 0; i--) {
      uint64_t u = ct_generator_next_u64(dl->gen);
      int64_t j = (int64_t)(((unsigned __int128)u * (uint64_t)(i + 1)) >> 64);
      int64_t t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
  }
  if (dl->full) /* this rank's shard (n == 0 implies dl->n == 0) */
    for (int64_t i = 0; i < dl->n; i++) dl->perm[i] = p[(dl->shard_rank + i * dl->shard_count) % n];
}

/* start_epoch with consumer_mu held. */
static ct_status start_epoch_locked(ct_dataloader *dl, int64_t epoch, int64_t skip_batches) {
  if (skip_batches < 0 || skip_batches > dl->num_batches)
    return ct__fail_status(CT_ERR_ARG, "dataloader_start_epoch: skip_batches %lld outside 0..%lld",
                           (long long)skip_batches, (long long)dl->num_batches);
  if (dl->threads) {
    pthread_mutex_lock(&dl->mu);
    dl->issue_end = dl->next_issue; /* no new claims; let the builders finish */
    while (dl->active > 0) pthread_cond_wait(&dl->done_cv, &dl->mu);
  }
  for (int64_t i = 0; i < dl->capacity; i++) slot_clear(&dl->ring[i]);
  ct__device_stage_drop(dl->stage);
  dl->pending = CT_OK;
  free(dl->pending_message);
  dl->pending_message = NULL;
  make_order(dl, epoch);
  dl->epoch = epoch;
  ct_dataset_set_epoch(dl->ds, epoch);
  dl->started = true;
  dl->next_issue = dl->next_deliver = skip_batches;
  dl->issue_end = dl->num_batches;
  if (dl->threads) {
    pthread_cond_broadcast(&dl->work_cv);
    pthread_mutex_unlock(&dl->mu);
  }
  return CT_OK;
}

ct_status ct_dataloader_start_epoch(ct_dataloader *dl, int64_t epoch, int64_t skip_batches) {
  if (!dl) return ct__fail_status(CT_ERR_ARG, "dataloader_start_epoch: loader is NULL");
  pthread_mutex_lock(&dl->consumer_mu);
  ct_status st = start_epoch_locked(dl, epoch, skip_batches);
  pthread_mutex_unlock(&dl->consumer_mu);
  return st;
}

/* The next batch on the CPU (*out zeroed by the caller; consumer_mu held). */
static ct_status next_host(ct_dataloader *dl, ct_batch *out) {
  if (!dl->started) {
    ct_status st = start_epoch_locked(dl, 0, 0);
    if (st != CT_OK) return st;
  }
  double t0 = now_seconds();
  slot got;
  int64_t b = dl->next_deliver;
  if (!dl->threads) {
    if (b >= dl->num_batches) return CT_OK;
    build_batch(dl, b, &got);
    dl->next_deliver++;
  } else {
    pthread_mutex_lock(&dl->mu);
    if (b >= dl->num_batches) {
      pthread_mutex_unlock(&dl->mu);
      return CT_OK;
    }
    slot *s = &dl->ring[b % dl->capacity];
    while (!s->ready) pthread_cond_wait(&dl->done_cv, &dl->mu);
    got = *s;
    *s = (slot){0};
    dl->next_deliver++;
    pthread_cond_broadcast(&dl->work_cv); /* a ring slot is free */
    pthread_mutex_unlock(&dl->mu);
  }
  out->wait_seconds = now_seconds() - t0;
  if (got.status != CT_OK) {
    ct_status st = ct__fail_status(
        got.status, "%s",
        got.message ? got.message : "dataloader: a batch failed (out of memory for its message)");
    free(got.message);
    return st;
  }
  out->inputs = got.inputs;
  out->targets = got.targets;
  out->index = b;
  return CT_OK;
}

/* Delivery on a GPU: hands out the staged batch, then stages the following
 * one, whose host build may wait for a worker and whose copy overlaps the
 * caller's work on this one. The first call of an epoch stages and hands out
 * at once. A failure to build or copy the following batch is returned by the
 * next call (which skips that batch, as on the CPU). */
static ct_status next_on_device(ct_dataloader *dl, ct_batch *out) {
  double t0 = now_seconds();
  if (dl->pending != CT_OK) {
    ct_status st = ct__fail_status(
        dl->pending, "%s",
        dl->pending_message ? dl->pending_message : "dataloader: staging a batch failed");
    dl->pending = CT_OK;
    free(dl->pending_message);
    dl->pending_message = NULL;
    return st;
  }
  if (!ct__device_stage_full(dl->stage)) {
    ct_batch h = {.index = -1};
    ct_status st = next_host(dl, &h);
    if (st != CT_OK || !h.inputs) return st; /* an error, or the end of the epoch */
    if ((st = ct__device_stage_put(dl->stage, h.inputs, h.targets, h.index)) != CT_OK) return st;
  }
  ct_status st = ct__device_stage_take(dl->stage, out);
  if (st != CT_OK) return st;
  ct_batch next = {.index = -1};
  ct_status later = next_host(dl, &next);
  if (later == CT_OK && next.inputs)
    later = ct__device_stage_put(dl->stage, next.inputs, next.targets, next.index);
  if (later != CT_OK) {
    dl->pending = later;
    dl->pending_message = ct__strdup(ct_last_error_message());
    ct_clear_error();
  }
  out->wait_seconds = now_seconds() - t0;
  return CT_OK;
}

ct_status ct_dataloader_next(ct_dataloader *dl, ct_batch *out) {
  if (!out) return ct__fail_status(CT_ERR_ARG, "dataloader_next: out is NULL");
  *out = (ct_batch){.index = -1};
  if (!dl) return ct__fail_status(CT_ERR_ARG, "dataloader_next: loader is NULL");
  pthread_mutex_lock(&dl->consumer_mu);
  ct_status st = dl->stage ? next_on_device(dl, out) : next_host(dl, out);
  pthread_mutex_unlock(&dl->consumer_mu);
  return st;
}

void ct_batch_release(ct_batch *b) {
  if (!b) return;
  ct_free(b->inputs);
  ct_free(b->targets);
  b->inputs = b->targets = NULL;
}
