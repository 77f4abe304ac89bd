/* The module core: registration of parameters, buffers and children under
 * PyTorch's names, recursion (parameters, state_dict order, lookup by dotted
 * name), device/dtype moves that keep tensor handles, train/eval, zero_grad.
 *
 * A module owns one reference to each of its tensors and its children. Full
 * dotted names are built on demand into a cache owned by the module the
 * listing was asked of; the cache is rebuilt only when the names change, so
 * names returned earlier stay valid while the module's structure is unchanged. */
#include <pthread.h>
#include <stdlib.h>

#include "nn/module_internal.h"

/* Guards the name caches: listing names is a read of the module, which
 * threads sharing it for inference may do at the same time. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct entry {
  char *name;
  ct_tensor *t;
} entry;

typedef struct child {
  char *name;
  ct_module *m;
} child;

typedef struct name_cache {
  char **names;
  int n;
} name_cache;

struct ct_module {
  const ct_module_vtable *vt;
  void *self;
  bool builtin; /* self is a built-in's configuration, hidden from ct_module_self */
  bool training;
  entry *params;
  int n_params, cap_params;
  entry *buffers;
  int n_buffers, cap_buffers;
  child *children;
  int n_children, cap_children;
  name_cache param_names, state_names;
};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = ct__malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- Construction and destruction ---------------------------------------- */

static ct_module *module_new(const ct_module_vtable *vt, void *self, bool builtin) {
  if (!vt || !vt->forward)
    return ct__fail(CT_ERR_ARG, "module_new: the vtable %s", vt ? "has no forward" : "is NULL");
  ct_module *m = ct__calloc(1, sizeof *m);
  if (!m) return ct__fail(CT_ERR_OOM, "module_new: out of host memory");
  m->vt = vt;
  m->self = self;
  m->builtin = builtin;
  m->training = true;
  return m;
}

ct_module *ct_module_new(const ct_module_vtable *vtable, void *self) {
  return module_new(vtable, self, false);
}
ct_module *ct__module_new_builtin(const ct_module_vtable *vtable, void *impl) {
  ct_module *m = module_new(vtable, impl, true);
  if (!m && vtable && vtable->destroy) vtable->destroy(impl);
  return m;
}
void *ct__module_impl(const ct_module *m) { return m ? m->self : NULL; }

static void cache_clear(name_cache *c) {
  for (int i = 0; i < c->n; i++) free(c->names[i]);
  free(c->names);
  c->names = NULL;
  c->n = 0;
}

void ct_module_free(ct_module *m) {
  if (!m) return;
  for (int i = 0; i < m->n_params; i++) {
    free(m->params[i].name);
    ct__release(m->params[i].t);
  }
  for (int i = 0; i < m->n_buffers; i++) {
    free(m->buffers[i].name);
    ct__release(m->buffers[i].t);
  }
  for (int i = 0; i < m->n_children; i++) {
    free(m->children[i].name);
    ct_module_free(m->children[i].m);
  }
  free(m->params);
  free(m->buffers);
  free(m->children);
  cache_clear(&m->param_names);
  cache_clear(&m->state_names);
  if (m->vt->destroy) m->vt->destroy(m->self);
  free(m);
}

/* ---- Registration ---------------------------------------------------------- */

static bool name_taken(const ct_module *m, const char *name) {
  for (int i = 0; i < m->n_params; i++)
    if (!strcmp(m->params[i].name, name)) return true;
  for (int i = 0; i < m->n_buffers; i++)
    if (!strcmp(m->buffers[i].name, name)) return true;
  for (int i = 0; i < m->n_children; i++)
    if (!strcmp(m->children[i].name, name)) return true;
  return false;
}

static bool check_name(const char *what, const ct_module *m, const char *name) {
  if (!name || !*name) {
    ct__fail(CT_ERR_ARG, "%s: the name is empty", what);
    return false;
  }
  if (strchr(name, '.')) {
    ct__fail(CT_ERR_ARG, "%s: name '%s' contains '.'", what, name);
    return false;
  }
  if (name_taken(m, name)) {
    ct__fail(CT_ERR_ARG, "%s: '%s' is already registered in this %s", what, name,
             ct_module_type_name(m));
    return false;
  }
  return true;
}

/* Grows an array of `size`-byte items to hold one more. */
static bool grow(void **items, int *cap, int count, size_t size) {
  if (count < *cap) return true;
  int n = *cap ? 2 * *cap : 4;
  void *p = ct__realloc(*items, (size_t)n * size);
  if (!p) return false;
  *items = p;
  *cap = n;
  return true;
}

