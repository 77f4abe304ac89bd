/* The PyTorch differential test's op table: see oracle_ops.h. */
#include "oracle/oracle_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

const char *oracle_param(const oracle_case *c, const char *key) {
  for (int i = 0; i < c->nparams; i++)
    if (strcmp(c->keys[i], key) == 0) return c->vals[i];
  return NULL;
}
double oracle_param_d(const oracle_case *c, const char *key, double def) {
  const char *v = oracle_param(c, key);
  return v ? strtod(v, NULL) : def; /* strtod reads "inf", "-inf", "nan" */
}
int64_t oracle_param_i(const oracle_case *c, const char *key, int64_t def) {
  const char *v = oracle_param(c, key);
  return v ? strtoll(v, NULL, 10) : def;
}
int oracle_param_list(const oracle_case *c, const char *key, int64_t *out, int max) {
  const char *v = oracle_param(c, key);
  if (!v) return -1;
  int n = 0;
  while (*v && n < max) {
    char *end;
    out[n++] = strtoll(v, &end, 10);
    v = *end == ',' ? end + 1 : end;
    if (end == v && *v) break;
  }
  return n;
}
bool oracle_param_is(const oracle_case *c, const char *key, const char *value) {
  const char *v = oracle_param(c, key);
  return v && strcmp(v, value) == 0;
}
static ct_dtype param_dtype(const oracle_case *c, const char *key) {
  ct_dtype d = CT_F32;
  const char *v = oracle_param(c, key);
  if (v && !ct_dtype_parse(v, &d)) ct_test_fail(__FILE__, __LINE__, "%s: bad dtype %s", c->name, v);
  return d;
}
/* dims=... (absent: all dims) and keep=1. */
static ct_reduce_opts param_reduce(const oracle_case *c) {
  ct_reduce_opts r = {.keepdim = oracle_param_i(c, "keep", 0) != 0};
  int64_t dims[CT_MAX_DIMS];
  int n = oracle_param_list(c, "dims", dims, CT_MAX_DIMS);
  for (int i = 0; i < n; i++) r.dims[i] = (int)dims[i];
  r.ndims = n < 0 ? 0 : n;
  return r;
}

/* ---- Dispatch table --------------------------------------------------------- */

typedef void (*any_fn)(void);
#define FN(f) ((any_fn)(f))
typedef ct_tensor *(*un_fn)(const ct_tensor *);
typedef ct_tensor *(*un_ip_fn)(ct_tensor *);
typedef ct_tensor *(*un_out_fn)(ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*bin_fn)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*bin_ip_fn)(ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*bin_out_fn)(ct_tensor *, const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*sc_fn)(const ct_tensor *, double);
typedef ct_tensor *(*sc_ip_fn)(ct_tensor *, double);
typedef ct_tensor *(*red_fn)(const ct_tensor *, const ct_reduce_opts *);
typedef ct_tensor *(*red_out_fn)(ct_tensor *, const ct_tensor *, const ct_reduce_opts *);
typedef ct_tensor *(*dim_fn)(const ct_tensor *, int);
typedef ct_tensor *(*dim_out_fn)(ct_tensor *, const ct_tensor *, int);
typedef ct_tensor *(*tri_fn)(const ct_tensor *, int64_t);
typedef ct_tensor *(*tri_ip_fn)(ct_tensor *, int64_t);
typedef ct_tensor *(*idx_fn)(const ct_tensor *, int, const ct_tensor *);
typedef ct_tensor *(*scat_fn)(const ct_tensor *, int, const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*scat_ip_fn)(ct_tensor *, int, const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*custom_fn)(const oracle_call *);

/* How a kind's entry is called (params from the manifest):
 *   UNARY    f(x) | f_ip(x) | f_out(out, x)
 *   BINARY   f(a, b) | f_ip | f_out; with s=: f_s(a, s) | f_s_ip(a, s)
 *   REDUCE   f(x, dims/keep) | f_out(out, x, r)
 *   DIM      f(x, dim) | f_out(out, x, dim)          (softmax)
 *   TRI      f(x, k) | f_ip(x, k)
 *   INDEX    f(x, dim, index)
 *   SCATTER  f(x, dim, index, src) | f_ip(...)
 *   CUSTOM   f(call): ops with their own parameters */
