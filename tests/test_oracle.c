/* PyTorch oracle: a table of ops and shapes run through ctensor and PyTorch.
 *
 * tests/oracle/gen_cases.py (run once, with Debian's python3 and torch) writes
 * for every case its inputs and torch's output as .npy files into a temporary
 * directory, plus a manifest cases.txt (format in gen_cases.py). This test
 * loads each case's inputs with ct_load_npy, moves them to the device under
 * test, runs the op named in the manifest through the dispatch table below and
 * compares with torch's output: same dtype, same shape, values within a
 * per-dtype tolerance (integers and bool exactly; nan matches nan, infinities
 * match by sign). Every failing case is reported, by name, with its first
 * differing element. Cases marked error=1 are inputs torch rejects: ctensor
 * must return NULL with an error (and not crash). Without python/torch/numpy
 * the test reports SKIP. */
#include "ct_test.h"

#include <dirent.h>
#include <stdint.h>
#include <unistd.h>

CT_TEST_DEVICE_GENERIC

#define ORACLE_MAX_IN 8
#define ORACLE_MAX_PARAMS 16

/* ---- One manifest line ---------------------------------------------------- */

typedef struct oracle_case {
  const char *name, *op, *tol; /* point into the line buffer */
  int nin;
  const char *keys[ORACLE_MAX_PARAMS], *vals[ORACLE_MAX_PARAMS];
  int nparams;
} oracle_case;

