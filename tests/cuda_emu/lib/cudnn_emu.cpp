/* Host stand-in of the cuDNN calls of src/backend/cuda/conv.cu (declared in
 * shim/cudnn.h): handles, 4-d NCHW descriptors, the algorithm heuristics and
 * the three convolutions computed directly on the CPU, for the emulated CUDA
 * runtime (tests/cuda_emu).
 *
 * Validation, as cuDNN documents it: unknown (never created or destroyed)
 * handles and descriptors, unset descriptors, dims < 1, pad < 0, stride or
 * dilation < 1, unknown enum values, group count < 1 are
 * CUDNN_STATUS_BAD_PARAM; so are inconsistent descriptors (x channels !=
 * filter in-channels * groups, output channels not divisible by groups, y
 * dims other than cudnnGetConvolution2dForwardOutputDim's, a filter larger
 * than the padded input, differing data types), null alpha/beta/data
 * pointers, a null or too small workspace, and any pointer that fails
 * emu_lib_check_device (a GPU would fault on it). What the emulation doesn't
 * compute is CUDNN_STATUS_NOT_SUPPORTED_*: NHWC/VECT_C layouts, data / compute
 * type pairs other than FLOAT/FLOAT, DOUBLE/DOUBLE, HALF/FLOAT, BFLOAT16/FLOAT.
 * Every failure leaves a message for cudnnGetLastErrorString.
 *
 * Arithmetic: each output element is a sum of products accumulated in the
 * compute type (float, double for DOUBLE), then alpha * sum + beta * out,
 * rounded once to the data type; beta == 0 never reads the output. FLOAT data
 * under any math type but CUDNN_FMA_MATH rounds its inputs to TF32 first (as
 * cuDNN may on Ampere and later), so a caller that wants exact f32 must ask
 * for CUDNN_FMA_MATH. alpha/beta are double for DOUBLE data, float otherwise.
 *
 * Asynchrony: a convolution that passes its checks queues its computation on
 * the handle's stream (emu_lib_enqueue) with the problem, pointers and
 * alpha/beta (read when called) captured by value, as cuDNN returns before
 * the GPU has run it; the descriptors may be destroyed right after.
 *
 * The algorithm lists (cudnnGet*Algorithm_v7) are fixed, and built to walk a
 * caller through every case of its candidate logic (conv.cu's: supported ones
 * only, deterministic first, skip NOT_SUPPORTED at the workspace query or the
 * run, workspace from the caller):
 *
 *   forward                    backward data              backward filter
 *   WINOGRAD_NONFUSED  nd ws   ALGO_0             nd      ALGO_0             nd
 *   FFT                NS      FFT                NS      ALGO_3             nd ws
 *   IMPLICIT_PRECOMP   d ws D  FFT_TILING         d ws D  FFT                NS
 *   GEMM               d ws A  WINOGRAD_NONFUSED  d ws A  FFT_TILING         d ws D
 *   IMPLICIT_GEMM      d       ALGO_1             d       WINOGRAD_NONFUSED  d ws A
 *   FFT_TILING         NS      WINOGRAD           NS      ALGO_1             d
 *   DIRECT             NS                                 WINOGRAD           NS
 *   WINOGRAD           NS
 *
 *   nd: CUDNN_NON_DETERMINISTIC, listed first with status SUCCESS (a caller
 *       that takes the first entry gets it); it really is: its sums are split
 *       in two at a point that changes with every call (as split reductions
 *       with atomics), so repeated runs differ in the last bits.
 *   NS: listed with status CUDNN_STATUS_NOT_SUPPORTED; its workspace query
 *       and its run return CUDNN_STATUS_NOT_SUPPORTED too.
 *   d:  CUDNN_DETERMINISTIC, status SUCCESS.
 *   ws: needs a nonzero workspace (filled with garbage by the run).
 *   D:  listed as SUCCESS, but with a dilation > 1 its workspace query and
 *       its run return CUDNN_STATUS_NOT_SUPPORTED_SHAPE (a sub-code).
 *   A:  its run returns CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER unless
 *       every data pointer is 16-byte aligned.
 *   The last deterministic entry always works, with no workspace, unless
 *   CT_EMU_CUDNN_NONDETERMINISTIC_ONLY=1 is set: then every deterministic
 *   entry is NOT_SUPPORTED, as a problem only nondeterministic algorithms
 *   take (for ct_use_deterministic_algorithms' error).
 * mathType of an entry: the descriptor's CUDNN_FMA_MATH if set, else
 * CUDNN_TENSOR_OP_MATH for the entries marked "tensor core" below (not for
 * DOUBLE), else CUDNN_DEFAULT_MATH. Unsupported data types: every entry
 * NOT_SUPPORTED. */
#include "cudnn.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "emu_calls.h"
#include "emu_lib.h"
#include "host_math.h"

using emu_lib::Elem;

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
};
struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, h = 0, w = 0;
};
struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;                            /* cuDNN's default */
  cudnnMathType_t math = CUDNN_DEFAULT_MATH; /* cuDNN's default */
};

