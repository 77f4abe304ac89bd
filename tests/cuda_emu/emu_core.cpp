/* The CUDA emulator's core (shim/cuda_runtime.h): fibers and their
 * scheduler, barriers and warp primitives, the checks and the run of a
 * launch's grid, the errors found in kernels, coverage counts. The runtime
 * API around it is emu_standalone.cpp (kernel tests) or lib/lib_runtime.cpp
 * (the whole library on an emulated GPU). */
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/common.cuh"
#include "emu_control.h"
#include "emu_core.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__) || defined(EMU_USE_UCONTEXT)
#define EMU_UCONTEXT 1
#include <ucontext.h>
#endif

namespace emu {
Fiber *cur;
uint3 block_idx;
dim3 block_dim, grid_dim;
int nthreads;
Barrier block_bar;
int block_acc[2];
Warp warps[32];
int sm_count = 4;
bool launch_blocking = false;

static long nerrors;
static char errmsg[512];
const char *kernel_name = "";
cudaError_t last_error = cudaSuccess;
static std::map<std::string, long> *counts;
static std::vector<std::pair<std::string, std::string>> *registry;
static long nlaunches, nthreads_total;
static uint64_t block_serial; /* blocks run so far: the generation of __shared__ arrays */

void poison(const void *p, size_t n) {
#ifdef EMU_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}
void unpoison(const void *p, size_t n) {
#ifdef EMU_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

void fail(const char *fmt, ...) {
  if (nerrors++ == 0) {
    int k = snprintf(errmsg, sizeof errmsg, "%s [block %u thread %u]: ", kernel_name, block_idx.x,
                     cur ? cur->tid.x : 0u);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && k < (int)sizeof errmsg) vsnprintf(errmsg + k, sizeof errmsg - k, fmt, ap);
    va_end(ap);
  }
  last_error = cudaErrorLaunchFailure;
}

long take_errors(char *msg, size_t n) {
  long e = nerrors;
  if (msg && n) snprintf(msg, n, "%s", e ? errmsg : "");
  nerrors = 0;
  errmsg[0] = 0;
  return e;
}

/* ---- Fibers ------------------------------------------------------------------------------- */
#ifdef EMU_UCONTEXT
static ucontext_t sched_uc;
#else
static void *sched_sp;
/* Saves the callee-saved registers on the current stack, stores the stack
 * pointer in *save, continues on stack `to` (System V x86-64; the FP control
 * words are not changed by the kernels, so they are not switched). */
extern "C" void emu_ctx_switch(void **save, void *to);
asm(".pushsection .text\n"
    ".globl emu_ctx_switch\n"
    ".type emu_ctx_switch,@function\n"
    "emu_ctx_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_ctx_switch,.-emu_ctx_switch\n"
    ".popsection\n");
#endif

#ifdef EMU_ASAN
static const void *sched_stack_bottom;
static size_t sched_stack_size;
#define EMU_STACK (512 * 1024)
#else
#define EMU_STACK (256 * 1024)
#endif

static std::vector<Fiber> fibers;
static const std::function<void()> *body; /* the running launch's threads */

/* Scheduler -> fiber f, back when f waits or finishes. */
static void resume(Fiber *f) {
  cur = f;
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, f->stack, f->stack_size);
#endif
#ifdef EMU_UCONTEXT
  swapcontext(&sched_uc, (ucontext_t *)f->ctx);
#else
  emu_ctx_switch(&sched_sp, f->sp);
#endif
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

/* Fiber -> scheduler (done: never resumed). */
static void yield(bool done) {
  Fiber *f = cur;
#ifdef EMU_ASAN
  __sanitizer_start_switch_fiber(done ? nullptr : &f->asan_fake, sched_stack_bottom,
                                 sched_stack_size);
#endif
#ifdef EMU_UCONTEXT
  swapcontext((ucontext_t *)f->ctx, &sched_uc);
#else
  emu_ctx_switch(&f->sp, sched_sp);
#endif
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(f->asan_fake, nullptr, nullptr);
#endif
  (void)done;
}

static void fiber_main() {
#ifdef EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &sched_stack_bottom, &sched_stack_size);
#endif
  (*body)();
  cur->done = true;
  yield(true);
  abort(); /* never resumed */
}

static void fiber_prepare(Fiber &f) {
  if (!f.stack) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = (char *)mmap(nullptr, EMU_STACK + page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      perror("cuda emulator: mmap of a fiber stack");
      abort();
    }
    mprotect(m, page, PROT_NONE); /* guard page: an overflow faults */
    f.stack = m + page;
    f.stack_size = EMU_STACK;
#ifdef EMU_UCONTEXT
    f.ctx = new ucontext_t;
#endif
  }
  f.done = false;
  f.wait = nullptr;
#ifdef EMU_UCONTEXT
  ucontext_t *uc = (ucontext_t *)f.ctx;
  getcontext(uc);
  uc->uc_stack.ss_sp = f.stack;
  uc->uc_stack.ss_size = f.stack_size;
  uc->uc_link = nullptr;
  makecontext(uc, fiber_main, 0);
#else
  /* The stack as emu_ctx_switch leaves it: six registers, then the return
   * address fiber_main, entered with rsp = 8 mod 16 as after a call. */
  uintptr_t top = ((uintptr_t)f.stack + f.stack_size) & ~(uintptr_t)15;
  void **sp = (void **)top;
  *--sp = nullptr; /* fiber_main's return address: never used */
  *--sp = (void *)fiber_main;
  for (int i = 0; i < 6; i++) *--sp = nullptr;
  f.sp = sp;
#endif
}

/* ---- Barriers ------------------------------------------------------------------------------ */
void wait(Barrier &b, int n) {
  uint64_t g = b.gen;
  if (++b.arrived == n) { /* the last one releases the others and goes on */
    b.arrived = 0;
    b.gen++;
    if (&b == &block_bar) block_acc[(g + 1) & 1] = 0;
    return;
  }
  cur->wait = &b;
  cur->wait_gen = g;
  yield(false);
}

void warp_sync(const char *what, unsigned mask) {
  int w = cur->lin >> 5;
  if (mask != 0xffffffffu) {
    fail("%s with mask %#x: the emulator only has full-warp masks", what, mask);
    return;
  }
  if ((w + 1) * 32 > nthreads) {
    fail("%s in a partial warp (%d threads per block): lanes of the mask don't exist", what,
         nthreads);
    return;
  }
  wait(warps[w].bar, 32);
}

/* ---- Launches ---------------------------------------------------------------------------- */
static std::vector<int> order_of(int n, uint64_t mode_seed) {
  std::vector<int> o((size_t)n);
  int mode = (int)(mode_seed % 3);
  for (int i = 0; i < n; i++) o[(size_t)i] = mode == 1 ? n - 1 - i : i;
  if (mode == 2) { /* a fixed shuffle */
    uint64_t s = mode_seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = n - 1; i > 0; i--) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      int j = (int)(s % (uint64_t)(i + 1));
      std::swap(o[(size_t)i], o[(size_t)j]);
    }
  }
  return o;
}

