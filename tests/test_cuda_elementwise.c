/* CUDA elementwise kernels against the CPU where their fast paths have edges:
 * sizes around the 16-byte vector width and past one full grid pass (132 SMs
 * x 16 blocks x 256 threads x 2 vectors in flight), operands aligned or one
 * element off (the vector path needs 16-byte alignment), broadcast scalars,
 * in place and a partially overlapping _out, casts, fill, and the fused unary
 * backward (formulas reading x or y). Skipped without a GPU; the kernels' index
 * logic also runs on the CPU in tests/cuda_emu when that is built. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ctensor.h>

#include "ct_test.h"

static ct_device G;

static ct_tensor *gpu(const ct_tensor *t) { return ct_to(t, G, NULL); }
static ct_tensor *cpu(const ct_tensor *t) { return ct_to(t, ct_cpu(), NULL); }

/* got (CUDA) against want (CPU): exact when tol < 0. */
#define check(what, dt, n, off, want, got, tol) check_at(__FILE__, __LINE__, what, dt, n, off, want, got, tol)
static void check_at(const char *file, int line, const char *what, ct_dtype dt, int64_t n, int off,
                     const ct_tensor *want, const ct_tensor *got, double tol) {
  ct_tensor *g = got ? cpu(got) : NULL;
  bool ok = want && g && (tol < 0 ? ct_equal(want, g) : ct_allclose(want, g, tol, tol));
  if (!ok) {
    ct_test_fail(file, line, "%s dt=%s n=%lld off=%d: %s", what, ct_dtype_name(dt), (long long)n, off,
                 (!want || !g) ? ct_last_error_message() : "values differ");
    ct_clear_error();
  }
}

/* n values of dt starting one element in (off = 1: misaligned for the vector path). */
static ct_tensor *input(ct_dtype dt, int64_t n, int off, double scale) {
  ct_tensor *r = ct_mul_scalar(ct_randn(CT_SHAPE(n + 1), NULL), scale);
  return ct_narrow(ct_cast(r, dt), 0, off, n);
}

static double tol_of(ct_dtype dt) {
  return dt == CT_F16 || dt == CT_BF16 ? 2e-2 : dt == CT_F32 ? 1e-5 : dt == CT_F64 ? 1e-12 : -1;
}