namespace {

/* ---- Object registry and errors ---------------------------------------------------- */

enum Obj { OBJ_HANDLE, OBJ_TENSOR, OBJ_FILTER, OBJ_CONV };

/* Live objects by address: a destroyed or made-up one is refused, not read. */
std::mutex live_mu;
std::unordered_map<const void *, Obj> &live() {
  static std::unordered_map<const void *, Obj> m;
  return m;
}
void live_add(const void *p, Obj o) {
  std::lock_guard<std::mutex> lock(live_mu);
  live()[p] = o;
}
bool live_is(const void *p, Obj o) {
  std::lock_guard<std::mutex> lock(live_mu);
  auto it = live().find(p);
  return p && it != live().end() && it->second == o;
}
bool live_remove(const void *p, Obj o) {
  std::lock_guard<std::mutex> lock(live_mu);
  auto it = live().find(p);
  if (!p || it == live().end() || it->second != o) return false;
  live().erase(it);
  return true;
}

thread_local char last_msg[512];
thread_local int last_algo[3] = {-1, -1, -1};

/* Records "fn: message" for cudnnGetLastErrorString and returns s. */
cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...) {
  int n = snprintf(last_msg, sizeof last_msg, "%s: ", fn);
  if (n < 0 || (size_t)n >= sizeof last_msg) return s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_msg + n, sizeof last_msg - (size_t)n, fmt, ap);
  va_end(ap);
  return s;
}

bool known_type(cudnnDataType_t t) {
  return (int)t >= CUDNN_DATA_FLOAT && (int)t <= CUDNN_DATA_COMPLEX_FP64;
}

/* ---- Problems ------------------------------------------------------------------------ */

/* out = 1 + (in + 2 pad - ((f - 1) dil + 1)) / stride; false when the dilated
 * filter doesn't fit in the padded input. */
bool out_dim(int in, int pad, int f, int dil, int stride, int *out) {
  int64_t span = (int64_t)(f - 1) * dil + 1, room = (int64_t)in + 2 * (int64_t)pad;
  if (span > room) return false;
  *out = (int)(1 + (room - span) / stride);
  return true;
}

enum Kind { K_FWD, K_BWD_DATA, K_BWD_FILTER };
const char *const kind_fn[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                "cudnnConvolutionBackwardFilter"};

/* One convolution, checked: x (N, C, H, W), w (K, Cg, R, S), y (N, K, P, Q),
 * G groups of Cg input and Kg output channels. */
struct Conv {
  int N, C, H, W, K, Cg, R, S, P, Q, G, Kg;
  int ph, pw, sh, sw, dh, dw;
  bool flip; /* CUDNN_CONVOLUTION: the filter is applied flipped */
  Elem elem;
  bool dbl;  /* DOUBLE: double accumulation, double alpha/beta */
  bool tf32; /* FLOAT not under CUDNN_FMA_MATH */
  cudnnMathType_t math;
  size_t x_elems() const { return (size_t)N * C * H * W; }
  size_t w_elems() const { return (size_t)K * Cg * R * S; }
  size_t y_elems() const { return (size_t)N * K * P * Q; }
};

/* Checks the handle, the descriptors and their consistency (BAD_PARAM), then
 * whether the emulation computes the types (NOT_SUPPORTED_DATA_TYPE). */
cudnnStatus_t describe(const char *fn, cudnnHandle_t h, const cudnnTensorStruct *x,
                       const cudnnFilterStruct *w, const cudnnConvolutionStruct *cd,
                       const cudnnTensorStruct *y, Conv *cv) {
  if (!live_is(h, OBJ_HANDLE))
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid cuDNN handle %p", (void *)h);
  if (!live_is(x, OBJ_TENSOR) || !live_is(y, OBJ_TENSOR) || !live_is(w, OBJ_FILTER) ||
      !live_is(cd, OBJ_CONV))
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor was never created or already destroyed");
  if (!x->set || !y->set || !w->set || !cd->set)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor was created but never set");
  if (x->type != w->type || x->type != y->type)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "data types differ: x %d, w %d, y %d", (int)x->type,
                (int)w->type, (int)y->type);
  if ((int64_t)w->c * cd->groups != x->c)
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "x has %d channels, the filter %d per group x %d groups", x->c, w->c, cd->groups);
  if (w->k % cd->groups != 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "%d output channels not divisible by %d groups", w->k,
                cd->groups);
  int P, Q;
  if (!out_dim(x->h, cd->pad_h, w->h, cd->dil_h, cd->u, &P) ||
      !out_dim(x->w, cd->pad_w, w->w, cd->dil_w, cd->v, &Q))
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "the dilated %dx%d filter exceeds the padded %dx%d input", w->h, w->w, x->h, x->w);
  if (y->n != x->n || y->c != w->k || y->h != P || y->w != Q)
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "y is (%d, %d, %d, %d), the convolution gives (%d, %d, %d, %d)", y->n, y->c, y->h,
                y->w, x->n, w->k, P, Q);
  cudnnDataType_t t = x->type;
  bool ok = (t == CUDNN_DATA_DOUBLE && cd->compute == CUDNN_DATA_DOUBLE) ||
            ((t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16) &&
             cd->compute == CUDNN_DATA_FLOAT);
  if (!ok)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                "data type %d with compute type %d is not emulated", (int)t, (int)cd->compute);
  cv->N = x->n, cv->C = x->c, cv->H = x->h, cv->W = x->w;
  cv->K = w->k, cv->Cg = w->c, cv->R = w->h, cv->S = w->w;
  cv->P = P, cv->Q = Q, cv->G = cd->groups, cv->Kg = w->k / cd->groups;
  cv->ph = cd->pad_h, cv->pw = cd->pad_w, cv->sh = cd->u, cv->sw = cd->v, cv->dh = cd->dil_h,
  cv->dw = cd->dil_w;
  cv->flip = cd->mode == CUDNN_CONVOLUTION;
  cv->elem = t == CUDNN_DATA_DOUBLE     ? Elem::F64
             : t == CUDNN_DATA_HALF     ? Elem::F16
             : t == CUDNN_DATA_BFLOAT16 ? Elem::BF16
                                        : Elem::F32;
  cv->dbl = t == CUDNN_DATA_DOUBLE;
  cv->tf32 = t == CUDNN_DATA_FLOAT && cd->math != CUDNN_FMA_MATH;
  cv->math = cd->math;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Algorithms ---------------------------------------------------------------------- */