static const char *param(const oracle_case *c, const char *key) {
  for (int i = 0; i < c->nparams; i++)
    if (strcmp(c->keys[i], key) == 0) return c->vals[i];
  return NULL;
}
static double param_d(const oracle_case *c, const char *key, double def) {
  const char *v = param(c, key);
  return v ? strtod(v, NULL) : def; /* strtod reads "inf", "-inf", "nan" */
}
static int64_t param_i(const oracle_case *c, const char *key, int64_t def) {
  const char *v = param(c, key);
  return v ? strtoll(v, NULL, 10) : def;
}
/* A comma-separated integer list; returns its length, or -1 when absent. */
static int param_list(const oracle_case *c, const char *key, int64_t *out, int max) {
  const char *v = param(c, key);
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
static bool param_is(const oracle_case *c, const char *key, const char *value) {
  const char *v = param(c, key);
  return v && strcmp(v, value) == 0;
}
static ct_dtype param_dtype(const oracle_case *c, const char *key) {
  ct_dtype d = CT_F32;
  const char *v = param(c, key);
  if (v && !ct_dtype_parse(v, &d)) ct_test_fail(__FILE__, __LINE__, "%s: bad dtype %s", c->name, v);
  return d;
}
/* dims=... (absent: all dims) and keep=1. */
static ct_reduce_opts param_reduce(const oracle_case *c) {
  ct_reduce_opts r = {.keepdim = param_i(c, "keep", 0) != 0};
  int64_t dims[CT_MAX_DIMS];
  int n = param_list(c, "dims", dims, CT_MAX_DIMS);
  for (int i = 0; i < n; i++) r.dims[i] = (int)dims[i];
  r.ndims = n < 0 ? 0 : n;
  return r;
}

/* ---- Dispatch table --------------------------------------------------------- */

/* What a case hands its op: inputs on the device under test, the expected
 * result's dtype and shape (for out= variants and creation ops). */
typedef struct oracle_call {
  const oracle_case *c;
  ct_tensor **in;
  ct_dtype want_dtype;
  const int64_t *want_shape;
  int want_ndim;
} oracle_call;

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
  double lo = param_d(k->c, "lo", -INFINITY), hi = param_d(k->c, "hi", INFINITY);
  return param_is(k->c, "variant", "inplace") ? ct_clamp_(k->in[0], lo, hi)
                                              : ct_clamp(k->in[0], lo, hi);
}
static ct_tensor *op_leaky_relu(const oracle_call *k) {
  return ct_leaky_relu(k->in[0], param_d(k->c, "slope", 0.01));
}
static ct_tensor *op_add_scaled(const oracle_call *k) {
  return ct_add_scaled(k->in[0], k->in[1], param_d(k->c, "alpha", 1));
}
static ct_tensor *op_where(const oracle_call *k) {
  return param(k->c, "s") ? ct_where_scalar(k->in[0], k->in[1], param_d(k->c, "s", 0))
                          : ct_where(k->in[0], k->in[1], k->in[2]);
}
static ct_tensor *op_var(const oracle_call *k) {
  ct_reduce_opts r = param_reduce(k->c);
  return ct_var(k->in[0], &r, param_d(k->c, "corr", 1));
}
static ct_tensor *op_std(const oracle_call *k) {
  ct_reduce_opts r = param_reduce(k->c);
  return ct_std(k->in[0], &r, param_d(k->c, "corr", 1));
}
static ct_tensor *op_norm(const oracle_call *k) {
  ct_reduce_opts r = param_reduce(k->c);
  return ct_norm(k->in[0], param_d(k->c, "p", 2), &r);
}
static ct_tensor *op_argmax(const oracle_call *k) {
  return ct_argmax(k->in[0], (int)param_i(k->c, "dim", CT_DIM_ALL), param_i(k->c, "keep", 0));
}
static ct_tensor *op_argmin(const oracle_call *k) {
  return ct_argmin(k->in[0], (int)param_i(k->c, "dim", CT_DIM_ALL), param_i(k->c, "keep", 0));
}
/* ret=1 compares the indices, else the values. */
static ct_tensor *max_min_dim(const oracle_call *k, bool is_max) {
  ct_tensor *idx = NULL;
  int dim = (int)param_i(k->c, "dim", 0);
  bool keep = param_i(k->c, "keep", 0);
  ct_tensor *v =
      is_max ? ct_max_dim(k->in[0], dim, keep, &idx) : ct_min_dim(k->in[0], dim, keep, &idx);
  return param_i(k->c, "ret", 0) ? (v ? idx : NULL) : v;
}
static ct_tensor *op_max_dim(const oracle_call *k) { return max_min_dim(k, true); }
static ct_tensor *op_min_dim(const oracle_call *k) { return max_min_dim(k, false); }
static ct_tensor *op_linear(const oracle_call *k) {
  return ct_linear(k->in[0], k->in[1], k->c->nin > 2 ? k->in[2] : NULL);
}
static ct_tensor *op_masked_fill(const oracle_call *k) {
  double v = param_d(k->c, "value", 0);
  return param_is(k->c, "variant", "inplace") ? ct_masked_fill_(k->in[0], k->in[1], v)
                                              : ct_masked_fill(k->in[0], k->in[1], v);
}
static ct_tensor *op_cat(const oracle_call *k) {
  return ct_cat(k->in, k->c->nin, (int)param_i(k->c, "dim", 0));
}
static ct_tensor *op_stack(const oracle_call *k) {
  return ct_stack(k->in, k->c->nin, (int)param_i(k->c, "dim", 0));
}
/* split / chunk: the piece idx= (a view). */
static ct_tensor *piece(const oracle_call *k, int n, ct_tensor **pieces) {
  int64_t idx = param_i(k->c, "idx", 0);
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
  return piece(k, ct_split(k->in[0], param_i(k->c, "size", 1), (int)param_i(k->c, "dim", 0), p, 64),
               p);
}
static ct_tensor *op_chunk(const oracle_call *k) {
  ct_tensor *p[64];
  return piece(
      k, ct_chunk(k->in[0], (int)param_i(k->c, "chunks", 1), (int)param_i(k->c, "dim", 0), p, 64),
      p);
}
static ct_tensor *op_one_hot(const oracle_call *k) {
  return ct_one_hot(k->in[0], param_i(k->c, "nc", -1));
}
static ct_tensor_opts creation_opts(const oracle_call *k) {
  return ct_test_opts(param_dtype(k->c, "dt"));
}
static ct_tensor *op_arange(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  return ct_arange(param_d(k->c, "start", 0), param_d(k->c, "end", 0), param_d(k->c, "step", 1),
                   &o);
}
static ct_tensor *op_linspace(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  return ct_linspace(param_d(k->c, "start", 0), param_d(k->c, "end", 0), param_i(k->c, "steps", 0),
                     &o);
}
static ct_tensor *op_eye(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  return ct_eye(param_i(k->c, "n", 0), param_i(k->c, "m", 0), &o);
}
static ct_tensor *op_full(const oracle_call *k) {
  ct_tensor_opts o = creation_opts(k);
  int64_t shape[CT_MAX_DIMS];
  int n = param_list(k->c, "shape", shape, CT_MAX_DIMS);
  return ct_full(shape, n < 0 ? 0 : n, param_d(k->c, "value", 0), &o);
}
static ct_tensor *op_cast(const oracle_call *k) {
  return ct_cast(k->in[0], param_dtype(k->c, "dt"));
}
static ct_tensor *op_transpose(const oracle_call *k) {
  return ct_transpose(k->in[0], (int)param_i(k->c, "d0", 0), (int)param_i(k->c, "d1", 1));
}
static ct_tensor *op_permute(const oracle_call *k) {
  int64_t d[CT_MAX_DIMS];
  int dims[CT_MAX_DIMS], n = param_list(k->c, "dims", d, CT_MAX_DIMS);
  for (int i = 0; i < n; i++) dims[i] = (int)d[i];
  return ct_permute(k->in[0], dims, n < 0 ? 0 : n);
}
static ct_tensor *op_slice(const oracle_call *k) {
  return ct_slice(k->in[0], (int)param_i(k->c, "dim", 0), param_i(k->c, "start", 0),
                  param_i(k->c, "end", INT64_MAX), param_i(k->c, "step", 1));
}
static ct_tensor *op_diagonal(const oracle_call *k) {
  return ct_diagonal(k->in[0], param_i(k->c, "offset", 0), (int)param_i(k->c, "d1", 0),
                     (int)param_i(k->c, "d2", 1));
}
static ct_tensor *op_expand(const oracle_call *k) {
  int64_t shape[CT_MAX_DIMS];
  int n = param_list(k->c, "shape", shape, CT_MAX_DIMS);
  return ct_expand(k->in[0], shape, n < 0 ? 0 : n);
}
static ct_tensor *op_reshape(const oracle_call *k) {
  int64_t shape[CT_MAX_DIMS];
  int n = param_list(k->c, "shape", shape, CT_MAX_DIMS);
  return ct_reshape(k->in[0], shape, n < 0 ? 0 : n);
}
static ct_tensor *op_flatten(const oracle_call *k) {
  return ct_flatten(k->in[0], (int)param_i(k->c, "start", 0), (int)param_i(k->c, "end", -1));
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
    CUSTOM(flatten),
};
/* clang-format on */

