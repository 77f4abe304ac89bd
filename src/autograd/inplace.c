/* In-place writes under autograd: the checks (torch's rules), the recorded
 * node's hand-over from the op's ct__ag_* call to the write, history
 * rewriting after it, and CopySlices, the base's node when the write went
 * through a view:
 *
 *   base' = base with the view's elements replaced by f(view, others)
 *   d base  = g with the view's elements replaced by d f / d view (of g[view])
 *   d other = d f / d other (of g[view])
 * as torch's CopySlices. */
#include "autograd/node.h"
#include "ops/ops_internal.h"

static bool is_leaf_requiring_grad(const ct_tensor *t) {
  return ct__requires_grad(t) && !t->autograd->grad_fn;
}

bool ct__ag_inplace_begin(ct_inplace *ip, const char *op, ct_tensor *self,
                          const ct_tensor *const *others, int n_others) {
  *ip = (ct_inplace){.op = op, .self = self};
  if (!self || !ct__grad_enabled()) return true;
  bool self_rg = ct__requires_grad(self);
  if (!self_rg && !ct__ag_needed(others, n_others)) return true;
  struct ct_autograd_meta *m = self->autograd;
  if (self_rg && !m->grad_fn)
    return ct__fail(CT_ERR_STATE,
                    "%s: a leaf tensor that requires grad is being used in an in-place operation; "
                    "write inside ct_no_grad_begin/ct_no_grad_end (as optimizers do) or use the "
                    "out-of-place form",
                    op),
           false;
  if (m && m->view_base && is_leaf_requiring_grad(m->view_base))
    return ct__fail(CT_ERR_STATE,
                    "%s: a view of a leaf tensor that requires grad is being used in an in-place "
                    "operation; write inside ct_no_grad_begin/ct_no_grad_end or use the "
                    "out-of-place form",
                    op),
           false;
  if (!self_rg && atomic_load(&self->storage->refcount) > 1 + (m && m->saved_alias))
    return ct__fail(CT_ERR_STATE,
                    "%s: an operand requires grad, and the tensor written shares its memory with "
                    "other tensors (a view, or the base of one) whose history autograd can't "
                    "rewrite; write into a tensor of its own (ct_clone) or use the out-of-place "
                    "form",
                    op),
           false;
  if (!ct_dtype_is_floating(self->dtype)) return true; /* the write itself refuses a float result */
  if (!(m = ct__meta_of(self))) return false;
  m->inplace = ip;
  ip->record = true;
  return true;
}

/* ---- CopySlices ----------------------------------------------------------------- */

typedef struct copy_slices_node {
  ct_view_geometry geo; /* the view written, within the base */
} copy_slices_node;

static void copy_slices_backward(ct_bw *c, const ct_tensor *g) {
  const copy_slices_node *s = CT_BW_STATE(c, copy_slices_node);
  ct_node *fn = c->node->inner;
  /* g laid out as the base; the view's elements go through fn */
  ct_tensor *result, *slice;
  if (!bw_base_layout(c, &s->geo, &c->node->in[0], g, &result, &slice) ||
      !bw_ok(c, ct__copy_into(result, g)))
    return;
  ct_tensor *g_slice = bw_clone(c, slice);
  if (!g_slice) return;
  ct_tensor *grads[4] = {0}; /* in-place ops have at most 4 inputs (copy_slices_new) */
  if (bw_ok(c, ct__node_apply(fn, g_slice, grads, c->retain))) {
    /* the view's elements get d f / d view (none: they were overwritten) */
    ct_status st =
        grads[0] ? ct__copy_into(slice, grads[0]) : ct__backend_of(slice)->fill(slice, 0.0);
    if (bw_ok(c, st)) bw_set(c, 0, result);
  }
  for (int k = 1; k < fn->n_inputs; k++) {
    if (c->st == CT_OK)
      c->grad_in[k] = grads[k];
    else
      ct__release(grads[k]);
  }
  ct__release(grads[0]);
}

/* The base's node for fn, the in-place op on `view` (input 0 of fn): input
 * 0 is the base's history, inputs 1.. are fn's other inputs. Takes fn. */
static ct_node *copy_slices_new(ct_tensor *base, const ct_tensor *view, ct_node *fn) {
  const ct_tensor *ins[4] = {base};
  CT_ASSERT(fn->n_inputs <= 4);
  ct_node *c = CT_NODE_NEW(copy_slices_node, "CopySlices", copy_slices_backward, fn->n_inputs, ins);
  if (!c) {
    ct__node_release(fn);
    return NULL;
  }
  ct__view_geometry_of(&CT_NODE_STATE(c, copy_slices_node)->geo, view, base);
  for (int k = 1; k < fn->n_inputs; k++) {
    c->in[k] = fn->in[k];
    c->next[k] = fn->next[k];
    if (c->next[k].fn) atomic_fetch_add(&c->next[k].fn->refcount, 1);
    ct__retain(c->next[k].leaf);
  }
  c->inner = fn;
  return c;
}

ct_tensor *ct__inplace_take(ct_inplace *ip, ct_node *n) {
  if (!n || n->broken) {
    ct__node_release(n);
    ip->failed = true;
    return NULL;
  }
  struct ct_autograd_meta *m = ip->self->autograd;
  if (!m->view_base) {
    ip->node = n;
    return ip->self;
  }
  /* a view: built now, so that nothing can fail after the write */
  ct_node *c = copy_slices_new(m->view_base, ip->self, n);
  ct_node *v = c ? ct__as_strided_node(ip->self, m->view_base, (ct_edge){.fn = c}) : NULL;
  if (!v) {
    ct__node_release(c);
    ip->failed = true;
    return NULL;
  }
  ip->base_node = c;
  ip->node = v;
  return ip->self;
}

ct_tensor *ct__ag_inplace_end(ct_inplace *ip, ct_tensor *written) {
  struct ct_autograd_meta *m = ip->self ? ip->self->autograd : NULL;
  if (m && m->inplace == ip) m->inplace = NULL;
  ct__release(ip->original); /* the node holds its own reference if it saved it */
  ip->original = NULL;
  if (!written || !ip->node) {
    ct__node_release(ip->node);
    ct__node_release(ip->base_node);
    ip->node = ip->base_node = NULL;
    return written;
  }
  /* the node's saved output is self after the write */
  ct_node *op_node = ip->base_node ? ip->base_node->inner : ip->node;
  for (int i = 0; i < op_node->n_saved; i++)
    if (op_node->saved[i]->is_output)
      op_node->saved[i]->version = atomic_load(&ip->self->storage->version);
  if (ip->base_node) {
    ct__meta_set_grad_fn(m->view_base->autograd, ip->base_node);
    m->view_base_fn = ip->base_node;
  }
  ct__meta_set_grad_fn(m, ip->node);
  ip->node = ip->base_node = NULL;
  return written;
}

bool ct__ag_out_allowed(const char *op, const ct_tensor *out, const ct_tensor *const *inputs,
                        int n) {
  if (!ct__grad_enabled()) return true;
  const char *which = ct__requires_grad(out) ? "out" : ct__ag_needed(inputs, n) ? "an input" : NULL;
  if (!which) return true;
  return ct__fail(CT_ERR_STATE,
                  "%s: functions with out= arguments don't support automatic differentiation, but "
                  "%s requires grad; use the out-of-place form, or write inside "
                  "ct_no_grad_begin/ct_no_grad_end",
                  op, which),
         false;
}