static void binary_cases(ct_dtype dt, int64_t n, int off) {
  bool fl = ct_dtype_is_floating(dt);
  ct_tensor *a = input(dt, n, off, fl ? 1 : 100), *b = input(dt, n, 0, fl ? 1 : 100);
  ct_tensor *s0 = ct_cast(ct_scalar(fl ? 0.75 : 3, NULL), dt); /* 0-d: a broadcast scalar operand */
  ct_tensor *ga = gpu(a), *gb = gpu(b), *gs0 = gpu(s0);
  check("add", dt, n, off, ct_add(a, b), ct_add(ga, gb), -1);
  check("sub", dt, n, off, ct_sub(a, b), ct_sub(ga, gb), -1);
  check("mul", dt, n, off, ct_mul(a, b), ct_mul(ga, gb), -1);
  check("add bcast", dt, n, off, ct_add(a, s0), ct_add(ga, gs0), -1);
  check("sub bcast first", dt, n, off, ct_sub(s0, a), ct_sub(gs0, ga), -1);
  check("maximum", dt, n, off, ct_maximum(a, b), ct_maximum(ga, gb), -1);
  check("lt", dt, n, off, ct_lt(a, b), ct_lt(ga, gb), -1);
  check("eq scalar", dt, n, off, ct_eq_scalar(a, 0), ct_eq_scalar(ga, 0), -1);
  check("add_scalar", dt, n, off, ct_add_scalar(a, 3), ct_add_scalar(ga, 3), -1);
  check("rsub_scalar", dt, n, off, ct_rsub_scalar(a, 3), ct_rsub_scalar(ga, 3), -1);
  check("add_scaled", dt, n, off, ct_add_scaled(a, b, 3), ct_add_scaled(ga, gb, 3), tol_of(dt));
  if (fl) {
    check("div", dt, n, off, ct_div(a, b), ct_div(ga, gb), tol_of(dt));
    check("rdiv_scalar", dt, n, off, ct_rdiv_scalar(a, 2), ct_rdiv_scalar(ga, 2), tol_of(dt));
    check("mul_scalar 0.1", dt, n, off, ct_mul_scalar(a, 0.1), ct_mul_scalar(ga, 0.1), -1);
    check("pow", dt, n, off, ct_pow(ct_abs(a), b), ct_pow(ct_abs(ga), gb), tol_of(dt));
    check("atan2", dt, n, off, ct_atan2(a, b), ct_atan2(ga, gb), tol_of(dt));
    check("hypot", dt, n, off, ct_hypot(a, b), ct_hypot(ga, gb), tol_of(dt));
    check("logaddexp", dt, n, off, ct_logaddexp(a, b), ct_logaddexp(ga, gb), tol_of(dt));
    check("copysign", dt, n, off, ct_copysign(a, b), ct_copysign(ga, gb), -1);
  } else {
    check("floor_divide", dt, n, off, ct_floor_divide_scalar(a, 7), ct_floor_divide_scalar(ga, 7), -1);
  }
  /* in place: out is exactly an input (a is a view, offset off) */
  ct_tensor *ia = ct_clone(a), *iga = gpu(a);
  check("mul_ in place", dt, n, off, ct_mul_(ia, b), ct_mul_(iga, gb), -1);
  check("sub_scalar_ in place", dt, n, off, ct_sub_scalar_(ia, 2), ct_sub_scalar_(iga, 2), -1);
  check("add_scaled_ in place", dt, n, off, ct_add_scaled_(ia, b, -2), ct_add_scaled_(iga, gb, -2),
        tol_of(dt));
  /* out partially overlapping an input: a shifted view of one storage */
  if (n > 1) {
    ct_tensor *base = ct_clone(input(dt, n, 0, fl ? 1 : 100)), *gbase = gpu(base);
    ct_tensor *o = ct_narrow(base, 0, 0, n - 1), *x = ct_narrow(base, 0, 1, n - 1);
    ct_tensor *go = ct_narrow(gbase, 0, 0, n - 1), *gx = ct_narrow(gbase, 0, 1, n - 1);
    ct_add_out(o, x, ct_narrow(b, 0, 0, n - 1));
    ct_add_out(go, gx, ct_narrow(gb, 0, 0, n - 1));
    check("add_out shifted overlap", dt, n, off, base, gbase, -1);
  }
}

