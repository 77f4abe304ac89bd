/* The CUDA runtime of the EMULATED GPU that the whole library runs on in the
 * `[cuda_emulated]` tests (README.md): devices, device memory, streams,
 * events and pinned memory, with the semantics of the real runtime where the
 * library could get them wrong.
 *
 * * Asynchrony. Work (kernels, copies, memsets, cuBLAS/cuDNN calls) is queued
 *   on its stream and runs only when the host has to wait for it: a stream,
 *   event or device synchronization, a copy to pageable host memory, an event
 *   query (which lets a random part of the queued work run, as a GPU makes
 *   progress on its own). Streams are picked in a seeded random order among
 *   those that may run (CT_EMU_SEED), honouring the legacy default stream's
 *   ordering with blocking streams and cudaStreamWaitEvent. A host read of a
 *   result it has not waited for sees the garbage the memory held.
 * * Device memory. Each device's memory is one mapping, readable and writable
 *   only while queued work runs: host code that touches device memory
 *   (instead of copying it) faults with a message. cudaMalloc fills blocks
 *   with garbage (0xff: nan, -1) and fails with cudaErrorMemoryAllocation past
 *   CT_EMU_DEVICE_MEMORY bytes (default 2 GiB) per device.
 * * Devices. CT_EMU_DEVICES devices (default 2, so GPU-to-GPU copies run),
 *   each "ctensor CUDA emulator" with 4 SMs and compute capability 9.0
 *   (CT_EMU_COMPUTE_CAPABILITY="9.0,7.5" gives each device its own);
 *   CUDA_VISIBLE_DEVICES selects among them as the real runtime does (a list
 *   of indices; an invalid entry ends it).
 * * Errors. A kernel the emulator finds at fault (deadlock, misaligned vector
 *   access, bad launch configuration) stops the process with the report.
 *
 * One mutex serializes the runtime (the library calls it from its data
 * loader's threads too); queued work runs on whichever thread waits for it. */
#include <stdarg.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "backend/cuda/common.cuh"
#include "emu_calls.h"
#include "emu_control.h"
#include "emu_lib.h"

namespace {

constexpr int kMaxDevices = 8;

struct Event;

struct Item {
  enum Kind { WORK, RECORD, WAIT } kind;
  uint64_t seq;
  const char *name;
  std::function<void()> fn; /* WORK */
  Event *event;             /* RECORD, WAIT */
  uint64_t wait_for;        /* WAIT: the record it waits for */
};

struct Stream {
  int dev;
  bool blocking; /* orders itself with the legacy default stream */
  std::deque<Item> q;
};

struct Event {
  int dev;
  bool timing;
  uint64_t recorded = 0; /* seq of the latest record enqueued (0: never) */
  uint64_t done = 0;     /* seq of the latest record that ran */
  double ms = 0;         /* host time when it ran */
  int refs = 1;          /* the handle and the queued items that name it */
  bool destroyed = false;
};

struct Arena {
  char *base = nullptr;
  size_t size = 0;
  std::map<size_t, size_t> free_list; /* offset -> size */
  std::map<size_t, size_t> used;      /* offset -> size */
  std::map<size_t, size_t> asked;     /* offset -> the size cudaMalloc was asked for */
  size_t in_use = 0;
};

std::recursive_mutex mu;
int ndev = -1;
int capability[kMaxDevices]; /* 10 * major + minor, CT_EMU_COMPUTE_CAPABILITY */
int visible[kMaxDevices]; /* visible index -> emulated device */
Arena arena[kMaxDevices];
Stream legacy[kMaxDevices];
std::vector<Stream *> streams; /* user streams, all devices */
std::map<const char *, size_t, std::less<>> pinned; /* pinned host blocks -> size */
thread_local int current_dev = 0;
/* Devices with a (primary) context: made by cudaSetDevice (CUDA 12 and later)
 * and by the first call that needs one on the thread's current device. A
 * context costs a GPU hundreds of MiB: a process working on GPU k must not
 * make one on GPU 0. */
bool has_context[kMaxDevices];
/* The real runtime keeps one last error per host thread (programming guide,
 * "Error Checking"): an error of a data-loader thread is not the main thread's. */
thread_local cudaError_t last_error = cudaSuccess;
uint64_t next_seq = 1;
uint64_t rng = 0x9e3779b97f4a7c15ull;
int open_depth = 0; /* device memory is accessible while > 0 */

[[noreturn]] void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "CUDA emulator (the library on an emulated GPU): ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  abort();
}

