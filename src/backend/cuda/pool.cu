/* CUDA 2-d max and average pooling, forward and backward, with the CPU's
 * semantics (backend/cpu/pool.c): the window of output (oh, ow) is rows
 * oh*sh - ph .. + kH and columns likewise, clipped to the image; max ignores
 * padding (-inf), the first nan wins, else the first maximum (row-major);
 * indices hold h*W + w in the plane. Average: the divisor counts the window
 * clipped to the padded image (count_include_pad) or to the image.
 *
 * Forward: one thread per output. Backward: one thread per input element,
 * gathering from the windows that cover it in output order (no atomics):
 * deterministic, and the same order of additions as the CPU's scatter loop.
 * Compute in f32 for f32/f16/bf16, f64 for f64. */
#include <math.h>

#include "backend/cuda/common.cuh"

/* The planes' sizes next to the window parameters (backend/params.h). */
struct pgeom {
  int64_t planes, H, W, Ho, Wo;
  ct_pool2d_params p;
};

template <class C>
__global__ void pool_fwd_kernel(pgeom g, bool is_max, const char *x, int xdt, char *out, int64_t *idx) {
  int64_t total = g.planes * g.Ho * g.Wo, stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(xdt);
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t ow = e % g.Wo, r = e / g.Wo, oh = r % g.Ho, pl = r / g.Ho;
    const char *xp = x + pl * g.H * g.W * es;
    int64_t hr[2], wr[2], div = ct_pool2d_window(&g.p, g.H, g.W, oh, ow, hr, wr);
    if (is_max) {
      C best = (C)-INFINITY;
      int64_t bi = hr[0] * g.W + wr[0];
      for (int64_t h = hr[0]; h < hr[1]; h++)
        for (int64_t w = wr[0]; w < wr[1]; w++) {
          C v = ctc_load<C>(xp + (h * g.W + w) * es, xdt);
          if (v > best || v != v) {
            best = v;
            bi = h * g.W + w;
            if (v != v) goto done;
          }
        }
    done:
      ctc_store<C>(out + e * es, xdt, best);
      if (idx) idx[e] = bi;
    } else {
      C s = 0;
      for (int64_t h = hr[0]; h < hr[1]; h++)
        for (int64_t w = wr[0]; w < wr[1]; w++) s += ctc_load<C>(xp + (h * g.W + w) * es, xdt);
      ctc_store<C>(out + e * es, xdt, div > 0 ? s / (C)div : (C)NAN);
    }
  }
}

/* Outputs along one axis whose window covers input position i: o in [lo, hi]. */
__device__ __forceinline__ void covering(int64_t i, int64_t k, int64_t s, int64_t p, int64_t n, int64_t &lo,
                                         int64_t &hi) {
  /* o*s - p <= i < o*s - p + k  <=>  i + p - k < o*s <= i + p */
  int64_t a = i + p - k + 1; /* smallest o*s */
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  hi = (i + p) / s; /* i + p >= 0 */
  if (hi > n - 1) hi = n - 1;
}

template <class C>
__global__ void pool_bwd_kernel(pgeom g, bool is_max, char *gx, int dt, const char *go, const int64_t *idx) {
  int64_t total = g.planes * g.H * g.W, stride = (int64_t)gridDim.x * blockDim.x;
  int es = (int)ctc_elsize(dt);
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t w = e % g.W, r = e / g.W, h = r % g.H, pl = r / g.H;
    int64_t oh0, oh1, ow0, ow1;
    covering(h, g.p.kernel[0], g.p.stride[0], g.p.padding[0], g.Ho, oh0, oh1);
    covering(w, g.p.kernel[1], g.p.stride[1], g.p.padding[1], g.Wo, ow0, ow1);
    const char *gop = go + pl * g.Ho * g.Wo * es;
    const int64_t *ip = idx ? idx + pl * g.Ho * g.Wo : nullptr;
    int64_t me = h * g.W + w;
    C acc = 0;
    for (int64_t oh = oh0; oh <= oh1; oh++)
      for (int64_t ow = ow0; ow <= ow1; ow++) {
        int64_t q = oh * g.Wo + ow;
        if (is_max) {
          if (ip[q] == me) acc += ctc_load<C>(gop + q * es, dt);
        } else {
          int64_t hr[2], wr[2], div = ct_pool2d_window(&g.p, g.H, g.W, oh, ow, hr, wr);
          if (div <= 0) continue;
          acc += ctc_load<C>(gop + q * es, dt) / (C)div;
        }
      }
    ctc_store<C>(gx + e * es, dt, acc);
  }
}

