/* The emulated kernel tests' main and shared helpers (emu_test.h).
 *   cuda_emu_test [reduce|softmax|elementwise|index|random|unary_backward|norm|pool|optim]...
 *   (all when none)
 * CT_EMU_CASES=full runs the big sweep; CT_EMU_SEED=n changes the seed. */
#include "emu_test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

namespace et {
std::mt19937_64 rng(1);
bool full = false;
long ncases, nfail;
static int printed;

int es(int dt) {
  switch (dt) {
    case CT_F64:
    case CT_I64:
      return 8;
    case CT_F32:
    case CT_I32:
      return 4;
    case CT_F16:
    case CT_BF16:
    case CT_I16:
      return 2;
    default:
      return 1;
  }
}
const char *dname(int dt) {
  static const char *const n[] = {"f32", "f64", "f16", "bf16", "i8",
                                  "u8",  "i16", "i32", "i64",  "bool"};
  return dt >= 0 && dt < CT_DTYPE_COUNT ? n[dt] : "?";
}
float bf16_to_f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint16_t f_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (f != f) return (uint16_t)((u >> 16) | 0x40);
  uint32_t lsb = (u >> 16) & 1;
  return (uint16_t)((u + 0x7fff + lsb) >> 16);
}
float f16_to_f(uint16_t h) {
  _Float16 v;
  memcpy(&v, &h, 2);
  return (float)v;
}
uint16_t f_to_f16(float f) {
  _Float16 v = (_Float16)f;
  uint16_t h;
  memcpy(&h, &v, 2);
  return h;
}

