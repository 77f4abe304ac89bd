/* CPU binary elementwise kernels: out = a op b, out = a op s (scalar),
 * out = a + alpha * b (axpy) and out = cond ? a : b (where).
 *
 * One row kernel per (op, compute dtype): the op's formula
 * (core/binary_math.h) run by its dtype's row loop (ew_rows_t.h); f16/bf16
 * run the f32 kernel through ct__half_rows. The table is built from the
 * formulas' lists. Decomposition: ct__ew_run (ew_run.h) treats
 * all-contiguous operands as one row split into per-thread chunks, else
 * ct__loop coalesces dims into rows; within a row there is one vectorizable
 * loop per stride pattern (all contiguous, b broadcast, a broadcast) and a
 * strided fallback.
 *
 * Integer division, remainder and fmod by zero and negative integer powers
 * leave 0 in the element and make the kernel fail with CT_ERR_ARG naming the
 * op (PyTorch raises ZeroDivisionError on the CPU). */
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/ew_rows.h"
#include "core/binary_math.h"

/* ---- The kernels: each a row loop with its formula as a constant ----------------- */

/* clang-format off */
#define KERNEL_F(E, S, OP, name) \
  static void bin_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { (void)c; binary_row_##S(d, s, n, ct_bf_##name##_##S); }
#define KERNEL_I(E, S, OP, name) \
  static void bin_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { (void)c; binary_row_##S(d, s, n, ct_bi_##name##_##S); }
#define KERNEL_CHECKED(E, S, OP, name) \
  static void bin_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { binary_row_checked_##S(d, s, n, c, ct_bi_##name##_##S); }
#define KERNEL_C(E, S, OP, name) \
  static void bin_##OP##_##S(char **d, const int64_t *s, int64_t n, void *c) { (void)c; binary_row_cmp_##S(d, s, n, ct_bc_##name##_##S); }
/* clang-format on */
#define ALL_TYPES(X, ...) \
  CT_EW_FLOAT_TYPES(X, __VA_ARGS__) CT_EW_INT_TYPES(X, __VA_ARGS__) CT_EW_BOOL_TYPE(X, __VA_ARGS__)
#define DEF_F(OP, name) CT_EW_FLOAT_TYPES(KERNEL_F, OP, name)
#define DEF_I(OP, name) CT_EW_INT_TYPES(KERNEL_I, OP, name)
#define DEF_CHECKED(OP, name) CT_EW_INT_TYPES(KERNEL_CHECKED, OP, name)
#define DEF_B(OP, name) CT_EW_BOOL_TYPE(KERNEL_I, OP, name)
#define DEF_C(OP, name) ALL_TYPES(KERNEL_C, OP, name)
CT_BINARY_FLOAT_OPS(DEF_F)
CT_BINARY_INT_OPS(DEF_I)
CT_BINARY_INT_CHECKED_OPS(DEF_CHECKED)
CT_BINARY_BOOL_OPS(DEF_B)
CT_BINARY_COMPARE_OPS(DEF_C)

#define ENTRY(E, S, OP, name) [CT_BOP_##OP][CT_##E] = bin_##OP##_##S,
#define ENT_F(OP, name) CT_EW_FLOAT_TYPES(ENTRY, OP, name)
#define ENT_I(OP, name) CT_EW_INT_TYPES(ENTRY, OP, name)
#define ENT_B(OP, name) CT_EW_BOOL_TYPE(ENTRY, OP, name)
#define ENT_C(OP, name) ALL_TYPES(ENTRY, OP, name)
/* Indexed [op][compute dtype]; f16/bf16 use the f32 entry. A missing (op,
 * dtype) pair is rejected by the op layer before it gets here. */
static const ct_loop_fn binary_fns[CT_BOP_COUNT][CT_DTYPE_COUNT] = {
    CT_BINARY_FLOAT_OPS(ENT_F) CT_BINARY_INT_OPS(ENT_I) CT_BINARY_INT_CHECKED_OPS(ENT_I)
        CT_BINARY_BOOL_OPS(ENT_B) CT_BINARY_COMPARE_OPS(ENT_C)};

/* Ops whose integer kernels can meet invalid operands. */
#define ENT_CHECKED(OP, name) [CT_BOP_##OP] = true,
static const bool checked_ops[CT_BOP_COUNT] = {CT_BINARY_INT_CHECKED_OPS(ENT_CHECKED)};

static ct_status bad_operand(ct_binary_op op) {
  if (op == CT_BOP_POW)
    return ct__fail_status(CT_ERR_ARG, "pow: integers to negative integer powers are not allowed");
  return ct__fail_status(CT_ERR_ARG, "%s: integer division by zero", ct__binary_info[op].name);
}

/* The row kernel for (op, compute dtype) and its context; half dtypes wrap the
 * f32 kernel in the adapter. dtypes: the operands' dtypes (out first). */
static ct_loop_fn pick(ct_binary_op op, ct_dtype cd, int nargs, const ct_dtype *dtypes,
                       ct_ew_ctx *ectx, ct_half_ctx *hctx, void **ctx) {
  *ctx = ectx;
  if (!ct__is_half(cd)) return binary_fns[op][cd];
  *hctx = (ct_half_ctx){.f32_fn = binary_fns[op][CT_F32], .f32_ctx = ectx, .nargs = nargs,
                        .out_is_written = true};
  for (int a = 0; a < nargs; a++) hctx->dtypes[a] = dtypes[a];
  *ctx = hctx;
  return hctx->f32_fn ? ct__half_rows : NULL;
}

static ct_status missing(ct_binary_op op, ct_dtype cd) {
  return ct__fail_status(CT_ERR_INTERNAL, "%s: no CPU kernel for %s", ct__binary_info[op].name,
                         ct_dtype_name(cd));
}

ct_status ct__cpu_binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b) {
  ct_ew_ctx ectx = {0};
  ct_half_ctx hctx;
  void *ctx;
  ct_dtype dts[3] = {out->dtype, a->dtype, b->dtype};
  ct_loop_fn fn = pick(op, a->dtype, 3, dts, &ectx, &hctx, &ctx);
  if (!fn) return missing(op, a->dtype);
  const ct_tensor *ts[3] = {out, a, b};
  ct__ew_run(3, ts, fn, ctx);
  if (checked_ops[op] && atomic_load(&ectx.bad)) return bad_operand(op);
  return CT_OK;
}

/* ---- Scalar operand ------------------------------------------------------------ */

/* Runs a 3-operand row kernel with one operand fixed to a scalar (stride 0). */
typedef struct scalar_ctx {
  ct_loop_fn fn;
  void *fn_ctx;
  bool reversed;   /* scalar is the first operand */
  char *scalar;
} scalar_ctx;

static void scalar_row(char **d, const int64_t *s, int64_t n, void *vctx) {
  const scalar_ctx *c = vctx;
  char *dd[3] = {d[0], c->reversed ? c->scalar : d[1], c->reversed ? d[1] : c->scalar};
  int64_t ss[3] = {s[0], c->reversed ? 0 : s[1], c->reversed ? s[1] : 0};
  c->fn(dd, ss, n, c->fn_ctx);
}

/* Stores s as compute dtype dt at p: a scalar operand of dt (ew_rows_t.h's
 * ew_scalar: integers saturate to int64 and wrap, bool takes "nonzero");
 * f16/bf16 compute in f32. */
static void store_scalar(void *p, ct_dtype dt, double s) {
  switch (dt) {
#define STORE(E, S, unused)                                \
  case CT_##E:                                             \
    *(__typeof__(ew_scalar_##S(0)) *)p = ew_scalar_##S(s); \
    break;
    ALL_TYPES(STORE, 0)
#undef STORE
    default:
      *(float *)p = (float)s;
      break;
  }
}

ct_status ct__cpu_binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                                bool reversed) {
  ct_ew_ctx ectx = {0};
  ct_half_ctx hctx;
  void *inner_ctx;
  /* f16/bf16: the scalar stays an f32 operand, not rounded to half */
  ct_dtype sdt = ct__is_half(a->dtype) ? CT_F32 : a->dtype;
  ct_dtype dts[3] = {out->dtype, reversed ? sdt : a->dtype, reversed ? a->dtype : sdt};
  ct_loop_fn fn = pick(op, a->dtype, 3, dts, &ectx, &hctx, &inner_ctx);
  if (!fn) return missing(op, a->dtype);
  _Alignas(8) char sbuf[8];
  store_scalar(sbuf, sdt, s);
  scalar_ctx sc = {.fn = fn, .fn_ctx = inner_ctx, .reversed = reversed, .scalar = sbuf};
  const ct_tensor *ts[2] = {out, a};
  ct__ew_run(2, ts, scalar_row, &sc);
  if (checked_ops[op] && atomic_load(&ectx.bad)) return bad_operand(op);
  return CT_OK;
}

/* ---- axpy: out = a + alpha * b -------------------------------------------------- */

/* clang-format off */
#define KERNEL_AXPY_F(E, S, unused) \
  static void axpy_##S(char **d, const int64_t *s, int64_t n, void *c) { axpy_row_##S(d, s, n, c, ct_bf_axpy_##S); }
#define KERNEL_AXPY_I(E, S, unused) \
  static void axpy_##S(char **d, const int64_t *s, int64_t n, void *c) { axpy_row_##S(d, s, n, c, ct_bi_axpy_##S); }
/* clang-format on */
CT_EW_FLOAT_TYPES(KERNEL_AXPY_F, 0)
CT_EW_INT_TYPES(KERNEL_AXPY_I, 0)
CT_EW_BOOL_TYPE(KERNEL_AXPY_I, 0)

#define AXPY_ENTRY(E, S, unused) [CT_##E] = axpy_##S,
static const ct_loop_fn axpy_fns[CT_DTYPE_COUNT] = {ALL_TYPES(AXPY_ENTRY, 0)};

ct_status ct__cpu_axpy(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha) {
  ct_ew_ctx ectx = {.p0 = alpha};
  void *ctx = &ectx;
  ct_loop_fn fn = axpy_fns[out->dtype];
  ct_half_ctx hctx;
  if (ct__is_half(out->dtype)) {
    hctx = (ct_half_ctx){.f32_fn = axpy_fns[CT_F32], .f32_ctx = &ectx, .nargs = 3,
                         .dtypes = {out->dtype, a->dtype, b->dtype}, .out_is_written = true};
    fn = ct__half_rows;
    ctx = &hctx;
  }
  const ct_tensor *ts[3] = {out, a, b};
  ct__ew_run(3, ts, fn, ctx);
  return CT_OK;
}

/* ---- where: out = cond ? a : b, moving elements by size ------------------------- */

#define CT_TEMPLATE "backend/cpu/where_t.h"
#include "backend/cpu/for_sizes.h"
#undef CT_TEMPLATE

ct_status ct__cpu_where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a,
                        const ct_tensor *b) {
  ct_loop_fn fn = NULL;
  switch (ct__elsize(out->dtype)) {
  case 1: fn = where_uint8_t; break;
  case 2: fn = where_uint16_t; break;
  case 4: fn = where_uint32_t; break;
  case 8: fn = where_uint64_t; break;
  default: return ct__fail_status(CT_ERR_INTERNAL, "where: unexpected element size");
  }
  const ct_tensor *ts[4] = {out, cond, a, b};
  ct__ew_run(4, ts, fn, NULL);
  return CT_OK;
}
