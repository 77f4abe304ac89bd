/* LSTM and GRU modules (ctensor/rnn.h): torch's parameter names, gate order
 * and initialization; the layers composed of linear, sigmoid, tanh and
 * elementwise ops, so they run and differentiate on every backend. Each
 * layer projects the whole sequence's input at once (one matmul for all
 * steps), then steps through time with the hidden projection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctensor/rnn.h"
#include "nn/module_internal.h"

typedef enum { RNN_LSTM, RNN_GRU } rnn_kind;

typedef struct rnn_layer {
  ct_tensor *w_ih, *w_hh, *b_ih, *b_hh; /* borrowed from the module; biases may be NULL */
} rnn_layer;

typedef struct rnn_impl {
  rnn_kind kind;
  ct_rnn_opts o;
  rnn_layer *layers; /* num_layers */
} rnn_impl;

static const char *rnn_name(rnn_kind k) { return k == RNN_LSTM ? "lstm" : "gru"; }
static int n_gates(rnn_kind k) { return k == RNN_LSTM ? 4 : 3; }

static void rnn_destroy(void *self) {
  rnn_impl *r = self;
  if (r) free(r->layers);
  free(r);
}

static ct_tensor *rnn_module_forward(ct_module *m, void *self, const ct_tensor *x);
static const ct_module_vtable lstm_vt = {"LSTM", rnn_module_forward, rnn_destroy};
static const ct_module_vtable gru_vt = {"GRU", rnn_module_forward, rnn_destroy};

static ct_module *rnn_new(rnn_kind kind, const ct_rnn_opts *rnn, const ct_module_opts *opts) {
  char what[16];
  snprintf(what, sizeof what, "%s_new", rnn_name(kind));
  ct_module_opts mo;
  if (!ct__module_opts(what, opts, &mo)) return NULL;
  if (!rnn) return ct__fail(CT_ERR_ARG, "%s: options (input_size, hidden_size) are required", what);
  ct_rnn_opts o = *rnn;
  if (o.num_layers == 0) o.num_layers = 1;
  if (o.input_size <= 0 || o.hidden_size <= 0 || o.num_layers < 0)
    return ct__fail(CT_ERR_ARG,
                    "%s: input_size and hidden_size must be > 0 and num_layers >= 0, got %lld, "
                    "%lld and %d",
                    what, (long long)o.input_size, (long long)o.hidden_size, o.num_layers);
  rnn_impl *r = ct__calloc(1, sizeof *r);
  rnn_layer *layers = ct__calloc((size_t)o.num_layers, sizeof *layers);
  if (!r || !layers) {
    free(r), free(layers);
    return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  }
  r->kind = kind;
  r->o = o;
  r->layers = layers;
  ct_module *m = ct__module_new_builtin(kind == RNN_LSTM ? &lstm_vt : &gru_vt, r);
  if (!m) return NULL;
  int64_t H = o.hidden_size, G = n_gates(kind) * H;
  double bound = 1.0 / sqrt((double)H); /* torch's reset_parameters */
  bool ok = true;
  for (int k = 0; k < o.num_layers && ok; k++) {
    int64_t in = k == 0 ? o.input_size : H;
    char name[32];
    rnn_layer *l = &layers[k];
    snprintf(name, sizeof name, "weight_ih_l%d", k);
    ok = (l->w_ih = ct_module_register_parameter(
              m, name, ct__init_uniform(CT_SHAPE(G, in), bound, &mo))) != NULL;
    snprintf(name, sizeof name, "weight_hh_l%d", k);
    ok = ok && (l->w_hh = ct_module_register_parameter(
                    m, name, ct__init_uniform(CT_SHAPE(G, H), bound, &mo))) != NULL;
    if (ok && !o.no_bias) {
      snprintf(name, sizeof name, "bias_ih_l%d", k);
      ok = (l->b_ih = ct_module_register_parameter(
                m, name, ct__init_uniform(CT_SHAPE(G), bound, &mo))) != NULL;
      snprintf(name, sizeof name, "bias_hh_l%d", k);
      ok = ok && (l->b_hh = ct_module_register_parameter(
                      m, name, ct__init_uniform(CT_SHAPE(G), bound, &mo))) != NULL;
    }
  }
  if (!ok) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}

ct_module *ct_lstm_new(const ct_rnn_opts *rnn, const ct_module_opts *opts) {
  return rnn_new(RNN_LSTM, rnn, opts);
}
ct_module *ct_gru_new(const ct_rnn_opts *rnn, const ct_module_opts *opts) {
  return rnn_new(RNN_GRU, rnn, opts);
}

