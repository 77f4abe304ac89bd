/* conv2d through oneDNN (src/backend/cpu/conv_onednn.c) against float64:
 * the forward and the three gradients (grad_x, grad_w, grad_b) in f32, and in
 * bf16 where the CPU has AVX512-BF16, over the training benchmarks' layers
 * (bench/train_models.h, at a smaller batch) and geometries with stride,
 * padding, dilation, groups, a depthwise and a 1x1 layer. The f64 results are
 * ctensor's own kernels (which oneDNN never runs; test_nn_functional checks
 * them against loops).
 *
 * ctest runs it three times: as is (oneDNN in the cases where it measured
 * faster), with CT_ONEDNN=0 (ctensor's kernels only) and CT_ONEDNN=all
 * (oneDNN in every case it computes), and checks that the path said was
 * taken was: none of the convolutions reached oneDNN with CT_ONEDNN=0, and
 * with CT_ONEDNN=all every one did when the library is loaded. Without
 * libdnnl every run passes on ctensor's kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/conv_onednn.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/onednn.h"
#include "ct_test.h"

typedef struct conv_case {
  const char *name;
  int64_t N, C, H, W, Co, k;
  ct_conv2d_opts o;
  bool bias;
} conv_case;

static const conv_case CASES[] = {
    {"cifar conv1", 4, 3, 32, 32, 6, 5, {.groups = 1}, true},
    {"cifar conv2", 4, 6, 14, 14, 16, 5, {.groups = 1}, true},
    {"fashion conv1", 4, 1, 28, 28, 32, 3, {.groups = 1}, true},
    {"fashion conv2", 4, 32, 13, 13, 64, 3, {.groups = 1}, true},
    {"stride, padding, dilation",
     3,
     8,
     11,
     9,
     16,
     3,
     {.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}},
     true},
    {"groups", 2, 8, 9, 9, 12, 3, {.padding = {1, 1}, .groups = 2}, false},
    {"depthwise", 2, 6, 7, 8, 6, 3, {.stride = {2, 2}, .padding = {1, 1}, .groups = 6}, true},
    {"1x1", 4, 24, 8, 8, 40, 1, {.groups = 1}, true},
};

/* Whether the library says oneDNN is loaded and in use. */
static bool onednn_loaded(void) {
  ct_backend_info cpu;
  return ct_backend_get_info(0, &cpu) == CT_OK && strstr(cpu.libraries, "; oneDNN: 2.") != NULL;
}

/* Runs c in dtype dt and in f64 on the same values, a sum weighted by r as
 * the loss, and compares the output and the gradients (bound: the result's
 * rounding to dt and f32 accumulation over the terms of each sum). */
static void check_case(const conv_case *c, ct_dtype dt, unsigned seed) {
  int64_t G = c->o.groups ? c->o.groups : 1, Cg = c->C / G;
  int64_t nx = c->N * c->C * c->H * c->W, nw = c->Co * Cg * c->k * c->k;
  double *x = ct_test_random(nx, -1, 1, seed), *w = ct_test_random(nw, -1, 1, seed + 1);
  double *b = ct_test_random(c->Co, -1, 1, seed + 2);
  ct_test_round_to(x, nx, dt), ct_test_round_to(w, nw, dt), ct_test_round_to(b, c->Co, dt);
  ct_tensor *out[2], *gx[2], *gw[2], *gb[2] = {NULL, NULL};
  ct_dtype dts[2] = {dt, CT_F64};
  for (int d = 0; d < 2; d++) {
    ct_tensor *tx = ct_test_make(x, CT_SHAPE(c->N, c->C, c->H, c->W), dts[d], CT_LAYOUT_CONTIG);
    ct_tensor *tw = ct_test_make(w, CT_SHAPE(c->Co, Cg, c->k, c->k), dts[d], CT_LAYOUT_CONTIG);
    ct_tensor *tb = c->bias ? ct_test_make(b, CT_SHAPE(c->Co), dts[d], CT_LAYOUT_CONTIG) : NULL;
    ct_requires_grad_(tx, true), ct_requires_grad_(tw, true);
    if (tb) ct_requires_grad_(tb, true);
    out[d] = ct_conv2d(tx, tw, tb, &c->o);
    CHECK_OK(out[d]);
    if (!out[d]) goto done;
    int64_t on = ct_numel(out[d]);
    double *rv = ct_test_random(on, 0.25, 0.75, seed + 3); /* the same dt values in both */
    ct_test_round_to(rv, on, dt);
    ct_tensor *r = ct_test_make(rv, ct_shape(out[d]), 4, dts[d], CT_LAYOUT_CONTIG);
    free(rv);
    CHECK_STATUS_OK(ct_backward(ct_sum(ct_mul(out[d], r), NULL), NULL, NULL));
    gx[d] = ct_grad(tx), gw[d] = ct_grad(tw);
    if (tb) gb[d] = ct_grad(tb);
  }
  {
    int64_t P = ct_size(out[1], 2) * ct_size(out[1], 3);
    ct_tensor *pairs[4][2] = {{out[0], out[1]}, {gx[0], gx[1]}, {gw[0], gw[1]}, {gb[0], gb[1]}};
    int64_t terms[4] = {Cg * c->k * c->k + 1, (c->Co / G) * c->k * c->k, c->N * P, c->N * P};
    const char *what[4] = {"output", "grad_x", "grad_w", "grad_b"};
    double rtol = dt == CT_BF16 ? ldexp(1, -8) : ldexp(1, -22);
    for (int i = 0; i < 4; i++) {
      if (!pairs[i][1]) continue;
      CHECK_MSG(pairs[i][0] != NULL, "%s %s: no %s", c->name, ct_dtype_name(dt), what[i]);
      if (!pairs[i][0]) continue;
      double *ref = ct_test_values(pairs[i][1]);
      /* f32 accumulation over the terms, of values at most 1 in size */
      CHECK_CLOSE(pairs[i][0], ref, rtol, (double)terms[i] * ldexp(1, -21));
      free(ref);
    }
  }
done:
  free(x), free(w), free(b);
}

