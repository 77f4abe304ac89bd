/* ct__cuda_batch_norm, ct__cuda_layer_norm and their backward (norm.cu) under
 * the emulator, against double-precision host references of the formulas of
 * backend/cpu/norm.c: f32/f64/f16/bf16 x (statistics f32 for the halves, the
 * running statistics f32 or x's dtype), weight/bias/statistics present or
 * absent and strided (the kernels take their element stride), training and
 * evaluation, momentum 0..1, eps 0..1, constant channels/rows (variance 0),
 * nan/inf elements; sizes across the thread counts (32..512), grid-stride
 * loops over channels/rows (1 to 4 SMs) and the 32-column tiles of layer
 * norm's grad_w/grad_b (several per block), rows == 0 (zero grad_w/grad_b);
 * batch norm's split path (few channels of many elements), with a mean 1e6
 * times the spread, and its column path (S < 32: a warp's lanes on adjacent
 * channels, many rows); layer norm's grad_w/grad_b over ranges of rows. */
#include <algorithm>

#include "emu_test.h"

using namespace et;

static const int kDts[] = {CT_F32, CT_F64, CT_F16, CT_BF16};

static int stat_dt(int dt) { return is_half(dt) ? CT_F32 : dt; }
/* the unit roundoff (x2) of the compute type: f64 for f64 x, else f32 */
static double ceps(int dt) { return dt == CT_F64 ? 0x1p-52 : 0x1p-23; }
static double tiny(int dt) {
  return dt == CT_F16 ? 6e-8 : dt == CT_BF16 ? 1e-37 : dt == CT_F32 ? 1e-43 : 1e-300;
}
/* The error of a sum of n terms, in units of ceps x the sum of their
 * magnitudes: the kernels sum in double, exact enough for the f32 compute
 * type; for f64 a serial part per thread then a tree (n / 16 + 32 is ample) */
static double sumf(int dt, int64_t n) { return dt == CT_F64 ? (double)(n / 16 + 32) : 1.0; }
/* |got - want| <= err; nan for nan, infinities exactly */
static bool near(double got, double want, double err) {
  if (want != want) return got != got;
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return fabs(got - want) <= err;
}

/* A (n,) parameter or statistic, or none (nullptr descriptor): contiguous,
 * or strided and flipped (the kernels step by its stride). */
static const ctc_t *vec(Tensor &t, bool present, int dt, int64_t n) {
  if (!present) return nullptr;
  Layout l;
  l.off = rnd(0, 3);
  if (coin(3)) l.gaps = true, l.flips = coin(2);
  make(t, dt, {n}, l);
  return &t.d;
}
static void fill_vec(Tensor &t, const ctc_t *d, double lo, double hi) {
  if (!d) return;
  for (int64_t i = 0; i < t.numel(); i++) store_d(t.at(i), t.dt(), coin(8) ? 0.0 : unif(lo, hi));
}
static double vget(const Tensor &t, const ctc_t *d, int64_t i, double dflt) {
  return d ? t.get_d(i) : dflt;
}

/* x values of one channel/row: 0 uniform around an offset, 1 small integers
 * (exact sums), 2 constant (variance 0), 3 one nan or inf among uniform,
 * 5 an offset of 1e6 against a spread of 1 (f32/f64: sum(x^2) - sum(x)^2/n
 * in double would lose the variance's leading digits) */
static void fill_line(const std::vector<char *> &at, int dt, int mode) {
  double c = mode == 5 ? (coin(2) ? 1e6 : -1e6) : coin(4) ? unif(-100, 100) : unif(-4, 4);
  double w = mode == 5 ? 1 : unif(0.05, 3);
  double k = unif(-3, 3);
  for (char *p : at) {
    double v = mode == 1 ? (double)rnd(-3, 3) : mode == 2 ? k : c + unif(-w, w);
    store_d(p, dt, v);
  }
  if (mode == 3 && !at.empty()) {
    static const double sp[] = {NAN, INFINITY, -INFINITY};
    store_d(at[(size_t)rnd(0, (int64_t)at.size() - 1)], dt, sp[rnd(0, 2)]);
  }
}

static const char *name_or(const ctc_t *d, const Tensor &t, std::string &buf) {
  buf = d ? shape_str(t.d) : std::string("none");
  return buf.c_str();
}

/* ---- Batch norm -------------------------------------------------------------------------- */

static long nbn_f, nbn_b, nln_f, nln_b;

