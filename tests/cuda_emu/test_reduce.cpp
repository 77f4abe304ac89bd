/* ct__cuda_reduce (reduce.cu, reduce_vec.cuh) and ct__cuda_arg_reduce
 * (arg_reduce.cu) under the emulator, against a double-precision host
 * reference: every op over every dtype it takes; rows
 * and full reductions of contiguous data at every misaligned start (the
 * 16-byte fast path: warp and block teams, splits and the wide merge), column
 * (a thread per output, or 32-output tiles split over the rows) and generic (permuted, gapped, flipped, expanded) layouts, nan/inf/-0,
 * integer wrap-around, empty reductions, several multiprocessor counts. */
#include <algorithm>

#include "emu_test.h"

using namespace et;

static const int OPS[] = {CT_ROP_SUM, CT_ROP_MEAN,      CT_ROP_PROD, CT_ROP_MAX,
                          CT_ROP_MIN, CT_ROP_LOGSUMEXP, CT_ROP_ALL,  CT_ROP_ANY,
                          CT_ROP_VAR, CT_ROP_STD,       CT_ROP_NORM};
static const char *const OPN[] = {"sum", "mean", "prod", "max", "min", "logsumexp",
                                  "all", "any",  "var",  "std", "norm"};

static double nmax(double a, double b) { return (b > a || b != b) && a == a ? b : a; }
static double nmin(double a, double b) { return (b < a || b != b) && a == a ? b : a; }

struct Ref {
  bool isint;
  double d;
  int64_t i;
};

/* The op over the values of one output (el: their addresses). */
static Ref reference(int op, int dt, const std::vector<const char *> &el, double p) {
  bool fl = is_float(dt);
  int64_t R = (int64_t)el.size();
  Ref r{false, 0, 0};
  std::vector<double> v;
  for (auto e : el) v.push_back(load_d(e, dt));
  switch (op) {
    case CT_ROP_SUM:
    case CT_ROP_MEAN:
      if (!fl) {
        uint64_t s = 0;
        for (auto e : el) s += (uint64_t)load_i(e, dt);
        r.isint = true, r.i = (int64_t)s;
        return r;
      } else {
        double s = 0;
        for (double x : v) s += x;
        r.d = op == CT_ROP_MEAN ? s / (double)R : s;
        return r;
      }
    case CT_ROP_PROD:
      if (!fl) {
        uint64_t s = 1;
        for (auto e : el) s *= (uint64_t)load_i(e, dt);
        r.isint = true, r.i = (int64_t)s;
        return r;
      } else {
        double s = 1;
        for (double x : v) s *= x;
        r.d = s;
        return r;
      }
    case CT_ROP_MAX:
    case CT_ROP_MIN:
      if (!fl) {
        int64_t s = op == CT_ROP_MAX ? INT64_MIN : INT64_MAX;
        for (auto e : el)
          s = op == CT_ROP_MAX ? std::max(s, load_i(e, dt)) : std::min(s, load_i(e, dt));
        r.isint = true, r.i = s;
        return r;
      } else {
        double s = op == CT_ROP_MAX ? -INFINITY : INFINITY;
        for (double x : v) s = op == CT_ROP_MAX ? nmax(s, x) : nmin(s, x);
        r.d = s;
        return r;
      }
    case CT_ROP_ALL:
    case CT_ROP_ANY: {
      int64_t s = op == CT_ROP_ALL;
      for (auto e : el) {
        int64_t z;
        if (is_half(dt))
          z = ((uint16_t)(uint8_t)e[0] | (uint16_t)((uint8_t)e[1] << 8)) & 0x7fff ? 1 : 0;
        else if (fl)
          z = load_d(e, dt) != 0;
        else
          z = load_i(e, dt) != 0;
        s = op == CT_ROP_ALL ? (s & z) : (s | z);
      }
      r.isint = true, r.i = s;
      return r;
    }
    case CT_ROP_LOGSUMEXP: {
      double m = -INFINITY;
      for (double x : v) m = nmax(m, x);
      double a = std::isinf(m) ? 0.0 : m, s = 0;
      for (double x : v) s += exp(x - a);
      r.d = log(s) + a;
      return r;
    }
    case CT_ROP_VAR:
    case CT_ROP_STD: {
      double s = 0;
      for (double x : v) s += x;
      double mean = s / (double)R, q = 0;
      for (double x : v) q += (x - mean) * (x - mean);
      double dof = (double)R - p, var = q / (dof > 0 ? dof : 0.0);
      r.d = op == CT_ROP_STD ? sqrt(var) : var;
      return r;
    }
    default: { /* norm */
      double c = 0;
      if (p == 0) {
        for (double x : v) c += x != 0;
      } else if (p == 1) {
        for (double x : v) c += fabs(x);
      } else if (p == INFINITY) {
        for (double x : v) c = nmax(c, fabs(x));
      } else if (p == -INFINITY) {
        c = INFINITY;
        for (double x : v) c = nmin(c, fabs(x));
      } else if (p > 0) {
        double m = 0;
        for (double x : v) m = nmax(m, fabs(x));
        if (!(m > 0 && std::isfinite(m))) {
          r.d = m;
          return r;
        }
        for (double x : v) c += pow(fabs(x) / m, p);
        r.d = m * pow(c, 1.0 / p);
        return r;
      } else {
        for (double x : v) c += pow(fabs(x), p);
        c = pow(c, 1.0 / p);
      }
      r.d = c;
      return r;
    }
  }
}

