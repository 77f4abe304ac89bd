/* RMSprop and Adagrad against torch.optim: 20 steps on the same parameters
 * and gradients (defined by formulas here and in the script), every step's
 * parameters and the final state compared, f64 and f32 (skipped without
 * python3 + torch); a checkpoint taken half way and loaded into a fresh
 * optimizer continues bit for bit; argument errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* 37 elements: past a vector width and with a scalar tail in ATen's loops. */
enum { N = 37, STEPS = 20 };

static double p0_at(int i) { return 2.0 * sin(0.7 * i + 1.0); }
/* Gradients with zeros (a zero square average) and a growing scale. */
static double grad_at(int s, int i) {
  return i % 11 == 5 ? 0.0 : cos(0.3 * i + 1.1 * s) * (1.0 + 0.1 * s);
}

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch, math\n"
    "d = sys.argv[1]\n"
    "N, STEPS = 37, 20\n"
    "def grad(s, i): return 0.0 if i % 11 == 5 else math.cos(0.3 * i + 1.1 * s) * (1.0 + 0.1 * s)\n"
    "cases = {\n"
    "  'rms_default': lambda p: torch.optim.RMSprop([p]),\n"
    "  'rms_wd': lambda p: torch.optim.RMSprop([p], lr=0.05, alpha=0.9, eps=1e-6, "
    "weight_decay=0.1),\n"
    "  'rms_mom': lambda p: torch.optim.RMSprop([p], lr=0.02, momentum=0.9),\n"
    "  'rms_centered': lambda p: torch.optim.RMSprop([p], lr=0.01, centered=True),\n"
    "  'rms_all': lambda p: torch.optim.RMSprop([p], lr=0.03, alpha=0.95, momentum=0.5, "
    "centered=True, weight_decay=0.01),\n"
    "  'rms_low_alpha': lambda p: torch.optim.RMSprop([p], lr=0.01, alpha=0.3, centered=True, "
    "eps=1e-3),\n"
    "  'ada_default': lambda p: torch.optim.Adagrad([p]),\n"
    "  'ada_decay': lambda p: torch.optim.Adagrad([p], lr=0.1, lr_decay=0.1, weight_decay=0.05),\n"
    "  'ada_init': lambda p: torch.optim.Adagrad([p], lr=0.1, initial_accumulator_value=0.5, "
    "eps=1e-6),\n"
    "}\n"
    "for name, make in cases.items():\n"
    "  for dt, tn in ((torch.float64, 'f64'), (torch.float32, 'f32')):\n"
    "    p = torch.tensor([2.0 * math.sin(0.7 * i + 1.0) for i in range(N)], dtype=dt, "
    "requires_grad=True)\n"
    "    o = make(p)\n"
    "    for s in range(STEPS):\n"
    "      p.grad = torch.tensor([grad(s, i) for i in range(N)], dtype=dt)\n"
    "      o.step()\n"
    "      np.save(f'{d}/{name}_{tn}_{s}.npy', p.detach().numpy())\n"
    "    for k, v in o.state[p].items():\n"
    "      if k != 'step': np.save(f'{d}/{name}_{tn}_{k}.npy', v.numpy())\n";

typedef struct optim_case {
  const char *name;
  bool adagrad;
  ct_rmsprop_opts r;
  ct_adagrad_opts a;
} optim_case;

static const optim_case CASES[] = {
    {"rms_default", false, {.lr = 0}, {.lr = 0}},
    {"rms_wd", false, {.lr = 0.05, .alpha = 0.9, .eps = 1e-6, .weight_decay = 0.1}, {.lr = 0}},
    {"rms_mom", false, {.lr = 0.02, .momentum = 0.9}, {.lr = 0}},
    {"rms_centered", false, {.lr = 0.01, .centered = true}, {.lr = 0}},
    {"rms_all",
     false,
     {.lr = 0.03, .alpha = 0.95, .momentum = 0.5, .centered = true, .weight_decay = 0.01},
     {.lr = 0}},
    {"rms_low_alpha", false, {.lr = 0.01, .alpha = 0.3, .centered = true, .eps = 1e-3}, {.lr = 0}},
    {"ada_default", true, {.lr = 0}, {.lr = 0}},
    {"ada_decay", true, {.lr = 0}, {.lr = 0.1, .lr_decay = 0.1, .weight_decay = 0.05}},
    {"ada_init", true, {.lr = 0}, {.lr = 0.1, .initial_accumulator_value = 0.5, .eps = 1e-6}},
};
enum { NCASES = sizeof CASES / sizeof CASES[0] };