static void bn_forward(int dt, int64_t N, int64_t C, int64_t S, bool training, int mode,
                       const char *tag) {
  int sdt = stat_dt(dt), rdt = is_half(dt) && coin(2) ? dt : sdt;
  double mom = coin(4) ? 0.1 : coin(3) ? (coin(2) ? 0.0 : 1.0) : unif(0, 1);
  /* eps = 0 only without constant channels: there the variance is 0 or a
   * rounding error of the mean (f64), invstd inf or 1e15 */
  double eps = coin(4) ? 1e-5 : coin(3) ? (mode == 2 || mode == 4 ? 1e-3 : 0.0) : unif(1e-6, 1);
  Tensor x, out, w, b, rm, rv, sm, si;
  Layout lx, lo;
  lx.off = rnd(0, 7);
  lo.off = rnd(0, 7);
  make(x, dt, {N, C, S}, lx);
  make(out, dt, {N, C, S}, lo);
  int64_t M = N * S;
  for (int64_t ch = 0; ch < C; ch++) {
    std::vector<char *> at;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) at.push_back(x.at((n * C + ch) * S + j));
    fill_line(at, dt, mode == 4 ? (int)rnd(0, 3) : mode);
  }
  const ctc_t *dw = vec(w, !coin(4), dt, C), *db = vec(b, !coin(4), dt, C);
  const ctc_t *drm = vec(rm, !training || !coin(4), rdt, C),
              *drv = vec(rv, !training || !coin(4), rdt, C);
  const ctc_t *dsm = vec(sm, !coin(8), sdt, C), *dsi = vec(si, !coin(8), sdt, C);
  fill_vec(w, dw, -2, 2);
  fill_vec(b, db, -2, 2);
  fill_vec(rm, drm, -3, 3);
  fill_vec(rv, drv, 0.01, 4);
  /* references: the statistics from the rounded inputs */
  std::vector<double> mean((size_t)C), invstd((size_t)C), rm1((size_t)C), rv1((size_t)C),
      mabs((size_t)C);
  std::vector<double> rme((size_t)C), rve((size_t)C);
  for (int64_t ch = 0; ch < C; ch++) {
    long double s = 0, ss = 0; /* the references' sums: long double */
    double sa = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) {
        double v = x.get_d((n * C + ch) * S + j);
        s += v, sa += std::isfinite(v) ? fabs(v) : 0;
      }
    double m = M > 0 ? s / (double)M : NAN;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) {
        double d = x.get_d((n * C + ch) * S + j) - m;
        ss += d * d;
      }
    mabs[(size_t)ch] = M > 0 ? sa / (double)M : 0;
    if (training) {
      mean[(size_t)ch] = m;
      invstd[(size_t)ch] = 1 / sqrt((M > 0 ? ss / (double)M : NAN) + eps);
      double r0 = vget(rm, drm, ch, 0), v0 = vget(rv, drv, ch, 0);
      double unb = M > 1 ? ss / (double)(M - 1) : NAN;
      rm1[(size_t)ch] = (1 - mom) * r0 + mom * m;
      rv1[(size_t)ch] = (1 - mom) * v0 + mom * unb;
      rme[(size_t)ch] = fabs((1 - mom) * r0) + fabs(mom * m);
      rve[(size_t)ch] = fabs((1 - mom) * v0) + fabs(mom * unb);
    } else {
      mean[(size_t)ch] = rm.get_d(ch);
      invstd[(size_t)ch] = 1 / sqrt(rv.get_d(ch) + eps);
    }
  }
  x.snapshot(), out.snapshot();
  Tensor *ins[] = {&w, &b, &rm, &rv, &sm, &si};
  const ctc_t *dins[] = {dw, db, drm, drv, dsm, dsi};
  for (int k = 0; k < 6; k++)
    if (dins[k]) ins[k]->snapshot();
  emu::clear_message();
  ct_status st = ct__cuda_batch_norm(ct(&out.d), ct(dsm), ct(dsi), ct(&x.d), ct(dw), ct(db),
                                     ct(drm), ct(drv), training, mom, eps);
  ncases++, nbn_f++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  double ce = ceps(dt), e = eps_of(dt);
  double sf = sumf(dt, M);
  for (int64_t ch = 0; ch < C && nfail == fails; ch++) {
    double m = mean[(size_t)ch], is = invstd[(size_t)ch];
    double wv = vget(w, dw, ch, 1), bv = vget(b, db, ch, 0);
    double scale = wv * is, shift = bv - m * wv * is;
    /* the kernel's mean, off by a sum's rounding (training) */
    double dmean = training ? sf * ce * mabs[(size_t)ch] : 0;
    if (dsm && !near(sm.get_d(ch), m, eps_of(sdt) * fabs(m) + 1e-11 * mabs[(size_t)ch] + tiny(sdt)))
      failf("%s: save_mean[%ld] = %.9g, want %.9g", tag, (long)ch, sm.get_d(ch), m);
    if (dsi && !near(si.get_d(ch), is, (eps_of(sdt) + 1e-9) * fabs(is)))
      failf("%s: save_invstd[%ld] = %.9g, want %.9g", tag, (long)ch, si.get_d(ch), is);
    if (training && drm &&
        !near(rm.get_d(ch), rm1[(size_t)ch],
              eps_of(rdt) * fabs(rm1[(size_t)ch]) + 1e-11 * rme[(size_t)ch] + tiny(rdt)))
      failf("%s: running_mean[%ld] = %.9g, want %.9g", tag, (long)ch, rm.get_d(ch),
            rm1[(size_t)ch]);
    if (training && drv &&
        !near(rv.get_d(ch), rv1[(size_t)ch],
              eps_of(rdt) * fabs(rv1[(size_t)ch]) + 1e-9 * rve[(size_t)ch] +
                  1e-20 * mabs[(size_t)ch] * mabs[(size_t)ch] + tiny(rdt)))
      failf("%s: running_var[%ld] = %.9g, want %.9g", tag, (long)ch, rv.get_d(ch), rv1[(size_t)ch]);
    for (int64_t n = 0; n < N && nfail == fails; n++)
      for (int64_t j = 0; j < S && nfail == fails; j++) {
        int64_t i = (n * C + ch) * S + j;
        double xv = x.get_d(i), want = xv * scale + shift, got = out.get_d(i);
        double sc = fabs(xv * scale) + fabs(shift) + fabs(m * scale);
        if (!near(got, want, (4 * ce + e) * sc + dmean * fabs(scale) + tiny(dt)))
          failf(
              "%s: out[%ld] = %.17g, want %.17g (x %.17g, channel %ld: mean %.17g invstd %.17g w "
              "%g b %g)",
              tag, (long)i, got, want, xv, (long)ch, m, is, wv, bv);
      }
  }
  std::string c;
  if ((c = x.changed(true)) != "") failf("%s: x: %s", tag, c.c_str());
  if ((c = out.changed(false)) != "") failf("%s: out: %s", tag, c.c_str());
  const char *names[] = {"weight",      "bias",      "running_mean",
                         "running_var", "save_mean", "save_invstd"};
  for (int k = 0; k < 6; k++) {
    if (!dins[k]) continue;
    bool written = k >= 4 || (k >= 2 && training);
    if ((c = ins[k]->changed(!written)) != "") failf("%s: %s: %s", tag, names[k], c.c_str());
  }
  if (nfail != fails) {
    std::string s1, s2, s3;
    printf(
        "   batch_norm %s x=%s w=%s rm=%s stats=%s training=%d momentum=%g eps=%g mode=%d sms=%d\n",
        dname(dt), shape_str(x.d).c_str(), name_or(dw, w, s1), name_or(drm, rm, s2),
        name_or(dsm, sm, s3), training, mom, eps, mode, emu::sm_count);
  }
}

