/* Autograd state on tensors: requires_grad, grad, grad mode, detach, and
 * node construction and lifetime. */
#include <stdlib.h>

#include "autograd/autograd_internal.h"

static _Thread_local int tls_no_grad_depth;

void ct_no_grad_begin(void) { tls_no_grad_depth++; }
void ct_no_grad_end(void) {
  if (tls_no_grad_depth > 0) tls_no_grad_depth--;
}
bool ct_is_grad_enabled(void) { return tls_no_grad_depth == 0; }
bool ct__grad_enabled(void) { return tls_no_grad_depth == 0; }

bool ct__requires_grad(const ct_tensor *t) { return t && t->autograd && t->autograd->requires_grad; }

bool ct__ag_needed(const ct_tensor *const *inputs, int n) {
  if (tls_no_grad_depth) return false;
  for (int i = 0; i < n; i++)
    if (ct__requires_grad(inputs[i])) return true;
  return false;
}

static void meta_free(struct ct_autograd_meta *m) {
  if (!m) return;
  if (m->grad_fn) {
    if (m->grad_fn->retain_meta == m) m->grad_fn->retain_meta = NULL;
    ct__node_release(m->grad_fn);
  }
  ct__release(m->grad);
  free(m);
}

static struct ct_autograd_meta *meta_of(ct_tensor *t) {
  if (!t->autograd) {
    t->autograd = calloc(1, sizeof *t->autograd);
    if (!t->autograd) return ct__fail(CT_ERR_OOM, "autograd: out of host memory");
    ct__autograd_meta_free = meta_free;
  }
  return t->autograd;
}

/* Called by creation functions for opts.requires_grad. */
ct_status ct__make_leaf_requires_grad(ct_tensor *t) {
  struct ct_autograd_meta *m = meta_of(t);
  if (!m) return ct_last_error();
  m->requires_grad = true;
  return CT_OK;
}

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
  struct ct_autograd_meta *m = meta_of(t);
  if (!m) return NULL;
  m->requires_grad = requires_grad;
  return t;
}

bool ct_requires_grad(const ct_tensor *t) { return ct__requires_grad(t); }
bool ct_is_leaf(const ct_tensor *t) { return t && !(t->autograd && t->autograd->grad_fn); }
ct_tensor *ct_grad(const ct_tensor *t) { return t && t->autograd ? t->autograd->grad : NULL; }

const char *ct_grad_fn_name(const ct_tensor *t) {
  return t && t->autograd && t->autograd->grad_fn ? t->autograd->grad_fn->name : NULL;
}

ct_status ct_set_grad(ct_tensor *t, ct_tensor *grad) {
  if (!t) return ct__fail_status(CT_ERR_ARG, "set_grad: tensor is NULL");
  if (grad) {
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    bool same = grad->ndim == t->ndim;
    for (int d = 0; d < t->ndim && same; d++) same = grad->shape[d] == t->shape[d];
    if (!same)
      return ct__fail_status(CT_ERR_SHAPE, "set_grad: gradient of shape %s for a tensor of shape %s",
                             ct__shape_str(grad, a, sizeof a), ct__shape_str(t, b, sizeof b));
    if (grad->dtype != t->dtype || !ct_device_equal(ct__device(grad), ct__device(t)))
      return ct__fail_status(CT_ERR_DTYPE, "set_grad: gradient is %s on %s, the tensor %s on %s",
                             ct_dtype_name(grad->dtype), ct_device_name(ct__device(grad)),
                             ct_dtype_name(t->dtype), ct_device_name(ct__device(t)));
  }
  if (!grad && !t->autograd) return CT_OK;
  struct ct_autograd_meta *m = meta_of(t);
  if (!m) return ct_last_error();
  ct_tensor *old = m->grad;
  m->grad = grad ? ct__retain(grad) : NULL;
  ct__release(old);
  return CT_OK;
}

ct_status ct_retain_grad(ct_tensor *t) {
  if (!t) return ct__fail_status(CT_ERR_ARG, "retain_grad: tensor is NULL");
  if (!ct__requires_grad(t))
    return ct__fail_status(CT_ERR_STATE, "retain_grad: the tensor does not require grad");
  struct ct_autograd_meta *m = t->autograd;
  m->retains_grad = true;
  if (m->grad_fn) m->grad_fn->retain_meta = m;
  return CT_OK;
}