/* ---- Forward ------------------------------------------------------------------ */

/* Gate j (of H columns) of gates (N, G*H). */
static ct_tensor *gate(const ct_tensor *gates, int j, int64_t H) {
  return ct_narrow(gates, 1, j * H, H);
}

/* One LSTM step from gates = x W_ih^T + b_ih + h W_hh^T + b_hh: the new h, *c updated. */
static ct_tensor *lstm_cell(const ct_tensor *gates, ct_tensor **c, int64_t H) {
  ct_tensor *i = ct_sigmoid(gate(gates, 0, H)), *f = ct_sigmoid(gate(gates, 1, H));
  ct_tensor *g = ct_tanh(gate(gates, 2, H)), *o = ct_sigmoid(gate(gates, 3, H));
  *c = ct_add(ct_mul(f, *c), ct_mul(i, g));
  return ct_mul(o, ct_tanh(*c));
}

/* One GRU step from the input's projection gi and the hidden one gh (N, 3H). */
static ct_tensor *gru_cell(const ct_tensor *gi, const ct_tensor *gh, const ct_tensor *h,
                           int64_t H) {
  ct_tensor *r = ct_sigmoid(ct_add(gate(gi, 0, H), gate(gh, 0, H)));
  ct_tensor *z = ct_sigmoid(ct_add(gate(gi, 1, H), gate(gh, 1, H)));
  ct_tensor *n = ct_tanh(ct_add(gate(gi, 2, H), ct_mul(r, gate(gh, 2, H))));
  return ct_add(ct_mul(ct_rsub_scalar(z, 1.0), n), ct_mul(z, h));
}

/* Checks an initial state: (num_layers, N, H); NULL is fine. */
static bool check_state(const char *what, const char *name, const ct_tensor *s, const rnn_impl *r,
                        int64_t N) {
  if (!s) return true;
  const int64_t want[3] = {r->o.num_layers, N, r->o.hidden_size};
  bool ok = ct_ndim(s) == 3;
  for (int d = 0; ok && d < 3; d++) ok = ct_shape(s)[d] == want[d];
  if (!ok) {
    char got[CT_SHAPE_STR_MAX];
    ct_shape_format(ct_shape(s), ct_ndim(s), got, sizeof got);
    ct__fail(CT_ERR_SHAPE, "%s: %s has shape %s, expected (%lld, %lld, %lld)", what, name, got,
             (long long)want[0], (long long)want[1], (long long)want[2]);
  }
  return ok;
}

/* The layers over x (L, N, in), inside the caller's scope; *h_n and *c_n
 * (stacked final states) when asked. */
static ct_tensor *run_layers(const rnn_impl *r, const ct_tensor *x, const ct_tensor *h0,
                             const ct_tensor *c0, ct_tensor **h_n, ct_tensor **c_n) {
  int64_t L = ct_shape(x)[0], N = ct_shape(x)[1], H = r->o.hidden_size;
  int nl = r->o.num_layers;
  ct_tensor **hs = ct__calloc((size_t)(L ? L : 1), sizeof *hs);
  ct_tensor **finals = ct__calloc((size_t)nl * 2, sizeof *finals);
  if (!hs || !finals) {
    free(hs), free(finals);
    return ct__fail(CT_ERR_OOM, "%s_forward: out of host memory", rnn_name(r->kind));
  }
  ct_tensor_opts like = {.dtype = ct_dtype_of(x), .device = ct_device_of(x)};
  const ct_tensor *in = x;
  bool ok = true;
  for (int k = 0; k < nl && ok; k++) {
    const rnn_layer *l = &r->layers[k];
    ct_tensor *h = h0 ? ct_select(h0, 0, k) : ct_zeros(CT_SHAPE(N, H), &like);
    ct_tensor *c = r->kind == RNN_GRU ? NULL
                   : c0               ? ct_select(c0, 0, k)
                                      : ct_zeros(CT_SHAPE(N, H), &like);
    ct_tensor *gi_all = ct_linear(in, l->w_ih, l->b_ih); /* (L, N, G*H): every step at once */
    ok = h && gi_all && (r->kind == RNN_GRU || c);
    for (int64_t t = 0; t < L && ok; t++) {
      ct_tensor *gi = ct_select(gi_all, 0, t), *gh = ct_linear(h, l->w_hh, l->b_hh);
      h = r->kind == RNN_LSTM ? lstm_cell(ct_add(gi, gh), &c, H) : gru_cell(gi, gh, h, H);
      ok = (hs[t] = h) != NULL;
    }
    finals[k] = h, finals[nl + k] = c;
    if (ok && L > 0) ok = (in = ct_stack(hs, (int)L, 0)) != NULL;
  }
  ct_tensor *out = NULL;
  if (ok) {
    out = L > 0 ? (ct_tensor *)in : ct_zeros(CT_SHAPE(0, N, H), &like);
    if (h_n) ok = (*h_n = ct_stack(finals, nl, 0)) != NULL;
    if (ok && c_n && r->kind == RNN_LSTM) ok = (*c_n = ct_stack(finals + nl, nl, 0)) != NULL;
  }
  free(hs);
  free(finals);
  return ok ? out : NULL;
}