static void bn_backward(int dt, int64_t N, int64_t C, int64_t S, bool training, int mode,
                        const char *tag) {
  int sdt = stat_dt(dt);
  Tensor x, g, w, sm, si, gx, gw, gb;
  Layout lx, lg, lgx;
  lx.off = rnd(0, 7), lg.off = rnd(0, 7), lgx.off = rnd(0, 7);
  make(x, dt, {N, C, S}, lx);
  make(g, dt, {N, C, S}, lg);
  int64_t M = N * S;
  for (int64_t ch = 0; ch < C; ch++) {
    std::vector<char *> at;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) at.push_back(x.at((n * C + ch) * S + j));
    fill_line(at, dt, mode == 3 ? (coin(3) ? 3 : 0) : mode);
  }
  for (int64_t i = 0; i < g.numel(); i++) store_d(g.at(i), dt, coin(10) ? 0.0 : unif(-2, 2));
  bool want_gx = !coin(4), want_gw = !coin(3), want_gb = !coin(3);
  if (!want_gx && !want_gw && !want_gb) want_gx = true;
  if (want_gx) make(gx, dt, {N, C, S}, lgx);
  const ctc_t *dw = vec(w, !coin(4), dt, C), *dsm = vec(sm, true, sdt, C),
              *dsi = vec(si, true, sdt, C);
  const ctc_t *dgw = vec(gw, want_gw, dt, C), *dgb = vec(gb, want_gb, dt, C);
  fill_vec(w, dw, -2, 2);
  /* the saved statistics: the batch's (training) or running ones (evaluation) */
  for (int64_t ch = 0; ch < C; ch++) {
    long double s = 0, ss = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) s += x.get_d((n * C + ch) * S + j);
    double m = M > 0 ? s / (double)M : 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) {
        double d = x.get_d((n * C + ch) * S + j) - m;
        ss += d * d;
      }
    double v = M > 0 ? ss / (double)M : 1;
    if (!training) m = unif(-3, 3), v = unif(0.1, 4);
    store_d(sm.at(ch), sdt, m);
    store_d(si.at(ch), sdt, 1 / sqrt(v + 1e-5));
  }
  x.snapshot(), g.snapshot(), sm.snapshot(), si.snapshot();
  if (dw) w.snapshot();
  if (want_gx) gx.snapshot();
  if (dgw) gw.snapshot();
  if (dgb) gb.snapshot();
  emu::clear_message();
  ct_status st =
      ct__cuda_batch_norm_backward(want_gx ? ct(&gx.d) : nullptr, ct(dgw), ct(dgb), ct(&g.d),
                                   ct(&x.d), ct(dw), ct(dsm), ct(dsi), training);
  ncases++, nbn_b++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  double ce = ceps(dt), e = eps_of(dt);
  for (int64_t ch = 0; ch < C && nfail == fails; ch++) {
    double m = sm.get_d(ch), is = si.get_d(ch), wv = vget(w, dw, ch, 1);
    long double lsg = 0, lsgx = 0;
    double sga = 0, sgxa = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < S; j++) {
        int64_t i = (n * C + ch) * S + j;
        double gv = g.get_d(i), d = x.get_d(i) - m;
        lsg += gv, lsgx += gv * d, sga += fabs(gv), sgxa += fabs(gv * d);
      }
    double sg = (double)lsg, sgx = (double)lsgx;
    if (dgw && !near(gw.get_d(ch), sgx * is,
                     e * fabs(sgx * is) + sumf(dt, M) * ce * sgxa * fabs(is) + tiny(dt)))
      failf("%s: grad_w[%ld] = %.9g, want %.9g", tag, (long)ch, gw.get_d(ch), sgx * is);
    if (dgb && !near(gb.get_d(ch), sg, e * fabs(sg) + sumf(dt, M) * ce * sga + tiny(dt)))
      failf("%s: grad_b[%ld] = %.9g, want %.9g", tag, (long)ch, gb.get_d(ch), sg);
    if (!want_gx) continue;
    double k = wv * is, dm = training ? sg / (double)M : 0,
           dv = training ? is * is * sgx / (double)M : 0;
    /* dm and dv: sums of M terms (their magnitudes: the error's scale) */
    double sf = sumf(dt, M), adm = training ? sf * sga / (double)M : 0;
    double adv = training ? sf * is * is * sgxa / (double)M : 0;
    for (int64_t n = 0; n < N && nfail == fails; n++)
      for (int64_t j = 0; j < S && nfail == fails; j++) {
        int64_t i = (n * C + ch) * S + j;
        double gv = g.get_d(i), xv = x.get_d(i);
        double want = k * (gv - dm - (xv - m) * dv), got = gx.get_d(i);
        double sc = fabs(k) * (fabs(gv) + adm + (fabs(xv) + fabs(m)) * adv);
        if (!near(got, want, (6 * ce + e) * sc + tiny(dt)))
          failf(
              "%s: grad_x[%ld] = %.9g, want %.9g (g %.9g x %.9g, channel %ld: mean %.9g invstd "
              "%.9g)",
              tag, (long)i, got, want, gv, xv, (long)ch, m, is);
      }
  }
  std::string c;
  if ((c = x.changed(true)) != "") failf("%s: x: %s", tag, c.c_str());
  if ((c = g.changed(true)) != "") failf("%s: grad_out: %s", tag, c.c_str());
  if ((c = sm.changed(true)) != "") failf("%s: save_mean: %s", tag, c.c_str());
  if ((c = si.changed(true)) != "") failf("%s: save_invstd: %s", tag, c.c_str());
  if (dw && (c = w.changed(true)) != "") failf("%s: weight: %s", tag, c.c_str());
  if (want_gx && (c = gx.changed(false)) != "") failf("%s: grad_x: %s", tag, c.c_str());
  if (dgw && (c = gw.changed(false)) != "") failf("%s: grad_w: %s", tag, c.c_str());
  if (dgb && (c = gb.changed(false)) != "") failf("%s: grad_b: %s", tag, c.c_str());
  if (nfail != fails) {
    std::string s1, s2, s3;
    printf(
        "   batch_norm_backward %s x=%s w=%s grad_w=%s grad_b=%s grad_x=%d training=%d mode=%d "
        "sms=%d\n",
        dname(dt), shape_str(x.d).c_str(), name_or(dw, w, s1), name_or(dgw, gw, s2),
        name_or(dgb, gb, s3), want_gx, training, mode, emu::sm_count);
  }
}

