/* CUDA LSTM/GRU cell kernels, forward and backward (backend.h's rnn_cell
 * slots): core/rnn_math.h's formulas, the CPU's (backend/cpu/rnn.c). One
 * thread per (row n, unit j) of the (N, H) cell, grid-stride; each reads
 * its unit's G gate values and writes h', c' and the workspace (forward)
 * or the G gate gradients and the state's (backward): one launch per step
 * and direction where the composition of ops made a dozen. f32 and f64;
 * layouts in backend/params.h's ct_rnn_cell_params. */
#include "backend/cuda/common.cuh"
#include "core/rnn_math.h"

struct rnn_args {
  ct_rnn_cell_params p;
  /* forward: a, b = gi, gh; s = state; h, c (LSTM), ws written
   * backward: a, b = grad_h, grad_c (LSTM); s = state; ws read; out =
   * grad_gi, gh = grad_gh (GRU), gs = grad_state written */
  const char *a, *b, *s;
  char *h, *c, *out, *ws, *gh, *gs;
};

enum { LSTM_FWD, LSTM_BWD, GRU_FWD, GRU_BWD };

/* Element e = n * H + j of the cell, for the pass K. */
template <class T, int K>
__device__ __forceinline__ void cell_elem(const rnn_args &r, int64_t n, int64_t j, int64_t e) {
  const int64_t H = r.p.H;
  const T *st = (const T *)r.s;
  if (K == LSTM_FWD) {
    const T *ai = (const T *)r.a + n * 4 * H + j, *ah = (const T *)r.b + n * 4 * H + j;
    T *w = (T *)r.ws + n * 5 * H + j;
    ct_lstm_cell_fwd(ai[0] + ah[0], ai[H] + ah[H], ai[2 * H] + ah[2 * H], ai[3 * H] + ah[3 * H],
                     st[e], &w[0], &w[H], &w[2 * H], &w[3 * H], &w[4 * H], &((T *)r.c)[e],
                     &((T *)r.h)[e]);
  } else if (K == LSTM_BWD) {
    const T *w = (const T *)r.ws + n * 5 * H + j;
    T *d = (T *)r.out + n * 4 * H + j;
    ct_lstm_cell_bwd(((const T *)r.a)[e], ((const T *)r.b)[e], w[0], w[H], w[2 * H], w[3 * H],
                     w[4 * H], st[e], &d[0], &d[H], &d[2 * H], &d[3 * H], &((T *)r.gs)[e]);
  } else if (K == GRU_FWD) {
    const T *ai = (const T *)r.a + n * 3 * H + j, *ah = (const T *)r.b + n * 3 * H + j;
    T *w = (T *)r.ws + n * 4 * H + j;
    w[3 * H] = ah[2 * H];
    ct_gru_cell_fwd(ai[0], ai[H], ai[2 * H], ah[0], ah[H], ah[2 * H], st[e], &w[0], &w[H],
                    &w[2 * H], &((T *)r.h)[e]);
  } else {
    const T *w = (const T *)r.ws + n * 4 * H + j;
    T *di = (T *)r.out + n * 3 * H + j, *dg = (T *)r.gh + n * 3 * H + j;
    ct_gru_cell_bwd(((const T *)r.a)[e], w[0], w[H], w[2 * H], w[3 * H], st[e], &di[0], &di[H],
                    &di[2 * H], &dg[2 * H], &((T *)r.gs)[e]);
    dg[0] = di[0], dg[H] = di[H];
  }
}

/* A thread per unit of the (N, H) cell, grid-stride. */
template <class T, int K>
__global__ void cell_kernel(rnn_args r) {
  const int64_t H = r.p.H, total = r.p.N * H;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x)
    cell_elem<T, K>(r, e / H, e % H, e);
}

template <class T>
static ct_status launch(const char *op, int dev, const rnn_args &r, bool backward) {
  cudaStream_t s = ctc_stream(dev);
  unsigned blocks = ctc_blocks(r.p.N * r.p.H, dev);
  if (r.p.kind == CT_RNN_CELL_LSTM && backward)
    cell_kernel<T, LSTM_BWD><<<blocks, CTC_THREADS, 0, s>>>(r);
  else if (r.p.kind == CT_RNN_CELL_LSTM)
    cell_kernel<T, LSTM_FWD><<<blocks, CTC_THREADS, 0, s>>>(r);
  else if (backward)
    cell_kernel<T, GRU_BWD><<<blocks, CTC_THREADS, 0, s>>>(r);
  else
    cell_kernel<T, GRU_FWD><<<blocks, CTC_THREADS, 0, s>>>(r);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

static ct_status run(const char *op, int dt, int dev, const rnn_args &r, bool backward) {
  if (dt != CT_F32 && dt != CT_F64)
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op,
                           ct_dtype_name((ct_dtype)dt));
  if (r.p.N * r.p.H == 0) return CT_OK;
  ct_status st = ctc_use_device(op, dev);
  if (st != CT_OK) return st;
  return dt == CT_F64 ? launch<double>(op, dev, r, backward) : launch<float>(op, dev, r, backward);
}

extern "C" ct_status ct__cuda_rnn_cell(const ct_rnn_cell_params *p, ct_tensor *h_new_t,
                                       ct_tensor *c_new_t, ct_tensor *ws_t, const ct_tensor *gi_t,
                                       const ct_tensor *gh_t, const ct_tensor *state_t) {
  const ctc_view h_new(h_new_t), c_new(c_new_t), ws(ws_t), gi(gi_t), gh(gh_t), state(state_t);
  rnn_args r = {};
  r.p = *p;
  r.a = gi->data, r.b = gh->data, r.s = state->data, r.ws = ws->data;
  r.h = h_new->data, r.c = c_new ? c_new->data : nullptr;
  return run(p->kind == CT_RNN_CELL_LSTM ? "lstm_cell" : "gru_cell", gi->dtype, gi->device, r,
             false);
}

extern "C" ct_status ct__cuda_rnn_cell_backward(const ct_rnn_cell_params *p, ct_tensor *grad_gi_t,
                                                ct_tensor *grad_gh_t, ct_tensor *grad_state_t,
                                                const ct_tensor *grad_h_t,
                                                const ct_tensor *grad_c_t, const ct_tensor *state_t,
                                                const ct_tensor *ws_t) {
  const ctc_view grad_gi(grad_gi_t), grad_gh(grad_gh_t), grad_state(grad_state_t), grad_h(grad_h_t),
      grad_c(grad_c_t), state(state_t), ws(ws_t);
  rnn_args r = {};
  r.p = *p;
  r.a = grad_h->data, r.b = grad_c ? grad_c->data : nullptr;
  r.s = state->data, r.ws = ws->data, r.out = grad_gi->data;
  r.gh = grad_gh ? grad_gh->data : nullptr, r.gs = grad_state->data;
  return run(p->kind == CT_RNN_CELL_LSTM ? "lstm_cell_backward" : "gru_cell_backward",
             grad_h->dtype, grad_h->device, r, true);
}
