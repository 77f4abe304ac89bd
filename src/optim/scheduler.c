/* Learning-rate schedules, as torch.optim.lr_scheduler: StepLR,
 * CosineAnnealingLR and LinearLR with torch's recursive ("chainable") update
 * on ct_lr_scheduler_step and its closed form on ct_lr_scheduler_set_epoch,
 * so the lr sequence matches PyTorch's; OneCycleLR (closed form only, as in
 * torch); SequentialLR over other schedules; ReduceLROnPlateau, driven by a
 * metric. A scheduler borrows the optimizer, which must outlive it, and
 * changes the lr of each parameter group the optimizer had when the schedule
 * was made, from that group's own base lr (torch's base_lrs). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/internal.h"

typedef enum {
  SCHED_STEP,
  SCHED_COSINE,
  SCHED_LINEAR,
  SCHED_ONE_CYCLE,
  SCHED_PLATEAU,
  SCHED_SEQUENTIAL
} sched_kind;

struct ct_lr_scheduler {
  sched_kind kind;
  const char *name;
  ct_optimizer *opt;
  int n_groups;
  double *base_lrs;                /* n_groups: torch's initial_lr of each group */
  int64_t epoch;                   /* torch's last_epoch: 0 after construction */
  int64_t created;                 /* creation order (see ct_sequential_lr_new) */
  int64_t step_size;               /* StepLR */
  double gamma;                    /* StepLR */
  int64_t t_max;                   /* cosine */
  double eta_min;                  /* cosine */
  double start_factor, end_factor; /* LinearLR */
  int64_t total_iters;             /* LinearLR */
  ct_one_cycle_opts cycle;         /* OneCycleLR, defaults filled in */
  double cycle_min_lr;             /* OneCycleLR: initial lr / final_div_factor */
  ct_plateau_opts plateau;         /* ReduceLROnPlateau */
  double best;
  int64_t bad_epochs, cooldown_left;
  ct_lr_scheduler **children; /* SequentialLR (owned) */
  int64_t *milestones;
  int n_children;
};

static ct_lr_scheduler *sched_new(const char *what, sched_kind kind, ct_optimizer *opt) {
  static atomic_llong made;
  if (!opt) return ct__fail(CT_ERR_ARG, "%s: optimizer is NULL", what);
  ct_lr_scheduler *s = ct__calloc(1, sizeof *s);
  int ng = ct_optimizer_num_groups(opt);
  double *base = ct__calloc((size_t)(ng ? ng : 1), sizeof *base);
  if (!s || !base) {
    free(s), free(base);
    return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  }
  s->kind = kind;
  s->name = what;
  s->opt = opt;
  s->n_groups = ng;
  s->base_lrs = base;
  for (int g = 0; g < ng; g++) base[g] = ct_optimizer_get_group_lr(opt, g);
  s->created = atomic_fetch_add(&made, 1);
  return s;
}

ct_lr_scheduler *ct_step_lr_new(ct_optimizer *opt, int64_t step_size, double gamma) {
  if (step_size <= 0)
    return ct__fail(CT_ERR_ARG, "step_lr_new: step_size must be > 0, got %lld",
                    (long long)step_size);
  ct_lr_scheduler *s = sched_new("step_lr_new", SCHED_STEP, opt);
  if (!s) return NULL;
  s->step_size = step_size;
  s->gamma = gamma;
  return s;
}

ct_lr_scheduler *ct_cosine_lr_new(ct_optimizer *opt, int64_t t_max, double eta_min) {
  if (t_max <= 0)
    return ct__fail(CT_ERR_ARG, "cosine_lr_new: t_max must be > 0, got %lld", (long long)t_max);
  ct_lr_scheduler *s = sched_new("cosine_lr_new", SCHED_COSINE, opt);
  if (!s) return NULL;
  s->t_max = t_max;
  s->eta_min = eta_min;
  return s;
}

static double closed_lr(const ct_lr_scheduler *s, int g);

