/* Autograd state on tensors: grad mode, requires_grad, .grad, retain_grad,
 * detach, the history of views (regenerated from their base's after an
 * in-place write), and the host allocations of the autograd layer. */
#include <pthread.h>
#include <stdlib.h>

#include "autograd/node.h"

static _Thread_local int tls_no_grad_depth;

void ct_no_grad_begin(void) { tls_no_grad_depth++; }
void ct_no_grad_end(void) {
  if (tls_no_grad_depth > 0) tls_no_grad_depth--;
}
bool ct_is_grad_enabled(void) { return tls_no_grad_depth == 0; }
bool ct__grad_enabled(void) { return tls_no_grad_depth == 0; }

bool ct__requires_grad(const ct_tensor *t) {
  return t && t->autograd && t->autograd->requires_grad;
}

bool ct__ag_needed(const ct_tensor *const *inputs, int n) {
  if (tls_no_grad_depth) return false;
  for (int i = 0; i < n; i++)
    if (ct__requires_grad(inputs[i])) return true;
  return false;
}

/* ---- Host allocations (with a failure hook for tests) ------------------------- */

static _Thread_local int tls_fail_after = -1;

int ct__ag_fail_alloc_after(int n) {
  int old = tls_fail_after;
  tls_fail_after = n < 0 ? -1 : n;
  return old;
}

/* false when the hook says this allocation fails (then the hook is off). */
static bool alloc_allowed(void) {
  if (CT_LIKELY(tls_fail_after < 0)) return true;
  return tls_fail_after-- > 0; /* the failing one leaves -1: off */
}
void *ct__ag_malloc(size_t size) { return alloc_allowed() ? malloc(size) : NULL; }
void *ct__ag_calloc(size_t size) { return alloc_allowed() ? calloc(1, size) : NULL; }
void *ct__ag_realloc(void *p, size_t size) { return alloc_allowed() ? realloc(p, size) : NULL; }

/* ---- The lock of .grad ------------------------------------------------------- */

/* Striped: a tensor's meta hashes to one of GRAD_STRIPES mutexes, which guard
 * its .grad pointer and the accumulation into it (concurrent backward calls
 * sharing leaves, a backward against zero_grad on another thread). */
#define GRAD_STRIPES 64
static pthread_mutex_t grad_locks[GRAD_STRIPES] = {[0 ... GRAD_STRIPES - 1] =
                                                       PTHREAD_MUTEX_INITIALIZER};

static pthread_mutex_t *grad_lock_of(const struct ct_autograd_meta *m) {
  uint64_t h = (uint64_t)(uintptr_t)m * UINT64_C(0x9E3779B97F4A7C15); /* Fibonacci hashing */
  return &grad_locks[h >> 58];
}
void ct__grad_lock(const struct ct_autograd_meta *m) { pthread_mutex_lock(grad_lock_of(m)); }
void ct__grad_unlock(const struct ct_autograd_meta *m) { pthread_mutex_unlock(grad_lock_of(m)); }

/* ---- Meta ----------------------------------------------------------------------- */

/* Drops m's reference to its grad_fn, and the node's to m's retain_grad. */
static void drop_grad_fn(struct ct_autograd_meta *m) {
  if (!m->grad_fn) return;
  if (m->grad_fn->retain_meta == m) m->grad_fn->retain_meta = NULL;
  ct__node_release(m->grad_fn);
  m->grad_fn = NULL;
}

static void meta_free(struct ct_autograd_meta *m) {
  if (!m) return;
  drop_grad_fn(m);
  ct__release(m->grad);
  ct__release(m->view_base);
  ct__release(m->saved_alias);
  free(m);
}

struct ct_autograd_meta *ct__meta_of(ct_tensor *t) {
  if (!t->autograd) {
    t->autograd = ct__ag_calloc(sizeof *t->autograd);
    if (!t->autograd) return ct__fail(CT_ERR_OOM, "autograd: out of host memory");
    /* stored once, before the first meta is published: later threads only
     * read it (a store per meta raced with ct__release on other threads) */
    if (__atomic_load_n(&ct__autograd_meta_free, __ATOMIC_ACQUIRE) != meta_free)
      __atomic_store_n(&ct__autograd_meta_free, meta_free, __ATOMIC_RELEASE);
  }
  return t->autograd;
}

void ct__meta_set_grad_fn(struct ct_autograd_meta *m, ct_node *n) {
  drop_grad_fn(m);
  m->grad_fn = n;
  m->requires_grad = true;
  if (m->retains_grad) n->retain_meta = m;
}

/* Called by creation functions for opts.requires_grad. */
ct_status ct__make_leaf_requires_grad(ct_tensor *t) {
  struct ct_autograd_meta *m = ct__meta_of(t);
  if (!m) return ct_last_error();
  m->requires_grad = true;
  return CT_OK;
}

