/* Parameter groups against torch.optim's param_groups (skipped without
 * python3 + torch): SGD, Adam and RMSprop over two groups with their own lr,
 * weight decay and momentum terms, 8 steps; every schedule over two groups
 * with different base lrs (per-group lr sequences); a schedule's state saved
 * half way and loaded into a fresh one continues exactly (ReduceLROnPlateau,
 * recursive StepLR/cosine in a sequence); argument errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

enum { NA = 19, NB = 6, STEPS = 8, SCHED_STEPS = 30 };

static double p0_at(int g, int i) { return g ? 0.5 - 0.1 * i : 2.0 * sin(0.7 * i + 1.0); }
static double grad_at(int g, int s, int i) {
  return g ? sin(0.4 * i - 0.9 * s) : cos(0.3 * i + 1.1 * s) * (1.0 + 0.1 * s);
}
/* The plateau metric: falls, stalls, falls again (as test_lr_schedulers). */
static double metric_at(int i) {
  return i < 8 ? 10.0 - i : i < 20 ? 3.0 - 1e-6 * i : 3.0 - 0.3 * (i - 19);
}

static const char *TORCH_SCRIPT =
    "import sys, math, warnings, numpy as np, torch\n"
    "from torch.optim import lr_scheduler as L\n"
    "warnings.simplefilter('ignore')\n"
    "d = sys.argv[1]\n"
    "NA, NB, STEPS, SS = 19, 6, 8, 30\n"
    "def p0(g, i): return 0.5 - 0.1 * i if g else 2.0 * math.sin(0.7 * i + 1.0)\n"
    "def gr(g, s, i): return math.sin(0.4 * i - 0.9 * s) if g else math.cos(0.3 * i + 1.1 * s) * "
    "(1.0 + 0.1 * s)\n"
    "def params():\n"
    "  return [torch.tensor([p0(g, i) for i in range(n)], dtype=torch.float64, "
    "requires_grad=True) for g, n in ((0, NA), (1, NB))]\n"
    "opts = {\n"
    "  'sgd': lambda a, b: torch.optim.SGD([{'params': [a]}, {'params': [b], 'lr': 0.02, "
    "'momentum': 0.5, 'weight_decay': 0.1}], lr=0.1, momentum=0.9),\n"
    "  'adam': lambda a, b: torch.optim.Adam([{'params': [a]}, {'params': [b], 'lr': 0.05, "
    "'betas': (0.8, 0.99), 'weight_decay': 0.01}], lr=0.01),\n"
    "  'rmsprop': lambda a, b: torch.optim.RMSprop([{'params': [a]}, {'params': [b], 'lr': 0.003, "
    "'momentum': 0.7}], lr=0.01, centered=True),\n"
    "}\n"
    "for name, make in opts.items():\n"
    "  a, b = params(); o = make(a, b)\n"
    "  for s in range(STEPS):\n"
    "    a.grad = torch.tensor([gr(0, s, i) for i in range(NA)], dtype=torch.float64)\n"
    "    b.grad = torch.tensor([gr(1, s, i) for i in range(NB)], dtype=torch.float64)\n"
    "    o.step()\n"
    "    np.save(f'{d}/{name}_{s}_0.npy', a.detach().numpy())\n"
    "    np.save(f'{d}/{name}_{s}_1.npy', b.detach().numpy())\n"
    "def metric(i): return 10.0 - i if i < 8 else 3.0 - 1e-6 * i if i < 20 else 3.0 - 0.3 * (i - "
    "19)\n"
    "def sgd2(): return torch.optim.SGD([{'params': [torch.zeros(2, requires_grad=True)]},\n"
    "    {'params': [torch.zeros(2, requires_grad=True)], 'lr': 0.03}], lr=0.5, momentum=0.9)\n"
    "scheds = {\n"
    "  'step': lambda o: L.StepLR(o, step_size=4, gamma=0.5),\n"
    "  'cosine': lambda o: L.CosineAnnealingLR(o, T_max=12, eta_min=1e-3),\n"
    "  'linear': lambda o: L.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=6),\n"
    "  'warm_cos': lambda o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.01, total_iters=5),\n"
    "      L.CosineAnnealingLR(o, T_max=15, eta_min=1e-4)], milestones=[5]),\n"
    "  'one_cycle': lambda o: L.OneCycleLR(o, max_lr=0.4, total_steps=SS),\n"
    "  'plateau': lambda o: L.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1, "
    "min_lr=0.01),\n"
    "}\n"
    "for name, make in scheds.items():\n"
    "  o = sgd2(); s = make(o)\n"
    "  lrs = [[g['lr'] for g in o.param_groups]]\n"
    "  for i in range(SS):\n"
    "    s.step(metric(i)) if name == 'plateau' else s.step()\n"
    "    lrs.append([g['lr'] for g in o.param_groups])\n"
    "  np.save(f'{d}/sched_{name}.npy', np.array(lrs, dtype=np.float64))\n";