/* Sets every group's lr to its closed form at s->epoch. */
static void apply_closed(const ct_lr_scheduler *s) {
  for (int g = 0; g < s->n_groups; g++) ct_optimizer_set_group_lr(s->opt, g, closed_lr(s, g));
}

ct_lr_scheduler *ct_linear_lr_new(ct_optimizer *opt, double start_factor, double end_factor,
                                  int64_t total_iters) {
  static const char what[] = "linear_lr_new";
  /* torch accepts start_factor 0, then divides by zero on the first step */
  if (!(start_factor > 0 && start_factor <= 1))
    return ct__fail(CT_ERR_ARG, "%s: start_factor must be in (0, 1], got %g", what, start_factor);
  if (!(end_factor >= 0 && end_factor <= 1))
    return ct__fail(CT_ERR_ARG, "%s: end_factor must be in [0, 1], got %g", what, end_factor);
  if (total_iters <= 0)
    return ct__fail(CT_ERR_ARG, "%s: total_iters must be > 0, got %lld", what,
                    (long long)total_iters);
  ct_lr_scheduler *s = sched_new(what, SCHED_LINEAR, opt);
  if (!s) return NULL;
  s->start_factor = start_factor;
  s->end_factor = end_factor;
  s->total_iters = total_iters;
  apply_closed(s); /* torch's initial step: base_lr * start_factor */
  return s;
}

ct_lr_scheduler *ct_one_cycle_lr_new(ct_optimizer *opt, const ct_one_cycle_opts *opts) {
  static const char what[] = "one_cycle_lr_new";
  if (!opts)
    return ct__fail(CT_ERR_ARG, "%s: opts is NULL (max_lr and total_steps are required)", what);
  ct_one_cycle_opts o = *opts;
  if (o.pct_start == 0) o.pct_start = 0.3;
  if (o.div_factor == 0) o.div_factor = 25;
  if (o.final_div_factor == 0) o.final_div_factor = 1e4;
  if (!(o.max_lr > 0 && isfinite(o.max_lr)))
    return ct__fail(CT_ERR_ARG, "%s: max_lr must be finite and > 0, got %g", what, o.max_lr);
  if (o.total_steps <= 0)
    return ct__fail(CT_ERR_ARG, "%s: total_steps must be > 0, got %lld", what,
                    (long long)o.total_steps);
  if (!(o.pct_start > 0 && o.pct_start <= 1))
    return ct__fail(CT_ERR_ARG, "%s: pct_start must be in (0, 1], got %g", what, o.pct_start);
  if (o.base_momentum == 0) o.base_momentum = 0.85;
  if (o.max_momentum == 0) o.max_momentum = 0.95;
  if (!o.keep_momentum && !(o.base_momentum >= 0 && o.base_momentum <= o.max_momentum))
    return ct__fail(CT_ERR_ARG, "%s: expected 0 <= base_momentum <= max_momentum, got %g and %g",
                    what, o.base_momentum, o.max_momentum);
  if (!(o.div_factor > 0) || !(o.final_div_factor > 0))
    return ct__fail(CT_ERR_ARG, "%s: div_factor and final_div_factor must be > 0, got %g and %g",
                    what, o.div_factor, o.final_div_factor);
  ct_lr_scheduler *s = sched_new(what, SCHED_ONE_CYCLE, opt);
  if (!s) return NULL;
  s->cycle = o;
  double initial = o.max_lr / o.div_factor; /* torch's initial_lr, of every group */
  for (int g = 0; g < s->n_groups; g++) s->base_lrs[g] = initial;
  s->cycle_min_lr = initial / o.final_div_factor;
  if (!o.keep_momentum && ct_optimizer_set_momentum(opt, o.max_momentum) != CT_OK) {
    ct_lr_scheduler_free(s);
    return NULL;
  }
  ct_optimizer_set_lr(opt, initial);
  return s;
}

ct_plateau_opts ct_plateau_defaults(void) {
  return (ct_plateau_opts){.factor = 0.1, .patience = 10, .threshold = 1e-4, .eps = 1e-8};
}

