/* index.cu and fault.cu under the emulator, against host references:
 * index_select, gather, scatter and scatter_add (every dtype: native, narrow
 * compare-and-swap and bool atomics), masked_select (its scan is a host
 * stand-in for CUB, README.md), count_nonzero, tril/triu (also in place).
 * A bad index must skip its element (zeros for index_select/gather) and
 * raise the fault that the next synchronization reports with the op, the
 * index, the dim and the size (ctc_fault_check, and count_nonzero's own
 * synchronization; with CT_LAUNCH_BLOCKING the op itself). */
#include <algorithm>
#include <set>

#include "emu_test.h"

using namespace et;

ct_status ctc_fault_check(int dev); /* fault.cu */

static long nfaults;

static void fill_any(Tensor &t) {
  int dt = t.dt();
  for (int64_t i = 0; i < t.numel(); i++) {
    if (dt == CT_BOOL)
      t.at(i)[0] = (char)(coin(2) ? 0 : rnd(1, 3));
    else if (is_float(dt))
      store_d(t.at(i), dt, coin(10) ? NAN : (double)rnd(-50, 50) / 4);
    else
      store_i(t.at(i), dt, rnd(-100, 100));
  }
}

/* Bad indices: where, and the values put there. */
struct Bad {
  std::vector<int64_t> at, values;
};
static void put_index(Tensor &idx, int64_t size, Bad &bad, int nbad) {
  for (int64_t i = 0; i < idx.numel(); i++) store_i(idx.at(i), CT_I64, rnd(0, size - 1));
  for (int b = 0; b < nbad && idx.numel() > 0; b++) {
    int64_t i = rnd(0, idx.numel() - 1);
    int64_t v = coin(3)   ? size
                : coin(2) ? -1
                : coin(2) ? -size - 7
                          : (int64_t)(rng() | (1ull << 62));
    store_i(idx.at(i), CT_I64, v);
    bad.at.push_back(i);
    bad.values.push_back(v);
  }
}

/* The fault of op must be reported (once) exactly when there was a bad index. */
static void expect_fault(const char *tag, const char *op, const Bad &bad, int dim, int64_t size,
                         ct_status st) {
  ct_status f = emu::launch_blocking ? st : ctc_fault_check(0);
  if (bad.at.empty()) {
    if (f != CT_OK)
      failf("%s: fault %d (%s) with every index in range", tag, (int)f, emu::last_message());
    return;
  }
  nfaults++;
  bool ok = false;
  char want[200];
  for (int64_t v : bad.values) { /* the first fault wins: any of the bad values */
    snprintf(want, sizeof want, "%s: index %lld is out of bounds for dim %d with size %lld", op,
             (long long)v, dim, (long long)size);
    ok = ok || strncmp(emu::last_message(), want, strlen(want)) == 0;
  }
  if (f != CT_ERR_ARG || !ok)
    failf("%s: %s returned %d '%s', want CT_ERR_ARG '%s...'", tag,
          emu::launch_blocking ? "the op" : "the fault check", (int)f, emu::last_message(), want);
  if (ctc_fault_check(0) != CT_OK) failf("%s: the fault was not cleared by its report", tag);
}

static std::vector<int64_t> small_shape(int nd, int64_t maxd) {
  std::vector<int64_t> s((size_t)nd);
  for (auto &d : s) d = coin(6) ? 1 : rnd(1, maxd);
  return s;
}
static Layout lay_of(int dt) {
  Layout l;
  if (coin(2)) random_layout(l, dt, false);
  return l;
}