uint64_t next_random() {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

double now_ms() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

size_t env_size(const char *name, size_t dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  return *end ? dflt : (size_t)x;
}

/* A host access to device memory lands here. */
void on_segv(int sig, siginfo_t *si, void *) {
  const char *a = (const char *)si->si_addr;
  for (int d = 0; d < kMaxDevices; d++)
    if (arena[d].base && a >= arena[d].base && a < arena[d].base + arena[d].size) {
      static const char msg[] =
          "CUDA emulator: host code read or wrote emulated DEVICE memory (a pointer that only "
          "kernels and copies may use); see the backtrace of this crash\n";
      ssize_t r = write(2, msg, sizeof msg - 1);
      (void)r;
      break;
    }
  signal(sig, SIG_DFL); /* re-raised on return: the sanitizers' or the default report */
}

void set_access(bool open) {
  for (int d = 0; d < kMaxDevices; d++)
    if (arena[d].base && mprotect(arena[d].base, arena[d].size, open ? PROT_READ | PROT_WRITE : PROT_NONE))
      die("mprotect of device %d's memory failed", d);
}

struct OpenDevices {
  OpenDevices() {
    if (open_depth++ == 0) set_access(true);
  }
  ~OpenDevices() {
    if (--open_depth == 0) set_access(false);
  }
};

void init_locked() {
  if (ndev >= 0) return;
  int n = (int)env_size("CT_EMU_DEVICES", 2);
  if (n > kMaxDevices) n = kMaxDevices;
  size_t bytes = env_size("CT_EMU_DEVICE_MEMORY", (size_t)2 << 30);
  bytes = (bytes + 4095) & ~(size_t)4095;
  if (const char *s = getenv("CT_EMU_SEED")) rng ^= strtoull(s, nullptr, 10) * 0xbf58476d1ce4e5b9ull + 1;
  for (int d = 0; d < n; d++) {
    void *m = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) die("cannot reserve %zu bytes for device %d", bytes, d);
    /* huge pages: the mprotect of every wait walks 512 times fewer entries */
    (void)madvise(m, bytes, MADV_HUGEPAGE);
    arena[d].base = (char *)m;
    arena[d].size = bytes;
    arena[d].free_list[0] = bytes;
    legacy[d].dev = d;
    legacy[d].blocking = true;
  }
  /* CT_EMU_COMPUTE_CAPABILITY: "major.minor" per device, comma-separated
   * (the last one repeats); 9.0 by default */
  const char *cc = getenv("CT_EMU_COMPUTE_CAPABILITY");
  int last = 90;
  for (int d = 0; d < n; d++) {
    int major, minor;
    if (cc && *cc && sscanf(cc, "%d.%d", &major, &minor) == 2) {
      last = 10 * major + minor;
      cc = strchr(cc, ',');
      cc = cc ? cc + 1 : nullptr;
    }
    capability[d] = last;
  }
  /* CUDA_VISIBLE_DEVICES: indices in order, up to the first invalid one */
  int nv = 0;
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  if (!vis) {
    for (int d = 0; d < n; d++) visible[nv++] = d;
  } else {
    const char *p = vis;
    while (*p && nv < n) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p || v < 0 || v >= n) break;
      bool dup = false;
      for (int i = 0; i < nv; i++) dup = dup || visible[i] == v;
      if (dup) break;
      visible[nv++] = (int)v;
      p = *end == ',' ? end + 1 : end;
      if (end == p) break;
    }
  }
  ndev = nv;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigaction(SIGSEGV, &sa, nullptr);
}

void need_context() { has_context[visible[current_dev]] = true; }

Stream *stream_of(cudaStream_t s) {
  /* 0 and cudaStreamLegacy (0x1, as DLPack's consumers name it) */
  if (!s || s == (cudaStream_t)1) return &legacy[visible[current_dev]];
  for (Stream *u : streams)
    if ((cudaStream_t)u == s) return u;
  return nullptr;
}

