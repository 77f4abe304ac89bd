/* interpolate and Upsample: values against float64 reference loops written
 * from torch's formulas (every mode, sizes and scale factors, align_corners,
 * recompute_scale_factor; f32, f64, f16, bf16; strided and 1-d inputs),
 * gradients against a reference scatter and by finite differences (f64), the
 * module, errors, and PyTorch as an oracle (skipped without python3 + torch). */
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

/* ---- Reference: torch's upsample kernels, one output at a time ---------------- */

/* The coordinate scale of an axis (torch's area_pixel_compute_scale). */
static double ref_scale(ct_interp_mode m, bool align, int64_t in, int64_t out, double sf) {
  bool linear = m == CT_INTERP_LINEAR || m == CT_INTERP_BILINEAR;
  if (linear && align) return out > 1 ? (double)(in - 1) / (double)(out - 1) : 0;
  return sf > 0 ? 1 / sf : (double)in / (double)out;
}

/* Output o reads i[0] with weight 1 - *l and i[1] with weight *l. */
static void ref_taps(ct_interp_mode m, bool align, int64_t in, int64_t out, double scale, int64_t o,
                     int64_t i[2], double *l) {
  *l = 0;
  if (m == CT_INTERP_NEAREST) {
    float f = floorf((float)o * (float)scale);
    i[0] = out == in ? o : out == 2 * in ? o / 2 : (int64_t)f < in - 1 ? (int64_t)f : in - 1;
  } else if (m == CT_INTERP_NEAREST_EXACT) {
    float f = floorf((float)(((double)o + 0.5) * (float)scale));
    i[0] = (int64_t)f < in - 1 ? (int64_t)f : in - 1;
  } else {
    double real = align ? scale * (double)o : scale * ((double)o + 0.5) - 0.5;
    if (real < 0) real = 0;
    i[0] = (int64_t)floor(real) < in - 1 ? (int64_t)floor(real) : in - 1;
    *l = fmin(fmax(real - (double)i[0], 0), 1);
  }
  i[1] = i[0] + (m >= CT_INTERP_LINEAR && i[0] < in - 1 ? 1 : 0);
}

typedef struct ref_geom {
  int64_t P, H, W, OH, OW;
  double sh, sw; /* coordinate scales */
  ct_interp_mode mode;
  bool align;
} ref_geom;

/* y (P, OH, OW) from x (P, H, W); or, backward, gx (P, H, W) from g. */
static double *ref_run(const ref_geom *r, const double *src, bool backward) {
  int64_t nx = r->P * r->H * r->W, ny = r->P * r->OH * r->OW;
  double *dst = calloc((size_t)(backward ? nx : ny), sizeof(double));
  for (int64_t p = 0; p < r->P; p++)
    for (int64_t oh = 0; oh < r->OH; oh++)
      for (int64_t ow = 0; ow < r->OW; ow++) {
        int64_t hi[2], wi[2];
        double lh, lw;
        ref_taps(r->mode, r->align, r->H, r->OH, r->sh, oh, hi, &lh);
        ref_taps(r->mode, r->align, r->W, r->OW, r->sw, ow, wi, &lw);
        double wh[2] = {1 - lh, lh}, ww[2] = {1 - lw, lw};
        int64_t o = (p * r->OH + oh) * r->OW + ow;
        for (int a = 0; a < 2; a++)
          for (int b = 0; b < 2; b++) {
            int64_t x = (p * r->H + hi[a]) * r->W + wi[b];
            double w = wh[a] * ww[b];
            if (backward)
              dst[x] += w * src[o];
            else
              dst[o] += w * src[x];
          }
      }
  return dst;
}

/* ---- Cases ------------------------------------------------------------------------- */

typedef struct up_case {
  int64_t shape[4]; /* (N, C, L, 0) for 1-d */
  ct_interpolate_opts o;
} up_case;

