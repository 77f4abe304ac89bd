/* CPU LSTM/GRU cell kernels, forward and backward (backend.h's rnn_cell
 * slots; the formulas in core/rnn_math.h, shared with backend/cuda/rnn.cu).
 * One pass over the gates per step: the gate nonlinearities, the state
 * update and, for the backward pass, every gate's gradient, where the
 * composition of ops made a dozen passes and temporaries. Rows are split
 * into pool tasks when the step is large enough to pay for them. f32 and
 * f64 (the op layer composes ops for other dtypes). */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/ew_run.h" /* CT_SIMD */
#include "core/parallel.h"
#include "core/rnn_math.h"

/* elements (N * H) per pool task: below, one thread does the step */
#define RNN_TASK_ELEMS 2048

typedef struct rnn_ctx {
  const ct_rnn_cell_params *p;
  bool backward;
  /* forward: a, b = gi, gh; s = state; h, c (LSTM), ws written
   * backward: a, b = grad_h, grad_c (LSTM); s = state; ws read; out =
   * grad_gi (LSTM: of the pre-activations), gh = grad_gh (GRU), gs =
   * grad_state written */
  const char *a, *b, *s;
  char *h, *c, *out, *ws, *gh, *gs;
  bool f64;
  int64_t rows_per_task;
} rnn_ctx;

#define CT_TEMPLATE "backend/cpu/rnn_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

static void rnn_task(int64_t task, void *vc) {
  const rnn_ctx *c = vc;
  int64_t r0 = task * c->rows_per_task, r1 = r0 + c->rows_per_task;
  if (r1 > c->p->N) r1 = c->p->N;
  if (c->f64)
    rnn_rows_f64(c, r0, r1);
  else
    rnn_rows_f32(c, r0, r1);
}

static ct_status run(rnn_ctx *c, ct_dtype dt, const char *op) {
  if (dt != CT_F32 && dt != CT_F64)
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CPU kernel for %s", op, ct_dtype_name(dt));
  c->f64 = dt == CT_F64;
  int64_t N = c->p->N, H = c->p->H;
  if (N * H == 0) return CT_OK;
  int64_t tasks = N * H / RNN_TASK_ELEMS;
  if (tasks > N) tasks = N;
  if (tasks <= 1) {
    c->rows_per_task = N;
    rnn_task(0, c);
    return CT_OK;
  }
  c->rows_per_task = (N + tasks - 1) / tasks;
  ct__parallel_run((N + c->rows_per_task - 1) / c->rows_per_task, rnn_task, c);
  return CT_OK;
}

ct_status ct__cpu_rnn_cell(const ct_rnn_cell_params *p, ct_tensor *h_new, ct_tensor *c_new,
                           ct_tensor *ws, const ct_tensor *gi, const ct_tensor *gh,
                           const ct_tensor *state) {
  rnn_ctx c = {.p = p,
               .a = ct__data(gi),
               .b = ct__data(gh),
               .s = ct__data(state),
               .h = ct__data(h_new),
               .c = c_new ? ct__data(c_new) : NULL,
               .ws = ct__data(ws)};
  return run(&c, gi->dtype, p->kind == CT_RNN_CELL_LSTM ? "lstm_cell" : "gru_cell");
}

ct_status ct__cpu_rnn_cell_backward(const ct_rnn_cell_params *p, ct_tensor *grad_gi,
                                    ct_tensor *grad_gh, ct_tensor *grad_state,
                                    const ct_tensor *grad_h, const ct_tensor *grad_c,
                                    const ct_tensor *state, const ct_tensor *ws) {
  rnn_ctx c = {.p = p,
               .backward = true,
               .a = ct__data(grad_h),
               .b = grad_c ? ct__data(grad_c) : NULL,
               .s = ct__data(state),
               .ws = (char *)ct__data(ws),
               .out = ct__data(grad_gi),
               .gh = grad_gh ? ct__data(grad_gh) : NULL,
               .gs = ct__data(grad_state)};
  return run(&c, grad_h->dtype,
             p->kind == CT_RNN_CELL_LSTM ? "lstm_cell_backward" : "gru_cell_backward");
}