static ct_tensor *rnn_forward(rnn_kind kind, ct_module *m, const ct_tensor *x, const ct_tensor *h0,
                              const ct_tensor *c0, ct_tensor **h_n, ct_tensor **c_n) {
  char what[24];
  snprintf(what, sizeof what, "%s_forward", rnn_name(kind));
  if (h_n) *h_n = NULL;
  if (c_n) *c_n = NULL;
  if (!m || !x) return ct__fail(CT_ERR_ARG, "%s: module or input is NULL", what);
  const ct_module_vtable *vt = ct__module_vtable(m);
  if (vt != (kind == RNN_LSTM ? &lstm_vt : &gru_vt))
    return ct__fail(CT_ERR_ARG, "%s: the module is a %s, not a%s", what, ct_module_type_name(m),
                    kind == RNN_LSTM ? "n LSTM" : " GRU");
  const rnn_impl *r = ct__module_impl(m);
  int nd = ct_ndim(x);
  if ((nd != 2 && nd != 3) || ct_shape(x)[nd - 1] != r->o.input_size) {
    char got[CT_SHAPE_STR_MAX];
    ct_shape_format(ct_shape(x), nd, got, sizeof got);
    return ct__fail(CT_ERR_SHAPE,
                    "%s: expected input (L, N, %lld)%s or unbatched (L, %lld), got %s", what,
                    (long long)r->o.input_size, r->o.batch_first ? " as (N, L, ...)" : "",
                    (long long)r->o.input_size, got);
  }
  bool unbatched = nd == 2;
  ct_scope_begin();
  /* as (L, N, features), initial states as (layers, N, H) */
  ct_tensor *xs = unbatched          ? ct_unsqueeze(x, 1)
                  : r->o.batch_first ? ct_transpose(x, 0, 1)
                                     : (ct_tensor *)x;
  const ct_tensor *s0[2] = {h0, c0};
  const char *names[2] = {"h0", "c0"};
  bool ok = xs != NULL;
  for (int i = 0; i < 2 && ok; i++) {
    if (!s0[i]) continue;
    if (unbatched && ct_ndim(s0[i]) == 2) s0[i] = ct_unsqueeze(s0[i], 1);
    ok = s0[i] && check_state(what, names[i], s0[i], r, ct_shape(xs)[1]);
  }
  ct_tensor *hn = NULL, *cn = NULL, *y = NULL;
  if (ok)
    y = run_layers(r, xs, s0[0], kind == RNN_LSTM ? s0[1] : NULL, h_n ? &hn : NULL,
                   c_n ? &cn : NULL);
  if (y && unbatched) {
    y = ct_squeeze_dim(y, 1);
    if (hn) hn = ct_squeeze_dim(hn, 1);
    if (cn) cn = ct_squeeze_dim(cn, 1);
  } else if (y && r->o.batch_first) {
    y = ct_transpose(y, 0, 1);
  }
  ok = y && (!h_n || hn) && (!c_n || kind != RNN_LSTM || cn);
  if (ok) {
    ct_keep(y);
    if (h_n) *h_n = ct_keep(hn);
    if (c_n && cn) *c_n = ct_keep(cn);
  }
  ct_scope_end();
  return ok ? y : NULL;
}

static ct_tensor *rnn_module_forward(ct_module *m, void *self, const ct_tensor *x) {
  const rnn_impl *r = self;
  return rnn_forward(r->kind, m, x, NULL, NULL, NULL, NULL);
}

ct_tensor *ct_lstm_forward(ct_module *m, const ct_tensor *x, const ct_tensor *h0,
                           const ct_tensor *c0, ct_tensor **h_n, ct_tensor **c_n) {
  return rnn_forward(RNN_LSTM, m, x, h0, c0, h_n, c_n);
}

ct_tensor *ct_gru_forward(ct_module *m, const ct_tensor *x, const ct_tensor *h0, ct_tensor **h_n) {
  return rnn_forward(RNN_GRU, m, x, h0, NULL, h_n, NULL);
}
