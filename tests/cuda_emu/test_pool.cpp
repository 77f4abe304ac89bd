/* ct__cuda_pool2d and ct__cuda_pool2d_backward (pool.cu) under the emulator,
 * against host references of backend/cpu/pool.c: max and average pooling,
 * f32/f64/f16/bf16, kernels 1..5, strides 1..4 (below, at and above the
 * kernel: inputs in no window), padding up to kernel/2, floor and ceil mode
 * (the output sizes of nn/pool.c: ceil windows past the padded image),
 * count_include_pad both ways; max: ties (the first maximum, row-major),
 * -inf windows, the first nan, the indices (with or without); backward: max
 * routed through the forward's indices (or any positions in the windows, in
 * output order as the CPU's scatter), average spread over the windows;
 * grid-stride loops (1 to 4 SMs), empty tensors, a non-floating dtype. */
#include <algorithm>

#include "emu_test.h"

using namespace et;

static const int kDts[] = {CT_F32, CT_F64, CT_F16, CT_BF16};

static double ceps(int dt) { return dt == CT_F64 ? 0x1p-52 : 0x1p-23; }
static double tiny(int dt) {
  return dt == CT_F16 ? 6e-8 : dt == CT_BF16 ? 1e-37 : dt == CT_F32 ? 1e-43 : 1e-300;
}
static bool near(double got, double want, double err) {
  if (want != want) return got != got;
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return fabs(got - want) <= err;
}

struct Geom {
  int64_t N, C, H, W, Ho, Wo;
  ct_pool2d_params p;
  bool ceil_mode;
};

/* the output size as nn/pool.c computes it; false if no window fits */
static bool out_size(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil_mode, int64_t *o) {
  int64_t span = in + 2 * pad - k;
  int64_t n = span < 0 ? -1 : (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && n > 0 && (n - 1) * s >= in + pad) n--;
  *o = n;
  return n > 0;
}
/* the window of (oh, ow) clipped to the image, and the average's divisor (pool.c) */
static void window(const Geom &g, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1, int64_t *w0,
                   int64_t *w1, int64_t *div) {
  const ct_pool2d_params &p = g.p;
  int64_t hs = oh * p.stride[0] - p.padding[0], ws = ow * p.stride[1] - p.padding[1];
  int64_t he = std::min(hs + p.kernel[0], g.H + p.padding[0]);
  int64_t we = std::min(ws + p.kernel[1], g.W + p.padding[1]);
  int64_t full = (he - hs) * (we - ws);
  hs = std::max<int64_t>(hs, 0), ws = std::max<int64_t>(ws, 0);
  he = std::min(he, g.H), we = std::min(we, g.W);
  *h0 = hs, *h1 = he, *w0 = ws, *w1 = we;
  *div = p.count_include_pad ? full : (he - hs) * (we - ws);
}

static bool random_geom(Geom &g, int64_t maxhw) {
  g.N = coin(5) ? 1 : rnd(1, 3);
  g.C = rnd(1, 4);
  g.H = rnd(1, maxhw);
  g.W = coin(4) ? g.H : rnd(1, maxhw);
  g.ceil_mode = coin(2);
  for (int i = 0; i < 2; i++) {
    g.p.kernel[i] = coin(4) ? 2 : rnd(1, 5);
    g.p.stride[i] = coin(3) ? g.p.kernel[i] : rnd(1, 4);
    g.p.padding[i] = rnd(0, g.p.kernel[i] / 2);
  }
  g.p.count_include_pad = coin(2);
  return out_size(g.H, g.p.kernel[0], g.p.stride[0], g.p.padding[0], g.ceil_mode, &g.Ho) &&
         out_size(g.W, g.p.kernel[1], g.p.stride[1], g.p.padding[1], g.ceil_mode, &g.Wo);
}

static std::string geom_str(const Geom &g) {
  char b[200];
  snprintf(b, sizeof b, "(%ld,%ld,%ld,%ld)->(%ld,%ld) k(%ld,%ld) s(%ld,%ld) p(%ld,%ld) %s%s",
           (long)g.N, (long)g.C, (long)g.H, (long)g.W, (long)g.Ho, (long)g.Wo, (long)g.p.kernel[0],
           (long)g.p.kernel[1], (long)g.p.stride[0], (long)g.p.stride[1], (long)g.p.padding[0],
           (long)g.p.padding[1], g.ceil_mode ? "ceil" : "floor",
           g.p.count_include_pad ? " count_include_pad" : "");
  return b;
}