bool has_before(const Stream *s, uint64_t seq) { return !s->q.empty() && s->q.front().seq < seq; }

/* May the head of s run now? */
bool runnable(const Stream *s) {
  const Item &h = s->q.front();
  if (h.kind == Item::WAIT && h.event->done < h.wait_for) return false;
  if (s == &legacy[s->dev]) {
    for (const Stream *u : streams)
      if (u->dev == s->dev && u->blocking && has_before(u, h.seq)) return false;
  } else if (s->blocking && has_before(&legacy[s->dev], h.seq)) {
    return false;
  }
  return true;
}

void release(Event *e) {
  if (--e->refs == 0) delete e;
}

void run_item(Stream *s) {
  Item it = std::move(s->q.front());
  s->q.pop_front();
  switch (it.kind) {
  case Item::WORK:
    it.fn(); /* device memory is open: progress() */
    break;
  case Item::RECORD:
    it.event->done = it.seq;
    it.event->ms = now_ms();
    release(it.event);
    break;
  case Item::WAIT:
    release(it.event);
    break;
  }
  char msg[512];
  if (emu::take_errors(msg, sizeof msg)) die("in %s: %s", it.name, msg);
}

/* Runs queued work, streams in a random order, until done() (or, with
 * budget >= 0, until that many items ran). */
template <class Done> void progress(Done done, long budget = -1) {
  if (done()) return;
  OpenDevices open; /* for the whole run: one mprotect pair per wait, not per item */
  std::vector<Stream *> ready;
  while (!done() && budget != 0) {
    ready.clear();
    bool pending = false;
    for (int d = 0; d < ndev; d++) {
      Stream *s = &legacy[visible[d]];
      if (!s->q.empty()) pending = true, runnable(s) ? ready.push_back(s) : (void)0;
    }
    for (Stream *s : streams)
      if (!s->q.empty()) pending = true, runnable(s) ? ready.push_back(s) : (void)0;
    if (ready.empty()) {
      if (pending) die("deadlock: queued work waits for events that are never recorded before it");
      return;
    }
    run_item(ready[next_random() % ready.size()]);
    if (budget > 0) budget--;
  }
}

void drain_stream(Stream *s) {
  progress([s] { return s->q.empty(); });
}

void drain_device(int dev) {
  progress([dev] {
    if (!legacy[dev].q.empty()) return false;
    for (Stream *u : streams)
      if (u->dev == dev && !u->q.empty()) return false;
    return true;
  });
}

void drain_all() {
  progress([] { return false; });
}

void enqueue(Stream *s, Item it) {
  it.seq = next_seq++;
  s->q.push_back(std::move(it));
}

cudaError_t fail(cudaError_t e) {
  last_error = e;
  return e;
}

/* Is [p, p + n) inside one block of device memory? */
bool in_device(const void *p, size_t n) {
  const char *c = (const char *)p;
  for (int d = 0; d < kMaxDevices; d++) {
    const Arena &a = arena[d];
    if (!a.base || c < a.base || c >= a.base + a.size) continue;
    size_t off = (size_t)(c - a.base);
    auto it = a.used.upper_bound(off);
    if (it == a.used.begin()) return false;
    --it;
    return off + n <= it->first + it->second;
  }
  return false;
}

bool in_pinned(const void *p, size_t n) {
  const char *c = (const char *)p;
  auto it = pinned.upper_bound(c);
  if (it == pinned.begin()) return false;
  --it;
  return c >= it->first && c + n <= it->first + it->second;
}

}  // namespace

/* ---- Hooks for the emulated libraries (emu_lib.h) ---------------------------------------- */

extern "C" bool emu_lib_check_device(const void *p, size_t bytes, const char *what) {
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (bytes == 0 || in_device(p, bytes) || in_pinned(p, bytes)) return true;
  fprintf(stderr, "CUDA emulator: %s: [%p, +%zu bytes) is not device memory\n", what, p, bytes);
  return false;
}

extern "C" bool emu_lib_has_context(int dev) {
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  return dev >= 0 && dev < ndev && has_context[visible[dev]];
}