/* ---- Views: history follows the base ----------------------------------------- */

bool ct__grad_fn_of(const ct_tensor *t, ct_node **fn) {
  struct ct_autograd_meta *m = t->autograd;
  *fn = NULL;
  if (!m) return true;
  if (m->view_base) {
    const ct_tensor *base = m->view_base;
    ct_node *base_fn = base->autograd ? base->autograd->grad_fn : NULL;
    if (base_fn != m->view_base_fn) { /* the base was rewritten in place: read its new history */
      ct_edge e = {.fn = base_fn,
                   .leaf = !base_fn && ct__requires_grad(base) ? (ct_tensor *)base : NULL};
      ct_node *n = ct__as_strided_node(t, base, e);
      if (!n) return false;
      ct__meta_set_grad_fn(m, n);
      m->view_base_fn = base_fn;
    }
  }
  *fn = m->grad_fn;
  return true;
}

/* ---- Public ------------------------------------------------------------------------ */

ct_tensor *ct_requires_grad_(ct_tensor *t, bool requires_grad) {
  if (!t) return NULL;
  if (t->autograd && t->autograd->grad_fn) {
    if (requires_grad) return t;
    return ct__fail(CT_ERR_STATE,
                    "requires_grad_: can't turn off requires_grad of a non-leaf tensor (made by "
                    "%s); use ct_detach",
                    t->autograd->grad_fn->name);
  }
  if (requires_grad && !ct_dtype_is_floating(t->dtype))
    return ct__fail(CT_ERR_DTYPE, "requires_grad_: only floating tensors can require grad, got %s",
                    ct_dtype_name(t->dtype));
  if (!requires_grad && !t->autograd) return t;
  struct ct_autograd_meta *m = ct__meta_of(t);
  if (!m) return NULL;
  m->requires_grad = requires_grad;
  return t;
}

bool ct_requires_grad(const ct_tensor *t) { return ct__requires_grad(t); }
bool ct_is_leaf(const ct_tensor *t) { return t && !(t->autograd && t->autograd->grad_fn); }
ct_tensor *ct_grad(const ct_tensor *t) {
  struct ct_autograd_meta *m = t ? t->autograd : NULL;
  if (!m) return NULL;
  ct__grad_lock(m);
  ct_tensor *g = m->grad;
  ct__grad_unlock(m);
  return g;
}

const char *ct_grad_fn_name(const ct_tensor *t) {
  ct_node *fn = NULL;
  if (!t || !t->autograd) return NULL;
  if (!ct__grad_fn_of(t, &fn)) fn = t->autograd->grad_fn; /* out of memory: the older history */
  return fn ? fn->name : NULL;
}

ct_status ct_set_grad(ct_tensor *t, ct_tensor *grad) {
  if (!t) return ct__fail_status(CT_ERR_ARG, "set_grad: tensor is NULL");
  if (grad) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    bool same = grad->ndim == t->ndim;
    for (int d = 0; d < t->ndim && same; d++) same = grad->shape[d] == t->shape[d];
    if (!same)
      return ct__fail_status(CT_ERR_SHAPE,
                             "set_grad: gradient of shape %s for a tensor of shape %s",
                             ct__shape_str(grad, a, sizeof a), ct__shape_str(t, b, sizeof b));
    if (grad->dtype != t->dtype || !ct_device_equal(ct__device(grad), ct__device(t)))
      return ct__fail_status(CT_ERR_DTYPE, "set_grad: gradient is %s on %s, the tensor %s on %s",
                             ct_dtype_name(grad->dtype), ct_device_name(ct__device(grad)),
                             ct_dtype_name(t->dtype), ct_device_name(ct__device(t)));
  }
  if (!grad && !t->autograd) return CT_OK;
  struct ct_autograd_meta *m = ct__meta_of(t);
  if (!m) return ct_last_error();
  ct__grad_lock(m);
  ct_tensor *old = m->grad;
  m->grad = grad ? ct__retain(grad) : NULL;
  ct__grad_unlock(m);
  ct__release(old);
  return CT_OK;
}

ct_status ct_retain_grad(ct_tensor *t) {
  if (!t) return ct__fail_status(CT_ERR_ARG, "retain_grad: tensor is NULL");
  if (!ct__requires_grad(t))
    return ct__fail_status(CT_ERR_STATE, "retain_grad: the tensor does not require grad");
  ct_node *fn;
  if (!ct__grad_fn_of(t, &fn)) return ct_last_error();
  t->autograd->retains_grad = true;
  if (fn) fn->retain_meta = t->autograd;
  return CT_OK;
}

ct_tensor *ct_detach(const ct_tensor *t) {
  if (!t) return NULL;
  return ct__track(ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset));
}
