/* Modules: PyTorch state_dict names, parameter shapes and counts, default
 * initializations (bounds and statistics), moves that keep handles,
 * train/eval, zero_grad, forward values and errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static ct_module_opts mopts(void) { return (ct_module_opts){.device = ct_test_device()}; }

static void check_names(ct_module *m, bool state, const char *const *want, int n) {
  const char *names[32];
  ct_tensor *ts[32];
  int got = state ? ct_module_state(m, ts, names, 32) : ct_module_parameters(m, ts, names, 32);
  CHECK_MSG(got == n, "%d names, want %d", got, n);
  for (int i = 0; i < n && i < got; i++) {
    CHECK_MSG(!strcmp(names[i], want[i]), "name %d: '%s', want '%s'", i, names[i], want[i]);
    CHECK(ct_module_get(m, names[i]) == ts[i]);
  }
}

CT_TEST(sequential_names_and_shapes) {
  ct_module_opts o = mopts();
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_linear_new(784, 128, true, &o));
  ct_sequential_add(net, ct_relu_new());
  ct_sequential_add(net, ct_linear_new(128, 10, true, &o));
  CHECK_OK(net);
  check_names(net, false, (const char *[]){"0.weight", "0.bias", "2.weight", "2.bias"}, 4);
  CHECK_SHAPE(ct_module_get(net, "0.weight"), 128, 784);
  CHECK_SHAPE(ct_module_get(net, "2.bias"), 10);
  CHECK(ct_module_get(net, "1.weight") == NULL && ct_module_get(net, "9.bias") == NULL);
  CHECK(!strcmp(ct_module_type_name(ct_module_child(net, "1")), "ReLU"));
  ct_tensor *ps[4];
  int n = ct_module_parameters(net, ps, NULL, 4);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    total += ct_numel(ps[i]);
    CHECK(ct_requires_grad(ps[i]) && ct_is_leaf(ps[i]));
    CHECK(ct_device_equal(ct_device_of(ps[i]), ct_test_device()));
  }
  CHECK(total == 784 * 128 + 128 + 128 * 10 + 10); /* torch: 101770 */
  ct_module_free(net);
}

/* The seed's SimpleNN: fc1 -> relu -> fc2, plus an own parameter. */
typedef struct simple_nn {
  ct_module *fc1, *fc2;
} simple_nn;

static ct_tensor *simple_forward(ct_module *m, void *self, const ct_tensor *x) {
  simple_nn *s = self;
  return ct_module_forward(s->fc2, ct_relu(ct_module_forward(s->fc1, x)));
}
static const ct_module_vtable simple_vt = {"SimpleNN", simple_forward, free};

static ct_module *simple_new(void) {
  ct_module_opts o = mopts();
  simple_nn *s = calloc(1, sizeof *s);
  ct_module *m = ct_module_new(&simple_vt, s);
  ct_module_register_parameter(m, "scale", ct_ones(CT_SHAPE(1), &(ct_tensor_opts){.device = o.device}));
  s->fc1 = ct_module_register_module(m, "fc1", ct_linear_new(10, 5, true, &o));
  s->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(5, 2, true, &o));
  return m;
}