extern "C" size_t emu_lib_device_block_size(const void *p) {
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  for (int d = 0; d < kMaxDevices; d++) {
    const Arena &a = arena[d];
    if (!a.base || (const char *)p < a.base || (const char *)p >= a.base + a.size) continue;
    auto it = a.asked.find((size_t)((const char *)p - a.base));
    return it == a.asked.end() ? 0 : it->second;
  }
  return 0;
}

void emu_lib_enqueue(cudaStream_t stream, const char *name, std::function<void()> fn) {
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  Stream *s = stream_of(stream);
  if (!s) die("%s: unknown stream %p", name, (void *)stream);
  enqueue(s, Item{Item::WORK, 0, name, std::move(fn), nullptr, 0});
  if (emu::launch_blocking) drain_stream(s);
}

/* ---- Kernel launches (shim/cuda_runtime.h) ------------------------------------------------ */

namespace emu {
void launch(const char *name, const emu_cfg &c, std::function<void()> body) {
  EMU_CALL_NAMED("kernel launch");
  emu_calls_kernel(name);
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (!config_ok(name, c)) {
    char msg[512];
    take_errors(msg, sizeof msg);
    die("%s", msg); /* a bad configuration is the backend's bug, not the user's */
  }
  Stream *s = stream_of(c.stream);
  if (!s) die("launch of %s on an unknown stream %p", name, (void *)c.stream);
  if (s->dev != visible[current_dev])
    die("launch of %s on a stream of device %d while device %d is current", name, s->dev, visible[current_dev]);
  need_context();
  emu_cfg cfg = c;
  enqueue(s, Item{Item::WORK, 0, name, [name, cfg, body = std::move(body)] { run_grid(name, cfg, body); }, nullptr, 0});
}
}  // namespace emu

/* ---- Errors ---------------------------------------------------------------------------- */

cudaError_t cudaGetLastError(void) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) {
  EMU_CALL();
  return last_error;
}

/* ---- Devices ---------------------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *n) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  *n = ndev;
  return ndev > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}
cudaError_t cudaGetDevice(int *d) {
  EMU_CALL();
  *d = current_dev;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (d < 0 || d >= ndev) return fail(cudaErrorInvalidDevice);
  current_dev = d;
  need_context(); /* as CUDA 12's cudaSetDevice */
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {
  EMU_CALL();
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) {
  EMU_CALL();
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int d) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (d < 0 || d >= ndev) return fail(cudaErrorInvalidDevice);
  switch (attr) {
  case cudaDevAttrMultiProcessorCount: *v = emu::sm_count; return cudaSuccess;
  case cudaDevAttrComputeCapabilityMajor: *v = capability[visible[d]] / 10; return cudaSuccess;
  case cudaDevAttrComputeCapabilityMinor: *v = capability[visible[d]] % 10; return cudaSuccess;
  default: return fail(cudaErrorInvalidValue);
  }
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (d < 0 || d >= ndev) return fail(cudaErrorInvalidDevice);
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "ctensor CUDA emulator");
  for (int i = 0; i < 16; i++) p->uuid.bytes[i] = (char)(0x40 + 16 * visible[d] + i);
  p->totalGlobalMem = arena[visible[d]].size;
  p->major = capability[visible[d]] / 10;
  p->minor = capability[visible[d]] % 10;
  p->multiProcessorCount = emu::sm_count;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxThreadsPerBlock = 1024;
  p->warpSize = 32;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 48 * 1024;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->l2CacheSize = 1 << 20;
  p->memoryBusWidth = 64;
  p->pciBusID = visible[d];
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  drain_device(visible[current_dev]);
  return last_error;
}

