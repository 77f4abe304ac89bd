/* CUDA batch and layer normalization, forward and backward, with the CPU's
 * semantics (backend/cpu/norm.c): statistics in double (two passes: the mean,
 * then the biased variance), eps inside the sqrt, running_var updated with
 * the unbiased variance; the elementwise parts in f32 for f32/f16/bf16 x and
 * f64 for f64 x. Statistics/parameters are read and written in their own
 * dtypes (the op layer gives f32 statistics for half x).
 *
 * Batch norm (x (N, C, S) contiguous): one block per channel: block
 * reductions (warp shuffles) for the sums, then the same block normalizes
 * its channel. Layer norm (x (rows, cols) contiguous): one block per row for
 * the statistics and grad_x; grad_w / grad_b by 32-column tiles, 16 row
 * lanes per column merged in a fixed order. Everything is deterministic. */
#include <math.h>

#include "backend/cuda/common.cuh"

/* A 1-d vector (statistics, parameters) or absent. */
struct vec {
  char *p;
  int dt;
  int64_t st; /* bytes between elements */
};
static vec mkvec(const ctc_t *t) {
  vec v = {nullptr, CT_F32, 0};
  if (t) {
    v.p = t->data;
    v.dt = t->dtype;
    v.st = (t->ndim > 0 ? t->strides[t->ndim - 1] : 1) * (int64_t)ctc_elsize(t->dtype);
  }
  return v;
}
__device__ __forceinline__ double vload(const vec &v, int64_t i, double dflt) {
  return v.p ? ctc_load<double>(v.p + i * v.st, v.dt) : dflt;
}
__device__ __forceinline__ void vstore(const vec &v, int64_t i, double x) {
  if (v.p) ctc_store<double>(v.p + i * v.st, v.dt, x);
}

struct add_d {
  __device__ double operator()(double a, double b) const { return a + b; }
};
__device__ __forceinline__ double block_sum(double v, double *sh) {
  return ctc_block_bcast(ctc_block_reduce(v, add_d(), 0.0, sh), sh);
}

static unsigned grid_for(int64_t items, int dev) {
  int64_t cap = (int64_t)ctc_sm_count(dev) * 32;
  int64_t b = items < cap ? items : cap;
  return (unsigned)(b < 1 ? 1 : b);
}

static ct_status check_dtype(const char *op, int dt) {
  if (!ctc_is_float(dt))
    return ct__fail_status(CT_ERR_DTYPE, "%s: no CUDA kernel for %s", op, ct_dtype_name((ct_dtype)dt));
  return CT_OK;
}

/* ---- Batch norm -------------------------------------------------------------------- */

struct bn_args {
  int64_t N, C, S;
  bool training;
  double momentum, eps;
  const char *x, *g;
  char *out, *gx;
  int dt, es; /* x, out, grad_out, grad_x */
  vec w, b, mean, invstd, rm, rv, gw, gb;
};

template <class C> __global__ void bn_fwd_kernel(bn_args a) {
  __shared__ double sh[32];
  int64_t M = a.N * a.S;
  for (int64_t ch = blockIdx.x; ch < a.C; ch += gridDim.x) {
    double mean, invstd;
    if (a.training) {
      double s = 0;
      for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
        int64_t n = i / a.S, j = i - n * a.S;
        s += (double)ctc_load<C>(a.x + ((n * a.C + ch) * a.S + j) * a.es, a.dt);
      }
      s = block_sum(s, sh);
      mean = M > 0 ? s / (double)M : NAN;
      double ss = 0;
      for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
        int64_t n = i / a.S, j = i - n * a.S;
        double d = (double)ctc_load<C>(a.x + ((n * a.C + ch) * a.S + j) * a.es, a.dt) - mean;
        ss += d * d;
      }
      ss = block_sum(ss, sh);
      double var = M > 0 ? ss / (double)M : NAN;
      invstd = 1.0 / sqrt(var + a.eps);
      if (threadIdx.x == 0) {
        if (a.rm.p) vstore(a.rm, ch, (1 - a.momentum) * vload(a.rm, ch, 0) + a.momentum * mean);
        if (a.rv.p) {
          double unb = M > 1 ? ss / (double)(M - 1) : NAN;
          vstore(a.rv, ch, (1 - a.momentum) * vload(a.rv, ch, 0) + a.momentum * unb);
        }
      }
    } else {
      mean = vload(a.rm, ch, 0);
      invstd = 1.0 / sqrt(vload(a.rv, ch, 1) + a.eps);
    }
    if (threadIdx.x == 0) {
      vstore(a.mean, ch, mean);
      vstore(a.invstd, ch, invstd);
    }
    double w = vload(a.w, ch, 1.0), b = vload(a.b, ch, 0.0);
    C scale = (C)(w * invstd), shift = (C)(b - mean * w * invstd);
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      int64_t n = i / a.S, j = i - n * a.S, o = ((n * a.C + ch) * a.S + j) * a.es;
      ctc_store<C>(a.out + o, a.dt, ctc_load<C>(a.x + o, a.dt) * scale + shift);
    }
  }
}

