/* Learning-rate schedules: StepLR and CosineAnnealingLR, with torch's
 * recursive ("chainable") update on ct_lr_scheduler_step and its closed form
 * on ct_lr_scheduler_set_epoch, so the lr sequence matches PyTorch's. The
 * scheduler borrows the optimizer, which must outlive it. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

typedef enum { SCHED_STEP, SCHED_COSINE } sched_kind;

struct ct_lr_scheduler {
  sched_kind kind;
  ct_optimizer *opt;
  double base_lr;
  int64_t epoch; /* torch's last_epoch: 0 after construction */
  int64_t step_size; /* StepLR */
  double gamma;      /* StepLR */
  int64_t t_max;     /* cosine */
  double eta_min;    /* cosine */
};

static ct_lr_scheduler *sched_new(const char *what, sched_kind kind, ct_optimizer *opt) {
  if (!opt) return ct__fail(CT_ERR_ARG, "%s: optimizer is NULL", what);
  ct_lr_scheduler *s = calloc(1, sizeof *s);
  if (!s) return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  s->kind = kind;
  s->opt = opt;
  s->base_lr = ct_optimizer_get_lr(opt);
  return s;
}

ct_lr_scheduler *ct_step_lr_new(ct_optimizer *opt, int64_t step_size, double gamma) {
  if (step_size <= 0)
    return ct__fail(CT_ERR_ARG, "step_lr_new: step_size must be > 0, got %lld", (long long)step_size);
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

void ct_lr_scheduler_free(ct_lr_scheduler *s) { free(s); }

/* Python's a % b for b > 0 (never negative). */
static int64_t py_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }

/* The lr at s->epoch given the current lr (torch's get_lr). */
static double chained_lr(const ct_lr_scheduler *s, double lr) {
  int64_t e = s->epoch;
  if (s->kind == SCHED_STEP) {
    if (e == 0 || e % s->step_size != 0) return lr;
    return lr * s->gamma;
  }
  const double pi = 3.14159265358979323846;
  double t = (double)s->t_max;
  if (e == 0) return lr;
  if (py_mod(e - 1 - s->t_max, 2 * s->t_max) == 0)
    return lr + (s->base_lr - s->eta_min) * (1 - cos(pi / t)) / 2;
  return (1 + cos(pi * (double)e / t)) / (1 + cos(pi * (double)(e - 1) / t)) * (lr - s->eta_min) +
         s->eta_min;
}

/* The closed form at s->epoch (torch's _get_closed_form_lr). */
static double closed_lr(const ct_lr_scheduler *s) {
  if (s->kind == SCHED_STEP)
    return s->base_lr * pow(s->gamma, (double)(s->epoch / s->step_size));
  const double pi = 3.14159265358979323846;
  return s->eta_min +
         (s->base_lr - s->eta_min) * (1 + cos(pi * (double)s->epoch / (double)s->t_max)) / 2;
}

void ct_lr_scheduler_step(ct_lr_scheduler *s) {
  if (!s) return;
  s->epoch++;
  ct_optimizer_set_lr(s->opt, chained_lr(s, ct_optimizer_get_lr(s->opt)));
}

int64_t ct_lr_scheduler_epoch(const ct_lr_scheduler *s) { return s ? s->epoch : 0; }

void ct_lr_scheduler_set_epoch(ct_lr_scheduler *s, int64_t epoch) {
  if (!s) return;
  s->epoch = epoch < 0 ? 0 : epoch;
  ct_optimizer_set_lr(s->opt, closed_lr(s));
}
