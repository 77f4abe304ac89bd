/* The pointwise part of the LSTM and GRU cells (ct_lstm_cell_pointwise,
 * ct_gru_cell_pointwise in ctensor/rnn.h): shape checks, the backend's fused
 * kernel and the recording of its fused backward (autograd/grad_rnn.c) for
 * f32 and f64; other dtypes (f16, bf16) run the same formulas as a
 * composition of sigmoid, tanh and elementwise ops. */
#include "ctensor/rnn.h"
#include "nn/functional_internal.h"

static const char *cell_name(ct_rnn_cell_kind k) {
  return k == CT_RNN_CELL_LSTM ? "lstm_cell_pointwise" : "gru_cell_pointwise";
}

/* gi, gh (N, G*H) and state (N, H): one floating dtype, one device. */
static bool check_cell(ct_rnn_cell_kind kind, const ct_tensor *gi, const ct_tensor *gh,
                       const ct_tensor *state, ct_rnn_cell_params *p) {
  const char *op = cell_name(kind);
  int G = kind == CT_RNN_CELL_LSTM ? 4 : 3;
  char s1[CT_SHAPE_STR_MAX], s2[CT_SHAPE_STR_MAX], s3[CT_SHAPE_STR_MAX];
  p->kind = kind;
  p->N = state->ndim == 2 ? state->shape[0] : 0;
  p->H = state->ndim == 2 ? state->shape[1] : 0;
  const int64_t want[2] = {p->N, G * p->H};
  if (state->ndim != 2 || !ct__nn_shape_is(gi, want, 2) || !ct__nn_shape_is(gh, want, 2)) {
    ct__fail(CT_ERR_SHAPE,
             "%s: expected gates (N, %d*H) and state (N, H), got gi %s, gh %s and state %s", op, G,
             ct__shape_str(gi, s1, sizeof s1), ct__shape_str(gh, s2, sizeof s2),
             ct__shape_str(state, s3, sizeof s3));
    return false;
  }
  if (!ct__nn_need_float(op, "gi", gi) || !ct__check_same_device(op, gi, gh) ||
      !ct__check_same_device(op, gi, state))
    return false;
  if (gh->dtype != gi->dtype || state->dtype != gi->dtype) {
    ct__fail(CT_ERR_DTYPE, "%s: expected gi, gh and state of one dtype, got %s, %s and %s", op,
             ct_dtype_name(gi->dtype), ct_dtype_name(gh->dtype), ct_dtype_name(state->dtype));
    return false;
  }
  return true;
}

/* The formulas of core/rnn_math.h as ops (dtypes without a fused kernel),
 * inside the caller's scope. */
static ct_tensor *gate(const ct_tensor *t, int j, int64_t H) { return ct_narrow(t, 1, j * H, H); }
static ct_tensor *composed(const ct_rnn_cell_params *p, const ct_tensor *gi, const ct_tensor *gh,
                           const ct_tensor *state, ct_tensor **c_new) {
  int64_t H = p->H;
  if (p->kind == CT_RNN_CELL_LSTM) {
    ct_tensor *a = ct_add(gi, gh);
    ct_tensor *i = ct_sigmoid(gate(a, 0, H)), *f = ct_sigmoid(gate(a, 1, H));
    ct_tensor *g = ct_tanh(gate(a, 2, H)), *o = ct_sigmoid(gate(a, 3, H));
    *c_new = ct_add(ct_mul(f, state), ct_mul(i, g));
    return ct_mul(o, ct_tanh(*c_new));
  }
  ct_tensor *r = ct_sigmoid(ct_add(gate(gi, 0, H), gate(gh, 0, H)));
  ct_tensor *z = ct_sigmoid(ct_add(gate(gi, 1, H), gate(gh, 1, H)));
  ct_tensor *n = ct_tanh(ct_add(gate(gi, 2, H), ct_mul(r, gate(gh, 2, H))));
  return ct_add(ct_mul(ct_sub(state, n), z), n);
}

/* The backend's kernel: the output (LSTM (2, N, H), GRU (N, H)) recorded for
 * autograd; NULL on failure. */
static ct_tensor *fused(const ct_backend *be, const ct_rnn_cell_params *p, const ct_tensor *gi,
                        const ct_tensor *gh, const ct_tensor *state) {
  bool ok = true, lstm = p->kind == CT_RNN_CELL_LSTM;
  ct_tensor *a = ct__nn_prep(gi, gi->dtype, &ok), *b = ct__nn_prep(gh, gi->dtype, &ok);
  ct_tensor *s = ct__nn_prep(state, gi->dtype, &ok);
  ct_device dev = ct__device(gi);
  ct_tensor *out = NULL, *ws = NULL, *h = NULL, *c = NULL;
  if (ok &&
      (out = lstm ? ct__empty((int64_t[]){2, p->N, p->H}, 3, gi->dtype, dev)
                  : ct__empty((int64_t[]){p->N, p->H}, 2, gi->dtype, dev)) &&
      (ws = ct__empty((int64_t[]){p->N, (lstm ? 5 : 4) * p->H}, 2, gi->dtype, dev)) &&
      /* the LSTM's h' and c' are the two (N, H) blocks of out */
      (h = ct__rnn_window(out, p->N, p->H, 0, false)) &&
      (!lstm || (c = ct__rnn_window(out, p->N, p->H, p->N * p->H, false))) &&
      be->rnn_cell(p, h, c, ws, a, b, s) == CT_OK) {
    const ct_tensor *ins[3] = {gi, gh, state};
    out = ct__ag_rnn_cell(out, ins, s, ws, p);
  } else {
    ct__release(out);
    out = NULL;
  }
  ct__release(a), ct__release(b), ct__release(s), ct__release(ws);
  ct__release(h), ct__release(c);
  return out;
}

static ct_tensor *cell(ct_rnn_cell_kind kind, const ct_tensor *gi, const ct_tensor *gh,
                       const ct_tensor *state, ct_tensor **c_new) {
  if (c_new) *c_new = NULL;
  if (!gi || !gh || !state) return NULL;
  ct_rnn_cell_params p;
  if (!check_cell(kind, gi, gh, state, &p)) return NULL;
  const ct_backend *be = ct__backend_for(cell_name(kind), gi);
  if (!be) return NULL;
  bool lstm = kind == CT_RNN_CELL_LSTM;
  ct_tensor *h = NULL, *c = NULL;
  ct_scope_begin();
  if ((gi->dtype == CT_F32 || gi->dtype == CT_F64) && be->rnn_cell) {
    ct_tensor *out = fused(be, &p, gi, gh, state);
    if (out) {
      ct__track(out);
      h = lstm ? ct_select(out, 0, 0) : out;
      c = lstm ? ct_select(out, 0, 1) : NULL;
    }
  } else {
    h = composed(&p, gi, gh, state, &c);
  }
  bool ok = h && (!lstm || c);
  if (ok) {
    ct_keep(h);
    if (lstm) *c_new = ct_keep(c);
  }
  ct_scope_end();
  return ok ? h : NULL;
}

ct_tensor *ct_lstm_cell_pointwise(const ct_tensor *gi, const ct_tensor *gh, const ct_tensor *c,
                                  ct_tensor **c_new) {
  if (!c_new) return ct__fail(CT_ERR_ARG, "lstm_cell_pointwise: c_new is NULL");
  return cell(CT_RNN_CELL_LSTM, gi, gh, c, c_new);
}

ct_tensor *ct_gru_cell_pointwise(const ct_tensor *gi, const ct_tensor *gh, const ct_tensor *h) {
  return cell(CT_RNN_CELL_GRU, gi, gh, h, NULL);
}
