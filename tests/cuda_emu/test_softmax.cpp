/* ct__cuda_softmax and ct__cuda_softmax_backward (softmax.cu,
 * softmax_backward.cu) under the emulator, against double-precision host
 * references: softmax and log_softmax forward and backward, f32/f64/f16/bf16,
 * contiguous lines (warp lines up to 2048 elements, block lines beyond; every
 * start within 16 bytes, inputs at different phases) and strided lines of
 * any dim, out aliasing x (forward) or grad_out (backward), nan/inf lines. */
#include <algorithm>

#include "emu_test.h"

using namespace et;

static double tol(int dt) {
  return dt == CT_F64 ? 1e-12 : dt == CT_F32 ? 2e-6 : dt == CT_F16 ? 2e-3 : 1.6e-2;
}

static long nvec_warp, nvec_block, ngeneric;

/* x (or y for backward) of shape; out, grad_out laid out independently or aliased. */
static void one(int dt, const std::vector<int64_t> &shape, int dim, bool permute, int64_t xoff,
                int64_t ooff, bool alias, int mode, bool log_, bool bw, const char *tag) {
  int nd = (int)shape.size();
  Tensor x, o, g;
  Layout lx, lo, lg;
  lx.perm = permute;
  lx.off = xoff;
  lo.perm = permute && coin(2);
  lo.off = ooff;
  lg.perm = lx.perm;
  lg.off = (xoff + (coin(2) ? 0 : 3)) % 8;
  if (permute && coin(2)) { /* gaps and negative strides: the generic kernels */
    lx.gaps = coin(2), lx.flips = coin(2);
    lo.gaps = coin(2), lo.flips = coin(2);
    lg.gaps = coin(2), lg.flips = coin(2);
  }
  make(x, dt, shape, lx);
  int64_t N = x.numel();
  for (int64_t i = 0; i < N; i++) {
    double v;
    if (bw) {
      v = unif(0, 1); /* y: a probability, or a log-probability */
      if (log_) v = log(v);
    } else if (mode == 0) {
      v = unif(-4, 4);
    } else {
      static const double sp[] = {NAN, INFINITY, -INFINITY, -INFINITY, -INFINITY, 0,  1,
                                  -1,  2,        80,        -80,       3,         0.5};
      v = sp[rnd(0, 12)];
    }
    store_d(x.at(i), dt, v);
  }
  std::vector<double> xv((size_t)N), gv((size_t)N), want((size_t)N), scale((size_t)N);
  for (int64_t i = 0; i < N; i++) xv[(size_t)i] = x.get_d(i);
  if (bw) {
    make(g, dt, shape, lg);
    for (int64_t i = 0; i < N; i++) store_d(g.at(i), dt, unif(-1, 1));
    for (int64_t i = 0; i < N; i++) gv[(size_t)i] = g.get_d(i);
  }
  Tensor *out = alias ? (bw ? &g : &x) : &o;
  if (!alias) {
    make(o, dt, shape, lo);
    o.snapshot();
  }
  if (!alias || bw) x.snapshot();
  if (bw && !alias) g.snapshot();
  /* the reference, line by line along dim (row-major indices of x's shape) */
  int64_t n = shape[(size_t)dim], inner = 1;
  for (int d = dim + 1; d < nd; d++) inner *= shape[(size_t)d];
  for (int64_t L = 0; n > 0 && L < N / n; L++) {
    int64_t ob = (L / inner) * n * inner + L % inner;
    auto at = [&](int64_t r) { return (size_t)(ob + r * inner); };
    if (!bw) {
      double m = -INFINITY, s = 0;
      for (int64_t r = 0; r < n; r++)
        m = (xv[at(r)] > m || xv[at(r)] != xv[at(r)]) && m == m ? xv[at(r)] : m;
      for (int64_t r = 0; r < n; r++) s += exp(xv[at(r)] - m);
      for (int64_t r = 0; r < n; r++) {
        double d = xv[at(r)] - m;
        want[at(r)] = log_ ? d - log(s) : exp(d) / s;
        scale[at(r)] = log_ ? fabs(d) + fabs(log(s)) + 1 : 0;
      }
    } else {
      double acc = 0, sa = 0;
      for (int64_t r = 0; r < n; r++) {
        double t = log_ ? gv[at(r)] : gv[at(r)] * xv[at(r)];
        acc += t;
        sa += fabs(t);
      }
      for (int64_t r = 0; r < n; r++) {
        double gg = gv[at(r)], y = xv[at(r)];
        want[at(r)] = log_ ? gg - exp(y) * acc : y * (gg - acc);
        scale[at(r)] = 4 * (log_ ? fabs(gg) + exp(y) * sa : fabs(y) * (fabs(gg) + sa));
      }
    }
  }
  long v0 = emu::launches("softmax_vec_kernel") + emu::launches("softmax_bw_vec_kernel");
  long g0 = emu::launches("softmax_kernel") + emu::launches("softmax_bw_kernel");
  emu::clear_message();
  ct_status s = bw ? ct__cuda_softmax_backward(ct(&out->d), ct(&g.d), ct(&x.d), dim, log_)
                   : ct__cuda_softmax(ct(&out->d), ct(&x.d), dim, log_);
  ncases++;
  bool vec = emu::launches("softmax_vec_kernel") + emu::launches("softmax_bw_vec_kernel") > v0;
  if (vec) (n <= 2048 ? nvec_warp : nvec_block)++;
  if (emu::launches("softmax_kernel") + emu::launches("softmax_bw_kernel") > g0) ngeneric++;
  long fails = nfail;
  if (s != CT_OK) failf("%s: status %d (%s)", tag, (int)s, emu::last_message());
  emu_clean(tag);
  for (int64_t i = 0; i < N && nfail == fails; i++) {
    double got = out->get_d(i), w = want[(size_t)i];
    double sc = std::max(fabs(w), scale[(size_t)i]);
    bool ok = w != w ? got != got
                     : (got == w || fabs(got - w) <= tol(dt) * sc + (dt == CT_F16 ? 6e-8 : 1e-37));
    if (!ok)
      failf("%s %s: [%ld] = %.9g, want %.9g", bw ? "backward" : "forward", tag, (long)i, got, w);
  }
  std::string ch;
  if (!alias && (ch = o.changed(false)) != "") failf("%s: out: %s", tag, ch.c_str());
  if ((!alias || bw) && (ch = x.changed(true)) != "")
    failf("%s: %s: %s", tag, bw ? "y" : "x", ch.c_str());
  if (bw && !alias && (ch = g.changed(true)) != "") failf("%s: grad_out: %s", tag, ch.c_str());
  if (nfail != fails)
    printf("   %s%s dim=%d x=%s out=%s alias=%d mode=%d sms=%d\n", log_ ? "log_softmax" : "softmax",
           bw ? " backward" : "", dim, shape_str(x.d).c_str(), shape_str(out->d).c_str(), alias,
           mode, emu::sm_count);
}

