/* Optimizers and schedules against torch.optim's formulas, computed here by
 * hand in double over three steps with given gradients; one optimizer over
 * many parameters (one multi-tensor launch per pack on a GPU) against one
 * optimizer per parameter, bit for bit; state export/import; argument
 * errors; StepLR and CosineAnnealingLR sequences. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

enum { N = 4, STEPS = 3 };
static const double P0[N] = {1.0, -2.0, 0.5, 3.0};
static const double G[STEPS][N] = {{0.1, -0.2, 0.3, 0.0}, {-0.5, 0.25, 0.1, 1.0}, {0.2, 0.2, -0.4, -1.5}};

static ct_tensor *param(ct_dtype dt, const double *vals) {
  ct_tensor *p = ct_test_make(vals, CT_SHAPE(N), dt, CT_LAYOUT_CONTIG);
  ct_keep(p); /* the test's scope must not free what the optimizer references past it */
  ct_requires_grad_(p, true);
  return p;
}

static void set_grad(ct_tensor *p, const double *g) {
  ct_tensor *t = ct_test_make(g, CT_SHAPE(N), ct_dtype_of(p), CT_LAYOUT_CONTIG);
  CHECK_STATUS_OK(ct_set_grad(p, t));
}

/* SGD reference (torch.optim.sgd._single_tensor_sgd), one parameter. */
static void sgd_ref(const ct_sgd_opts *o, double *p, double *buf, bool first, const double *g) {
  for (int i = 0; i < N; i++) {
    double d = g[i];
    if (o->weight_decay != 0) d = d + o->weight_decay * p[i];
    if (o->momentum != 0) {
      buf[i] = first ? d : buf[i] * o->momentum + (1 - o->dampening) * d;
      d = o->nesterov ? d + o->momentum * buf[i] : buf[i];
    }
    p[i] = p[i] + (-o->lr) * d;
  }
}

/* Adam/AdamW reference (torch.optim.adam._single_tensor_adam). */
static void adam_ref(const ct_adam_opts *o, bool decoupled, double *p, double *m, double *v,
                     double *vmax, int step, const double *g) {
  double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
  double step_size = o->lr / bc1, bc2_sqrt = sqrt(bc2);
  for (int i = 0; i < N; i++) {
    double gi = g[i];
    if (decoupled) p[i] = p[i] * (1 - o->lr * o->weight_decay);
    else if (o->weight_decay != 0) gi = gi + o->weight_decay * p[i];
    m[i] = m[i] * o->beta1 + (1 - o->beta1) * gi;
    v[i] = v[i] * o->beta2 + (1 - o->beta2) * gi * gi;
    double s = v[i];
    if (o->amsgrad) s = vmax[i] = fmax(vmax[i], v[i]);
    double denom = sqrt(s) / bc2_sqrt + o->eps;
    p[i] = p[i] + (-step_size) * m[i] / denom;
  }
}

static const ct_dtype DTYPES[] = {CT_F64, CT_F32};

CT_TEST(sgd_matches_torch_formulas) {
  const ct_sgd_opts cases[] = {
      {.lr = 0.1},
      {.lr = 0.1, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.9, .dampening = 0.5},
      {.lr = 0.1, .momentum = 0.9, .nesterov = true},
      {.lr = 0.1, .momentum = 0.8, .weight_decay = 0.1},
      {.lr = 0.2, .weight_decay = 0.01, .momentum = 0.5, .nesterov = true},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 2; d++) {
      ct_tensor *p = param(DTYPES[d], P0);
      ct_optimizer *opt = ct_sgd_new(&p, 1, &cases[c]);
      CHECK_OK(opt);
      double ref[N], buf[N] = {0};
      memcpy(ref, P0, sizeof ref);
      for (int s = 0; s < STEPS && opt; s++) {
        uint32_t v0 = ct_version(p);
        set_grad(p, G[s]);
        CHECK_STATUS_OK(ct_optimizer_step(opt));
        CHECK(ct_version(p) != v0);
        sgd_ref(&cases[c], ref, buf, s == 0, G[s]);
        CHECK_CLOSE(p, ref, d ? 1e-6 : 1e-14, d ? 1e-6 : 1e-14);
      }
      CHECK(ct_optimizer_step_count(opt) == STEPS);
      CHECK(!ct_requires_grad(p) || ct_grad_fn_name(p) == NULL); /* still a leaf */
      ct_optimizer_free(opt);
      ct_free(p);
    }
}

