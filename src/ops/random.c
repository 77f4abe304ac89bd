/* Random tensors: generators (seed + offset into one Philox stream), the
 * random creators (rand, randn, randint, normal, uniform, bernoulli,
 * randperm) and in-place fills. The stream layout is defined in
 * core/philox.h; a fill reserves its blocks of the stream under the
 * generator's lock, so concurrent users get disjoint ranges, then lets the
 * backend compute element i from (seed, offset, i). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "autograd/autograd_internal.h"
#include "core/philox.h"
#include "ops/creation.h"
#include "ops/ops_internal.h"

/* torch's default seed, used until ct_manual_seed is called. */
#define CT_DEFAULT_SEED 67280421310721ull

struct ct_generator {
  atomic_uint lock; /* guards seed and offset: 0, or its holder's fork_mark() */
  uint64_t seed;
  uint64_t offset;  /* next unused Philox block */
};

static ct_generator default_generator = {0, CT_DEFAULT_SEED, 0};
static const ct_tensor_opts default_opts = {0};

/* A generator locked when the process forked stays locked in the child, where
 * its holder does not exist. So a holder marks the lock with the number of
 * forks this process descends from (counted by a fork handler): a lock marked
 * in an ancestor is free to take. This covers every generator, the program's
 * own included, without a list of them. */
static atomic_uint forks;
static void count_fork(void) { atomic_fetch_add(&forks, 1); }
static void register_fork_handler(void) { pthread_atfork(NULL, NULL, count_fork); }
static unsigned fork_mark(void) { return 2 * atomic_load(&forks) + 1; }

static void gen_lock(ct_generator *g) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_fork_handler);
  unsigned mine = fork_mark(), held = 0;
  while (!atomic_compare_exchange_weak_explicit(&g->lock, &held, mine, memory_order_acquire,
                                                memory_order_relaxed))
    if (held == mine) held = 0; /* held in this process: wait for 0 */
}
static void gen_unlock(ct_generator *g) { atomic_store_explicit(&g->lock, 0, memory_order_release); }

/* Reserves `blocks` Philox blocks of g: returns the seed and the first block. */
static void reserve(ct_generator *g, uint64_t blocks, uint64_t *seed, uint64_t *offset) {
  if (!g) g = &default_generator;
  gen_lock(g);
  *seed = g->seed;
  *offset = g->offset;
  g->offset += blocks;
  gen_unlock(g);
}

/* ---- Generators ------------------------------------------------------------ */

ct_generator *ct_default_generator(void) { return &default_generator; }

void ct_manual_seed(uint64_t seed) { ct_generator_set_state(&default_generator, seed, 0); }

ct_generator *ct_generator_new(uint64_t seed) {
  ct_generator *g = ct__malloc(sizeof *g);
  if (!g) return ct__fail(CT_ERR_OOM, "generator_new: out of host memory");
  atomic_init(&g->lock, 0);
  g->seed = seed;
  g->offset = 0;
  return g;
}

void ct_generator_free(ct_generator *g) {
  if (g && g != &default_generator) free(g);
}

void ct_generator_set_state(ct_generator *g, uint64_t seed, uint64_t offset) {
  if (!g) return;
  gen_lock(g);
  g->seed = seed;
  g->offset = offset;
  gen_unlock(g);
}

void ct_generator_get_state(const ct_generator *g, uint64_t *seed, uint64_t *offset) {
  if (!g) return;
  ct_generator *m = (ct_generator *)g; /* the lock is not part of the logical state */
  gen_lock(m);
  if (seed) *seed = m->seed;
  if (offset) *offset = m->offset;
  gen_unlock(m);
}

uint64_t ct_generator_next_u64(ct_generator *g) {
  uint64_t seed, offset;
  uint32_t w[4];
  reserve(g, 1, &seed, &offset);
  ct_philox_block(seed, offset, 0, w);
  return ct_philox_u64(w);
}

/* ---- Filling a tensor ------------------------------------------------------- */

/* Fills t (any layout) per p from generator g; sets p's seed, offset, wide.
 * probs: CT_RANDOM_BERNOULLI_TENSOR's probabilities (t's shape, contiguous). */