ct_lr_scheduler *ct_reduce_lr_on_plateau_new(ct_optimizer *opt, const ct_plateau_opts *opts) {
  static const char what[] = "reduce_lr_on_plateau_new";
  ct_plateau_opts o = opts ? *opts : ct_plateau_defaults();
  if (!(o.factor > 0 && o.factor < 1))
    return ct__fail(CT_ERR_ARG, "%s: factor must be in (0, 1), got %g", what, o.factor);
  if (o.patience < 0 || o.cooldown < 0)
    return ct__fail(CT_ERR_ARG, "%s: patience and cooldown must be >= 0, got %lld and %lld", what,
                    (long long)o.patience, (long long)o.cooldown);
  if (!(o.threshold >= 0) || !(o.min_lr >= 0) || !(o.eps >= 0))
    return ct__fail(CT_ERR_ARG, "%s: threshold, min_lr and eps must be >= 0, got %g, %g and %g",
                    what, o.threshold, o.min_lr, o.eps);
  ct_lr_scheduler *s = sched_new(what, SCHED_PLATEAU, opt);
  if (!s) return NULL;
  s->plateau = o;
  s->best = o.mode_max ? -INFINITY : INFINITY;
  return s;
}

ct_lr_scheduler *ct_sequential_lr_new(ct_optimizer *opt, ct_lr_scheduler *const *schedulers, int n,
                                      const int64_t *milestones) {
  static const char what[] = "sequential_lr_new";
  const char *bad = NULL;
  if (n < 1 || !schedulers) {
    bad = "expected at least one scheduler";
  } else {
    for (int i = 0; i < n && !bad; i++)
      if (!schedulers[i])
        bad = "a scheduler is NULL";
      else if (schedulers[i]->opt != opt)
        bad = "every scheduler must belong to the optimizer given";
      else if (schedulers[i]->kind == SCHED_PLATEAU)
        bad = "reduce_lr_on_plateau cannot be sequenced";
      else if (schedulers[i]->n_groups != ct_optimizer_num_groups(opt))
        bad = "a scheduler was made before a parameter group was added";
    for (int i = 0; i + 1 < n && !bad; i++)
      if (!milestones || milestones[i] <= 0 || (i && milestones[i] <= milestones[i - 1]))
        bad = "expected n - 1 increasing milestones > 0";
  }
  ct_lr_scheduler *s = bad ? NULL : sched_new(what, SCHED_SEQUENTIAL, opt);
  if (s) {
    s->children = ct__malloc_array((size_t)n, sizeof *s->children);
    s->milestones = ct__malloc_array((size_t)n, sizeof *s->milestones);
    if (!s->children || !s->milestones) {
      free(s->children), free(s->milestones), free(s->base_lrs), free(s);
      s = ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
    }
  }
  if (!s) {
    for (int i = 0; i < n && schedulers; i++) ct_lr_scheduler_free(schedulers[i]);
    return bad ? ct__fail(CT_ERR_ARG, "%s: %s", what, bad) : NULL;
  }
  /* torch's initial_lr is the optimizer's lr before the first scheduler made
   * on it changed it: the base lr of the earliest-made child */
  int first = 0;
  for (int i = 1; i < n; i++)
    if (schedulers[i]->created < schedulers[first]->created) first = i;
  const double *initial = schedulers[first]->base_lrs;
  for (int g = 0; g < s->n_groups; g++) s->base_lrs[g] = initial[g];
  for (int i = 0; i < n; i++) {
    s->children[i] = schedulers[i];
    if (schedulers[i]->kind != SCHED_ONE_CYCLE)
      for (int g = 0; g < s->n_groups; g++) schedulers[i]->base_lrs[g] = s->base_lrs[g];
    if (i + 1 < n) s->milestones[i] = milestones[i];
  }
  s->n_children = n;
  for (int g = 0; g < s->n_groups; g++) ct_optimizer_set_group_lr(opt, g, s->base_lrs[g]);
  ct_lr_scheduler_set_epoch(s->children[0], 0); /* the first schedule's initial step */
  return s;
}