/* Runs the case's op; NULL (with the library's error, or a test failure
 * already reported) when it fails. */
static ct_tensor *dispatch(const oracle_call *k) {
  const oracle_case *c = k->c;
  const op_entry *e = NULL;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !e; i++)
    if (strcmp(ops[i].name, c->op) == 0) e = &ops[i];
  if (!e) {
    ct_test_fail(__FILE__, __LINE__, "%s: op '%s' is not in the dispatch table", c->name, c->op);
    return NULL;
  }
  bool inplace = param_is(c, "variant", "inplace"), out_form = param_is(c, "variant", "out");
  bool scalar = param(c, "s") != NULL;
  double s = param_d(c, "s", 0);
  int dim = (int)param_i(c, "dim", 0);
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
      int64_t kk = param_i(c, "k", 0);
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

/* ---- Comparison ------------------------------------------------------------- */

/* Tolerance classes of the manifest, scaled from the harness' per-dtype ones
 * (ct_test_rtol/atol: f64 1e-12, f32 2e-6, f16 2e-3, bf16 1.6e-2 relative).
 * "loose" covers results that sum many terms (reductions, matmul), whose
 * rounding depends on the summation order. Integer and bool: exact. */
static void tolerance(const char *cls, ct_dtype dt, double *rtol, double *atol) {
  *rtol = *atol = 0;
  if (!ct_dtype_is_floating(dt) || strcmp(cls, "exact") == 0) return;
  double scale = 1;
  if (strcmp(cls, "loose") == 0) scale = dt == CT_F64 ? 1000 : dt == CT_F32 ? 10 : 2;
  *rtol = ct_test_rtol(dt) * scale;
  *atol = ct_test_atol(dt) * scale;
}

static bool oracle_close(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want); /* false for a nan got */
}

static char *format_index(int64_t flat, const int64_t *shape, int ndim, char *buf, size_t size) {
  int64_t idx[CT_MAX_DIMS];
  for (int d = ndim - 1; d >= 0; d--) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return ct_shape_format(idx, ndim, buf, size);
}