static long nfast, nblock, nthread, nwide, ncolumn;

/* One reduction: x of `shape` in layout lay, reduced over mask; out keeps dims. */
static void run_case(int op, int dt, const std::vector<int64_t> &shape, const bool *mask,
                     const Layout &lay, int datamode, double p, int odt_choice, const char *tag) {
  int nd = (int)shape.size();
  Tensor x, out;
  make(x, dt, shape, lay);
  bool fl = is_float(dt);
  for (int64_t n = 0; n < x.numel(); n++) {
    double v;
    int64_t iv;
    if (datamode == 0) {
      iv = rnd(-8, 8);
      if (dt == CT_U8 || dt == CT_BOOL) iv = coin(4) ? 0 : rnd(1, 255);
      v = (double)iv;
    } else if (datamode == 1) {
      v = unif(-2, 2);
      iv = (int64_t)rng();
    } else {
      static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -1.0, 2.0, 0.5, -3.0};
      int k = (int)rnd(0, 9);
      v = sp[k];
      iv = k == 0 ? INT64_MIN : k == 1 ? INT64_MAX : k - 4;
    }
    if (op == CT_ROP_PROD && fl && datamode != 2) {
      int k = (int)rnd(0, 19);
      v = k == 0 ? 2.0 : k == 1 ? 0.5 : k < 10 ? 1.0 : -1.0;
    }
    if (op == CT_ROP_ALL && datamode == 0 && !coin(50)) {
      iv = iv ? iv : 1;
      v = v ? v : 1;
    }
    if (dt == CT_BOOL)
      x.at(n)[0] = (char)(uint8_t)(iv & 0xff); /* any nonzero byte is true */
    else if (fl)
      store_d(x.at(n), dt, v);
    else
      store_i(x.at(n), dt, iv);
  }
  bool intres = (!fl && op != CT_ROP_MEAN && op != CT_ROP_VAR && op != CT_ROP_STD &&
                 op != CT_ROP_NORM && op != CT_ROP_LOGSUMEXP) ||
                op == CT_ROP_ALL || op == CT_ROP_ANY;
  /* out: f64/i64 (exact), or the op layer's dtype (x's for floats, bool for all/any) */
  int odt = intres ? CT_I64 : CT_F64;
  if (odt_choice == 1)
    odt = (op == CT_ROP_ALL || op == CT_ROP_ANY) ? CT_BOOL : intres ? CT_I64 : dt;
  std::vector<int64_t> oshape(shape);
  for (int k = 0; k < nd; k++)
    if (mask[k]) oshape[(size_t)k] = 1;
  Layout ol;
  ol.perm = coin(4);
  ol.off = rnd(0, 3);
  make(out, odt, oshape, ol);
  for (int64_t k = 0; k < out.numel(); k++) memset(out.at(k), 0x5a, (size_t)es(odt));
  x.snapshot();
  out.snapshot();
  long f0 = emu::launches("reduce_fast_kernel"), b0 = emu::launches("reduce_block_kernel"),
       t0 = emu::launches("reduce_thread_kernel"), w0 = emu::launches("merge_wide_kernel"),
       c0 = emu::launches("reduce_column_kernel");
  emu::clear_message();
  ct_status s = ct__cuda_reduce((ct_reduce_op)op, ct(&out.d), ct(&x.d), mask, p);
  ncases++;
  nfast += emu::launches("reduce_fast_kernel") > f0;
  nblock += emu::launches("reduce_block_kernel") > b0;
  nthread += emu::launches("reduce_thread_kernel") > t0;
  nwide += emu::launches("merge_wide_kernel") > w0;
  ncolumn += emu::launches("reduce_column_kernel") > c0;
  long fails = nfail;
  if (s != CT_OK) failf("%s: status %d (%s)", tag, (int)s, emu::last_message());
  emu_clean(tag);
  std::string ch = x.changed(true);
  if (!ch.empty()) failf("%s: x: %s", tag, ch.c_str());
  ch = out.changed(false);
  if (!ch.empty()) failf("%s: out: %s", tag, ch.c_str());
  /* compare every output */
  std::vector<int> rd;
  for (int k = 0; k < nd; k++)
    if (mask[k]) rd.push_back(k);
  int64_t R = 1;
  for (int k : rd) R *= shape[(size_t)k];
  /* exact: sums of small integers, products of +-1, +-2, 0.5 (datamode 2's -3 powers round) */
  bool exact = datamode != 1 && (op == CT_ROP_SUM || op == CT_ROP_MAX || op == CT_ROP_MIN ||
                                 (op == CT_ROP_PROD && datamode == 0) ||
                                 (op == CT_ROP_NORM && (p == 1 || p == 0 || std::isinf(p))));
  if (datamode == 1 &&
      (op == CT_ROP_MAX || op == CT_ROP_MIN || (op == CT_ROP_NORM && std::isinf(p))))
    exact = true;
  std::vector<const char *> el;
  for (int64_t k = 0; k < out.numel() && nfail == fails; k++) {
    /* x's coordinates of output k (kept dims), then its R elements */
    int64_t xo = 0, q = k;
    for (int d = nd - 1; d >= 0; d--) {
      int64_t i = q % oshape[(size_t)d];
      q /= oshape[(size_t)d];
      xo += i * x.d.strides[d];
    }
    el.clear();
    for (int64_t j = 0; j < R; j++) {
      int64_t o = xo, r = j;
      for (int t = (int)rd.size() - 1; t >= 0; t--) {
        o += (r % shape[(size_t)rd[(size_t)t]]) * x.d.strides[rd[(size_t)t]];
        r /= shape[(size_t)rd[(size_t)t]];
      }
      el.push_back(x.d.data + o * es(dt));
    }
    Ref ref = reference(op, dt, el, p);
    const char *op_ = out.at(k);
    if (odt == CT_BOOL || odt == CT_I64 || !is_float(odt)) {
      int64_t got = load_i(op_, odt), want = odt == CT_BOOL ? ref.i != 0 : ref.i;
      if (op_[0] > 1 && odt == CT_BOOL) failf("%s: out[%ld] bool byte %d", tag, (long)k, op_[0]);
      if (got != want)
        failf("%s: out[%ld] = %lld, want %lld", tag, (long)k, (long long)got, (long long)want);
    } else {
      double got = load_d(op_, odt), want = round_to(odt, ref.d);
      bool ok = exact ? same_float(got, want)
                      : close_float(got, want, odt == CT_F64 ? 1e-9 : 4 * eps_of(odt),
                                    odt == CT_F64 ? 1.0 : 1e-30);
      if (!ok && !exact && odt != CT_F64) /* the double result rounded once more */
        ok = close_float(got, ref.d, 1e-9 + 2 * eps_of(odt), 1e-30);
      if (!ok) failf("%s: out[%ld] = %.17g, want %.17g", tag, (long)k, got, want);
    }
  }
  if (nfail != fails) {
    printf("   %s over", OPN[op]);
    for (int k = 0; k < nd; k++) printf(" %s%ld", mask[k] ? "*" : "", (long)shape[(size_t)k]);
    printf(" x=%s out=%s p=%g mode=%d sms=%d\n", shape_str(x.d).c_str(), shape_str(out.d).c_str(),
           p, datamode, emu::sm_count);
  }
}