/* Takes the caller's reference to t: if a scope owns it, the scope forgets it. */
static ct_tensor *adopt(ct_tensor *t) {
  ct__retain(t);
  ct_free(t);
  return t;
}

static ct_tensor *add_tensor(const char *what, ct_module *m, const char *name, ct_tensor *t,
                             bool is_param) {
  if (!t) return NULL; /* keeps the error of whatever made it */
  adopt(t);
  if (!m) {
    ct__release(t);
    return ct__fail(CT_ERR_ARG, "%s: module is NULL", what);
  }
  if (!check_name(what, m, name)) {
    ct__release(t);
    return NULL;
  }
  if (is_param) {
    if (!ct_is_leaf(t)) {
      ct__fail(CT_ERR_ARG, "%s: '%s' is not a leaf tensor (made by %s); register ct_detach of it",
               what, name, ct_grad_fn_name(t));
      ct__release(t);
      return NULL;
    }
    if (!ct_requires_grad_(t, true)) {
      ct__release(t);
      return NULL;
    }
  }
  entry **items = is_param ? &m->params : &m->buffers;
  int *count = is_param ? &m->n_params : &m->n_buffers;
  int *cap = is_param ? &m->cap_params : &m->cap_buffers;
  char *copy = dup_str(name);
  if (!copy || !grow((void **)items, cap, *count, sizeof(entry))) {
    free(copy);
    ct__release(t);
    return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  }
  (*items)[(*count)++] = (entry){copy, t};
  return t;
}

ct_tensor *ct_module_register_parameter(ct_module *m, const char *name, ct_tensor *param) {
  return add_tensor("register_parameter", m, name, param, true);
}

ct_tensor *ct_module_register_buffer(ct_module *m, const char *name, ct_tensor *buffer) {
  return add_tensor("register_buffer", m, name, buffer, false);
}

ct_module *ct_module_register_module(ct_module *m, const char *name, ct_module *c) {
  if (!c) return NULL;
  if (!m) {
    ct_module_free(c);
    return ct__fail(CT_ERR_ARG, "register_module: module is NULL");
  }
  if (c == m) return ct__fail(CT_ERR_ARG, "register_module: a module can't be its own child");
  if (!check_name("register_module", m, name)) {
    ct_module_free(c);
    return NULL;
  }
  char *copy = dup_str(name);
  if (!copy || !grow((void **)&m->children, &m->cap_children, m->n_children, sizeof(child))) {
    free(copy);
    ct_module_free(c);
    return ct__fail(CT_ERR_OOM, "register_module: out of host memory");
  }
  c->training = m->training;
  m->children[m->n_children++] = (child){copy, c};
  return c;
}

/* ---- Queries ------------------------------------------------------------- */

/* The forward runs in a scope of its own, which releases its intermediates
 * when it returns; the output alone leaves it, into the caller's scope (or
 * to the caller, untracked, outside any scope). Without this a user-written
 * forward called outside a scope would leak every intermediate. An output
 * the scope does not own (x itself, a parameter, a tensor the forward kept)
 * is handed back as the forward made it. Where the scope could not be
 * opened (no host memory beyond the first levels), its tensors belong to
 * the caller's scope already, and the output stays there. */
ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *x) {
  if (!m) return ct__fail(CT_ERR_ARG, "module_forward: module is NULL");
  if (!x) return NULL;
  bool own_scope = ct_scope_begin() == CT_OK;
  ct_tensor *y = m->vt->forward(m, m->self, x);
  if (y && own_scope) ct_keep(y);
  ct_scope_end();
  return y;
}

void *ct_module_self(ct_module *m) { return m && !m->builtin ? m->self : NULL; }

const char *ct_module_type_name(const ct_module *m) {
  if (!m) return NULL;
  return m->vt->type_name ? m->vt->type_name : "Module";
}

ct_module *ct_module_child(const ct_module *m, const char *name) {
  if (!m || !name) return NULL;
  for (int i = 0; i < m->n_children; i++)
    if (!strcmp(m->children[i].name, name)) return m->children[i].m;
  return NULL;
}

const ct_module_vtable *ct__module_vtable(const ct_module *m) { return m ? m->vt : NULL; }
int ct__module_n_children(const ct_module *m) { return m ? m->n_children : 0; }
ct_module *ct__module_child_at(const ct_module *m, int i) {
  return m && i >= 0 && i < m->n_children ? m->children[i].m : NULL;
}