/* Reports (through ct_test_fail) and returns false when got differs from want. */
static bool check_case(const oracle_case *c, const ct_tensor *got, const ct_tensor *want,
                       ct_dtype want_dt) {
  char a[160], b[160];
  if (!got) {
    ct_test_fail(__FILE__, __LINE__, "%s (%s): failed: %s: %s", c->name, c->op,
                 ct_status_name(ct_last_error()), ct_last_error_message());
    return false;
  }
  const int64_t *gs = ct_shape(got), *ws = ct_shape(want);
  bool same_shape = ct_ndim(got) == ct_ndim(want);
  for (int d = 0; same_shape && d < ct_ndim(want); d++) same_shape = gs[d] == ws[d];
  if (ct_dtype_of(got) != want_dt || !same_shape) {
    ct_test_fail(__FILE__, __LINE__, "%s (%s): got %s %s, torch gives %s %s", c->name, c->op,
                 ct_dtype_name(ct_dtype_of(got)), ct_shape_format(gs, ct_ndim(got), a, sizeof a),
                 ct_dtype_name(want_dt), ct_shape_format(ws, ct_ndim(want), b, sizeof b));
    return false;
  }
  if (ct_device_of(got).type != ct_test_device().type) {
    ct_test_fail(__FILE__, __LINE__, "%s (%s): result on %s, inputs on %s", c->name, c->op,
                 ct_device_name(ct_device_of(got)), ct_device_name(ct_test_device()));
    return false;
  }
  double rtol, atol;
  tolerance(c->tol, want_dt, &rtol, &atol);
  int64_t n = ct_numel(want), bad = 0, first = -1;
  double *gv = ct_test_values(got), *wv = ct_test_values(want);
  if (!gv || !wv) {
    ct_test_fail(__FILE__, __LINE__, "%s: cannot read values: %s", c->name,
                 ct_last_error_message());
    bad = 1;
  }
  for (int64_t i = 0; gv && wv && i < n; i++) {
    if (!oracle_close(gv[i], wv[i], rtol, atol)) {
      if (first < 0) first = i;
      bad++;
    }
  }
  if (first >= 0)
    ct_test_fail(__FILE__, __LINE__,
                 "%s (%s, %s %s): %lld of %lld elements differ; first at %s: got %.9g, torch %.9g "
                 "(rtol %g, atol %g)",
                 c->name, c->op, ct_dtype_name(want_dt),
                 ct_shape_format(ws, ct_ndim(want), a, sizeof a), (long long)bad, (long long)n,
                 format_index(first, ws, ct_ndim(want), b, sizeof b), gv[first], wv[first], rtol,
                 atol);
  free(gv);
  free(wv);
  return bad == 0;
}

/* ---- Running the cases ------------------------------------------------------ */

/* Splits a manifest line into c (tokens point into line). False for a
 * comment, a blank or a malformed line (malformed ones are reported). */
static bool parse_case(char *line, oracle_case *c) {
  char *save = NULL, *tok[4 + ORACLE_MAX_PARAMS];
  int n = 0;
  line[strcspn(line, "\r\n")] = 0;
  if (line[0] == '#' || line[0] == 0) return false;
  for (char *t = strtok_r(line, " \t", &save); t && n < (int)(sizeof tok / sizeof tok[0]);
       t = strtok_r(NULL, " \t", &save))
    tok[n++] = t;
  memset(c, 0, sizeof *c);
  if (n < 4) {
    ct_test_fail(__FILE__, __LINE__, "malformed manifest line '%s'", line);
    return false;
  }
  c->name = tok[0], c->op = tok[1], c->nin = atoi(tok[2]), c->tol = tok[3];
  for (int i = 4; i < n; i++) {
    char *eq = strchr(tok[i], '=');
    if (!eq) continue;
    *eq = 0;
    c->keys[c->nparams] = tok[i], c->vals[c->nparams++] = eq + 1;
  }
  if (c->nin < 0 || c->nin > ORACLE_MAX_IN) {
    ct_test_fail(__FILE__, __LINE__, "%s: bad input count %d", c->name, c->nin);
    return false;
  }
  return true;
}

static ct_tensor *load(const char *dir, const char *name, const char *suffix) {
  char path[1024];
  if (snprintf(path, sizeof path, "%s/%s_%s.npy", dir, name, suffix) >= (int)sizeof path) {
    ct_test_fail(__FILE__, __LINE__, "%s: path too long", name);
    return NULL;
  }
  ct_tensor *t = ct_load_npy(path);
  if (!t)
    ct_test_fail(__FILE__, __LINE__, "%s: cannot load %s: %s: %s", name, path,
                 ct_status_name(ct_last_error()), ct_last_error_message());
  return t;
}