static void unary_cases(ct_dtype dt, int64_t n, int off) {
  bool fl = ct_dtype_is_floating(dt);
  ct_tensor *a = input(dt, n, off, fl ? 3 : 100), *ga = gpu(a);
  check("relu", dt, n, off, ct_relu(a), ct_relu(ga), -1);
  check("neg", dt, n, off, ct_neg(a), ct_neg(ga), -1);
  check("isfinite", dt, n, off, ct_isfinite(a), ct_isfinite(ga), -1);
  check("clamp", dt, n, off, ct_clamp(a, -1, 2), ct_clamp(ga, -1, 2), -1);
  ct_tensor *ia = ct_clone(a), *iga = gpu(a);
  check("relu_ in place", dt, n, off, ct_relu_(ia), ct_relu_(iga), -1);
  if (!fl) return;
  check("exp", dt, n, off, ct_exp(a), ct_exp(ga), tol_of(dt));
  check("sigmoid", dt, n, off, ct_sigmoid(a), ct_sigmoid(ga), tol_of(dt));
  check("sin", dt, n, off, ct_sin(a), ct_sin(ga), tol_of(dt));
  /* backward: relu (vector kernel of its own), sin (reads x), tanh and exp (read y) */
  ct_tensor *(*fns[])(const ct_tensor *) = {ct_relu, ct_sin, ct_tanh, ct_exp, ct_gelu, ct_sqrt};
  const char *names[] = {"relu grad", "sin grad", "tanh grad", "exp grad", "gelu grad", "sqrt grad"};
  for (int k = 0; k < 6; k++) {
    ct_scope_begin();
    ct_tensor *x = ct_requires_grad_(ct_clone(k == 5 ? ct_add_scalar(ct_abs(a), 0.5) : a), true);
    ct_tensor *gx = ct_requires_grad_(gpu(ct_detach(x)), true);
    ct_tensor *w = input(dt, n, 0, 1), *gw = gpu(w);
    ct_backward(ct_sum(ct_mul(fns[k](x), w), NULL), NULL, NULL);
    ct_backward(ct_sum(ct_mul(fns[k](gx), gw), NULL), NULL, NULL);
    check(names[k], dt, n, off, ct_grad(x), ct_grad(gx), tol_of(dt) * 10);
    /* grad_out a broadcast scalar (sum's backward): stride 0 */
    ct_tensor *y = ct_requires_grad_(ct_clone(ct_detach(x)), true);
    ct_tensor *gy = ct_requires_grad_(gpu(ct_detach(x)), true);
    ct_backward(ct_sum(fns[k](y), NULL), NULL, NULL);
    ct_backward(ct_sum(fns[k](gy), NULL), NULL, NULL);
    check(names[k], dt, n, off, ct_grad(y), ct_grad(gy), tol_of(dt) * 10);
    ct_scope_end();
  }
}

static void cast_cases(ct_dtype dt, int64_t n, int off) {
  static const ct_dtype to[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_U8, CT_BOOL, CT_I32, CT_I64};
  ct_tensor *a = input(dt, n, off, 50), *ga = gpu(a);
  for (int k = 0; k < 8; k++)
    check(ct_dtype_name(to[k]), dt, n, off, ct_cast(a, to[k]), ct_cast(ga, to[k]), -1);
  ct_tensor *f = ct_clone(a), *gf = gpu(a);
  double v = dt == CT_U8 ? 2.5 : -2.5; /* fills refuse values outside the dtype */
  check("fill_", dt, n, off, ct_fill_(f, v), ct_fill_(gf, v), -1);
  check("fill_ narrowed", dt, n, off, ct_fill_(ct_narrow(f, 0, off, n - off), 7),
        ct_fill_(ct_narrow(gf, 0, off, n - off), 7), -1);
}

CT_TEST(vector_paths_match_cpu) {
  if (!ct_cuda_is_available()) {
    ct_test_skip("no CUDA device available");
    return;
  }
  G = ct_cuda(0);
  ct_manual_seed(7);
  static const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I32, CT_I64, CT_U8, CT_BOOL};
  /* the last (0): past two passes of the vector kernel's grid (16 blocks
   * per multiprocessor, 256 threads, 2 vectors of 16 bytes each), with a tail */
  static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1003, 4099, 65537, 0};
  ct_cuda_device_properties props;
  CHECK_STATUS_OK(ct_cuda_get_device_properties(0, &props));
  for (int d = 0; d < 8; d++)
    for (int s = 0; s < (int)(sizeof sizes / sizeof *sizes); s++)
      for (int off = 0; off < 2; off++) {
        int64_t pass = (int64_t)props.multiprocessor_count * 16 * 256 * 2 * (16 / (int64_t)ct_dtype_size(dts[d]));
        int64_t n = sizes[s] ? sizes[s] : 2 * pass + 7;
        ct_scope_begin();
        if (d < 6) binary_cases(dts[d], n, off);
        ct_scope_end();
        ct_scope_begin();
        if (d < 6) unary_cases(dts[d], n, off);
        ct_scope_end();
        ct_scope_begin();
        cast_cases(dts[d], n, off);
        ct_scope_end();
      }
  CHECK_STATUS_OK(ct_synchronize(G));
}