/* x values: 0 uniform, 1 integers in -2..2 (ties), 2 with -inf and nan, 3 all -inf planes */
static void fill_x(Tensor &x, int mode) {
  int dt = x.dt();
  for (int64_t i = 0; i < x.numel(); i++) {
    double v = mode == 1 ? (double)rnd(-2, 2) : unif(-4, 4);
    if (mode == 2 && coin(5)) v = coin(3) ? NAN : -INFINITY;
    if (mode == 3) v = coin(10) ? (double)rnd(-2, 2) : -INFINITY;
    store_d(x.at(i), dt, v);
  }
}

static long nmax_f, navg_f, nmax_b, navg_b, nidx_random;

static void forward(int dt, const Geom &g, bool is_max, bool with_idx, int mode, const char *tag) {
  Tensor x, out, idx;
  Layout lx, lo, li;
  lx.off = rnd(0, 7), lo.off = rnd(0, 7), li.off = rnd(0, 3);
  make(x, dt, {g.N, g.C, g.H, g.W}, lx);
  make(out, dt, {g.N, g.C, g.Ho, g.Wo}, lo);
  if (with_idx) make(idx, CT_I64, {g.N, g.C, g.Ho, g.Wo}, li);
  fill_x(x, is_max ? mode : std::min(mode, 1));
  x.snapshot(), out.snapshot();
  if (with_idx) idx.snapshot();
  emu::clear_message();
  ct_status st =
      ct__cuda_pool2d(is_max, ct(&out.d), with_idx ? ct(&idx.d) : nullptr, ct(&x.d), &g.p);
  ncases++, (is_max ? nmax_f : navg_f)++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  double ce = ceps(dt), e = eps_of(dt);
  int64_t planes = g.N * g.C;
  for (int64_t pl = 0; pl < planes && nfail == fails; pl++)
    for (int64_t oh = 0; oh < g.Ho && nfail == fails; oh++)
      for (int64_t ow = 0; ow < g.Wo && nfail == fails; ow++) {
        int64_t h0, h1, w0, w1, div, q = (pl * g.Ho + oh) * g.Wo + ow;
        window(g, oh, ow, &h0, &h1, &w0, &w1, &div);
        auto xv = [&](int64_t h, int64_t w) { return x.get_d((pl * g.H + h) * g.W + w); };
        double got = out.get_d(q);
        if (is_max) {
          double best = -INFINITY;
          int64_t bi = h0 * g.W + w0;
          bool stop = false;
          for (int64_t h = h0; h < h1 && !stop; h++)
            for (int64_t w = w0; w < w1 && !stop; w++) {
              double v = xv(h, w);
              if (v > best || v != v) best = v, bi = h * g.W + w, stop = v != v;
            }
          if (!same_float(got, best))
            failf("%s: out[%ld] = %.9g, want %.9g (window rows %ld..%ld cols %ld..%ld)", tag, (long)q,
                  got, best, (long)h0, (long)h1, (long)w0, (long)w1);
          if (with_idx && idx.get_i(q) != bi)
            failf("%s: indices[%ld] = %ld, want %ld (value %.9g)", tag, (long)q, (long)idx.get_i(q),
                  (long)bi, best);
        } else {
          double s = 0, sa = 0;
          for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) s += xv(h, w), sa += fabs(xv(h, w));
          double want = div > 0 ? s / (double)div : NAN;
          double n = (double)((h1 - h0) * (w1 - w0));
          if (!near(got, want, (n + 2) * ce * sa / (double)div + e * fabs(want) + tiny(dt)))
            failf("%s: out[%ld] = %.9g, want %.9g (divisor %ld)", tag, (long)q, got, want, (long)div);
        }
      }
  std::string c;
  if ((c = x.changed(true)) != "") failf("%s: x: %s", tag, c.c_str());
  if ((c = out.changed(false)) != "") failf("%s: out: %s", tag, c.c_str());
  if (with_idx && (c = idx.changed(false)) != "") failf("%s: indices: %s", tag, c.c_str());
  if (nfail != fails)
    printf("   %s_pool2d %s %s x=%s indices=%d mode=%d sms=%d\n", is_max ? "max" : "avg", dname(dt),
           geom_str(g).c_str(), shape_str(x.d).c_str(), with_idx, mode, emu::sm_count);
}