void ct_lr_scheduler_free(ct_lr_scheduler *s) {
  if (!s) return;
  for (int i = 0; i < s->n_children; i++) ct_lr_scheduler_free(s->children[i]);
  free(s->children);
  free(s->milestones);
  free(s->base_lrs);
  free(s);
}

/* Python's a % b for b > 0 (never negative). */
static int64_t py_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }

/* Group g's lr at s->epoch given its current lr (torch's get_lr), for the
 * chainable schedules. */
static double chained_lr(const ct_lr_scheduler *s, int g, double lr) {
  int64_t e = s->epoch;
  if (s->kind == SCHED_STEP) {
    if (e == 0 || e % s->step_size != 0) return lr;
    return lr * s->gamma;
  }
  if (s->kind == SCHED_LINEAR) {
    if (e == 0) return lr * s->start_factor;
    if (e > s->total_iters) return lr;
    double d = s->end_factor - s->start_factor;
    return lr * (1 + d / ((double)s->total_iters * s->start_factor + (double)(e - 1) * d));
  }
  const double pi = 3.14159265358979323846;
  double t = (double)s->t_max;
  if (e == 0) return lr;
  if (py_mod(e - 1 - s->t_max, 2 * s->t_max) == 0)
    return lr + (s->base_lrs[g] - s->eta_min) * (1 - cos(pi / t)) / 2;
  return (1 + cos(pi * (double)e / t)) / (1 + cos(pi * (double)(e - 1) / t)) * (lr - s->eta_min) +
         s->eta_min;
}

/* OneCycleLR at step e <= total_steps (torch's get_lr, which is closed):
 * sets the lr and, unless keep_momentum, the momentum, annealed over the
 * phase that e falls in. */
static void one_cycle_apply(const ct_lr_scheduler *s, int64_t e) {
  const ct_one_cycle_opts *o = &s->cycle;
  double T = (double)o->total_steps, p = o->pct_start;
  double init = o->max_lr / o->div_factor, max = o->max_lr, min = s->cycle_min_lr;
  double mlo = o->base_momentum, mhi = o->max_momentum;
  struct {
    double end_step, start, end, m_start, m_end;
  } ph[3] = {{p * T - 1, init, max, mhi, mlo}, {T - 1, max, min, mlo, mhi}};
  int n = 2;
  if (o->three_phase) {
    ph[1].end_step = 2 * p * T - 2, ph[1].end = init;
    ph[2].end_step = T - 1, ph[2].start = init, ph[2].end = min, ph[2].m_start = ph[2].m_end = mhi;
    n = 3;
  }
  double start_step = 0, x = (double)e;
  int i = 0;
  while (!(x <= ph[i].end_step || i == n - 1)) start_step = ph[i++].end_step;
  double pct = (x - start_step) / (ph[i].end_step - start_step);
  const double pi = 3.14159265358979323846;
  double w = o->anneal_linear ? 1 - pct : (cos(pi * pct) + 1) / 2; /* weight of the start */
  for (int g = 0; g < s->n_groups; g++) /* max_lr is one for all groups */
    ct_optimizer_set_group_lr(s->opt, g, ph[i].end + (ph[i].start - ph[i].end) * w);
  if (!o->keep_momentum) /* valid: checked when the schedule was made */
    ct_optimizer_set_momentum(s->opt, ph[i].m_end + (ph[i].m_start - ph[i].m_end) * w);
}

/* Group g's closed form at s->epoch (torch's _get_closed_form_lr) of
 * StepLR, LinearLR and CosineAnnealingLR. */
static double closed_lr(const ct_lr_scheduler *s, int g) {
  const double pi = 3.14159265358979323846, base = s->base_lrs[g];
  int64_t e = s->epoch;
  switch (s->kind) {
    case SCHED_STEP:
      return base * pow(s->gamma, (double)(e / s->step_size));
    case SCHED_LINEAR:
      return base * (s->start_factor + (s->end_factor - s->start_factor) *
                                           (double)(e < s->total_iters ? e : s->total_iters) /
                                           (double)s->total_iters);
    default:
      return s->eta_min + (base - s->eta_min) * (1 + cos(pi * (double)e / (double)s->t_max)) / 2;
  }
}

