/* Helpers of the emulated kernel tests (test_*.cpp here): seeded random
 * numbers, tensors over guarded host buffers with any strides, element
 * access by dtype that does not use the emulator's conversions, and failure
 * reporting. The references are plain host loops in double precision. */
#ifndef CT_EMU_TEST_H
#define CT_EMU_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_kernels.h" /* with ops/op_table.h and backend/params.h */
#include "emu_control.h"

namespace et {
extern std::mt19937_64 rng;
extern bool full; /* CT_EMU_CASES=full: the big sweep */
extern long ncases, nfail;

static inline int64_t rnd(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
static inline double unif(double a, double b) {
  return std::uniform_real_distribution<double>(a, b)(rng);
}
static inline bool coin(int one_in) { return rnd(0, one_in - 1) == 0; }

/* ---- Dtypes (independent of the emulator's conversions) ---- */
int es(int dt);
const char *dname(int dt);
static inline bool is_float(int dt) { return dt <= CT_BF16; }
static inline bool is_half(int dt) { return dt == CT_F16 || dt == CT_BF16; }
float bf16_to_f(uint16_t b);
uint16_t f_to_bf16(float f); /* round to nearest even */
float f16_to_f(uint16_t h);
uint16_t f_to_f16(float f);
/* Floats as double (halves exact); integers and bool as int64 (bool: byte != 0). */
double load_d(const char *p, int dt);
int64_t load_i(const char *p, int dt);
/* Store: floats round through float for f32/f16/bf16 (as the kernels' float
 * compute type), integers wrap to the width, bool takes v != 0. */
void store_d(char *p, int dt, double v);
void store_i(char *p, int dt, int64_t v);
/* Rounds v as store_d would (the value read back). */
double round_to(int dt, double v);
/* One ulp of dtype dt at v's magnitude (relative tolerances). */
double eps_of(int dt);

/* ---- Tensors ----
 * Elements of shape `shape` in a host buffer: dims in any order (perm), gaps
 * between them, negative strides (flips), stride-0 dims (expanded inputs),
 * and a start `off` elements past a 64-byte boundary. Guard bytes around the
 * buffer are checked (and poisoned under AddressSanitizer). */
struct Layout {
  bool perm = false, gaps = false, flips = false, expand = false;
  int64_t off = 0; /* elements */
};
struct Tensor {
  ctc_t d{};
  std::vector<unsigned char> mem;
  size_t start = 0, span = 0; /* bytes of mem holding the elements' range */
  std::vector<unsigned char> before;
  bool guarded = false;
  Tensor() = default;
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  ~Tensor();
  int dt() const { return d.dtype; }
  int64_t numel() const { return d.numel; }
  int64_t offset(int64_t i) const; /* element offset of row-major index i */
  char *at(int64_t i) const { return d.data + offset(i) * es(d.dtype); }
  double get_d(int64_t i) const { return load_d(at(i), d.dtype); }
  int64_t get_i(int64_t i) const { return load_i(at(i), d.dtype); }
  /* Snapshot of the buffer (guards included) for check_untouched. */
  void snapshot();
  /* Bytes not belonging to an element (or, all = true, any byte) changed
   * since the snapshot: returns a description of the first, or "". */
  std::string changed(bool all);
};
/* Builds t (fills the buffer with a byte pattern; elements are left to the caller). */
void make(Tensor &t, int dt, const std::vector<int64_t> &shape, const Layout &lay);
/* A view of t's buffer as another descriptor (shares memory; for aliasing). */
void random_layout(Layout &lay, int dt, bool allow_expand);

/* ---- Checks ---- */
/* Records a failure of the current case (the first ones are printed). */
void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Emulator errors and unfreed scratch after an op: failures. */
bool emu_clean(const char *tag);
/* got == want for floats: same value, same sign of zero, any nan for nan. */
bool same_float(double got, double want);
/* |got - want| <= tol * max(|want|, floor) (nan and inf must match exactly). */
bool close_float(double got, double want, double tol, double floor);
std::string shape_str(const ctc_t &d);

/* ---- The entry points' arguments ----
 * The backend's entry points take the ct_tensor of their slot (backend.h):
 * a tensor over the same memory as a descriptor. ct_into fills one the caller
 * holds; ct takes one from a ring of 64 per thread (enough for the arguments
 * of one call); both give NULL for NULL. */
struct CtHold {
  ct_storage s;
  ct_tensor t;
};
ct_tensor *ct_into(CtHold &h, const ctc_t *d);
ct_tensor *ct(const ctc_t *d);

/* Per-suite bookkeeping. */
struct Suite {
  const char *name;
  long cases0, fails0;
  double t0;
  Suite(const char *n);
  int end(const char *files);
};
}  // namespace et

int run_emulator_selftest(void); /* selftest.cu */
int run_reduce(void);
int run_softmax(void);
int run_elementwise(void);
int run_index(void);
int run_random(void);
int run_unary_backward(void);
int run_norm(void);
int run_pool(void);
int run_optim(void);
int run_geometry(void);

#endif