ct_tensor *ct_detach(const ct_tensor *t) {
  if (!t) return NULL;
  return ct__track(ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset));
}

/* ---- Nodes ---------------------------------------------------------------- */

ct_node *ct__node_new(const char *name, ct_backward_fn backward, int n_inputs,
                      const ct_tensor *const *inputs) {
  ct_node *n = calloc(1, sizeof *n + (size_t)n_inputs * (sizeof(ct_edge) + sizeof(ct_input_meta)));
  if (!n) return ct__fail(CT_ERR_OOM, "autograd: out of host memory recording %s", name);
  atomic_init(&n->refcount, 1);
  n->name = name;
  n->backward = backward;
  n->n_inputs = n_inputs;
  n->next = (ct_edge *)(n + 1);
  n->in = (ct_input_meta *)(n->next + n_inputs);
  for (int k = 0; k < n_inputs; k++) {
    const ct_tensor *t = inputs[k];
    if (!t) continue;
    memcpy(n->in[k].shape, t->shape, sizeof t->shape);
    n->in[k].ndim = t->ndim;
    n->in[k].dtype = t->dtype;
    n->in[k].device = ct__device(t);
    if (!ct__requires_grad(t)) continue;
    if (t->autograd->grad_fn) {
      n->next[k].fn = t->autograd->grad_fn;
      atomic_fetch_add(&n->next[k].fn->refcount, 1);
    } else {
      n->next[k].leaf = ct__retain(t);
    }
  }
  return n;
}

static void node_free_saved(ct_node *n) {
  for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
    ct__release(n->saved[i]);
    n->saved[i] = NULL;
  }
}

/* Releases iteratively: a long chain of nodes (a 10,000-step loop building one
 * graph) must not recurse 10,000 deep. */
void ct__node_release(ct_node *n) {
  ct_node *stack_small[64];
  ct_node **stack = stack_small;
  int cap = 64, top = 0;
  if (n) stack[top++] = n;
  while (top > 0) {
    ct_node *x = stack[--top];
    if (atomic_fetch_sub(&x->refcount, 1) != 1) continue;
    node_free_saved(x);
    ct__release(x->pending);
    for (int k = 0; k < x->n_inputs; k++) {
      ct__release(x->next[k].leaf);
      if (!x->next[k].fn) continue;
      if (top == cap) {
        ct_node **grown = malloc((size_t)cap * 2 * sizeof *grown);
        CT_ASSERT(grown != NULL);
        memcpy(grown, stack, (size_t)top * sizeof *grown);
        if (stack != stack_small) free(stack);
        stack = grown;
        cap *= 2;
      }
      stack[top++] = x->next[k].fn;
    }
    free(x);
  }
  if (stack != stack_small) free(stack);
}

bool ct__node_save(ct_node *n, int i, const ct_tensor *t) {
  CT_ASSERT(i >= 0 && i < CT_NODE_MAX_SAVED);
  ct_tensor *alias = ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset);
  if (!alias) return false;
  n->saved[i] = alias;
  n->saved_version[i] = atomic_load(&t->storage->version);
  n->has_saved = true;
  return true;
}

const ct_tensor *ct__node_saved(ct_node *n, int i) {
  if (n->saved_freed)
    return ct__fail(CT_ERR_STATE,
                    "backward: trying to backward through %s a second time, but its saved tensors "
                    "were freed; pass retain_graph = true to the first backward",
                    n->name);
  const ct_tensor *t = n->saved[i];
  uint32_t v = atomic_load(&t->storage->version);
  if (v != n->saved_version[i])
    return ct__fail(CT_ERR_STATE,
                    "backward: a tensor saved by %s was modified by an in-place operation (its "
                    "version is %u, expected %u); avoid modifying it or clone it first",
                    n->name, v, n->saved_version[i]);
  return t;
}

ct_tensor *ct__ag_attach(ct_tensor *result, ct_node *n) {
  if (!result || !n) {
    ct__release(result);
    ct__node_release(n);
    return NULL;
  }
  struct ct_autograd_meta *m = meta_of(result);
  if (!m) {
    ct__release(result);
    ct__node_release(n);
    return NULL;
  }
  if (m->grad_fn) ct__node_release(m->grad_fn); /* an in-place op replaces the history */
  m->grad_fn = n;
  m->requires_grad = true;
  if (m->retains_grad) n->retain_meta = m;
  return result;
}