static ct_status past_the_cycle(const ct_lr_scheduler *s, int64_t e) {
  ct__fail(CT_ERR_ARG, "one_cycle_lr: stepped to %lld, past total_steps %lld", (long long)e,
           (long long)s->cycle.total_steps);
  return CT_ERR_ARG;
}

/* Index of the child running at epoch e: torch's bisect_right(milestones, e). */
static int child_at(const ct_lr_scheduler *s, int64_t e) {
  int i = 0;
  while (i + 1 < s->n_children && s->milestones[i] <= e) i++;
  return i;
}

ct_status ct_lr_scheduler_step(ct_lr_scheduler *s) {
  if (!s) return CT_OK;
  switch (s->kind) {
    case SCHED_PLATEAU:
      ct__fail(CT_ERR_ARG,
               "lr_scheduler_step: reduce_lr_on_plateau steps on a metric "
               "(ct_lr_scheduler_step_metric)");
      return CT_ERR_ARG;
    case SCHED_ONE_CYCLE:
      if (s->epoch + 1 > s->cycle.total_steps) return past_the_cycle(s, s->epoch + 1);
      one_cycle_apply(s, ++s->epoch);
      return CT_OK;
    case SCHED_SEQUENTIAL: {
      int i = child_at(s, ++s->epoch);
      if (i > 0 && s->milestones[i - 1] == s->epoch)
        return ct_lr_scheduler_set_epoch(s->children[i], 0);
      return ct_lr_scheduler_step(s->children[i]);
    }
    default:
      s->epoch++;
      for (int g = 0; g < s->n_groups; g++)
        ct_optimizer_set_group_lr(s->opt, g,
                                  chained_lr(s, g, ct_optimizer_get_group_lr(s->opt, g)));
      return CT_OK;
  }
}

ct_status ct_lr_scheduler_step_metric(ct_lr_scheduler *s, double metric) {
  if (!s) return CT_OK;
  if (s->kind != SCHED_PLATEAU) {
    ct__fail(CT_ERR_ARG,
             "lr_scheduler_step_metric: only reduce_lr_on_plateau takes a metric, "
             "not %s",
             s->name);
    return CT_ERR_ARG;
  }
  const ct_plateau_opts *o = &s->plateau;
  s->epoch++;
  double a = metric, b = s->best, th = o->threshold;
  bool better = o->mode_max ? (o->threshold_abs ? a > b + th : a > b * (1 + th))
                            : (o->threshold_abs ? a < b - th : a < b * (1 - th));
  if (better) {
    s->best = a;
    s->bad_epochs = 0;
  } else {
    s->bad_epochs++;
  }
  if (s->cooldown_left > 0) {
    s->cooldown_left--;
    s->bad_epochs = 0; /* bad epochs in cooldown are ignored */
  }
  if (s->bad_epochs > o->patience) {
    for (int g = 0; g < s->n_groups; g++) {
      double old_lr = ct_optimizer_get_group_lr(s->opt, g);
      double new_lr = fmax(old_lr * o->factor, o->min_lr);
      if (old_lr - new_lr > o->eps) ct_optimizer_set_group_lr(s->opt, g, new_lr);
    }
    s->cooldown_left = o->cooldown;
    s->bad_epochs = 0;
  }
  return CT_OK;
}

int64_t ct_lr_scheduler_epoch(const ct_lr_scheduler *s) { return s ? s->epoch : 0; }

ct_status ct_lr_scheduler_set_epoch(ct_lr_scheduler *s, int64_t epoch) {
  if (!s) return CT_OK;
  if (epoch < 0) epoch = 0;
  switch (s->kind) {
    case SCHED_PLATEAU:
      s->epoch = epoch;
      return CT_OK;
    case SCHED_ONE_CYCLE:
      if (epoch > s->cycle.total_steps) return past_the_cycle(s, epoch);
      one_cycle_apply(s, s->epoch = epoch);
      return CT_OK;
    case SCHED_SEQUENTIAL: {
      int i = child_at(s, epoch);
      s->epoch = epoch;
      return ct_lr_scheduler_set_epoch(s->children[i], i ? epoch - s->milestones[i - 1] : epoch);
    }
    default:
      break;
  }
  s->epoch = epoch;
  apply_closed(s);
  return CT_OK;
}