static void backward(int dt, const Geom &g, bool is_max, const char *tag) {
  Tensor gx, go, idx;
  Layout lgx, lgo, li;
  lgx.off = rnd(0, 7), lgo.off = rnd(0, 7), li.off = rnd(0, 3);
  make(gx, dt, {g.N, g.C, g.H, g.W}, lgx);
  make(go, dt, {g.N, g.C, g.Ho, g.Wo}, lgo);
  for (int64_t i = 0; i < go.numel(); i++)
    store_d(go.at(i), dt, coin(8) ? (double)rnd(-2, 2) : unif(-3, 3));
  int64_t planes = g.N * g.C;
  bool random_idx = coin(3);
  if (is_max) {
    /* the forward's argmax of a random x (ties, -inf, nan), or any position in each window */
    make(idx, CT_I64, {g.N, g.C, g.Ho, g.Wo}, li);
    Tensor x;
    make(x, dt, {g.N, g.C, g.H, g.W}, Layout{});
    fill_x(x, (int)rnd(0, 3));
    for (int64_t pl = 0; pl < planes; pl++)
      for (int64_t oh = 0; oh < g.Ho; oh++)
        for (int64_t ow = 0; ow < g.Wo; ow++) {
          int64_t h0, h1, w0, w1, div, q = (pl * g.Ho + oh) * g.Wo + ow;
          window(g, oh, ow, &h0, &h1, &w0, &w1, &div);
          int64_t bi = h0 * g.W + w0;
          if (random_idx) {
            bi = rnd(h0, h1 - 1) * g.W + rnd(w0, w1 - 1);
          } else {
            double best = -INFINITY;
            bool stop = false;
            for (int64_t h = h0; h < h1 && !stop; h++)
              for (int64_t w = w0; w < w1 && !stop; w++) {
                double v = x.get_d((pl * g.H + h) * g.W + w);
                if (v > best || v != v) best = v, bi = h * g.W + w, stop = v != v;
              }
          }
          store_i(idx.at(q), CT_I64, bi);
        }
    if (random_idx) nidx_random++;
    idx.snapshot();
  }
  gx.snapshot(), go.snapshot();
  emu::clear_message();
  ct_status st =
      ct__cuda_pool2d_backward(is_max, ct(&gx.d), ct(&go.d), is_max ? ct(&idx.d) : nullptr, &g.p);
  ncases++, (is_max ? nmax_b : navg_b)++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  /* the CPU's scatter, in output order */
  int64_t HW = g.H * g.W;
  std::vector<double> want((size_t)(planes * HW), 0.0), mag((size_t)(planes * HW), 0.0);
  std::vector<int> cnt((size_t)(planes * HW), 0);
  for (int64_t pl = 0; pl < planes; pl++)
    for (int64_t oh = 0; oh < g.Ho; oh++)
      for (int64_t ow = 0; ow < g.Wo; ow++) {
        int64_t q = (pl * g.Ho + oh) * g.Wo + ow;
        double gv = go.get_d(q);
        if (is_max) {
          size_t at = (size_t)(pl * HW + idx.get_i(q));
          want[at] += gv, mag[at] += fabs(gv), cnt[at]++;
          continue;
        }
        int64_t h0, h1, w0, w1, div;
        window(g, oh, ow, &h0, &h1, &w0, &w1, &div);
        if (div <= 0) continue;
        for (int64_t h = h0; h < h1; h++)
          for (int64_t w = w0; w < w1; w++) {
            size_t at = (size_t)(pl * HW + h * g.W + w);
            want[at] += gv / (double)div, mag[at] += fabs(gv / (double)div), cnt[at]++;
          }
      }
  double ce = ceps(dt), e = eps_of(dt);
  for (int64_t i = 0; i < planes * HW && nfail == fails; i++) {
    double got = gx.get_d(i), w = want[(size_t)i];
    if (!near(got, w, (cnt[(size_t)i] + 1) * ce * mag[(size_t)i] + e * fabs(w) + tiny(dt)))
      failf("%s: grad_x[%ld] = %.9g, want %.9g (%d windows)", tag, (long)i, got, w, cnt[(size_t)i]);
  }
  std::string c;
  if ((c = gx.changed(false)) != "") failf("%s: grad_x: %s", tag, c.c_str());
  if ((c = go.changed(true)) != "") failf("%s: grad_out: %s", tag, c.c_str());
  if (is_max && (c = idx.changed(true)) != "") failf("%s: indices: %s", tag, c.c_str());
  if (nfail != fails)
    printf("   %s_pool2d_backward %s %s indices=%s sms=%d\n", is_max ? "max" : "avg", dname(dt),
           geom_str(g).c_str(), !is_max ? "none" : random_idx ? "random in the windows" : "argmax",
           emu::sm_count);
}