typedef enum { OPT_SGD, OPT_ADAM, OPT_RMSPROP, N_OPTS } opt_kind;
static const char *const OPT_NAMES[N_OPTS] = {"sgd", "adam", "rmsprop"};

static ct_tensor *make_param(int g) {
  int n = g ? NB : NA;
  double v[NA];
  for (int i = 0; i < n; i++) v[i] = p0_at(g, i);
  ct_tensor *p = ct_test_make(v, CT_SHAPE(n), CT_F64, CT_LAYOUT_CONTIG);
  ct_keep(p);
  return ct_requires_grad_(p, true);
}

/* The optimizer of the script's case over a (group 0) and b (group 1). */
static ct_optimizer *make_opt(opt_kind k, ct_tensor *a, ct_tensor *b) {
  ct_optimizer *o = NULL;
  if (k == OPT_SGD) o = ct_sgd_new(&a, 1, &(ct_sgd_opts){.lr = 0.1, .momentum = 0.9});
  if (k == OPT_ADAM) o = ct_adam_new(&a, 1, &(ct_adam_opts){.lr = 0.01});
  if (k == OPT_RMSPROP) o = ct_rmsprop_new(&a, 1, &(ct_rmsprop_opts){.lr = 0.01, .centered = true});
  if (!o) return NULL;
  ct_param_group_opts g = ct_optimizer_group_defaults(o);
  if (k == OPT_SGD) g.lr = 0.02, g.momentum = 0.5, g.weight_decay = 0.1;
  if (k == OPT_ADAM) g.lr = 0.05, g.momentum = 0.8, g.beta2 = 0.99, g.weight_decay = 0.01;
  if (k == OPT_RMSPROP) g.lr = 0.003, g.momentum = 0.7;
  if (ct_optimizer_add_param_group(o, &b, 1, &g) != 1) {
    ct_optimizer_free(o);
    return NULL;
  }
  return o;
}