/* ---- State for checkpoints ----------------------------------------------------- */

/* Per schedule: the epoch, ReduceLROnPlateau's best metric and counters,
 * each group's base lr and current lr; then a sequence's children, in turn. */
enum { SCHED_STATE_FIXED = 4 };

static int state_count(const ct_lr_scheduler *s) {
  int c = SCHED_STATE_FIXED + 2 * s->n_groups;
  for (int i = 0; i < s->n_children; i++) c += state_count(s->children[i]);
  return c;
}

static void put(double *v, int max, int *c, double x) {
  if (v && *c < max) v[*c] = x;
  (*c)++;
}

static void state_write(const ct_lr_scheduler *s, double *v, int max, int *c) {
  put(v, max, c, (double)s->epoch);
  put(v, max, c, s->best);
  put(v, max, c, (double)s->bad_epochs);
  put(v, max, c, (double)s->cooldown_left);
  for (int g = 0; g < s->n_groups; g++) put(v, max, c, s->base_lrs[g]);
  for (int g = 0; g < s->n_groups; g++) put(v, max, c, ct_optimizer_get_group_lr(s->opt, g));
  for (int i = 0; i < s->n_children; i++) state_write(s->children[i], v, max, c);
}

int ct_lr_scheduler_state(const ct_lr_scheduler *s, double *values, int max) {
  if (!s) return 0;
  int c = 0;
  state_write(s, values, max, &c);
  return c;
}

/* A whole count >= 0 that fits an int64. */
static bool is_count(double x) { return x >= 0 && x < 9.2e18 && x == floor(x); }

/* Checks the values of s (and its children) from *c on; false names the first bad one. */
static bool state_check(const ct_lr_scheduler *s, const double *v, int *c) {
  const double *b = v + *c;
  if (!is_count(b[0]) || !is_count(b[2]) || !is_count(b[3])) {
    ct__fail(CT_ERR_ARG,
             "lr_scheduler_load_state: %s: epoch and counters must be whole numbers >= 0, got "
             "%g, %g and %g",
             s->name, b[0], b[2], b[3]);
    return false;
  }
  *c += SCHED_STATE_FIXED + 2 * s->n_groups;
  for (int i = 0; i < s->n_children; i++)
    if (!state_check(s->children[i], v, c)) return false;
  return true;
}

static void state_read(ct_lr_scheduler *s, const double *v, int *c) {
  const double *b = v + *c;
  s->epoch = (int64_t)b[0];
  s->best = b[1];
  s->bad_epochs = (int64_t)b[2];
  s->cooldown_left = (int64_t)b[3];
  for (int g = 0; g < s->n_groups; g++) s->base_lrs[g] = b[SCHED_STATE_FIXED + g];
  *c += SCHED_STATE_FIXED + 2 * s->n_groups;
  for (int i = 0; i < s->n_children; i++) state_read(s->children[i], v, c);
}

ct_status ct_lr_scheduler_load_state(ct_lr_scheduler *s, const double *values, int n) {
  if (!s) return ct__fail_status(CT_ERR_ARG, "lr_scheduler_load_state: scheduler is NULL");
  int want = state_count(s);
  if (n != want || !values)
    return ct__fail_status(CT_ERR_ARG,
                           "lr_scheduler_load_state: %s over %d parameter group(s) has %d "
                           "state values, got %d%s",
                           s->name, s->n_groups, want, n, values ? "" : " (NULL)");
  int c = 0;
  if (!state_check(s, values, &c)) return CT_ERR_ARG;
  c = 0;
  state_read(s, values, &c);
  for (int g = 0; g < s->n_groups; g++)
    ct_optimizer_set_group_lr(s->opt, g, values[SCHED_STATE_FIXED + s->n_groups + g]);
  return CT_OK;
}