static ct_status random_fill(const char *op, ct_tensor *t, ct_random_params *p,
                             const ct_tensor *probs, ct_generator *g) {
  const ct_backend *be = ct__backend_for(op, t);
  if (!be) return ct_last_error();
  if (!be->random)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: not implemented on %s", op,
                           ct_device_name(ct__device(t)));
  switch (p->kind) {
  case CT_RANDOM_UNIFORM:
  case CT_RANDOM_NORMAL: p->wide = t->dtype == CT_F64; break;
  case CT_RANDOM_INT: p->wide = p->int_range > (1ull << 32); break;
  default: p->wide = false; break;
  }
  uint64_t per = p->wide ? 2 : 4;
  reserve(g, ((uint64_t)t->numel + per - 1) / per, &p->seed, &p->offset);
  if (t->numel == 0) return CT_OK;
  if (ct__is_contiguous(t)) return be->random(t, p, probs);
  /* Element i is the i-th in row-major order: generate contiguously, then copy. */
  ct_tensor *tmp = ct__empty(t->shape, t->ndim, t->dtype, ct__device(t));
  if (!tmp) return ct_last_error();
  ct_status st = be->random(tmp, p, probs);
  if (st == CT_OK) st = ct__copy_into(t, tmp);
  ct__release(tmp);
  return st;
}

static ct_tensor *random_create(const char *op, const int64_t *shape, int ndim,
                                const ct_tensor_opts *opts, ct_random_params p) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if ((p.kind == CT_RANDOM_UNIFORM || p.kind == CT_RANDOM_NORMAL) &&
      (unsigned)o->dtype < CT_DTYPE_COUNT && !ct_dtype_is_floating(o->dtype))
    return ct__fail(CT_ERR_DTYPE, "%s: expected a floating dtype, got %s", op, ct_dtype_name(o->dtype));
  ct_tensor *t = ct__create(op, shape, ndim, o);
  if (!t) return NULL;
  if (random_fill(op, t, &p, NULL, o->generator) != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return ct__finish_creation(op, t, o);
}

/* Largest finite value of a floating dtype. */
static double float_max(ct_dtype d) {
  switch (d) {
  case CT_F16: return 65504.0;
  case CT_BF16: return 3.3895313892515355e38;
  case CT_F32: return 3.4028234663852886e38;
  default: return 1.7976931348623157e308;
  }
}

static bool check_uniform(const char *op, double low, double high, ct_dtype dtype) {
  if (!isfinite(low) || !isfinite(high) || low > high)
    return ct__fail(CT_ERR_ARG, "%s: expected finite low <= high, got low %g, high %g", op, low, high),
           false;
  if (ct_dtype_is_floating(dtype) && !(high - low <= float_max(dtype)))
    return ct__fail(CT_ERR_ARG, "%s: high - low = %g exceeds the largest %s", op, high - low,
                    ct_dtype_name(dtype)),
           false;
  return true;
}

static bool check_normal(const char *op, double mean, double std) {
  if (!isfinite(mean) || !isfinite(std) || std < 0)
    return ct__fail(CT_ERR_ARG, "%s: expected a finite mean and a finite std >= 0, got mean %g, std %g",
                    op, mean, std),
           false;
  return true;
}

ct_tensor *ct_rand(const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  return random_create("rand", shape, ndim, opts, (ct_random_params){.kind = CT_RANDOM_UNIFORM, .a = 0, .b = 1});
}

ct_tensor *ct_randn(const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  return random_create("randn", shape, ndim, opts, (ct_random_params){.kind = CT_RANDOM_NORMAL, .a = 0, .b = 1});
}

ct_tensor *ct_uniform(double low, double high, const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  ct_dtype d = opts ? opts->dtype : CT_F32;
  if (!check_uniform("uniform", low, high, d)) return NULL;
  return random_create("uniform", shape, ndim, opts,
                       (ct_random_params){.kind = CT_RANDOM_UNIFORM, .a = low, .b = high});
}

ct_tensor *ct_normal(double mean, double std, const int64_t *shape, int ndim, const ct_tensor_opts *opts) {
  if (!check_normal("normal", mean, std)) return NULL;
  return random_create("normal", shape, ndim, opts,
                       (ct_random_params){.kind = CT_RANDOM_NORMAL, .a = mean, .b = std});
}

