/* Mixed precision: which dtype each op list runs in inside autocast regions
 * (nesting, other device types, f64 and integers left alone), gradients
 * reaching f32 leaves, and the gradient scaler's scale/unscale/skip/grow
 * cycle, including a real f16 overflow that it recovers from; its fused
 * unscale (the backend's amp_unscale) against the per-parameter ops it
 * replaces, bit for bit. */
#include "backend/backend.h" /* white box: the amp_unscale slot */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static const ct_dtype HALVES[] = {CT_F16, CT_BF16};

static ct_device_type dev_type(void) { return (ct_device_type)ct_test_device().type; }
static ct_device_type other_type(void) {
  return dev_type() == CT_DEVICE_CPU ? CT_DEVICE_CUDA : CT_DEVICE_CPU;
}

static ct_tensor *make(const double *v, const int64_t *shape, int nd, ct_dtype dt) {
  return ct_test_make(v, shape, nd, dt, CT_LAYOUT_CONTIG);
}

static const double X[12] = {0.5, -1.25, 2.0, 0.75, 1.5, -0.5, -2.0, 0.25, 1.0, 0.125, -0.75, 1.75};
static const double W[6] = {1.0, -0.5, 0.25, 2.0, -1.5, 0.75};

/* (4, 3) @ (3, 2) in double. */
static void ref_mm(double out[8]) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) {
      out[i * 2 + j] = 0;
      for (int k = 0; k < 3; k++) out[i * 2 + j] += X[i * 3 + k] * W[k * 2 + j];
    }
}