int run_softmax(void) {
  Suite su("softmax.cu, softmax_backward.cu: softmax, log_softmax, forward and backward");
  char tag[96];
  const int dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
  /* last-dim lines of many lengths, starts, phases, aliasing */
  static const int64_t ns[] = {1,    2,    3,    7,    8,    9,    16,   17,   31,   32,
                               33,   63,   64,   65,   127,  128,  129,  255,  257,  513,
                               1000, 1024, 1025, 2047, 2048, 2049, 2050, 3000, 4097, 9000};
  int reps = full ? 4 : 2;
  for (int dt : dts)
    for (int64_t n : ns)
      for (int rep = 0; rep < reps; rep++) {
        if (!full && n > 2050 && coin(2)) continue;
        std::vector<int64_t> shape = {rnd(1, n > 1000 ? 3 : 11), n};
        int vecn = 16 / es(dt);
        int64_t xoff = rnd(0, vecn - 1), ooff = coin(3) ? rnd(0, vecn - 1) : xoff;
        bool alias = coin(4), bw = coin(2), lg = coin(2);
        emu::sm_count = (int)rnd(1, 4);
        snprintf(tag, sizeof tag, "lines %s n%ld", dname(dt), (long)n);
        one(dt, shape, 1, false, xoff, ooff, alias, bw ? 0 : (int)rnd(0, 1), lg, bw, tag);
      }
  /* random shapes, any dim, permuted layouts */
  long iters = full ? 2000 : 400;
  for (long it = 0; it < iters; it++) {
    int dt = dts[rnd(0, 3)];
    int nd = (int)rnd(1, 3);
    std::vector<int64_t> shape((size_t)nd);
    int64_t tot = 1;
    for (int d = 0; d < nd; d++) shape[(size_t)d] = coin(4) ? 1 : rnd(1, 40);
    int dim = (int)rnd(0, nd - 1);
    if (coin(3)) shape[(size_t)dim] = rnd(100, 3000);
    for (int d = 0; d < nd; d++) tot *= shape[(size_t)d];
    if (tot > (full ? 100000 : 30000)) continue;
    int vecn = 16 / es(dt);
    int64_t xoff = rnd(0, vecn - 1), ooff = coin(2) ? xoff : rnd(0, vecn - 1);
    bool alias = coin(4), bw = coin(2), lg = coin(2);
    emu::sm_count = (int)rnd(1, 4);
    snprintf(tag, sizeof tag, "random #%ld", it);
    one(dt, shape, dim, coin(2), xoff, ooff, alias, bw ? 0 : (int)rnd(0, 1), lg, bw, tag);
  }
  printf("  paths: vector warp lines %ld, vector block lines %ld, generic %ld cases\n", nvec_warp,
         nvec_block, ngeneric);
  return su.end("softmax.cu,softmax_backward.cu");
}