/* argmax/argmin along dim: the first extreme, the first nan wins; values
 * and/or indices (keepdim shapes, any layouts). */
static void arg_case(bool is_max, int dt, const std::vector<int64_t> &shape, int dim, int mode,
                     int which) {
  Tensor x, vals, idx;
  Layout lx;
  random_layout(lx, dt, true);
  make(x, dt, shape, lx);
  for (int64_t i = 0; i < x.numel(); i++) {
    if (dt == CT_BOOL)
      x.at(i)[0] = (char)(coin(2) ? 0 : rnd(1, 5));
    else if (is_float(dt))
      store_d(x.at(i), dt,
              mode == 0  ? (double)rnd(-3, 3)
              : coin(20) ? NAN
              : coin(20) ? -INFINITY
                         : unif(-5, 5));
    else
      store_i(x.at(i), dt, mode == 0 ? rnd(-3, 3) : (int64_t)rng());
  }
  std::vector<int64_t> os(shape);
  os[(size_t)dim] = 1;
  Layout lo;
  lo.perm = coin(3);
  lo.off = rnd(0, 2);
  bool want_v = which != 1, want_i = which != 0;
  if (want_v) make(vals, dt, os, lo);
  if (want_i) make(idx, CT_I64, os, lo);
  x.snapshot();
  if (want_v) vals.snapshot();
  if (want_i) idx.snapshot();
  char tag[96];
  snprintf(tag, sizeof tag, "%s %s dim %d n %ld", is_max ? "argmax" : "argmin", dname(dt), dim,
           (long)shape[(size_t)dim]);
  long fails = nfail;
  ct_status s = ct__cuda_arg_reduce(is_max, want_v ? ct(&vals.d) : nullptr,
                                    want_i ? ct(&idx.d) : nullptr, ct(&x.d), dim);
  ncases++;
  if (s != CT_OK) failf("%s: status %d (%s)", tag, (int)s, emu::last_message());
  emu_clean(tag);
  int nd = (int)shape.size();
  int64_t n = shape[(size_t)dim];
  int64_t on = 1;
  for (auto v : os) on *= v;
  for (int64_t k = 0; k < on && nfail == fails; k++) {
    int64_t c[CTC_MAX_DIMS], r = k, base = 0;
    for (int d = nd - 1; d >= 0; d--) {
      c[d] = r % os[(size_t)d];
      r /= os[(size_t)d];
      base += c[d] * x.d.strides[d];
    }
    int64_t bi = 0;
    const char *bp = x.d.data + base * es(dt);
    for (int64_t j = 1; j < n; j++) {
      const char *p = x.d.data + (base + j * x.d.strides[dim]) * es(dt);
      bool better;
      if (is_float(dt)) {
        double v = load_d(p, dt), b = load_d(bp, dt);
        better = b != b ? false : v != v ? true : is_max ? v > b : v < b;
      } else {
        better = is_max ? load_i(p, dt) > load_i(bp, dt) : load_i(p, dt) < load_i(bp, dt);
      }
      if (better) bi = j, bp = p;
    }
    if (want_i && idx.get_i(k) != bi)
      failf("%s: index[%ld] = %lld, want %lld", tag, (long)k, (long long)idx.get_i(k),
            (long long)bi);
    if (want_v && memcmp(vals.at(k), bp, (size_t)es(dt)) != 0 &&
        !(dt == CT_BOOL && (vals.at(k)[0] != 0) == (bp[0] != 0)))
      failf("%s: value[%ld] is not the element at the index", tag, (long)k);
  }
  std::string ch;
  if ((ch = x.changed(true)) != "") failf("%s: x: %s", tag, ch.c_str());
  if (want_v && (ch = vals.changed(false)) != "") failf("%s: values: %s", tag, ch.c_str());
  if (want_i && (ch = idx.changed(false)) != "") failf("%s: indices: %s", tag, ch.c_str());
  if (nfail != fails) printf("   x=%s sms=%d\n", shape_str(x.d).c_str(), emu::sm_count);
}