CT_TEST(autocast_runs_each_op_list_in_its_dtype) {
  double expect[8];
  ref_mm(expect);
  for (int h = 0; h < 2; h++) {
    ct_dtype half = HALVES[h];
    ct_tensor *x = make(X, CT_SHAPE(4, 3), CT_F32), *w = make(W, CT_SHAPE(3, 2), CT_F32);
    ct_tensor *wt = ct_transpose(w, 0, 1),
              *b = ct_zeros(CT_SHAPE(2), &(ct_tensor_opts){.device = ct_test_device()});
    CHECK(!ct_autocast_is_enabled(dev_type()));
    CHECK_STATUS_OK(ct_autocast_begin(dev_type(), half, true));
    CHECK(ct_autocast_is_enabled(dev_type()) && ct_autocast_dtype(dev_type()) == half);
    CHECK(!ct_autocast_is_enabled(other_type()));

    /* lower precision: matmul, mm, linear, conv2d */
    ct_tensor *y = ct_mm(x, w);
    CHECK_OK(y);
    CHECK(ct_dtype_of(y) == half);
    CHECK_CLOSE(y, expect, ct_test_rtol(half), ct_test_atol(half));
    CHECK(ct_dtype_of(ct_matmul(x, w)) == half);
    ct_tensor *lin = ct_linear(x, wt, b);
    CHECK_OK(lin);
    CHECK(ct_dtype_of(lin) == half);
    CHECK_CLOSE(lin, expect, ct_test_rtol(half), ct_test_atol(half));
    ct_tensor *img = ct_reshape(x, CT_SHAPE(1, 1, 4, 3)),
              *k = ct_reshape(ct_slice(w, 0, 0, 1, 1), CT_SHAPE(1, 1, 1, 2));
    ct_tensor *conv = ct_conv2d(img, k, NULL, NULL);
    CHECK_OK(conv);
    CHECK(ct_dtype_of(conv) == half);

    /* f32: softmax, log_softmax, the losses; inputs y are half here */
    CHECK(ct_dtype_of(ct_softmax(y, 1)) == CT_F32);
    CHECK(ct_dtype_of(ct_log_softmax(y, 1)) == CT_F32);
    ct_tensor *target =
        ct_zeros(CT_SHAPE(4), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
    ct_tensor *ce = ct_cross_entropy(y, target, NULL);
    CHECK_OK(ce);
    CHECK(ct_dtype_of(ce) == CT_F32);
    CHECK(ct_dtype_of(ct_mse_loss(y, ct_cast(y, CT_F32), NULL)) == CT_F32);
    CHECK(ct_dtype_of(ct_layer_norm(y, 1, NULL, NULL, 1e-5)) == CT_F32);

    /* everything else: the inputs' dtypes (binary ops promote) */
    CHECK(ct_dtype_of(ct_relu(y)) == half);
    CHECK(ct_dtype_of(ct_add(y, ct_cast(y, CT_F32))) == CT_F32);
    /* f64 and integers are never cast */
    CHECK(ct_dtype_of(ct_mm(ct_cast(x, CT_F64), ct_cast(w, CT_F64))) == CT_F64);
    CHECK(ct_dtype_of(ct_mm(ct_cast(x, CT_I32), ct_cast(w, CT_I32))) == CT_I32);

    /* a region that turns it off, and one for the other device type */
    CHECK_STATUS_OK(ct_autocast_begin(dev_type(), CT_F32, false));
    CHECK(ct_dtype_of(ct_mm(x, w)) == CT_F32);
    CHECK_STATUS_OK(ct_autocast_begin(other_type(), half, true));
    CHECK(ct_dtype_of(ct_mm(x, w)) == CT_F32);
    ct_autocast_end();
    ct_autocast_end();
    CHECK(ct_dtype_of(ct_mm(x, w)) == half);
    ct_autocast_end();
    CHECK(!ct_autocast_is_enabled(dev_type()));
    CHECK(ct_dtype_of(ct_mm(x, w)) == CT_F32);
  }
}

/* The gradient of a cross-entropy through an autocast linear layer reaches
 * the f32 weight in f32, close to the f32 gradient; backward called inside
 * the region keeps the forward's dtypes. */
CT_TEST(autocast_gradients_reach_f32_leaves) {
  for (int h = 0; h < 2; h++) {
    ct_dtype half = HALVES[h];
    ct_tensor *g32 = NULL;
    for (int amp = 0; amp < 2; amp++) {
      ct_tensor *x = make(X, CT_SHAPE(4, 3), CT_F32);
      ct_tensor *w = ct_requires_grad_(make(W, CT_SHAPE(2, 3), CT_F32), true);
      ct_tensor *target =
          ct_test_make((double[]){0, 1, 1, 0}, CT_SHAPE(4), CT_I64, CT_LAYOUT_CONTIG);
      if (amp) CHECK_STATUS_OK(ct_autocast_begin(dev_type(), half, true));
      ct_tensor *logits = ct_linear(x, w, NULL);
      ct_tensor *loss = ct_cross_entropy(logits, target, NULL);
      CHECK_OK(loss);
      CHECK_STATUS_OK(ct_backward(loss, NULL, NULL));
      if (amp) ct_autocast_end();
      ct_tensor *g = ct_grad(w);
      CHECK_OK(g);
      if (!g) return;
      CHECK(ct_dtype_of(g) == CT_F32);
      if (!amp) {
        g32 = ct_clone(g);
        continue;
      }
      double *ref = ct_test_values(g32);
      CHECK_CLOSE(g, ref, 4 * ct_test_rtol(half), 4 * ct_test_atol(half));
      free(ref);
    }
  }
}

CT_TEST(autocast_errors) {
  CHECK_ERR(ct_autocast_begin(dev_type(), CT_F32, true) == CT_OK, CT_ERR_DTYPE);
  CHECK_ERR(ct_autocast_begin((ct_device_type)7, CT_F16, true) == CT_OK, CT_ERR_ARG);
  for (int i = 0; i < CT_AUTOCAST_MAX_DEPTH; i++)
    CHECK_STATUS_OK(ct_autocast_begin(dev_type(), CT_BF16, true));
  CHECK_ERR_MSG(ct_autocast_begin(dev_type(), CT_BF16, true) == CT_OK, CT_ERR_STATE, "nested");
  for (int i = 0; i < CT_AUTOCAST_MAX_DEPTH; i++) ct_autocast_end();
  CHECK(!ct_autocast_is_enabled(dev_type()));
  ct_autocast_end(); /* unmatched: a no-op */
  CHECK(!ct_autocast_is_enabled(dev_type()));
}

/* A parameter p (4) with loss = sum(c * p), so that grad = c exactly. */
static const double P0[4] = {1.0, -2.0, 0.5, 3.0};
static const double C[4] = {0.25, -0.5, 1.0, 0.125};

static ct_tensor *param(void) {
  ct_tensor *p = ct_requires_grad_(make(P0, CT_SHAPE(4), CT_F32), true);
  ct_keep(p); /* referenced by the optimizer past the scope */
  return p;
}

static ct_tensor *loss_of(ct_tensor *p) {
  return ct_sum(ct_mul(p, make(C, CT_SHAPE(4), CT_F32)), NULL);
}

CT_TEST(grad_scaler_scales_unscales_and_steps) {
  ct_tensor *p = param();
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 0.5});
  ct_grad_scaler *s = ct_grad_scaler_new(&(ct_grad_scaler_opts){.growth_interval = 2});
  CHECK_OK(opt && s);
  if (!opt || !s) return;
  CHECK(ct_grad_scaler_get_scale(s) == 65536.0);
  double expect_p[4];
  memcpy(expect_p, P0, sizeof expect_p);
  double scales[3] = {65536.0, 65536.0, 131072.0}; /* grows after 2 good steps */
  for (int it = 0; it < 3; it++) {
    ct_optimizer_zero_grad(opt);
    ct_tensor *scaled = ct_grad_scaler_scale(s, loss_of(p));
    double l = 0, l0 = 0;
    CHECK_STATUS_OK(ct_item(scaled, &l));
    CHECK_STATUS_OK(ct_item(loss_of(p), &l0));
    CHECK_MSG(l == l0 * scales[it], "scaled loss %g, expected %g x %g", l, l0, scales[it]);
    CHECK_STATUS_OK(ct_backward(scaled, NULL, NULL));
    CHECK_STATUS_OK(ct_grad_scaler_unscale_(s, opt)); /* explicit, as before clipping */
    CHECK_CLOSE(ct_grad(p), C, 0, 0);                 /* exact: the scale is a power of 2 */
    bool stepped = false;
    CHECK_STATUS_OK(ct_grad_scaler_step(s, opt, &stepped));
    CHECK(stepped);
    for (int i = 0; i < 4; i++) expect_p[i] -= 0.5 * C[i];
    CHECK_CLOSE(p, expect_p, 1e-7, 1e-7);
    CHECK_STATUS_OK(ct_grad_scaler_update(s));
  }
  CHECK(ct_grad_scaler_get_scale(s) == 131072.0);
  ct_grad_scaler_state st = ct_grad_scaler_get_state(s);
  CHECK(st.scale == 131072.0 && st.growth_tracker == 1);
  ct_grad_scaler_free(s);
  ct_optimizer_free(opt);
  ct_free(p);
}

