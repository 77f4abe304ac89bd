/* LSTM and GRU modules (ctensor/rnn.h): torch's parameter names, gate order
 * and initialization, bidirectional layers and dropout between layers. In
 * f32 and f64 on backends with the fused cell, each layer and direction is
 * one autograd node (nn/rnn_layer.h); otherwise (f16, bf16, autocast) it
 * projects its input 8 steps at a time (one matmul) and steps through time
 * with the hidden projection and the pointwise cell (nn/rnn_cell.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "ctensor/amp.h"
#include "ctensor/rnn.h"
#include "nn/module_internal.h"
#include "nn/rnn_layer.h"

typedef enum { RNN_LSTM, RNN_GRU } rnn_kind;

typedef struct rnn_layer {
  ct_tensor *w_ih, *w_hh, *b_ih, *b_hh; /* borrowed from the module; biases may be NULL */
} rnn_layer;

typedef struct rnn_impl {
  rnn_kind kind;
  ct_rnn_opts o;
  int dirs;          /* 2 when bidirectional */
  rnn_layer *layers; /* num_layers * dirs, layer-major (torch's order) */
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
  if (!(o.dropout >= 0 && o.dropout < 1))
    return ct__fail(CT_ERR_ARG, "%s: dropout must be in [0, 1), got %g", what, o.dropout);
  int dirs = o.bidirectional ? 2 : 1;
  rnn_impl *r = ct__calloc(1, sizeof *r);
  rnn_layer *layers = ct__calloc((size_t)o.num_layers * (size_t)dirs, sizeof *layers);
  if (!r || !layers) {
    free(r), free(layers);
    return ct__fail(CT_ERR_OOM, "%s: out of host memory", what);
  }
  r->kind = kind;
  r->o = o;
  r->dirs = dirs;
  r->layers = layers;
  ct_module *m = ct__module_new_builtin(kind == RNN_LSTM ? &lstm_vt : &gru_vt, r);
  if (!m) return NULL;
  int64_t H = o.hidden_size, G = n_gates(kind) * H;
  double bound = 1.0 / sqrt((double)H); /* torch's reset_parameters */
  bool ok = true;
  for (int li = 0; li < o.num_layers * dirs && ok; li++) {
    int k = li / dirs;
    const char *sfx = li % dirs ? "_reverse" : "";
    int64_t in = k == 0 ? o.input_size : dirs * H;
    char name[40];
    rnn_layer *l = &layers[li];
    snprintf(name, sizeof name, "weight_ih_l%d%s", k, sfx);
    ok = (l->w_ih = ct_module_register_parameter(
              m, name, ct__init_uniform(CT_SHAPE(G, in), bound, &mo))) != NULL;
    snprintf(name, sizeof name, "weight_hh_l%d%s", k, sfx);
    ok = ok && (l->w_hh = ct_module_register_parameter(
                    m, name, ct__init_uniform(CT_SHAPE(G, H), bound, &mo))) != NULL;
    if (ok && !o.no_bias) {
      snprintf(name, sizeof name, "bias_ih_l%d%s", k, sfx);
      ok = (l->b_ih = ct_module_register_parameter(
                m, name, ct__init_uniform(CT_SHAPE(G), bound, &mo))) != NULL;
      snprintf(name, sizeof name, "bias_hh_l%d%s", k, sfx);
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

/* Checks an initial state: (num_layers * dirs, N, H); NULL is fine. */
static bool check_state(const char *what, const char *name, const ct_tensor *s, const rnn_impl *r,
                        int64_t N) {
  if (!s) return true;
  const int64_t want[3] = {(int64_t)r->o.num_layers * r->dirs, N, r->o.hidden_size};
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

/* Steps whose input projection is one matmul in the per-step composition
 * (the one-node path projects the whole sequence at once). Not all: the
 * gradient of each step's view of a projection is scattered into zeros of
 * the projection's shape before it is summed, so a projection of L steps
 * costs O(L^2) memory traffic in the backward pass (35% of a training step at
 * L = 64, N = 32, H = 256); blocks of 8 steps keep the matmuls 8*N rows tall
 * and that traffic 8*L. */
#define RNN_PROJ_STEPS 8

/* Whether one direction of layer l runs as one node (nn/rnn_layer.h): f32
 * or f64, every tensor of one dtype and device, a backend with the fused
 * cell, no autocast (whose region runs the projections in half precision,
 * as the per-step composition does). */
static bool layer_fusable(const rnn_layer *l, const ct_tensor *in, const ct_tensor *h,
                          const ct_tensor *c) {
  ct_dtype dt = ct_dtype_of(in);
  ct_device dev = ct_device_of(in);
  if ((dt != CT_F32 && dt != CT_F64) || ct_autocast_is_enabled(dev.type)) return false;
  const ct_tensor *all[] = {h, c, l->w_ih, l->w_hh, l->b_ih, l->b_hh};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i] && (ct_dtype_of(all[i]) != dt || !ct_device_equal(ct_device_of(all[i]), dev)))
      return false;
  const ct_backend *be = ct__backend_of(in);
  return be->matmul && be->rnn_cell && be->rnn_cell_backward;
}

/* The direction as one node: its output (2, L, N, H) (LSTM) or (L, N, H)
 * (GRU) viewed as the h sequence; *h and *c become the final states. */
static ct_tensor *run_fused(const rnn_impl *r, const rnn_layer *l, bool reverse,
                            const ct_tensor *in, ct_tensor **h, ct_tensor **c) {
  bool lstm = r->kind == RNN_LSTM;
  ct_rnn_layer_args a = {.kind = lstm ? CT_RNN_CELL_LSTM : CT_RNN_CELL_GRU,
                         .reverse = reverse,
                         .in = in,
                         .h0 = *h,
                         .c0 = *c,
                         .w_ih = l->w_ih,
                         .w_hh = l->w_hh,
                         .b_ih = l->b_ih,
                         .b_hh = l->b_hh};
  ct_tensor *out = ct__rnn_layer(&a);
  ct_tensor *hs = lstm ? ct_select(out, 0, 0) : out, *cs = lstm ? ct_select(out, 0, 1) : NULL;
  int64_t last = reverse ? 0 : ct_shape(in)[0] - 1;
  *h = ct_select(hs, 0, last);
  *c = lstm ? ct_select(cs, 0, last) : NULL;
  return *h && (!lstm || *c) ? hs : NULL;
}

/* One direction of one layer over in (L, N, features), from state h (and c
 * for the LSTM): the output (L, N, H); *h and *c become the final states. */
static ct_tensor *run_direction(const rnn_impl *r, const rnn_layer *l, bool reverse,
                                const ct_tensor *in, ct_tensor **h, ct_tensor **c, ct_tensor **hs) {
  int64_t L = ct_shape(in)[0], b0 = -1;
  ct_tensor *gi_blk = NULL; /* (steps, N, G*H): x W_ih^T + b_ih of steps b0.. */
  bool ok = *h && (r->kind == RNN_GRU || *c);
  if (ok && layer_fusable(l, in, *h, *c)) return run_fused(r, l, reverse, in, h, c);
  for (int64_t s = 0; s < L && ok; s++) {
    int64_t t = reverse ? L - 1 - s : s;
    if (t / RNN_PROJ_STEPS * RNN_PROJ_STEPS != b0) {
      b0 = t / RNN_PROJ_STEPS * RNN_PROJ_STEPS;
      int64_t n = L - b0 < RNN_PROJ_STEPS ? L - b0 : RNN_PROJ_STEPS;
      ok = (gi_blk = ct_linear(ct_narrow(in, 0, b0, n), l->w_ih, l->b_ih)) != NULL;
      if (!ok) break;
    }
    ct_tensor *gi = ct_select(gi_blk, 0, t - b0), *gh = ct_linear(*h, l->w_hh, l->b_hh);
    *h = r->kind == RNN_LSTM ? ct_lstm_cell_pointwise(gi, gh, *c, c)
                             : ct_gru_cell_pointwise(gi, gh, *h);
    ok = (hs[t] = *h) != NULL;
  }
  return ok ? ct_stack(hs, (int)L, 0) : NULL;
}

/* The layers over x (L, N, in) with L > 0, inside the caller's scope;
 * *h_n and *c_n (stacked final states) when asked. */
static ct_tensor *run_layers(const rnn_impl *r, const ct_tensor *x, const ct_tensor *h0,
                             const ct_tensor *c0, bool training, ct_tensor **h_n, ct_tensor **c_n) {
  int64_t L = ct_shape(x)[0], N = ct_shape(x)[1], H = r->o.hidden_size;
  int ns = r->o.num_layers * r->dirs; /* states */
  ct_tensor **hs = ct__calloc((size_t)L, sizeof *hs);
  ct_tensor **finals = ct__calloc((size_t)ns * 2, sizeof *finals);
  if (!hs || !finals) {
    free(hs), free(finals);
    return ct__fail(CT_ERR_OOM, "%s_forward: out of host memory", rnn_name(r->kind));
  }
  ct_tensor_opts like = {.dtype = ct_dtype_of(x), .device = ct_device_of(x)};
  const ct_tensor *in = x;
  bool ok = true;
  for (int k = 0; k < r->o.num_layers && ok; k++) {
    ct_tensor *dir_out[2] = {NULL, NULL};
    for (int d = 0; d < r->dirs && ok; d++) {
      int si = k * r->dirs + d;
      ct_tensor *h = h0 ? ct_select(h0, 0, si) : ct_zeros(CT_SHAPE(N, H), &like);
      ct_tensor *c = r->kind == RNN_GRU ? NULL
                     : c0               ? ct_select(c0, 0, si)
                                        : ct_zeros(CT_SHAPE(N, H), &like);
      ok = (dir_out[d] = run_direction(r, &r->layers[si], d == 1, in, &h, &c, hs)) != NULL;
      finals[si] = h, finals[ns + si] = c;
    }
    if (ok) in = r->dirs == 2 ? ct_cat(dir_out, 2, 2) : dir_out[0];
    /* torch: dropout on every layer's output but the last, in training */
    if (ok && in && k + 1 < r->o.num_layers && training && r->o.dropout > 0)
      in = ct_dropout(in, r->o.dropout, true, NULL);
    ok = ok && in;
  }
  if (ok && h_n) ok = (*h_n = ct_stack(finals, ns, 0)) != NULL;
  if (ok && c_n && r->kind == RNN_LSTM) ok = (*c_n = ct_stack(finals + ns, ns, 0)) != NULL;
  free(hs);
  free(finals);
  return ok ? (ct_tensor *)in : NULL;
}

/* L = 0: an empty output and the initial states (zeros when not given) as
 * the final ones, as torch. */
static ct_tensor *empty_sequence(const rnn_impl *r, const ct_tensor *x, const ct_tensor *h0,
                                 const ct_tensor *c0, ct_tensor **h_n, ct_tensor **c_n) {
  int64_t N = ct_shape(x)[1], H = r->o.hidden_size, ns = (int64_t)r->o.num_layers * r->dirs;
  ct_tensor_opts like = {.dtype = ct_dtype_of(x), .device = ct_device_of(x)};
  if (h_n) *h_n = h0 ? ct_clone(h0) : ct_zeros(CT_SHAPE(ns, N, H), &like);
  if (c_n && r->kind == RNN_LSTM) *c_n = c0 ? ct_clone(c0) : ct_zeros(CT_SHAPE(ns, N, H), &like);
  return ct_zeros(CT_SHAPE(0, N, r->dirs * H), &like);
}

static ct_tensor *rnn_forward(rnn_kind kind, ct_module *m, const ct_tensor *x, const ct_tensor *h0,
                              const ct_tensor *c0, ct_tensor **h_n, ct_tensor **c_n) {
  char what[24];
  snprintf(what, sizeof what, "%s_forward", rnn_name(kind));
  if (h_n) *h_n = NULL;
  if (c_n) *c_n = NULL;
  if (!x) return NULL; /* keeps the error of whatever made it */
  if (!m) return ct__fail(CT_ERR_ARG, "%s: module is NULL", what);
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
  const ct_tensor *c_init = kind == RNN_LSTM ? s0[1] : NULL;
  if (ok && ct_shape(xs)[0] == 0)
    y = empty_sequence(r, xs, s0[0], c_init, h_n ? &hn : NULL, c_n ? &cn : NULL);
  else if (ok)
    y = run_layers(r, xs, s0[0], c_init, ct_module_is_training(m), h_n ? &hn : NULL,
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
