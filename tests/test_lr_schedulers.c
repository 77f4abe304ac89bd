/* LinearLR, SequentialLR (warmup then cosine), OneCycleLR (with momentum) and
 * ReduceLROnPlateau: lr sequences against torch.optim.lr_scheduler for N
 * steps (skipped without python3 + torch), against their closed forms and
 * hand-computed values, and argument errors. Schedules are host-side, so
 * this test is not device-generic. */
#include "ct_test.h"

static ct_tensor *param_tensor(void) {
  ct_tensor *p = ct_zeros(CT_SHAPE(2), NULL);
  ct_keep(p);
  return ct_requires_grad_(p, true);
}

/* The plateau metrics, the same in C and in the script: a loss that falls,
 * stalls, falls a little (below the relative threshold), then falls again. */
#define N_METRICS 30
static double metric_at(int i) {
  return i < 8 ? 10.0 - i : i < 20 ? 3.0 - 1e-6 * i : 3.0 - 0.3 * (i - 19);
}

static const char *TORCH_SCRIPT =
    "import sys, warnings, numpy as np, torch\n"
    "from torch.optim import lr_scheduler as L\n"
    "warnings.simplefilter('ignore')\n"
    "d = sys.argv[1]\n"
    "def opt(lr): return torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=lr, "
    "momentum=0.9)\n"
    "def adam(lr): return torch.optim.Adam([torch.zeros(2, requires_grad=True)], lr=lr)\n"
    "def mom(o):\n"
    "    g = o.param_groups[0]; return g['betas'][0] if 'betas' in g else g['momentum']\n"
    "def run(name, o, s, n, metric=None):\n"
    "    lrs, ms = [o.param_groups[0]['lr']], [mom(o)]\n"
    "    for i in range(n):\n"
    "        s.step() if metric is None else s.step(metric(i))\n"
    "        lrs.append(o.param_groups[0]['lr']); ms.append(mom(o))\n"
    "    np.save(f'{d}/{name}.npy', np.array(lrs, dtype=np.float64))\n"
    "    np.save(f'{d}/{name}_m.npy', np.array(ms, dtype=np.float64))\n"
    "o = opt(0.2); run('linear', o, L.LinearLR(o, start_factor=0.1, end_factor=0.9, "
    "total_iters=4), 10)\n"
    "o = opt(0.5); w = L.LinearLR(o, start_factor=0.01, end_factor=1.0, total_iters=5)\n"
    "c = L.CosineAnnealingLR(o, T_max=15, eta_min=1e-4)\n"
    "run('warmup_cosine', o, L.SequentialLR(o, [w, c], milestones=[5]), 25)\n"
    "o = opt(0.1); run('one_cycle', o, L.OneCycleLR(o, max_lr=0.5, total_steps=20), 20)\n"
    "o = adam(0.1); run('one_cycle3', o, L.OneCycleLR(o, max_lr=0.8, total_steps=17, "
    "pct_start=0.25,\n"
    "    anneal_strategy='linear', div_factor=10, final_div_factor=100, three_phase=True,\n"
    "    base_momentum=0.7, max_momentum=0.9), 17)\n"
    "o = opt(0.1); run('one_cycle_keep', o, L.OneCycleLR(o, max_lr=0.5, total_steps=12, "
    "pct_start=0.4,\n"
    "    cycle_momentum=False), 12)\n"
    "def metric(i): return 10.0 - i if i < 8 else 3.0 - 1e-6 * i if i < 20 else 3.0 - 0.3 * (i - "
    "19)\n"
    "o = opt(1.0)\n"
    "run('plateau_min', o, L.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1), 30, "
    "metric)\n"
    "o = opt(1.0); run('plateau_max', o, L.ReduceLROnPlateau(o, mode='max', factor=0.3, "
    "patience=0,\n"
    "    threshold=0.5, threshold_mode='abs', min_lr=0.05), 30, lambda i: -metric(i))\n";

/* clang-format off */
typedef enum { LINEAR, WARMUP_COSINE, ONE_CYCLE, ONE_CYCLE3, ONE_CYCLE_KEEP, PLATEAU_MIN, PLATEAU_MAX, NCASE } which;
static const char *const NAMES[NCASE] = {"linear", "warmup_cosine", "one_cycle", "one_cycle3", "one_cycle_keep",
                                         "plateau_min", "plateau_max"};
