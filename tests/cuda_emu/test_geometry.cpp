/* The elementwise geometry's index arithmetic (common.cuh): the 32-bit
 * division by a magic number (ctc_div32) against the hardware's division for
 * divisors and dividends at every boundary, and ctc_ew_offsets in both of its
 * paths (32-bit while numel < 2^31, 64-bit past it) against coordinates
 * computed with plain 64-bit division, on random shapes and strides
 * (negative and zero strides included) and on a geometry of more than 2^31
 * elements, which no kernel test can allocate. */
#include "emu_test.h"

/* the translated header: the build puts its directory on this file's path */
#include "common.cuh"

using namespace et;

static void check_div(uint32_t d, uint32_t n, long &fails) {
  ncases++;
  uint32_t q = ctc_div32_apply(ctc_div32_make(d), n);
  if (q != n / d) {
    if (fails++ < 5) printf("  FAIL div32: %u / %u gave %u, want %u\n", n, d, q, n / d);
    nfail++;
  }
}

static void divisions(void) {
  long fails = 0;
  const uint32_t max = INT32_MAX;
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 2048; d++) divisors.push_back(d);
  for (int s = 11; s <= 31; s++) {
    uint32_t p = (uint32_t)1 << s;
    for (uint32_t e : {p - 1, p, p + 1, p / 2 * 3})
      if (e >= 1 && e <= max) divisors.push_back(e);
  }
  for (int k = 0; k < 2000; k++) divisors.push_back((uint32_t)rnd(1, max));
  for (uint32_t d : divisors) {
    /* boundaries: around 0, around multiples of d, the top of the range */
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1 > max ? max : d + 1, max, max - 1, max - d})
      if (n <= max) check_div(d, n, fails);
    for (int k = 0; k < 40; k++) {
      uint64_t m = (uint64_t)rnd(0, max / d) * d; /* a multiple of d, and its neighbours */
      for (int64_t e = -1; e <= 1; e++) {
        int64_t n = (int64_t)m + e;
        if (n >= 0 && n <= (int64_t)max) check_div(d, (uint32_t)n, fails);
      }
      check_div(d, (uint32_t)rnd(0, max), fails);
    }
  }
  /* every dividend for a few small divisors over the first 2^20 */
  for (uint32_t d : {3u, 7u, 10u, 768u, 1000u})
    for (uint32_t n = 0; n < (1u << 20); n++) check_div(d, n, fails);
  printf("  div32: %zu divisors, %ld failures\n", divisors.size(), fails);
}

/* coordinates of i with plain division, innermost dim first */
static void ref_offsets(const ctc_ew &g, int64_t i, int64_t *off) {
  for (int a = 0; a < CTC_EW_MAX; a++) off[a] = 0;
  for (int d = g.ndim - 1; d >= 0; d--) {
    int64_t r = i % g.shape[d];
    i /= g.shape[d];
    for (int a = 0; a < CTC_EW_MAX; a++) off[a] += r * g.st[a][d];
  }
}

static void check_geometry(ctc_ew &g, const char *tag, long &fails) {
  ctc_ew_set_dividers(&g);
  bool want32 = g.numel <= INT32_MAX;
  if (g.idx32 != want32) {
    printf("  FAIL %s: idx32 %d for numel %lld\n", tag, (int)g.idx32, (long long)g.numel);
    nfail++;
    return;
  }
  for (int k = 0; k < 200; k++) {
    int64_t i = k < 4 ? (k < 2 ? k : g.numel - 1 - (k - 2)) : rnd(0, g.numel - 1);
    if (i < 0) continue;
    int64_t got[CTC_EW_MAX], want[CTC_EW_MAX];
    ctc_ew_offsets<CTC_EW_MAX>(g, i, got);
    ref_offsets(g, i, want);
    ncases++;
    for (int a = 0; a < CTC_EW_MAX; a++)
      if (got[a] != want[a]) {
        if (fails++ < 5)
          printf("  FAIL %s: index %lld operand %d offset %lld, want %lld (ndim %d, idx32 %d)\n",
                 tag, (long long)i, a, (long long)got[a], (long long)want[a], g.ndim, (int)g.idx32);
        nfail++;
        break;
      }
  }
}

static void random_geometry(ctc_ew &g, int ndim, int64_t max_numel) {
  memset(&g, 0, sizeof g);
  g.nargs = CTC_EW_MAX;
  g.ndim = ndim;
  g.numel = 1;
  for (int d = 0; d < ndim; d++) {
    int64_t room = max_numel / g.numel;
    g.shape[d] = rnd(2, room < 2 ? 2 : (room > 5000 ? 5000 : room));
    g.numel *= g.shape[d];
    for (int a = 0; a < CTC_EW_MAX; a++) g.st[a][d] = coin(4) ? 0 : rnd(-100000, 100000);
  }
}

static void offsets(void) {
  long fails = 0;
  char tag[96];
  for (int it = 0; it < 3000; it++) {
    ctc_ew g;
    int ndim = (int)rnd(1, CTC_MAX_DIMS);
    random_geometry(g, ndim, coin(3) ? ((int64_t)1 << 40) : ((int64_t)1 << 24));
    snprintf(tag, sizeof tag, "offsets #%d", it);
    check_geometry(g, tag, fails);
    /* the same geometry through the 64-bit path must agree as well */
    if (g.idx32) {
      g.idx32 = false;
      int64_t a[CTC_EW_MAX], b[CTC_EW_MAX];
      int64_t i = rnd(0, g.numel - 1);
      ctc_ew_offsets<CTC_EW_MAX>(g, i, a);
      ref_offsets(g, i, b);
      ncases++;
      if (memcmp(a, b, sizeof a) != 0) {
        if (fails++ < 5) printf("  FAIL %s: 64-bit path at index %lld\n", tag, (long long)i);
        nfail++;
      }
    }
  }
  /* at the 2^31 boundary, and past it (a 3 x 100000 x 10000 broadcast) */
  int64_t sizes[][3] = {
      {2, 1073741823, 1}, {1, 2147483647, 1}, {2, 1073741824, 1}, {3, 100000, 10000}};
  for (auto &sz : sizes) {
    ctc_ew g;
    memset(&g, 0, sizeof g);
    g.nargs = CTC_EW_MAX;
    g.numel = 1;
    for (int d = 0; d < 3; d++)
      if (sz[d] > 1) {
        g.shape[g.ndim] = sz[d];
        g.numel *= sz[d];
        for (int a = 0; a < CTC_EW_MAX; a++) g.st[a][g.ndim] = a == 1 ? 0 : rnd(-7, 7);
        g.ndim++;
      }
    snprintf(tag, sizeof tag, "numel %lld", (long long)g.numel);
    check_geometry(g, tag, fails);
  }
  printf("  offsets: %ld failures\n", fails);
}

int run_geometry(void) {
  Suite su("common.cuh: the elementwise geometry's division by magic numbers and offsets");
  divisions();
  offsets();
  return su.end(""); /* host arithmetic only: no kernel of its own */
}