/* index_select (gather = false) or gather. */
static void select_case(bool gather, int dt, int nbad) {
  int nd = (int)rnd(1, 4), dim = (int)rnd(0, nd - 1);
  std::vector<int64_t> xs = small_shape(nd, nd > 2 ? 9 : 40), os = xs;
  if (xs[(size_t)dim] == 0) xs[(size_t)dim] = 1;
  os[(size_t)dim] = rnd(gather ? 1 : 0, 30);
  Tensor x, out, idx;
  make(x, dt, xs, lay_of(dt));
  fill_any(x);
  make(out, dt, os, lay_of(dt));
  Layout il;
  il.gaps = coin(3);
  il.flips = coin(3);
  make(idx, CT_I64, gather ? os : std::vector<int64_t>{os[(size_t)dim]}, il);
  Bad bad;
  put_index(idx, xs[(size_t)dim], bad, out.numel() ? nbad : 0);
  x.snapshot(), out.snapshot(), idx.snapshot();
  const char *op = gather ? "gather" : "index_select";
  char tag[96];
  snprintf(tag, sizeof tag, "%s %s dim %d%s", op, dname(dt), dim,
           bad.at.empty() ? "" : " (bad index)");
  long fails = nfail;
  emu::clear_message();
  ct_status st = gather ? ct__cuda_gather("gather", ct(&out.d), ct(&x.d), dim, ct(&idx.d))
                        : ct__cuda_index_select(ct(&out.d), ct(&x.d), dim, ct(&idx.d));
  ncases++;
  if (st != CT_OK && !(emu::launch_blocking && !bad.at.empty()))
    failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  expect_fault(tag, op, bad, dim, xs[(size_t)dim], st);
  emu_clean(tag);
  /* out[e] = x[e's coordinates, dim replaced by the index] (zeros for a bad index) */
  int e = es(dt);
  for (int64_t i = 0; i < out.numel() && nfail == fails; i++) {
    int64_t c[CTC_MAX_DIMS], r = i;
    for (int d = nd - 1; d >= 0; d--) {
      c[d] = r % os[(size_t)d];
      r /= os[(size_t)d];
    }
    int64_t v = gather ? idx.get_i(i) : idx.get_i(c[dim]);
    static const char zero[8] = {0};
    const char *want = zero;
    if (v >= 0 && v < xs[(size_t)dim]) {
      c[dim] = v;
      int64_t o = 0;
      for (int d = 0; d < nd; d++) o += c[d] * x.d.strides[d];
      want = x.d.data + o * e;
    }
    if (memcmp(out.at(i), want, (size_t)e) != 0)
      failf("%s: out[%ld] (index %lld) differs", tag, (long)i, (long long)v);
  }
  std::string ch;
  if ((ch = x.changed(true)) != "") failf("%s: x: %s", tag, ch.c_str());
  if ((ch = idx.changed(true)) != "") failf("%s: index: %s", tag, ch.c_str());
  if ((ch = out.changed(false)) != "") failf("%s: out: %s", tag, ch.c_str());
  if (nfail != fails)
    printf("   x=%s out=%s index=%s sms=%d blocking=%d\n", shape_str(x.d).c_str(),
           shape_str(out.d).c_str(), shape_str(idx.d).c_str(), emu::sm_count,
           (int)emu::launch_blocking);
}

static void scatter_case(bool add, int dt, int nbad) {
  int nd = (int)rnd(1, 3), dim = (int)rnd(0, nd - 1);
  std::vector<int64_t> is = small_shape(nd, nd > 1 ? 12 : 60), ss = is;
  ss[(size_t)dim] = rnd(1, 20);
  Tensor self, idx, src;
  make(self, dt, ss, lay_of(dt));
  fill_any(self);
  make(idx, CT_I64, is, lay_of(CT_I64));
  make(src, dt, is, lay_of(dt));
  fill_any(src);
  if (is_half(dt) || dt == CT_F32) /* sums exact in any order: multiples of 1/4, small */
    for (int64_t i = 0; i < src.numel(); i++) store_d(src.at(i), dt, (double)rnd(-20, 20) / 4);
  Bad bad;
  put_index(idx, ss[(size_t)dim], bad, nbad);
  /* the reference: every index element's target; for scatter the candidates */
  int e = es(dt);
  std::vector<std::vector<int64_t>> writers((size_t)self.numel());
  auto self_lin = [&](const int64_t *c) {
    int64_t l = 0;
    for (int d = 0; d < nd; d++) l = l * ss[(size_t)d] + c[d];
    return l;
  };
  for (int64_t i = 0; i < idx.numel(); i++) {
    int64_t c[CTC_MAX_DIMS], r = i;
    for (int d = nd - 1; d >= 0; d--) {
      c[d] = r % is[(size_t)d];
      r /= is[(size_t)d];
    }
    int64_t v = idx.get_i(i);
    if (v < 0 || v >= ss[(size_t)dim]) continue;
    c[dim] = v;
    writers[(size_t)self_lin(c)].push_back(i);
  }
  std::vector<char> orig((size_t)(self.numel() * e));
  for (int64_t i = 0; i < self.numel(); i++) memcpy(&orig[(size_t)(i * e)], self.at(i), (size_t)e);
  self.snapshot(), idx.snapshot(), src.snapshot();
  const char *op = add ? "scatter_add" : "scatter";
  char tag[96];
  snprintf(tag, sizeof tag, "%s %s dim %d%s", op, dname(dt), dim,
           bad.at.empty() ? "" : " (bad index)");
  long fails = nfail;
  emu::clear_message();
  ct_status st = ct__cuda_scatter(ct(&self.d), dim, ct(&idx.d), ct(&src.d), add);
  ncases++;
  if (st != CT_OK && !(emu::launch_blocking && !bad.at.empty()))
    failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  expect_fault(tag, op, bad, dim, ss[(size_t)dim], st);
  emu_clean(tag);
  for (int64_t l = 0; l < self.numel() && nfail == fails; l++) {
    /* self's element of row-major index l */
    const char *got = self.at(l), *o = &orig[(size_t)(l * e)];
    auto &w = writers[(size_t)l];
    if (w.empty()) {
      if (memcmp(got, o, (size_t)e) != 0)
        failf("%s: self[%ld] changed, no index points at it", tag, (long)l);
    } else if (!add) {
      bool any = false;
      for (int64_t i : w) any = any || memcmp(got, src.at(i), (size_t)e) == 0;
      if (!any)
        failf("%s: self[%ld] is none of the %zu values scattered to it", tag, (long)l, w.size());
    } else if (dt == CT_BOOL) {
      bool want = o[0] != 0;
      for (int64_t i : w) want = want || src.at(i)[0] != 0;
      if ((got[0] != 0) != want)
        failf("%s: self[%ld] = %d, want %d", tag, (long)l, got[0], (int)want);
    } else if (!is_float(dt)) {
      int64_t s = load_i(o, dt);
      for (int64_t i : w) s = (int64_t)((uint64_t)s + (uint64_t)src.get_i(i));
      char wb[8];
      store_i(wb, dt, s);
      if (memcmp(got, wb, (size_t)e) != 0)
        failf("%s: self[%ld] = %lld, want %lld", tag, (long)l, (long long)load_i(got, dt),
              (long long)load_i(wb, dt));
    } else {
      double s = load_d(o, dt), mag = fabs(s);
      for (int64_t i : w) s += src.get_d(i), mag += fabs(src.get_d(i));
      double g = load_d(got, dt);
      bool ok = s != s ? g != g
                       : fabs(g - s) <= (dt == CT_F64 ? 1e-12 : 1e-6) * mag +
                                            (is_half(dt) ? eps_of(dt) * mag : 0);
      if (!ok) failf("%s: self[%ld] = %.9g, want %.9g", tag, (long)l, g, s);
    }
  }
  std::string ch;
  if ((ch = src.changed(true)) != "") failf("%s: src: %s", tag, ch.c_str());
  if ((ch = idx.changed(true)) != "") failf("%s: index: %s", tag, ch.c_str());
  if ((ch = self.changed(false)) != "") failf("%s: self: %s", tag, ch.c_str());
  if (nfail != fails)
    printf("   self=%s index=%s src=%s sms=%d\n", shape_str(self.d).c_str(),
           shape_str(idx.d).c_str(), shape_str(src.d).c_str(), emu::sm_count);
}