static const int STEPS[NCASE] = {10, 25, 20, 17, 12, 30, 30};
/* clang-format on */

/* The case's optimizer (at its torch lr) and schedule. */
static ct_lr_scheduler *make_case(which w, ct_tensor *p, ct_optimizer **opt) {
  const double lr0[NCASE] = {0.2, 0.5, 0.1, 0.1, 0.1, 1.0, 1.0};
  if (w == ONE_CYCLE3)
    *opt = ct_adam_new(&p, 1, &(ct_adam_opts){.lr = lr0[w]});
  else
    *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = lr0[w], .momentum = 0.9});
  switch (w) {
    case LINEAR:
      return ct_linear_lr_new(*opt, 0.1, 0.9, 4);
    case WARMUP_COSINE: {
      ct_lr_scheduler *warm = ct_linear_lr_new(*opt, 0.01, 1.0, 5);
      ct_lr_scheduler *cos = ct_cosine_lr_new(*opt, 15, 1e-4);
      return ct_sequential_lr_new(*opt, (ct_lr_scheduler *[]){warm, cos}, 2, (int64_t[]){5});
    }
    case ONE_CYCLE:
      return ct_one_cycle_lr_new(*opt, &(ct_one_cycle_opts){.max_lr = 0.5, .total_steps = 20});
    case ONE_CYCLE3:
      return ct_one_cycle_lr_new(*opt, &(ct_one_cycle_opts){.max_lr = 0.8,
                                                            .total_steps = 17,
                                                            .pct_start = 0.25,
                                                            .anneal_linear = true,
                                                            .div_factor = 10,
                                                            .final_div_factor = 100,
                                                            .three_phase = true,
                                                            .base_momentum = 0.7,
                                                            .max_momentum = 0.9});
    case ONE_CYCLE_KEEP:
      return ct_one_cycle_lr_new(
          *opt, &(ct_one_cycle_opts){
                    .max_lr = 0.5, .total_steps = 12, .pct_start = 0.4, .keep_momentum = true});
    case PLATEAU_MIN: {
      ct_plateau_opts o = ct_plateau_defaults();
      o.factor = 0.5, o.patience = 2, o.cooldown = 1;
      return ct_reduce_lr_on_plateau_new(*opt, &o);
    }
    default: {
      ct_plateau_opts o = ct_plateau_defaults();
      o.mode_max = true, o.factor = 0.3, o.patience = 0, o.threshold = 0.5, o.threshold_abs = true;
      o.min_lr = 0.05;
      return ct_reduce_lr_on_plateau_new(*opt, &o);
    }
  }
}

/* The lr (and, if moms, the momentum) after construction and after each of
 * the case's steps. */
static double *run_case(which w, double **moms) {
  ct_tensor *p = param_tensor();
  ct_optimizer *opt;
  ct_lr_scheduler *s = make_case(w, p, &opt);
  CHECK_OK(s);
  double *lrs = calloc((size_t)STEPS[w] + 1, sizeof *lrs);
  double *ms = calloc((size_t)STEPS[w] + 1, sizeof *ms);
  lrs[0] = ct_optimizer_get_lr(opt), ms[0] = ct_optimizer_get_momentum(opt);
  for (int i = 0; i < STEPS[w] && s; i++) {
    if (w == PLATEAU_MIN)
      CHECK_STATUS_OK(ct_lr_scheduler_step_metric(s, metric_at(i)));
    else if (w == PLATEAU_MAX)
      CHECK_STATUS_OK(ct_lr_scheduler_step_metric(s, -metric_at(i)));
    else
      CHECK_STATUS_OK(ct_lr_scheduler_step(s));
    lrs[i + 1] = ct_optimizer_get_lr(opt), ms[i + 1] = ct_optimizer_get_momentum(opt);
  }
  ct_lr_scheduler_free(s);
  ct_optimizer_free(opt);
  ct_free(p);
  if (moms)
    *moms = ms;
  else
    free(ms);
  return lrs;
}