CT_TEST(adam_and_adamw_match_torch_formulas) {
  const struct {
    ct_adam_opts o;
    bool decoupled;
  } cases[] = {
      {{.lr = 0.01}, false},
      {{.lr = 0.1, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-6, .weight_decay = 0.1}, false},
      {{.lr = 0.1, .weight_decay = 0.05, .amsgrad = true}, false},
      {{.lr = 0.01}, true}, /* AdamW's default weight_decay 0.01 */
      {{.lr = 0.05, .weight_decay = 0.2, .amsgrad = true}, true},
      /* zeros taken as they are: beta1 = 0 (no first moment), AdamW without decay */
      {{.lr = 0.05, .beta1 = 0, .beta2 = 0.99, .eps = 1e-8, .as_given = true}, false},
      {{.lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .as_given = true}, true},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 2; d++) {
      ct_adam_opts o = cases[c].o;
      ct_tensor *p = param(DTYPES[d], P0);
      ct_optimizer *opt = cases[c].decoupled ? ct_adamw_new(&p, 1, &o) : ct_adam_new(&p, 1, &o);
      CHECK_OK(opt);
      if (!o.as_given) {
        if (!o.beta1) o.beta1 = 0.9;
        if (!o.beta2) o.beta2 = 0.999;
        if (!o.eps) o.eps = 1e-8;
        if (cases[c].decoupled && !o.weight_decay) o.weight_decay = 0.01;
      }
      double ref[N], m[N] = {0}, v[N] = {0}, vmax[N] = {0};
      memcpy(ref, P0, sizeof ref);
      for (int s = 0; s < STEPS && opt; s++) {
        set_grad(p, G[s]);
        CHECK_STATUS_OK(ct_optimizer_step(opt));
        adam_ref(&o, cases[c].decoupled, ref, m, v, vmax, s + 1, G[s]);
        CHECK_CLOSE(p, ref, d ? 1e-5 : 1e-13, d ? 1e-6 : 1e-14);
      }
      ct_optimizer_free(opt);
      ct_free(p);
    }
}

/* Parameters without a gradient are skipped and keep their own step count. */
/* The bytes of t, on the host (malloc'd). */
static unsigned char *host_bytes(const ct_tensor *t, size_t *n) {
  ct_tensor *c = ct_contiguous(ct_to(t, ct_cpu(), NULL));
  *n = c ? ct_nbytes(c) : 0;
  unsigned char *b = malloc(*n ? *n : 1);
  if (c && b) memcpy(b, ct_data_ptr(c), *n);
  return b;
}

/* One optimizer over 75 parameters (f32 and f64, sizes across the chunks of
 * a launch, more than one launch's tensors on a GPU) equals 75 optimizers of
 * one parameter each, bit for bit, over three steps: SGD with nesterov
 * momentum and weight decay, Adam with amsgrad, AdamW. */