CT_TEST(grad_scaler_skips_steps_with_inf_or_nan) {
  const double bad[2] = {INFINITY, NAN};
  for (int b = 0; b < 2; b++) {
    ct_tensor *p = param(), *q = param();
    ct_tensor *ps[2] = {p, q};
    ct_optimizer *opt = ct_sgd_new(ps, 2, &(ct_sgd_opts){.lr = 0.5});
    ct_grad_scaler *s = ct_grad_scaler_new(&(ct_grad_scaler_opts){.init_scale = 1024});
    CHECK_OK(opt && s);
    if (!opt || !s) return;
    double g[4] = {1, 2, 3, 4};
    CHECK_STATUS_OK(ct_set_grad(p, make(g, CT_SHAPE(4), CT_F32)));
    g[2] = bad[b]; /* one element of the second parameter's gradient */
    CHECK_STATUS_OK(ct_set_grad(q, make(g, CT_SHAPE(4), CT_F32)));
    bool stepped = true;
    CHECK_STATUS_OK(ct_grad_scaler_step(s, opt, &stepped));
    CHECK(!stepped);
    CHECK_CLOSE(p, P0, 0, 0);
    CHECK_CLOSE(q, P0, 0, 0);
    CHECK_STATUS_OK(ct_grad_scaler_update(s));
    CHECK(ct_grad_scaler_get_scale(s) == 512);
    CHECK(ct_grad_scaler_get_state(s).growth_tracker == 0);
    ct_grad_scaler_free(s);
    ct_optimizer_free(opt);
    ct_free(p);
    ct_free(q);
  }
}