static const up_case CASES[] = {
    {{2, 3, 5, 7}, {.size = {8, 11}}},
    {{2, 3, 5, 7}, {.scale_factor = {2, 2}}},
    {{2, 3, 5, 7}, {.scale_factor = {1.7, 0.6}}},
    {{2, 3, 5, 7}, {.size = {5, 14}}},
    {{2, 3, 5, 7}, {.size = {3, 12}, .mode = CT_INTERP_NEAREST_EXACT}},
    {{2, 3, 5, 7}, {.scale_factor = {2.5, 1.3}, .mode = CT_INTERP_NEAREST_EXACT}},
    {{2, 3, 5, 7}, {.size = {9, 4}, .mode = CT_INTERP_BILINEAR}},
    {{2, 3, 5, 7}, {.size = {9, 4}, .mode = CT_INTERP_BILINEAR, .align_corners = true}},
    {{2, 3, 5, 7}, {.scale_factor = {1.3, 2.2}, .mode = CT_INTERP_BILINEAR}},
    {{2, 3, 5, 7},
     {.scale_factor = {1.3, 2.2}, .mode = CT_INTERP_BILINEAR, .recompute_scale_factor = true}},
    {{2, 3, 5, 7}, {.scale_factor = {0.5, 0.7}, .mode = CT_INTERP_BILINEAR, .align_corners = true}},
    {{2, 3, 5, 7}, {.size = {1, 1}, .mode = CT_INTERP_BILINEAR, .align_corners = true}},
    {{2, 3, 6, 0}, {.size = {13}}},
    {{2, 3, 6, 0}, {.scale_factor = {2.5}, .mode = CT_INTERP_LINEAR}},
    {{2, 3, 6, 0}, {.size = {4}, .mode = CT_INTERP_LINEAR, .align_corners = true}},
    {{2, 3, 6, 0}, {.scale_factor = {0.6}, .mode = CT_INTERP_NEAREST_EXACT}},
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

/* The reference geometry of case c (torch's output sizes and scales). */
static ref_geom case_geom(const up_case *c) {
  const ct_interpolate_opts *o = &c->o;
  bool one_d = c->shape[3] == 0;
  ref_geom r = {.P = c->shape[0] * c->shape[1],
                .H = one_d ? 1 : c->shape[2],
                .W = one_d ? c->shape[2] : c->shape[3],
                .mode = o->mode,
                .align = o->align_corners};
  int64_t in[2] = {r.H, r.W}, out[2];
  double sf[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    int j = one_d ? 0 : k;
    bool active = !one_d || k == 1;
    double s = o->scale_factor[j];
    out[k] = !active ? 1 : s > 0 ? (int64_t)floor((double)in[k] * s) : o->size[j];
    sf[k] = active && s > 0 && !o->recompute_scale_factor ? s : 0;
  }
  r.OH = out[0], r.OW = out[1];
  r.sh = ref_scale(o->mode, o->align_corners, r.H, r.OH, sf[0]);
  r.sw = ref_scale(o->mode, o->align_corners, r.W, r.OW, sf[1]);
  return r;
}

static double tol(ct_dtype dt) {
  return dt == CT_F64 ? 1e-12 : dt == CT_F32 ? 2e-6 : dt == CT_F16 ? 2e-3 : 2e-2;
}

CT_TEST(interpolate_matches_reference) {
  ct_dtype dts[4] = {CT_F32, CT_F64, CT_F16, CT_BF16};
  for (size_t k = 0; k < N_CASES; k++) {
    const up_case *c = &CASES[k];
    ref_geom r = case_geom(c);
    bool one_d = c->shape[3] == 0;
    int nd = one_d ? 3 : 4;
    int64_t nx = r.P * r.H * r.W, ny = r.P * r.OH * r.OW;
    for (int d = 0; d < 4; d++) {
      ct_dtype dt = dts[d];
      double *xv = ct_test_random(nx, -2, 2, 40 + (unsigned)k), *gv = ct_test_random(ny, -1, 1, 7);
      ct_test_round_to(xv, nx, dt);
      ct_test_round_to(gv, ny, dt);
      double *ry = ref_run(&r, xv, false), *rg = ref_run(&r, gv, true);
      ct_tensor *x = ct_requires_grad_(
          ct_test_make(xv, c->shape, nd, dt, d == 1 ? CT_LAYOUT_TRANSPOSED : CT_LAYOUT_CONTIG),
          true);
      ct_tensor *y = ct_interpolate(x, &c->o);
      CHECK_OK(y);
      if (y) {
        if (one_d)
          CHECK_SHAPE(y, c->shape[0], c->shape[1], r.OW);
        else
          CHECK_SHAPE(y, c->shape[0], c->shape[1], r.OH, r.OW);
        CHECK_CLOSE(y, ry, tol(dt), tol(dt));
        ct_tensor *g = ct_test_make(gv, ct_shape(y), nd, dt, CT_LAYOUT_CONTIG);
        CHECK_STATUS_OK(ct_backward(y, g, NULL));
        CHECK_CLOSE(ct_grad(x), rg, tol(dt), 4 * tol(dt));
      }
      free(xv), free(gv), free(ry), free(rg);
    }
  }
}

static ct_tensor *interp_f(ct_tensor *const *in, void *ctx) { return ct_interpolate(in[0], ctx); }

CT_TEST(interpolate_gradients) {
  ct_tensor *x4[1] = {ct_gradcheck_input(CT_SHAPE(1, 2, 4, 5), -1, 1, 50)};
  ct_tensor *x3[1] = {ct_gradcheck_input(CT_SHAPE(2, 2, 5), -1, 1, 51)};
  for (size_t k = 0; k < N_CASES; k++) {
    char name[64];
    snprintf(name, sizeof name, "interpolate case %zu", k);
    CHECK_GRADIENTS(name, interp_f, (void *)&CASES[k].o, CASES[k].shape[3] ? x4 : x3, 1);
  }
}

CT_TEST(upsample_module_and_errors) {
  ct_module *m = ct_upsample_new(&(ct_interpolate_opts){.scale_factor = {2, 2}});
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(1, 2, 3, 4), -1, 1, 60);
  CHECK(m != NULL);
  if (m) {
    CHECK(strcmp(ct_module_type_name(m), "Upsample") == 0);
    CHECK(ct_module_parameters(m, NULL, NULL, 0) == 0);
    ct_tensor *y = ct_module_forward(m, x);
    /* doubled nearest: every input repeated in a 2 x 2 block */
    ct_tensor *r = ct_repeat_interleave(ct_repeat_interleave(x, 2, 2), 2, 3);
    CHECK(y && r && ct_allclose(y, r, 0, 0));
    ct_module_free(m);
  }
  ct_interpolate_opts bil = {.size = {4, 4}, .mode = CT_INTERP_BILINEAR};
  CHECK_ERR_MSG(ct_interpolate(x, NULL), CT_ERR_ARG, "neither");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){0}), CT_ERR_ARG, "neither");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.size = {2, 2}, .scale_factor = {2, 2}}),
                CT_ERR_ARG, "scale_factor (2, 2)");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.size = {0, 3}}), CT_ERR_ARG, "got 0");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.size = {3, -2}}), CT_ERR_ARG, "got -2");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.scale_factor = {-1, 2}}), CT_ERR_ARG,
                "got -1");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.scale_factor = {0.2, 2}}), CT_ERR_ARG,
                "floor(3 * 0.2)");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.size = {4, 4}, .align_corners = true}),
                CT_ERR_ARG, "align_corners");
  CHECK_ERR(ct_upsample_new(&(ct_interpolate_opts){.size = {4, 4}, .align_corners = true}),
            CT_ERR_ARG);
  CHECK_ERR(
      ct_interpolate(x, &(ct_interpolate_opts){.size = {4, 4}, .recompute_scale_factor = true}),
      CT_ERR_ARG);
  CHECK_ERR_MSG(ct_interpolate(ct_select(x, 0, 0), &bil), CT_ERR_SHAPE, "bilinear needs a 4-d");
  CHECK_ERR_MSG(ct_interpolate(ct_select(ct_select(x, 0, 0), 0, 0), &bil), CT_ERR_SHAPE, "(3, 4)");
  CHECK_ERR_MSG(ct_interpolate(x, &(ct_interpolate_opts){.size = {4}, .mode = CT_INTERP_LINEAR}),
                CT_ERR_SHAPE, "linear needs a 3-d");
  CHECK_ERR_MSG(ct_interpolate(ct_select(x, 0, 0), &(ct_interpolate_opts){.size = {4, 4}}),
                CT_ERR_ARG, "second size 4");
  ct_tensor_opts oi = ct_test_opts(CT_I32), of = ct_test_opts(CT_F32);
  CHECK_ERR(ct_interpolate(ct_zeros(CT_SHAPE(1, 2, 3, 3), &oi), &bil), CT_ERR_DTYPE);
  CHECK_ERR_MSG(ct_interpolate(ct_zeros(CT_SHAPE(1, 2, 0, 3), &of), &bil), CT_ERR_SHAPE, "nonzero");
  ct_clear_error();
  CHECK(ct_interpolate(NULL, &bil) == NULL && ct_last_error() == CT_OK);
}

