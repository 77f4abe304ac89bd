/* Autograd: finite-difference checks of every differentiable core op, and the
 * engine's behaviour (accumulation, retain_graph, no_grad, detach, version
 * counters, errors). */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

/* ---- one-input ops through a table ---- */

typedef struct unary_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *);
  double lo, hi; /* input range where the op is smooth */
} unary_case;

static ct_tensor *call_unary(ct_tensor *const *in, void *ctx) {
  return ((const unary_case *)ctx)->fn(in[0]);
}

CT_TEST(unary_gradients) {
  static const unary_case cases[] = {
      {"neg", ct_neg, -2, 2},         {"abs", ct_abs, 0.1, 2},       {"exp", ct_exp, -2, 2},
      {"expm1", ct_expm1, -2, 2},     {"log", ct_log, 0.5, 3},       {"log1p", ct_log1p, -0.5, 2},
      {"log2", ct_log2, 0.5, 3},      {"sqrt", ct_sqrt, 0.5, 3},     {"rsqrt", ct_rsqrt, 0.5, 3},
      {"sin", ct_sin, -2, 2},         {"cos", ct_cos, -2, 2},        {"tan", ct_tan, -1, 1},
      {"tanh", ct_tanh, -2, 2},       {"erf", ct_erf, -2, 2},        {"sigmoid", ct_sigmoid, -3, 3},
      {"relu", ct_relu, 0.1, 2},      {"gelu", ct_gelu, -2, 2},      {"gelu_tanh", ct_gelu_tanh, -2, 2},
      {"silu", ct_silu, -2, 2},       {"softplus", ct_softplus, -2, 2},
      {"reciprocal", ct_reciprocal, 0.5, 2}, {"square", ct_square, -2, 2},
      {"log10", ct_log10, 0.5, 3},
      {"exp2", ct_exp2, -2, 2},
      {"sinh", ct_sinh, -2, 2},
      {"cosh", ct_cosh, -2, 2},
      {"atanh", ct_atanh, -0.8, 0.8},
      {"atan", ct_atan, -2, 2},
      {"asinh", ct_asinh, -2, 2},
      {"asin", ct_asin, -0.8, 0.8},
      {"acosh", ct_acosh, 1.2, 3},
      {"acos", ct_acos, -0.8, 0.8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 3), cases[i].lo, cases[i].hi, (unsigned)i);
    CHECK_GRADIENTS(cases[i].name, call_unary, (void *)&cases[i], &x, 1);
  }
}

static ct_tensor *f_clamp(ct_tensor *const *in, void *ctx) { return ct_clamp(in[0], -0.5, 0.5); }
static ct_tensor *f_leaky(ct_tensor *const *in, void *ctx) { return ct_leaky_relu(in[0], 0.1); }
CT_TEST(parameterized_unary_gradients) {
  /* values away from the kinks */
  ct_tensor *x = ct_requires_grad_(
      ct_test_make((double[]){-1.3, -0.2, 0.3, 0.9, -0.7, 0.1}, CT_SHAPE(6), CT_F64, CT_LAYOUT_CONTIG), true);
  CHECK_GRADIENTS("clamp", f_clamp, NULL, &x, 1);
  CHECK_GRADIENTS("leaky_relu", f_leaky, NULL, &x, 1);
}

/* ---- binary ops with broadcasting ---- */

typedef struct binary_case {
  const char *name;
  ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *);
  double lo, hi;
} binary_case;

static ct_tensor *call_binary(ct_tensor *const *in, void *ctx) {
  return ((const binary_case *)ctx)->fn(in[0], in[1]);
}

CT_TEST(binary_gradients_broadcast) {
  static const binary_case cases[] = {
      {"add", ct_add, -2, 2},         {"sub", ct_sub, -2, 2},         {"mul", ct_mul, -2, 2},
      {"div", ct_div, 0.5, 2},        {"pow", ct_pow, 0.5, 2},        {"maximum", ct_maximum, -2, 2},
      {"minimum", ct_minimum, -2, 2}, {"atan2", ct_atan2, 0.5, 2},    {"fmod", ct_fmod, 0.6, 2.9},
      {"remainder", ct_remainder, 0.6, 2.9},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_tensor *in[2] = {ct_gradcheck_input(CT_SHAPE(2, 3), cases[i].lo, cases[i].hi, 10 + (unsigned)i),
                        ct_gradcheck_input(CT_SHAPE(3), cases[i].lo, cases[i].hi, 40 + (unsigned)i)};
    CHECK_GRADIENTS(cases[i].name, call_binary, (void *)&cases[i], in, 2);
  }
}