CT_TEST(many_parameters_at_once_equal_one_at_a_time) {
  enum { P = 75, STEPS3 = 3 };
  const int64_t sizes[] = {1, 7, 8191, 8192, 8193, 20000, 100};
  for (int kind = 0; kind < 3; kind++) {
    ct_scope_begin();
    ct_tensor *a[P], *b[P];
    for (int i = 0; i < P; i++) {
      int64_t n = sizes[i % 7];
      double *v = ct_test_random(n, -2, 2, (unsigned)(i + 1000 * kind));
      ct_dtype dt = i % 5 == 3 ? CT_F64 : CT_F32;
      a[i] = ct_requires_grad_(ct_test_make(v, CT_SHAPE(n), dt, CT_LAYOUT_CONTIG), true);
      b[i] = ct_requires_grad_(ct_test_make(v, CT_SHAPE(n), dt, CT_LAYOUT_CONTIG), true);
      free(v);
    }
    ct_optimizer *all = NULL, *one[P];
    ct_adam_opts ao = ct_adam_defaults();
    ao.amsgrad = true;
    ao.weight_decay = 0.01;
    const ct_sgd_opts so = {.lr = 0.1, .momentum = 0.9, .nesterov = true, .weight_decay = 1e-3};
    for (int i = -1; i < P; i++) {
      ct_tensor *const *ps = i < 0 ? a : &b[i];
      int n = i < 0 ? P : 1;
      ct_optimizer *o = kind == 0   ? ct_sgd_new(ps, n, &so)
                        : kind == 1 ? ct_adam_new(ps, n, &ao)
                                    : ct_adamw_new(ps, n, NULL);
      CHECK_OK(o);
      if (i < 0)
        all = o;
      else
        one[i] = o;
    }
    for (int step = 0; step < STEPS3; step++) {
      for (int i = 0; i < P; i++) {
        double *g = ct_test_random(ct_numel(a[i]), -1, 1, (unsigned)(7 * i + step + 31 * kind));
        ct_tensor *ga =
            ct_test_make(g, CT_SHAPE(ct_numel(a[i])), ct_dtype_of(a[i]), CT_LAYOUT_CONTIG);
        ct_tensor *gb =
            ct_test_make(g, CT_SHAPE(ct_numel(a[i])), ct_dtype_of(a[i]), CT_LAYOUT_CONTIG);
        free(g);
        CHECK_STATUS_OK(ct_set_grad(a[i], ga));
        CHECK_STATUS_OK(ct_set_grad(b[i], gb));
      }
      CHECK_STATUS_OK(ct_optimizer_step(all));
      for (int i = 0; i < P; i++) CHECK_STATUS_OK(ct_optimizer_step(one[i]));
    }
    for (int i = 0; i < P; i++) {
      size_t na, nb;
      unsigned char *x = host_bytes(a[i], &na), *y = host_bytes(b[i], &nb);
      CHECK_MSG(x && y && na == nb && memcmp(x, y, na) == 0,
                "optimizer %d, parameter %d (%lld elements) differs", kind, i,
                (long long)ct_numel(a[i]));
      free(x);
      free(y);
    }
    ct_optimizer_free(all);
    for (int i = 0; i < P; i++) ct_optimizer_free(one[i]);
    ct_scope_end();
  }
}

CT_TEST(parameters_without_grad_are_skipped) {
  ct_tensor *ps[2] = {param(CT_F64, P0), param(CT_F64, P0)};
  ct_adam_opts o = {.lr = 0.1};
  ct_optimizer *opt = ct_adam_new(ps, 2, &o);
  o.beta1 = 0.9, o.beta2 = 0.999, o.eps = 1e-8;
  double r0[N], r1[N], m0[N] = {0}, v0[N] = {0}, m1[N] = {0}, v1[N] = {0};
  memcpy(r0, P0, sizeof r0);
  memcpy(r1, P0, sizeof r1);
  for (int s = 0; s < STEPS; s++) {
    ct_optimizer_zero_grad(opt);
    CHECK(ct_grad(ps[0]) == NULL && ct_grad(ps[1]) == NULL);
    set_grad(ps[0], G[s]);
    if (s > 0) set_grad(ps[1], G[s]);
    CHECK_STATUS_OK(ct_optimizer_step(opt));
    adam_ref(&o, false, r0, m0, v0, NULL, s + 1, G[s]);
    if (s > 0) adam_ref(&o, false, r1, m1, v1, NULL, s, G[s]);
    CHECK_CLOSE(ps[0], r0, 1e-13, 1e-14);
    CHECK_CLOSE(ps[1], r1, 1e-13, 1e-14);
  }
  ct_optimizer_free(opt);
  ct_free(ps[0]);
  ct_free(ps[1]);
}