/* Whether every integer of [low, high) is exactly representable in dtype. */
static bool int_range_fits(int64_t low, int64_t high, ct_dtype d) {
  int64_t last = high - 1; /* high > low, so no overflow */
  switch (d) {
  case CT_BOOL: return low >= 0 && last <= 1;
  case CT_I8: return low >= INT8_MIN && last <= INT8_MAX;
  case CT_U8: return low >= 0 && last <= UINT8_MAX;
  case CT_I16: return low >= INT16_MIN && last <= INT16_MAX;
  case CT_I32: return low >= INT32_MIN && last <= INT32_MAX;
  case CT_I64: return true;
  default: {
    /* floats: integers up to 2^digits in magnitude */
    int digits = d == CT_F64 ? 53 : d == CT_F32 ? 24 : d == CT_F16 ? 11 : 8;
    int64_t lim = (int64_t)1 << digits;
    return low >= -lim && last <= lim;
  }
  }
}

ct_tensor *ct_randint(int64_t low, int64_t high, const int64_t *shape, int ndim,
                      const ct_tensor_opts *opts) {
  if (low >= high)
    return ct__fail(CT_ERR_ARG, "randint: expected low < high, got low %lld, high %lld", (long long)low,
                    (long long)high);
  /* torch.randint's default dtype is int64: NULL options and the zero value
   * of opts->dtype (CT_F32) both mean i64, so that options given for another
   * field (a device, a generator) don't turn the integers into floats. */
  ct_tensor_opts o = opts ? *opts : default_opts;
  if (o.dtype == CT_F32) o.dtype = CT_I64;
  opts = &o;
  ct_dtype d = o.dtype;
  if ((unsigned)d < CT_DTYPE_COUNT && !int_range_fits(low, high, d))
    return ct__fail(CT_ERR_ARG, "randint: the range [%lld, %lld) does not fit in %s", (long long)low,
                    (long long)high, ct_dtype_name(d));
  ct_random_params p = {.kind = CT_RANDOM_INT, .int_low = low,
                        .int_range = (uint64_t)high - (uint64_t)low};
  return random_create("randint", shape, ndim, opts, p);
}

/* ---- Bernoulli ------------------------------------------------------------------ */

/* The values of t as malloc'd row-major doubles (copied to the host). */
static double *host_values(const char *op, const ct_tensor *t) {
  ct_tensor *c = ct__cast(t, CT_F64);
  ct_tensor *cc = c ? ct__contiguous(c) : NULL;
  ct__release(c);
  if (!cc) return NULL;
  size_t nbytes = (size_t)t->numel * sizeof(double);
  double *v = ct__malloc(nbytes ? nbytes : 1);
  ct_status st = CT_OK;
  if (!v) st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory (%zu bytes)", op, nbytes);
  else if (ct__is_cpu(cc)) memcpy(v, ct__data(cc), nbytes);
  else if (nbytes) st = ct__backend_of(cc)->copy_to_host(v, cc, nbytes, false);
  ct__release(cc);
  if (st != CT_OK) {
    free(v);
    return NULL;
  }
  return v;
}

ct_tensor *ct_bernoulli(const ct_tensor *p, ct_generator *g) {
  if (!p) return NULL;
  if (!ct_dtype_is_floating(p->dtype))
    return ct__fail(CT_ERR_DTYPE, "bernoulli: probabilities must be floating, got %s", ct_dtype_name(p->dtype));
  double *v = host_values("bernoulli", p);
  if (!v) return NULL;
  for (int64_t i = 0; i < p->numel; i++) {
    if (!(v[i] >= 0 && v[i] <= 1)) {
      double bad = v[i];
      free(v);
      return ct__fail(CT_ERR_ARG, "bernoulli: probabilities must be in [0, 1], got %g at element %lld",
                      bad, (long long)i);
    }
  }
  free(v);
  ct_tensor *pc = ct__cast(p, p->dtype == CT_F64 ? CT_F64 : CT_F32);
  ct_tensor *probs = pc ? ct__contiguous(pc) : NULL;
  ct__release(pc);
  ct_tensor *out = probs ? ct__empty(p->shape, p->ndim, p->dtype, ct__device(p)) : NULL;
  ct_random_params prm = {.kind = CT_RANDOM_BERNOULLI_TENSOR};
  if (out && random_fill("bernoulli", out, &prm, probs, g) != CT_OK) {
    ct__release(out);
    out = NULL;
  }
  ct__release(probs);
  return ct__track(out);
}