/* ---- Layer norm -------------------------------------------------------------------------- */

/* x: lead dims then the normalized dims (cols = their product) */
struct LnShape {
  std::vector<int64_t> x, w;
  int64_t rows, cols;
};
static LnShape ln_shape(int64_t rows, int64_t cols) {
  LnShape s;
  s.rows = rows, s.cols = cols;
  /* rows as 1 or 2 dims, cols as 1 or 2 dims (the weight then 2-d, contiguous) */
  if (rows > 0 && rows % 3 == 0 && coin(2))
    s.x = {3, rows / 3};
  else
    s.x = {rows};
  if (cols % 4 == 0 && coin(3))
    s.w = {4, cols / 4};
  else
    s.w = {cols};
  s.x.insert(s.x.end(), s.w.begin(), s.w.end());
  return s;
}
static const ctc_t *wvec(Tensor &t, bool present, int dt, const LnShape &s) {
  if (!present) return nullptr;
  if (s.w.size() == 1) return vec(t, true, dt, s.cols);
  Layout l;
  l.off = rnd(0, 3);
  make(t, dt, s.w, l);
  return &t.d;
}

static void ln_forward(int dt, int64_t rows, int64_t cols, int mode, const char *tag) {
  int sdt = stat_dt(dt);
  double eps = coin(3) ? 1e-5 : coin(2) ? (mode == 2 || mode == 4 ? 1e-2 : 0.0) : unif(1e-6, 1);
  LnShape sh = ln_shape(rows, cols);
  Tensor x, out, w, b, mean, rstd;
  Layout lx, lo;
  lx.off = rnd(0, 7), lo.off = rnd(0, 7);
  make(x, dt, sh.x, lx);
  make(out, dt, sh.x, lo);
  for (int64_t r = 0; r < rows; r++) {
    std::vector<char *> at;
    for (int64_t j = 0; j < cols; j++) at.push_back(x.at(r * cols + j));
    fill_line(at, dt, mode == 4 ? (int)rnd(0, 3) : mode);
  }
  const ctc_t *dw = wvec(w, !coin(4), dt, sh), *db = wvec(b, !coin(4), dt, sh);
  const ctc_t *dm = vec(mean, !coin(8), sdt, rows), *dr = vec(rstd, !coin(8), sdt, rows);
  fill_vec(w, dw, -2, 2);
  fill_vec(b, db, -2, 2);
  x.snapshot(), out.snapshot();
  if (dw) w.snapshot();
  if (db) b.snapshot();
  if (dm) mean.snapshot();
  if (dr) rstd.snapshot();
  emu::clear_message();
  ct_status st =
      ct__cuda_layer_norm(ct(&out.d), ct(dm), ct(dr), ct(&x.d), ct(dw), ct(db), cols, eps);
  ncases++, nln_f++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  double ce = ceps(dt), e = eps_of(dt);
  for (int64_t r = 0; r < rows && nfail == fails; r++) {
    long double s = 0, ss = 0;
    double sa = 0;
    for (int64_t j = 0; j < cols; j++) {
      double v = x.get_d(r * cols + j);
      s += v, sa += std::isfinite(v) ? fabs(v) : 0;
    }
    double m = s / (double)cols;
    for (int64_t j = 0; j < cols; j++)
      ss += (x.get_d(r * cols + j) - m) * (x.get_d(r * cols + j) - m);
    double k = 1 / sqrt(ss / (double)cols + eps);
    double dmean =
        sumf(dt, cols) * ce * sa / (double)cols; /* the kernel's mean: a sum's rounding */
    if (dm &&
        !near(mean.get_d(r), m, eps_of(sdt) * fabs(m) + 1e-11 * sa / (double)cols + tiny(sdt)))
      failf("%s: mean[%ld] = %.9g, want %.9g", tag, (long)r, mean.get_d(r), m);
    if (dr && !near(rstd.get_d(r), k, (eps_of(sdt) + 1e-9) * fabs(k)))
      failf("%s: rstd[%ld] = %.9g, want %.9g", tag, (long)r, rstd.get_d(r), k);
    for (int64_t j = 0; j < cols && nfail == fails; j++) {
      double xv = x.get_d(r * cols + j), wv = vget(w, dw, j, 1), bv = vget(b, db, j, 0);
      double want = (xv - m) * k * wv + bv, got = out.get_d(r * cols + j);
      double sc = (fabs(xv) + fabs(m)) * k * fabs(wv) + fabs(bv);
      if (!near(got, want, (5 * ce + e) * sc + dmean * k * fabs(wv) + tiny(dt)))
        failf("%s: out[%ld, %ld] = %.9g, want %.9g (x %.9g mean %.9g rstd %.9g w %g b %g)", tag,
              (long)r, (long)j, got, want, xv, m, k, wv, bv);
    }
  }
  std::string c;
  if ((c = x.changed(true)) != "") failf("%s: x: %s", tag, c.c_str());
  if ((c = out.changed(false)) != "") failf("%s: out: %s", tag, c.c_str());
  if (dw && (c = w.changed(true)) != "") failf("%s: weight: %s", tag, c.c_str());
  if (db && (c = b.changed(true)) != "") failf("%s: bias: %s", tag, c.c_str());
  if (dm && (c = mean.changed(false)) != "") failf("%s: mean: %s", tag, c.c_str());
  if (dr && (c = rstd.changed(false)) != "") failf("%s: rstd: %s", tag, c.c_str());
  if (nfail != fails) {
    std::string s1, s2;
    printf("   layer_norm %s x=%s cols=%ld w=%s mean=%s eps=%g mode=%d sms=%d\n", dname(dt),
           shape_str(x.d).c_str(), (long)cols, name_or(dw, w, s1), name_or(dm, mean, s2), eps, mode,
           emu::sm_count);
  }
}