CT_TEST(lr_get_set_and_state_round_trip) {
  /* Run A for two steps, copy its state into B on equal parameters, then one
   * more step each with the same gradient: identical results. */
  for (int kind = 0; kind < 2; kind++) {
    ct_tensor *pa = param(CT_F32, P0), *pb = NULL;
    ct_sgd_opts so = {.lr = 0.1, .momentum = 0.9};
    ct_adam_opts ao = {.lr = 0.1, .amsgrad = true};
    ct_optimizer *a = kind ? ct_adam_new(&pa, 1, &ao) : ct_sgd_new(&pa, 1, &so);
    CHECK(ct_optimizer_get_lr(a) == 0.1);
    ct_optimizer_set_lr(a, 0.05);
    CHECK(ct_optimizer_get_lr(a) == 0.05);
    for (int s = 0; s < 2; s++) {
      set_grad(pa, G[s]);
      CHECK_STATUS_OK(ct_optimizer_step(a));
    }
    ct_tensor *st[8];
    const char *names[8];
    int n = ct_optimizer_state(a, st, names, 8);
    CHECK(n == (kind ? 3 : 1));
    CHECK(!strcmp(names[0], kind ? "0.exp_avg" : "0.momentum_buffer"));
    if (kind) CHECK(!strcmp(names[2], "0.max_exp_avg_sq"));
    double *now = ct_test_values(pa);
    pb = param(CT_F32, now);
    free(now);
    ct_optimizer *b = kind ? ct_adam_new(&pb, 1, &ao) : ct_sgd_new(&pb, 1, &so);
    ct_optimizer_set_lr(b, 0.05);
    CHECK_STATUS_OK(ct_optimizer_load_state(b, st, names, n, ct_optimizer_step_count(a)));
    CHECK(ct_optimizer_step_count(b) == 2);
    set_grad(pa, G[2]);
    set_grad(pb, G[2]);
    CHECK_STATUS_OK(ct_optimizer_step(a));
    CHECK_STATUS_OK(ct_optimizer_step(b));
    double *va = ct_test_values(pa);
    CHECK_CLOSE(pb, va, 0, 0);
    free(va);
    /* Errors: an unknown state name, a wrong shape; nothing changes. */
    ct_tensor *bad = ct_zeros(CT_SHAPE(N + 1), NULL);
    CHECK_ERR(ct_optimizer_load_state(b, st, (const char *[]){"0.nope"}, 1, 1) == CT_OK, CT_ERR_ARG);
    CHECK_ERR(ct_optimizer_load_state(b, st, (const char *[]){"7.exp_avg"}, 1, 1) == CT_OK, CT_ERR_ARG);
    CHECK_ERR(ct_optimizer_load_state(b, &bad, names, 1, 1) == CT_OK, CT_ERR_SHAPE);
    if (kind) /* Adam needs all of a parameter's moments */
      CHECK_ERR(ct_optimizer_load_state(b, st, names, 1, 1) == CT_OK, CT_ERR_ARG);
    CHECK(ct_optimizer_step_count(b) == 3);
    /* Step counts that cannot grow: INT64_MAX refused on load (naming it);
     * INT64_MAX - 1 takes one more step, then the next is refused. */
    CHECK_ERR_MSG(ct_optimizer_load_state(b, st, names, n, INT64_MAX) == CT_OK ? pb : NULL,
                  CT_ERR_ARG, "step_count 9223372036854775807");
    CHECK(ct_optimizer_step_count(b) == 3);
    CHECK_STATUS_OK(ct_optimizer_load_state(b, st, names, n, INT64_MAX - 1));
    set_grad(pb, G[2]);
    CHECK_STATUS_OK(ct_optimizer_step(b));
    CHECK(ct_optimizer_step_count(b) == INT64_MAX);
    CHECK_ERR_MSG(ct_optimizer_step(b) == CT_OK ? pb : NULL, CT_ERR_ARG, "cannot grow");
    ct_optimizer_free(a);
    ct_optimizer_free(b);
    ct_free(pa);
    ct_free(pb);
  }
}