CT_TEST(schedules_match_pytorch) {
  const char *dir = ct_test_torch_outputs("lr_schedulers", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  for (int w = 0; w < NCASE; w++) {
    double *ms, *lrs = run_case((which)w, &ms);
    ct_tensor_opts o = {.dtype = CT_F64};
    CHECK_LIKE_TORCH(dir, NAMES[w], ct_from_data(lrs, CT_SHAPE(STEPS[w] + 1), &o), NAMES[w], 1e-12,
                     1e-15);
    char mname[64];
    snprintf(mname, sizeof mname, "%s_m", NAMES[w]);
    CHECK_LIKE_TORCH(dir, mname, ct_from_data(ms, CT_SHAPE(STEPS[w] + 1), &o), mname, 1e-12, 1e-15);
    free(lrs), free(ms);
  }
}

CT_TEST(schedules_closed_forms) {
  /* set_epoch (closed form) agrees with stepping (recursive form) */
  for (int w = LINEAR; w <= ONE_CYCLE_KEEP; w++) {
    double *lrs = run_case((which)w, NULL);
    ct_tensor *p = param_tensor();
    ct_optimizer *opt;
    ct_lr_scheduler *s = make_case((which)w, p, &opt);
    for (int e = STEPS[w]; e >= 0 && s; e--) { /* backwards: no history used */
      CHECK_STATUS_OK(ct_lr_scheduler_set_epoch(s, e));
      CHECK_MSG(fabs(ct_optimizer_get_lr(opt) - lrs[e]) <= 1e-12 * fabs(lrs[e]),
                "%s epoch %d: %.17g vs %.17g", NAMES[w], e, ct_optimizer_get_lr(opt), lrs[e]);
    }
    ct_lr_scheduler_free(s);
    ct_optimizer_free(opt);
    ct_free(p);
    free(lrs);
  }
  /* hand values: warmup from 0.5 * 0.01 to 0.5 in 5 epochs, then cosine from 0.5 */
  double *wc = run_case(WARMUP_COSINE, NULL);
  CHECK(fabs(wc[0] - 0.005) < 1e-15 && fabs(wc[5] - 0.5) < 1e-15 && fabs(wc[20] - 1e-4) < 1e-15);
  free(wc);
  /* one cycle: max_lr / 25 at 0, max_lr at pct_start * T - 1 = 5, initial / 1e4 at T */
  double *oc = run_case(ONE_CYCLE, NULL);
  CHECK(fabs(oc[0] - 0.02) < 1e-15 && fabs(oc[5] - 0.5) < 1e-15 &&
        fabs(oc[19] - 0.02 / 1e4) < 1e-15);
  free(oc);
}

CT_TEST(schedule_errors) {
  ct_tensor *p = param_tensor();
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.1});
  CHECK_ERR(ct_linear_lr_new(opt, 0, 1, 5), CT_ERR_ARG);
  CHECK_ERR(ct_linear_lr_new(opt, 0.5, 1.5, 5), CT_ERR_ARG);
  CHECK_ERR(ct_linear_lr_new(opt, 0.5, 1, 0), CT_ERR_ARG);
  CHECK_ERR(ct_one_cycle_lr_new(opt, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_one_cycle_lr_new(opt, &(ct_one_cycle_opts){.max_lr = 0.1}), CT_ERR_ARG);
  CHECK_ERR(ct_one_cycle_lr_new(
                opt, &(ct_one_cycle_opts){.max_lr = 0.1, .total_steps = 5, .pct_start = 2}),
            CT_ERR_ARG);
  ct_plateau_opts po = ct_plateau_defaults();
  CHECK(po.factor == 0.1 && po.patience == 10 && po.threshold == 1e-4 && !po.threshold_abs &&
        po.cooldown == 0 && po.min_lr == 0 && po.eps == 1e-8 && !po.mode_max);
  po.factor = 1.0;
  CHECK_ERR(ct_reduce_lr_on_plateau_new(opt, &po), CT_ERR_ARG);
  CHECK_ERR(ct_sequential_lr_new(opt, NULL, 0, NULL), CT_ERR_ARG);
  /* milestones must increase; the children are freed with the failure (LSan checks) */
  ct_lr_scheduler *a = ct_step_lr_new(opt, 2, 0.5), *b = ct_step_lr_new(opt, 2, 0.5);
  CHECK_ERR(ct_sequential_lr_new(opt, (ct_lr_scheduler *[]){a, b}, 2, (int64_t[]){0}), CT_ERR_ARG);
  ct_lr_scheduler *pl = ct_reduce_lr_on_plateau_new(opt, NULL);
  CHECK_ERR(ct_sequential_lr_new(opt, &pl, 1, NULL), CT_ERR_ARG);
  /* stepping the wrong way */
  ct_lr_scheduler *plateau = ct_reduce_lr_on_plateau_new(opt, NULL);
  ct_lr_scheduler *step = ct_step_lr_new(opt, 2, 0.5);
  CHECK_ERR_MSG(ct_lr_scheduler_step(plateau) == CT_OK, CT_ERR_ARG, "metric");
  CHECK_ERR(ct_lr_scheduler_step_metric(step, 1.0) == CT_OK, CT_ERR_ARG);
  CHECK_STATUS_OK(ct_lr_scheduler_step_metric(plateau, NAN)); /* nan never improves */
  ct_lr_scheduler *oc =
      ct_one_cycle_lr_new(opt, &(ct_one_cycle_opts){.max_lr = 1, .total_steps = 2});
  CHECK_STATUS_OK(ct_lr_scheduler_step(oc));
  CHECK_STATUS_OK(ct_lr_scheduler_step(oc));
  double last = ct_optimizer_get_lr(opt);
  CHECK_ERR_MSG(ct_lr_scheduler_step(oc) == CT_OK, CT_ERR_ARG, "total_steps");
  CHECK(ct_optimizer_get_lr(opt) == last && ct_lr_scheduler_epoch(oc) == 2);
  CHECK_ERR(ct_lr_scheduler_set_epoch(oc, 3) == CT_OK, CT_ERR_ARG);
  ct_lr_scheduler_free(oc);
  ct_lr_scheduler_free(step);
  ct_lr_scheduler_free(plateau);
  ct_optimizer_free(opt);
  ct_free(p);
}

