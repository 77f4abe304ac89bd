/* The backward engine: orders the graph behind a root, runs each node's
 * backward once all gradients for its output have arrived, and accumulates
 * into leaves.
 *
 * One backward call runs on the calling thread; two backward calls over a
 * shared graph must not run concurrently. Backward calls over graphs that
 * share only leaves may: the accumulation into a leaf's .grad holds that
 * tensor's grad lock (meta.c), as does ct_set_grad, so no sum is lost and a
 * gradient cleared on another thread is not freed under the add. */
#include <stdlib.h>

#include "amp/amp_internal.h"
#include "autograd/node.h"
#include "ops/elementwise.h"
#include "ops/ops_internal.h"

typedef struct node_list {
  ct_node **items;
  int64_t count, cap;
} node_list;

static bool list_push(node_list *l, ct_node *n) {
  if (l->count == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 64;
    ct_node **g = ct__ag_realloc(l->items, (size_t)cap * sizeof *g);
    if (!g) return false;
    l->items = g;
    l->cap = cap;
  }
  l->items[l->count++] = n;
  return true;
}

/* Adds g into *slot (taking g's reference). */
static ct_status accumulate(ct_tensor **slot, ct_tensor *g) {
  if (!*slot) {
    *slot = g;
    return CT_OK;
  }
  ct_tensor *sum = ct__binary(CT_BOP_ADD, NULL, *slot, g);
  ct__release(g);
  if (!sum) return ct_last_error();
  ct__release(*slot);
  *slot = sum;
  return CT_OK;
}

/* Accumulates g into a leaf's (or retained tensor's) .grad, taking g's
 * reference. The stored gradient is always a contiguous tensor of its own:
 * g itself when nothing else can see it (the common case: a fresh matmul
 * result), else a copy, never a view of storage something else may write. */
static ct_status accumulate_grad_locked(struct ct_autograd_meta *m, ct_tensor *g) {
  ct_status st = CT_OK;
  if (!m->grad) {
    bool exclusive = atomic_load(&g->refcount) == 1 && atomic_load(&g->storage->refcount) == 1 &&
                     !g->autograd && g->offset == 0 && ct__is_contiguous(g);
    if (exclusive) {
      m->grad = g;
      return CT_OK;
    }
    if (!(m->grad = ct__clone(g))) st = ct_last_error();
  } else if (!ct__binary(CT_BOP_ADD, m->grad, m->grad, g)) {
    st = ct_last_error();
  }
  ct__release(g);
  return st;
}

static ct_status accumulate_grad(struct ct_autograd_meta *m, ct_tensor *g) {
  ct__grad_lock(m);
  ct_status st = accumulate_grad_locked(m, g);
  ct__grad_unlock(m);
  return st;
}

/* Shapes a gradient for input k: sums broadcast dims, casts to the input's
 * dtype. Takes g's reference; returns a new one. */
static ct_tensor *fit_to_input(const ct_node *n, int k, ct_tensor *g) {
  const ct_input_meta *in = &n->in[k];
  bool same = g->ndim == in->ndim;
  for (int d = 0; d < in->ndim && same; d++) same = g->shape[d] == in->shape[d];
  if (!same) {
    ct_tensor *r = ct__sum_to_shape(g, in->shape, in->ndim);
    ct__release(g);
    if (!r) return NULL;
    g = r;
  }
  if (g->dtype != in->dtype) {
    ct_tensor *r = ct__cast(g, in->dtype);
    ct__release(g);
    g = r;
  }
  return g;
}

ct_status ct__node_apply(ct_node *n, const ct_tensor *g, ct_tensor **grads, bool retain) {
  ct_bw b = {.node = n, .grad_in = grads, .retain = retain, .cap_tmp = 16};
  b.tmp = b.tmp_small;
  if (n->saved_freed && n->n_saved > 0)
    b.st = ct__fail_status(CT_ERR_STATE,
                           "backward: trying to backward through %s a second time, but its saved "
                           "tensors were freed; pass retain_graph = true to the first backward",
                           n->name);
  else
    n->backward(&b, g);
  for (int i = 0; i < b.n_tmp; i++) ct__release(b.tmp[i]);
  if (b.tmp != b.tmp_small) free(b.tmp);
  if (!retain) ct__node_free_saved(n);
  for (int k = 0; k < n->n_inputs; k++) {
    if (!grads[k]) continue;
    if (b.st != CT_OK || !bw_needs(&b, k)) {
      ct__release(grads[k]);
      grads[k] = NULL;
    } else if (!(grads[k] = fit_to_input(n, k, grads[k]))) {
      b.st = ct_last_error();
    }
  }
  return b.st;
}

