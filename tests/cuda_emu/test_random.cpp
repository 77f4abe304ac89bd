/* ct__cuda_random (random.cu) under the emulator: every fill must be
 * BIT-IDENTICAL to the CPU backend's for the same (seed, offset). The
 * reference is a host loop over core/philox.h that mirrors fill_blocks of
 * backend/cpu/random.c (the CPU backend itself needs the library's tensors
 * and thread pool); the header turns contraction off for its own functions,
 * and the translated random.cu is compiled with -ffp-contract=off
 * (CMakeLists.txt; the real build uses -fmad=false). Kinds: uniform, normal
 * (f32/f64/f16/bf16), integers narrow and wide, Bernoulli with a scalar and
 * with a probability tensor (f32/f64) into every dtype; sizes around the
 * 4- and 2-element Philox blocks, offsets across the 2^32 counter carry,
 * grid-stride loops (few SMs). */
#include "emu_test.h"

extern "C" {
#include "core/philox.h"
}

using namespace et;

static const char *const kind_name[] = {"uniform", "normal", "int", "bernoulli", "bernoulli_t"};

/* fill_blocks of backend/cpu/random.c, into a contiguous host buffer */
static void reference(std::vector<char> &out, int dt, int64_t n, const ct_random_params &p,
                      const std::vector<double> &probs) {
  int e = es(dt), per = p.wide ? 2 : 4;
  int digits = dt == CT_F16 ? 11 : dt == CT_BF16 ? 8 : 24;
  float lo32 = (float)p.a, span32 = (float)(p.b - p.a), mean32 = (float)p.a, std32 = (float)p.b;
  out.assign((size_t)(n * e), 0);
  auto store_f32 = [&](int64_t i, float v) {
    char *q = out.data() + i * e;
    if (dt == CT_F32) memcpy(q, &v, 4);
    else {
      uint16_t h = dt == CT_F16 ? f_to_f16(v) : f_to_bf16(v);
      memcpy(q, &h, 2);
    }
  };
  auto store_int = [&](int64_t i, int64_t v) {
    char *q = out.data() + i * e;
    switch (dt) {
      case CT_F32: {
        float f = (float)v;
        memcpy(q, &f, 4);
        break;
      }
      case CT_F64: {
        double f = (double)v;
        memcpy(q, &f, 8);
        break;
      }
      case CT_F16:
      case CT_BF16: store_f32(i, (float)v); break;
      default: store_i(q, dt, v);
    }
  };
  int64_t blocks = (n + per - 1) / per;
  for (int64_t b = 0; b < blocks; b++) {
    uint32_t w[4];
    ct_philox_block(p.seed, p.offset, (uint64_t)b, w);
    int64_t i0 = b * per;
    int m = n - i0 < per ? (int)(n - i0) : per;
    switch (p.kind) {
      case 0:
      case 1:
        if (dt == CT_F64) {
          double v[2];
          if (p.kind == 0) ct_rng_uniform_f64x2(w, p.a, p.b - p.a, v);
          else ct_rng_normal_f64x2(w, p.a, p.b, v);
          for (int j = 0; j < m; j++) memcpy(out.data() + (i0 + j) * 8, &v[j], 8);
        } else {
          float v[4];
          if (p.kind == 0) ct_rng_uniform_f32x4(w, digits, lo32, span32, v);
          else ct_rng_normal_f32x4(w, mean32, std32, v);
          for (int j = 0; j < m; j++) store_f32(i0 + j, v[j]);
        }
        break;
      case 2:
        for (int j = 0; j < m; j++)
          store_int(i0 + j, p.wide ? ct_rng_int_wide(ct_philox_u64(w + 2 * j), p.int_low, p.int_range)
                                   : ct_rng_int_narrow(w[j], p.int_low, p.int_range));
        break;
      case 3:
        for (int j = 0; j < m; j++) store_int(i0 + j, ct_rng_bernoulli(w[j], p.a));
        break;
      default:
        for (int j = 0; j < m; j++)
          store_int(i0 + j, ct_rng_bernoulli(w[j], probs[(size_t)(i0 + j)]));
        break;
    }
  }
}

static long nwide, ngrid_stride;

