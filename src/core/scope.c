/* Scopes: per-thread lists of tensors to release at ct_scope_end().
 *
 * A scope owns one reference to each tensor registered in it. ct_free on a
 * scoped tensor removes it from its scope first, so freeing by hand inside a
 * scope is safe too. */
#include <stdlib.h>

#include "core/internal.h"

typedef struct scope {
  ct_tensor **items;
  int64_t count, capacity;
} scope;

static _Thread_local scope *tls_scopes;  /* stack; [0] is depth 1 */
static _Thread_local int tls_depth;
static _Thread_local int tls_capacity;

void ct_scope_begin(void) {
  if (tls_depth == tls_capacity) {
    int cap = tls_capacity ? 2 * tls_capacity : 8;
    scope *grown = ct__realloc(tls_scopes, (size_t)cap * sizeof *grown);
    CT_ASSERT(grown != NULL);
    for (int i = tls_capacity; i < cap; i++) grown[i] = (scope){0};
    tls_scopes = grown;
    tls_capacity = cap;
  }
  tls_scopes[tls_depth++].count = 0;
}

static bool push(scope *s, ct_tensor *t, int depth) {
  if (s->count == s->capacity) {
    int64_t cap = s->capacity ? 2 * s->capacity : 64;
    ct_tensor **grown = ct__realloc(s->items, (size_t)cap * sizeof *grown);
    if (!grown) return false;
    s->items = grown;
    s->capacity = cap;
  }
  t->scope_depth = depth;
  t->scope_slot = s->count;
  s->items[s->count++] = t;
  return true;
}

void ct_scope_end(void) {
  if (tls_depth == 0) return; /* unbalanced end: nothing to release */
  scope *s = &tls_scopes[tls_depth - 1];
  /* Release in reverse creation order: later tensors may hold earlier ones. */
  for (int64_t i = s->count - 1; i >= 0; i--) {
    ct_tensor *t = s->items[i];
    if (!t) continue;
    t->scope_depth = 0;
    ct__release(t);
  }
  s->count = 0;
  tls_depth--;
  if (tls_depth == 0) {
    /* Keep the arrays for the next loop iteration; they are freed at exit by
     * the OS. (A long-lived thread reuses them.) */
  }
}

ct_tensor *ct__track(ct_tensor *t) {
  if (!t || tls_depth == 0) return t;
  if (!push(&tls_scopes[tls_depth - 1], t, tls_depth)) {
    ct__release(t);
    return ct__fail(CT_ERR_OOM, "out of host memory growing the scope list");
  }
  return t;
}

ct_tensor *ct__track_distinct(ct_tensor *result, const ct_tensor *input) {
  if (result && result == input) {
    ct_tensor *alias = ct__view_of(result, result->dtype, result->shape, result->strides,
                                   result->ndim, result->offset);
    ct__release(result);
    result = alias;
  }
  return ct__track(result);
}

static void unlink_from_scope(ct_tensor *t) {
  if (t->scope_depth > 0 && t->scope_depth <= tls_depth) {
    scope *s = &tls_scopes[t->scope_depth - 1];
    if (t->scope_slot < s->count && s->items[t->scope_slot] == t) s->items[t->scope_slot] = NULL;
  }
  t->scope_depth = 0;
}

ct_tensor *ct_keep(ct_tensor *t) {
  if (!t || t->scope_depth == 0 || t->scope_depth != tls_depth) return t;
  unlink_from_scope(t);
  if (tls_depth > 1 && !push(&tls_scopes[tls_depth - 2], t, tls_depth - 1))
    return ct__fail(CT_ERR_OOM, "out of host memory growing the scope list");
  return t;
}

void ct_free(ct_tensor *t) {
  if (!t) return;
  /* The scope's reference is the one being dropped: forget it there. */
  if (t->scope_depth) unlink_from_scope(t);
  ct__release(t);
}