/* ---- PyTorch as the oracle ----------------------------------------------------------- */

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "import torch.nn.functional as F\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "x4 = torch.randn(2, 3, 5, 7, dtype=torch.float64); x3 = torch.randn(2, 3, 6, "
    "dtype=torch.float64)\n"
    "save('x4', x4); save('x3', x3)\n"
    "cases = [(4, dict(size=(8, 11))), (4, dict(scale_factor=(2, 2))),\n"
    "  (4, dict(scale_factor=(1.7, 0.6))), (4, dict(size=(5, 14))),\n"
    "  (4, dict(size=(3, 12), mode='nearest-exact')),\n"
    "  (4, dict(scale_factor=(2.5, 1.3), mode='nearest-exact')),\n"
    "  (4, dict(size=(9, 4), mode='bilinear', align_corners=False)),\n"
    "  (4, dict(size=(9, 4), mode='bilinear', align_corners=True)),\n"
    "  (4, dict(scale_factor=(1.3, 2.2), mode='bilinear', align_corners=False)),\n"
    "  (4, dict(scale_factor=(1.3, 2.2), mode='bilinear', align_corners=False, "
    "recompute_scale_factor=True)),\n"
    "  (4, dict(scale_factor=(0.5, 0.7), mode='bilinear', align_corners=True)),\n"
    "  (4, dict(size=(1, 1), mode='bilinear', align_corners=True)),\n"
    "  (3, dict(size=13)), (3, dict(scale_factor=2.5, mode='linear', align_corners=False)),\n"
    "  (3, dict(size=4, mode='linear', align_corners=True)),\n"
    "  (3, dict(scale_factor=0.6, mode='nearest-exact'))]\n"
    "for k, (nd, kw) in enumerate(cases):\n"
    "    for dt, tag in [(torch.float64, ''), (torch.float32, '32')]:\n"
    "        x = (x4 if nd == 4 else x3).to(dt).requires_grad_(True)\n"
    "        y = F.interpolate(x, **kw); g = torch.randn_like(y)\n"
    "        save(f'y{k}{tag}', y); save(f'g{k}{tag}', g)\n"
    "        save(f'gx{k}{tag}', torch.autograd.grad(y, x, g)[0])\n"
    "area = [(4, dict(size=(2, 3))), (4, dict(scale_factor=0.5)), (4, dict(size=(7, 9))),\n"
    "  (3, dict(size=4)), (3, dict(scale_factor=1.5))]\n"
    "for k, (nd, kw) in enumerate(area):\n"
    "    x = (x4 if nd == 4 else x3).requires_grad_(True)\n"
    "    y = F.interpolate(x, mode='area', **kw); g = torch.randn_like(y)\n"
    "    save(f'ya{k}', y); save(f'ga{k}', g); save(f'gxa{k}', torch.autograd.grad(y, x, g)[0])\n";

/* 'area' (adaptive average pooling to the output size), the script's list. */
static const struct {
  bool one_d;
  ct_interpolate_opts o;
} AREA[] = {{false, {.size = {2, 3}, .mode = CT_INTERP_AREA}},
            {false, {.scale_factor = {0.5, 0.5}, .mode = CT_INTERP_AREA}},
            {false, {.size = {7, 9}, .mode = CT_INTERP_AREA}},
            {true, {.size = {4}, .mode = CT_INTERP_AREA}},
            {true, {.scale_factor = {1.5}, .mode = CT_INTERP_AREA}}};

CT_TEST(interpolate_matches_pytorch) {
  const char *dir = ct_test_torch_outputs("upsample", TORCH_SCRIPT);
  if (!dir) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  ct_tensor *x64[2] = {ct_test_load_output(dir, "x3"), ct_test_load_output(dir, "x4")};
  for (size_t k = 0; k < N_CASES; k++) {
    for (int f32 = 0; f32 < 2; f32++) {
      char what[48], y[16], g[16], gx[16];
      const char *tag = f32 ? "32" : "";
      snprintf(what, sizeof what, "interpolate case %zu %s", k, f32 ? "f32" : "f64");
      snprintf(y, sizeof y, "y%zu%s", k, tag);
      snprintf(g, sizeof g, "g%zu%s", k, tag);
      snprintf(gx, sizeof gx, "gx%zu%s", k, tag);
      ct_tensor *x = ct_cast(x64[CASES[k].shape[3] != 0], f32 ? CT_F32 : CT_F64);
      ct_requires_grad_(x, true);
      ct_tensor *out = ct_interpolate(x, &CASES[k].o);
      double t = f32 ? 1e-6 : 1e-12;
      CHECK_LIKE_TORCH(dir, what, out, y, t, t);
      ct_tensor *gt = ct_cast(ct_test_load_output(dir, g), f32 ? CT_F32 : CT_F64);
      if (out) CHECK_STATUS_OK(ct_backward(out, gt, NULL));
      CHECK_LIKE_TORCH(dir, what, ct_grad(x), gx, 10 * t, 10 * t);
    }
  }
  for (size_t k = 0; k < sizeof AREA / sizeof AREA[0]; k++) {
    char what[48], y[16], g[16], gx[16];
    snprintf(what, sizeof what, "interpolate area case %zu", k);
    snprintf(y, sizeof y, "ya%zu", k);
    snprintf(g, sizeof g, "ga%zu", k);
    snprintf(gx, sizeof gx, "gxa%zu", k);
    ct_tensor *x = ct_requires_grad_(ct_clone(x64[!AREA[k].one_d]), true);
    ct_tensor *out = ct_interpolate(x, &AREA[k].o);
    CHECK_LIKE_TORCH(dir, what, out, y, 1e-12, 1e-12);
    if (out) CHECK_STATUS_OK(ct_backward(out, ct_test_load_output(dir, g), NULL));
    CHECK_LIKE_TORCH(dir, what, ct_grad(x), gx, 1e-12, 1e-12);
  }
}

/* 'area' against the cell averages computed here (each output averages the
 * inputs [floor(i * in / out), ceil((i + 1) * in / out)) on each axis), its
 * gradients, and align_corners refused as for the nearest modes. */
CT_TEST(interpolate_area_averages_cells) {
  const int64_t H = 5, W = 7;
  double *v = ct_test_random(2 * H * W, -2, 2, 70);
  ct_tensor *x = ct_test_make(v, CT_SHAPE(1, 2, H, W), CT_F64, CT_LAYOUT_TRANSPOSED);
  const int64_t sizes[3][2] = {{2, 3}, {5, 7}, {8, 10}};
  for (int c = 0; c < 3; c++) {
    int64_t OH = sizes[c][0], OW = sizes[c][1];
    double *ref = malloc(sizeof(double) * (size_t)(2 * OH * OW));
    for (int64_t p = 0; p < 2; p++)
      for (int64_t i = 0; i < OH; i++)
        for (int64_t j = 0; j < OW; j++) {
          int64_t h0 = i * H / OH, h1 = ((i + 1) * H + OH - 1) / OH;
          int64_t w0 = j * W / OW, w1 = ((j + 1) * W + OW - 1) / OW;
          double sum = 0;
          for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) sum += v[(p * H + h) * W + w];
          ref[(p * OH + i) * OW + j] = sum / (double)((h1 - h0) * (w1 - w0));
        }
    ct_tensor *y =
        ct_interpolate(x, &(ct_interpolate_opts){.size = {OH, OW}, .mode = CT_INTERP_AREA});
    WITH_CONTEXT(CHECK_CLOSE(y, ref, 1e-12, 1e-12), "area to (%lld, %lld)", (long long)OH,
                 (long long)OW);
    free(ref);
  }
  free(v);
  ct_tensor *x4[1] = {ct_gradcheck_input(CT_SHAPE(1, 2, 4, 5), -1, 1, 71)};
  ct_tensor *x3[1] = {ct_gradcheck_input(CT_SHAPE(2, 2, 5), -1, 1, 72)};
  for (size_t k = 0; k < sizeof AREA / sizeof AREA[0]; k++)
    CHECK_GRADIENTS("interpolate area", interp_f, (void *)&AREA[k].o, AREA[k].one_d ? x3 : x4, 1);
  CHECK_ERR_MSG(
      ct_interpolate(
          x, &(ct_interpolate_opts){.size = {2, 2}, .mode = CT_INTERP_AREA, .align_corners = true}),
      CT_ERR_ARG, "mode area");
}