/* One case inside its own scope; true when it passes. */
static bool run_case(const char *dir, const oracle_case *c) {
  ct_tensor *in[ORACLE_MAX_IN] = {0};
  int64_t transposed[ORACLE_MAX_IN];
  int ntrans = param_list(c, "T", transposed, ORACLE_MAX_IN);
  for (int i = 0; i < c->nin; i++) {
    char suffix[16], key[16];
    snprintf(suffix, sizeof suffix, "in%d", i);
    snprintf(key, sizeof key, "dt%d", i);
    ct_tensor *t = load(dir, c->name, suffix);
    if (!t) return false;
    if (param(c, key)) t = ct_cast(t, param_dtype(c, key)); /* bf16 stored as f32 */
    t = ct_to(t, ct_test_device(), NULL);
    for (int j = 0; j < ntrans; j++)
      if (transposed[j] == i) t = ct_transpose(t, -2, -1); /* stored transposed: a strided view */
    if (!t) {
      ct_test_fail(__FILE__, __LINE__, "%s: preparing input %d: %s", c->name, i,
                   ct_last_error_message());
      return false;
    }
    in[i] = t;
  }
  if (param_i(c, "error", 0)) { /* torch rejects these inputs: ctensor must fail cleanly */
    oracle_call call = {c, in, CT_F32, NULL, 0};
    ct_clear_error();
    ct_tensor *got = ct_test_synced(dispatch(&call)); /* a GPU reports bad data at a sync */
    if (got || ct_last_error() == CT_OK || !*ct_last_error_message()) {
      ct_test_fail(__FILE__, __LINE__, "%s (%s): torch raises an error, ctensor %s", c->name, c->op,
                   got ? "returned a result" : "returned NULL without an error");
      return false;
    }
    return true;
  }
  ct_tensor *want = load(dir, c->name, "out");
  if (!want) return false;
  ct_dtype want_dt = param(c, "odt") ? param_dtype(c, "odt") : ct_dtype_of(want);
  oracle_call call = {c, in, want_dt, ct_shape(want), ct_ndim(want)};
  ct_clear_error();
  ct_tensor *got = dispatch(&call);
  return check_case(c, got, want, want_dt);
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char path[1024];
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void print_file(const char *path) {
  FILE *f = fopen(path, "r");
  char buf[512];
  while (f && fgets(buf, sizeof buf, f)) fputs(buf, stderr);
  if (f) fclose(f);
}

CT_TEST(pytorch_oracle) {
  const char *python = ct_test_python_with_torch();
  if (!python) {
    ct_test_skip(
        "no python3 with torch and numpy (Debian: apt install python3-torch python3-numpy)");
    return;
  }
  /* The generator sits next to this file: __FILE__ is absolute in CMake builds
   * (CT_ORACLE_SCRIPT overrides). */
  char script[1024];
  const char *env = getenv("CT_ORACLE_SCRIPT");
  if (env && *env) {
    snprintf(script, sizeof script, "%s", env);
  } else {
    const char *slash = strrchr(__FILE__, '/');
    int len = slash ? (int)(slash - __FILE__) : 1;
    snprintf(script, sizeof script, "%.*s/oracle/gen_cases.py", len, slash ? __FILE__ : ".");
  }
  if (access(script, R_OK) != 0) {
    char msg[1200];
    snprintf(msg, sizeof msg, "generator %s not found (set CT_ORACLE_SCRIPT)", script);
    ct_test_skip(msg);
    return;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/ct_oracle_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    ct_test_fail(__FILE__, __LINE__, "mkdtemp(%s) failed", dir);
    return;
  }
  char cmd[4096], manifest[1100], log[1100];
  snprintf(log, sizeof log, "%s/gen.log", dir);
  snprintf(manifest, sizeof manifest, "%s/cases.txt", dir);
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' >'%s' 2>&1", python, script, dir, log);
  FILE *f = NULL;
  if (system(cmd) != 0 || !(f = fopen(manifest, "r"))) {
    ct_test_fail(__FILE__, __LINE__, "%s failed:", cmd);
    print_file(log);
  } else {
    int total = 0, passed = 0;
    char line[4096];
    oracle_case c;
    while (fgets(line, sizeof line, f)) {
      if (!parse_case(line, &c)) continue;
      total++;
      ct_scope_begin();
      passed += run_case(dir, &c);
      ct_scope_end();
      ct_clear_error();
    }
    fclose(f);
    printf("oracle [%s]: %d cases, %d passed, %d failed\n", ct_device_name(ct_test_device()), total,
           passed, total - passed);
    CHECK_MSG(total > 0, "no cases in %s", manifest);
  }
  if (getenv("CT_ORACLE_KEEP"))
    printf("oracle: cases kept in %s\n", dir);
  else
    remove_dir(dir);
}
