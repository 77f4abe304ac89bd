/* One direction of one LSTM or GRU layer as one autograd node (rnn_layer.h).
 * Where the per-step composition recorded a linear, a select and a cell per
 * step (and its backward made 2L small GEMMs of K = N rows for dW_hh and the
 * projection, and scattered each step's gradient into zeros), this runs
 *   GI (L*N, G*H) = in (L*N, I) @ W_ih^T + b_ih (+ b_hh for the LSTM)  one GEMM
 *   per step t:  GH (N, G*H) = h_{t-1} @ W_hh^T (+ b_hh for the GRU, whose
 *                n gate scales it by r);  the fused cell (backend rnn_cell)
 *                writes h_t, c_t into the output and its workspace into ws
 * through the backend's slots on preallocated buffers, and records one node
 * whose backward (autograd/grad_rnn_layer.c) walks the steps in reverse. */
#include "nn/rnn_layer.h"

#include "autograd/autograd_internal.h"
#include "ops/ops_internal.h"

/* The buffers and per-step windows of one forward pass. */
typedef struct layer_fwd {
  ct_tensor *in, *h0, *c0;       /* contiguous operands */
  ct_tensor *out, *ws, *gi, *gh; /* out (2|1, L, N, H), ws (L, N, W), gi (L, N, G), gh (N, G) */
  ct_tensor *in3, *gi3, *w_ihT, *w_hhT, *gh3, *gh2;
  ct_tensor *h0_3, *hp3, *hp2, *sp2; /* h_{t-1} for the GEMM (step 0: h0), the cell's old state */
  ct_tensor *w_hh_packed;            /* W_hh^T for rnn_matmul_packed, or NULL */
  ct_tensor *h_t, *c_t, *ws_t, *gi_t;
  int64_t ws_stride; /* elements between steps' workspaces: 0 when no gradient keeps them */
} layer_fwd;

static void fwd_release(layer_fwd *f) {
  ct_tensor **all[] = {&f->in,  &f->h0,   &f->c0,   &f->out,        &f->ws,    &f->gi,
                       &f->gh,  &f->in3,  &f->gi3,  &f->w_ihT,      &f->w_hhT, &f->gh3,
                       &f->gh2, &f->h0_3, &f->hp3,  &f->hp2,        &f->sp2,   &f->h_t,
                       &f->c_t, &f->ws_t, &f->gi_t, &f->w_hh_packed};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    ct__release(*all[i]);
    *all[i] = NULL;
  }
}

/* GI = in @ W_ih^T + the biases summed with it (one GEMM on the bias
 * prefill, as ct__linear). */
static ct_status project_input(const ct_backend *be, const ct_rnn_layer_args *a, layer_fwd *f) {
  bool lstm = a->kind == CT_RNN_CELL_LSTM;
  const ct_tensor *b0 = a->b_ih ? a->b_ih : lstm ? a->b_hh : NULL;
  const ct_tensor *b1 = lstm && a->b_ih ? a->b_hh : NULL;
  ct_status st = b0 ? ct__copy_into(f->gi, b0) : CT_OK;
  if (st == CT_OK && b1) {
    ct_tensor *bb = ct__broadcast_to(b1, f->gi->shape, f->gi->ndim);
    st = bb ? be->binary(CT_BOP_ADD, f->gi, f->gi, bb) : CT_ERR_OOM;
    ct__release(bb);
  }
  return st == CT_OK ? be->matmul(f->gi3, f->in3, f->w_ihT, b0 != NULL) : st;
}

/* The recurrence: step s of the walk is time t (reverse: L - 1 - s). */
static ct_status recur(const ct_backend *be, const ct_rnn_layer_args *a,
                       const ct_rnn_layer_params *p, layer_fwd *f) {
  bool lstm = a->kind == CT_RNN_CELL_LSTM, gh_bias = !lstm && a->b_hh;
  int64_t L = p->L, N = p->cell.N, H = p->cell.H, G = (lstm ? 4 : 3) * H;
  ct_status st = CT_OK;
  for (int64_t s = 0; s < L && st == CT_OK; s++) {
    int64_t t = a->reverse ? L - 1 - s : s, tp = a->reverse ? t + 1 : t - 1;
    if (s > 0) {
      ct__rnn_seek(f->hp3, f->out, tp * N * H);
      ct__rnn_seek(f->hp2, f->out, tp * N * H);
      ct__rnn_seek(f->sp2, f->out, ((lstm ? L : 0) + tp) * N * H);
    }
    ct__rnn_seek(f->h_t, f->out, t * N * H);
    if (lstm) ct__rnn_seek(f->c_t, f->out, (L + t) * N * H);
    ct__rnn_seek(f->ws_t, f->ws, t * f->ws_stride);
    ct__rnn_seek(f->gi_t, f->gi, t * N * G);
    if (gh_bias) st = ct__copy_into(f->gh, a->b_hh);
    if (st == CT_OK && f->w_hh_packed)
      st = be->rnn_matmul_packed(f->gh2, s > 0 ? f->hp2 : f->h0, f->w_hh_packed, gh_bias);
    else if (st == CT_OK)
      st = be->matmul(f->gh3, s > 0 ? f->hp3 : f->h0_3, f->w_hhT, gh_bias);
    const ct_tensor *state = s > 0 ? f->sp2 : lstm ? f->c0 : f->h0;
    if (st == CT_OK) st = be->rnn_cell(&p->cell, f->h_t, f->c_t, f->ws_t, f->gi_t, f->gh2, state);
  }
  return st;
}