/* d(sum(y))/dy = scale arrives at an f16 product: 65536 overflows f16 (largest
 * 65504), so the first step is skipped and the scale halved; at 32768 the
 * gradients fit and the step is taken with the exact unscaled gradient. */
CT_TEST(grad_scaler_recovers_from_a_real_f16_overflow) {
  ct_tensor *w = ct_requires_grad_(make(W, CT_SHAPE(3, 2), CT_F32), true);
  ct_keep(w);
  ct_optimizer *opt = ct_sgd_new(&w, 1, &(ct_sgd_opts){.lr = 0.125});
  ct_grad_scaler *s = ct_grad_scaler_new(NULL);
  CHECK_OK(opt && s);
  if (!opt || !s) return;
  const double xs[6] = {0.25, 0.5, -0.75, 0.125, 1.0, -0.5}; /* x (2, 3) */
  double gw[6] = {0};                                        /* x^T @ ones(2, 2) */
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 2; j++) gw[k * 2 + j] = xs[k] + xs[3 + k];
  bool steps[2];
  for (int it = 0; it < 2; it++) {
    ct_optimizer_zero_grad(opt);
    CHECK_STATUS_OK(ct_autocast_begin(dev_type(), CT_F16, true));
    ct_tensor *y = ct_mm(make(xs, CT_SHAPE(2, 3), CT_F32), w);
    ct_autocast_end();
    CHECK(ct_dtype_of(y) == CT_F16);
    ct_tensor *loss = ct_sum(ct_cast(y, CT_F32), NULL);
    CHECK_STATUS_OK(ct_backward(ct_grad_scaler_scale(s, loss), NULL, NULL));
    CHECK_STATUS_OK(ct_grad_scaler_step(s, opt, &steps[it]));
    CHECK_STATUS_OK(ct_grad_scaler_update(s));
  }
  CHECK_MSG(!steps[0] && steps[1], "stepped: %d %d (expected a skip, then a step)", steps[0],
            steps[1]);
  CHECK(ct_grad_scaler_get_scale(s) == 32768);
  double expect[6];
  for (int i = 0; i < 6; i++) expect[i] = W[i] - 0.125 * gw[i];
  CHECK_CLOSE(w, expect, 1e-3, 1e-3);
  ct_grad_scaler_free(s);
  ct_optimizer_free(opt);
  ct_free(w);
}

CT_TEST(grad_scaler_disabled_is_a_plain_step) {
  ct_tensor *p = param();
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 1});
  ct_grad_scaler *s = ct_grad_scaler_new(&(ct_grad_scaler_opts){.disabled = true});
  CHECK_OK(opt && s);
  if (!opt || !s) return;
  CHECK(ct_grad_scaler_get_scale(s) == 1);
  CHECK_STATUS_OK(ct_backward(ct_grad_scaler_scale(s, loss_of(p)), NULL, NULL));
  CHECK_CLOSE(ct_grad(p), C, 0, 0);
  bool stepped = false;
  CHECK_STATUS_OK(ct_grad_scaler_step(s, opt, &stepped));
  CHECK(stepped);
  CHECK_STATUS_OK(ct_grad_scaler_update(s));
  double expect[4];
  for (int i = 0; i < 4; i++) expect[i] = P0[i] - C[i];
  CHECK_CLOSE(p, expect, 1e-7, 1e-7);
  ct_grad_scaler_free(s);
  ct_optimizer_free(opt);
  ct_free(p);
}