template <class C> __global__ void bn_bwd_kernel(bn_args a) {
  __shared__ double sh[32];
  int64_t M = a.N * a.S;
  for (int64_t ch = blockIdx.x; ch < a.C; ch += gridDim.x) {
    double mean = vload(a.mean, ch, 0), invstd = vload(a.invstd, ch, 1);
    double sg = 0, sgx = 0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      int64_t n = i / a.S, j = i - n * a.S, o = ((n * a.C + ch) * a.S + j) * a.es;
      double gv = (double)ctc_load<C>(a.g + o, a.dt);
      sg += gv;
      sgx += gv * ((double)ctc_load<C>(a.x + o, a.dt) - mean);
    }
    sg = block_sum(sg, sh);
    sgx = block_sum(sgx, sh);
    if (threadIdx.x == 0) {
      vstore(a.gw, ch, sgx * invstd);
      vstore(a.gb, ch, sg);
    }
    if (!a.gx) continue;
    double w = vload(a.w, ch, 1.0);
    /* training: gx = w*invstd*(g - sg/M - (x-mean)*invstd^2*sgx/M) */
    C k = (C)(w * invstd), m = (C)mean;
    C dm = a.training && M > 0 ? (C)(sg / (double)M) : (C)0;
    C dv = a.training && M > 0 ? (C)(invstd * invstd * sgx / (double)M) : (C)0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
      int64_t n = i / a.S, j = i - n * a.S, o = ((n * a.C + ch) * a.S + j) * a.es;
      C gv = ctc_load<C>(a.g + o, a.dt), xv = ctc_load<C>(a.x + o, a.dt);
      ctc_store<C>(a.gx + o, a.dt, k * (gv - dm - (xv - m) * dv));
    }
  }
}

static unsigned bn_threads(int64_t M) { return M >= 4096 ? 512 : M >= 512 ? 256 : M >= 128 ? 128 : 32; }

static bn_args bn_init(const ctc_t *x) {
  bn_args a;
  memset(&a, 0, sizeof a);
  a.N = x->shape[0];
  a.C = x->ndim > 1 ? x->shape[1] : 1;
  a.S = x->ndim > 2 ? x->shape[2] : 1;
  a.x = x->data;
  a.dt = x->dtype;
  a.es = (int)ctc_elsize(x->dtype);
  return a;
}