ct_tensor *ct_module_get(const ct_module *m, const char *full_name) {
  if (!m || !full_name) return NULL;
  for (int i = 0; i < m->n_params; i++)
    if (!strcmp(m->params[i].name, full_name)) return m->params[i].t;
  for (int i = 0; i < m->n_buffers; i++)
    if (!strcmp(m->buffers[i].name, full_name)) return m->buffers[i].t;
  const char *dot = strchr(full_name, '.');
  if (!dot) return NULL;
  size_t len = (size_t)(dot - full_name);
  for (int i = 0; i < m->n_children; i++)
    if (strlen(m->children[i].name) == len && !strncmp(m->children[i].name, full_name, len))
      return ct_module_get(m->children[i].m, dot + 1);
  return NULL;
}

/* ---- Recursive listings ----------------------------------------------------- */

/* Visits tensors in PyTorch's order: a module's parameters, then (with
 * buffers) its buffers, then each child's, depth first. */
typedef struct visit {
  ct_tensor **tensors; /* filled up to max */
  int max;
  char **names; /* full names, malloc'd, up to names_cap; NULL when not wanted */
  int names_cap;
  int count;
  bool failed; /* out of memory building a name */
  /* parameters only: a tensor registered more than once (weight tying) is
   * listed at its first place, as torch's parameters() */
  const ct_module *root;
  int pos; /* parameters visited, repeats included */
} visit;

/* The place of t's first registration among m's parameters in walk order,
 * counting from *pos; -1 if absent. */
static int first_param_pos(const ct_module *m, const ct_tensor *t, int *pos) {
  for (int i = 0; i < m->n_params; i++, (*pos)++)
    if (m->params[i].t == t) return *pos;
  for (int i = 0; i < m->n_children; i++) {
    int r = first_param_pos(m->children[i].m, t, pos);
    if (r >= 0) return r;
  }
  return -1;
}

static char *join(const char *a, const char *b, const char *sep) {
  size_t la = strlen(a), lb = strlen(b), ls = strlen(sep);
  char *s = ct__malloc(la + lb + ls + 1);
  if (s) {
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, sep, ls + 1);
  }
  return s;
}

static void visit_add(visit *v, const char *prefix, const char *name, ct_tensor *t) {
  if (v->root) {
    int pos = 0, here = v->pos++;
    if (first_param_pos(v->root, t, &pos) < here) return;
  }
  if (v->names && v->count < v->names_cap && !v->failed) {
    v->names[v->count] = join(prefix, name, "");
    if (!v->names[v->count]) v->failed = true;
  }
  if (v->tensors && v->count < v->max) v->tensors[v->count] = t;
  v->count++;
}

/* Prefixes are built only when names are wanted, so counting never allocates. */
static void walk(const ct_module *m, const char *prefix, bool buffers, visit *v) {
  for (int i = 0; i < m->n_params; i++) visit_add(v, prefix, m->params[i].name, m->params[i].t);
  if (buffers)
    for (int i = 0; i < m->n_buffers; i++)
      visit_add(v, prefix, m->buffers[i].name, m->buffers[i].t);
  for (int i = 0; i < m->n_children && !v->failed; i++) {
    char *sub = v->names ? join(prefix, m->children[i].name, ".") : NULL;
    if (v->names && !sub) {
      v->failed = true;
      return;
    }
    walk(m->children[i].m, sub ? sub : "", buffers, v);
    ct__free(sub);
  }
}

static void free_names(char **names, int n) {
  for (int i = 0; i < n; i++) ct__free(names[i]);
  ct__free(names);
}

/* Lists m's tensors; names (if wanted) point into m's cache. Returns the
 * total count, or -1 on out of memory (error recorded; nothing written to
 * names). */