static ct_status run_node(ct_node *n, bool retain_graph) {
  ct_tensor *grad_in_small[4] = {0};
  ct_tensor **grad_in =
      n->n_inputs <= 4 ? grad_in_small : ct__ag_calloc((size_t)n->n_inputs * sizeof *grad_in);
  if (!grad_in) return ct__fail_status(CT_ERR_OOM, "backward: out of host memory");
  ct_tensor *g = n->pending;
  n->pending = NULL;
  ct_status st = CT_OK;
  if (n->retain_meta) st = accumulate_grad(n->retain_meta, ct__retain(g));
  if (st == CT_OK)
    st = ct__node_apply(n, g, grad_in, retain_graph);
  else if (!retain_graph)
    ct__node_free_saved(n);
  ct__release(g);
  for (int k = 0; k < n->n_inputs; k++) {
    ct_tensor *gk = grad_in[k];
    grad_in[k] = NULL;
    if (!gk) continue;
    if (st != CT_OK) {
      ct__release(gk);
    } else if (n->next[k].leaf) {
      st = accumulate_grad(n->next[k].leaf->autograd, gk);
    } else {
      st = accumulate(&n->next[k].fn->pending, gk);
    }
  }
  if (grad_in != grad_in_small) free(grad_in);
  return st;
}

ct_status ct_backward(ct_tensor *root, const ct_tensor *grad, const ct_backward_opts *opts) {
  if (!root)
    return ct_last_error() ? ct_last_error()
                           : ct__fail_status(CT_ERR_ARG, "backward: root is NULL");
  bool retain = opts && opts->retain_graph;
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
  if (!ct__requires_grad(root))
    return ct__fail_status(CT_ERR_STATE,
                           "backward: the tensor does not require grad and has no grad_fn (was it "
                           "computed from tensors with requires_grad, outside ct_no_grad?)");
  ct_tensor *g0;
  if (grad) {
    bool same = grad->ndim == root->ndim;
    for (int d = 0; d < root->ndim && same; d++) same = grad->shape[d] == root->shape[d];
    if (!same)
      return ct__fail_status(CT_ERR_SHAPE, "backward: grad of shape %s for a root of shape %s",
                             ct__shape_str(grad, a, sizeof a), ct__shape_str(root, b, sizeof b));
    if (!ct__check_same_device("backward", root, grad)) return ct_last_error();
    g0 = ct__cast(grad, root->dtype);
  } else {
    if (root->numel != 1)
      return ct__fail_status(CT_ERR_SHAPE,
                             "backward: grad can be implicitly created only for one-element "
                             "outputs, and the root has shape %s; pass grad",
                             ct__shape_str(root, a, sizeof a));
    g0 = ct__empty(root->shape, root->ndim, root->dtype, ct__device(root));
    if (g0 && ct__backend_of(g0)->fill(g0, 1.0) != CT_OK) {
      ct__release(g0);
      g0 = NULL;
    }
  }
  if (!g0) return ct_last_error();

  ct_node *top;
  if (!ct__grad_fn_of(root, &top)) {
    ct__release(g0);
    return ct_last_error();
  }
  if (!top) /* the root is a leaf */
    return accumulate_grad(root->autograd, g0);

  /* Discover the graph (deps = -1 marks a node listed) and count, for each
   * node, the edges into it. */
  node_list all = {0}, stack = {0};
  ct_status st = list_push(&stack, top) ? CT_OK : CT_ERR_OOM;
  while (st == CT_OK && stack.count) {
    ct_node *n = stack.items[--stack.count];
    if (n->deps == -1) continue;
    if (!list_push(&all, n)) {
      st = CT_ERR_OOM;
      break;
    }
    n->deps = -1;
    for (int k = 0; k < n->n_inputs && st == CT_OK; k++)
      if (n->next[k].fn && n->next[k].fn->deps != -1 && !list_push(&stack, n->next[k].fn))
        st = CT_ERR_OOM;
  }
  for (int64_t i = 0; i < all.count; i++) all.items[i]->deps = 0;
  for (int64_t i = 0; i < all.count && st == CT_OK; i++)
    for (int k = 0; k < all.items[i]->n_inputs; k++)
      if (all.items[i]->next[k].fn) all.items[i]->next[k].fn->deps++;
  stack.count = 0;
  if (st != CT_OK || !list_push(&stack, top)) {
    for (int64_t i = 0; i < all.count; i++) all.items[i]->deps = 0;
    free(all.items);
    free(stack.items);
    ct__release(g0);
    return ct__fail_status(CT_ERR_OOM, "backward: out of host memory ordering the graph");
  }

  /* Run nodes whose gradients are complete (Kahn's algorithm). */
  ct__release(top->pending);
  top->pending = g0;
  ct_no_grad_begin(); /* gradients themselves are not recorded */
  unsigned autocast = ct__autocast_suspend();
  while (st == CT_OK && stack.count) {
    ct_node *n = stack.items[--stack.count];
    if (n->pending) st = run_node(n, retain);
    for (int k = 0; k < n->n_inputs && st == CT_OK; k++) {
      ct_node *m = n->next[k].fn;
      if (m && --m->deps == 0 && !list_push(&stack, m))
        st = ct__fail_status(CT_ERR_OOM, "backward: out of host memory");
    }
  }
  ct__autocast_resume(autocast);
  ct_no_grad_end();
  /* On failure, drop gradients that were left in flight. */
  for (int64_t i = 0; i < all.count; i++) {
    ct__release(all.items[i]->pending);
    all.items[i]->pending = NULL;
    all.items[i]->deps = 0;
  }
  free(all.items);
  free(stack.items);
  return st;
}