static ct_tensor *make_param(ct_dtype dt) {
  double v[N];
  for (int i = 0; i < N; i++) v[i] = p0_at(i);
  ct_tensor *p = ct_test_make(v, CT_SHAPE(N), dt, CT_LAYOUT_CONTIG);
  ct_keep(p); /* the optimizer references it past the test's scope */
  return ct_requires_grad_(p, true);
}

static void set_grad(ct_tensor *p, int s) {
  double g[N];
  for (int i = 0; i < N; i++) g[i] = grad_at(s, i);
  CHECK_STATUS_OK(ct_set_grad(p, ct_test_make(g, CT_SHAPE(N), ct_dtype_of(p), CT_LAYOUT_CONTIG)));
}

static ct_optimizer *make_opt(const optim_case *c, ct_tensor *p) {
  return c->adagrad ? ct_adagrad_new(&p, 1, &c->a) : ct_rmsprop_new(&p, 1, &c->r);
}

CT_TEST(rmsprop_and_adagrad_match_torch_for_20_steps) {
  const char *dir = ct_test_torch_outputs("optim_rmsprop_adagrad", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  for (int c = 0; c < NCASES; c++)
    for (int d = 0; d < 2; d++) {
      ct_dtype dt = d ? CT_F32 : CT_F64;
      /* torch's vector loops (fused multiply-adds where ours round twice)
       * differ by an ulp here and there, which 20 steps carry on */
      double rtol = d ? 2e-5 : 1e-12, atol = d ? 2e-6 : 1e-13;
      ct_scope_begin();
      ct_tensor *p = make_param(dt);
      ct_optimizer *opt = make_opt(&CASES[c], p);
      CHECK_OK(opt);
      char name[96], what[128];
      for (int s = 0; s < STEPS && opt; s++) {
        set_grad(p, s);
        CHECK_STATUS_OK(ct_optimizer_step(opt));
        snprintf(name, sizeof name, "%s_%s_%d", CASES[c].name, ct_dtype_name(dt), s);
        snprintf(what, sizeof what, "%s (%s) step %d", CASES[c].name, ct_dtype_name(dt), s + 1);
        CHECK_LIKE_TORCH(dir, what, p, name, rtol, atol);
      }
      ct_tensor *st[4];
      const char *names[4];
      int ns = ct_optimizer_state(opt, st, names, 4);
      CHECK(ns >= 1 && ns <= 3);
      for (int k = 0; k < ns && k < 4; k++) {
        const char *kind = strchr(names[k], '.') + 1;
        snprintf(name, sizeof name, "%s_%s_%s", CASES[c].name, ct_dtype_name(dt), kind);
        snprintf(what, sizeof what, "%s (%s) state %s", CASES[c].name, ct_dtype_name(dt), kind);
        CHECK_LIKE_TORCH(dir, what, st[k], name, rtol, atol);
      }
      ct_optimizer_free(opt);
      ct_free(p);
      ct_scope_end();
    }
}

/* The bytes of t on the host (malloc'd). */
static unsigned char *host_bytes(const ct_tensor *t, size_t *n) {
  ct_tensor *c = ct_contiguous(ct_to(t, ct_cpu(), NULL));
  *n = c ? ct_nbytes(c) : 0;
  unsigned char *b = malloc(*n ? *n : 1);
  if (c && b) memcpy(b, ct_data_ptr(c), *n);
  return b;
}

/* 10 steps, the state saved into a fresh optimizer, 10 more steps: the same
 * bits as 20 steps of one optimizer (Adagrad's lr decay needs the step). */
CT_TEST(checkpoint_half_way_continues_exactly) {
  for (int c = 0; c < NCASES; c++) {
    ct_scope_begin();
    ct_tensor *a = make_param(CT_F32), *b = make_param(CT_F32);
    ct_optimizer *oa = make_opt(&CASES[c], a), *ob = make_opt(&CASES[c], b);
    CHECK_OK(oa);
    CHECK_OK(ob);
    for (int s = 0; s < STEPS / 2 && oa && ob; s++) {
      set_grad(a, s);
      set_grad(b, s);
      CHECK_STATUS_OK(ct_optimizer_step(oa));
      CHECK_STATUS_OK(ct_optimizer_step(ob));
    }
    ct_tensor *st[4], *copies[4];
    const char *names[4];
    int ns = ct_optimizer_state(ob, st, names, 4);
    for (int k = 0; k < ns && k < 4; k++) copies[k] = ct_clone(st[k]); /* in this scope */
    ct_optimizer *oc = make_opt(&CASES[c], b);
    CHECK_OK(oc);
    CHECK_STATUS_OK(ct_optimizer_load_state(oc, copies, names, ns, STEPS / 2));
    ct_optimizer_free(ob);
    for (int s = STEPS / 2; s < STEPS && oa && oc; s++) {
      set_grad(a, s);
      set_grad(b, s);
      CHECK_STATUS_OK(ct_optimizer_step(oa));
      CHECK_STATUS_OK(ct_optimizer_step(oc));
    }
    size_t na, nb;
    unsigned char *x = host_bytes(a, &na), *y = host_bytes(b, &nb);
    CHECK_MSG(x && y && na == nb && memcmp(x, y, na) == 0, "%s: resumed run differs",
              CASES[c].name);
    free(x);
    free(y);
    ct_optimizer_free(oa);
    ct_optimizer_free(oc);
    ct_free(a);
    ct_free(b);
    ct_scope_end();
  }
}

CT_TEST(rmsprop_and_adagrad_reject_bad_arguments) {
  ct_scope_begin();
  ct_tensor *p = make_param(CT_F64);
  ct_rmsprop_opts r = ct_rmsprop_defaults();
  r.alpha = -0.5;
  CHECK_ERR_MSG(ct_rmsprop_new(&p, 1, &r), CT_ERR_ARG, "alpha -0.5");
  r = ct_rmsprop_defaults();
  r.momentum = -1;
  CHECK_ERR_MSG(ct_rmsprop_new(&p, 1, &r), CT_ERR_ARG, "momentum -1");
  CHECK_ERR_MSG(ct_rmsprop_new(&p, 1, &(ct_rmsprop_opts){.lr = -0.1}), CT_ERR_ARG,
                "learning rate -0.1");
  CHECK_ERR_MSG(ct_adagrad_new(&p, 1, &(ct_adagrad_opts){.lr_decay = -2}), CT_ERR_ARG,
                "lr_decay -2");
  CHECK_ERR_MSG(ct_adagrad_new(&p, 1, &(ct_adagrad_opts){.initial_accumulator_value = -3}),
                CT_ERR_ARG, "initial_accumulator_value -3");
  /* Adagrad has no momentum for OneCycle to cycle; RMSprop has */
  ct_optimizer *ada = ct_adagrad_new(&p, 1, NULL);
  CHECK_OK(ada);
  CHECK(ct_optimizer_get_momentum(ada) == 0);
  CHECK_ERR_MSG(ct_optimizer_set_momentum(ada, 0.9) == CT_OK, CT_ERR_ARG, "Adagrad");
  CHECK_ERR(ct_one_cycle_lr_new(ada, &(ct_one_cycle_opts){.max_lr = 0.1, .total_steps = 5}),
            CT_ERR_ARG);
  ct_optimizer *rms = ct_rmsprop_new(&p, 1, NULL);
  CHECK_OK(rms);
  CHECK(ct_optimizer_get_lr(rms) == 1e-2);
  CHECK_STATUS_OK(ct_optimizer_set_momentum(rms, 0.5));
  CHECK(ct_optimizer_get_momentum(rms) == 0.5);
  /* a state the optimizer does not keep */
  ct_tensor *z = ct_zeros(CT_SHAPE(N), NULL);
  CHECK_ERR_MSG(ct_optimizer_load_state(ada, &z, (const char *[]){"0.exp_avg"}, 1, 1) == CT_OK,
                CT_ERR_ARG, "0.exp_avg");
  ct_optimizer_free(ada);
  ct_optimizer_free(rms);
  ct_free(p);
  ct_scope_end();
}