CT_TEST(optimizer_momentum) {
  /* SGD made without momentum takes one later: its buffer starts from the
   * gradient at the next step, as torch's momentum_buffer = None */
  ct_tensor *p = param_tensor();
  ct_optimizer *sgd = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.1});
  CHECK(ct_optimizer_get_momentum(sgd) == 0);
  for (int i = 0; i < 3; i++) {
    CHECK_STATUS_OK(ct_set_grad(p, ct_ones(CT_SHAPE(2), NULL)));
    CHECK_STATUS_OK(ct_optimizer_step(sgd));
    if (i == 0) CHECK_STATUS_OK(ct_optimizer_set_momentum(sgd, 0.9));
  }
  CHECK(ct_optimizer_get_momentum(sgd) == 0.9);
  double want[2] = {-0.1 * (1 + 1 + 1.9), -0.1 * (1 + 1 + 1.9)};
  CHECK_CLOSE(p, want, 1e-6, 1e-7); /* f32 */
  CHECK_ERR(ct_optimizer_set_momentum(sgd, -0.5) == CT_OK, CT_ERR_ARG);
  CHECK(ct_optimizer_get_momentum(sgd) == 0.9);
  ct_optimizer *nest =
      ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.1, .momentum = 0.9, .nesterov = true});
  CHECK_ERR(ct_optimizer_set_momentum(nest, 0) == CT_OK, CT_ERR_ARG);
  ct_optimizer *adam = ct_adam_new(&p, 1, NULL);
  CHECK(ct_optimizer_get_momentum(adam) == 0.9);
  CHECK_STATUS_OK(ct_optimizer_set_momentum(adam, 0.8));
  CHECK(ct_optimizer_get_momentum(adam) == 0.8);
  CHECK_ERR(ct_optimizer_set_momentum(adam, 1.0) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_optimizer_set_momentum(NULL, 0.5) == CT_OK, CT_ERR_ARG);
  /* a OneCycle momentum the optimizer cannot take fails at construction */
  CHECK_ERR(ct_one_cycle_lr_new(
                adam, &(ct_one_cycle_opts){.max_lr = 1, .total_steps = 4, .max_momentum = 1.5}),
            CT_ERR_ARG);
  CHECK_ERR(ct_one_cycle_lr_new(
                adam, &(ct_one_cycle_opts){.max_lr = 1, .total_steps = 4, .base_momentum = 0.99}),
            CT_ERR_ARG);
  ct_optimizer_free(sgd), ct_optimizer_free(nest), ct_optimizer_free(adam);
  ct_free(p);
}