CT_TEST(user_module_names_forward_and_errors) {
  ct_module *m = simple_new();
  CHECK_OK(m);
  CHECK(ct_module_self(m) != NULL);
  CHECK(ct_module_self(ct_module_child(m, "fc1")) == NULL); /* built-ins hide theirs */
  check_names(m, false,
              (const char *[]){"scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}, 5);
  /* Forward equals the formula on the parameters' values. */
  double xv[3 * 10];
  for (int i = 0; i < 30; i++) xv[i] = sin(i * 0.7);
  ct_tensor *x = ct_test_make(xv, CT_SHAPE(3, 10), CT_F32, CT_LAYOUT_CONTIG);
  ct_tensor *y = ct_module_forward(m, x);
  CHECK_OK(y);
  if (y) {
    CHECK_SHAPE(y, 3, 2);
    double *w1 = ct_test_values(ct_module_get(m, "fc1.weight"));
    double *b1 = ct_test_values(ct_module_get(m, "fc1.bias"));
    double *w2 = ct_test_values(ct_module_get(m, "fc2.weight"));
    double *b2 = ct_test_values(ct_module_get(m, "fc2.bias"));
    double want[6];
    for (int r = 0; r < 3; r++)
      for (int o = 0; o < 2; o++) {
        double acc = b2[o];
        for (int h = 0; h < 5; h++) {
          double a = b1[h];
          for (int i = 0; i < 10; i++) a += xv[r * 10 + i] * w1[h * 10 + i];
          acc += (a > 0 ? a : 0) * w2[o * 5 + h];
        }
        want[r * 2 + o] = acc;
      }
    CHECK_CLOSE(y, want, 1e-5, 1e-5);
    free(w1), free(b1), free(w2), free(b2);
  }
  /* Wrong input width: a shape error from the Linear. */
  ct_tensor *bad = ct_zeros(CT_SHAPE(3, 20), &(ct_tensor_opts){.device = ct_test_device()});
  CHECK_ERR(ct_module_forward(m, bad), CT_ERR_SHAPE);
  /* Registration errors. */
  CHECK_ERR(ct_module_register_parameter(m, "scale", ct_ones(CT_SHAPE(1), NULL)), CT_ERR_ARG);
  CHECK_ERR(ct_module_register_parameter(m, "a.b", ct_ones(CT_SHAPE(1), NULL)), CT_ERR_ARG);
  CHECK_ERR(ct_module_register_parameter(m, "idx", ct_ones(CT_SHAPE(1), &(ct_tensor_opts){.dtype = CT_I64})),
            CT_ERR_DTYPE);
  CHECK_ERR(ct_module_register_module(m, "fc1", ct_relu_new()), CT_ERR_ARG);
  CHECK_ERR(ct_sequential_add(m, ct_relu_new()), CT_ERR_ARG);
  CHECK_ERR(ct_linear_new(3, 2, true, &(ct_module_opts){.dtype = CT_I32}), CT_ERR_DTYPE);
  CHECK_ERR(ct_linear_new(-1, 2, true, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_dropout_new(1.5), CT_ERR_ARG);
  ct_module_free(m);
  ct_module_free(NULL);
}

CT_TEST(batch_norm_state_dict_matches_torch) {
  ct_module_opts o = mopts();
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_conv2d_new(1, 2, 3, NULL, true, &o));
  ct_sequential_add(net, ct_batch_norm2d_new(2, 1e-5, 0.1, &o));
  ct_sequential_add(net, ct_layer_norm_new(CT_SHAPE(4), 1e-5, &o));
  ct_sequential_add(net, ct_embedding_new(7, 3, &o));
  CHECK_OK(net);
  /* torch: [k for k in nn.Sequential(Conv2d(1,2,3), BatchNorm2d(2), LayerNorm(4),
   *         Embedding(7,3)).state_dict()] */
  check_names(net, true,
              (const char *[]){"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                               "1.running_var", "1.num_batches_tracked", "2.weight", "2.bias",
                               "3.weight"},
              10);
  check_names(net, false,
              (const char *[]){"0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias",
                               "3.weight"},
              7);
  ct_tensor *nbt = ct_module_get(net, "1.num_batches_tracked");
  CHECK(ct_dtype_of(nbt) == CT_I64 && ct_ndim(nbt) == 0 && !ct_requires_grad(nbt));
  CHECK_SHAPE(ct_module_get(net, "0.weight"), 2, 1, 3, 3);
  CHECK_CLOSE(ct_module_get(net, "1.weight"), ((double[]){1, 1}), 0, 0);
  CHECK_CLOSE(ct_module_get(net, "1.running_var"), ((double[]){1, 1}), 0, 0);
  CHECK_CLOSE(ct_module_get(net, "2.bias"), ((double[]){0, 0, 0, 0}), 0, 0);
  /* A training forward through the BatchNorm counts batches; eval does not. */
  ct_module *bn = ct_module_child(net, "1");
  double xv[2 * 2 * 2 * 2];
  for (int i = 0; i < 16; i++) xv[i] = i * 0.25 - 1;
  ct_tensor *x = ct_test_make(xv, CT_SHAPE(2, 2, 2, 2), CT_F32, CT_LAYOUT_CONTIG);
  CHECK_OK(ct_module_forward(bn, x));
  CHECK_CLOSE(nbt, ((double[]){1}), 0, 0);
  ct_module_train(net, false);
  CHECK(!ct_module_is_training(bn));
  CHECK_OK(ct_module_forward(bn, x));
  CHECK_CLOSE(nbt, ((double[]){1}), 0, 0);
  CHECK_ERR(ct_module_forward(bn, ct_flatten(x, 0, -1)), CT_ERR_SHAPE);
  ct_module_free(net);
  /* momentum 0 is torch's "frozen statistics"; out-of-range values fail */
  ct_module *frozen = ct_batch_norm2d_new(2, 1e-5, 0.0, &o);
  CHECK_OK(frozen);
  CHECK_OK(ct_module_forward(frozen, x));
  CHECK_CLOSE(ct_module_get(frozen, "running_mean"), ((double[]){0, 0}), 0, 0);
  CHECK_CLOSE(ct_module_get(frozen, "running_var"), ((double[]){1, 1}), 0, 0);
  ct_module_free(frozen);
  CHECK_ERR(ct_batch_norm2d_new(2, 1e-5, -0.1, &o), CT_ERR_ARG);
  CHECK_ERR(ct_batch_norm2d_new(2, -1e-5, 0.1, &o), CT_ERR_ARG);
  CHECK_ERR(ct_layer_norm_new(CT_SHAPE(4), NAN, &o), CT_ERR_ARG);
}

/* Mean and variance of t's values. */
static void stats(const ct_tensor *t, double *mean, double *var, double *maxabs) {
  double *v = ct_test_values(t);
  int64_t n = ct_numel(t);
  double s = 0, s2 = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    s += v[i];
    m = fmax(m, fabs(v[i]));
  }
  *mean = s / (double)n;
  for (int64_t i = 0; i < n; i++) s2 += (v[i] - *mean) * (v[i] - *mean);
  *var = s2 / (double)n;
  *maxabs = m;
  free(v);
}

CT_TEST(default_initializations) {
  ct_module_opts o = mopts();
  ct_manual_seed(1234);
  ct_module *lin = ct_linear_new(100, 200, true, &o);
  ct_module *conv = ct_conv2d_new(3, 64, 5, NULL, true, &o); /* fan_in 75 */
  ct_module *emb = ct_embedding_new(1000, 20, &o);
  CHECK_OK(lin && conv && emb);
  const struct {
    ct_tensor *t;
    double bound;
  } u[] = {{ct_module_get(lin, "weight"), 0.1}, {ct_module_get(lin, "bias"), 0.1},
           {ct_module_get(conv, "weight"), 1 / sqrt(75.0)}, {ct_module_get(conv, "bias"), 1 / sqrt(75.0)}};
  for (int i = 0; i < 4; i++) {
    double mean, var, mx;
    stats(u[i].t, &mean, &var, &mx);
    int64_t n = ct_numel(u[i].t);
    double sd = u[i].bound / sqrt(3.0); /* of U(-b, b) */
    CHECK_MSG(mx <= u[i].bound && mx > 0.8 * u[i].bound, "init %d: max |w| %g, bound %g", i, mx, u[i].bound);
    CHECK_MSG(fabs(mean) < 5 * sd / sqrt((double)n), "init %d: mean %g", i, mean);
    if (n > 1000) CHECK_MSG(fabs(var / (sd * sd) - 1) < 0.05, "init %d: var %g, want %g", i, var, sd * sd);
  }
  double mean, var, mx;
  stats(ct_module_get(emb, "weight"), &mean, &var, &mx);
  CHECK_MSG(fabs(mean) < 0.02 && fabs(var - 1) < 0.05, "embedding N(0,1): mean %g var %g", mean, var);
  /* Same seed, same weights; a generator in the options draws independently. */
  ct_manual_seed(1234);
  ct_module *lin2 = ct_linear_new(100, 200, true, &o);
  double *a = ct_test_values(ct_module_get(lin, "weight"));
  CHECK_CLOSE(ct_module_get(lin2, "weight"), a, 0, 0);
  free(a);
  ct_module_free(lin);
  ct_module_free(lin2);
  ct_module_free(conv);
  ct_module_free(emb);
}

CT_TEST(moves_keep_handles_and_gradients) {
  ct_module *m = simple_new(); /* on the device under test */
  ct_module_register_module(m, "bn", ct_batch_norm2d_new(3, 1e-5, 0.1, NULL)); /* on the CPU */
  ct_tensor *before[16];
  int n = ct_module_state(m, before, NULL, 16);
  CHECK(n == 10);
  ct_tensor *w = ct_module_get(m, "fc1.weight");
  double *wv = ct_test_values(w);
  ct_tensor *g = ct_ones_like(w, NULL);
  CHECK_STATUS_OK(ct_set_grad(w, g));
  CHECK_STATUS_OK(ct_module_to(m, ct_test_device()));
  ct_tensor *after[16];
  ct_module_state(m, after, NULL, 16);
  for (int i = 0; i < n; i++) {
    CHECK(before[i] == after[i]);
    CHECK(ct_device_equal(ct_device_of(after[i]), ct_test_device()));
  }
  CHECK(ct_grad(w) && ct_device_equal(ct_device_of(ct_grad(w)), ct_test_device()));
  CHECK_STATUS_OK(ct_module_to_dtype(m, CT_F64));
  CHECK(ct_module_get(m, "fc1.weight") == w && ct_dtype_of(w) == CT_F64);
  CHECK(ct_requires_grad(w));
  CHECK_CLOSE(w, wv, 0, 0); /* f32 -> f64 is exact */
  CHECK(ct_grad(w) && ct_dtype_of(ct_grad(w)) == CT_F64);
  CHECK(ct_dtype_of(ct_module_get(m, "bn.num_batches_tracked")) == CT_I64);
  CHECK_ERR(ct_module_to_dtype(m, CT_I32) == CT_OK, CT_ERR_DTYPE);
  /* The forward still works in f64. */
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 10), &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  ct_tensor *y = ct_module_forward(m, x);
  CHECK_OK(y);
  CHECK(ct_dtype_of(y) == CT_F64);
  /* zero_grad clears every gradient; train/eval recurse. */
  ct_module_zero_grad(m);
  CHECK(ct_grad(w) == NULL);
  ct_module_train(m, false);
  CHECK(!ct_module_is_training(ct_module_child(m, "fc2")));
  ct_module_train(m, true);
  CHECK(ct_module_is_training(ct_module_child(m, "bn")));
  free(wv);
  ct_module_free(m);
}