static void ln_backward(int dt, int64_t rows, int64_t cols, int mode, const char *tag) {
  int sdt = stat_dt(dt);
  LnShape sh = ln_shape(rows, cols);
  Tensor x, g, w, mean, rstd, gx, gw, gb;
  Layout lx, lg, lgx;
  lx.off = rnd(0, 7), lg.off = rnd(0, 7), lgx.off = rnd(0, 7);
  make(x, dt, sh.x, lx);
  make(g, dt, sh.x, lg);
  for (int64_t r = 0; r < rows; r++) {
    std::vector<char *> at;
    for (int64_t j = 0; j < cols; j++) at.push_back(x.at(r * cols + j));
    fill_line(at, dt, mode == 3 ? (coin(3) ? 3 : 0) : mode);
  }
  for (int64_t i = 0; i < g.numel(); i++) store_d(g.at(i), dt, coin(10) ? 0.0 : unif(-2, 2));
  bool want_gx = !coin(4), want_gw = !coin(3), want_gb = !coin(3);
  if (!want_gx && !want_gw && !want_gb) want_gw = true;
  if (want_gx) make(gx, dt, sh.x, lgx);
  const ctc_t *dw = wvec(w, !coin(4), dt, sh);
  const ctc_t *dm = vec(mean, true, sdt, rows), *dr = vec(rstd, true, sdt, rows);
  const ctc_t *dgw = wvec(gw, want_gw, dt, sh), *dgb = wvec(gb, want_gb, dt, sh);
  fill_vec(w, dw, -2, 2);
  for (int64_t r = 0; r < rows; r++) { /* the statistics of the forward */
    long double s = 0, ss = 0;
    for (int64_t j = 0; j < cols; j++) s += x.get_d(r * cols + j);
    double m = s / (double)cols;
    for (int64_t j = 0; j < cols; j++)
      ss += (x.get_d(r * cols + j) - m) * (x.get_d(r * cols + j) - m);
    store_d(mean.at(r), sdt, m);
    store_d(rstd.at(r), sdt, 1 / sqrt(ss / (double)cols + 1e-5));
  }
  x.snapshot(), g.snapshot(), mean.snapshot(), rstd.snapshot();
  if (dw) w.snapshot();
  if (want_gx) gx.snapshot();
  if (dgw) gw.snapshot();
  if (dgb) gb.snapshot();
  emu::clear_message();
  ct_status st = ct__cuda_layer_norm_backward(want_gx ? ct(&gx.d) : nullptr, ct(dgw), ct(dgb),
                                              ct(&g.d), ct(&x.d), ct(dw), ct(dm), ct(dr), cols);
  ncases++, nln_b++;
  long fails = nfail;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  double ce = ceps(dt), e = eps_of(dt);
  std::vector<long double> sw((size_t)cols, 0.0), swa((size_t)cols, 0.0), sb((size_t)cols, 0.0),
      sba((size_t)cols, 0.0);
  for (int64_t r = 0; r < rows && nfail == fails; r++) {
    double m = mean.get_d(r), k = rstd.get_d(r);
    long double s1 = 0, s2 = 0;
    double a1 = 0, a2 = 0;
    for (int64_t j = 0; j < cols; j++) {
      double gv = g.get_d(r * cols + j), xv = x.get_d(r * cols + j), wg = gv * vget(w, dw, j, 1);
      s1 += wg, a1 += fabs(wg);
      s2 += wg * (xv - m) * k, a2 += fabs(wg * (xv - m) * k);
      sw[(size_t)j] += gv * (xv - m) * k, swa[(size_t)j] += fabs(gv * (xv - m) * k);
      sb[(size_t)j] += gv, sba[(size_t)j] += fabs(gv);
    }
    if (!want_gx) continue;
    double am = s1 / (double)cols, bm = s2 / (double)cols;
    a1 *= sumf(dt, cols) / (double)cols, a2 *= sumf(dt, cols) / (double)cols;
    for (int64_t j = 0; j < cols && nfail == fails; j++) {
      double gv = g.get_d(r * cols + j), xv = x.get_d(r * cols + j), wg = gv * vget(w, dw, j, 1);
      double want = k * (wg - am - (xv - m) * k * bm), got = gx.get_d(r * cols + j);
      double sc = fabs(k) * (fabs(wg) + a1 + (fabs(xv) + fabs(m)) * fabs(k) * 2 * a2);
      if (!near(got, want, (8 * ce + e) * sc + tiny(dt)))
        failf("%s: grad_x[%ld, %ld] = %.9g, want %.9g (g %.9g x %.9g mean %.9g rstd %.9g)", tag,
              (long)r, (long)j, got, want, gv, xv, m, k);
    }
  }
  for (int64_t j = 0; j < cols && nfail == fails; j++) {
    if (dgw &&
        !near(gw.get_d(j), sw[(size_t)j],
              e * fabs(sw[(size_t)j]) + (3 + sumf(dt, rows)) * ce * swa[(size_t)j] + tiny(dt)))
      failf("%s: grad_w[%ld] = %.9g, want %.9g", tag, (long)j, gw.get_d(j), (double)sw[(size_t)j]);
    if (dgb && !near(gb.get_d(j), sb[(size_t)j],
                     e * fabs(sb[(size_t)j]) + sumf(dt, rows) * ce * sba[(size_t)j] + tiny(dt)))
      failf("%s: grad_b[%ld] = %.9g, want %.9g", tag, (long)j, gb.get_d(j), (double)sb[(size_t)j]);
  }
  std::string c;
  if ((c = x.changed(true)) != "") failf("%s: x: %s", tag, c.c_str());
  if ((c = g.changed(true)) != "") failf("%s: grad_out: %s", tag, c.c_str());
  if ((c = mean.changed(true)) != "") failf("%s: mean: %s", tag, c.c_str());
  if ((c = rstd.changed(true)) != "") failf("%s: rstd: %s", tag, c.c_str());
  if (dw && (c = w.changed(true)) != "") failf("%s: weight: %s", tag, c.c_str());
  if (want_gx && (c = gx.changed(false)) != "") failf("%s: grad_x: %s", tag, c.c_str());
  if (dgw && (c = gw.changed(false)) != "") failf("%s: grad_w: %s", tag, c.c_str());
  if (dgb && (c = gb.changed(false)) != "") failf("%s: grad_b: %s", tag, c.c_str());
  if (nfail != fails) {
    std::string s1, s2, s3;
    printf(
        "   layer_norm_backward %s x=%s cols=%ld w=%s grad_w=%s grad_b=%s grad_x=%d mode=%d "
        "sms=%d\n",
        dname(dt), shape_str(x.d).c_str(), (long)cols, name_or(dw, w, s1), name_or(dgw, gw, s2),
        name_or(dgb, gb, s3), want_gx, mode, emu::sm_count);
  }
}

