/* Optimizers: SGD, Adam, AdamW, RMSprop, Adagrad. Argument checks as torch.optim, per-parameter
 * state (momentum buffers, Adam moments) on the parameter's device, and one
 * backend call per device and step number (the multi-tensor `optimizer_step`
 * slot: one launch on CUDA). Updates run without recording autograd and bump
 * the version counters of what they write. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"

enum { N_STATE = 3 };
static const char *const sgd_state_names[N_STATE] = {"momentum_buffer", NULL, NULL};
static const char *const adam_state_names[N_STATE] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
static const char *const rmsprop_state_names[N_STATE] = {"square_avg", "momentum_buffer",
                                                         "grad_avg"};
static const char *const adagrad_state_names[N_STATE] = {"sum", NULL, NULL};

struct ct_optimizer {
  ct_optim_kind kind;
  const char *name;        /* "SGD", "Adam", "AdamW", "RMSprop", "Adagrad" */
  ct_optim_params hyper;   /* the constructor's options: what added groups default to */
  ct_optim_params *groups; /* n_groups: each parameter group's options (lr changes here);
                              per-call fields filled at step */
  int n_groups;
  int n;
  ct_tensor **params;         /* n references */
  int *group_of;              /* the group of parameter i */
  ct_tensor **state[N_STATE]; /* [k][i]: owned, NULL until created */
  int64_t *steps;             /* Adam(W), Adagrad: updates taken by parameter i */
  double initial_sum;         /* Adagrad: where each sum of squares starts */
  int64_t step_count;
  char **names; /* ct_optimizer_state's names */
  int n_names;
};

static const char *const *state_names(const ct_optimizer *o) {
  switch (o->kind) {
    case CT_OPTIM_SGD:
      return sgd_state_names;
    case CT_OPTIM_RMSPROP:
      return rmsprop_state_names;
    case CT_OPTIM_ADAGRAD:
      return adagrad_state_names;
    default:
      return adam_state_names;
  }
}

/* Which state buffers parameter i needs (by its group's options). */
static bool needs_state(const ct_optimizer *o, int i, int k) {
  const ct_optim_params *h = &o->groups[o->group_of[i]];
  if (o->kind == CT_OPTIM_SGD) return k == 0 && h->momentum != 0;
  if (o->kind == CT_OPTIM_ADAGRAD) return k == 0;
  if (o->kind == CT_OPTIM_RMSPROP)
    return k == 0 || (k == 1 && h->momentum > 0) || (k == 2 && h->centered);
  return k < 2 || (k == 2 && h->amsgrad);
}

/* ---- Construction ---------------------------------------------------------- */

/* Checks params (n of them) for a new group of o: leaf f32/f64 contiguous
 * tensors, none listed twice, here or in an earlier group. */
static bool check_params(const char *what, const ct_optimizer *o, ct_tensor *const *params, int n) {
  if (n < 0 || (n > 0 && !params)) {
    ct__fail(CT_ERR_ARG, "%s: expected an array of parameters, got %d%s", what, n,
             params ? "" : " and NULL");
    return false;
  }
  for (int i = 0; i < n; i++) {
    const ct_tensor *p = params[i];
    if (!p) return ct__fail(CT_ERR_ARG, "%s: parameter %d is NULL", what, i), false;
    if (p->dtype != CT_F32 && p->dtype != CT_F64)
      return ct__fail(CT_ERR_DTYPE,
                      "%s: parameter %d is %s; optimizers update f32 or f64 parameters (keep f32 "
                      "master weights for mixed precision)",
                      what, i, ct_dtype_name(p->dtype)),
             false;
    if (!ct__is_contiguous(p))
      return ct__fail(CT_ERR_ARG, "%s: parameter %d is not contiguous", what, i), false;
    if (!ct_is_leaf(p))
      return ct__fail(CT_ERR_ARG, "%s: parameter %d is not a leaf tensor (made by %s)", what, i,
                      ct_grad_fn_name(p)),
             false;
    for (int j = 0; j < i; j++)
      if (params[j] == p)
        return ct__fail(CT_ERR_ARG, "%s: parameter %d appears twice (also at %d)", what, i, j),
               false;
    for (int j = 0; o && j < o->n; j++)
      if (o->params[j] == p)
        return ct__fail(CT_ERR_ARG,
                        "%s: parameter %d is already in parameter group %d of the optimizer", what,
                        i, o->group_of[j]),
               false;
  }
  return true;
}