enum Cond { ALWAYS, NEVER, NO_DILATION, ALIGNED16 };
/* workspace: none, an index table, one group's im2col columns in the data
 * type, or one image of x / of y / the whole filter in the accumulator type */
enum Ws { WS_NONE, WS_INDEX, WS_COLS, WS_X_ACC, WS_Y_ACC, WS_W_ACC };
struct Algo {
  int algo;
  const char *name;
  bool deterministic;
  Cond cond;
  bool tensor_core;
  Ws ws;
};

/* The lists, in the heuristics' order (see the table at the top). */
const Algo fwd_algos[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "FWD_ALGO_WINOGRAD_NONFUSED", false, ALWAYS,
     true, WS_Y_ACC},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, "FWD_ALGO_FFT", true, NEVER, false, WS_NONE},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "FWD_ALGO_IMPLICIT_PRECOMP_GEMM", true,
     NO_DILATION, true, WS_INDEX},
    {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "FWD_ALGO_GEMM", true, ALIGNED16, false, WS_COLS},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "FWD_ALGO_IMPLICIT_GEMM", true, ALWAYS, false,
     WS_NONE},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "FWD_ALGO_FFT_TILING", true, NEVER, false, WS_NONE},
    {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "FWD_ALGO_DIRECT", true, NEVER, false, WS_NONE},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "FWD_ALGO_WINOGRAD", true, NEVER, false, WS_NONE},
};
const Algo bwd_data_algos[] = {
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, "BWD_DATA_ALGO_0", false, ALWAYS, false, WS_NONE},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, "BWD_DATA_ALGO_FFT", true, NEVER, false, WS_NONE},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, "BWD_DATA_ALGO_FFT_TILING", true, NO_DILATION,
     false, WS_X_ACC},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, "BWD_DATA_ALGO_WINOGRAD_NONFUSED", true,
     ALIGNED16, true, WS_COLS},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, "BWD_DATA_ALGO_1", true, ALWAYS, true, WS_NONE},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, "BWD_DATA_ALGO_WINOGRAD", true, NEVER, false,
     WS_NONE},
};
const Algo bwd_filter_algos[] = {
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, "BWD_FILTER_ALGO_0", false, ALWAYS, false, WS_NONE},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, "BWD_FILTER_ALGO_3", false, ALWAYS, false, WS_W_ACC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, "BWD_FILTER_ALGO_FFT", true, NEVER, false, WS_NONE},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, "BWD_FILTER_ALGO_FFT_TILING", true, NO_DILATION,
     false, WS_COLS},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, "BWD_FILTER_ALGO_WINOGRAD_NONFUSED", true,
     ALIGNED16, true, WS_W_ACC},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, "BWD_FILTER_ALGO_1", true, ALWAYS, true, WS_NONE},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, "BWD_FILTER_ALGO_WINOGRAD", true, NEVER, false,
     WS_NONE},
};
struct AlgoList {
  const Algo *a;
  int n;
};
const AlgoList lists[3] = {{fwd_algos, CUDNN_CONVOLUTION_FWD_ALGO_COUNT},
                           {bwd_data_algos, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT},
                           {bwd_filter_algos, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT}};
static_assert(sizeof fwd_algos / sizeof *fwd_algos == CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
              "every forward algorithm");
static_assert(sizeof bwd_data_algos / sizeof *bwd_data_algos ==
                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
              "every backward data algorithm");
static_assert(sizeof bwd_filter_algos / sizeof *bwd_filter_algos ==
                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
              "every backward filter algorithm");

const Algo *find_algo(int kind, int algo) {
  for (int i = 0; i < lists[kind].n; i++)
    if (lists[kind].a[i].algo == algo) return &lists[kind].a[i];
  return nullptr;
}