static ct_tensor *f_scalars(ct_tensor *const *in, void *ctx) {
  ct_tensor *x = in[0];
  ct_tensor *a = ct_mul_scalar(ct_add_scalar(x, 1.5), 2.0);
  ct_tensor *b = ct_div_scalar(ct_pow_scalar(x, 3.0), 4.0);
  ct_tensor *c = ct_rdiv_scalar(ct_add_scalar(x, 3.0), 2.0); /* 2 / (x + 3) */
  ct_tensor *d = ct_rsub_scalar(ct_maximum_scalar(x, 0.2), 1.0);
  return ct_add(ct_add(a, b), ct_add(c, d));
}
CT_TEST(scalar_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(4), 0.3, 2, 7);
  CHECK_GRADIENTS("scalar chain", f_scalars, NULL, &x, 1);
}

static ct_tensor *f_where(ct_tensor *const *in, void *ctx) {
  return ct_where(ct_gt_scalar(in[0], 0.0), in[0], ct_mul(in[1], in[1]));
}
static ct_tensor *f_add_scaled(ct_tensor *const *in, void *ctx) { return ct_add_scaled(in[0], in[1], -0.5); }
CT_TEST(where_and_add_scaled_gradients) {
  ct_tensor *in[2] = {ct_gradcheck_input(CT_SHAPE(3, 2), -1, 1, 3), ct_gradcheck_input(CT_SHAPE(2), -1, 1, 4)};
  CHECK_GRADIENTS("where", f_where, NULL, in, 2);
  CHECK_GRADIENTS("add_scaled", f_add_scaled, NULL, in, 2);
}

/* ---- reductions ---- */

typedef struct reduce_case {
  const char *name;
  int which;
  ct_reduce_opts opts;
} reduce_case;

static ct_tensor *call_reduce(ct_tensor *const *in, void *ctx) {
  const reduce_case *c = ctx;
  const ct_reduce_opts *r = &c->opts;
  switch (c->which) {
  case 0: return ct_sum(in[0], r);
  case 1: return ct_mean(in[0], r);
  case 2: return ct_prod(in[0], r);
  case 3: return ct_max(in[0], r);
  case 4: return ct_min(in[0], r);
  case 5: return ct_logsumexp(in[0], r);
  case 6: return ct_var(in[0], r, 1);
  case 7: return ct_std(in[0], r, 0);
  case 8: return ct_norm(in[0], 2, r);
  case 9: return ct_norm(in[0], 1, r);
  case 10: return ct_norm(in[0], 3, r);
  default: return ct_norm(in[0], INFINITY, r);
  }
}

CT_TEST(reduction_gradients) {
  static const char *names[] = {"sum", "mean", "prod", "max", "min", "logsumexp", "var",
                                "std", "norm2", "norm1", "norm3", "norminf"};
  const ct_reduce_opts variants[] = {
      {.ndims = 0}, {.dims = {1}, .ndims = 1}, {.dims = {0, 2}, .ndims = 2, .keepdim = true},
      {.dims = {-1}, .ndims = 1, .keepdim = false}};
  for (int w = 0; w < 12; w++) {
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
      reduce_case c = {names[w], w, variants[v]};
      ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 3, 4), 0.5, 2, 100 + (unsigned)(w * 10 + (int)v));
      CHECK_GRADIENTS(names[w], call_reduce, &c, &x, 1);
    }
  }
}

static ct_tensor *f_max_dim(ct_tensor *const *in, void *ctx) { return ct_max_dim(in[0], 1, false, NULL); }
static ct_tensor *f_softmax(ct_tensor *const *in, void *ctx) { return ct_softmax(in[0], *(int *)ctx); }
static ct_tensor *f_log_softmax(ct_tensor *const *in, void *ctx) { return ct_log_softmax(in[0], *(int *)ctx); }
CT_TEST(max_dim_and_softmax_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(3, 4), -2, 2, 5);
  CHECK_GRADIENTS("max_dim", f_max_dim, NULL, &x, 1);
  for (int dim = -1; dim <= 1; dim++) {
    CHECK_GRADIENTS("softmax", f_softmax, &dim, &x, 1);
    CHECK_GRADIENTS("log_softmax", f_log_softmax, &dim, &x, 1);
  }
}

/* ---- matmul and linear ---- */