/* Room for n parameters and n_groups groups (new slots zeroed). */
static bool reserve(ct_optimizer *o, int n, int n_groups) {
  size_t sz = (size_t)(n ? n : 1), old = (size_t)o->n;
#define CT__GROW(field)                                           \
  do {                                                            \
    void *q_ = ct__realloc_array(o->field, sz, sizeof *o->field); \
    if (!q_) return false;                                        \
    o->field = q_;                                                \
    memset(o->field + old, 0, (sz - old) * sizeof *o->field);     \
  } while (0)
  CT__GROW(params);
  CT__GROW(group_of);
  CT__GROW(steps);
  for (int k = 0; k < N_STATE; k++) CT__GROW(state[k]);
#undef CT__GROW
  ct_optim_params *g = ct__realloc_array(o->groups, (size_t)n_groups, sizeof *g);
  if (!g) return false;
  o->groups = g;
  return true;
}

/* Appends a group of n parameters with options h (checked by the caller). */
static int add_group(const char *what, ct_optimizer *o, ct_tensor *const *params, int n,
                     ct_optim_params h) {
  if (!check_params(what, o, params, n)) return -1;
  if (!reserve(o, o->n + n, o->n_groups + 1))
    return ct__fail(CT_ERR_OOM, "%s: out of host memory", what), -1;
  h.kind = o->kind;
  int g = o->n_groups++;
  o->groups[g] = h;
  for (int i = 0; i < n; i++) {
    o->params[o->n + i] = ct__retain(params[i]);
    o->group_of[o->n + i] = g;
  }
  o->n += n;
  return g;
}

static ct_optimizer *optimizer_new(const char *what, ct_optim_kind kind, ct_tensor *const *params,
                                   int n, ct_optim_params hyper) {
  if (!check_params(what, NULL, params, n)) return NULL;
  ct_optimizer *o = ct__calloc(1, sizeof *o);
  if (!o) return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  static const char *const kind_names[] = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"};
  o->kind = kind;
  o->name = kind_names[kind];
  o->hyper = hyper;
  o->hyper.kind = kind;
  if (add_group(what, o, params, n, o->hyper) < 0) {
    ct_optimizer_free(o);
    return NULL;
  }
  return o;
}

/* Checks that an option is >= 0 (nan fails), as torch's constructors;
 * false with CT_ERR_ARG "<what>: invalid <name> <v>". */
static bool nonneg(const char *what, const char *name, double v) {
  if (v >= 0) return true;
  ct__fail(CT_ERR_ARG, "%s: invalid %s %g", what, name, v);
  return false;
}

ct_optimizer *ct_sgd_new(ct_tensor *const *params, int n, const ct_sgd_opts *opts) {
  if (!opts) return ct__fail(CT_ERR_ARG, "sgd_new: options with the learning rate are required");
  const ct_sgd_opts s = *opts;
  if (!nonneg("sgd_new", "learning rate", s.lr) || !nonneg("sgd_new", "momentum", s.momentum))
    return NULL;
  if (!(s.weight_decay >= 0))
    return ct__fail(CT_ERR_ARG, "sgd_new: invalid weight_decay %g", s.weight_decay);
  if (s.nesterov && (s.momentum <= 0 || s.dampening != 0))
    return ct__fail(CT_ERR_ARG,
                    "sgd_new: nesterov momentum requires a momentum and zero dampening");
  ct_optim_params h = {.lr = s.lr,
                       .momentum = s.momentum,
                       .dampening = s.dampening,
                       .weight_decay = s.weight_decay,
                       .nesterov = s.nesterov};
  return optimizer_new("sgd_new", CT_OPTIM_SGD, params, n, h);
}

ct_adam_opts ct_adam_defaults(void) {
  return (ct_adam_opts){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .as_given = true};
}
ct_adam_opts ct_adamw_defaults(void) {
  ct_adam_opts d = ct_adam_defaults();
  d.weight_decay = 1e-2;
  return d;
}