typedef enum { K_UNARY, K_BINARY, K_REDUCE, K_DIM, K_TRI, K_INDEX, K_SCATTER, K_CUSTOM } op_kind;

typedef struct op_entry {
  const char *name;
  op_kind kind;
  any_fn f, f_ip, f_out, f_s, f_s_ip; /* NULL where the variant does not exist */
} op_entry;

#define UN(n) \
  { #n, K_UNARY, FN(ct_##n), FN(ct_##n##_), FN(ct_##n##_out), NULL, NULL }
#define UN_ONLY(n) \
  { #n, K_UNARY, FN(ct_##n), NULL, NULL, NULL, NULL }
#define BIN(n)                                                                      \
  {                                                                                 \
#n, K_BINARY, FN(ct_##n), FN(ct_##n##_), FN(ct_##n##_out), FN(ct_##n##_scalar), \
        FN(ct_##n##_scalar_)                                                        \
  }
#define CMP(n) \
  { #n, K_BINARY, FN(ct_##n), NULL, FN(ct_##n##_out), FN(ct_##n##_scalar), NULL }
#define RED(n) \
  { #n, K_REDUCE, FN(ct_##n), NULL, FN(ct_##n##_out), NULL, NULL }
#define RED_ONLY(n) \
  { #n, K_REDUCE, FN(ct_##n), NULL, NULL, NULL, NULL }
#define CUSTOM(n) \
  { #n, K_CUSTOM, FN(op_##n), NULL, NULL, NULL, NULL }

/* Custom ops: one line each where possible. */
static ct_tensor *op_clamp(const oracle_call *k) {
  double lo = oracle_param_d(k->c, "lo", -INFINITY), hi = oracle_param_d(k->c, "hi", INFINITY);
  return oracle_param_is(k->c, "variant", "inplace") ? ct_clamp_(k->in[0], lo, hi)
                                                     : ct_clamp(k->in[0], lo, hi);
}
static ct_tensor *op_leaky_relu(const oracle_call *k) {
  double slope = oracle_param_d(k->c, "slope", 0.01);
  return oracle_param_is(k->c, "variant", "inplace") ? ct_leaky_relu_(k->in[0], slope)
                                                     : ct_leaky_relu(k->in[0], slope);
}
static ct_tensor *op_add_scaled(const oracle_call *k) {
  return ct_add_scaled(k->in[0], k->in[1], oracle_param_d(k->c, "alpha", 1));
}
static ct_tensor *op_where(const oracle_call *k) {
  return oracle_param(k->c, "s") ? ct_where_scalar(k->in[0], k->in[1], oracle_param_d(k->c, "s", 0))
                                 : ct_where(k->in[0], k->in[1], k->in[2]);
}
static ct_tensor *op_var(const oracle_call *k) {
  ct_reduce_opts r = param_reduce(k->c);
  return ct_var(k->in[0], &r, oracle_param_d(k->c, "corr", 1));
}
static ct_tensor *op_std(const oracle_call *k) {
  ct_reduce_opts r = param_reduce(k->c);
  return ct_std(k->in[0], &r, oracle_param_d(k->c, "corr", 1));
}
static ct_tensor *op_norm(const oracle_call *k) {
  ct_reduce_opts r = param_reduce(k->c);
  return ct_norm(k->in[0], oracle_param_d(k->c, "p", 2), &r);
}
static ct_tensor *op_argmax(const oracle_call *k) {
  return ct_argmax(k->in[0], (int)oracle_param_i(k->c, "dim", CT_DIM_ALL),
                   oracle_param_i(k->c, "keep", 0));
}
static ct_tensor *op_argmin(const oracle_call *k) {
  return ct_argmin(k->in[0], (int)oracle_param_i(k->c, "dim", CT_DIM_ALL),
                   oracle_param_i(k->c, "keep", 0));
}
/* ret=1 compares the indices, else the values. */
static ct_tensor *max_min_dim(const oracle_call *k, bool is_max) {
  ct_tensor *idx = NULL;
  int dim = (int)oracle_param_i(k->c, "dim", 0);
  bool keep = oracle_param_i(k->c, "keep", 0);
  ct_tensor *v =
      is_max ? ct_max_dim(k->in[0], dim, keep, &idx) : ct_min_dim(k->in[0], dim, keep, &idx);
  return oracle_param_i(k->c, "ret", 0) ? (v ? idx : NULL) : v;
}
static ct_tensor *op_max_dim(const oracle_call *k) { return max_min_dim(k, true); }
static ct_tensor *op_min_dim(const oracle_call *k) { return max_min_dim(k, false); }
static ct_tensor *op_linear(const oracle_call *k) {
  return ct_linear(k->in[0], k->in[1], k->c->nin > 2 ? k->in[2] : NULL);
}
static ct_tensor *op_masked_fill(const oracle_call *k) {
  double v = oracle_param_d(k->c, "value", 0);
  return oracle_param_is(k->c, "variant", "inplace") ? ct_masked_fill_(k->in[0], k->in[1], v)
                                                     : ct_masked_fill(k->in[0], k->in[1], v);
}
static ct_tensor *op_cat(const oracle_call *k) {
  return ct_cat(k->in, k->c->nin, (int)oracle_param_i(k->c, "dim", 0));
}
static ct_tensor *op_stack(const oracle_call *k) {
  return ct_stack(k->in, k->c->nin, (int)oracle_param_i(k->c, "dim", 0));
}
/* split / chunk: the piece idx= (a view). */
static ct_tensor *piece(const oracle_call *k, int n, ct_tensor **pieces) {
  int64_t idx = oracle_param_i(k->c, "idx", 0);
  if (n < 0) return NULL;
  if (idx >= n) {
    ct_test_fail(__FILE__, __LINE__, "%s: %d pieces, expected more than %lld", k->c->name, n,
                 (long long)idx);
    return NULL;
  }
  return pieces[idx];
}
static ct_tensor *op_split(const oracle_call *k) {
  ct_tensor *p[64];
  return piece(k,
               ct_split(k->in[0], oracle_param_i(k->c, "size", 1),
                        (int)oracle_param_i(k->c, "dim", 0), p, 64),
               p);
}
static ct_tensor *op_chunk(const oracle_call *k) {
  ct_tensor *p[64];
  return piece(k,
               ct_chunk(k->in[0], (int)oracle_param_i(k->c, "chunks", 1),
                        (int)oracle_param_i(k->c, "dim", 0), p, 64),
               p);
}
static ct_tensor *op_one_hot(const oracle_call *k) {
  return ct_one_hot(k->in[0], oracle_param_i(k->c, "nc", -1));
}
static ct_tensor_opts creation_opts(const oracle_call *k) {
  return ct_test_opts(param_dtype(k->c, "dt"));
}
static ct_tensor *op_arange(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  return ct_arange(oracle_param_d(k->c, "start", 0), oracle_param_d(k->c, "end", 0),
                   oracle_param_d(k->c, "step", 1), &o);
}
static ct_tensor *op_linspace(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  return ct_linspace(oracle_param_d(k->c, "start", 0), oracle_param_d(k->c, "end", 0),
                     oracle_param_i(k->c, "steps", 0), &o);
}
static ct_tensor *op_eye(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  return ct_eye(oracle_param_i(k->c, "n", 0), oracle_param_i(k->c, "m", 0), &o);
}
static ct_tensor *op_full(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  int64_t shape[CT_MAX_DIMS];
  int n = oracle_param_list(k->c, "shape", shape, CT_MAX_DIMS);
  return ct_full(shape, n < 0 ? 0 : n, oracle_param_d(k->c, "value", 0), &o);
}
static ct_tensor *op_cast(const oracle_call *k) {
  return ct_cast(k->in[0], param_dtype(k->c, "dt"));
}
static ct_tensor *op_transpose(const oracle_call *k) {
  return ct_transpose(k->in[0], (int)oracle_param_i(k->c, "d0", 0),
                      (int)oracle_param_i(k->c, "d1", 1));
}
static ct_tensor *op_permute(const oracle_call *k) {
  int64_t d[CT_MAX_DIMS];
  int dims[CT_MAX_DIMS], n = oracle_param_list(k->c, "dims", d, CT_MAX_DIMS);
  for (int i = 0; i < n; i++) dims[i] = (int)d[i];
  return ct_permute(k->in[0], dims, n < 0 ? 0 : n);
}
static ct_tensor *op_slice(const oracle_call *k) {
  return ct_slice(k->in[0], (int)oracle_param_i(k->c, "dim", 0), oracle_param_i(k->c, "start", 0),
                  oracle_param_i(k->c, "end", INT64_MAX), oracle_param_i(k->c, "step", 1));
}
static ct_tensor *op_diagonal(const oracle_call *k) {
  return ct_diagonal(k->in[0], oracle_param_i(k->c, "offset", 0),
                     (int)oracle_param_i(k->c, "d1", 0), (int)oracle_param_i(k->c, "d2", 1));
}
static ct_tensor *op_expand(const oracle_call *k) {
  int64_t shape[CT_MAX_DIMS];
  int n = oracle_param_list(k->c, "shape", shape, CT_MAX_DIMS);
  return ct_expand(k->in[0], shape, n < 0 ? 0 : n);
}
static ct_tensor *op_reshape(const oracle_call *k) {
  int64_t shape[CT_MAX_DIMS];
  int n = oracle_param_list(k->c, "shape", shape, CT_MAX_DIMS);
  return ct_reshape(k->in[0], shape, n < 0 ? 0 : n);
}
static ct_tensor *op_flatten(const oracle_call *k) {
  return ct_flatten(k->in[0], (int)oracle_param_i(k->c, "start", 0),
                    (int)oracle_param_i(k->c, "end", -1));
}

static int dim_of(const oracle_call *k) { return (int)oracle_param_i(k->c, "dim", 0); }
static ct_tensor *op_select(const oracle_call *k) {
  return ct_select(k->in[0], dim_of(k), oracle_param_i(k->c, "index", 0));
}
static ct_tensor *op_narrow(const oracle_call *k) {
  return ct_narrow(k->in[0], dim_of(k), oracle_param_i(k->c, "start", 0),
                   oracle_param_i(k->c, "length", 0));
}
static ct_tensor *op_squeeze(const oracle_call *k) { return ct_squeeze(k->in[0]); }
static ct_tensor *op_squeeze_dim(const oracle_call *k) {
  return ct_squeeze_dim(k->in[0], dim_of(k));
}
static ct_tensor *op_unsqueeze(const oracle_call *k) { return ct_unsqueeze(k->in[0], dim_of(k)); }
static ct_tensor *op_fill_(const oracle_call *k) {
  return ct_fill_(k->in[0], oracle_param_d(k->c, "value", 0));
}
/* A pair (a,b) parameter into out[2]; a single value for both. */
static void pair(const oracle_call *k, const char *key, int64_t out[2]) {
  int n = oracle_param_list(k->c, key, out, 2);
  if (n == 1) out[1] = out[0];
  if (n <= 0) out[0] = out[1] = 0;
}
static ct_tensor *pool(const oracle_call *k, bool is_max) {
  ct_pool2d_opts o = {.ceil_mode = oracle_param_i(k->c, "ceil", 0) != 0,
                      .count_include_pad_false = oracle_param_i(k->c, "cip", 1) == 0};
  pair(k, "kernel", o.kernel);
  pair(k, "stride", o.stride);
  pair(k, "padding", o.padding);
  return is_max ? ct_max_pool2d(k->in[0], &o) : ct_avg_pool2d(k->in[0], &o);
}
static ct_tensor *op_max_pool2d(const oracle_call *k) { return pool(k, true); }
static ct_tensor *op_avg_pool2d(const oracle_call *k) { return pool(k, false); }
static ct_tensor *op_conv2d(const oracle_call *k) {
  ct_conv2d_opts o = {.groups = oracle_param_i(k->c, "groups", 1)};
  pair(k, "stride", o.stride);
  pair(k, "padding", o.padding);
  pair(k, "dilation", o.dilation);
  return ct_conv2d(k->in[0], k->in[1], k->c->nin > 2 ? k->in[2] : NULL, &o);
}
static ct_loss_opts loss_opts(const oracle_call *k) {
  const char *r = oracle_param(k->c, "reduction");
  ct_loss_opts o = {.label_smoothing = oracle_param_d(k->c, "ls", 0)};
  o.reduction = r && !strcmp(r, "sum")    ? CT_REDUCTION_SUM
                : r && !strcmp(r, "none") ? CT_REDUCTION_NONE
                                          : CT_REDUCTION_MEAN;
  return o;
}
static ct_tensor *op_mse_loss(const oracle_call *k) {
  ct_loss_opts o = loss_opts(k);
  return ct_mse_loss(k->in[0], k->in[1], &o);
}
static ct_tensor *op_cross_entropy(const oracle_call *k) {
  ct_loss_opts o = loss_opts(k);
  return ct_cross_entropy(k->in[0], k->in[1], &o);
}
static ct_tensor *op_nll_loss(const oracle_call *k) {
  ct_loss_opts o = loss_opts(k);
  return ct_nll_loss(k->in[0], k->in[1], &o);
}
static ct_tensor *op_bce_with_logits(const oracle_call *k) {
  ct_loss_opts o = loss_opts(k);
  return ct_binary_cross_entropy_with_logits(k->in[0], k->in[1], &o);
}
static ct_tensor *op_layer_norm(const oracle_call *k) {
  bool affine = k->c->nin > 1;
  return ct_layer_norm(k->in[0], (int)oracle_param_i(k->c, "k", 1), affine ? k->in[1] : NULL,
                       affine ? k->in[2] : NULL, 1e-5);
}
/* Evaluation mode: the running statistics (inputs 1, 2) are read, not updated. */
static ct_tensor *op_batch_norm(const oracle_call *k) {
  return ct_batch_norm(k->in[0], k->in[1], k->in[2], k->in[3], k->in[4], false, 0.1, 1e-5);
}
static ct_tensor *op_embedding(const oracle_call *k) { return ct_embedding(k->in[0], k->in[1]); }

/* An autograd composition: prog= steps separated by '/', arguments by ':'
 * (tests/oracle/random_cases.py's run_chain is the reference). */
static ct_tensor *chain_step(const char *name, const char *arg0, const char *arg1, ct_tensor *v,
                             ct_tensor **in) {
  int a = arg0 ? atoi(arg0) : 0;
  double x = arg0 ? strtod(arg0, NULL) : 0;
  ct_reduce_opts keep1 = {.dims = {a}, .ndims = 1, .keepdim = true};
  static const struct {
    const char *name;
    ct_tensor *(*fn)(const ct_tensor *);
  } unary[] = {
      {"exp", ct_exp},   {"tanh", ct_tanh},     {"sigmoid", ct_sigmoid},   {"relu", ct_relu},
      {"gelu", ct_gelu}, {"silu", ct_silu},     {"softplus", ct_softplus}, {"sin", ct_sin},
      {"cos", ct_cos},   {"square", ct_square}, {"abs", ct_abs},           {"neg", ct_neg},
      {"erf", ct_erf},
  };
  static const struct {
    const char *name;
    ct_tensor *(*fn)(const ct_tensor *, const ct_tensor *);
  } binary[] = {{"add", ct_add},     {"sub", ct_sub},         {"mul", ct_mul},
                {"div", ct_div},     {"maximum", ct_maximum}, {"minimum", ct_minimum},
                {"atan2", ct_atan2}, {"matmul", ct_matmul}};
  for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
    if (!strcmp(name, unary[i].name)) return unary[i].fn(v);
  for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
    if (!strcmp(name, binary[i].name)) return binary[i].fn(v, in[a]);
  if (!strcmp(name, "log1p_abs")) return ct_log1p(ct_abs(v));
  if (!strcmp(name, "sqrt_abs")) return ct_sqrt(ct_add_scalar(ct_abs(v), 0.25));
  if (!strcmp(name, "muls")) return ct_mul_scalar(v, x);
  if (!strcmp(name, "adds")) return ct_add_scalar(v, x);
  if (!strcmp(name, "pows")) return ct_pow_scalar(v, x);
  if (!strcmp(name, "clamp")) return ct_clamp(v, x, arg1 ? strtod(arg1, NULL) : INFINITY);
  if (!strcmp(name, "leaky_relu")) return ct_leaky_relu(v, x);
  if (!strcmp(name, "sum")) return ct_sum(v, &keep1);
  if (!strcmp(name, "mean")) return ct_mean(v, &keep1);
  if (!strcmp(name, "amax")) return ct_max(v, &keep1);
  if (!strcmp(name, "logsumexp")) return ct_logsumexp(v, &keep1);
  if (!strcmp(name, "var")) return ct_var(v, &keep1, 0);
  if (!strcmp(name, "norm")) return ct_norm(v, 2, &keep1);
  if (!strcmp(name, "softmax")) return ct_softmax(v, a);
  if (!strcmp(name, "log_softmax")) return ct_log_softmax(v, a);
  if (!strcmp(name, "transpose")) return ct_transpose(v, -2, -1);
  ct_test_fail(__FILE__, __LINE__, "chain: unknown step '%s'", name);
  return NULL;
}
static ct_tensor *op_chain(const oracle_call *k) {
  const char *prog = oracle_param(k->c, "prog");
  char buf[512];
  snprintf(buf, sizeof buf, "%s", prog ? prog : "");
  ct_tensor *v = k->in[0];
  char *save = NULL;
  for (char *step = strtok_r(buf, "/", &save); step && v; step = strtok_r(NULL, "/", &save)) {
    char *args[3] = {step, NULL, NULL};
    for (int i = 1; i < 3 && args[i - 1]; i++) {
      char *colon = strchr(args[i - 1], ':');
      if (colon) *colon = 0, args[i] = colon + 1;
    }
    v = chain_step(args[0], args[1], args[2], v, k->in);
  }
  return v;
}

/* clang-format off */
static const op_entry ops[] = {
    /* elementwise unary */
    UN(neg), UN(abs), UN(exp), UN(expm1), UN(log), UN(log1p), UN(log2), UN(sqrt), UN(rsqrt),
    UN(sin), UN(cos), UN(tan), UN(tanh), UN(erf), UN(sigmoid), UN(relu), UN(gelu), UN(gelu_tanh),
    UN(silu), UN(softplus), UN(floor), UN(ceil), UN(round), UN(trunc), UN(sign), UN(reciprocal),
    UN(square), UN_ONLY(isnan), UN_ONLY(isinf), UN_ONLY(isfinite), UN_ONLY(logical_not),
    UN_ONLY(clone), UN_ONLY(contiguous), CUSTOM(clamp), CUSTOM(leaky_relu),
    /* elementwise binary, comparisons, where */
    BIN(add), BIN(sub), BIN(mul), BIN(div), BIN(floor_divide), BIN(pow), BIN(maximum),
    BIN(minimum), BIN(fmod), BIN(remainder), BIN(atan2),
    {"rsub_scalar", K_BINARY, NULL, NULL, NULL, FN(ct_rsub_scalar), NULL},
    {"rdiv_scalar", K_BINARY, NULL, NULL, NULL, FN(ct_rdiv_scalar), NULL},
    CUSTOM(add_scaled), CMP(eq), CMP(ne), CMP(lt), CMP(le), CMP(gt), CMP(ge), CMP(logical_and),
    CMP(logical_or), CMP(logical_xor), CUSTOM(where),
    /* reductions and softmax */
    RED(sum), RED(mean), RED(prod), RED(max), RED(min), RED(logsumexp), RED_ONLY(all),
    RED_ONLY(any), CUSTOM(var), CUSTOM(std), CUSTOM(norm), CUSTOM(argmax), CUSTOM(argmin),
    CUSTOM(max_dim), CUSTOM(min_dim),
    {"softmax", K_DIM, FN(ct_softmax), NULL, FN(ct_softmax_out), NULL, NULL},
    {"log_softmax", K_DIM, FN(ct_log_softmax), NULL, FN(ct_log_softmax_out), NULL, NULL},
    /* linear algebra */
    {"matmul", K_BINARY, FN(ct_matmul), NULL, FN(ct_matmul_out), NULL, NULL},
    {"mm", K_BINARY, FN(ct_mm), NULL, NULL, NULL, NULL},
    {"bmm", K_BINARY, FN(ct_bmm), NULL, NULL, NULL, NULL},
    {"dot", K_BINARY, FN(ct_dot), NULL, NULL, NULL, NULL},
    CUSTOM(linear),
    /* indexing, joining */
    {"index_select", K_INDEX, FN(ct_index_select), NULL, NULL, NULL, NULL},
    {"gather", K_INDEX, FN(ct_gather), NULL, NULL, NULL, NULL},
    {"scatter", K_SCATTER, FN(ct_scatter), FN(ct_scatter_), NULL, NULL, NULL},
    {"scatter_add", K_SCATTER, FN(ct_scatter_add), FN(ct_scatter_add_), NULL, NULL, NULL},
    CUSTOM(masked_fill),
    {"masked_select", K_BINARY, FN(ct_masked_select), NULL, NULL, NULL, NULL},
    CUSTOM(cat), CUSTOM(stack), CUSTOM(split), CUSTOM(chunk), CUSTOM(one_hot),
    {"tril", K_TRI, FN(ct_tril), FN(ct_tril_), NULL, NULL, NULL},
    {"triu", K_TRI, FN(ct_triu), FN(ct_triu_), NULL, NULL, NULL},
    /* creation, casts, views */
    CUSTOM(arange), CUSTOM(linspace), CUSTOM(eye), CUSTOM(full), CUSTOM(cast), CUSTOM(transpose),
    CUSTOM(permute), CUSTOM(slice), CUSTOM(diagonal), CUSTOM(expand), CUSTOM(reshape),
    CUSTOM(flatten), CUSTOM(select), CUSTOM(narrow), CUSTOM(squeeze), CUSTOM(squeeze_dim),
    CUSTOM(unsqueeze), CUSTOM(fill_),
    /* nn */
    CUSTOM(max_pool2d), CUSTOM(avg_pool2d), CUSTOM(conv2d), CUSTOM(mse_loss),
    CUSTOM(cross_entropy), CUSTOM(nll_loss), CUSTOM(bce_with_logits), CUSTOM(layer_norm),
    CUSTOM(batch_norm), CUSTOM(embedding),
    /* autograd compositions */
    CUSTOM(chain),
};
/* clang-format on */

ct_tensor *oracle_dispatch(const oracle_call *k) {
  const oracle_case *c = k->c;
  const op_entry *e = NULL;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !e; i++)
    if (strcmp(ops[i].name, c->op) == 0) e = &ops[i];
  if (!e) {
    ct_test_fail(__FILE__, __LINE__, "%s: op '%s' is not in the dispatch table", c->name, c->op);
    return NULL;
  }
  bool inplace = oracle_param_is(c, "variant", "inplace"),
       out_form = oracle_param_is(c, "variant", "out");
  bool scalar = oracle_param(c, "s") != NULL;
  double s = oracle_param_d(c, "s", 0);
  int dim = (int)oracle_param_i(c, "dim", 0);
  ct_tensor **in = k->in;
  ct_tensor *out = NULL;
  if (out_form) {
    ct_tensor_opts o = ct_test_opts(k->want_dtype);
    out = ct_empty(k->want_shape, k->want_ndim, &o);
  }
  any_fn f = scalar     ? (inplace ? e->f_s_ip : e->f_s)
             : inplace  ? e->f_ip
             : out_form ? e->f_out
                        : e->f;
  if (e->kind == K_CUSTOM) f = e->f; /* custom ops read the variant themselves */
  if (!f) {
    ct_test_fail(__FILE__, __LINE__, "%s: op '%s' has no %s%s variant in the dispatch table",
                 c->name, c->op, scalar ? "scalar " : "",
                 inplace    ? "in-place"
                 : out_form ? "out="
                            : "plain");
    return NULL;
  }
  ct_reduce_opts r = param_reduce(c);
  switch (e->kind) {
    case K_UNARY:
      return inplace    ? ((un_ip_fn)f)(in[0])
             : out_form ? ((un_out_fn)f)(out, in[0])
                        : ((un_fn)f)(in[0]);
    case K_BINARY:
      if (scalar) return inplace ? ((sc_ip_fn)f)(in[0], s) : ((sc_fn)f)(in[0], s);
      return inplace    ? ((bin_ip_fn)f)(in[0], in[1])
             : out_form ? ((bin_out_fn)f)(out, in[0], in[1])
                        : ((bin_fn)f)(in[0], in[1]);
    case K_REDUCE:
      return out_form ? ((red_out_fn)f)(out, in[0], &r) : ((red_fn)f)(in[0], &r);
    case K_DIM:
      return out_form ? ((dim_out_fn)f)(out, in[0], dim) : ((dim_fn)f)(in[0], dim);
    case K_TRI: {
      int64_t kk = oracle_param_i(c, "k", 0);
      return inplace ? ((tri_ip_fn)f)(in[0], kk) : ((tri_fn)f)(in[0], kk);
    }
    case K_INDEX:
      return ((idx_fn)f)(in[0], dim, in[1]);
    case K_SCATTER:
      return inplace ? ((scat_ip_fn)f)(in[0], dim, in[1], in[2])
                     : ((scat_fn)f)(in[0], dim, in[1], in[2]);
    case K_CUSTOM:
      return ((custom_fn)f)(k);
  }
  return NULL;
}