extern "C" ct_status ct__cuda_batch_norm(const ctc_t *out, const ctc_t *save_mean, const ctc_t *save_invstd,
                                         const ctc_t *x, const ctc_t *weight, const ctc_t *bias,
                                         const ctc_t *running_mean, const ctc_t *running_var, bool training,
                                         double momentum, double eps) {
  const char *op = "batch_norm";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (!training && (!running_mean || !running_var))
    return ct__fail_status(CT_ERR_INTERNAL, "%s: evaluation needs the running statistics", op);
  bn_args a = bn_init(x);
  if (a.C == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.training = training;
  a.momentum = momentum;
  a.eps = eps;
  a.out = out->data;
  a.w = mkvec(weight), a.b = mkvec(bias), a.mean = mkvec(save_mean), a.invstd = mkvec(save_invstd);
  a.rm = mkvec(running_mean), a.rv = mkvec(running_var);
  cudaStream_t s = ctc_stream(dev);
  unsigned g = grid_for(a.C, dev), t = bn_threads(a.N * a.S);
  if (x->dtype == CT_F64) bn_fwd_kernel<double><<<g, t, 0, s>>>(a);
  else bn_fwd_kernel<float><<<g, t, 0, s>>>(a);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_batch_norm_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb,
                                                  const ctc_t *g, const ctc_t *x, const ctc_t *weight,
                                                  const ctc_t *save_mean, const ctc_t *save_invstd,
                                                  bool training) {
  const char *op = "batch_norm_backward";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  if (!gx && !gw && !gb) return CT_OK;
  bn_args a = bn_init(x);
  if (a.C == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.training = training;
  a.g = g->data;
  a.gx = gx ? gx->data : nullptr;
  a.w = mkvec(weight), a.mean = mkvec(save_mean), a.invstd = mkvec(save_invstd);
  a.gw = mkvec(gw), a.gb = mkvec(gb);
  cudaStream_t s = ctc_stream(dev);
  unsigned gr = grid_for(a.C, dev), t = bn_threads(a.N * a.S);
  if (x->dtype == CT_F64) bn_bwd_kernel<double><<<gr, t, 0, s>>>(a);
  else bn_bwd_kernel<float><<<gr, t, 0, s>>>(a);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

/* ---- Layer norm -------------------------------------------------------------------- */

struct ln_args {
  int64_t rows, cols;
  double eps;
  const char *x, *g;
  char *out, *gx;
  int dt, es;
  vec w, b, mean, rstd, gw, gb;
};

template <class C> __global__ void ln_fwd_kernel(ln_args a) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const char *x = a.x + r * a.cols * a.es;
    char *o = a.out + r * a.cols * a.es;
    double s = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) s += (double)ctc_load<C>(x + i * a.es, a.dt);
    double mean = block_sum(s, sh) / (double)a.cols;
    double ss = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      double d = (double)ctc_load<C>(x + i * a.es, a.dt) - mean;
      ss += d * d;
    }
    ss = block_sum(ss, sh);
    double rstd = 1.0 / sqrt(ss / (double)a.cols + a.eps);
    if (threadIdx.x == 0) {
      vstore(a.mean, r, mean);
      vstore(a.rstd, r, rstd);
    }
    C m = (C)mean, k = (C)rstd;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      C v = (ctc_load<C>(x + i * a.es, a.dt) - m) * k;
      if (a.w.p) v *= (C)vload(a.w, i, 1.0);
      if (a.b.p) v += (C)vload(a.b, i, 0.0);
      ctc_store<C>(o + i * a.es, a.dt, v);
    }
  }
}

template <class C> __global__ void ln_bwd_x_kernel(ln_args a) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const char *x = a.x + r * a.cols * a.es, *g = a.g + r * a.cols * a.es;
    char *gx = a.gx + r * a.cols * a.es;
    C m = (C)vload(a.mean, r, 0), k = (C)vload(a.rstd, r, 1);
    double s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      C wg = ctc_load<C>(g + i * a.es, a.dt);
      if (a.w.p) wg *= (C)vload(a.w, i, 1.0);
      s1 += (double)wg;
      s2 += (double)(wg * (ctc_load<C>(x + i * a.es, a.dt) - m) * k);
    }
    s1 = block_sum(s1, sh);
    s2 = block_sum(s2, sh);
    C am = (C)(s1 / (double)a.cols), bm = (C)(s2 / (double)a.cols);
    for (int64_t i = threadIdx.x; i < a.cols; i += blockDim.x) {
      C wg = ctc_load<C>(g + i * a.es, a.dt);
      if (a.w.p) wg *= (C)vload(a.w, i, 1.0);
      C xv = ctc_load<C>(x + i * a.es, a.dt);
      ctc_store<C>(gx + i * a.es, a.dt, k * (wg - am - (xv - m) * k * bm));
    }
  }
}

#define LN_TX 32
#define LN_TY 16
/* grad_w / grad_b: block (32, 16) per 32 columns; lane y sums rows y, y+16, ...;
 * the 16 lanes merge in order. */