static ct_optimizer *adam_new(const char *what, ct_optim_kind kind, ct_tensor *const *params, int n,
                              const ct_adam_opts *opts) {
  ct_adam_opts a = opts ? *opts : (ct_adam_opts){0};
  if (!a.as_given) {
    ct_adam_opts d = kind == CT_OPTIM_ADAMW ? ct_adamw_defaults() : ct_adam_defaults();
    if (a.lr == 0) a.lr = d.lr;
    if (a.beta1 == 0) a.beta1 = d.beta1;
    if (a.beta2 == 0) a.beta2 = d.beta2;
    if (a.eps == 0) a.eps = d.eps;
    if (a.weight_decay == 0) a.weight_decay = d.weight_decay;
  }
  if (!nonneg(what, "learning rate", a.lr)) return NULL;
  if (!nonneg(what, "epsilon", a.eps)) return NULL;
  if (!(a.beta1 >= 0 && a.beta1 < 1))
    return ct__fail(CT_ERR_ARG, "%s: invalid beta1 %g (expected [0, 1))", what, a.beta1);
  if (!(a.beta2 >= 0 && a.beta2 < 1))
    return ct__fail(CT_ERR_ARG, "%s: invalid beta2 %g (expected [0, 1))", what, a.beta2);
  if (!nonneg(what, "weight_decay", a.weight_decay)) return NULL;
  ct_optim_params h = {.lr = a.lr,
                       .beta1 = a.beta1,
                       .beta2 = a.beta2,
                       .eps = a.eps,
                       .weight_decay = a.weight_decay,
                       .amsgrad = a.amsgrad};
  return optimizer_new(what, kind, params, n, h);
}

ct_optimizer *ct_adam_new(ct_tensor *const *params, int n, const ct_adam_opts *opts) {
  return adam_new("adam_new", CT_OPTIM_ADAM, params, n, opts);
}
ct_optimizer *ct_adamw_new(ct_tensor *const *params, int n, const ct_adam_opts *opts) {
  return adam_new("adamw_new", CT_OPTIM_ADAMW, params, n, opts);
}

ct_rmsprop_opts ct_rmsprop_defaults(void) {
  return (ct_rmsprop_opts){.lr = 1e-2, .alpha = 0.99, .eps = 1e-8, .as_given = true};
}

ct_optimizer *ct_rmsprop_new(ct_tensor *const *params, int n, const ct_rmsprop_opts *opts) {
  ct_rmsprop_opts r = opts ? *opts : (ct_rmsprop_opts){0};
  if (!r.as_given) {
    ct_rmsprop_opts d = ct_rmsprop_defaults();
    if (r.lr == 0) r.lr = d.lr;
    if (r.alpha == 0) r.alpha = d.alpha;
    if (r.eps == 0) r.eps = d.eps;
  }
  const char *what = "rmsprop_new";
  if (!nonneg(what, "learning rate", r.lr)) return NULL;
  if (!nonneg(what, "epsilon", r.eps)) return NULL;
  if (!nonneg(what, "momentum", r.momentum)) return NULL;
  if (!nonneg(what, "weight_decay", r.weight_decay)) return NULL;
  if (!nonneg(what, "alpha", r.alpha)) return NULL;
  ct_optim_params h = {.lr = r.lr,
                       .alpha = r.alpha,
                       .eps = r.eps,
                       .weight_decay = r.weight_decay,
                       .momentum = r.momentum,
                       .centered = r.centered};
  return optimizer_new(what, CT_OPTIM_RMSPROP, params, n, h);
}

ct_adagrad_opts ct_adagrad_defaults(void) {
  return (ct_adagrad_opts){.lr = 1e-2, .eps = 1e-10, .as_given = true};
}