typedef struct mm_case { int64_t a[3], b[3]; int na, nb; } mm_case;
static ct_tensor *f_matmul(ct_tensor *const *in, void *ctx) { return ct_matmul(in[0], in[1]); }
CT_TEST(matmul_gradients) {
  static const mm_case cases[] = {
      {{3}, {3}, 1, 1},          {{2, 3}, {3, 4}, 2, 2},       {{3}, {3, 4}, 1, 2},
      {{2, 3}, {3}, 2, 1},       {{2, 2, 3}, {3, 4}, 3, 2},    {{2, 2, 3}, {2, 3, 2}, 3, 3},
      {{1, 2, 3}, {2, 3, 2}, 3, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_tensor *in[2] = {ct_gradcheck_input(cases[i].a, cases[i].na, -1, 1, 200 + (unsigned)i),
                        ct_gradcheck_input(cases[i].b, cases[i].nb, -1, 1, 300 + (unsigned)i)};
    CHECK_GRADIENTS("matmul", f_matmul, NULL, in, 2);
  }
  /* a transposed input */
  ct_tensor *a = ct_gradcheck_input(CT_SHAPE(3, 2), -1, 1, 1);
  ct_tensor *b = ct_gradcheck_input(CT_SHAPE(3, 4), -1, 1, 2);
  ct_tensor *in[2] = {a, b};
  CHECK_GRADIENTS("matmul of t()", (ct_gradcheck_fn)f_matmul, NULL, ((ct_tensor *[]){ct_t(a), b}), 2);
  (void)in;
}

static ct_tensor *f_linear(ct_tensor *const *in, void *ctx) { return ct_linear(in[0], in[1], in[2]); }
CT_TEST(linear_gradients) {
  ct_tensor *in[3] = {ct_gradcheck_input(CT_SHAPE(2, 3, 4), -1, 1, 1), ct_gradcheck_input(CT_SHAPE(5, 4), -1, 1, 2),
                      ct_gradcheck_input(CT_SHAPE(5), -1, 1, 3)};
  CHECK_GRADIENTS("linear", f_linear, NULL, in, 3);
}

/* ---- views ---- */

static ct_tensor *f_views(ct_tensor *const *in, void *ctx) {
  ct_tensor *x = in[0];                                   /* (2, 3, 4) */
  ct_tensor *a = ct_reshape(ct_transpose(x, 0, 2), CT_SHAPE(4, 6));
  ct_tensor *b = ct_slice(a, 1, 1, 6, 2);                 /* (4, 3) */
  ct_tensor *c = ct_select(ct_permute(x, (int[]){2, 0, 1}, 3), 0, 2); /* (2, 3) */
  ct_tensor *d = ct_expand(ct_unsqueeze(ct_diagonal(ct_narrow(a, 1, 0, 4), 0, 0, 1), 0), CT_SHAPE(3, 4));
  ct_tensor *e = ct_flatten(ct_squeeze(ct_unsqueeze(c, 1)), 0, -1); /* (6) */
  return ct_add(ct_sum(ct_mul(b, b), NULL), ct_add(ct_sum(d, NULL), ct_sum(ct_mul(e, e), NULL)));
}
CT_TEST(view_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(2, 3, 4), -1, 1, 9);
  CHECK_GRADIENTS("views", f_views, NULL, &x, 1);
}

/* ---- indexing ---- */