double load_d(const char *p, int dt) {
  switch (dt) {
    case CT_F32: {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
    case CT_F64: {
      double f;
      memcpy(&f, p, 8);
      return f;
    }
    case CT_F16: {
      uint16_t h;
      memcpy(&h, p, 2);
      return f16_to_f(h);
    }
    case CT_BF16: {
      uint16_t h;
      memcpy(&h, p, 2);
      return bf16_to_f(h);
    }
    default:
      return (double)load_i(p, dt);
  }
}
int64_t load_i(const char *p, int dt) {
  switch (dt) {
    case CT_I8:
      return (int8_t)p[0];
    case CT_U8:
      return (uint8_t)p[0];
    case CT_I16: {
      int16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case CT_I32: {
      int32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case CT_I64: {
      int64_t v;
      memcpy(&v, p, 8);
      return v;
    }
    case CT_BOOL:
      return p[0] != 0;
    default: {
      double d = load_d(p, dt);
      return d != d                        ? 0
             : d >= 9.2233720368547758e18  ? INT64_MAX
             : d <= -9.2233720368547758e18 ? INT64_MIN
                                           : (int64_t)d;
    }
  }
}
void store_d(char *p, int dt, double v) {
  switch (dt) {
    case CT_F32: {
      float f = (float)v;
      memcpy(p, &f, 4);
      break;
    }
    case CT_F64:
      memcpy(p, &v, 8);
      break;
    case CT_F16: {
      uint16_t h = f_to_f16((float)v);
      memcpy(p, &h, 2);
      break;
    }
    case CT_BF16: {
      uint16_t h = f_to_bf16((float)v);
      memcpy(p, &h, 2);
      break;
    }
    case CT_BOOL:
      p[0] = v != 0;
      break;
    default: {
      int64_t i = v != v                        ? 0
                  : v >= 9.2233720368547758e18  ? INT64_MAX
                  : v <= -9.2233720368547758e18 ? INT64_MIN
                                                : (int64_t)v;
      store_i(p, dt, i);
    }
  }
}
void store_i(char *p, int dt, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
    case CT_I8:
    case CT_U8:
      p[0] = (char)(uint8_t)u;
      break;
    case CT_I16: {
      uint16_t w = (uint16_t)u;
      memcpy(p, &w, 2);
      break;
    }
    case CT_I32: {
      uint32_t w = (uint32_t)u;
      memcpy(p, &w, 4);
      break;
    }
    case CT_I64:
      memcpy(p, &u, 8);
      break;
    case CT_BOOL:
      p[0] = v != 0;
      break;
    default:
      store_d(p, dt, (double)v);
  }
}
double round_to(int dt, double v) {
  char b[8];
  store_d(b, dt, v);
  return load_d(b, dt);
}
double eps_of(int dt) {
  switch (dt) {
    case CT_F64:
      return 0x1p-52;
    case CT_F32:
      return 0x1p-23;
    case CT_F16:
      return 0x1p-10;
    case CT_BF16:
      return 0x1p-7;
    default:
      return 0;
  }
}

/* ---- Tensors ---- */
#define GUARD 64
Tensor::~Tensor() {
  if (guarded && !mem.empty()) emu::unpoison(mem.data(), mem.size());
}
int64_t Tensor::offset(int64_t i) const {
  int64_t o = 0;
  for (int k = d.ndim - 1; k >= 0; k--) {
    o += (i % d.shape[k]) * d.strides[k];
    i /= d.shape[k];
  }
  return o;
}
void random_layout(Layout &lay, int dt, bool allow_expand) {
  lay.perm = coin(3);
  lay.gaps = coin(4);
  lay.flips = coin(5);
  lay.expand = allow_expand && coin(6);
  lay.off = rnd(0, 16 / es(dt) - 1 + (coin(4) ? 3 : 0));
}
void make(Tensor &t, int dt, const std::vector<int64_t> &shape, const Layout &lay) {
  if (t.guarded) emu::unpoison(t.mem.data(), t.mem.size());
  int nd = (int)shape.size();
  int order[CTC_MAX_DIMS];
  for (int k = 0; k < nd; k++) order[k] = k;
  if (lay.perm)
    for (int k = nd - 1; k > 0; k--) std::swap(order[k], order[rnd(0, k)]);
  t.d = ctc_t{};
  t.d.dtype = dt;
  t.d.ndim = nd;
  t.d.numel = 1;
  int64_t st = 1;
  for (int i = nd - 1; i >= 0; i--) {
    int k = order[i];
    int64_t step = lay.gaps && coin(2) ? rnd(2, 3) : 1;
    t.d.strides[k] = st * step;
    st *= (shape[(size_t)k] > 0 ? shape[(size_t)k] : 1) * step;
  }
  for (int k = 0; k < nd; k++) {
    t.d.shape[k] = shape[(size_t)k];
    t.d.numel *= shape[(size_t)k];
  }
  /* flips and expands; then the lowest offset is the buffer's first element */
  for (int k = 0; k < nd; k++) {
    if (lay.flips && shape[(size_t)k] > 1 && coin(3)) t.d.strides[k] = -t.d.strides[k];
    if (lay.expand && shape[(size_t)k] > 1 && coin(4)) t.d.strides[k] = 0;
  }
  int64_t lo = 0, hi = 0;
  for (int k = 0; k < nd; k++) {
    int64_t ext = (shape[(size_t)k] > 0 ? shape[(size_t)k] - 1 : 0) * t.d.strides[k];
    if (ext < 0)
      lo += ext;
    else
      hi += ext;
  }
  int64_t e = es(dt);
  t.span = (size_t)((hi - lo + 1) * e);
  t.start = GUARD + (size_t)(lay.off * e);
  t.mem.assign(t.start + t.span + GUARD + 128, 0);
  /* a 64-byte aligned base: the vector's own alignment varies, so shift into it */
  t.start += (64 - (uintptr_t)t.mem.data() % 64) % 64;
  for (size_t i = 0; i < t.mem.size(); i++) t.mem[i] = (unsigned char)(0xa7 ^ (i * 13));
  t.d.data = (char *)t.mem.data() + t.start - lo * e;
  t.guarded = true;
  t.before.clear();
}
void Tensor::snapshot() {
  emu::unpoison(mem.data(), mem.size());
  before = mem;
  /* guards: the bytes before the first element (whole 8-byte granules) and after the last */
  emu::poison(mem.data(), start & ~(size_t)7);
  /* (from the next 4-byte word: a narrow atomic moves the word holding its element) */
  size_t end =
      (size_t)((uintptr_t)(mem.data() + start + span + 3) & ~(uintptr_t)3) - (uintptr_t)mem.data();
  emu::poison(mem.data() + end, mem.size() - end);
}
std::string Tensor::changed(bool all) {
  emu::unpoison(mem.data(), mem.size());
  std::vector<char> mine(all ? 0 : mem.size(), 0);
  if (!all) {
    int e = es(d.dtype);
    for (int64_t i = 0; i < d.numel; i++) {
      size_t b = (size_t)(at(i) - (char *)mem.data());
      for (int k = 0; k < e; k++) mine[b + (size_t)k] = 1;
    }
  }
  for (size_t i = 0; i < mem.size() && i < before.size(); i++)
    if (mem[i] != before[i] && (all || !mine[i])) {
      char buf[160];
      snprintf(buf, sizeof buf, "byte %ld from the first element changed (%s)",
               (long)i - (long)start,
               all ? "an input was written" : "outside the output's elements");
      return buf;
    }
  return "";
}

/* ---- Checks ---- */
void failf(const char *fmt, ...) {
  nfail++;
  if (printed++ < 25) {
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
  } else if (printed == 26) {
    printf("(further failures not printed)\n");
  }
}
bool emu_clean(const char *tag) {
  char msg[512];
  bool ok = true;
  if (emu::take_errors(msg, sizeof msg)) {
    failf("%s: the emulator found: %s", tag, msg);
    ok = false;
  }
  if (emu::scratch_live() != 0) {
    failf("%s: %ld device scratch blocks not freed", tag, emu::scratch_live());
    ok = false;
  }
  return ok;
}
bool same_float(double got, double want) {
  if (want != want) return got != got;
  return got == want && std::signbit(got) == std::signbit(want);
}
bool close_float(double got, double want, double tol, double floor) {
  if (want != want) return got != got;
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return fabs(got - want) <= tol * std::max(fabs(want), floor);
}
ct_tensor *ct_into(CtHold &h, const ctc_t *d) {
  if (!d) return nullptr;
  h = CtHold{};
  h.s.refcount = 1;
  h.s.device.type = CT_DEVICE_CUDA;
  h.s.device.index = (int8_t)d->device;
  h.s.data = d->data;
  h.t.refcount = 1;
  h.t.dtype = (ct_dtype)d->dtype;
  h.t.ndim = d->ndim;
  for (int k = 0; k < d->ndim; k++) h.t.shape[k] = d->shape[k], h.t.strides[k] = d->strides[k];
  h.t.numel = d->numel;
  h.t.storage = &h.s;
  return &h.t;
}

ct_tensor *ct(const ctc_t *d) {
  static thread_local CtHold ring[64];
  static thread_local unsigned next;
  return ct_into(ring[next++ % 64], d);
}

std::string shape_str(const ctc_t &d) {
  std::string s = std::string(dname(d.dtype)) + "[";
  char b[64];
  for (int k = 0; k < d.ndim; k++) {
    snprintf(b, sizeof b, "%s%ld:%ld", k ? "," : "", (long)d.shape[k], (long)d.strides[k]);
    s += b;
  }
  snprintf(b, sizeof b, "]@%ld", (long)((uintptr_t)d.data % 64));
  return s + b;
}

static double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
Suite::Suite(const char *n) : name(n), cases0(ncases), fails0(nfail), t0(now()) {
  emu::reset_coverage();
  printf("== %s (emulated on the CPU)\n", n);
  fflush(stdout);
}
int Suite::end(const char *files) {
  emu::report_coverage(files);
  long c = ncases - cases0, f = nfail - fails0;
  printf("== %s: %ld cases, %ld failures, %.1f s (CPU emulation, not a GPU run)\n", name, c, f,
         now() - t0);
  fflush(stdout);
  return f != 0;
}
}  // namespace et

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const char *cases = getenv("CT_EMU_CASES");
  et::full = cases && !strcmp(cases, "full");
  const char *seed = getenv("CT_EMU_SEED");
  unsigned long s = seed ? strtoul(seed, nullptr, 10) : 1;
  printf(
      "ctensor CUDA kernels EMULATED ON THE CPU (tests/cuda_emu): the current sources of\n"
      "src/backend/cuda run on a host emulator of the CUDA runtime. This is NOT a GPU run and\n"
      "does not replace the [cuda] tests. Cases: %s (CT_EMU_CASES=full for the big sweep), seed "
      "%lu.\n",
      et::full ? "full" : "quick", s);
  struct {
    const char *name;
    int (*run)(void);
  } suites[] = {{"reduce", run_reduce},
                {"softmax", run_softmax},
                {"elementwise", run_elementwise},
                {"index", run_index},
                {"random", run_random},
                {"unary_backward", run_unary_backward},
                {"norm", run_norm},
                {"pool", run_pool},
                {"optim", run_optim},
                {"geometry", run_geometry}};
  /* the emulator's own checks first: without them the suites could pass vacuously */
  int bad = run_emulator_selftest(), ran = 0;
  for (auto &su : suites) {
    bool want = argc < 2;
    for (int i = 1; i < argc; i++) want = want || !strcmp(argv[i], su.name);
    if (!want) continue;
    et::rng.seed(s * 1000003ul + (unsigned long)ran * 7919ul + strlen(su.name));
    bad |= su.run();
    ran++;
  }
  for (int i = 1; i < argc; i++) {
    bool known = false;
    for (auto &su : suites) known = known || !strcmp(argv[i], su.name);
    if (!known) {
      fprintf(stderr,
              "unknown suite %s (reduce, softmax, elementwise, index, random, unary_backward, norm, "
              "pool, optim, geometry)\n",
              argv[i]);
      return 2;
    }
  }
  printf(
      "%s: %ld cases, %ld failures, %ld kernel launches, %ld emulated GPU threads (CPU "
      "emulation)\n",
      bad ? "FAILED" : "passed", et::ncases, et::nfail, emu::total_launches(),
      emu::total_threads());
  return bad ? 1 : 0;
}