static const char *dead_reason(const Fiber &f) {
  if (!f.wait) return "exited";
  if (f.wait == &block_bar) return "__syncthreads";
  return "a warp primitive";
}

/* Runs the block's threads to completion. greedy: after every switch, the
 * first runnable thread in `order` runs (a thread runs ahead of the others
 * as far as the barriers let it); else round-robin in `order`. */
static void run_block(const std::vector<int> &order, bool greedy) {
  int n = nthreads;
  block_bar = Barrier();
  block_acc[0] = block_acc[1] = 0;
  for (int w = 0; w < 32; w++) warps[w].bar = Barrier();
  block_serial++;
  for (int i = 0; i < n; i++) {
    Fiber &f = fibers[(size_t)i];
    f.lin = i;
    f.tid = uint3{(unsigned)i % block_dim.x, (unsigned)i / block_dim.x % block_dim.y,
                  (unsigned)i / (block_dim.x * block_dim.y)};
    fiber_prepare(f);
  }
  int live = n;
  while (live > 0) {
    bool progress = false;
    for (int i : order) {
      Fiber &f = fibers[(size_t)i];
      if (f.done || (f.wait && f.wait->gen == f.wait_gen)) continue;
      f.wait = nullptr;
      resume(&f);
      progress = true;
      if (f.done) live--;
      if (greedy) break;
    }
    if (!progress) {
      /* Who waits where: the first waiting thread and the first thread not there. */
      int a = -1, b = -1;
      for (int i = 0; i < n; i++) {
        if (!fibers[(size_t)i].done && a < 0) a = i;
      }
      const Fiber &fa = fibers[(size_t)a];
      for (int i = 0; i < n; i++) {
        const Fiber &fi = fibers[(size_t)i];
        bool peer = fa.wait == &block_bar || (i >> 5) == (a >> 5);
        if (peer && (fi.done || fi.wait != fa.wait)) {
          b = i;
          break;
        }
      }
      cur = &fibers[(size_t)a];
      if (b >= 0)
        fail("deadlock: thread %d waits at %s, thread %d %s%s", a, dead_reason(fa), b,
             fibers[(size_t)b].done ? "" : "waits at ",
             fibers[(size_t)b].done ? "exited" : dead_reason(fibers[(size_t)b]));
      else
        fail("deadlock: thread %d waits at %s", a, dead_reason(fa));
      for (int i = 0; i < n; i++) /* abandoned mid-frame: clear its stack's poison */
        if (!fibers[(size_t)i].done)
          unpoison(fibers[(size_t)i].stack, fibers[(size_t)i].stack_size);
      return;
    }
  }
}

static std::string base_name(const char *name) {
  std::string s(name);
  size_t t = s.find('<');
  return t == std::string::npos ? s : s.substr(0, t);
}