ct_optimizer *ct_adagrad_new(ct_tensor *const *params, int n, const ct_adagrad_opts *opts) {
  ct_adagrad_opts a = opts ? *opts : (ct_adagrad_opts){0};
  if (!a.as_given) {
    ct_adagrad_opts d = ct_adagrad_defaults();
    if (a.lr == 0) a.lr = d.lr;
    if (a.eps == 0) a.eps = d.eps;
  }
  const char *what = "adagrad_new";
  if (!nonneg(what, "learning rate", a.lr)) return NULL;
  if (!nonneg(what, "lr_decay", a.lr_decay)) return NULL;
  if (!nonneg(what, "weight_decay", a.weight_decay)) return NULL;
  if (!nonneg(what, "initial_accumulator_value", a.initial_accumulator_value)) return NULL;
  if (!nonneg(what, "epsilon", a.eps)) return NULL;
  ct_optim_params h = {
      .lr = a.lr, .lr_decay = a.lr_decay, .weight_decay = a.weight_decay, .eps = a.eps};
  ct_optimizer *o = optimizer_new(what, CT_OPTIM_ADAGRAD, params, n, h);
  if (o) o->initial_sum = a.initial_accumulator_value;
  return o;
}

static void free_names(ct_optimizer *o) {
  for (int i = 0; i < o->n_names; i++) free(o->names[i]);
  free(o->names);
  o->names = NULL;
  o->n_names = 0;
}

void ct_optimizer_free(ct_optimizer *o) {
  if (!o) return;
  for (int i = 0; i < o->n; i++) {
    ct__release(o->params[i]);
    for (int k = 0; k < N_STATE; k++) ct__release(o->state[k][i]);
  }
  for (int k = 0; k < N_STATE; k++) free(o->state[k]);
  free(o->params);
  free(o->group_of);
  free(o->groups);
  free(o->steps);
  free_names(o);
  free(o);
}

/* ---- The update ------------------------------------------------------------- */

/* A tensor like p filled with v, owned by the caller (not in any scope). */
static ct_tensor *filled_state(const ct_tensor *p, double v) {
  ct_tensor *t = ct__empty(p->shape, p->ndim, p->dtype, ct__device(p));
  if (t && ct__backend_of(t)->fill(t, v) != CT_OK) {
    ct__release(t);
    return NULL;
  }
  return t;
}

/* Calls the backend for the parameters in idx[0..m) (one device, one step). */
static ct_status run_group(ct_optimizer *o, const int *idx, int m, ct_tensor **grads,
                           ct_optim_params hp) {
  ct_tensor **buf = ct__malloc(sizeof(ct_tensor *) * (size_t)m * (2 + N_STATE));
  if (!buf) return ct__fail_status(CT_ERR_OOM, "%s.step: out of host memory", o->name);
  ct_tensor **ps = buf, **gs = buf + m, *(*st[N_STATE]) = {buf + 2 * m, buf + 3 * m, buf + 4 * m};
  for (int j = 0; j < m; j++) {
    ps[j] = o->params[idx[j]];
    gs[j] = grads[idx[j]];
    for (int k = 0; k < N_STATE; k++) st[k][j] = o->state[k][idx[j]];
  }
  const ct_backend *be = ct__backend_of(ps[0]);
  ct_status s;
  if (!be || !be->optimizer_step)
    s = ct__fail_status(CT_ERR_UNAVAILABLE, "%s.step: not implemented on %s", o->name,
                        ct_device_name(ct__device(ps[0])));
  else
    s = be->optimizer_step(&hp, ps, gs, st[0], st[1], st[2], m);
  if (s == CT_OK) {
    for (int j = 0; j < m; j++) {
      ct__bump_version(ps[j]);
      for (int k = 0; k < N_STATE; k++)
        if (st[k][j]) ct__bump_version(st[k][j]);
    }
  }
  free(buf);
  return s;
}

/* Gradients of the parameters that have one, contiguous and checked
 * (grads[i] NULL: skip parameter i). New references. */
static ct_status gather_grads(ct_optimizer *o, ct_tensor **grads) {
  for (int i = 0; i < o->n; i++) {
    ct_tensor *p = o->params[i], *g = ct_grad(p);
    if (!g) continue;
    if (g->dtype != p->dtype || !ct_device_equal(ct__device(g), ct__device(p)) ||
        g->numel != p->numel)
      return ct__fail_status(CT_ERR_STATE,
                             "%s.step: the gradient of parameter %d (%s on %s) does "
                             "not match it (%s on %s)",
                             o->name, i, ct_dtype_name(g->dtype), ct_device_name(ct__device(g)),
                             ct_dtype_name(p->dtype), ct_device_name(ct__device(p)));
    if (ct__is_contiguous(g)) {
      grads[i] = ct__retain(g);
    } else {
      grads[i] = ct__empty(p->shape, p->ndim, p->dtype, ct__device(p));
      if (!grads[i]) return ct_last_error();
      ct_status s = ct__backend_of(p)->copy(grads[i], g);
      if (s != CT_OK) return s;
    }
  }
  return CT_OK;
}