CT_TEST(optimizers_with_two_groups_match_torch) {
  const char *dir = ct_test_torch_outputs("param_groups", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  for (int k = 0; k < N_OPTS; k++) {
    ct_scope_begin();
    ct_tensor *a = make_param(0), *b = make_param(1);
    ct_optimizer *o = make_opt((opt_kind)k, a, b);
    CHECK_OK(o);
    CHECK(ct_optimizer_num_groups(o) == 2);
    for (int s = 0; s < STEPS && o; s++) {
      double ga[NA], gb[NB];
      for (int i = 0; i < NA; i++) ga[i] = grad_at(0, s, i);
      for (int i = 0; i < NB; i++) gb[i] = grad_at(1, s, i);
      CHECK_STATUS_OK(ct_set_grad(a, ct_test_make(ga, CT_SHAPE(NA), CT_F64, CT_LAYOUT_CONTIG)));
      CHECK_STATUS_OK(ct_set_grad(b, ct_test_make(gb, CT_SHAPE(NB), CT_F64, CT_LAYOUT_CONTIG)));
      CHECK_STATUS_OK(ct_optimizer_step(o));
      char name[64], what[96];
      for (int g = 0; g < 2; g++) {
        snprintf(name, sizeof name, "%s_%d_%d", OPT_NAMES[k], s, g);
        snprintf(what, sizeof what, "%s group %d step %d", OPT_NAMES[k], g, s + 1);
        CHECK_LIKE_TORCH(dir, what, g ? b : a, name, 1e-12, 1e-13);
      }
    }
    ct_optimizer_free(o);
    ct_free(a);
    ct_free(b);
    ct_scope_end();
  }
}

typedef enum {
  S_STEP,
  S_COSINE,
  S_LINEAR,
  S_WARM_COS,
  S_ONE_CYCLE,
  S_PLATEAU,
  N_SCHEDS
} sched_kind;
static const char *const SCHED_NAMES[N_SCHEDS] = {"step",     "cosine",    "linear",
                                                  "warm_cos", "one_cycle", "plateau"};

/* The script's two-group SGD (lr 0.5 and 0.03) and its schedule. */
static ct_lr_scheduler *make_sched(sched_kind k, ct_tensor *const *p, ct_optimizer **opt) {
  *opt = ct_sgd_new(&p[0], 1, &(ct_sgd_opts){.lr = 0.5, .momentum = 0.9});
  ct_param_group_opts g = ct_optimizer_group_defaults(*opt);
  g.lr = 0.03;
  CHECK(ct_optimizer_add_param_group(*opt, &p[1], 1, &g) == 1);
  switch (k) {
    case S_STEP:
      return ct_step_lr_new(*opt, 4, 0.5);
    case S_COSINE:
      return ct_cosine_lr_new(*opt, 12, 1e-3);
    case S_LINEAR:
      return ct_linear_lr_new(*opt, 0.1, 0.9, 6);
    case S_WARM_COS: {
      ct_lr_scheduler *w = ct_linear_lr_new(*opt, 0.01, 1.0, 5);
      ct_lr_scheduler *c = ct_cosine_lr_new(*opt, 15, 1e-4);
      return ct_sequential_lr_new(*opt, (ct_lr_scheduler *[]){w, c}, 2, (int64_t[]){5});
    }
    case S_ONE_CYCLE:
      return ct_one_cycle_lr_new(*opt,
                                 &(ct_one_cycle_opts){.max_lr = 0.4, .total_steps = SCHED_STEPS});
    default: {
      ct_plateau_opts o = ct_plateau_defaults();
      o.factor = 0.5, o.patience = 2, o.cooldown = 1, o.min_lr = 0.01;
      return ct_reduce_lr_on_plateau_new(*opt, &o);
    }
  }
}

static ct_status sched_step(sched_kind k, ct_lr_scheduler *s, int i) {
  return k == S_PLATEAU ? ct_lr_scheduler_step_metric(s, metric_at(i)) : ct_lr_scheduler_step(s);
}

CT_TEST(schedules_change_each_group_from_its_base_lr_as_torch) {
  const char *dir = ct_test_torch_outputs("param_groups", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  for (int k = 0; k < N_SCHEDS; k++) {
    ct_scope_begin();
    ct_tensor *p[2] = {make_param(0), make_param(1)};
    ct_optimizer *o;
    ct_lr_scheduler *s = make_sched((sched_kind)k, p, &o);
    CHECK_OK(s);
    double got[SCHED_STEPS + 1][2];
    for (int i = 0; i <= SCHED_STEPS && s; i++) {
      if (i) CHECK_STATUS_OK(sched_step((sched_kind)k, s, i - 1));
      got[i][0] = ct_optimizer_get_group_lr(o, 0), got[i][1] = ct_optimizer_get_group_lr(o, 1);
    }
    ct_tensor *t = ct_test_make(&got[0][0], CT_SHAPE(SCHED_STEPS + 1, 2), CT_F64, CT_LAYOUT_CONTIG);
    char name[64], what[96];
    snprintf(name, sizeof name, "sched_%s", SCHED_NAMES[k]);
    snprintf(what, sizeof what, "%s over two groups", SCHED_NAMES[k]);
    CHECK_LIKE_TORCH(dir, what, t, name, 1e-12, 1e-15);
    ct_lr_scheduler_free(s);
    ct_optimizer_free(o);
    ct_free(p[0]);
    ct_free(p[1]);
    ct_scope_end();
  }
}

/* A schedule saved after `half` steps and loaded into a fresh optimizer and
 * schedule made the same way gives the lrs of one uninterrupted run. */
CT_TEST(schedule_state_resumes_exactly) {
  enum { HALF = 13 };
  for (int k = 0; k < N_SCHEDS; k++) {
    ct_scope_begin();
    ct_tensor *p[2] = {make_param(0), make_param(1)}, *q[2] = {make_param(0), make_param(1)};
    ct_optimizer *oa, *ob;
    ct_lr_scheduler *sa = make_sched((sched_kind)k, p, &oa),
                    *sb = make_sched((sched_kind)k, q, &ob);
    CHECK_OK(sa);
    CHECK_OK(sb);
    for (int i = 0; i < HALF && sa && sb; i++) {
      CHECK_STATUS_OK(sched_step((sched_kind)k, sa, i));
      CHECK_STATUS_OK(sched_step((sched_kind)k, sb, i));
    }
    int n = ct_lr_scheduler_state(sb, NULL, 0);
    double saved[64];
    CHECK(n > 0 && n <= 64 && ct_lr_scheduler_state(sb, saved, 64) == n);
    ct_lr_scheduler_free(sb);
    ct_optimizer_free(ob);
    /* resumed: made afresh (its lrs back at the start), then loaded */
    ct_optimizer *oc;
    ct_lr_scheduler *sc = make_sched((sched_kind)k, q, &oc);
    CHECK_OK(sc);
    CHECK_ERR(ct_lr_scheduler_load_state(sc, saved, n - 1) == CT_OK, CT_ERR_ARG);
    CHECK_STATUS_OK(ct_lr_scheduler_load_state(sc, saved, n));
    CHECK(ct_lr_scheduler_epoch(sc) == ct_lr_scheduler_epoch(sa));
    for (int i = HALF; i < SCHED_STEPS && sa && sc; i++) {
      CHECK_STATUS_OK(sched_step((sched_kind)k, sa, i));
      CHECK_STATUS_OK(sched_step((sched_kind)k, sc, i));
      for (int g = 0; g < 2; g++)
        CHECK_MSG(ct_optimizer_get_group_lr(oa, g) == ct_optimizer_get_group_lr(oc, g),
                  "%s: group %d at step %d: resumed lr %.17g, uninterrupted %.17g", SCHED_NAMES[k],
                  g, i + 1, ct_optimizer_get_group_lr(oc, g), ct_optimizer_get_group_lr(oa, g));
    }
    ct_lr_scheduler_free(sa);
    ct_lr_scheduler_free(sc);
    ct_optimizer_free(oa);
    ct_optimizer_free(oc);
    for (int g = 0; g < 2; g++) ct_free(p[g]), ct_free(q[g]);
    ct_scope_end();
  }
}

CT_TEST(param_group_errors) {
  ct_scope_begin();
  ct_tensor *a = make_param(0), *b = make_param(1);
  ct_optimizer *o = ct_adam_new(&a, 1, NULL);
  CHECK_OK(o);
  ct_param_group_opts g = ct_optimizer_group_defaults(o);
  CHECK(g.lr == 1e-3 && g.momentum == 0.9 && g.beta2 == 0.999 && g.weight_decay == 0);
  CHECK_ERR_MSG(ct_optimizer_add_param_group(o, &a, 1, NULL) >= 0, CT_ERR_ARG,
                "already in parameter group 0");
  g.beta2 = 1.5;
  CHECK_ERR_MSG(ct_optimizer_add_param_group(o, &b, 1, &g) >= 0, CT_ERR_ARG, "beta2 1.5");
  g = ct_optimizer_group_defaults(o);
  g.lr = -1;
  CHECK_ERR_MSG(ct_optimizer_add_param_group(o, &b, 1, &g) >= 0, CT_ERR_ARG, "learning rate -1");
  CHECK(ct_optimizer_num_groups(o) == 1);
  CHECK(ct_optimizer_add_param_group(o, &b, 1, NULL) == 1);
  ct_param_group_opts out;
  CHECK_ERR(ct_optimizer_get_group(o, 2, &out) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_optimizer_set_group_lr(o, -1, 0.1) == CT_OK, CT_ERR_ARG);
  CHECK_STATUS_OK(ct_optimizer_set_group_lr(o, 1, 0.25));
  CHECK_STATUS_OK(ct_optimizer_get_group(o, 1, &out));
  CHECK(out.lr == 0.25 && ct_optimizer_get_lr(o) == 1e-3);
  ct_tensor *ps[2];
  CHECK(ct_optimizer_parameters(o, ps, 2) == 2 && ps[0] == a && ps[1] == b);
  /* set_lr changes every group */
  ct_optimizer_set_lr(o, 0.5);
  CHECK(ct_optimizer_get_group_lr(o, 1) == 0.5);
  /* a sequence of schedules made before a group was added */
  ct_optimizer *s2 = ct_sgd_new(&a, 1, &(ct_sgd_opts){.lr = 0.1});
  ct_lr_scheduler *st = ct_step_lr_new(s2, 2, 0.5);
  CHECK(ct_optimizer_add_param_group(s2, &b, 1, NULL) == 1);
  CHECK_ERR_MSG(ct_sequential_lr_new(s2, &st, 1, NULL), CT_ERR_ARG, "parameter group");
  ct_optimizer_free(s2);
  ct_optimizer_free(o);
  ct_free(a);
  ct_free(b);
  ct_scope_end();
}