ct_tensor *ct_bernoulli_scalar(const ct_tensor *t, double p, ct_generator *g) {
  if (!t) return NULL;
  if (!(p >= 0 && p <= 1))
    return ct__fail(CT_ERR_ARG, "bernoulli_scalar: p must be in [0, 1], got %g", p);
  ct_tensor *out = ct__empty(t->shape, t->ndim, t->dtype, ct__device(t));
  ct_random_params prm = {.kind = CT_RANDOM_BERNOULLI, .a = p};
  if (out && random_fill("bernoulli_scalar", out, &prm, NULL, g) != CT_OK) {
    ct__release(out);
    return NULL;
  }
  return ct__track(out);
}

/* ---- In-place fills --------------------------------------------------------------- */

static bool check_inplace(const char *op, const ct_tensor *t) {
  if (!ct_dtype_is_floating(t->dtype))
    return ct__fail(CT_ERR_DTYPE, "%s: expected a floating tensor, got %s", op, ct_dtype_name(t->dtype)),
           false;
  if (ct__has_internal_overlap(t))
    return ct__fail(CT_ERR_ARG, "%s: the tensor has elements that share memory (an expanded view)", op),
           false;
  return true;
}

/* Fills t in place; under autograd its old values get a zero gradient (a
 * leaf that requires grad is refused, as every in-place write). */
static ct_tensor *fill_inplace(const char *op, const char *node, ct_tensor *t, ct_random_params *p,
                               ct_generator *g) {
  ct_inplace ip;
  if (!ct__ag_inplace_begin(&ip, op, t, NULL, 0)) return NULL;
  if (ip.record && !ct__ag_overwrite(t, t, node)) return ct__ag_inplace_end(&ip, NULL);
  bool ok = random_fill(op, t, p, NULL, g) == CT_OK;
  if (ok) ct__bump_version(t);
  return ct__ag_inplace_end(&ip, ok ? t : NULL);
}

ct_tensor *ct_uniform_(ct_tensor *t, double low, double high, ct_generator *g) {
  if (!t) return NULL;
  if (!check_inplace("uniform_", t) || !check_uniform("uniform_", low, high, t->dtype)) return NULL;
  ct_random_params p = {.kind = CT_RANDOM_UNIFORM, .a = low, .b = high};
  return fill_inplace("uniform_", "UniformBackward", t, &p, g);
}

ct_tensor *ct_normal_(ct_tensor *t, double mean, double std, ct_generator *g) {
  if (!t) return NULL;
  if (!check_inplace("normal_", t) || !check_normal("normal_", mean, std)) return NULL;
  ct_random_params p = {.kind = CT_RANDOM_NORMAL, .a = mean, .b = std};
  return fill_inplace("normal_", "NormalBackward", t, &p, g);
}

/* ---- randperm ------------------------------------------------------------------------ */

/* Fisher-Yates on the host: for i = n-1 down to 1, draw k = n-1-i is the
 * 64-bit word pair 2(k%2), 2(k%2)+1 of block k/2, and i swaps with
 * j = draw % (i + 1). Uses ceil((n-1)/2) blocks. */
ct_tensor *ct_randperm(int64_t n, const ct_tensor_opts *opts) {
  const ct_tensor_opts *o = opts ? opts : &default_opts;
  if (n < 0) return ct__fail(CT_ERR_ARG, "randperm: n must be >= 0, got %lld", (long long)n);
  ct_tensor_opts oi = *o;
  oi.dtype = CT_I64;
  ct_tensor *t = ct__create("randperm", &n, 1, &oi);
  if (!t) return NULL;
  int64_t *v = ct__malloc_array((size_t)n, sizeof *v);
  if (!v) {
    ct__release(t);
    return ct__fail(CT_ERR_OOM, "randperm: out of host memory for %lld elements", (long long)n);
  }
  for (int64_t i = 0; i < n; i++) v[i] = i;
  uint64_t draws = n > 1 ? (uint64_t)n - 1 : 0, seed, offset;
  reserve(o->generator, (draws + 1) / 2, &seed, &offset);
  uint32_t w[4];
  for (uint64_t k = 0; k < draws; k++) {
    if (k % 2 == 0) ct_philox_block(seed, offset, k / 2, w);
    int64_t i = n - 1 - (int64_t)k;
    int64_t j = (int64_t)(ct_philox_u64(w + 2 * (k % 2)) % (uint64_t)(i + 1));
    int64_t tmp = v[i];
    v[i] = v[j];
    v[j] = tmp;
  }
  ct_status st = n ? ct__backend_of(t)->copy_from_host(t, v, (size_t)n * sizeof *v, false) : CT_OK;
  free(v);
  if (st != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return ct__finish_creation("randperm", t, &oi);
}