static unsigned char *dyn_smem; /* this launch's dynamic shared memory, exactly its size */
static std::vector<std::pair<void *, uint64_t>> shared_seen;

bool config_ok(const char *name, const emu_cfg &c) {
  long long g = (long long)c.grid.x * c.grid.y * c.grid.z;
  long long t = (long long)c.block.x * c.block.y * c.block.z;
  if (c.bad || g < 1 || c.grid.x > 2147483647u || c.grid.y > 65535 || c.grid.z > 65535 || t < 1 ||
      t > 1024 || c.block.z > 64 || c.smem > 48 * 1024) {
    kernel_name = name;
    cur = nullptr;
    fail(
        "invalid launch configuration: grid %ux%ux%u, block %ux%ux%u, %zu bytes of shared memory%s",
        c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z, c.smem,
        c.bad ? " (a size out of range)" : "");
    last_error = cudaErrorInvalidConfiguration;
    return false;
  }
  return true;
}

void run_grid(const char *name, const emu_cfg &c, const std::function<void()> &run) {
  if (!counts) counts = new std::map<std::string, long>;
  (*counts)[base_name(name)]++;
  nlaunches++;
  kernel_name = name;
  long long g = (long long)c.grid.x * c.grid.y * c.grid.z;
  long long t = (long long)c.block.x * c.block.y * c.block.z;
  nthreads = (int)t;
  nthreads_total += g * t;
  block_dim = c.block;
  grid_dim = c.grid;
  free(dyn_smem);
  dyn_smem = c.smem ? (unsigned char *)malloc(c.smem) : nullptr;
  if (fibers.size() < (size_t)nthreads) fibers.resize((size_t)nthreads);
  body = &run;
  /* thread orders and policies change per launch: ascending, descending or
   * shuffled, round-robin or greedy */
  std::vector<int> torder = order_of(nthreads, (uint64_t)nlaunches);
  bool greedy = (nlaunches / 3) % 2 == 1;
  std::vector<int> border =
      order_of((int)(g < 4096 ? g : 1), (uint64_t)nlaunches / 6); /* big grids: in order */
  long before = nerrors;
  for (long long i = 0; i < g && nerrors == before; i++) {
    long long b = g < 4096 ? border[(size_t)i] : i;
    block_idx = uint3{(unsigned)(b % c.grid.x), (unsigned)(b / c.grid.x % c.grid.y),
                      (unsigned)(b / ((long long)c.grid.x * c.grid.y))};
    if (c.smem) memset(dyn_smem, 0xa5, c.smem);
    run_block(torder, greedy);
  }
  cur = nullptr;
}
}  // namespace emu

void emu_misaligned(const void *p, int align, const char *what) {
  emu::fail("misaligned %s at %p (needs %d-byte alignment)", what, p, align);
}

void emu_shared_fresh(void *p, size_t n) {
  for (auto &s : emu::shared_seen)
    if (s.first == p) {
      if (s.second != emu::block_serial) {
        s.second = emu::block_serial;
        memset(p, 0xa5, n); /* garbage: what another block left is not this block's data */
      }
      return;
    }
  emu::shared_seen.push_back({p, emu::block_serial});
  memset(p, 0xa5, n);
}

void *emu_dynamic_shared(void) {
  static unsigned char none[64];
  if (emu::dyn_smem) return emu::dyn_smem;
  emu::fail("extern __shared__ memory used by a launch that gave it 0 bytes");
  return none;
}

emu_kernel_registrar::emu_kernel_registrar(const char *file, const char *kernel) {
  if (!emu::registry) emu::registry = new std::vector<std::pair<std::string, std::string>>;
  emu::registry->push_back({file, kernel});
}

namespace emu {
long launches(const char *prefix) {
  long n = 0;
  if (counts)
    for (auto &kv : *counts)
      if (kv.first.compare(0, strlen(prefix), prefix) == 0) n += kv.second;
  return n;
}
long total_launches(void) { return nlaunches; }
long total_threads(void) { return nthreads_total; }
void reset_coverage(void) {
  if (counts) counts->clear();
}
void report_coverage(const char *files) {
  printf("  kernels launched (emulated):");
  if (counts)
    for (auto &kv : *counts) printf(" %s x%ld;", kv.first.c_str(), kv.second);
  printf("\n");
  std::string missing;
  std::string fl = std::string(",") + files + ",";
  std::set<std::pair<std::string, std::string>> seen;
  if (registry)
    for (auto &r : *registry)
      if (fl.find("," + r.first + ",") != std::string::npos &&
          (!counts || !counts->count(r.second)) && seen.insert(r).second)
        missing += " " + r.first + ":" + r.second;
  if (!missing.empty())
    printf("  kernels of these files never launched here:%s\n", missing.c_str());
}
}  // namespace emu

/* ---- Error names (both runtimes) --------------------------------------------------------- */
const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    default:
      return "cudaError (emulated)";
  }
}
const char *cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }

