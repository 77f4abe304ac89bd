/* Golden end-to-end tests against PyTorch, in the manner of llm.c's
 * test_gpt2.c: the same initial weights, the same batches, and the loss and
 * every parameter's gradient compared at each of 20 optimizer steps, then the
 * final weights. Three models, the reference documents' workloads and a GPT:
 *   mlp  SimpleNN 784-128-10 (fc1, relu, fc2), cross entropy, SGD lr 0.01
 *   cnn  the CIFAR-10 tutorial Net (conv1 3->6 5x5, pool, conv2 6->16 5x5,
 *        pool, fc1 400->120, fc2 120->84, fc3 84->10), SGD lr 0.01 momentum 0.9
 *   gpt  a tiny GPT-2 (examples/gpt2/gpt2_model.h: vocab 64, 16 positions,
 *        2 layers, 2 heads, n_embd 32, lm_head tied to wte), next-token cross
 *        entropy, AdamW lr 1e-3 betas (0.9, 0.95) eps 1e-6 weight decay 0.1.
 *        Adam divides each gradient element by its own running size, so an
 *        element whose gradient is at rounding level (the key bias's is zero in
 *        exact arithmetic: softmax ignores a shift of a row's scores) moves by
 *        a fraction of lr in either library, whatever the rounding; eps 1e-6
 *        and lr 1e-3 keep those moves below the final-weight tolerance.
 * and model interchange both ways: the weights PyTorch trained, loaded into
 * ctensor, give PyTorch's outputs on a probe input; the weights ctensor
 * trained and saved (ct_save_safetensors in ct_module_state order) load into
 * PyTorch with load_state_dict(strict=True) and give ctensor's outputs.
 *
 * tests/golden/make_golden.py writes the references (run at test time with
 * Debian's python3 + torch; without them the test is skipped).
 *
 * The measure of agreement, for a tensor `got` against torch's `want`, is the
 * normalized max error   max_i |got_i - want_i| / max_i |want_i|
 * (for a scalar loss: its relative error). Tolerances, float32:
 *   losses (each step), final weights, probe outputs   <= 1e-5
 *   gradients (each step, each parameter)              <= 1e-4  (a diagnostic
 *     that points at the first step and parameter where the runs part) */
#include "ct_test.h"

#include <unistd.h>

#include "../examples/gpt2/gpt2_model.h"

CT_TEST_DEVICE_GENERIC

#define STEPS 20
#define TOL 1e-5
#define GRAD_TOL 1e-4
#define MAX_PARAMS 64

/* ---- The reference files --------------------------------------------------- */

static char golden_dir[1024];
static char golden_script[1024];

/* make_golden.py sits in tests/golden next to this file (__FILE__ is absolute
 * in CMake builds; CT_GOLDEN_SCRIPT overrides). */
static bool find_script(void) {
  const char *env = getenv("CT_GOLDEN_SCRIPT");
  if (env && *env) {
    snprintf(golden_script, sizeof golden_script, "%s", env);
  } else {
    const char *slash = strrchr(__FILE__, '/');
    int len = slash ? (int)(slash - __FILE__) : 1;
    snprintf(golden_script, sizeof golden_script, "%.*s/golden/make_golden.py", len,
             slash ? __FILE__ : ".");
  }
  return access(golden_script, R_OK) == 0;
}

/* Runs `make_golden.py MODE golden_dir`, its output shown on failure. */
static bool run_python(const char *python, const char *mode) {
  char cmd[4096], log[1100];
  snprintf(log, sizeof log, "%s/%s.log", golden_dir, mode);
  snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s' >'%s' 2>&1", python, golden_script, mode, golden_dir,
           log);
  int rc = system(cmd);
  FILE *f = fopen(log, "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) fprintf(rc ? stderr : stdout, "  [torch] %s", line);
  if (f) fclose(f);
  if (rc != 0) ct_test_fail(__FILE__, __LINE__, "%s failed (status %d)", cmd, rc);
  return rc == 0;
}

static void remove_golden_dir(void) {
  if (!*golden_dir || getenv("CT_GOLDEN_KEEP")) return;
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", golden_dir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", golden_dir);
}

/* A safetensors file held in memory. */
typedef struct st_file {
  ct_tensor **t;
  char **names;
  int n;
} st_file;

