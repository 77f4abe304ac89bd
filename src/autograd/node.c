/* Nodes: allocation (header, op state, edges and input descriptions in one
 * block), saving tensors, attaching a node to its output, and freeing graphs
 * without recursion or allocation. */
#include <stdlib.h>

#include "autograd/node.h"
#include "ops/ops_internal.h"

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

ct_node *ct__node_new(const char *name, ct_backward_fn backward, size_t state_size, int n_inputs,
                      const ct_tensor *const *inputs) {
  size_t head = sizeof(ct_node) + round_up(state_size, alignof(max_align_t));
  ct_node *n = ct__ag_calloc(head + (size_t)n_inputs * (sizeof(ct_edge) + sizeof(ct_input_meta)));
  if (!n) return ct__fail(CT_ERR_OOM, "autograd: out of host memory recording %s", name);
  atomic_init(&n->refcount, 1);
  n->name = name;
  n->backward = backward;
  n->n_inputs = n_inputs;
  n->next = (ct_edge *)(void *)((char *)n + head);
  n->in = (ct_input_meta *)(n->next + n_inputs);
  for (int k = 0; k < n_inputs; k++) {
    const ct_tensor *t = inputs[k];
    if (!t) continue;
    memcpy(n->in[k].shape, t->shape, sizeof t->shape);
    n->in[k].ndim = t->ndim;
    n->in[k].dtype = t->dtype;
    n->in[k].device = ct__device(t);
    if (!ct__requires_grad(t)) continue;
    ct_node *fn;
    if (!ct__grad_fn_of(t, &fn)) {
      ct__node_release(n);
      return NULL;
    }
    if (fn) {
      n->next[k].fn = fn;
      atomic_fetch_add(&fn->refcount, 1);
    } else {
      n->next[k].leaf = ct__retain(t);
    }
  }
  return n;
}

/* ---- Freeing ----------------------------------------------------------------------- */

void ct__node_free_saved(ct_node *n) {
  for (; n; n = n->inner) {
    for (int i = 0; i < n->n_saved; i++) {
      ct__release(n->saved[i]->t);
      n->saved[i]->t = NULL;
    }
    n->saved_freed = true;
  }
}

/* Nodes whose last reference is gone wait on a per-thread list, linked
 * through the nodes themselves: freeing a graph 100,000 nodes deep needs
 * neither recursion nor memory. Releasing a node's saved tensors can free
 * a tensor whose grad_fn then joins the same list. */
static _Thread_local ct_node *tls_dead;
static _Thread_local bool tls_freeing;

void ct__node_release(ct_node *n) {
  if (!n || atomic_fetch_sub(&n->refcount, 1) != 1) return;
  n->free_next = tls_dead;
  tls_dead = n;
  if (tls_freeing) return;
  tls_freeing = true;
  while (tls_dead) {
    ct_node *x = tls_dead;
    tls_dead = x->free_next;
    for (int i = 0; i < x->n_saved; i++) ct__release(x->saved[i]->t);
    ct__release(x->pending);
    for (int k = 0; k < x->n_inputs; k++) {
      ct__release(x->next[k].leaf);
      ct__node_release(x->next[k].fn);
    }
    ct__node_release(x->inner);
    free(x);
  }
  tls_freeing = false;
}

/* ---- Saving -------------------------------------------------------------------------- */

static void save_into(ct_node *n, ct_saved *slot, ct_tensor *t, bool is_output,
                      const char *made_by) {
  CT_ASSERT(n->n_saved < CT_NODE_MAX_SAVED && !slot->t);
  *slot = (ct_saved){t, atomic_load(&t->storage->version), is_output, made_by};
  n->saved[n->n_saved++] = slot;
}

static ct_tensor *alias_of(const ct_tensor *t) {
  return ct__view_of(t, t->dtype, t->shape, t->strides, t->ndim, t->offset);
}

void ct__save(ct_node *n, ct_saved *slot, const ct_tensor *t) {
  if (!n || !t || n->broken) return;
  struct ct_autograd_meta *m = t->autograd;
  ct_tensor *keep;
  if (m && m->inplace && !m->inplace->original) {
    /* written in place right after: its old value (torch's original_self) */
    keep = m->inplace->original = ct__clone(t);
    ct__retain(keep);
  } else if (m) { /* one alias per tensor, however many nodes save it (weights: every step) */
    if (!m->saved_alias) m->saved_alias = alias_of(t);
    keep = ct__retain(m->saved_alias);
  } else {
    keep = alias_of(t);
  }
  if (!keep) {
    n->broken = true;
    return;
  }
  save_into(n, slot, keep, false, m && m->grad_fn ? m->grad_fn->name : NULL);
}

void ct__save_output(ct_node *n, ct_saved *slot, const ct_tensor *r) {
  if (!n || !r || n->broken) return;
  ct_tensor *alias = alias_of(r);
  if (!alias) {
    n->broken = true;
    return;
  }
  save_into(n, slot, alias, true, n->name);
}

/* ---- Attaching --------------------------------------------------------------------- */

ct_tensor *ct__ag_record(ct_tensor *r, ct_node *n) {
  ct_inplace *ip = r && r->autograd ? r->autograd->inplace : NULL;
  if (ip) return ct__inplace_take(ip, n);
  if (!r || !n || n->broken) {
    ct__node_release(n);
    ct__release(r);
    return NULL;
  }
  struct ct_autograd_meta *m = ct__meta_of(r);
  if (!m) {
    ct__node_release(n);
    ct__release(r);
    return NULL;
  }
  ct__meta_set_grad_fn(m, n);
  return r;
}