static int list_tensors(const ct_module *cm, bool buffers, ct_tensor **tensors, const char **names,
                        int max) {
  ct_module *m = (ct_module *)cm; /* the name cache is not observable state */
  if (max < 0) max = 0;
  visit counter = {.tensors = tensors, .max = max, .root = buffers ? NULL : m};
  walk(m, "", buffers, &counter);
  if (!names || max == 0) return counter.count;
  name_cache *cache = buffers ? &m->state_names : &m->param_names;
  visit v = {.names = ct__calloc((size_t)counter.count + 1, sizeof(char *)),
             .names_cap = counter.count,
             .root = buffers ? NULL : m};
  if (!v.names) {
    ct__fail(CT_ERR_OOM, "module: out of host memory listing names");
    return -1;
  }
  walk(m, "", buffers, &v);
  int built = v.count < v.names_cap ? v.count : v.names_cap;
  if (v.failed || v.count != counter.count) {
    free_names(v.names, built);
    ct__fail(CT_ERR_OOM, "module: out of host memory listing names");
    return -1;
  }
  pthread_mutex_lock(&names_lock);
  bool same = cache->names && cache->n == v.count;
  for (int i = 0; same && i < v.count; i++) same = !strcmp(cache->names[i], v.names[i]);
  if (same) {
    free_names(v.names, v.count);
  } else {
    cache_clear(cache);
    cache->names = v.names;
    cache->n = v.count;
  }
  for (int i = 0; i < counter.count && i < max; i++) names[i] = cache->names[i];
  pthread_mutex_unlock(&names_lock);
  return counter.count;
}

int ct_module_parameters(const ct_module *m, ct_tensor **params, const char **names, int max) {
  if (!m) return 0;
  return list_tensors(m, false, params, names, max);
}

int ct_module_state(const ct_module *m, ct_tensor **tensors, const char **names, int max) {
  if (!m) return 0;
  return list_tensors(m, true, tensors, names, max);
}

/* ---- Weight tying ------------------------------------------------------------ */

ct_tensor *ct__module_param(const ct_module *m, const char *name) {
  for (int i = 0; m && i < m->n_params; i++)
    if (!strcmp(m->params[i].name, name)) return m->params[i].t;
  return NULL;
}

ct_status ct_module_tie_parameter(ct_module *m, const char *full_name, ct_tensor *shared) {
  static const char what[] = "module_tie_parameter";
  if (!m || !full_name || !shared)
    return ct__fail_status(CT_ERR_ARG, "%s: module, name and tensor are required", what);
  /* the module that owns the parameter: follow the dotted prefix */
  ct_module *owner = m;
  const char *name = full_name, *dot;
  while (owner && (dot = strchr(name, '.'))) {
    ct_module *next = NULL;
    size_t len = (size_t)(dot - name);
    for (int i = 0; i < owner->n_children && !next; i++)
      if (strlen(owner->children[i].name) == len && !strncmp(owner->children[i].name, name, len))
        next = owner->children[i].m;
    owner = next;
    name = dot + 1;
  }
  entry *e = NULL;
  for (int i = 0; owner && i < owner->n_params && !e; i++)
    if (!strcmp(owner->params[i].name, name)) e = &owner->params[i];
  if (!e)
    return ct__fail_status(CT_ERR_ARG, "%s: %s has no parameter '%s'", what, ct_module_type_name(m),
                           full_name);
  if (e->t == shared) return CT_OK;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX];
  bool same_shape = e->t->ndim == shared->ndim;
  for (int d = 0; same_shape && d < shared->ndim; d++)
    same_shape = e->t->shape[d] == shared->shape[d];
  if (!same_shape)
    return ct__fail_status(CT_ERR_SHAPE, "%s: '%s' has shape %s, the shared tensor %s", what,
                           full_name, ct__shape_str(e->t, s1, sizeof s1),
                           ct__shape_str(shared, s2, sizeof s2));
  if (e->t->dtype != shared->dtype)
    return ct__fail_status(CT_ERR_DTYPE, "%s: '%s' is %s, the shared tensor %s", what, full_name,
                           ct_dtype_name(e->t->dtype), ct_dtype_name(shared->dtype));
  if (!ct__check_same_device(what, e->t, shared)) return ct_last_error();
  if (!ct_is_leaf(shared) || !ct_requires_grad(shared))
    return ct__fail_status(
        CT_ERR_ARG, "%s: the tensor shared as '%s' must be a leaf requiring grad (a parameter)",
        what, full_name);
  ct__retain(shared);
  ct__release(e->t);
  e->t = shared;
  return CT_OK;
}

/* ---- Moves that keep handles ---------------------------------------------- */

/* Makes dst a view of src's data (storage, dtype, geometry), keeping dst's
 * handle, reference count, scope slot and autograd state. */