static bool st_open(st_file *f, const char *model, const char *kind) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s_%s.safetensors", golden_dir, model, kind);
  *f = (st_file){0};
  if (ct_load_safetensors(path, &f->t, &f->names, &f->n) != CT_OK) {
    ct_test_fail(__FILE__, __LINE__, "loading %s: %s", path, ct_last_error_message());
    return false;
  }
  return true;
}

static void st_close(st_file *f) {
  ct_safetensors_free(f->t, f->names, f->n);
  *f = (st_file){0};
}

/* The tensor `name` (borrowed), or NULL with a failure reported. */
static ct_tensor *st_get(const st_file *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->names[i], name)) return f->t[i];
  ct_test_fail(__FILE__, __LINE__, "reference tensor '%s' missing", name);
  return NULL;
}

/* ---- Comparison ------------------------------------------------------------ */

/* max|got - want| / max|want| (see the top of the file); +inf on a shape
 * mismatch or a missing tensor, nan if got holds a nan. */
/* max_i |got_i - want_i| / max_i |want_i|; with `abs_err`, the numerator
 * alone too (NaN stays NaN). */
static double max_errs(const ct_tensor *got, const ct_tensor *want, double *abs_err) {
  if (abs_err) *abs_err = INFINITY;
  if (!got || !want || ct_ndim(got) != ct_ndim(want) ||
      memcmp(ct_shape(got), ct_shape(want), sizeof(int64_t) * (size_t)ct_ndim(got)) != 0)
    return INFINITY;
  double *g = ct_test_values(got), *w = ct_test_values(want);
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < ct_numel(want); i++) {
    double d = fabs(g[i] - w[i]);
    if (isnan(d))
      diff = NAN;
    else if (!isnan(diff))
      diff = fmax(diff, d);
    scale = fmax(scale, fabs(w[i]));
  }
  free(g);
  free(w);
  if (abs_err) *abs_err = diff;
  return diff / (scale > 0 ? scale : 1e-30);
}

static double norm_max_err(const ct_tensor *got, const ct_tensor *want) {
  return max_errs(got, want, NULL);
}

/* ---- The models, as ctensor user modules with torch's attribute names ----- */

typedef struct simple_nn {
  ct_module *fc1, *fc2;
} simple_nn;

static ct_tensor *simple_nn_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  simple_nn *s = self;
  return ct_module_forward(s->fc2, ct_relu(ct_module_forward(s->fc1, x)));
}

static const ct_module_vtable simple_nn_vtable = {"SimpleNN", simple_nn_forward, free};

static ct_module *simple_nn_new(const ct_module_opts *o) {
  simple_nn *s = calloc(1, sizeof *s);
  ct_module *m = s ? ct_module_new(&simple_nn_vtable, s) : NULL;
  if (!m) return free(s), NULL;
  s->fc1 = ct_module_register_module(m, "fc1", ct_linear_new(784, 128, true, o));
  s->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(128, 10, true, o));
  if (!s->fc1 || !s->fc2) return ct_module_free(m), NULL;
  return m;
}

typedef struct cifar_net {
  ct_module *conv1, *pool, *conv2, *fc1, *fc2, *fc3;
} cifar_net;

static ct_tensor *cifar_net_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  cifar_net *s = self;
  ct_tensor *h = ct_module_forward(s->pool, ct_relu(ct_module_forward(s->conv1, x)));
  h = ct_module_forward(s->pool, ct_relu(ct_module_forward(s->conv2, h)));
  h = ct_flatten(h, 1, -1); /* (N, 16, 5, 5) -> (N, 400) */
  h = ct_relu(ct_module_forward(s->fc1, h));
  h = ct_relu(ct_module_forward(s->fc2, h));
  return ct_module_forward(s->fc3, h);
}

static const ct_module_vtable cifar_net_vtable = {"Net", cifar_net_forward, free};

