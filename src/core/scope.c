/* Scopes: per-thread lists of tensors to release at ct_scope_end().
 *
 * A scope owns one reference to each tensor registered in it. ct_free on a
 * scoped tensor removes it from its scope first, so freeing by hand inside a
 * scope is safe too. */
#include <pthread.h>
#include <stdlib.h>

#include "core/internal.h"

typedef struct scope {
  ct_tensor **items;
  int64_t count, capacity;
} scope;

/* The first levels live in a fixed thread-local array, so that opening a scope
 * at depth <= STATIC_SCOPES never allocates: a failed ct_scope_begin always has
 * a real scope around it to collect its tensors (see ghost_depth). */
#define STATIC_SCOPES 8
static _Thread_local scope tls_static[STATIC_SCOPES];
static _Thread_local scope *tls_scopes = NULL; /* stack; [0] is depth 1 */
static _Thread_local int tls_depth;
static _Thread_local int tls_capacity;
/* Scopes opened while the stack could not grow (out of memory), and every
 * scope opened inside them: their tensors go to the innermost real scope,
 * which releases them at its own end; ct_scope_end closes these first. */
static _Thread_local int ghost_depth;

ct_status ct_scope_begin(void) {
  if (!tls_scopes) {
    tls_scopes = tls_static;
    tls_capacity = STATIC_SCOPES;
  }
  if (ghost_depth == 0 && tls_depth == tls_capacity) {
    int cap = 2 * tls_capacity;
    scope *grown = tls_scopes == tls_static
                       ? ct__malloc_array((size_t)cap, sizeof *grown)
                       : ct__realloc_array(tls_scopes, (size_t)cap, sizeof *grown);
    if (grown) {
      if (tls_scopes == tls_static) memcpy(grown, tls_static, sizeof tls_static);
      for (int i = tls_capacity; i < cap; i++) grown[i] = (scope){0};
      tls_scopes = grown;
      tls_capacity = cap;
    }
  }
  if (ghost_depth > 0 || tls_depth == tls_capacity) {
    ghost_depth++;
    return ct__fail_status(CT_ERR_OOM,
                           "scope_begin: out of host memory opening scope %d; its tensors are "
                           "released at the end of the enclosing scope",
                           tls_depth + ghost_depth);
  }
  tls_scopes[tls_depth++].count = 0;
  return CT_OK;
}

/* A thread's lists are freed when it exits (scopes it left open are ended
 * first): a program that runs a pool of short-lived threads, each with its
 * scopes, must not leak them. The key's value only marks a thread that has
 * lists to free. */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void free_thread_scopes(void *unused) {
  while (ghost_depth > 0 || tls_depth > 0) ct_scope_end();
  for (int i = 0; tls_scopes && i < tls_capacity; i++) {
    ct__free(tls_scopes[i].items);
    tls_scopes[i] = (scope){0};
  }
  if (tls_scopes && tls_scopes != tls_static) ct__free(tls_scopes);
  tls_scopes = NULL;
  tls_capacity = 0;
}

static void make_exit_key(void) {
  if (pthread_key_create(&exit_key, free_thread_scopes) != 0) exit_key = (pthread_key_t)-1;
}

/* Room for one more item in s. */
static bool reserve(scope *s) {
  if (s->count < s->capacity) return true;
  if (!s->items) { /* the thread's first list: free its lists at its exit */
    pthread_once(&exit_key_once, make_exit_key);
    if (exit_key != (pthread_key_t)-1) pthread_setspecific(exit_key, (void *)1);
  }
  int64_t cap = s->capacity ? 2 * s->capacity : 64;
  ct_tensor **grown = ct__realloc_array(s->items, (size_t)cap, sizeof *grown);
  if (!grown) return false;
  s->items = grown;
  s->capacity = cap;
  return true;
}

static bool push(scope *s, ct_tensor *t, int depth) {
  if (!reserve(s)) return false;
  t->scope_depth = depth;
  t->scope_slot = s->count;
  s->items[s->count++] = t;
  return true;
}

void ct_scope_end(void) {
  if (ghost_depth > 0) {
    ghost_depth--;
    return;
  }
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
    /* Keep the arrays for the next loop iteration; they are freed when the
     * thread exits (free_thread_scopes). (A long-lived thread reuses them.) */
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

static void unlink_from_scope(ct_tensor *t) {
  if (t->scope_depth > 0 && t->scope_depth <= tls_depth) {
    scope *s = &tls_scopes[t->scope_depth - 1];
    if (t->scope_slot < s->count && s->items[t->scope_slot] == t) s->items[t->scope_slot] = NULL;
  }
  t->scope_depth = 0;
}

ct_tensor *ct_keep(ct_tensor *t) {
  /* Inside a scope that could not be opened, the enclosing scope is the real
   * one that holds t already. */
  if (!t || ghost_depth > 0 || t->scope_depth == 0 || t->scope_depth != tls_depth) return t;
  /* Room first: on failure t stays in this scope (released at its end). */
  if (tls_depth > 1 && !reserve(&tls_scopes[tls_depth - 2]))
    return ct__fail(CT_ERR_OOM, "keep: out of host memory growing the enclosing scope's list");
  unlink_from_scope(t);
  if (tls_depth > 1) push(&tls_scopes[tls_depth - 2], t, tls_depth - 1);
  return t;
}

void ct_free(ct_tensor *t) {
  if (!t) return;
  /* The scope's reference is the one being dropped: forget it there. */
  if (t->scope_depth) unlink_from_scope(t);
  ct__release(t);
}