CT_TEST(grad_scaler_errors) {
  CHECK_ERR(ct_grad_scaler_new(&(ct_grad_scaler_opts){.init_scale = -1}), CT_ERR_ARG);
  CHECK_ERR(ct_grad_scaler_new(&(ct_grad_scaler_opts){.growth_factor = 0.5}), CT_ERR_ARG);
  CHECK_ERR(ct_grad_scaler_new(&(ct_grad_scaler_opts){.backoff_factor = 1.5}), CT_ERR_ARG);
  CHECK_ERR(ct_grad_scaler_new(&(ct_grad_scaler_opts){.growth_interval = -3}), CT_ERR_ARG);
  ct_tensor *p = param();
  ct_optimizer *opt = ct_sgd_new(&p, 1, &(ct_sgd_opts){.lr = 1});
  ct_grad_scaler *s = ct_grad_scaler_new(NULL);
  CHECK_OK(opt && s);
  if (!opt || !s) return;
  CHECK_ERR_MSG(ct_grad_scaler_update(s) == CT_OK, CT_ERR_STATE, "step() or unscale_()");
  CHECK_STATUS_OK(ct_backward(ct_grad_scaler_scale(s, loss_of(p)), NULL, NULL));
  CHECK_STATUS_OK(ct_grad_scaler_unscale_(s, opt));
  CHECK_ERR_MSG(ct_grad_scaler_unscale_(s, opt) == CT_OK, CT_ERR_STATE, "already");
  CHECK_STATUS_OK(ct_grad_scaler_step(s, opt, NULL));
  CHECK_ERR_MSG(ct_grad_scaler_step(s, opt, NULL) == CT_OK, CT_ERR_STATE, "already");
  CHECK_STATUS_OK(ct_grad_scaler_update(s));
  CHECK_ERR(ct_grad_scaler_step(NULL, opt, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_grad_scaler_load_state(s, (ct_grad_scaler_state){.scale = NAN}) == CT_OK,
            CT_ERR_ARG);
  CHECK_ERR(ct_grad_scaler_load_state(
                s, (ct_grad_scaler_state){.scale = 8, .growth_tracker = -1}) == CT_OK,
            CT_ERR_ARG);
  CHECK_STATUS_OK(
      ct_grad_scaler_load_state(s, (ct_grad_scaler_state){.scale = 8, .growth_tracker = 5}));
  ct_grad_scaler_state st = ct_grad_scaler_get_state(s);
  CHECK(st.scale == 8 && st.growth_tracker == 5);
  ct_grad_scaler_free(s);
  ct_optimizer_free(opt);
  ct_free(p);
}

/* ---- The fused unscale ----------------------------------------------------------------- */

/* The bytes of t, on the host (malloc'd; *n their count). */
static unsigned char *host_bytes(const ct_tensor *t, size_t *n) {
  ct_tensor *c = ct_contiguous(ct_to(t, ct_cpu(), NULL));
  *n = c ? ct_nbytes(c) : 0;
  unsigned char *b = malloc(*n ? *n : 1);
  if (c && b) memcpy(b, ct_data_ptr(c), *n);
  return b;
}

static bool same_bytes(const ct_tensor *a, const ct_tensor *b) {
  size_t na, nb;
  unsigned char *x = host_bytes(a, &na), *y = host_bytes(b, &nb);
  bool same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

/* The per-parameter path: isfinite, all, mul_scalar_ on a copy of g. */
static ct_tensor *unscaled_by_ops(const ct_tensor *g, double inv, bool *finite) {
  double ok = 0;
  CHECK_STATUS_OK(ct_item(ct_all(ct_isfinite(g), NULL), &ok));
  *finite = ok != 0;
  ct_tensor *e = ct_clone(g);
  CHECK_OK(e && ct_mul_scalar_(e, inv));
  return e;
}

/* The backend's amp_unscale over gradients of all four float dtypes, more
 * than a GPU launch holds (110 tensors or 320 chunks), sizes around the
 * chunks, scales that round (1/3) or exceed 1 (halves overflow to inf), an
 * inf, -inf or NaN in one gradient: every gradient's bytes and the verdict
 * equal the per-parameter ops'. */
CT_TEST(fused_unscale_matches_per_parameter_ops) {
  enum { N = 130 };
  const ct_dtype dts[4] = {CT_F32, CT_F64, CT_F16, CT_BF16};
  const int64_t sizes[] = {0, 1, 17, 1000, 16383, 16384, 16385, 40000};
  const double invs[3] = {1.0 / 65536, 1.0 / 3, 4.0 / 3};
  const double bads[4] = {0, INFINITY, -INFINITY, NAN};
  for (int k = 0; k < 4; k++) {
    ct_scope_begin();
    double inv = invs[k % 3];
    ct_tensor *g[N], *want[N];
    bool want_found = false;
    for (int i = 0; i < N; i++) {
      /* one gradient of more chunks than a launch holds (320) in the first case */
      int64_t n = sizes[(i * 7 + k) % 8] + (i == 5 ? (k == 0 ? 320 : 25) * 16384 : 0);
      double *v = ct_test_random(n ? n : 1, -3e4, 3e4, (unsigned)(i + 100 * k));
      if (k > 0 && i == 77 && n > 0) v[n / 2] = bads[k];
      g[i] = ct_test_make(v, CT_SHAPE(n), dts[i % 4], CT_LAYOUT_CONTIG);
      free(v);
      bool finite = true;
      want[i] = unscaled_by_ops(g[i], inv, &finite);
      want_found |= !finite;
    }
    ct_tensor_opts fo = ct_test_opts(CT_F32);
    ct_tensor *found = ct_zeros(CT_SHAPE(1), &fo);
    const ct_backend *be = ct__backend_of(found);
    CHECK(be->amp_unscale != NULL);
    if (!be->amp_unscale) return;
    CHECK_STATUS_OK(be->amp_unscale(g, N, inv, found));
    double f = -1;
    CHECK_STATUS_OK(ct_item(found, &f));
    CHECK_MSG(f == (want_found ? 1.0 : 0.0), "case %d: found_inf %g, the ops say %d", k, f,
              want_found);
    for (int i = 0; i < N; i++)
      CHECK_MSG(same_bytes(g[i], want[i]), "case %d: gradient %d (%s, %lld elements) differs", k, i,
                ct_dtype_name(dts[i % 4]), (long long)ct_numel(g[i]));
    ct_scope_end();
  }
}

/* Through the scaler: f32 and f64 parameters, one gradient non-contiguous
 * (the per-parameter path inside the scaler), an inf in either kind. */
CT_TEST(grad_scaler_unscales_fused_and_strided_gradients_alike) {
  for (int where = 0; where < 3; where++) { /* no inf, inf in a fused one, inf in the strided one */
    ct_scope_begin();
    ct_tensor *ps[4];
    const ct_dtype pdt[4] = {CT_F32, CT_F64, CT_F32, CT_F32};
    for (int i = 0; i < 4; i++) {
      double z[12] = {0};
      ps[i] = ct_requires_grad_(make(z, CT_SHAPE(4, 3), pdt[i]), true);
    }
    ct_tensor *want[4];
    for (int i = 0; i < 4; i++) {
      double *v = ct_test_random(12, -100, 100, (unsigned)(7 * i + where));
      if ((where == 1 && i == 1) || (where == 2 && i == 3)) v[5] = INFINITY;
      ct_tensor *gi = i == 3 ? ct_transpose(make(v, CT_SHAPE(3, 4), pdt[i]), 0, 1) /* strided */
                             : make(v, CT_SHAPE(4, 3), pdt[i]);
      free(v);
      CHECK_STATUS_OK(ct_set_grad(ps[i], gi));
      bool finite;
      want[i] = unscaled_by_ops(gi, 1.0 / 1024, &finite);
    }
    CHECK(!ct_is_contiguous(ct_grad(ps[3])));
    ct_optimizer *opt = ct_sgd_new(ps, 4, &(ct_sgd_opts){.lr = 0.5});
    ct_grad_scaler *s = ct_grad_scaler_new(&(ct_grad_scaler_opts){.init_scale = 1024});
    CHECK_OK(opt && s);
    CHECK_STATUS_OK(ct_grad_scaler_unscale_(s, opt));
    for (int i = 0; i < 4; i++)
      CHECK_MSG(same_bytes(ct_grad(ps[i]), want[i]), "case %d: gradient %d", where, i);
    bool stepped = false;
    CHECK_STATUS_OK(ct_grad_scaler_step(s, opt, &stepped));
    CHECK_MSG(stepped == (where == 0), "case %d: stepped %d", where, stepped);
    ct_grad_scaler_free(s);
    ct_optimizer_free(opt);
    ct_scope_end();
  }
}