size_t workspace_bytes(const Algo &a, const Conv &cv) {
  size_t es = emu_lib::elem_size(cv.elem), acc = cv.dbl ? 8 : 4;
  switch (a.ws) {
    case WS_INDEX:
      return (size_t)cv.Cg * cv.R * cv.S * sizeof(int);
    case WS_COLS:
      return (size_t)cv.Cg * cv.R * cv.S * cv.P * cv.Q * es;
    case WS_X_ACC:
      return (size_t)cv.C * cv.H * cv.W * acc;
    case WS_Y_ACC:
      return (size_t)cv.K * cv.P * cv.Q * acc;
    case WS_W_ACC:
      return cv.w_elems() * acc;
    default:
      return 0;
  }
}

/* CT_EMU_CUDNN_NONDETERMINISTIC_ONLY=1: no deterministic algorithm is supported. */
bool nondeterministic_only() {
  const char *v = getenv("CT_EMU_CUDNN_NONDETERMINISTIC_ONLY");
  return v && !strcmp(v, "1");
}

/* Whether the algorithm computes this problem (pointers aside). */
cudnnStatus_t algo_support(const char *fn, const Algo &a, const Conv &cv) {
  if (a.cond == NEVER || (a.deterministic && nondeterministic_only()))
    return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "CUDNN_CONVOLUTION_%s is not supported (emulation)",
                a.name);
  if (a.cond == NO_DILATION && (cv.dh > 1 || cv.dw > 1))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, fn,
                "CUDNN_CONVOLUTION_%s does not support dilation %dx%d", a.name, cv.dh, cv.dw);
  return CUDNN_STATUS_SUCCESS;
}

cudnnMathType_t entry_math(const Algo &a, const Conv &cv) {
  if (cv.math == CUDNN_FMA_MATH) return CUDNN_FMA_MATH;
  return a.tensor_core && !cv.dbl ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
}