static ct_tensor *f_index(ct_tensor *const *in, void *ctx) {
  ct_tensor *x = in[0], *src = in[1]; /* (3, 4), (2, 4) */
  ct_tensor *idx = ct_from_data(((int64_t[]){2, 0, 2}), CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
  ct_tensor *gidx = ct_from_data(((int64_t[]){0, 2, 1, 0, 1, 1, 0, 2}), CT_SHAPE(2, 4), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
  ct_tensor *mask = ct_gt_scalar(ct_detach(x), 0.0);
  ct_tensor *a = ct_index_select(x, 0, idx);              /* (3, 4) */
  ct_tensor *b = ct_gather(x, 0, gidx);                   /* (2, 4) */
  ct_tensor *c = ct_scatter_add(x, 0, gidx, src);         /* (3, 4) */
  ct_tensor *d = ct_scatter(x, 0, ct_from_data(((int64_t[]){1, 0, 2, 1}), CT_SHAPE(1, 4), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()}), ct_narrow(src, 0, 0, 1));
  ct_tensor *e = ct_masked_select(x, mask);
  ct_tensor *f = ct_masked_fill(x, mask, 0.5);
  ct_tensor *g = ct_cat((ct_tensor *[]){x, src}, 2, 0);   /* (5, 4) */
  ct_tensor *h = ct_stack((ct_tensor *[]){b, src}, 2, 1); /* (2, 2, 4) */
  ct_tensor *k = ct_tril(ct_narrow(g, 0, 1, 4), 0);
  ct_tensor *parts[] = {ct_sum(ct_mul(a, a), NULL), ct_sum(ct_mul(b, b), NULL), ct_sum(ct_mul(c, c), NULL),
                        ct_sum(ct_mul(d, d), NULL), ct_sum(ct_mul(e, e), NULL), ct_sum(ct_mul(f, f), NULL),
                        ct_sum(ct_mul(h, h), NULL), ct_sum(ct_mul(k, k), NULL)};
  ct_tensor *total = parts[0];
  for (int i = 1; i < 8; i++) total = ct_add(total, parts[i]);
  return total;
}
CT_TEST(index_gradients) {
  ct_tensor *in[2] = {ct_gradcheck_input(CT_SHAPE(3, 4), -1, 1, 21), ct_gradcheck_input(CT_SHAPE(2, 4), -1, 1, 22)};
  CHECK_GRADIENTS("indexing", f_index, NULL, in, 2);
}

static ct_tensor *f_cast_chain(ct_tensor *const *in, void *ctx) {
  return ct_cast(ct_mul(ct_cast(in[0], CT_F32), ct_cast(in[0], CT_F32)), CT_F64);
}
CT_TEST(cast_and_copy_gradients) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(3), -1, 1, 2);
  ct_tensor *y = ct_sum(ct_mul(ct_contiguous(ct_t(ct_unsqueeze(x, 0))), ct_clone(ct_unsqueeze(x, 1))), NULL);
  CHECK_STATUS_OK(ct_backward(y, NULL, NULL));
  CHECK_OK(ct_grad(x));
  if (!ct_grad(x)) return;
  double *xv = ct_test_values(x), *gv = ct_test_values(ct_grad(x));
  for (int i = 0; i < 3; i++) CHECK(fabs(gv[i] - 2 * xv[i]) < 1e-12);
  free(xv), free(gv);
  /* through f32 and back: gradient in f64, f32 precision */
  ct_set_grad(x, NULL);
  CHECK_STATUS_OK(ct_backward(ct_sum(f_cast_chain(&x, NULL), NULL), NULL, NULL));
  CHECK(ct_dtype_of(ct_grad(x)) == CT_F64);
}

/* ---- engine behaviour ---- */

CT_TEST(accumulation_and_retain_graph) {
  ct_tensor *w = ct_requires_grad_(ct_full(CT_SHAPE(2), 3.0, &(ct_tensor_opts){.device = ct_test_device()}), true);
  ct_tensor *y = ct_sum(ct_mul(w, w), NULL); /* dy/dw = 2w = 6 */
  CHECK_STATUS_OK(ct_backward(y, NULL, &(ct_backward_opts){.retain_graph = true}));
  CHECK_CLOSE(ct_grad(w), ((double[]){6, 6}), 0, 0);
  CHECK_STATUS_OK(ct_backward(y, NULL, NULL)); /* accumulates */
  CHECK_CLOSE(ct_grad(w), ((double[]){12, 12}), 0, 0);
  CHECK_ERR_MSG(ct_backward(y, NULL, NULL) == CT_OK, CT_ERR_STATE, "second time");
  CHECK(ct_is_leaf(w) && !ct_is_leaf(y));
  CHECK(ct_grad_fn_name(y) != NULL);
}

CT_TEST(no_grad_and_detach) {
  ct_tensor *w = ct_requires_grad_(ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.device = ct_test_device()}), true);
  ct_no_grad_begin();
  ct_tensor *a = ct_mul_scalar(w, 2);
  ct_no_grad_end();
  CHECK(!ct_requires_grad(a));
  ct_tensor *d = ct_detach(w);
  CHECK(!ct_requires_grad(d) && ct_same_storage(d, w));
  CHECK_ERR(ct_backward(ct_sum(a, NULL), NULL, NULL) == CT_OK, CT_ERR_STATE);
  CHECK(ct_is_grad_enabled());
}

CT_TEST(modified_saved_tensor_is_refused) {
  ct_tensor *w = ct_requires_grad_(ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.device = ct_test_device()}), true);
  ct_tensor *x = ct_full(CT_SHAPE(3), 2.0, &(ct_tensor_opts){.device = ct_test_device()});
  ct_tensor *y = ct_sum(ct_mul(w, x), NULL); /* saves x */
  ct_add_scalar_(x, 1.0);                     /* modifies it */
  CHECK_ERR_MSG(ct_backward(y, NULL, NULL) == CT_OK, CT_ERR_STATE,
                "modified by an inplace operation");
}