/* Empty tensors launch nothing; a non-floating dtype is an error. */
static void edges(void) {
  Geom g{};
  g.N = 0, g.C = 3, g.H = 4, g.W = 4, g.Ho = 2, g.Wo = 2;
  g.p.kernel[0] = g.p.kernel[1] = g.p.stride[0] = g.p.stride[1] = 2;
  long l0 = emu::total_launches();
  forward(CT_F32, g, true, true, 0, "max_pool2d N = 0");
  forward(CT_F16, g, false, false, 0, "avg_pool2d N = 0");
  backward(CT_F32, g, true, "max_pool2d_backward N = 0");
  backward(CT_BF16, g, false, "avg_pool2d_backward N = 0");
  if (emu::total_launches() != l0) failf("pool2d of empty tensors launched a kernel");
  Tensor x, o, i;
  make(x, CT_I32, {1, 1, 4, 4}, Layout{});
  make(o, CT_I32, {1, 1, 2, 2}, Layout{});
  make(i, CT_I64, {1, 1, 2, 2}, Layout{});
  o.snapshot(), i.snapshot(), x.snapshot();
  emu::clear_message();
  g.N = 1;
  ct_status a = ct__cuda_pool2d(true, ct(&o.d), ct(&i.d), ct(&x.d), &g.p);
  ct_status b = ct__cuda_pool2d(false, ct(&o.d), nullptr, ct(&x.d), &g.p);
  ct_status c = ct__cuda_pool2d_backward(true, ct(&x.d), ct(&o.d), ct(&i.d), &g.p);
  ct_status d = ct__cuda_pool2d_backward(false, ct(&x.d), ct(&o.d), nullptr, &g.p);
  ncases += 4;
  if (a != CT_ERR_DTYPE || b != CT_ERR_DTYPE || c != CT_ERR_DTYPE || d != CT_ERR_DTYPE)
    failf("pool2d of i32: statuses %d %d %d %d, want CT_ERR_DTYPE", (int)a, (int)b, (int)c, (int)d);
  emu_clean("pool2d i32");
  std::string ch;
  if ((ch = o.changed(true)) != "" || (ch = i.changed(true)) != "" || (ch = x.changed(true)) != "")
    failf("pool2d of i32: %s", ch.c_str());
}

int run_pool(void) {
  Suite su("pool.cu: max and average pooling 2-d, forward and backward");
  char tag[160];
  long iters = full ? 8000 : 1500;
  for (long it = 0; it < iters; it++) {
    Geom g;
    if (!random_geom(g, it % 50 == 0 ? 48 : 13)) continue;
    int dt = kDts[rnd(0, 3)];
    bool is_max = coin(2);
    emu::sm_count = (int)rnd(1, 4);
    snprintf(tag, sizeof tag, "%s_pool2d %s #%ld", is_max ? "max" : "avg", dname(dt), it);
    forward(dt, g, is_max, !coin(4), (int)rnd(0, 3), tag);
    emu::sm_count = (int)rnd(1, 4);
    snprintf(tag, sizeof tag, "%s_pool2d_backward %s #%ld", is_max ? "max" : "avg", dname(dt), it);
    backward(dt, g, is_max, tag);
  }
  /* the common shapes: 2x2 stride 2, 3x3 stride 2 padding 1 (every dtype, both ops) */
  for (int dt : kDts)
    for (int k = 2; k <= 3; k++)
      for (int is_max = 0; is_max < 2; is_max++) {
        Geom g;
        g.N = 2, g.C = 3, g.H = rnd(16, 33), g.W = rnd(16, 33), g.ceil_mode = coin(2);
        g.p.kernel[0] = g.p.kernel[1] = k, g.p.stride[0] = g.p.stride[1] = 2;
        g.p.padding[0] = g.p.padding[1] = k - 2, g.p.count_include_pad = coin(2);
        out_size(g.H, k, 2, k - 2, g.ceil_mode, &g.Ho);
        out_size(g.W, k, 2, k - 2, g.ceil_mode, &g.Wo);
        emu::sm_count = 1;
        snprintf(tag, sizeof tag, "%s_pool2d %s %dx%d", is_max ? "max" : "avg", dname(dt), k, k);
        forward(dt, g, is_max, true, is_max ? 1 : 0, tag);
        snprintf(tag, sizeof tag, "%s_pool2d_backward %s %dx%d", is_max ? "max" : "avg", dname(dt), k, k);
        backward(dt, g, is_max, tag);
      }
  edges();
  printf("  cases: max %ld forward, %ld backward (%ld with indices anywhere in the windows); avg %ld "
         "forward, %ld backward\n",
         nmax_f, nmax_b, nidx_random, navg_f, navg_b);
  return su.end("pool.cu");
}