static void masked_case(int dt) {
  int nd = (int)rnd(1, 3);
  std::vector<int64_t> xs = small_shape(nd, nd > 1 ? 30 : 3000);
  Tensor x, mask, out;
  make(x, dt, xs, lay_of(dt));
  fill_any(x);
  make(mask, CT_BOOL, xs, lay_of(CT_BOOL));
  int dens = (int)rnd(0, 4);
  for (int64_t i = 0; i < mask.numel(); i++)
    mask.at(i)[0] = (char)(rnd(0, 3) < dens ? rnd(1, 9) : 0);
  std::vector<int64_t> sel;
  for (int64_t i = 0; i < x.numel(); i++)
    if (mask.at(i)[0]) sel.push_back(i);
  char tag[96];
  snprintf(tag, sizeof tag, "masked_select/count_nonzero %s", dname(dt));
  long fails = nfail;
  int64_t count = -1;
  mask.snapshot();
  ct_status st = ct__cuda_count_nonzero(ct(&mask.d), &count);
  if (st != CT_OK || count != (int64_t)sel.size())
    failf("%s: count_nonzero %lld (status %d), want %zu", tag, (long long)count, (int)st,
          sel.size());
  Layout ol;
  ol.gaps = coin(3);
  ol.off = rnd(0, 3);
  make(out, dt, {(int64_t)sel.size()}, ol);
  x.snapshot(), out.snapshot();
  st = ct__cuda_masked_select(ct(&out.d), ct(&x.d), ct(&mask.d));
  ncases++;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  for (size_t k = 0; k < sel.size() && nfail == fails; k++)
    if (memcmp(out.at((int64_t)k), x.at(sel[k]), (size_t)es(dt)) != 0)
      failf("%s: out[%zu] differs", tag, k);
  std::string ch;
  if ((ch = x.changed(true)) != "") failf("%s: x: %s", tag, ch.c_str());
  if ((ch = mask.changed(true)) != "") failf("%s: mask: %s", tag, ch.c_str());
  if ((ch = out.changed(false)) != "") failf("%s: out: %s", tag, ch.c_str());
  if (nfail != fails)
    printf("   x=%s mask=%s out=%s\n", shape_str(x.d).c_str(), shape_str(mask.d).c_str(),
           shape_str(out.d).c_str());
}