template <class Perf, class AlgoT>
cudnnStatus_t get_algorithms(const char *fn, int kind, cudnnHandle_t h, const cudnnTensorStruct *x,
                             const cudnnFilterStruct *w, const cudnnConvolutionStruct *cd,
                             const cudnnTensorStruct *y, int requested, int *returned, Perf *perf) {
  if (requested < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount %d < 1", requested);
  if (!returned || !perf)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null returnedAlgoCount or perfResults");
  Conv cv;
  cudnnStatus_t s = describe(fn, h, x, w, cd, y, &cv);
  if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_BAD_PARAM) return s;
  const AlgoList &L = lists[kind];
  int n = requested < L.n ? requested : L.n;
  for (int i = 0; i < n; i++) {
    const Algo &a = L.a[i];
    Perf p;
    memset(&p, 0, sizeof p);
    p.algo = (AlgoT)a.algo;
    /* the heuristics don't know about dilation or pointers: only NEVER (and
     * types the emulation lacks, and deterministic entries under
     * CT_EMU_CUDNN_NONDETERMINISTIC_ONLY) are reported as NOT_SUPPORTED here */
    bool ok = s == CUDNN_STATUS_SUCCESS && a.cond != NEVER &&
              !(a.deterministic && nondeterministic_only());
    p.status = ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
    p.time = ok ? 0.1f * (float)(i + 1) : -1.0f;
    p.memory = ok ? workspace_bytes(a, cv) : 0;
    p.determinism = a.deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
    p.mathType = ok ? entry_math(a, cv) : CUDNN_DEFAULT_MATH;
    perf[i] = p;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t get_workspace(const char *fn, int kind, cudnnHandle_t h, const cudnnTensorStruct *x,
                            const cudnnFilterStruct *w, const cudnnConvolutionStruct *cd,
                            const cudnnTensorStruct *y, int algo, size_t *size) {
  Conv cv;
  cudnnStatus_t s = describe(fn, h, x, w, cd, y, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (!size) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null sizeInBytes");
  const Algo *a = find_algo(kind, algo);
  if (!a) return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown algorithm %d", algo);
  if ((s = algo_support(fn, *a, cv)) != CUDNN_STATUS_SUCCESS) return s;
  *size = workspace_bytes(*a, cv);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Convolutions --------------------------------------------------------------------- */

std::atomic<unsigned> nondet_calls{0};

/* A sum of nterms terms: one accumulator in term order (deterministic), or
 * two accumulators split at `cut` and added at the end (non-deterministic
 * algorithms: the cut changes with every call and element). */
template <class Acc>
struct Sum {
  Acc a = 0, b = 0;
  int cut;
  void add(int t, Acc v) {
    if (t < cut)
      a += v;
    else
      b += v;
  }
  Acc total() const { return a + b; }
};

template <class Acc>
void to_acc(std::vector<Acc> &out, const void *p, size_t n, const Conv &cv) {
  out.resize(n);
  for (size_t i = 0; i < n; i++) {
    Acc v = emu_lib::load<Acc>(p, i, cv.elem);
    out[i] = cv.tf32 ? (Acc)emu_lib::to_tf32((float)v) : v;
  }
}

/* out[i] = alpha * sums[i] + beta * out[i] (out not read when beta == 0). */
template <class Acc>
void finish(void *out, const std::vector<Acc> &sums, Acc alpha, Acc beta, Elem e) {
  for (size_t i = 0; i < sums.size(); i++) {
    Acc r = alpha * sums[i];
    if (beta != 0) r += beta * emu_lib::load<Acc>(out, i, e);
    emu_lib::store<Acc>(out, i, e, r);
  }
}

/* The two inputs of the kind (fwd: x, w; bwd data: dy, w; bwd filter: x, dy)
 * and the output, by the definitions (dx and dw are the adjoints of y). */
template <class Acc>
void compute(int kind, const Conv &cv, bool deterministic, const void *in0, const void *in1,
             void *out, Acc alpha, Acc beta) {
  unsigned seed = deterministic ? 0u : nondet_calls.fetch_add(1) * 2654435761u + 12345u;
  auto cut_for = [&](size_t i, int nterms) {
    return deterministic ? nterms : (int)((seed + (unsigned)i * 40503u) % (unsigned)(nterms + 1));
  };
  auto tap = [&](int r, int R) { return cv.flip ? R - 1 - r : r; };
  std::vector<Acc> a, b, sums;
  if (kind == K_FWD) {
    to_acc(a, in0, cv.x_elems(), cv); /* x */
    to_acc(b, in1, cv.w_elems(), cv); /* w */
    sums.assign(cv.y_elems(), 0);
    int nterms = cv.Cg * cv.R * cv.S;
    size_t i = 0;
    for (int n = 0; n < cv.N; n++)
      for (int k = 0; k < cv.K; k++)
        for (int p = 0; p < cv.P; p++)
          for (int q = 0; q < cv.Q; q++, i++) {
            Sum<Acc> s;
            s.cut = cut_for(i, nterms);
            int g = k / cv.Kg;
            for (int c = 0; c < cv.Cg; c++)
              for (int r = 0; r < cv.R; r++) {
                int ih = p * cv.sh - cv.ph + r * cv.dh;
                if (ih < 0 || ih >= cv.H) continue;
                for (int t = 0; t < cv.S; t++) {
                  int iw = q * cv.sw - cv.pw + t * cv.dw;
                  if (iw < 0 || iw >= cv.W) continue;
                  Acc xv = a[(((size_t)n * cv.C + (size_t)g * cv.Cg + c) * cv.H + ih) * cv.W + iw];
                  Acc wv = b[(((size_t)k * cv.Cg + c) * cv.R + tap(r, cv.R)) * cv.S + tap(t, cv.S)];
                  s.add((c * cv.R + r) * cv.S + t, xv * wv);
                }
              }
            sums[i] = s.total();
          }
  } else if (kind == K_BWD_DATA) {
    to_acc(a, in0, cv.y_elems(), cv); /* dy */
    to_acc(b, in1, cv.w_elems(), cv); /* w */
    sums.assign(cv.x_elems(), 0);
    int nterms = cv.Kg * cv.R * cv.S;
    size_t i = 0;
    for (int n = 0; n < cv.N; n++)
      for (int c = 0; c < cv.C; c++)
        for (int h = 0; h < cv.H; h++)
          for (int wi = 0; wi < cv.W; wi++, i++) {
            Sum<Acc> s;
            s.cut = cut_for(i, nterms);
            int g = c / cv.Cg, cc = c - g * cv.Cg;
            for (int kk = 0; kk < cv.Kg; kk++)
              for (int r = 0; r < cv.R; r++) {
                int hp = h + cv.ph - r * cv.dh; /* = p * sh for the output row p that reads h */
                if (hp < 0 || hp % cv.sh != 0 || hp / cv.sh >= cv.P) continue;
                for (int t = 0; t < cv.S; t++) {
                  int wq = wi + cv.pw - t * cv.dw;
                  if (wq < 0 || wq % cv.sw != 0 || wq / cv.sw >= cv.Q) continue;
                  int k = g * cv.Kg + kk;
                  Acc dy = a[(((size_t)n * cv.K + k) * cv.P + hp / cv.sh) * cv.Q + wq / cv.sw];
                  Acc wv =
                      b[(((size_t)k * cv.Cg + cc) * cv.R + tap(r, cv.R)) * cv.S + tap(t, cv.S)];
                  s.add((kk * cv.R + r) * cv.S + t, dy * wv);
                }
              }
            sums[i] = s.total();
          }
  } else {
    to_acc(a, in0, cv.x_elems(), cv); /* x */
    to_acc(b, in1, cv.y_elems(), cv); /* dy */
    sums.assign(cv.w_elems(), 0);
    int nterms = cv.N * cv.P * cv.Q;
    size_t i = 0;
    for (int k = 0; k < cv.K; k++)
      for (int c = 0; c < cv.Cg; c++)
        for (int rr = 0; rr < cv.R; rr++)
          for (int tt = 0; tt < cv.S; tt++, i++) {
            Sum<Acc> s;
            s.cut = cut_for(i, nterms);
            int g = k / cv.Kg, r = tap(rr, cv.R),
                t = tap(tt, cv.S); /* the tap w[k][c][rr][tt] serves */
            for (int n = 0; n < cv.N; n++)
              for (int p = 0; p < cv.P; p++) {
                int ih = p * cv.sh - cv.ph + r * cv.dh;
                if (ih < 0 || ih >= cv.H) continue;
                for (int q = 0; q < cv.Q; q++) {
                  int iw = q * cv.sw - cv.pw + t * cv.dw;
                  if (iw < 0 || iw >= cv.W) continue;
                  Acc xv = a[(((size_t)n * cv.C + (size_t)g * cv.Cg + c) * cv.H + ih) * cv.W + iw];
                  Acc dy = b[(((size_t)n * cv.K + k) * cv.P + p) * cv.Q + q];
                  s.add((n * cv.P + p) * cv.Q + q, xv * dy);
                }
              }
            sums[i] = s.total();
          }
  }
  finish(out, sums, alpha, beta, cv.elem);
}

/* One convolution call: validation in cuDNN's order of categories, the
 * device-memory checks, then the computation. in0/in1/out as compute(). */
cudnnStatus_t convolve(int kind, cudnnHandle_t h, const void *alpha, const cudnnTensorStruct *x,
                       const cudnnFilterStruct *w, const cudnnConvolutionStruct *cd,
                       const cudnnTensorStruct *y, int algo, void *ws, size_t ws_size,
                       const void *beta, const void *in0, const void *in1, void *out) {
  const char *fn = kind_fn[kind];
  Conv cv;
  cudnnStatus_t s = describe(fn, h, x, w, cd, y, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (!alpha || !beta) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null alpha or beta");
  static const char *const names[3][3] = {{"x", "w", "y"}, {"dy", "w", "dx"}, {"x", "dy", "dw"}};
  const void *ptrs[3] = {in0, in1, out};
  for (int i = 0; i < 3; i++)
    if (!ptrs[i]) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null %s", names[kind][i]);
  const Algo *a = find_algo(kind, algo);
  if (!a) return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown algorithm %d", algo);
  if ((s = algo_support(fn, *a, cv)) != CUDNN_STATUS_SUCCESS) return s;
  size_t need = workspace_bytes(*a, cv);
  if (need > 0 && !ws)
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "CUDNN_CONVOLUTION_%s needs a %zu-byte workspace, got none", a->name, need);
  if (ws_size < need)
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "CUDNN_CONVOLUTION_%s needs a %zu-byte workspace, got %zu", a->name, need, ws_size);

  /* the memory the call touches, as a GPU would: every element of the three
   * tensors and the workspace handed over */
  size_t es = emu_lib::elem_size(cv.elem);
  const size_t elems[3][3] = {{cv.x_elems(), cv.w_elems(), cv.y_elems()},
                              {cv.y_elems(), cv.w_elems(), cv.x_elems()},
                              {cv.x_elems(), cv.y_elems(), cv.w_elems()}};
  char what[96];
  for (int i = 0; i < 3; i++) {
    snprintf(what, sizeof what, "%s %s", fn, names[kind][i]);
    if (!emu_lib_check_device(ptrs[i], elems[kind][i] * es, what))
      return fail(CUDNN_STATUS_BAD_PARAM, fn, "%s %p is not device memory", names[kind][i],
                  ptrs[i]);
  }
  if (ws && ws_size > 0) {
    snprintf(what, sizeof what, "%s workspace", fn);
    if (!emu_lib_check_device(ws, ws_size, what))
      return fail(CUDNN_STATUS_BAD_PARAM, fn, "the workspace %p is not device memory", ws);
  }
  if (a->cond == ALIGNED16)
    for (int i = 0; i < 3; i++)
      if ((uintptr_t)ptrs[i] % 16 != 0)
        return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, fn,
                    "CUDNN_CONVOLUTION_%s needs 16-byte aligned data, %s is %p", a->name,
                    names[kind][i], ptrs[i]);

  bool det = a->deterministic;
  cudaStream_t stream = ((const cudnnContext *)h)->stream;
  if (cv.dbl) {
    double al = *(const double *)alpha, be = *(const double *)beta;
    emu_lib_enqueue(stream, fn, [=] {
      if (need > 0) memset(ws, 0xa5, need); /* the algorithm's scratch: garbage afterwards */
      compute<double>(kind, cv, det, in0, in1, out, al, be);
    });
  } else {
    float al = *(const float *)alpha, be = *(const float *)beta;
    emu_lib_enqueue(stream, fn, [=] {
      if (need > 0) memset(ws, 0xa5, need);
      compute<float>(kind, cv, det, in0, in1, out, al, be);
    });
  }
  last_algo[kind] = algo;
  return CUDNN_STATUS_SUCCESS;
}

/* Descriptor lookups for the setters: live and of the right kind. */
template <class T>
T *obj(const void *p, Obj o) {
  return live_is(p, o) ? (T *)p : nullptr;
}

bool check_4d(const char *fn, cudnnTensorFormat_t format, cudnnDataType_t type, int n, int c, int h,
              int w, cudnnStatus_t *s) {
  if (!known_type(type)) {
    *s = fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown data type %d", (int)type);
    return false;
  }
  if ((int)format < CUDNN_TENSOR_NCHW || (int)format > CUDNN_TENSOR_NCHW_VECT_C) {
    *s = fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown format %d", (int)format);
    return false;
  }
  if (n < 1 || c < 1 || h < 1 || w < 1) {
    *s = fail(CUDNN_STATUS_BAD_PARAM, fn, "dims (%d, %d, %d, %d) must be >= 1", n, c, h, w);
    return false;
  }
  if ((int64_t)n * c * h * w > INT32_MAX) {
    *s = fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "(%d, %d, %d, %d) exceeds 2^31 - 1 elements", n, c, h,
              w);
    return false;
  }
  if (format != CUDNN_TENSOR_NCHW) {
    *s = fail(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, fn, "only NCHW is emulated");
    return false;
  }
  return true;
}

}  // namespace