/* A non-floating x: an error, nothing written. */
static void int_dtype(void) {
  Tensor x, o, s1, s2;
  make(x, CT_I32, {2, 3, 4}, Layout{});
  make(o, CT_I32, {2, 3, 4}, Layout{});
  make(s1, CT_F32, {3}, Layout{});
  make(s2, CT_F32, {3}, Layout{});
  o.snapshot(), s1.snapshot(), s2.snapshot();
  emu::clear_message();
  ct_status a = ct__cuda_batch_norm(ct(&o.d), ct(&s1.d), ct(&s2.d), ct(&x.d), nullptr, nullptr,
                                    nullptr, nullptr, true, 0.1, 1e-5);
  ct_status b =
      ct__cuda_layer_norm(ct(&o.d), nullptr, nullptr, ct(&x.d), nullptr, nullptr, 4, 1e-5);
  ct_status c = ct__cuda_batch_norm_backward(ct(&o.d), nullptr, nullptr, ct(&x.d), ct(&x.d),
                                             nullptr, ct(&s1.d), ct(&s2.d), true);
  ct_status d = ct__cuda_layer_norm_backward(ct(&o.d), nullptr, nullptr, ct(&x.d), ct(&x.d),
                                             nullptr, ct(&s1.d), ct(&s2.d), 4);
  ncases += 4;
  if (a != CT_ERR_DTYPE || b != CT_ERR_DTYPE || c != CT_ERR_DTYPE || d != CT_ERR_DTYPE)
    failf("norm of i32: statuses %d %d %d %d, want CT_ERR_DTYPE", (int)a, (int)b, (int)c, (int)d);
  emu_clean("norm i32");
  std::string ch;
  if ((ch = o.changed(true)) != "" || (ch = s1.changed(true)) != "" ||
      (ch = s2.changed(true)) != "")
    failf("norm of i32: %s", ch.c_str());
}