/* Creates missing state for parameter i; *fresh tells whether SGD's buffer is new. */
static ct_status ensure_state(ct_optimizer *o, int i, bool *fresh) {
  *fresh = false;
  for (int k = 0; k < N_STATE; k++) {
    if (!needs_state(o, i, k) || o->state[k][i]) continue;
    /* torch's state starts at zero, Adagrad's sum at initial_accumulator_value */
    o->state[k][i] = filled_state(o->params[i], o->kind == CT_OPTIM_ADAGRAD ? o->initial_sum : 0.0);
    if (!o->state[k][i]) return ct_last_error();
    *fresh = true;
  }
  return CT_OK;
}

static ct_status step_impl(ct_optimizer *o, ct_tensor **grads, bool *fresh, bool *done) {
  ct_status s = gather_grads(o, grads);
  if (s != CT_OK) return s;
  for (int i = 0; i < o->n && s == CT_OK; i++)
    if (grads[i]) s = ensure_state(o, i, &fresh[i]);
  if (s != CT_OK) return s;
  int *idx = ct__malloc(sizeof(int) * (size_t)(o->n ? o->n : 1));
  if (!idx) return ct__fail_status(CT_ERR_OOM, "%s.step: out of host memory", o->name);
  /* Calls: same parameter group, same device and same per-call parameters
   * (SGD's first step, Adam's and Adagrad's step number). */
  for (int i = 0; i < o->n && s == CT_OK; i++) {
    if (!grads[i] || done[i]) continue;
    int m = 0;
    for (int j = i; j < o->n; j++) {
      if (!grads[j] || done[j]) continue;
      bool same = o->group_of[j] == o->group_of[i] &&
                  ct_device_equal(ct__device(o->params[j]), ct__device(o->params[i])) &&
                  (o->kind == CT_OPTIM_SGD ? fresh[j] == fresh[i] : o->steps[j] == o->steps[i]);
      if (same) {
        idx[m++] = j;
        done[j] = true;
      }
    }
    ct_optim_params hp = o->groups[o->group_of[i]];
    hp.first_step = fresh[i];
    hp.step = o->steps[i] + 1;
    s = run_group(o, idx, m, grads, hp);
    if (s == CT_OK)
      for (int j = 0; j < m; j++) o->steps[idx[j]]++;
  }
  free(idx);
  return s;
}

ct_status ct_optimizer_step(ct_optimizer *o) {
  if (!o) return ct__fail_status(CT_ERR_ARG, "optimizer_step: optimizer is NULL");
  /* the step counts grow by one: at INT64_MAX the next would overflow (and
   * reach the update as a nonsense step number) */
  bool full = o->step_count == INT64_MAX;
  for (int i = 0; i < o->n && !full; i++) full = o->steps[i] == INT64_MAX;
  if (full)
    return ct__fail_status(CT_ERR_ARG, "%s.step: the step count %lld cannot grow any more", o->name,
                           (long long)o->step_count);
  size_t sz = (size_t)(o->n ? o->n : 1);
  ct_tensor **grads = ct__calloc(sz, sizeof *grads);
  bool *flags = ct__calloc(2 * sz, sizeof *flags);
  if (!grads || !flags) {
    free(grads);
    free(flags);
    return ct__fail_status(CT_ERR_OOM, "%s.step: out of host memory", o->name);
  }
  ct_no_grad_begin();
  ct_status s = step_impl(o, grads, flags, flags + sz);
  ct_no_grad_end();
  for (int i = 0; i < o->n; i++) ct__release(grads[i]);
  free(grads);
  free(flags);
  if (s == CT_OK) o->step_count++;
  return s;
}

void ct_optimizer_zero_grad(ct_optimizer *o) {
  if (!o) return;
  for (int i = 0; i < o->n; i++) ct_set_grad(o->params[i], NULL);
}