ct_tensor *ct__rnn_layer(const ct_rnn_layer_args *a) {
  bool lstm = a->kind == CT_RNN_CELL_LSTM;
  const ct_tensor *x = a->in;
  int64_t L = x->shape[0], N = x->shape[1], I = x->shape[2], H = a->w_hh->shape[1];
  int64_t G = (lstm ? 4 : 3) * H, W = (lstm ? 5 : 4) * H;
  ct_dtype dt = x->dtype;
  ct_device dev = ct__device(x);
  const ct_backend *be = ct__backend_of(x);
  ct_rnn_layer_params p = {.cell = {a->kind, N, H}, .reverse = a->reverse, .L = L, .I = I};
  const ct_tensor *ins[7] = {a->in, a->h0, a->c0, a->w_ih, a->w_hh, a->b_ih, a->b_hh};
  /* Every step's workspace is kept for the backward pass; without one (no_grad,
   * inference) the steps share one, so memory does not grow with L. */
  bool keep_ws = ct__ag_needed(ins, 7);
  layer_fwd f = {.ws_stride = keep_ws ? N * W : 0};
  f.in = ct__contiguous(x);
  f.h0 = ct__contiguous(a->h0);
  f.c0 = lstm ? ct__contiguous(a->c0) : NULL;
  f.out = lstm ? ct__empty((int64_t[]){2, L, N, H}, 4, dt, dev)
               : ct__empty((int64_t[]){L, N, H}, 3, dt, dev);
  f.ws = ct__empty((int64_t[]){keep_ws ? L : 1, N, W}, 3, dt, dev);
  f.gi = ct__empty((int64_t[]){L, N, G}, 3, dt, dev);
  f.gh = ct__empty((int64_t[]){N, G}, 2, dt, dev);
  ct_status st = CT_ERR_OOM;
  if (!f.in || !f.h0 || (lstm && !f.c0) || !f.out || !f.ws || !f.gi || !f.gh) goto done;
  f.in3 = ct__rnn_window(f.in, L * N, I, 0, true);
  f.gi3 = ct__rnn_window(f.gi, L * N, G, 0, true);
  f.w_ihT = ct__rnn_mat(a->w_ih, true);
  f.w_hhT = ct__rnn_mat(a->w_hh, true);
  f.gh3 = ct__rnn_window(f.gh, N, G, 0, true);
  f.gh2 = ct__rnn_window(f.gh, N, G, 0, false);
  f.h0_3 = ct__rnn_window(f.h0, N, H, 0, true);
  f.hp3 = ct__rnn_window(f.out, N, H, 0, true);
  f.hp2 = ct__rnn_window(f.out, N, H, 0, false);
  f.sp2 = ct__rnn_window(f.out, N, H, 0, false);
  f.h_t = ct__rnn_window(f.out, N, H, 0, false);
  f.c_t = lstm ? ct__rnn_window(f.out, N, H, 0, false) : NULL;
  f.ws_t = ct__rnn_window(f.ws, N, W, 0, false);
  f.gi_t = ct__rnn_window(f.gi, N, G, 0, false);
  if (!f.in3 || !f.gi3 || !f.w_ihT || !f.w_hhT || !f.gh3 || !f.gh2 || !f.h0_3 || !f.hp3 || !f.hp2 ||
      !f.sp2 || !f.h_t || (lstm && !f.c_t) || !f.ws_t || !f.gi_t)
    goto done;
  st = ct__rnn_pack_w_hh(be, a->w_hh, true, &f.w_hh_packed);
  if (st == CT_OK) st = project_input(be, a, &f);
  if (st == CT_OK) st = recur(be, a, &p, &f);
done:;
  ct_tensor *out = NULL;
  if (st == CT_OK) {
    out = ct__ag_rnn_layer(ct__retain(f.out), ins, f.in, f.h0, f.c0, f.ws, &p);
  }
  fwd_release(&f);
  return ct__track(out);
}
