/* A small test harness for ctensor.
 *
 * A test file defines tests with CT_TEST(name) { ... } and, if its tests are
 * device-generic, contains the marker CT_TEST_DEVICE_GENERIC: CMake then runs
 * it once per device ("name[cpu]", "name[cuda]"); the CUDA run exits 77 and
 * ctest reports it skipped when no GPU is usable. Inside a test,
 * ct_test_device() is the device under test.
 *
 * The runner prints one line per failed check and ends with
 * "N passed, M failed" (tests, not checks). Each test body runs inside a
 * ct_scope so temporaries are freed. */
#ifndef CT_TEST_H
#define CT_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

typedef void (*ct_test_fn)(void);
void ct_test_register(const char *name, ct_test_fn fn);

#define CT_TEST(name)                                                        \
  static void test_##name(void);                                             \
  __attribute__((constructor)) static void register_##name(void) {           \
    ct_test_register(#name, test_##name);                                    \
  }                                                                          \
  static void test_##name(void)

#define CT_TEST_DEVICE_GENERIC /* marker read by tests/CMakeLists.txt */

/* The device under test (--device; default cpu). */
ct_device ct_test_device(void);
/* ct_tensor_opts for dtype on the device under test. */
ct_tensor_opts ct_test_opts(ct_dtype dtype);

/* Failure reporting (used by the macros). */
void ct_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
extern int ct_test_current_failures;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) ct_test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);       \
  } while (0)
#define CHECK_MSG(cond, ...)                                                        \
  do {                                                                              \
    if (!(cond)) ct_test_fail(__FILE__, __LINE__, __VA_ARGS__);                     \
  } while (0)
/* A call that must succeed (non-NULL / CT_OK); prints the library's error. */
#define CHECK_OK(x)                                                                 \
  do {                                                                              \
    if (!(x))                                                                       \
      ct_test_fail(__FILE__, __LINE__, "%s failed: %s: %s", #x,                     \
                   ct_status_name(ct_last_error()), ct_last_error_message());       \
  } while (0)
#define CHECK_STATUS_OK(x)                                                          \
  do {                                                                              \
    ct_status st_ = (x);                                                            \
    if (st_ != CT_OK)                                                               \
      ct_test_fail(__FILE__, __LINE__, "%s returned %s: %s", #x, ct_status_name(st_), \
                   ct_last_error_message());                                        \
  } while (0)
/* An expression that must fail (NULL / false / non-OK) with `code` and a
 * message; clears the error afterwards. */
#define CHECK_ERR(expr, code)                                                       \
  do {                                                                              \
    ct_clear_error();                                                               \
    bool failed_ = !(expr);                                                         \
    if (!failed_ || ct_last_error() != (code) || !*ct_last_error_message())         \
      ct_test_fail(__FILE__, __LINE__, "%s: expected failure %s, got %s (%s)", #expr, \
                   ct_status_name(code), failed_ ? ct_status_name(ct_last_error()) : "success", \
                   ct_last_error_message());                                        \
    ct_clear_error();                                                               \
  } while (0)
/* Same, and the message must contain `needle`. */
#define CHECK_ERR_MSG(expr, code, needle)                                           \
  do {                                                                              \
    ct_clear_error();                                                               \
    bool failed_ = !(expr);                                                         \
    if (!failed_ || ct_last_error() != (code) || !strstr(ct_last_error_message(), needle)) \
      ct_test_fail(__FILE__, __LINE__, "%s: expected failure %s mentioning '%s', got %s (%s)", \
                   #expr, ct_status_name(code), needle,                             \
                   failed_ ? ct_status_name(ct_last_error()) : "success", ct_last_error_message()); \
    ct_clear_error();                                                               \
  } while (0)

/* Runs a check and, if it failed, prints extra context (printf arguments). */
#define WITH_CONTEXT(check, ...)                                          \
  do {                                                                    \
    int f0_ = ct_test_current_failures;                                   \
    check;                                                                \
    if (ct_test_current_failures != f0_) {                                \
      printf("    context: ");                                            \
      printf(__VA_ARGS__);                                                \
      printf("\n");                                                       \
    }                                                                     \
  } while (0)

/* Tolerances per dtype for comparisons with a float64 reference. */
double ct_test_rtol(ct_dtype dtype);
double ct_test_atol(ct_dtype dtype);