int run_norm(void) {
  Suite su("norm.cu: batch norm and layer norm, forward and backward");
  char tag[128];
  /* batch norm: M = N*S across the thread counts (32/128/256/512 at 128, 512, 4096) */
  static const int64_t Ms[] = {1,   2,   3,   31,  33,  64,   127,  128,
                               129, 300, 511, 512, 777, 4095, 4096, 5001};
  int reps = full ? 6 : 1;
  for (int rep = 0; rep < reps; rep++)
    for (int dt : kDts)
      for (int64_t M : Ms) {
        int64_t S = coin(3) ? 1 : M % 7 == 0 ? 7 : M % 3 == 0 ? 3 : coin(2) ? M : 1, N = M / S;
        /* many channels (the grid-stride over them) with the small blocks only: the
         * emulation's cost is blocks x threads */
        int64_t C = M >= 300 ? rnd(1, 4) : coin(3) ? rnd(33, 140) : rnd(1, 9);
        emu::sm_count = (int)rnd(1, 4);
        bool training = M > 1 && !coin(3);
        int mode = coin(3) ? (int)rnd(1, 4) : 0;
        snprintf(tag, sizeof tag, "batch_norm %s (%ld, %ld, %ld)", dname(dt), (long)N, (long)C,
                 (long)S);
        bn_forward(dt, N, C, S, training, mode, tag);
        emu::sm_count = (int)rnd(1, 4);
        snprintf(tag, sizeof tag, "batch_norm_backward %s (%ld, %ld, %ld)", dname(dt), (long)N,
                 (long)C, (long)S);
        bn_backward(dt, N, C, S, coin(4) ? false : M > 1, coin(3) ? (int)rnd(1, 3) : 0, tag);
      }
  /* the split path: few channels of >= 2048 elements, several blocks per
   * channel (statistics merged by Chan's formula, the backward pass's sums in
   * order); the large offset (mode 5) for f32/f64 */
  for (int rep = 0; rep < 3 * reps; rep++)
    for (int dt : kDts) {
      int64_t M = rnd(2048, 9000), S = coin(2) ? 1 : 64, N = (M + S - 1) / S, C = rnd(1, 3);
      emu::sm_count = (int)rnd(1, 4);
      int mode = dt == CT_F32 || dt == CT_F64 ? (coin(2) ? 5 : (int)rnd(0, 4)) : (int)rnd(0, 4);
      snprintf(tag, sizeof tag, "batch_norm split %s (%ld, %ld, %ld) mode %d", dname(dt), (long)N,
               (long)C, (long)S, mode);
      bn_forward(dt, N, C, S, !coin(5), mode, tag);
      emu::sm_count = (int)rnd(1, 4);
      snprintf(tag, sizeof tag, "batch_norm_backward split %s (%ld, %ld, %ld)", dname(dt), (long)N,
               (long)C, (long)S);
      bn_backward(dt, N, C, S, !coin(4), coin(3) ? (int)rnd(1, 3) : 0, tag);
    }
  /* the column path (S < 32): many rows of channels not a multiple of 32,
   * several tiles and ranges of rows, merged per channel over its S columns */
  for (int rep = 0; rep < 2 * reps; rep++)
    for (int dt : kDts) {
      static const int64_t Ss[] = {1, 1, 2, 5, 31};
      int64_t S = Ss[rnd(0, 4)], C = S > 2 ? rnd(3, 13) : rnd(33, 75), N = rnd(64, 64 + 1200 / S);
      emu::sm_count = (int)rnd(1, 4);
      int mode = dt == CT_F32 || dt == CT_F64 ? (coin(2) ? 5 : (int)rnd(0, 4)) : (int)rnd(0, 4);
      snprintf(tag, sizeof tag, "batch_norm columns %s (%ld, %ld, %ld) mode %d", dname(dt), (long)N,
               (long)C, (long)S, mode);
      bn_forward(dt, N, C, S, !coin(5), mode, tag);
      emu::sm_count = (int)rnd(1, 4);
      snprintf(tag, sizeof tag, "batch_norm_backward columns %s (%ld, %ld, %ld)", dname(dt),
               (long)N, (long)C, (long)S);
      bn_backward(dt, N, C, S, !coin(4), coin(3) ? (int)rnd(1, 3) : 0, tag);
    }
  /* evaluation of an empty batch: the running statistics pass through */
  for (int dt : kDts) {
    snprintf(tag, sizeof tag, "batch_norm %s N = 0", dname(dt));
    bn_forward(dt, 0, 5, 3, false, 0, tag);
  }
  /* layer norm: cols across the thread counts, rows across the grid-stride */
  static const int64_t Cs[] = {1, 2, 5, 31, 32, 33, 64, 100, 255, 256, 257, 1000, 1025, 2500};
  for (int rep = 0; rep < reps; rep++)
    for (int dt : kDts)
      for (int64_t cols : Cs) {
        int64_t rows = cols >= 1000            ? rnd(1, 3)
                       : cols < 256 && coin(3) ? rnd(129, 300)
                                               : rnd(1, 12);
        emu::sm_count = (int)rnd(1, 4);
        int mode = coin(3) ? (int)rnd(1, 4) : 0;
        snprintf(tag, sizeof tag, "layer_norm %s (%ld, %ld)", dname(dt), (long)rows, (long)cols);
        ln_forward(dt, rows, cols, mode, tag);
        emu::sm_count = (int)rnd(1, 4);
        if (cols >= 1000 && coin(2)) rows = rnd(17, 40); /* several 32-column tiles per block */
        snprintf(tag, sizeof tag, "layer_norm_backward %s (%ld, %ld)", dname(dt), (long)rows,
                 (long)cols);
        ln_backward(dt, rows, cols, coin(3) ? (int)rnd(1, 3) : 0, tag);
      }
  /* grad_w / grad_b over ranges of rows (few column tiles, many rows), the
   * ranges' sums added by a second launch */
  for (int rep = 0; rep < 2 * reps; rep++)
    for (int dt : kDts) {
      int64_t rows = rnd(128, 1100), cols = coin(2) ? rnd(1, 33) : rnd(34, 100);
      emu::sm_count = (int)rnd(1, 4);
      snprintf(tag, sizeof tag, "layer_norm_backward split %s (%ld, %ld)", dname(dt), (long)rows,
               (long)cols);
      ln_backward(dt, rows, cols, coin(3) ? (int)rnd(1, 3) : 0, tag);
    }
  /* rows == 0: grad_w and grad_b are zeros */
  for (int dt : kDts) {
    emu::sm_count = 1;
    snprintf(tag, sizeof tag, "layer_norm_backward %s rows = 0", dname(dt));
    ln_backward(dt, 0, rnd(1, 70), 0, tag);
  }
  /* no channel, no row: nothing to launch */
  {
    long l0 = emu::total_launches();
    emu::sm_count = 2;
    bn_forward(CT_F32, 3, 0, 4, true, 0, "batch_norm C = 0");
    bn_backward(CT_BF16, 3, 0, 4, true, 0, "batch_norm_backward C = 0");
    ln_forward(CT_F16, 0, 7, 0, "layer_norm rows = 0");
    if (emu::total_launches() != l0) failf("norm of empty tensors launched a kernel");
  }
  int_dtype();
  printf("  cases: batch norm %ld forward, %ld backward; layer norm %ld forward, %ld backward\n",
         nbn_f, nbn_b, nln_f, nln_b);
  return su.end("norm.cu");
}