static int pick_op(int dt) {
  int op = OPS[rnd(0, 10)];
  if (!is_float(dt) && (op == CT_ROP_MEAN || op == CT_ROP_LOGSUMEXP || op == CT_ROP_VAR ||
                        op == CT_ROP_STD || op == CT_ROP_NORM))
    op = coin(2) ? CT_ROP_SUM : coin(2) ? CT_ROP_PROD : CT_ROP_MIN;
  if (dt == CT_BOOL && op != CT_ROP_ALL && op != CT_ROP_ANY && op != CT_ROP_SUM && op != CT_ROP_MAX)
    op = coin(2) ? CT_ROP_ALL : CT_ROP_ANY;
  return op;
}
static double pick_p(int op) {
  static const double norms[] = {0, 1, 2, 3, INFINITY, -INFINITY, 0.5, -1};
  return op == CT_ROP_NORM                        ? norms[rnd(0, 7)]
         : (op == CT_ROP_VAR || op == CT_ROP_STD) ? (double)rnd(0, 2)
                                                  : 0;
}

int run_reduce(void) {
  Suite su(
      "reduce.cu, arg_reduce.cu: sum mean prod max min logsumexp all any var std norm argmax "
      "argmin");
  char tag[96];
  /* 1. rows and full reductions of contiguous data, every start within 16 bytes */
  static const int64_t Rs[] = {33,   47,   64,   65,   129,  255,   257,
                               1000, 1025, 2049, 4097, 8193, 16385, 40000};
  for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
    int vec = 16 / es(dt);
    for (int64_t R : Rs)
      for (int off = 0; off < vec; off++) {
        if (!full && (off % (vec > 4 ? 3 : 1) != 0 || (R > 4097 && off > 1) || coin(2))) continue;
        int op = pick_op(dt);
        int64_t K = full ? rnd(1, 8) : (R > 2049 ? 1 : rnd(1, 5));
        std::vector<int64_t> shape = {K, R};
        bool mask[2] = {false, true};
        Layout lay;
        lay.off = off;
        emu::sm_count = (int)rnd(1, 5);
        snprintf(tag, sizeof tag, "row %s R%ld off%d K%ld", dname(dt), (long)R, off, (long)K);
        run_case(op, dt, shape, mask, lay, (int)rnd(0, 2), pick_p(op), coin(3), tag);
      }
  }
  /* 2. big single reductions: many splits and the wide merge (S >= 64 pieces) */
  struct W {
    int dt, nsm;
    int64_t R;
    int op;
  } ws[] = {{CT_F64, 11, 300001, CT_ROP_SUM},   {CT_F32, 11, 600000, CT_ROP_VAR},
            {CT_I8, 11, 2200000, CT_ROP_SUM},   {CT_F16, 12, 1200003, CT_ROP_MIN},
            {CT_F64, 20, 700000, CT_ROP_NORM},  {CT_BOOL, 11, 2200000, CT_ROP_ALL},
            {CT_F32, 132, 1048583, CT_ROP_SUM}, {CT_F64, 11, 300001, CT_ROP_MAX}};
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
    const W &w = ws[i];
    if (!full && i >= 4 && i != 5) continue;
    std::vector<int64_t> shape = {1, w.R};
    bool mask[2] = {false, true};
    Layout lay;
    lay.off = (int64_t)i % 2;
    emu::sm_count = w.nsm;
    snprintf(tag, sizeof tag, "wide %s R%ld", dname(w.dt), (long)w.R);
    run_case(w.op, w.dt, shape, mask, lay, (int)(i % 3), w.op == CT_ROP_NORM ? INFINITY : 1, 0,
             tag);
  }
  /* 3. many outputs (grid-stride over tasks), columns, empty reductions and outputs */
  struct M {
    int dt;
    int64_t s0, s1;
    int op, nsm;
    bool m0, m1;
  } ms[] = {
      {CT_F32, 3000, 40, CT_ROP_SUM, 1, 0, 1},       {CT_F16, 1001, 77, CT_ROP_MAX, 2, 0, 1},
      {CT_I32, 700, 300, CT_ROP_SUM, 1, 0, 1},       {CT_F64, 300, 2000, CT_ROP_VAR, 3, 0, 1},
      {CT_F32, 13, 70000, CT_ROP_MEAN, 5, 0, 1},     {CT_F32, 5, 100000, CT_ROP_NORM, 2, 0, 1},
      {CT_F32, 0, 100, CT_ROP_SUM, 1, 0, 1},         {CT_F32, 5, 0, CT_ROP_SUM, 1, 0, 1},
      {CT_F32, 5, 0, CT_ROP_MAX, 1, 0, 1},           {CT_I64, 5, 0, CT_ROP_PROD, 1, 0, 1},
      {CT_F32, 5, 0, CT_ROP_MEAN, 1, 0, 1},          {CT_BOOL, 0, 0, CT_ROP_ALL, 1, 1, 1},
      {CT_F32, 100, 300, CT_ROP_SUM, 2, 1, 0},       {CT_F32, 300, 100, CT_ROP_MAX, 2, 1, 1},
      {CT_F32, 2000, 600, CT_ROP_SUM, 1, 1, 0},      {CT_I16, 40, 3000, CT_ROP_MIN, 1, 1, 0},
      {CT_BF16, 3, 70000, CT_ROP_LOGSUMEXP, 2, 0, 1},
      /* columns with few outputs: 32-output tiles, split over the rows */
      {CT_F32, 5000, 100, CT_ROP_SUM, 2, 1, 0},      {CT_F64, 9000, 48, CT_ROP_VAR, 4, 1, 0},
      {CT_F16, 3000, 70, CT_ROP_MAX, 1, 1, 0},       {CT_I32, 2000, 40, CT_ROP_SUM, 3, 1, 0},
      {CT_BF16, 4000, 33, CT_ROP_LOGSUMEXP, 2, 1, 0}, {CT_F32, 1500, 17, CT_ROP_NORM, 5, 1, 0}};
  for (auto &m : ms) {
    std::vector<int64_t> shape = {m.s0, m.s1};
    bool mask[2] = {m.m0, m.m1};
    emu::sm_count = m.nsm;
    Layout lay;
    lay.off = 1;
    snprintf(tag, sizeof tag, "many %s %ldx%ld", dname(m.dt), (long)m.s0, (long)m.s1);
    run_case(m.op, m.dt, shape, mask, lay, 0, m.op == CT_ROP_NORM ? 2 : 1, 0, tag);
  }
  /* 4. random shapes, masks and layouts */
  long iters = full ? 3000 : 400;
  for (long it = 0; it < iters; it++) {
    int dt = (int)rnd(0, CT_DTYPE_COUNT - 1);
    int op = pick_op(dt);
    int nd = (int)rnd(1, 4);
    std::vector<int64_t> shape((size_t)nd);
    bool mask[CTC_MAX_DIMS];
    int64_t tot = 1;
    for (int d = 0; d < nd; d++) {
      int c = (int)rnd(0, 5);
      shape[(size_t)d] = c == 0 ? 1 : c < 3 ? rnd(2, 9) : rnd(10, 70);
      tot *= shape[(size_t)d];
      mask[d] = coin(2);
    }
    if (tot > (full ? 200000 : 40000)) continue;
    Layout lay;
    random_layout(lay, dt, true);
    emu::sm_count = (int)rnd(1, 6);
    snprintf(tag, sizeof tag, "random #%ld", it);
    run_case(op, dt, shape, mask, lay, (int)rnd(0, 2), pick_p(op), coin(3), tag);
  }
  /* 5. argmax, argmin */
  for (long it = 0; it < (full ? 600 : 120); it++) {
    int dt = (int)rnd(0, CT_DTYPE_COUNT - 1);
    int nd = (int)rnd(1, 3), dim = (int)rnd(0, nd - 1);
    std::vector<int64_t> shape((size_t)nd);
    for (auto &v : shape) v = rnd(1, nd > 1 ? 20 : 50);
    if (coin(4)) shape[(size_t)dim] = rnd(1000, 9000);
    emu::sm_count = (int)rnd(1, 4);
    arg_case(coin(2), dt, shape, dim, (int)rnd(0, 1), (int)rnd(0, 2));
  }
  printf("  paths: fast %ld, block %ld, thread %ld, column %ld, wide merge %ld cases\n", nfast, nblock,
         nthread, ncolumn, nwide);
  return su.end("reduce.cu,arg_reduce.cu");
}