static ct_module *cifar_net_new(const ct_module_opts *o) {
  cifar_net *s = calloc(1, sizeof *s);
  ct_module *m = s ? ct_module_new(&cifar_net_vtable, s) : NULL;
  if (!m) return free(s), NULL;
  s->conv1 = ct_module_register_module(m, "conv1", ct_conv2d_new(3, 6, 5, NULL, true, o));
  s->pool = ct_module_register_module(
      m, "pool", ct_max_pool2d_new(&(ct_pool2d_opts){.kernel = {2, 2}, .stride = {2, 2}}));
  s->conv2 = ct_module_register_module(m, "conv2", ct_conv2d_new(6, 16, 5, NULL, true, o));
  s->fc1 = ct_module_register_module(m, "fc1", ct_linear_new(16 * 5 * 5, 120, true, o));
  s->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(120, 84, true, o));
  s->fc3 = ct_module_register_module(m, "fc3", ct_linear_new(84, 10, true, o));
  if (!s->conv1 || !s->pool || !s->conv2 || !s->fc1 || !s->fc2 || !s->fc3)
    return ct_module_free(m), NULL;
  return m;
}

/* The GPT of make_golden.py's `Gpt`. */
static ct_module *tiny_gpt_new(const ct_module_opts *o) {
  const gpt2_config c = {
      .vocab_size = 64, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32};
  return gpt2_new(&c, o);
}

typedef struct golden_model {
  const char *name;
  ct_module *(*make)(const ct_module_opts *o);
  ct_sgd_opts sgd;
  bool adamw; /* AdamW with `adam` instead of SGD */
  ct_adam_opts adam;
} golden_model;

/* Copies a torch state_dict into m, strictly: same names, same count, same
 * shapes (as load_state_dict(strict=True)). */
static bool load_state(ct_module *m, const st_file *f, const char *what) {
  ct_tensor *ts[MAX_PARAMS];
  const char *names[MAX_PARAMS];
  int n = ct_module_state(m, ts, names, MAX_PARAMS);
  int in_file = 0;
  for (int i = 0; i < f->n; i++) in_file += strcmp(f->names[i], "__metadata__") != 0;
  CHECK_MSG(n == in_file, "%s: module has %d tensors, the file %d", what, n, in_file);
  bool ok = n == in_file;
  ct_no_grad_begin();
  for (int i = 0; i < n && i < MAX_PARAMS; i++) {
    ct_tensor *src = st_get(f, names[i]);
    if (!src) {
      ok = false;
      continue;
    }
    bool same_shape =
        ct_ndim(src) == ct_ndim(ts[i]) &&
        !memcmp(ct_shape(src), ct_shape(ts[i]), sizeof(int64_t) * (size_t)ct_ndim(src));
    CHECK_MSG(same_shape, "%s: %s has another shape in the file", what, names[i]);
    if (!same_shape || !ct_copy_(ts[i], src)) ok = false;
  }
  ct_no_grad_end();
  return ok;
}

/* Saves m's state (names in ct_module_state order) and its output on probe_x,
 * for make_golden.py check. */
static void save_for_torch(ct_module *m, const char *model, const ct_tensor *probe_x) {
  ct_tensor *ts[MAX_PARAMS];
  const char *names[MAX_PARAMS];
  int n = ct_module_state(m, ts, names, MAX_PARAMS);
  char path[1200];
  snprintf(path, sizeof path, "%s/%s_ct.safetensors", golden_dir, model);
  CHECK_STATUS_OK(ct_save_safetensors(path, ts, names, n));
  ct_no_grad_begin();
  ct_tensor *out = ct_module_forward(m, probe_x);
  ct_no_grad_end();
  CHECK_OK(out);
  snprintf(path, sizeof path, "%s/%s_ct_out.safetensors", golden_dir, model);
  const char *out_name = "out";
  if (out) CHECK_STATUS_OK(ct_save_safetensors(path, &out, &out_name, 1));
}

/* Trains the model as make_golden.py did and compares step by step; then the
 * two interchange directions (the ctensor -> torch check runs later, in
 * Python). Returns whether the files for the Python check were written. */