double ct_optimizer_get_lr(const ct_optimizer *o) { return o ? o->groups[0].lr : 0.0; }
void ct_optimizer_set_lr(ct_optimizer *o, double lr) {
  for (int g = 0; o && g < o->n_groups; g++) o->groups[g].lr = lr;
}
/* The momentum term of group g's options. */
static double *momentum_of(ct_optimizer *o, int g) {
  return o->kind == CT_OPTIM_ADAM || o->kind == CT_OPTIM_ADAMW ? &o->groups[g].beta1
                                                               : &o->groups[g].momentum;
}
double ct_optimizer_get_momentum(const ct_optimizer *o) {
  if (!o || o->kind == CT_OPTIM_ADAGRAD) return 0.0;
  return *momentum_of((ct_optimizer *)o, 0);
}

/* Checks a momentum term for o (SGD: >= 0, > 0 with nesterov; RMSprop: >= 0;
 * Adam's beta1 in [0, 1)); what names the caller. */
static bool check_momentum(const char *what, const ct_optimizer *o, double m) {
  switch (o->kind) {
    case CT_OPTIM_ADAGRAD:
      return ct__fail(CT_ERR_ARG, "%s: Adagrad has no momentum (got %g)", what, m), false;
    case CT_OPTIM_SGD:
      if (!(m >= 0) || (o->hyper.nesterov && m == 0))
        return ct__fail(CT_ERR_ARG, "%s: SGD: invalid momentum %g%s", what, m,
                        o->hyper.nesterov ? " (nesterov needs a momentum > 0)" : ""),
               false;
      return true;
    case CT_OPTIM_RMSPROP:
      if (!(m >= 0))
        return ct__fail(CT_ERR_ARG, "%s: RMSprop: invalid momentum %g", what, m), false;
      return true;
    default:
      if (!(m >= 0 && m < 1))
        return ct__fail(CT_ERR_ARG, "%s: %s: invalid beta1 %g (expected [0, 1))", what, o->name, m),
               false;
      return true;
  }
}

ct_status ct_optimizer_set_momentum(ct_optimizer *o, double momentum) {
  if (!o) return ct__fail_status(CT_ERR_ARG, "optimizer_set_momentum: optimizer is NULL");
  if (!check_momentum("optimizer_set_momentum", o, momentum)) return CT_ERR_ARG;
  /* SGD and RMSprop make a buffer at the next step if there is none */
  for (int g = 0; g < o->n_groups; g++) *momentum_of(o, g) = momentum;
  return CT_OK;
}

/* ---- Parameter groups ------------------------------------------------------- */

ct_param_group_opts ct_optimizer_group_defaults(const ct_optimizer *o) {
  if (!o) return (ct_param_group_opts){.lr = 0};
  const ct_optim_params *h = &o->hyper;
  bool adam = o->kind == CT_OPTIM_ADAM || o->kind == CT_OPTIM_ADAMW;
  return (ct_param_group_opts){.lr = h->lr,
                               .weight_decay = h->weight_decay,
                               .momentum = adam ? h->beta1 : h->momentum,
                               .beta2 = h->beta2};
}

int ct_optimizer_add_param_group(ct_optimizer *o, ct_tensor *const *params, int n,
                                 const ct_param_group_opts *opts) {
  static const char what[] = "optimizer_add_param_group";
  if (!o) return ct__fail(CT_ERR_ARG, "%s: optimizer is NULL", what), -1;
  ct_param_group_opts g = opts ? *opts : ct_optimizer_group_defaults(o);
  if (!nonneg(what, "learning rate", g.lr)) return -1;
  if (!nonneg(what, "weight_decay", g.weight_decay)) return -1;
  bool adam = o->kind == CT_OPTIM_ADAM || o->kind == CT_OPTIM_ADAMW;
  if (o->kind != CT_OPTIM_ADAGRAD && !check_momentum(what, o, g.momentum)) return -1;
  if (adam && !(g.beta2 >= 0 && g.beta2 < 1))
    return ct__fail(CT_ERR_ARG, "%s: invalid beta2 %g (expected [0, 1))", what, g.beta2), -1;
  ct_optim_params h = o->hyper;
  h.lr = g.lr;
  h.weight_decay = g.weight_decay;
  if (adam) {
    h.beta1 = g.momentum;
    h.beta2 = g.beta2;
  } else if (o->kind != CT_OPTIM_ADAGRAD) {
    h.momentum = g.momentum;
  }
  return add_group(what, o, params, n, h);
}