/* ---- Device memory ---------------------------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t n) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  *p = nullptr;
  Arena &a = arena[visible[current_dev]];
  size_t need = (n + 255) & ~(size_t)255;
  if (need == 0) need = 256;
  for (auto it = a.free_list.begin(); it != a.free_list.end(); ++it) {
    if (it->second < need) continue;
    size_t off = it->first, rest = it->second - need;
    a.free_list.erase(it);
    if (rest) a.free_list[off + need] = rest;
    a.used[off] = need;
    a.asked[off] = n;
    a.in_use += need;
    *p = a.base + off;
    OpenDevices open;
    memset(*p, 0xff, n); /* garbage: nan as floats, -1 as integers */
    return cudaSuccess;
  }
  return fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void *p) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (!p) return cudaSuccess;
  drain_all(); /* cudaFree synchronizes the device */
  for (int d = 0; d < kMaxDevices; d++) {
    Arena &a = arena[d];
    if (!a.base || (char *)p < a.base || (char *)p >= a.base + a.size) continue;
    size_t off = (size_t)((char *)p - a.base);
    auto it = a.used.find(off);
    if (it == a.used.end()) die("cudaFree(%p): not a block of cudaMalloc", p);
    size_t sz = it->second;
    a.used.erase(it);
    a.asked.erase(off);
    a.in_use -= sz;
    auto nx = a.free_list.lower_bound(off);
    if (nx != a.free_list.end() && nx->first == off + sz) sz += nx->second, a.free_list.erase(nx);
    auto pv = a.free_list.lower_bound(off);
    if (pv != a.free_list.begin()) {
      --pv;
      if (pv->first + pv->second == off) {
        pv->second += sz;
        return cudaSuccess;
      }
    }
    a.free_list[off] = sz;
    return cudaSuccess;
  }
  return fail(cudaErrorInvalidValue);
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  const Arena &a = arena[visible[current_dev]];
  *total = a.size;
  *free_b = a.size - a.in_use;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  size_t sz = (n + 63) & ~(size_t)63;
  *p = aligned_alloc(64, sz ? sz : 64);
  if (!*p) return fail(cudaErrorMemoryAllocation);
  memset(*p, 0xff, n); /* what a fresh pinned block holds is not to be read */
  pinned[(const char *)*p] = n;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  if (!p) return cudaSuccess;
  drain_all(); /* cudaFreeHost synchronizes */
  auto it = pinned.find((const char *)p);
  if (it == pinned.end()) die("cudaFreeHost(%p): not a block of cudaHostAlloc", p);
  pinned.erase(it);
  free(p);
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **dp, void *p, unsigned) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  if (!in_pinned(p, 1)) return fail(cudaErrorInvalidValue);
  *dp = p; /* unified addressing */
  return cudaSuccess;
}

/* ---- Copies and memsets -------------------------------------------------------------------- */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t stream) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  if (n == 0) return cudaSuccess;
  Stream *s = stream_of(stream);
  if (!s) die("cudaMemcpyAsync on an unknown stream %p", (void *)stream);
  bool dst_dev = in_device(dst, n), src_dev = in_device(src, n);
  bool dst_pin = in_pinned(dst, n), src_pin = in_pinned(src, n);
  bool ok = true;
  switch (kind) {
  case cudaMemcpyHostToDevice: ok = dst_dev && !src_dev; break;
  case cudaMemcpyDeviceToHost: ok = src_dev && !dst_dev; break;
  case cudaMemcpyDeviceToDevice: ok = src_dev && dst_dev; break;
  case cudaMemcpyHostToHost: ok = !src_dev && !dst_dev; break;
  default: break;
  }
  if (!ok)
    die("cudaMemcpyAsync of %zu bytes, kind %d: the pointers' memory (dst %s, src %s) does not match the kind", n,
        (int)kind, dst_dev ? "device" : dst_pin ? "pinned" : "pageable", src_dev ? "device" : src_pin ? "pinned" : "pageable");
  if (((char *)dst < (const char *)src + n && (const char *)src < (char *)dst + n))
    die("cudaMemcpyAsync: overlapping source and destination (%zu bytes)", n);
  if (!src_dev && !src_pin) {
    /* pageable source: staged now, so the caller may reuse it at once */
    auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + n);
    enqueue(s, Item{Item::WORK, 0, "cudaMemcpyAsync (staged)", [dst, staged] { memcpy(dst, staged->data(), staged->size()); },
                    nullptr, 0});
  } else {
    enqueue(s, Item{Item::WORK, 0, "cudaMemcpyAsync", [dst, src, n] { memcpy(dst, src, n); }, nullptr, 0});
  }
  /* pageable destination: the call returns when the copy is done */
  if ((!dst_dev && !dst_pin) || emu::launch_blocking) drain_stream(s);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, 0);
  if (e == cudaSuccess) drain_stream(stream_of(0));
  return e;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t stream) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  if (n == 0) return cudaSuccess;
  Stream *s = stream_of(stream);
  if (!s) die("cudaMemsetAsync on an unknown stream %p", (void *)stream);
  if (!in_device(dst, n) && !in_pinned(dst, n)) die("cudaMemsetAsync of %zu bytes at %p: not device memory", n, dst);
  enqueue(s, Item{Item::WORK, 0, "cudaMemsetAsync", [dst, value, n] { memset(dst, value, n); }, nullptr, 0});
  if (emu::launch_blocking) drain_stream(s);
  return cudaSuccess;
}