static bool run_golden(const golden_model *gm) {
  ct_device dev = ct_test_device();
  ct_module_opts mo = {.device = dev};
  st_file init, data, final;
  if (!st_open(&init, gm->name, "init")) return false;
  if (!st_open(&data, gm->name, "data")) return st_close(&init), false;
  if (!st_open(&final, gm->name, "final")) return st_close(&init), st_close(&data), false;

  ct_manual_seed(7); /* initial values are overwritten by torch's */
  ct_module *m = gm->make(&mo);
  CHECK_OK(m);
  bool wrote = false;
  if (!m || !load_state(m, &init, gm->name)) goto done;

  ct_tensor *params[MAX_PARAMS];
  const char *pnames[MAX_PARAMS];
  int np = ct_module_parameters(m, params, pnames, MAX_PARAMS);
  ct_optimizer *opt =
      gm->adamw ? ct_adamw_new(params, np, &gm->adam) : ct_sgd_new(params, np, &gm->sgd);
  CHECK_OK(opt);
  ct_tensor *x = ct_to(st_get(&data, "x"), dev, NULL); /* (STEPS, 64, ...) */
  ct_tensor *y = ct_to(st_get(&data, "y"), dev, NULL); /* (STEPS, 64) or (STEPS, 64, T) i64 */
  double *want_loss = ct_test_values(st_get(&data, "loss"));
  if (!opt || !x || !y || !want_loss) {
    CHECK_MSG(false, "%s: setup failed: %s", gm->name, ct_last_error_message());
    ct_optimizer_free(opt);
    free(want_loss);
    goto done;
  }

  /* Each step: loss and gradients against torch's, then the update. */
  double loss_err[STEPS], got_loss[STEPS], grad_err[STEPS];
  const char *worst_grad[STEPS];
  double max_loss_err = 0, max_grad_err = 0;
  bool steps_ok = true;
  for (int step = 0; step < STEPS; step++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(opt);
    ct_tensor *logits = ct_module_forward(m, ct_select(x, 0, step));
    /* A sequence model's (N, T, C) logits: one prediction per position. */
    ct_tensor *loss =
        ct_cross_entropy(ct_flatten(logits, 0, -2), ct_flatten(ct_select(y, 0, step), 0, -1), NULL);
    bool ok =
        loss && ct_backward(loss, NULL, NULL) == CT_OK && ct_item(loss, &got_loss[step]) == CT_OK;
    CHECK_MSG(ok, "%s step %d: forward/backward failed: %s", gm->name, step,
              ct_last_error_message());
    grad_err[step] = 0;
    worst_grad[step] = "-";
    for (int i = 0; ok && i < np; i++) {
      char key[128];
      snprintf(key, sizeof key, "grad.%d.%s", step, pnames[i]);
      double e = norm_max_err(ct_grad(params[i]), st_get(&data, key));
      if (!(e <= grad_err[step])) grad_err[step] = e, worst_grad[step] = pnames[i];
    }
    ok = ok && ct_optimizer_step(opt) == CT_OK;
    ct_scope_end();
    if (!ok) {
      steps_ok = false;
      break;
    }
    loss_err[step] = fabs(got_loss[step] - want_loss[step]) / fabs(want_loss[step]);
    if (!(loss_err[step] <= max_loss_err)) max_loss_err = loss_err[step];
    if (!(grad_err[step] <= max_grad_err)) max_grad_err = grad_err[step];
  }

  if (steps_ok) {
    bool pass = max_loss_err <= TOL && max_grad_err <= GRAD_TOL;
    FILE *out = pass ? stdout : stderr;
    if (gm->adamw)
      fprintf(out, "%s [%s]: %d AdamW steps against torch (lr %g, weight decay %g)\n", gm->name,
              ct_device_name(dev), STEPS, gm->adam.lr, gm->adam.weight_decay);
    else
      fprintf(out, "%s [%s]: %d SGD steps against torch (lr %g, momentum %g)\n", gm->name,
              ct_device_name(dev), STEPS, gm->sgd.lr, gm->sgd.momentum);
    fprintf(out, "  step  torch loss    ctensor loss  rel. diff   grad err (worst param)\n");
    for (int s = 0; s < STEPS; s++)
      fprintf(out, "  %4d  %.8f  %.8f  %.2e   %.2e (%s)%s\n", s, want_loss[s], got_loss[s],
              loss_err[s], grad_err[s], worst_grad[s],
              loss_err[s] <= TOL && grad_err[s] <= GRAD_TOL ? "" : "  <-- over tolerance");
    CHECK_MSG(max_loss_err <= TOL,
              "%s: loss differs from torch's by up to %.3g (relative), tolerance %g", gm->name,
              max_loss_err, TOL);
    CHECK_MSG(max_grad_err <= GRAD_TOL,
              "%s: gradients differ from torch's by up to %.3g, tolerance %g", gm->name,
              max_grad_err, GRAD_TOL);
    /* Final weights. */
    double max_w_err = 0;
    /* AdamW: an element whose gradient is at rounding level (the libraries'
     * GEMMs sum in other orders: other CPUs, other kernels) moves by about
     * lr * |g| / eps per step in either library, whatever its sign: up to
     * ADAM_ROUNDING_MOVES of lr in 20 steps. Such an element is held to that
     * absolute bound instead; the others still meet TOL (seen on an AVX-512
     * machine: 1 element of 1024 off by 4.6e-7, the tensor's largest 0.039). */
    const double ADAM_ROUNDING_MOVES = 1e-3;
    for (int i = 0; i < np; i++) {
      double abs_e, e = max_errs(params[i], st_get(&final, pnames[i]), &abs_e);
      bool ok = e <= TOL || (gm->adamw && abs_e <= ADAM_ROUNDING_MOVES * gm->adam.lr);
      CHECK_MSG(ok, "%s: final %s differs from torch's: normalized max error %.3g (absolute %.3g)",
                gm->name, pnames[i], e, abs_e);
      if (!(e <= max_w_err)) max_w_err = e;
    }
    printf("%s [%s]: max loss rel. diff %.3g, max grad err %.3g, max final-weight err %.3g\n",
           gm->name, ct_device_name(dev), max_loss_err, max_grad_err, max_w_err);
  }
  free(want_loss);
  ct_free(x);
  ct_free(y);

  /* ctensor -> torch: save the trained model for make_golden.py check. */
  ct_tensor *probe_x = ct_to(st_get(&data, "probe_x"), dev, NULL);
  CHECK_OK(probe_x);
  if (probe_x) {
    save_for_torch(m, gm->name, probe_x);
    wrote = true;
  }
  ct_optimizer_free(opt);
  ct_module_free(m);

  /* torch -> ctensor: torch's trained weights in a fresh model give torch's
   * outputs on the probe input. */
  ct_manual_seed(8);
  m = gm->make(&mo);
  CHECK_OK(m);
  if (m && probe_x && load_state(m, &final, gm->name)) {
    ct_no_grad_begin();
    ct_tensor *out = ct_module_forward(m, probe_x);
    ct_no_grad_end();
    double e = norm_max_err(out, st_get(&data, "probe_out"));
    printf("%s [%s]: torch-trained weights in ctensor: probe outputs normalized max error %.3g\n",
           gm->name, ct_device_name(dev), e);
    CHECK_MSG(e <= TOL, "%s: torch's weights in ctensor give other outputs: error %.3g", gm->name,
              e);
    ct_free(out);
  }
  ct_free(probe_x);
done:
  ct_module_free(m);
  st_close(&init);
  st_close(&data);
  st_close(&final);
  return wrote;
}