int ct_optimizer_num_groups(const ct_optimizer *o) { return o ? o->n_groups : 0; }

ct_status ct_optimizer_get_group(const ct_optimizer *o, int group, ct_param_group_opts *out) {
  if (!o || !out || group < 0 || group >= o->n_groups)
    return ct__fail_status(CT_ERR_ARG, "optimizer_get_group: no parameter group %d (of %d)", group,
                           o ? o->n_groups : 0);
  const ct_optim_params *h = &o->groups[group];
  bool adam = o->kind == CT_OPTIM_ADAM || o->kind == CT_OPTIM_ADAMW;
  *out = (ct_param_group_opts){.lr = h->lr,
                               .weight_decay = h->weight_decay,
                               .momentum = adam ? h->beta1 : h->momentum,
                               .beta2 = h->beta2};
  return CT_OK;
}

double ct_optimizer_get_group_lr(const ct_optimizer *o, int group) {
  return o && group >= 0 && group < o->n_groups ? o->groups[group].lr : 0.0;
}

ct_status ct_optimizer_set_group_lr(ct_optimizer *o, int group, double lr) {
  if (!o || group < 0 || group >= o->n_groups)
    return ct__fail_status(CT_ERR_ARG, "optimizer_set_group_lr: no parameter group %d (of %d)",
                           group, o ? o->n_groups : 0);
  o->groups[group].lr = lr;
  return CT_OK;
}

int64_t ct_optimizer_step_count(const ct_optimizer *o) { return o ? o->step_count : 0; }

int ct_optimizer_parameters(const ct_optimizer *o, ct_tensor **params, int max) {
  if (!o) return 0;
  for (int i = 0; i < o->n && i < max && params; i++) params[i] = o->params[i];
  return o->n;
}

/* ---- State for checkpoints ----------------------------------------------------- */

int ct_optimizer_state(const ct_optimizer *co, ct_tensor **tensors, const char **names, int max) {
  if (!co) return 0;
  ct_optimizer *o = (ct_optimizer *)co; /* the name cache is not observable state */
  const char *const *kinds = state_names(o);
  int count = 0;
  for (int i = 0; i < o->n; i++)
    for (int k = 0; k < N_STATE; k++) count += o->state[k][i] != NULL;
  if (names && max > 0) {
    char **fresh = ct__calloc((size_t)count + 1, sizeof *fresh);
    int c = 0;
    bool ok = fresh != NULL;
    for (int i = 0; ok && i < o->n; i++)
      for (int k = 0; ok && k < N_STATE; k++) {
        if (!o->state[k][i]) continue;
        size_t len = strlen(kinds[k]) + 16;
        ok = (fresh[c] = ct__malloc(len)) != NULL;
        if (ok) snprintf(fresh[c++], len, "%d.%s", i, kinds[k]);
      }
    if (!ok) {
      for (int j = 0; fresh && j < c; j++) free(fresh[j]);
      free(fresh);
      ct__fail(CT_ERR_OOM, "optimizer_state: out of host memory");
      return -1;
    }
    bool same = o->names && o->n_names == count;
    for (int j = 0; same && j < count; j++) same = !strcmp(o->names[j], fresh[j]);
    if (same) {
      for (int j = 0; j < count; j++) free(fresh[j]);
      free(fresh);
    } else {
      free_names(o);
      o->names = fresh;
      o->n_names = count;
    }
  }
  int c = 0;
  for (int i = 0; i < o->n; i++)
    for (int k = 0; k < N_STATE; k++) {
      if (!o->state[k][i]) continue;
      if (c < max) {
        if (tensors) tensors[c] = o->state[k][i];
        if (names) names[c] = o->names[c];
      }
      c++;
    }
  return count;
}

/* Parses "<index>.<kind>" into (i, k); false if malformed or unknown. */
static bool parse_state_name(const ct_optimizer *o, const char *name, int *pi, int *pk) {
  if (!name) return false;
  char *end = NULL;
  long i = strtol(name, &end, 10);
  if (end == name || *end != '.' || name[0] == '-' || name[0] == '+' || i < 0 || i >= o->n)
    return false;
  const char *const *kinds = state_names(o);
  for (int k = 0; k < N_STATE; k++)
    if (kinds[k] && needs_state(o, (int)i, k) && !strcmp(end + 1, kinds[k])) {
      *pi = (int)i;
      *pk = k;
      return true;
    }
  return false;
}