CT_TEST(argument_errors) {
  ct_tensor *p = param(CT_F32, P0);
  ct_tensor *i = ct_zeros(CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_I64});
  ct_tensor *two[2] = {p, p};
  CHECK_ERR(ct_sgd_new(&p, 1, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = -1}), CT_ERR_ARG);
  CHECK_ERR(ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.1, .nesterov = true}), CT_ERR_ARG);
  CHECK_ERR(ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.1, .momentum = 0.9, .dampening = 0.1,
                                             .nesterov = true}), CT_ERR_ARG);
  CHECK_ERR(ct_sgd_new(two, 2, &(ct_sgd_opts){.lr = 0.1}), CT_ERR_ARG);
  CHECK_ERR(ct_sgd_new(&i, 1, &(ct_sgd_opts){.lr = 0.1}), CT_ERR_DTYPE);
  CHECK_ERR(ct_adam_new(&p, 1, &(ct_adam_opts){.beta1 = 1.0}), CT_ERR_ARG);
  CHECK_ERR(ct_adamw_new(&p, 1, &(ct_adam_opts){.eps = -1}), CT_ERR_ARG);
  ct_adam_opts d = ct_adamw_defaults();
  CHECK(d.as_given && d.lr == 1e-3 && d.beta1 == 0.9 && d.beta2 == 0.999 && d.eps == 1e-8 &&
        d.weight_decay == 0.01 && !d.amsgrad);
  d = ct_adam_defaults();
  CHECK(d.as_given && d.weight_decay == 0);
  d.beta2 = 1.0;
  CHECK_ERR(ct_adam_new(&p, 1, &d), CT_ERR_ARG);
  ct_optimizer_free(NULL);
  ct_lr_scheduler_free(NULL);
  ct_free(p);
}

CT_TEST(step_lr_sequence) {
  ct_tensor *p = param(CT_F32, P0);
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 1.0});
  ct_lr_scheduler *s = ct_step_lr_new(opt, 2, 0.1);
  const double want[] = {1, 1, 0.1, 0.1, 0.01, 0.01, 0.001};
  for (int e = 0; e < 7; e++) {
    CHECK(ct_lr_scheduler_epoch(s) == e);
    CHECK_MSG(fabs(ct_optimizer_get_lr(opt) - want[e]) < 1e-15, "epoch %d: lr %.17g, want %g", e,
              ct_optimizer_get_lr(opt), want[e]);
    ct_lr_scheduler_step(s);
  }
  ct_lr_scheduler_set_epoch(s, 3);
  CHECK(fabs(ct_optimizer_get_lr(opt) - 0.1) < 1e-15);
  CHECK_ERR(ct_step_lr_new(opt, 0, 0.1), CT_ERR_ARG);
  ct_lr_scheduler_free(s);
  ct_optimizer_free(opt);
  ct_free(p);
}

CT_TEST(cosine_lr_sequence) {
  ct_tensor *p = param(CT_F32, P0);
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 1.0});
  const int64_t t_max = 4;
  const double eta_min = 0.1, pi = 3.14159265358979323846;
  ct_lr_scheduler *s = ct_cosine_lr_new(opt, t_max, eta_min);
  for (int e = 0; e <= 10; e++) { /* past t_max the schedule climbs back, as torch's */
    double want = eta_min + (1.0 - eta_min) * (1 + cos(pi * e / (double)t_max)) / 2;
    CHECK_MSG(fabs(ct_optimizer_get_lr(opt) - want) < 1e-12, "epoch %d: lr %.17g, want %.17g", e,
              ct_optimizer_get_lr(opt), want);
    ct_lr_scheduler_step(s);
  }
  ct_lr_scheduler_set_epoch(s, 2);
  CHECK(fabs(ct_optimizer_get_lr(opt) - 0.55) < 1e-12);
  ct_lr_scheduler_free(s);
  ct_optimizer_free(opt);
  ct_free(p);
}