template <class C> __global__ void ln_bwd_w_kernel(ln_args a) {
  __shared__ double sw[LN_TY][LN_TX], sb[LN_TY][LN_TX];
  int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t j0 = (int64_t)blockIdx.x * LN_TX; j0 < a.cols; j0 += (int64_t)gridDim.x * LN_TX) {
    int64_t j = j0 + tx;
    double accw = 0, accb = 0;
    if (j < a.cols)
      for (int64_t r = ty; r < a.rows; r += LN_TY) {
        int64_t o = (r * a.cols + j) * a.es;
        C gv = ctc_load<C>(a.g + o, a.dt);
        if (a.gw.p) {
          C m = (C)vload(a.mean, r, 0), k = (C)vload(a.rstd, r, 1);
          accw += (double)(gv * (ctc_load<C>(a.x + o, a.dt) - m) * k);
        }
        accb += (double)gv;
      }
    __syncthreads(); /* the previous tile's reads of sw/sb are done */
    sw[ty][tx] = accw;
    sb[ty][tx] = accb;
    __syncthreads();
    if (ty == 0 && j < a.cols) {
      double w = 0, b = 0;
      for (int y = 0; y < LN_TY; y++) w += sw[y][tx], b += sb[y][tx];
      vstore(a.gw, j, w);
      vstore(a.gb, j, b);
    }
  }
}

static ln_args ln_init(const ctc_t *x, int64_t cols) {
  ln_args a;
  memset(&a, 0, sizeof a);
  a.cols = cols;
  a.rows = cols > 0 ? x->numel / cols : 0;
  a.x = x->data;
  a.dt = x->dtype;
  a.es = (int)ctc_elsize(x->dtype);
  return a;
}

static unsigned ln_threads(int64_t cols) {
  int64_t t = (cols + 31) / 32 * 32;
  if (t > 256) t = 256;
  return (unsigned)(t < 32 ? 32 : t);
}

extern "C" ct_status ct__cuda_layer_norm(const ctc_t *out, const ctc_t *mean, const ctc_t *rstd, const ctc_t *x,
                                         const ctc_t *weight, const ctc_t *bias, int64_t cols, double eps) {
  const char *op = "layer_norm";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  ln_args a = ln_init(x, cols);
  if (a.rows == 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.eps = eps;
  a.out = out->data;
  a.w = mkvec(weight), a.b = mkvec(bias), a.mean = mkvec(mean), a.rstd = mkvec(rstd);
  cudaStream_t s = ctc_stream(dev);
  unsigned g = grid_for(a.rows, dev), t = ln_threads(cols);
  if (x->dtype == CT_F64) ln_fwd_kernel<double><<<g, t, 0, s>>>(a);
  else ln_fwd_kernel<float><<<g, t, 0, s>>>(a);
  CT_CUDA_LAUNCH_CHECK(op, dev, s);
  return CT_OK;
}

extern "C" ct_status ct__cuda_layer_norm_backward(const ctc_t *gx, const ctc_t *gw, const ctc_t *gb,
                                                  const ctc_t *g, const ctc_t *x, const ctc_t *weight,
                                                  const ctc_t *mean, const ctc_t *rstd, int64_t cols) {
  const char *op = "layer_norm_backward";
  int dev = x->device;
  ct_status st = check_dtype(op, x->dtype);
  if (st != CT_OK) return st;
  ln_args a = ln_init(x, cols);
  if (cols <= 0) return CT_OK;
  if ((st = ctc_use_device(op, dev)) != CT_OK) return st;
  a.g = g->data;
  a.gx = gx ? gx->data : nullptr;
  a.w = mkvec(weight), a.mean = mkvec(mean), a.rstd = mkvec(rstd), a.gw = mkvec(gw), a.gb = mkvec(gb);
  cudaStream_t s = ctc_stream(dev);
  bool f64 = x->dtype == CT_F64;
  if (gx && a.rows > 0) {
    unsigned gr = grid_for(a.rows, dev), t = ln_threads(cols);
    if (f64) ln_bwd_x_kernel<double><<<gr, t, 0, s>>>(a);
    else ln_bwd_x_kernel<float><<<gr, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  if (gw || gb) {
    /* rows == 0 gives zeros: the kernel's sums are empty */
    int64_t tiles = (cols + LN_TX - 1) / LN_TX;
    unsigned gr = grid_for(tiles, dev);
    dim3 t(LN_TX, LN_TY);
    if (f64) ln_bwd_w_kernel<double><<<gr, t, 0, s>>>(a);
    else ln_bwd_w_kernel<float><<<gr, t, 0, s>>>(a);
    CT_CUDA_LAUNCH_CHECK(op, dev, s);
  }
  return CT_OK;
}