static void tensor_set_data(ct_tensor *dst, const ct_tensor *src) {
  ct__storage_retain(src->storage);
  ct_storage *old = dst->storage;
  dst->storage = src->storage;
  dst->dtype = src->dtype;
  dst->ndim = src->ndim;
  memcpy(dst->shape, src->shape, sizeof dst->shape);
  memcpy(dst->strides, src->strides, sizeof dst->strides);
  dst->offset = src->offset;
  dst->numel = src->numel;
  ct__storage_release(old);
}

/* t converted to (device, dtype): a new tracked tensor (maybe t itself aliased). */
static ct_tensor *converted(const ct_tensor *t, ct_device device, ct_dtype dtype) {
  ct_tensor *c = ct_cast(t, dtype);
  ct_tensor *r = ct_to(c, device, NULL);
  ct_free(c);
  return r;
}

/* Moves one tensor (and its gradient) in place. dtype -1: keep. */
static ct_status move_tensor(ct_tensor *t, ct_device device, int dtype) {
  ct_dtype to_dtype = (dtype >= 0 && ct_dtype_is_floating(t->dtype)) ? (ct_dtype)dtype : t->dtype;
  if (ct_device_equal(ct__device(t), device) && to_dtype == t->dtype) return CT_OK;
  ct_tensor *moved = converted(t, device, to_dtype);
  if (!moved) return ct_last_error();
  ct_tensor *g = ct_grad(t);
  ct_tensor *moved_grad = g ? converted(g, device, to_dtype) : NULL;
  if (g && !moved_grad) {
    ct_free(moved);
    return ct_last_error();
  }
  ct_set_grad(t, NULL);
  tensor_set_data(t, moved);
  ct_free(moved);
  ct_status st = moved_grad ? ct_set_grad(t, moved_grad) : CT_OK;
  ct_free(moved_grad);
  return st;
}

/* Moves every tensor of m; device NULL keeps each tensor's device. */
static ct_status move_all(const char *what, ct_module *m, const ct_device *device, int dtype) {
  if (!m) return ct__fail_status(CT_ERR_ARG, "%s: module is NULL", what);
  int n = ct_module_state(m, NULL, NULL, 0);
  ct_tensor **ts = ct__malloc(sizeof *ts * (size_t)(n ? n : 1));
  if (!ts) return ct__fail_status(CT_ERR_OOM, "%s: out of host memory", what);
  ct_module_state(m, ts, NULL, n);
  ct_status st = CT_OK;
  ct_no_grad_begin();
  ct_scope_begin();
  for (int i = 0; i < n && st == CT_OK; i++)
    st = move_tensor(ts[i], device ? *device : ct__device(ts[i]), dtype);
  ct_scope_end();
  ct_no_grad_end();
  free(ts);
  return st;
}

ct_status ct_module_to(ct_module *m, ct_device device) {
  return move_all("module_to", m, &device, -1);
}

ct_status ct_module_to_dtype(ct_module *m, ct_dtype dtype) {
  if ((unsigned)dtype >= CT_DTYPE_COUNT || !ct_dtype_is_floating(dtype))
    return ct__fail_status(CT_ERR_DTYPE, "module_to_dtype: expected a floating dtype, got %s",
                           (unsigned)dtype < CT_DTYPE_COUNT ? ct_dtype_name(dtype) : "invalid");
  return move_all("module_to_dtype", m, NULL, (int)dtype);
}

/* ---- Modes and gradients ---------------------------------------------------- */

void ct_module_train(ct_module *m, bool training) {
  if (!m) return;
  m->training = training;
  for (int i = 0; i < m->n_children; i++) ct_module_train(m->children[i].m, training);
}

bool ct_module_is_training(const ct_module *m) { return m && m->training; }

void ct_module_zero_grad(ct_module *m) {
  if (!m) return;
  for (int i = 0; i < m->n_params; i++) ct_set_grad(m->params[i].t, NULL);
  for (int i = 0; i < m->n_children; i++) ct_module_zero_grad(m->children[i].m);
}

bool ct__module_opts(const char *what, const ct_module_opts *opts, ct_module_opts *out) {
  *out = opts ? *opts : (ct_module_opts){0};
  if ((unsigned)out->dtype >= CT_DTYPE_COUNT || !ct_dtype_is_floating(out->dtype)) {
    ct__fail(CT_ERR_DTYPE, "%s: parameters need a floating dtype, got %s", what,
             (unsigned)out->dtype < CT_DTYPE_COUNT ? ct_dtype_name(out->dtype) : "invalid");
    return false;
  }
  return true;
}
