/* Fused gradients of the elementwise unary ops on the CPU:
 *   grad_x[i] = grad_out[i] * d op / dx at x[i] (or at the output y[i])
 * The derivatives are core/unary_math.h's; each reads one of x and y (the
 * op table's READS column, ops/op_table.h), so a kernel streams three operands (grad_x, grad_out
 * and that one) of one shape and one floating dtype, through the strided loop; f16/bf16 through f32
 * rows. */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "backend/cpu/ew_run.h"
#include "core/unary_math.h"

/* The row loop of gx = f(g, v, p0, p1), T = CT_T: unary_backward_t.h, once per
 * floating type. */
#define CT_TEMPLATE "backend/cpu/unary_backward_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

/* One kernel per (op, type), the derivative a constant. */
/* clang-format off */
#define KERNEL(OP, name) \
  static void ubw_##OP##_f32(char **d, const int64_t *s, int64_t n, void *c) { ubw_row_f32(d, s, n, c, ct_ud_##name##_f32); } \
  static void ubw_##OP##_f64(char **d, const int64_t *s, int64_t n, void *c) { ubw_row_f64(d, s, n, c, ct_ud_##name##_f64); }
/* clang-format on */
CT_UNARY_GRADS(KERNEL)

#define ENTRY(OP, name) [CT_UOP_##OP] = {ubw_##OP##_f32, ubw_##OP##_f64, CT_UREADS_##OP},
static const struct {
  ct_loop_fn f32, f64;
  int reads; /* CT_READS_*: the op table's */
} kernels[CT_UOP_COUNT] = {CT_UNARY_GRADS(ENTRY)};

ct_status ct__cpu_unary_backward(ct_unary_op op, ct_tensor *grad_x, const ct_tensor *grad_out,
                                 const ct_tensor *x, const ct_tensor *y, double p0, double p1) {
  if (!kernels[op].f32)
    return ct__fail_status(CT_ERR_STATE, "unary backward: op %s has no gradient",
                           ct__unary_info[op].name);
  ct_ew_ctx c = {.p0 = p0, .p1 = p1};
  const ct_tensor *ts[3] = {grad_x, grad_out, kernels[op].reads == CT_READS_OUT ? y : x};
  switch (grad_x->dtype) {
    case CT_F32:
      ct__loop(3, ts, kernels[op].f32, &c);
      return CT_OK;
    case CT_F64:
      ct__loop(3, ts, kernels[op].f64, &c);
      return CT_OK;
    case CT_F16:
    case CT_BF16: {
      ct_half_ctx h = {
          .f32_fn = kernels[op].f32, .f32_ctx = &c, .nargs = 3, .out_is_written = true};
      for (int a = 0; a < 3; a++) h.dtypes[a] = grad_x->dtype;
      ct__loop(3, ts, ct__half_rows, &h);
      return CT_OK;
    }
    default:
      return ct__fail_status(CT_ERR_DTYPE,
                             "unary backward (%s): gradients need a floating dtype, got %s",
                             ct__unary_info[op].name, ct_dtype_name(grad_x->dtype));
  }
}