extern "C" {

int emu_cudnn_last_algo(int kind) { return kind >= 0 && kind < 3 ? last_algo[kind] : -1; }

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUDNN_MAJOR;
      return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUDNN_MINOR;
      return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUDNN_PATCHLEVEL;
      return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}

const char *cudnnGetErrorString(cudnnStatus_t status) {
  EMU_CALL();
  switch (status) {
#define NAME(s) \
  case s:       \
    return #s;
    NAME(CUDNN_STATUS_SUCCESS)
    NAME(CUDNN_STATUS_NOT_INITIALIZED)
    NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_DEPRECATED)
    NAME(CUDNN_STATUS_LICENSE_ERROR)
    NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    NAME(CUDNN_STATUS_BAD_PARAM)
    NAME(CUDNN_STATUS_INVALID_VALUE)
    NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    NAME(CUDNN_STATUS_INTERNAL_ERROR)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    NAME(CUDNN_STATUS_EXECUTION_FAILED)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef NAME
  }
  return "CUDNN_STATUS_UNKNOWN";
}

void cudnnGetLastErrorString(char *message, size_t max_size) {
  EMU_CALL();
  if (!message || max_size == 0) return;
  snprintf(message, max_size, "%s", last_msg);
  last_msg[0] = 0;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  EMU_CALL();
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate", "null handle pointer");
  cudnnContext *h = new (std::nothrow) cudnnContext();
  if (!h)
    return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreate",
                "out of host memory");
  live_add(h, OBJ_HANDLE);
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  EMU_CALL();
  if (!live_remove(handle, OBJ_HANDLE))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "invalid handle");
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  EMU_CALL();
  cudnnContext *h = obj<cudnnContext>(handle, OBJ_HANDLE);
  if (!h) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "invalid handle");
  h->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Descriptors ---------------------------------------------------------------------- */

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc) {
  EMU_CALL();
  if (!tensorDesc)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor", "null pointer");
  cudnnTensorStruct *d = new (std::nothrow) cudnnTensorStruct();
  if (!d)
    return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreateTensorDescriptor",
                "no memory");
  live_add(d, OBJ_TENSOR);
  *tensorDesc = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                         cudnnTensorFormat_t format, cudnnDataType_t dataType,
                                         int n, int c, int h, int w) {
  EMU_CALL();
  const char *fn = "cudnnSetTensor4dDescriptor";
  cudnnTensorStruct *d = obj<cudnnTensorStruct>(tensorDesc, OBJ_TENSOR);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid tensor descriptor");
  cudnnStatus_t s;
  if (!check_4d(fn, format, dataType, n, c, h, w, &s)) return s;
  d->set = true, d->type = dataType, d->n = n, d->c = c, d->h = h, d->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  EMU_CALL();
  if (!tensorDesc) return CUDNN_STATUS_SUCCESS; /* cuDNN: destroying NULL is a no-op */
  if (!live_remove(tensorDesc, OBJ_TENSOR))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyTensorDescriptor",
                "invalid tensor descriptor");
  delete tensorDesc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc) {
  EMU_CALL();
  if (!filterDesc)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateFilterDescriptor", "null pointer");
  cudnnFilterStruct *d = new (std::nothrow) cudnnFilterStruct();
  if (!d)
    return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreateFilterDescriptor",
                "no memory");
  live_add(d, OBJ_FILTER);
  *filterDesc = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc,
                                         cudnnDataType_t dataType, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  EMU_CALL();
  const char *fn = "cudnnSetFilter4dDescriptor";
  cudnnFilterStruct *d = obj<cudnnFilterStruct>(filterDesc, OBJ_FILTER);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid filter descriptor");
  cudnnStatus_t s;
  if (!check_4d(fn, format, dataType, k, c, h, w, &s)) return s;
  d->set = true, d->type = dataType, d->k = k, d->c = c, d->h = h, d->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  EMU_CALL();
  if (!filterDesc) return CUDNN_STATUS_SUCCESS;
  if (!live_remove(filterDesc, OBJ_FILTER))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyFilterDescriptor",
                "invalid filter descriptor");
  delete filterDesc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc) {
  EMU_CALL();
  if (!convDesc)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor", "null pointer");
  cudnnConvolutionStruct *d = new (std::nothrow) cudnnConvolutionStruct();
  if (!d)
    return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                "cudnnCreateConvolutionDescriptor", "no memory");
  live_add(d, OBJ_CONV);
  *convDesc = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  EMU_CALL();
  if (!convDesc) return CUDNN_STATUS_SUCCESS;
  if (!live_remove(convDesc, OBJ_CONV))
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyConvolutionDescriptor",
                "invalid convolution descriptor");
  delete convDesc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  EMU_CALL();
  const char *fn = "cudnnSetConvolution2dDescriptor";
  cudnnConvolutionStruct *d = obj<cudnnConvolutionStruct>(convDesc, OBJ_CONV);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid convolution descriptor");
  if (pad_h < 0 || pad_w < 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "padding %dx%d < 0", pad_h, pad_w);
  if (u < 1 || v < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "stride %dx%d < 1", u, v);
  if (dilation_h < 1 || dilation_w < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "dilation %dx%d < 1", dilation_h, dilation_w);
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown mode %d", (int)mode);
  if (!known_type(computeType))
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown compute type %d", (int)computeType);
  d->set = true;
  d->pad_h = pad_h, d->pad_w = pad_w, d->u = u, d->v = v, d->dil_h = dilation_h,
  d->dil_w = dilation_w;
  d->mode = mode, d->compute = computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  EMU_CALL();
  const char *fn = "cudnnSetConvolutionGroupCount";
  cudnnConvolutionStruct *d = obj<cudnnConvolutionStruct>(convDesc, OBJ_CONV);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid convolution descriptor");
  if (groupCount < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "group count %d < 1", groupCount);
  d->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                          cudnnMathType_t mathType) {
  EMU_CALL();
  const char *fn = "cudnnSetConvolutionMathType";
  cudnnConvolutionStruct *d = obj<cudnnConvolutionStruct>(convDesc, OBJ_CONV);
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid convolution descriptor");
  if ((int)mathType < CUDNN_DEFAULT_MATH || (int)mathType > CUDNN_FMA_MATH)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown math type %d", (int)mathType);
  d->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc,
                                                    int *n, int *c, int *h, int *w) {
  EMU_CALL();
  const char *fn = "cudnnGetConvolution2dForwardOutputDim";
  const cudnnConvolutionStruct *cd = obj<const cudnnConvolutionStruct>(convDesc, OBJ_CONV);
  const cudnnTensorStruct *x = obj<const cudnnTensorStruct>(inputTensorDesc, OBJ_TENSOR);
  const cudnnFilterStruct *f = obj<const cudnnFilterStruct>(filterDesc, OBJ_FILTER);
  if (!cd || !x || !f || !cd->set || !x->set || !f->set)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "invalid or unset descriptor");
  if (!n || !c || !h || !w) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null output pointer");
  if ((int64_t)f->c * cd->groups != x->c)
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "x has %d channels, the filter %d per group x %d groups", x->c, f->c, cd->groups);
  int P, Q;
  if (!out_dim(x->h, cd->pad_h, f->h, cd->dil_h, cd->u, &P) ||
      !out_dim(x->w, cd->pad_w, f->w, cd->dil_w, cd->v, &Q))
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "the dilated %dx%d filter exceeds the padded %dx%d input", f->h, f->w, x->h, x->w);
  *n = x->n, *c = f->k, *h = P, *w = Q;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Forward ---------------------------------------------------------------------------- */

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t *perfResults) {
  EMU_CALL();
  return get_algorithms<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      "cudnnGetConvolutionForwardAlgorithm_v7", K_FWD, handle, srcDesc, filterDesc, convDesc,
      destDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes) {
  EMU_CALL();
  return get_workspace("cudnnGetConvolutionForwardWorkspaceSize", K_FWD, handle, xDesc, wDesc,
                       convDesc, yDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void *x,
                                      const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t convDesc,
                                      cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                                      size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y) {
  EMU_CALL();
  return convolve(K_FWD, handle, alpha, xDesc, wDesc, convDesc, yDesc, (int)algo, workSpace,
                  workSpaceSizeInBytes, beta, x, w, y);
}

/* ---- Backward data ------------------------------------------------------------------------ */

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {
  EMU_CALL();
  return get_algorithms<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      "cudnnGetConvolutionBackwardDataAlgorithm_v7", K_BWD_DATA, handle, gradDesc, filterDesc,
      convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes) {
  EMU_CALL();
  return get_workspace("cudnnGetConvolutionBackwardDataWorkspaceSize", K_BWD_DATA, handle, dxDesc,
                       wDesc, convDesc, dyDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void *w,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                           size_t workSpaceSizeInBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx) {
  EMU_CALL();
  return convolve(K_BWD_DATA, handle, alpha, dxDesc, wDesc, convDesc, dyDesc, (int)algo, workSpace,
                  workSpaceSizeInBytes, beta, dy, w, dx);
}

/* ---- Backward filter ---------------------------------------------------------------------- */

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults) {
  EMU_CALL();
  return get_algorithms<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      "cudnnGetConvolutionBackwardFilterAlgorithm_v7", K_BWD_FILTER, handle, srcDesc, gradDesc,
      convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes) {
  EMU_CALL();
  return get_workspace("cudnnGetConvolutionBackwardFilterWorkspaceSize", K_BWD_FILTER, handle,
                       xDesc, gradDesc, convDesc, dyDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                             size_t workSpaceSizeInBytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwDesc, void *dw) {
  EMU_CALL();
  return convolve(K_BWD_FILTER, handle, alpha, xDesc, dwDesc, convDesc, dyDesc, (int)algo,
                  workSpace, workSpaceSizeInBytes, beta, x, dy, dw);
}

}  // extern "C"