ct_status ct_optimizer_load_state(ct_optimizer *o, ct_tensor *const *tensors,
                                  const char *const *names, int n, int64_t step_count) {
  if (!o) return ct__fail_status(CT_ERR_ARG, "optimizer_load_state: optimizer is NULL");
  if (n < 0 || (n > 0 && (!tensors || !names)) || step_count < 0)
    return ct__fail_status(CT_ERR_ARG, "optimizer_load_state: invalid arguments (n %d, step %lld)",
                           n, (long long)step_count);
  if (step_count == INT64_MAX) /* the next step's number would overflow */
    return ct__fail_status(CT_ERR_ARG,
                           "optimizer_load_state: step_count %lld leaves no room for another "
                           "step (at most %lld)",
                           (long long)step_count, (long long)INT64_MAX - 1);
  /* Validate everything before changing anything. */
  unsigned char *seen = ct__calloc((size_t)(o->n ? o->n : 1) * N_STATE, 1);
  if (!seen) return ct__fail_status(CT_ERR_OOM, "optimizer_load_state: out of host memory");
  ct_status s = CT_OK;
  for (int j = 0; j < n && s == CT_OK; j++) {
    int i, k;
    const ct_tensor *t = tensors[j];
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    if (!parse_state_name(o, names[j], &i, &k))
      s = ct__fail_status(CT_ERR_ARG,
                          "optimizer_load_state: '%s' is not a state of this %s "
                          "(expected '<param index>.%s'%s)",
                          names[j] ? names[j] : "(null)", o->name, state_names(o)[0],
                          o->kind == CT_OPTIM_SGD       ? " with momentum"
                          : o->kind == CT_OPTIM_ADAGRAD ? ""
                                                        : " or another of its buffers");
    else if (seen[i * N_STATE + k]++)
      s = ct__fail_status(CT_ERR_ARG, "optimizer_load_state: '%s' given twice", names[j]);
    else if (!t)
      s = ct__fail_status(CT_ERR_ARG, "optimizer_load_state: tensor '%s' is NULL", names[j]);
    else if (t->numel != o->params[i]->numel || t->ndim != o->params[i]->ndim ||
             memcmp(t->shape, o->params[i]->shape, sizeof(int64_t) * (size_t)t->ndim))
      s = ct__fail_status(CT_ERR_SHAPE, "optimizer_load_state: '%s' has shape %s, parameter %d %s",
                          names[j], ct__shape_str(t, a, sizeof a), i,
                          ct__shape_str(o->params[i], b, sizeof b));
  }
  /* Adam, RMSprop and Adagrad need all of a parameter's buffers or none. */
  for (int i = 0; i < o->n && s == CT_OK && o->kind != CT_OPTIM_SGD; i++) {
    int have = 0, want = 0;
    for (int k = 0; k < N_STATE; k++)
      if (needs_state(o, i, k)) {
        want++;
        have += seen[i * N_STATE + k];
      }
    if (have && have != want)
      s = ct__fail_status(CT_ERR_ARG,
                          "optimizer_load_state: parameter %d has %d of its %d state "
                          "tensors",
                          i, have, want);
  }
  ct_no_grad_begin();
  ct_scope_begin();
  for (int j = 0; j < n && s == CT_OK; j++) {
    int i, k;
    parse_state_name(o, names[j], &i, &k);
    if (!o->state[k][i] && !(o->state[k][i] = filled_state(o->params[i], 0.0))) {
      s = ct_last_error();
      break;
    }
    if (!ct_copy_(o->state[k][i], tensors[j])) s = ct_last_error();
  }
  ct_scope_end();
  ct_no_grad_end();
  if (s == CT_OK) {
    o->step_count = step_count;
    for (int i = 0; i < o->n; i++) {
      bool has = false;
      for (int k = 0; k < N_STATE; k++) has = has || o->state[k][i];
      o->steps[i] = has ? step_count : 0;
    }
  }
  free(seen);
  return s;
}
