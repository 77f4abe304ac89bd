/* CPU unary elementwise kernels: out = op(x) for the ops of CT_UNARY_OPS.
 *
 * One row kernel per (op, dtype): the op's formula (core/unary_math.h) run by
 * its dtype's row loop (ew_rows_t.h), for the floats (f32, f64; f16/bf16 run
 * the f32 kernel through ct__half_rows), the integers (the SAME and INT-rule
 * ops), bool (the INT-rule ops) and, with a bool result, the predicates for
 * every dtype. The table is built from the op table's views
 * (core/unary_math.h), so an op with a formula has its kernels.
 * Decomposition: ct__ew_run (ew_run.h) treats contiguous operands as one row
 * split into per-thread chunks, else ct__loop rows. Math in the element type
 * (expf for f32), as PyTorch does on the CPU. */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/ew_rows.h"
#include "core/unary_math.h"

/* ---- The kernels: each a row loop with its formula as a constant ----------------- */

/* clang-format off */
#define KERNEL(E, S, OP, name) \
  static void un_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { unary_row_##S(d, s, n, c, ct_uf_##name##_##S); }
#define KERNEL_I(E, S, OP, name) \
  static void un_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { unary_row_##S(d, s, n, c, ct_ui_##name##_##S); }
#define KERNEL_P(E, S, OP, name) \
  static void un_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { (void)c; unary_row_pred_##S(d, s, n, ct_up_##name##_##S); }
/* clang-format on */
#define DEF_F(OP, name) CT_EW_FLOAT_TYPES(KERNEL, OP, name)
#define DEF_I(OP, name) CT_EW_INT_TYPES(KERNEL_I, OP, name)
#define DEF_B(OP, name) CT_EW_BOOL_TYPE(KERNEL_I, OP, name)
#define DEF_P(OP, name)                 \
  CT_EW_FLOAT_TYPES(KERNEL_P, OP, name) \
  CT_EW_INT_TYPES(KERNEL_P, OP, name) CT_EW_BOOL_TYPE(KERNEL_P, OP, name)
CT_UNARY_FLOAT_OPS(DEF_F)
CT_UNARY_INT_OPS(DEF_I)
CT_UNARY_INT_RULE_OPS(DEF_B)
CT_UNARY_PREDICATES(DEF_P)

#define ENTRY(E, S, OP, name) [CT_UOP_##OP][CT_##E] = un_##OP##_##S,
#define ENT_F(OP, name) CT_EW_FLOAT_TYPES(ENTRY, OP, name)
#define ENT_I(OP, name) CT_EW_INT_TYPES(ENTRY, OP, name)
#define ENT_B(OP, name) CT_EW_BOOL_TYPE(ENTRY, OP, name)
#define ENT_P(OP, name)              \
  CT_EW_FLOAT_TYPES(ENTRY, OP, name) \
  CT_EW_INT_TYPES(ENTRY, OP, name) CT_EW_BOOL_TYPE(ENTRY, OP, name)
/* Indexed [op][input dtype]; f16/bf16 use the f32 entry. */
/* clang-format off */
static const ct_loop_fn unary_fns[CT_UOP_COUNT][CT_DTYPE_COUNT] = {
    CT_UNARY_FLOAT_OPS(ENT_F) CT_UNARY_INT_OPS(ENT_I) CT_UNARY_INT_RULE_OPS(ENT_B)
    CT_UNARY_PREDICATES(ENT_P)};
/* clang-format on */

ct_status ct__cpu_unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1) {
  ct_ew_ctx ectx = {.p0 = p0, .p1 = p1};
  void *ctx = &ectx;
  ct_loop_fn fn;
  ct_half_ctx hctx;
  if (ct__is_half(x->dtype)) {
    hctx = (ct_half_ctx){.f32_fn = unary_fns[op][CT_F32],
                         .f32_ctx = &ectx,
                         .nargs = 2,
                         .dtypes = {out->dtype, x->dtype},
                         .out_is_written = true};
    fn = hctx.f32_fn ? ct__half_rows : NULL;
    ctx = &hctx;
  } else {
    fn = unary_fns[op][x->dtype];
  }
  if (!fn)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: no CPU kernel for %s", ct__unary_info[op].name,
                           ct_dtype_name(x->dtype));
  const ct_tensor *ts[2] = {out, x};
  ct__ew_run(2, ts, fn, ctx);
  return CT_OK;
}