static void triangle_case(int dt) {
  int nd = (int)rnd(2, 4);
  std::vector<int64_t> xs = small_shape(nd, nd > 2 ? 12 : 70);
  int64_t rows = xs[(size_t)nd - 2], cols = xs[(size_t)nd - 1];
  int64_t k = rnd(-rows - 1, cols + 1);
  bool upper = coin(2), inplace = coin(3);
  Tensor x, out;
  make(x, dt, xs, lay_of(dt));
  fill_any(x);
  std::vector<char> orig((size_t)(x.numel() * es(dt)));
  for (int64_t i = 0; i < x.numel(); i++)
    memcpy(&orig[(size_t)(i * es(dt))], x.at(i), (size_t)es(dt));
  if (!inplace) make(out, dt, xs, lay_of(dt));
  Tensor &o = inplace ? x : out;
  if (!inplace) x.snapshot();
  o.snapshot();
  char tag[96];
  snprintf(tag, sizeof tag, "%s %s k %lld%s", upper ? "triu" : "tril", dname(dt), (long long)k,
           inplace ? " in place" : "");
  long fails = nfail;
  ct_status st = ct__cuda_triangle(ct(&o.d), ct(&x.d), k, upper);
  ncases++;
  if (st != CT_OK) failf("%s: status %d (%s)", tag, (int)st, emu::last_message());
  emu_clean(tag);
  static const char zero[8] = {0};
  for (int64_t i = 0; i < o.numel() && nfail == fails; i++) {
    int64_t r = i / cols % rows, c = i % cols;
    bool keep = upper ? c - r >= k : c - r <= k;
    if (memcmp(o.at(i), keep ? &orig[(size_t)(i * es(dt))] : zero, (size_t)es(dt)) != 0)
      failf("%s: [%ld] (row %lld col %lld) should be %s", tag, (long)i, (long long)r, (long long)c,
            keep ? "kept" : "zero");
  }
  std::string ch;
  if (!inplace && (ch = x.changed(true)) != "") failf("%s: x: %s", tag, ch.c_str());
  if ((ch = o.changed(false)) != "") failf("%s: out: %s", tag, ch.c_str());
  if (nfail != fails) printf("   x=%s out=%s\n", shape_str(x.d).c_str(), shape_str(o.d).c_str());
}

/* A fault raised by one op is reported by the next synchronization of another
 * (count_nonzero synchronizes: it returns a host value). */
static void fault_at_sync_case(void) {
  Tensor x, out, idx, mask;
  make(x, CT_F32, {4, 5}, Layout());
  fill_any(x);
  make(out, CT_F32, {4, 3}, Layout());
  make(idx, CT_I64, {4, 3}, Layout());
  Bad bad;
  put_index(idx, 5, bad, 0);
  store_i(idx.at(7), CT_I64, 5);
  make(mask, CT_BOOL, {6}, Layout());
  for (int i = 0; i < 6; i++) mask.at(i)[0] = (char)(i % 2);
  int64_t count = -1;
  ncases++;
  ct_status st = ct__cuda_gather("gather", ct(&out.d), ct(&x.d), 1, ct(&idx.d));
  if (st != CT_OK) failf("gather then count_nonzero: gather returned %d", (int)st);
  st = ct__cuda_count_nonzero(ct(&mask.d), &count);
  const char *want = "gather: index 5 is out of bounds for dim 1 with size 5";
  if (st != CT_ERR_ARG || strncmp(emu::last_message(), want, strlen(want)) != 0)
    failf("gather then count_nonzero: count_nonzero returned %d '%s', want CT_ERR_ARG '%s...'",
          (int)st, emu::last_message(), want);
  if (count != 3) failf("gather then count_nonzero: count %lld, want 3", (long long)count);
  if (ctc_fault_check(0) != CT_OK) failf("gather then count_nonzero: the fault was reported twice");
  emu_clean("gather then count_nonzero");
}

int run_index(void) {
  Suite su(
      "index.cu, fault.cu: index_select gather scatter scatter_add masked_select count_nonzero "
      "tril triu");
  long reps = full ? 40 : 10;
  for (long rep = 0; rep < reps; rep++)
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
      emu::sm_count = (int)rnd(1, 4);
      emu::launch_blocking = coin(6);
      select_case(false, dt, coin(3) ? (int)rnd(1, 3) : 0);
      select_case(true, dt, coin(3) ? (int)rnd(1, 3) : 0);
      scatter_case(false, dt, coin(4) ? (int)rnd(1, 3) : 0);
      scatter_case(true, dt, coin(4) ? (int)rnd(1, 3) : 0);
      emu::launch_blocking = false;
      masked_case(dt);
      triangle_case(dt);
    }
  fault_at_sync_case();
  printf("  %ld bad-index faults raised and reported\n", nfaults);
  return su.end("index.cu");
}