CT_TEST(training_matches_pytorch_step_by_step) {
  const char *python = ct_test_python_with_torch();
  if (!python) {
    ct_test_skip("no python3 with torch (Debian: apt install python3-torch python3-numpy)");
    return;
  }
  if (!find_script()) {
    char msg[1200];
    snprintf(msg, sizeof msg, "%s not found (set CT_GOLDEN_SCRIPT)", golden_script);
    ct_test_skip(msg);
    return;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(golden_dir, sizeof golden_dir, "%s/ct_golden_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(golden_dir)) {
    ct_test_fail(__FILE__, __LINE__, "mkdtemp(%s) failed", golden_dir);
    *golden_dir = 0;
    return;
  }
  if (run_python(python, "generate")) {
    const golden_model models[] = {
        {.name = "mlp", .make = simple_nn_new, .sgd = {.lr = 0.01}},
        {.name = "cnn", .make = cifar_net_new, .sgd = {.lr = 0.01, .momentum = 0.9}},
        {.name = "gpt",
         .make = tiny_gpt_new,
         .adamw = true,
         .adam = {.lr = 1e-3,
                  .beta1 = 0.9,
                  .beta2 = 0.95,
                  .eps = 1e-6,
                  .weight_decay = 0.1,
                  .as_given = true}},
    };
    bool wrote = true;
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
      wrote = run_golden(&models[i]) && wrote;
    /* ctensor -> torch, for both models in one Python run. */
    if (wrote)
      run_python(python, "check");
    else
      CHECK_MSG(false, "the models for the PyTorch check were not written");
  }
  if (getenv("CT_GOLDEN_KEEP")) printf("golden files kept in %s\n", golden_dir);
  remove_golden_dir();
}