static pgeom make_geom(const ctc_t *big, const ctc_t *small, const ct_pool2d_params *p) {
  pgeom g;
  g.planes = big->shape[0] * big->shape[1];
  g.H = big->shape[2], g.W = big->shape[3], g.Ho = small->shape[2], g.Wo = small->shape[3];
  g.p = *p;
  return g;
}

static ct_status check_dtype(const char *op, int dt) {
  if (!ctc_is_float(dt))
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op, ct_dtype_name((ct_dtype)dt));
  return CT_OK;
}

extern "C" ct_status ct__cuda_pool2d(bool is_max, ct_tensor *out_t, ct_tensor *indices_t,
                                     const ct_tensor *x_t, const ct_pool2d_params *p) {
  const ctc_view out(out_t), indices(indices_t), x(x_t);
  const char *op = is_max ? "max_pool2d" : "avg_pool2d";
  int dev = out->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (out->numel == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  pgeom g = make_geom(x, out, p);
  cudaStream_t s = ctc_stream(dev);
  int64_t *idx = is_max && indices ? (int64_t *)indices->data : nullptr;
  unsigned blocks = ctc_blocks(out->numel, dev);
  if (x->dtype == CT_F64) pool_fwd_kernel<double><<<blocks, CTC_THREADS, 0, s>>>(g, is_max, x->data, x->dtype, out->data, idx);
  else pool_fwd_kernel<float><<<blocks, CTC_THREADS, 0, s>>>(g, is_max, x->data, x->dtype, out->data, idx);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_pool2d_backward(bool is_max, ct_tensor *gx_t, const ct_tensor *g_t,
                                              const ct_tensor *indices_t,
                                              const ct_pool2d_params *p) {
  const ctc_view gx(gx_t), g(g_t), indices(indices_t);
  const char *op = is_max ? "max_pool2d_backward" : "avg_pool2d_backward";
  int dev = gx->device;
  ct_status st = check_dtype(op, gx->dtype);
  if (st != CT_OK) return st;
  if (gx->numel == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (is_max && !indices)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: the indices of the forward are missing", op);
  pgeom geo = make_geom(gx, g, p);
  cudaStream_t s = ctc_stream(dev);
  if (g->numel == 0) return ct__cuda_fill(gx_t, 0.0);
  const int64_t *idx = is_max ? (const int64_t *)indices->data : nullptr;
  unsigned blocks = ctc_blocks(gx->numel, dev);
  if (gx->dtype == CT_F64) pool_bwd_kernel<double><<<blocks, CTC_THREADS, 0, s>>>(geo, is_max, gx->data, gx->dtype, g->data, idx);
  else pool_bwd_kernel<float><<<blocks, CTC_THREADS, 0, s>>>(geo, is_max, gx->data, gx->dtype, g->data, idx);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

/* ---- Adaptive pooling ------------------------------------------------------------ */
/* A thread per output element (forward) or per input element (backward,
 * gathering from the outputs whose windows hold it: no atomics, every
 * element written once), windows from backend/params.h as on the CPU. */

struct ageom {
  int64_t planes, H, W, OH, OW;
  int dt, es;
};

template <class C>
__global__ void adaptive_fwd_kernel(ageom g, bool is_max, const char *x, char *out, int64_t *idx) {
  int64_t total = g.planes * g.OH * g.OW, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t ow = e % g.OW, oh = e / g.OW % g.OH, pl = e / (g.OW * g.OH);
    int64_t h0 = ct_adaptive_start(oh, g.OH, g.H), h1 = ct_adaptive_end(oh, g.OH, g.H);
    int64_t w0 = ct_adaptive_start(ow, g.OW, g.W), w1 = ct_adaptive_end(ow, g.OW, g.W);
    const char *xp = x + pl * g.H * g.W * g.es;
    if (is_max) {
      int64_t at = h0 * g.W + w0;
      C best = ctc_load<C>(xp + at * g.es, g.dt);
      for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) {
          C v = ctc_load<C>(xp + (h * g.W + w) * g.es, g.dt);
          if (v > best || isnan(v)) best = v, at = h * g.W + w;
        }
      ctc_store<C>(out + e * g.es, g.dt, best);
      if (idx) idx[e] = at;
    } else {
      C s = 0;
      for (int64_t h = h0; h < h1; h++)
        for (int64_t w = w0; w < w1; w++) s += ctc_load<C>(xp + (h * g.W + w) * g.es, g.dt);
      ctc_store<C>(out + e * g.es, g.dt, s / (C)((h1 - h0) * (w1 - w0)));
    }
  }
}

template <class C>
__global__ void adaptive_bwd_kernel(ageom g, bool is_max, char *gx, const char *go, const int64_t *idx) {
  int64_t total = g.planes * g.H * g.W, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t w = e % g.W, h = e / g.W % g.H, pl = e / (g.W * g.H);
    int64_t oh0 = ct_adaptive_first_out(h, g.OH, g.H), oh1 = ct_adaptive_last_out(h, g.OH, g.H);
    int64_t ow0 = ct_adaptive_first_out(w, g.OW, g.W), ow1 = ct_adaptive_last_out(w, g.OW, g.W);
    int64_t base = pl * g.OH * g.OW;
    C s = 0;
    for (int64_t oh = oh0; oh <= oh1; oh++)
      for (int64_t ow = ow0; ow <= ow1; ow++) {
        int64_t o = base + oh * g.OW + ow;
        C gv = ctc_load<C>(go + o * g.es, g.dt);
        if (is_max) {
          if (idx[o] == h * g.W + w) s += gv;
        } else {
          int64_t kh = ct_adaptive_end(oh, g.OH, g.H) - ct_adaptive_start(oh, g.OH, g.H);
          int64_t kw = ct_adaptive_end(ow, g.OW, g.W) - ct_adaptive_start(ow, g.OW, g.W);
          s += gv / (C)(kh * kw);
        }
      }
    ctc_store<C>(gx + e * g.es, g.dt, s);
  }
}

static ageom adaptive_geom(const ctc_t *x, const ctc_t *out) {
  ageom g = {x->shape[0] * x->shape[1], x->shape[2], x->shape[3], out->shape[2], out->shape[3],
             x->dtype, (int)ctc_elsize(x->dtype)};
  return g;
}

extern "C" ct_status ct__cuda_adaptive_pool2d(bool is_max, ct_tensor *out_t, ct_tensor *indices_t,
                                              const ct_tensor *x_t) {
  const ctc_view out(out_t), indices(indices_t), x(x_t);
  const char *op = is_max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
  int dev = out->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (out->numel == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  ageom g = adaptive_geom(x, out);
  cudaStream_t s = ctc_stream(dev);
  int64_t *idx = is_max && indices ? (int64_t *)indices->data : nullptr;
  unsigned blocks = ctc_blocks(out->numel, dev);
  if (x->dtype == CT_F64) adaptive_fwd_kernel<double><<<blocks, CTC_THREADS, 0, s>>>(g, is_max, x->data, out->data, idx);
  else adaptive_fwd_kernel<float><<<blocks, CTC_THREADS, 0, s>>>(g, is_max, x->data, out->data, idx);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_adaptive_pool2d_backward(bool is_max, ct_tensor *gx_t,
                                                       const ct_tensor *g_t,
                                                       const ct_tensor *indices_t) {
  const ctc_view gx(gx_t), g(g_t), indices(indices_t);
  const char *op = is_max ? "adaptive_max_pool2d_backward" : "adaptive_avg_pool2d_backward";
  int dev = gx->device;
  ct_status st = check_dtype(op, gx->dtype);
  if (st != CT_OK) return st;
  if (gx->numel == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  if (is_max && !indices)
    return ct__fail_status(CT_ERR_INTERNAL, "%s: the indices of the forward are missing", op);
  ageom geo = adaptive_geom(gx, g);
  cudaStream_t s = ctc_stream(dev);
  const int64_t *idx = is_max ? (const int64_t *)indices->data : nullptr;
  unsigned blocks = ctc_blocks(gx->numel, dev);
  if (gx->dtype == CT_F64) adaptive_bwd_kernel<double><<<blocks, CTC_THREADS, 0, s>>>(geo, is_max, gx->data, g->data, idx);
  else adaptive_bwd_kernel<float><<<blocks, CTC_THREADS, 0, s>>>(geo, is_max, gx->data, g->data, idx);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}