CT_TEST(backward_errors) {
  ct_tensor *w = ct_requires_grad_(ct_ones(CT_SHAPE(3), &(ct_tensor_opts){.device = ct_test_device()}), true);
  ct_tensor *y = ct_mul_scalar(w, 2);
  CHECK_ERR_MSG(ct_backward(y, NULL, NULL) == CT_OK, CT_ERR_SHAPE, "one-element");
  ct_tensor *g = ct_ones(CT_SHAPE(2), &(ct_tensor_opts){.device = ct_test_device()});
  CHECK_ERR(ct_backward(y, g, NULL) == CT_OK, CT_ERR_SHAPE);
  ct_tensor *g3 = ct_full(CT_SHAPE(3), 0.5, &(ct_tensor_opts){.device = ct_test_device()});
  CHECK_STATUS_OK(ct_backward(y, g3, NULL)); /* explicit gradient for a non-scalar */
  CHECK_CLOSE(ct_grad(w), ((double[]){1, 1, 1}), 0, 0);
  CHECK_ERR(ct_requires_grad_(ct_ones(CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I64}), true), CT_ERR_DTYPE);
  CHECK_ERR(ct_add_(w, g3), CT_ERR_STATE); /* in-place on a leaf requiring grad */
  CHECK_ERR(ct_backward(NULL, NULL, NULL) == CT_OK, CT_ERR_ARG);
}

CT_TEST(long_chains_do_not_recurse) {
  ct_tensor *w = ct_requires_grad_(ct_ones(CT_SHAPE(1), &(ct_tensor_opts){.device = ct_test_device()}), true);
  ct_tensor *y = ct_mul_scalar(w, 1.0);
  for (int i = 1; i < 20000; i++) {
    ct_tensor *next = ct_mul_scalar(y, 1.0);
    ct_free(y);
    y = next;
  }
  CHECK_STATUS_OK(ct_backward(y, NULL, NULL));
  CHECK_CLOSE(ct_grad(w), ((double[]){1}), 0, 0);
  ct_free(y); /* frees a 20000-node graph iteratively */
}

CT_TEST(gradient_flows_back_across_devices) {
  if (!ct_cuda_is_available() || ct_test_device().type != CT_DEVICE_CUDA) {
    ct_test_skip("needs a CUDA device");
    return;
  }
  ct_tensor *w = ct_requires_grad_(ct_full(CT_SHAPE(3), 2.0, NULL), true); /* CPU leaf */
  ct_tensor *wd = ct_to(w, ct_test_device(), NULL);
  ct_tensor *y = ct_sum(ct_mul(wd, wd), NULL);
  CHECK_STATUS_OK(ct_backward(y, NULL, NULL));
  CHECK(ct_device_of(ct_grad(w)).type == CT_DEVICE_CPU);
  CHECK_CLOSE(ct_grad(w), ((double[]){4, 4, 4}), 0, 0);
}

/* Strided views (slice, select, narrow, diagonal, split, einsum's repeated
 * label) of an expanded tensor that requires grad, as torch: the gradient is
 * scattered by the view's logical geometry, then summed by the expand. */
static ct_tensor *expanded_view_f(ct_tensor *const *in, void *ctx) {
  int k = *(const int *)ctx;
  ct_tensor *x = ct_expand(in[0], CT_SHAPE(3, 4, 4)); /* in[0]: (3, 1, 4) */
  ct_tensor *pieces[3] = {NULL};
  switch (k) {
    case 0:
      return ct_slice(x, 1, 1, 4, 2);
    case 1:
      return ct_select(x, 1, 2);
    case 2:
      return ct_narrow(ct_select(x, 0, 1), 0, 1, 2);
    case 3:
      return ct_diagonal(x, 0, 1, 2);
    case 4:
      return ct_diagonal(x, -1, 2, 1);
    case 5:
      return ct_split(x, 3, 1, pieces, 2) == 2 ? pieces[1] : NULL;
    case 6:
      return ct_einsum("bii->bi", &x, 1);
    default:
      return ct_einsum("bij,bjj->bi", (ct_tensor *[]){x, x}, 2);
  }
}

CT_TEST(strided_views_of_expanded_tensors) {
  for (int k = 0; k < 8; k++) {
    ct_tensor *a = ct_gradcheck_input(CT_SHAPE(3, 1, 4), -1, 1, 90 + (unsigned)k);
    WITH_CONTEXT(CHECK_GRADIENTS("view of an expanded tensor", expanded_view_f, &k, &a, 1),
                 "case %d", k);
  }
}