/* Layouts in which ct_test_make stores values (same logical tensor):
 *   CONTIG      plain contiguous
 *   TRANSPOSED  stored with dims reversed, then permuted back (non-contiguous
 *               for ndim >= 2)
 *   SLICED      stored with every other element along the last dim (step 2)
 *   OFFSET      contiguous but at a nonzero storage offset */
typedef enum { CT_LAYOUT_CONTIG, CT_LAYOUT_TRANSPOSED, CT_LAYOUT_SLICED, CT_LAYOUT_OFFSET, CT_LAYOUT_COUNT } ct_test_layout;
extern const char *const ct_test_layout_names[CT_LAYOUT_COUNT];

/* A tensor of (shape, dtype) on the device under test holding vals (row-major,
 * converted to dtype), stored in `layout`. Owned by the current scope (tests
 * run in one), like every tensor the library returns. */
ct_tensor *ct_test_make(const double *vals, const int64_t *shape, int ndim, ct_dtype dtype,
                        ct_test_layout layout);
/* The elements of t (any device/dtype/layout) as row-major doubles (malloc'd;
 * caller frees). */
double *ct_test_values(const ct_tensor *t);
/* t after a synchronization with its device: t, or NULL (the error recorded)
 * when the synchronization reports a kernel's fault. CUDA reports bad indices
 * and integer division by zero there rather than at the launch; on the CPU the
 * op itself fails and this passes its NULL through. */
ct_tensor *ct_test_synced(ct_tensor *t);
/* n uniform doubles in [lo, hi) from a fixed-seed host RNG (malloc'd). */
double *ct_test_random(int64_t n, double lo, double hi, unsigned seed);
/* Rounds vals to what dtype can hold (so references see the stored inputs). */
void ct_test_round_to(double *vals, int64_t n, ct_dtype dtype);

/* Compares t's values with expected (row-major, n = numel) within rtol/atol;
 * nan matches nan, inf matches same-signed inf. Reports the first mismatch. */
#define CHECK_CLOSE(t, expected, rtol, atol) \
  ct_test_check_close(__FILE__, __LINE__, #t, (t), (expected), (rtol), (atol))
void ct_test_check_close(const char *file, int line, const char *what, const ct_tensor *t,
                         const double *expected, double rtol, double atol);
/* Checks shape equality. */
#define CHECK_SHAPE(t, ...) \
  ct_test_check_shape(__FILE__, __LINE__, #t, (t), (const int64_t[]){__VA_ARGS__}, CT__NARGS(__VA_ARGS__))
void ct_test_check_shape(const char *file, int line, const char *what, const ct_tensor *t,
                         const int64_t *shape, int ndim);

/* Path to Debian's python3 with numpy/torch (CT_PYTHON, else /usr/bin/python3),
 * or NULL if it lacks torch. */
const char *ct_test_python_with_torch(void);
/* Runs a Python script (source text) once per process with Debian's python
 * and torch, in a fresh temporary folder passed to it as argv[1] and removed
 * at exit. Returns the folder, or NULL when torch is missing (the caller
 * skips) or the script failed (reported as a failure). `tag` names the
 * folder (/tmp/ct_<tag>_XXXXXX). */
const char *ct_test_torch_outputs(const char *tag, const char *script);
/* <dir>/<name>.npy loaded and moved to the device under test (NULL and a
 * reported failure if it can't be read). */
ct_tensor *ct_test_load_output(const char *dir, const char *name);

/* Compares got with the torch output <dir>/<name>.npy: same shape, values
 * within rtol/atol (nan matches nan); a missing result is a failure naming
 * the library's error. `what` names the comparison in messages. */
#define CHECK_LIKE_TORCH(dir, what, got, name, rtol, atol) \
  ct_test_check_like_torch(__FILE__, __LINE__, dir, what, got, name, rtol, atol)
void ct_test_check_like_torch(const char *file, int line, const char *dir, const char *what,
                              const ct_tensor *got, const char *name, double rtol, double atol);

/* The value after "--NAME" on the test program's command line, or NULL (for
 * tests with run-time options, such as the oracle's --cases N --seed S). */
const char *ct_test_option(const char *name);

/* Marks the running test as skipped with a reason (the process exits 77 if
 * every test skipped). */
void ct_test_skip(const char *reason);
/* Skips the test (and returns) when no GPU is usable: GPU-only tests start
 * with it (CMake registers files that use it with the emulated GPU too). */
#define NEED_GPU()                              \
  do {                                          \
    if (!ct_cuda_is_available()) {              \
      ct_test_skip("no CUDA device available"); \
      return;                                   \
    }                                           \
  } while (0)

#endif /* CT_TEST_H */