CT_TEST(backward_through_modules_and_an_sgd_step) {
  ct_module_opts o = mopts();
  ct_module *net = ct_sequential_new();
  ct_sequential_add(net, ct_linear_new(4, 3, true, &o));
  ct_sequential_add(net, ct_tanh_new());
  ct_sequential_add(net, ct_flatten_new(0, -1));
  ct_tensor *ps[2];
  ct_module_parameters(net, ps, NULL, 2);
  ct_optimizer *opt = ct_sgd_new(ps, 2, &(ct_sgd_opts){.lr = 0.5});
  ct_tensor *x = ct_ones(CT_SHAPE(2, 4), &(ct_tensor_opts){.device = ct_test_device()});
  ct_tensor *y = ct_module_forward(net, x); /* (6,) after the Flatten */
  CHECK_OK(y);
  CHECK_STATUS_OK(ct_backward(y, ct_ones_like(y, NULL), NULL));
  CHECK(ct_grad(ps[0]) != NULL && ct_grad(ps[1]) != NULL);
  double *b = ct_test_values(ps[1]);
  double *gb = ct_grad(ps[1]) ? ct_test_values(ct_grad(ps[1])) : NULL;
  CHECK_STATUS_OK(ct_optimizer_step(opt));
  if (gb) {
    for (int i = 0; i < 3; i++) b[i] -= 0.5 * gb[i];
    CHECK_CLOSE(ps[1], b, 1e-6, 1e-6);
  }
  free(b);
  free(gb);
  ct_optimizer_free(opt);
  ct_module_free(net);
}