/* ---- Streams -------------------------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned flags) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  Stream *s = new Stream{visible[current_dev], !(flags & cudaStreamNonBlocking), {}};
  streams.push_back(s);
  *out = (cudaStream_t)s;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  Stream *s = stream ? stream_of(stream) : nullptr;
  if (!s) return fail(cudaErrorInvalidValue);
  drain_stream(s); /* its work completes, then it is released */
  for (size_t i = 0; i < streams.size(); i++)
    if (streams[i] == s) streams.erase(streams.begin() + (long)i);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  Stream *s = stream_of(stream);
  if (!s) return fail(cudaErrorInvalidValue);
  drain_stream(s);
  return last_error;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t ev, unsigned) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  Stream *s = stream_of(stream);
  Event *e = (Event *)ev;
  if (!s || !e || e->destroyed) return fail(cudaErrorInvalidResourceHandle);
  if (e->recorded == 0) return cudaSuccess; /* never recorded: nothing to wait for */
  e->refs++;
  enqueue(s, Item{Item::WAIT, 0, "cudaStreamWaitEvent", {}, e, e->recorded});
  return cudaSuccess;
}

/* ---- Events --------------------------------------------------------------------------------- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned flags) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  need_context();
  Event *e = new Event;
  e->dev = visible[current_dev];
  e->timing = !(flags & cudaEventDisableTiming);
  *out = (cudaEvent_t)e;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  Event *e = (Event *)ev;
  if (!e || e->destroyed) return fail(cudaErrorInvalidResourceHandle);
  e->destroyed = true; /* queued records and waits keep it until they ran */
  release(e);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t stream) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  init_locked();
  Event *e = (Event *)ev;
  Stream *s = stream_of(stream);
  if (!e || e->destroyed || !s) return fail(cudaErrorInvalidResourceHandle);
  if (e->dev != s->dev) return fail(cudaErrorInvalidResourceHandle); /* as the real runtime */
  e->refs++;
  Item it{Item::RECORD, 0, "cudaEventRecord", {}, e, 0};
  enqueue(s, std::move(it));
  e->recorded = s->q.back().seq;
  if (emu::launch_blocking) drain_stream(s);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t ev) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  Event *e = (Event *)ev;
  if (!e || e->destroyed) return fail(cudaErrorInvalidResourceHandle);
  if (e->done < e->recorded) progress([e] { return e->done >= e->recorded; }, (long)(next_random() % 4));
  /* NotReady is an answer, not a failure, but the real runtime also stores it
   * as the thread's last error (PyTorch clears it after every query): a caller
   * that doesn't clear it sees it at its next cudaGetLastError, a launch check. */
  return e->done >= e->recorded ? cudaSuccess : fail(cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  Event *e = (Event *)ev;
  if (!e || e->destroyed) return fail(cudaErrorInvalidResourceHandle);
  progress([e] { return e->done >= e->recorded; });
  return last_error;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  EMU_CALL();
  std::lock_guard<std::recursive_mutex> g(mu);
  Event *s = (Event *)a, *e = (Event *)b;
  if (!s || !e || s->destroyed || e->destroyed) return fail(cudaErrorInvalidResourceHandle);
  if (!s->timing || !e->timing) return fail(cudaErrorInvalidResourceHandle);
  if (s->recorded == 0 || e->recorded == 0) return fail(cudaErrorInvalidResourceHandle);
  if (s->done < s->recorded || e->done < e->recorded) return fail(cudaErrorNotReady);
  *ms = (float)(e->ms - s->ms);
  return cudaSuccess;
}