CT_TEST(conv2d_and_gradients_match_f64_on_the_path_chosen) {
  const char *mode = getenv("CT_ONEDNN");
  bool loaded = onednn_loaded();
  ct_backend_info cpu;
  if (ct_backend_get_info(0, &cpu) == CT_OK) printf("CPU libraries: %s\n", cpu.libraries);
  printf("CT_ONEDNN=%s\n", mode ? mode : "(unset)");
  bool bf16 = ct__gemm_bf16_available();
  int ncase = (int)(sizeof CASES / sizeof CASES[0]);
  for (int di = 0; di < 2; di++) {
    ct_dtype dt = di == 0 ? CT_F32 : CT_BF16;
    for (int k = 0; k < ncase; k++) {
      uint64_t before = ct__conv_onednn_calls();
      check_case(&CASES[k], dt, 100 + 10 * (unsigned)k);
      uint64_t ran = ct__conv_onednn_calls() - before;
      printf("%-28s %-4s: %llu of 3 convolutions on oneDNN\n", CASES[k].name, ct_dtype_name(dt),
             (unsigned long long)ran);
      if (mode && strcmp(mode, "0") == 0)
        CHECK_MSG(ran == 0, "%s: oneDNN ran with CT_ONEDNN=0", CASES[k].name);
      /* forward, grad_x and grad_w: all on oneDNN when asked to (bf16 only
       * where the CPU has AVX512-BF16) */
      if (mode && strcmp(mode, "all") == 0 && loaded && (dt == CT_F32 || bf16))
        CHECK_MSG(ran == 3, "%s %s: %llu of 3 convolutions on oneDNN with CT_ONEDNN=all",
                  CASES[k].name, ct_dtype_name(dt), (unsigned long long)ran);
    }
  }
  if (mode && strcmp(mode, "0") == 0)
    CHECK_MSG(strstr(cpu.libraries, "; oneDNN: not used: CT_ONEDNN=0") != NULL,
              "the libraries do not say why oneDNN is off: %s", cpu.libraries);
}

/* f64 and f16 never go to oneDNN (it has no f64 convolution; f16 is not
 * autocast's CPU dtype): they stay on ctensor's kernels in every mode. */
CT_TEST(f64_and_f16_stay_on_ctensors_kernels) {
  const conv_case *c = &CASES[3];
  double *x = ct_test_random(c->N * c->C * c->H * c->W, -1, 1, 7);
  double *w = ct_test_random(c->Co * c->C * c->k * c->k, -1, 1, 8);
  ct_dtype dts[2] = {CT_F64, CT_F16};
  for (int d = 0; d < 2; d++) {
    uint64_t before = ct__conv_onednn_calls();
    ct_tensor *y = ct_conv2d(
        ct_test_make(x, CT_SHAPE(c->N, c->C, c->H, c->W), dts[d], CT_LAYOUT_CONTIG),
        ct_test_make(w, CT_SHAPE(c->Co, c->C, c->k, c->k), dts[d], CT_LAYOUT_CONTIG), NULL, &c->o);
    CHECK_OK(y);
    CHECK(ct__conv_onednn_calls() == before);
  }
  free(x), free(w);
}
