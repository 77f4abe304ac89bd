/* The internal headers shared by the CPU and CUDA backends compile as strict
 * C11 and as C++17 (the CUDA backend's .cu files include them), and their
 * two spellings name the same formulas: ct_uf_gelu_f32 in C is the float
 * overload of ct_uf_gelu in C++ (core/host_device.h). Included by
 * internal_headers_c11.c and internal_headers_cxx.cpp. core/internal.h and
 * backend/backend.h compile as C++ too: the .cu entry points take the
 * backend slots' ct_tensor arguments (backend/cuda/cuda_kernels.h). */
#include "backend/backend.h"
#include "backend/cuda/cuda_kernels.h" /* with backend/params.h, ops/op_table.h */
#include "backend/params.h"
#include "core/binary_math.h"
#include "core/convert.h"
#include "core/half.h"
#include "core/host_device.h"
#include "core/interp_math.h"
#include "core/optim_math.h"
#include "core/philox.h"
#include "core/reduce_plan.h"
#include "core/search_math.h"
#include "core/unary_math.h"
#include "ops/op_table.h"
/* sort-scan family */
#include "core/scan_math.h"
#include "core/sdpa_math.h" /* attention */
#include "core/rnn_math.h" /* recurrent cells */

#include <stdio.h>

#ifdef __cplusplus
#define SPELL_F32(name) name
#define SPELL_I64(name) name
#else
#define SPELL_F32(name) name##_f32
#define SPELL_I64(name) name##_i64
#endif

static int failures;
static void check(int ok, const char *what) {
  if (!ok) {
    printf("  FAIL %s\n", what);
    failures++;
  }
}

/* Definitions every spelling must agree on: Python's floor division and
 * remainder, saturating casts, reduction plans, the optimizers' first step. */
static int run_checks(const char *lang) {
  bool bad = false;
  check(SPELL_F32(ct_bf_floor_divide)(-7.0f, 2.0f) == -4.0f, "floor_divide(-7, 2) == -4");
  check(SPELL_F32(ct_bf_remainder)(-7.0f, 2.0f) == 1.0f, "remainder(-7, 2) == 1");
  check(SPELL_I64(ct_bi_floor_divide)((int64_t)-7, (int64_t)2, &bad) == -4 && !bad,
        "integer floor_divide(-7, 2) == -4");
  check(SPELL_I64(ct_bi_remainder)((int64_t)7, (int64_t)-2, &bad) == -1 && !bad,
        "integer remainder(7, -2) == -1");
  check(SPELL_I64(ct_bi_fmod)((int64_t)7, (int64_t)0, &bad) == 0 && bad,
        "integer fmod by zero flags");
  check(ct_saturate_to_dtype(1e300, CT_I8) == 127 && ct_saturate_to_dtype(-1e300, CT_U8) == 0,
        "saturation to a dtype's range");
  check(ct_f64_to_i64(NAN) == 0 && ct_f64_to_i64(1e300) == INT64_MAX, "saturating float to int64");
  check(ct_scalar_to_int(300.0, CT_I8) == 44 && ct_scalar_to_int(0.5, CT_BOOL) == 1,
        "scalar operands wrap to the width; bool takes nonzero");
  check(SPELL_F32(ct_up_isnan)(NAN) && !SPELL_F32(ct_up_isfinite)(INFINITY), "predicates");
  check(SPELL_F32(ct_uf_relu)(-1.0f, 0.0f, 0.0f) == 0.0f &&
            SPELL_F32(ct_ud_y_relu)(2.0f, 3.0f, 0.0f, 0.0f) == 2.0f,
        "relu and its derivative");
  ct_reduce_plan pl = ct_reduce_plan_of(CT_ROP_NORM, true, true, 2.0);
  check(pl.npass == 2 && pl.pass[0] == CT_RP_F_ABS_MAX && pl.pass[1] == CT_RP_F_SCALED_SQ_SUM,
        "the f64 2-norm scales by max |x| first");
  check(ct_arg_better_f(true, NAN, 5, 1.0, 2) && !ct_arg_better_f(true, 1.0, 5, 1.0, 2),
        "argmax: nan wins, ties keep the smaller index");
  ct_optim_params o;
  memset(&o, 0, sizeof o);
  o.kind = CT_OPTIM_SGD;
  o.lr = 0.5;
  ct_optim_consts_f32 c = ct_optim_consts_of_f32(&o);
  check(SPELL_F32(ct_sgd_update)(&c, 1.0f, 1.0f, (float *)0) == 0.5f, "plain SGD step");
  /* bilinear 4 -> 8 (scale 0.5): output 3 reads inputs 1 and 2 at 1 - 0.25 and
   * 0.25, so input 2 is read by outputs 3 .. 6 */
  ct_interp_axis ax;
  memset(&ax, 0, sizeof ax);
  ax.n_in = 4, ax.n_out = 8, ax.scale = 0.5, ax.kind = CT_INTERP_KIND_LINEAR;
  int64_t i0 = 0, i1 = 0;
  float l = ct_interp_linear_f32(&ax, 3, &i0, &i1);
  check(i0 == 1 && i1 == 2 && l == 0.25f && ct_interp_weight_f64(&ax, 3, 1) == 0.75,
        "bilinear taps and weights");
  check(ct_interp_first_out_f32(&ax, 1) == 3 && ct_interp_first_out_f32(&ax, 3) == 7,
        "the outputs that read an input");
  ct_pool2d_params pp;
  memset(&pp, 0, sizeof pp);
  pp.kernel[0] = pp.kernel[1] = 3;
  pp.stride[0] = pp.stride[1] = 2;
  pp.padding[0] = pp.padding[1] = 1;
  pp.count_include_pad = false;
  int64_t h[2], w[2];
  check(ct_pool2d_window(&pp, 4, 4, 0, 0, h, w) == 4 && h[0] == 0 && h[1] == 2,
        "pooling window clipped");
  printf("internal headers as %s: %s\n", lang, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