static void one(int kind, int dt, int64_t n, uint64_t seed, uint64_t offset, bool wide, int pdt) {
  ct_random_params p{};
  p.kind = (ct_random_kind)kind;
  p.seed = seed;
  p.offset = offset;
  p.wide = wide;
  switch (kind) {
    case 0: /* uniform [a, b) */
      p.a = coin(3) ? 0 : unif(-10, 10);
      p.b = p.a + (coin(3) ? 1 : unif(0.01, 100));
      break;
    case 1: /* mean, std */
      p.a = coin(3) ? 0 : unif(-5, 5);
      p.b = coin(3) ? 1 : unif(0.01, 10);
      break;
    case 2: { /* a range whose values the dtype holds exactly */
      int64_t lo, hi;
      switch (dt) {
        case CT_BOOL: lo = 0, hi = 1; break;
        case CT_U8: lo = 0, hi = 255; break;
        case CT_I8: lo = -128, hi = 127; break;
        case CT_BF16: lo = -256, hi = 256; break;
        case CT_F16: lo = -2048, hi = 2048; break;
        case CT_I16: lo = -32768, hi = 32767; break;
        default: lo = -1000000, hi = 1000000;
      }
      if (wide) { /* range > 2^32: i64, or f64 below 2^53 */
        p.int_low = dt == CT_I64 && coin(2) ? INT64_MIN / 2 - rnd(0, 99) : -rnd(0, (int64_t)1 << 40);
        p.int_range = ((uint64_t)1 << 32) + (uint64_t)rnd(1, dt == CT_I64 ? ((int64_t)1 << 62) : ((int64_t)1 << 44));
        if (dt == CT_I64 && coin(4)) p.int_range = ~(uint64_t)0, p.int_low = INT64_MIN;
      } else {
        p.int_low = rnd(lo, hi);
        p.int_range = (uint64_t)rnd(1, hi - p.int_low + 1);
        if (coin(4)) p.int_low = lo, p.int_range = (uint64_t)(hi - lo + 1);
      }
      break;
    }
    case 3: {
      static const double ps[] = {0, 1, 0.5, 0.25, 1e-9, 1 - 1e-9};
      p.a = coin(2) ? ps[rnd(0, 5)] : unif(0, 1);
      break;
    }
    default: break;
  }
  Tensor out, pr;
  Layout lo;
  lo.off = rnd(0, 16 / es(dt) - 1);
  make(out, dt, {n}, lo);
  std::vector<double> probs;
  if (kind == 4) {
    Layout lp;
    lp.off = rnd(0, 3);
    make(pr, pdt, {n}, lp);
    for (int64_t i = 0; i < n; i++) {
      double v = coin(8) ? (double)rnd(0, 1) : unif(0, 1);
      store_d(pr.at(i), pdt, v);
      probs.push_back(pr.get_d(i));
    }
    pr.snapshot();
  }
  out.snapshot();
  std::vector<char> want;
  reference(want, dt, n, p, probs);
  char tag[200];
  snprintf(tag, sizeof tag, "%s %s n=%ld seed=%#llx offset=%#llx wide=%d a=%.17g b=%.17g low=%lld range=%llu%s",
           kind_name[kind], dname(dt), (long)n, (unsigned long long)seed,
           (unsigned long long)offset, (int)wide, p.a, p.b, (long long)p.int_low,
           (unsigned long long)p.int_range, kind == 4 ? (pdt == CT_F64 ? " probs f64" : " probs f32") : "");
  emu::clear_message();
  long l0 = emu::total_threads();
  ct_status s =
      ct__cuda_random(ct(&out.d), &p, kind == CT_RANDOM_BERNOULLI_TENSOR ? ct(&pr.d) : nullptr);
  ncases++;
  if (wide) nwide++;
  int per = wide ? 2 : 4;
  if (emu::total_threads() - l0 < (n + per - 1) / per) ngrid_stride++;
  long fails = nfail;
  if (s != CT_OK) failf("%s: status %d (%s)", tag, (int)s, emu::last_message());
  emu_clean(tag);
  int e = es(dt);
  for (int64_t i = 0; i < n && nfail == fails; i++)
    if (memcmp(out.at(i), want.data() + i * e, (size_t)e) != 0)
      failf("%s: [%ld] = %.17g, the CPU's %.17g (not bit-identical)", tag, (long)i, out.get_d(i),
            load_d(want.data() + i * e, dt));
  std::string ch;
  if ((ch = out.changed(false)) != "") failf("%s: out: %s", tag, ch.c_str());
  if (kind == 4 && (ch = pr.changed(true)) != "") failf("%s: probs: %s", tag, ch.c_str());
}

int run_random(void) {
  Suite su("random.cu: Philox fills, bit-identical to the CPU's");
  /* core/philox.h against Random123's known answer (philox4x32_10, zero counter and key) */
  {
    uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {0, 0}, o[4];
    ct_philox4x32_10(ctr, key, o);
    ncases++;
    if (o[0] != 0x6627e8d5u || o[1] != 0xe169c58du || o[2] != 0xbc57ac4cu || o[3] != 0x9b00dbd8u)
      failf("philox4x32_10(0, 0) = %08x %08x %08x %08x, Random123's known answer 6627e8d5 e169c58d "
            "bc57ac4c 9b00dbd8", o[0], o[1], o[2], o[3]);
  }
  static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31, 33, 255, 1001, 4097, 20003};
  static const uint64_t offsets[] = {0, 1, 3, 12345, 0xfffffffeull, 0xffffffffull, (1ull << 40) + 7};
  int reps = full ? 4 : 1;
  for (int rep = 0; rep < reps; rep++)
    for (int kind = 0; kind < 5; kind++)
      for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        if (kind < 2 && !is_float(dt)) continue;
        for (int64_t n : sizes) {
          if (!full && n > 4097 && coin(3)) continue;
          uint64_t off = offsets[rnd(0, 6)];
          uint64_t seed = coin(5) ? (uint64_t)rnd(0, 3) : (uint64_t)rng();
          emu::sm_count = n > 1000 && coin(2) ? 1 : (int)rnd(1, 8);
          bool wide = (kind < 2 && dt == CT_F64) || (kind == 2 && (dt == CT_I64 || dt == CT_F64) && coin(2));
          one(kind, dt, n, seed, off, wide, coin(2) ? CT_F32 : CT_F64);
        }
      }
  printf("  wide (2 per block) %ld cases, grid-stride loops %ld cases\n", nwide, ngrid_stride);
  return su.end("random.cu");
}
