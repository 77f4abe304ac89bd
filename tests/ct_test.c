/* The test runner and helpers of ct_test.h. */
#include "ct_test.h"

#include <stdarg.h>
#include <unistd.h>

#define MAX_TESTS 1024

static struct { const char *name; ct_test_fn fn; } tests[MAX_TESTS];
static int num_tests;
static ct_device test_device;
static const char *current_test;
int ct_test_current_failures;
static bool current_skipped;

const char *const ct_test_layout_names[CT_LAYOUT_COUNT] = {"contig", "transposed", "sliced", "offset"};

void ct_test_register(const char *name, ct_test_fn fn) {
  if (num_tests < MAX_TESTS) tests[num_tests].name = name, tests[num_tests++].fn = fn;
}

ct_device ct_test_device(void) { return test_device; }
ct_tensor_opts ct_test_opts(ct_dtype dtype) {
  return (ct_tensor_opts){.dtype = dtype, .device = test_device};
}

void ct_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL %s [%s] %s:%d: ", current_test, ct_device_name(test_device), file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  ct_test_current_failures++;
}

void ct_test_skip(const char *reason) {
  printf("SKIP %s: %s\n", current_test, reason);
  current_skipped = true;
}

double ct_test_rtol(ct_dtype d) {
  switch (d) {
  case CT_F64: return 1e-12;
  case CT_F32: return 2e-6;
  case CT_F16: return 2e-3;
  case CT_BF16: return 1.6e-2;
  default: return 0;
  }
}
double ct_test_atol(ct_dtype d) {
  switch (d) {
  case CT_F64: return 1e-14;
  case CT_F32: return 1e-6;
  case CT_F16: return 1e-3;
  case CT_BF16: return 1e-2;
  default: return 0;
  }
}

/* Through a cast, which converts every value (fills refuse out-of-range ones). */
void ct_test_round_to(double *vals, int64_t n, ct_dtype dtype) {
  ct_tensor *h = ct_from_data(vals, CT_SHAPE(n), &(ct_tensor_opts){.dtype = CT_F64});
  ct_tensor *t = ct_cast(h, dtype);
  ct_tensor *back = ct_cast(t, CT_F64);
  if (back) memcpy(vals, ct_data_ptr(back), (size_t)n * sizeof(double));
  ct_free(back);
  ct_free(t);
  ct_free(h);
}

/* What fills the gaps of the SLICED and OFFSET layouts: any value a correct
 * kernel never reads; this one fits every dtype (fills check the range). */
#define GAP_VALUE 111.0

ct_tensor *ct_test_make(const double *vals, const int64_t *shape, int ndim, ct_dtype dtype,
                        ct_test_layout layout) {
  ct_tensor *host = ct_from_data(vals, shape, ndim, &(ct_tensor_opts){.dtype = CT_F64});
  ct_tensor *typed = ct_cast(host, dtype);
  ct_tensor *dev = ct_to(typed, test_device, NULL);
  ct_tensor *result = NULL;
  if (!dev) goto done;
  switch (layout) {
  case CT_LAYOUT_CONTIG:
    result = ct_clone(dev);
    break;
  case CT_LAYOUT_TRANSPOSED: {
    int perm[CT_MAX_DIMS];
    int64_t rshape[CT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) perm[d] = ndim - 1 - d, rshape[d] = shape[ndim - 1 - d];
    ct_tensor *rev = ct_empty(rshape, ndim, &(ct_tensor_opts){.dtype = dtype, .device = test_device});
    ct_tensor *view = ct_permute(rev, perm, ndim); /* logical shape = shape */
    ct_copy_(view, dev);
    result = view; /* keeps rev's storage alive; both owned by the scope */
    break;
  }
  case CT_LAYOUT_SLICED: {
    if (ndim == 0) {
      result = ct_clone(dev);
      break;
    }
    int64_t big[CT_MAX_DIMS];
    memcpy(big, shape, sizeof(int64_t) * (size_t)ndim);
    big[ndim - 1] = 2 * shape[ndim - 1];
    ct_tensor *b =
        ct_full(big, ndim, GAP_VALUE, &(ct_tensor_opts){.dtype = dtype, .device = test_device});
    ct_tensor *view = ct_slice(b, ndim - 1, 1, big[ndim - 1], 2);
    ct_copy_(view, dev);
    result = view;
    break;
  }
  case CT_LAYOUT_OFFSET: {
    int64_t n = ct_numel(dev);
    ct_tensor *b = ct_full(CT_SHAPE(n + 3), GAP_VALUE,
                           &(ct_tensor_opts){.dtype = dtype, .device = test_device});
    ct_tensor *tail = ct_slice(b, 0, 3, n + 3, 1);
    ct_tensor *view = ct_view(tail, shape, ndim);
    ct_copy_(view, dev);
    result = view;
    break;
  }
  default:
    break;
  }
done:
  ct_free(dev);
  ct_free(typed);
  ct_free(host);
  return result;
}

ct_tensor *ct_test_synced(ct_tensor *t) {
  if (!t) return NULL;
  return ct_synchronize(ct_device_of(t)) == CT_OK ? t : NULL;
}

double *ct_test_values(const ct_tensor *t) {
  if (!t) return NULL;
  ct_tensor *cpu = ct_to(t, ct_cpu(), NULL);
  ct_tensor *f = ct_cast(cpu, CT_F64);
  ct_tensor *c = ct_contiguous(f);
  int64_t n = ct_numel(t);
  double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (c && out) memcpy(out, ct_data_ptr(c), sizeof(double) * (size_t)n);
  ct_free(c);
  ct_free(f);
  ct_free(cpu);
  return out;
}

double *ct_test_random(int64_t n, double lo, double hi, unsigned seed) {
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
    v[i] = lo + (hi - lo) * (double)(s >> 11) * 0x1.0p-53;
  }
  return v;
}

static bool close_enough(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

void ct_test_check_close(const char *file, int line, const char *what, const ct_tensor *t,
                         const double *expected, double rtol, double atol) {
  if (!t) {
    ct_test_fail(file, line, "%s is NULL: %s: %s", what, ct_status_name(ct_last_error()),
                 ct_last_error_message());
    return;
  }
  double *got = ct_test_values(t);
  int64_t n = ct_numel(t);
  for (int64_t i = 0; i < n; i++) {
    if (!close_enough(got[i], expected[i], rtol, atol)) {
      ct_test_fail(file, line, "%s (%s): element %lld is %.9g, expected %.9g (rtol %g, atol %g)",
                   what, ct_dtype_name(ct_dtype_of(t)), (long long)i, got[i], expected[i], rtol, atol);
      break;
    }
  }
  free(got);
}

void ct_test_check_shape(const char *file, int line, const char *what, const ct_tensor *t,
                         const int64_t *shape, int ndim) {
  if (!t) {
    ct_test_fail(file, line, "%s is NULL: %s", what, ct_last_error_message());
    return;
  }
  bool same = ct_ndim(t) == ndim;
  for (int d = 0; d < ndim && same; d++) same = ct_shape(t)[d] == shape[d];
  if (!same) {
    char a[128], b[128];
    ct_test_fail(file, line, "%s has shape %s, expected %s", what,
                 ct_shape_format(ct_shape(t), ct_ndim(t), a, sizeof a),
                 ct_shape_format(shape, ndim, b, sizeof b));
  }
}

const char *ct_test_python_with_torch(void) {
  static int checked;
  static const char *python;
  if (!checked) {
    checked = 1;
    const char *p = getenv("CT_PYTHON");
    if (!p || !*p) p = "/usr/bin/python3";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch, numpy' >/dev/null 2>&1", p);
    if (system(cmd) == 0) python = p;
  }
  return python;
}

#define MAX_TORCH_DIRS 8
static char torch_dirs[MAX_TORCH_DIRS][64];
static int num_torch_dirs;

static void remove_torch_dirs(void) {
  for (int i = 0; i < num_torch_dirs; i++) {
    char cmd[640];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", torch_dirs[i]);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", torch_dirs[i]);
  }
}

const char *ct_test_torch_outputs(const char *tag, const char *script) {
  const char *py = ct_test_python_with_torch();
  if (!py || num_torch_dirs == MAX_TORCH_DIRS) return NULL;
  char *dir = torch_dirs[num_torch_dirs];
  snprintf(dir, sizeof torch_dirs[0], "/tmp/ct_%s_XXXXXX", tag);
  if (!mkdtemp(dir)) return NULL;
  if (num_torch_dirs++ == 0) atexit(remove_torch_dirs);
  char path[128], cmd[1024];
  snprintf(path, sizeof path, "%s/gen.py", dir);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(script, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s %s %s", py, path, dir);
  if (system(cmd) != 0) {
    ct_test_fail(__FILE__, __LINE__, "the torch script failed: %s", cmd);
    return NULL;
  }
  return dir;
}

ct_tensor *ct_test_load_output(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  ct_tensor *t = ct_load_npy(path);
  if (!t) {
    ct_test_fail(__FILE__, __LINE__, "can't load %s: %s", path, ct_last_error_message());
    return NULL;
  }
  return ct_to(t, ct_test_device(), NULL);
}

void ct_test_check_like_torch(const char *file, int line, const char *dir, const char *what,
                              const ct_tensor *got, const char *name, double rtol, double atol) {
  ct_tensor *ref = ct_test_load_output(dir, name);
  if (!got || !ref) {
    ct_test_fail(file, line, "%s: missing result (%s)", what, ct_last_error_message());
    return;
  }
  double *rv = ct_test_values(ref);
  ct_test_check_shape(file, line, what, got, ct_shape(ref), ct_ndim(ref));
  ct_test_check_close(file, line, what, got, rv, rtol, atol);
  free(rv);
}

static int saved_argc;
static char **saved_argv;

const char *ct_test_option(const char *name) {
  for (int i = 1; i + 1 < saved_argc; i++)
    if (strncmp(saved_argv[i], "--", 2) == 0 && strcmp(saved_argv[i] + 2, name) == 0)
      return saved_argv[i + 1];
  return NULL;
}

int main(int argc, char **argv) {
  saved_argc = argc, saved_argv = argv;
  const char *dev = "cpu";
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) dev = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
  }
  if (strncmp(dev, "cuda", 4) == 0 && !ct_cuda_is_available()) {
    printf("skipped: no CUDA device available (%s)\n", ct_build_info());
    return 77;
  }
  if (ct_device_parse(dev, &test_device) != CT_OK) {
    fprintf(stderr, "bad --device %s: %s\n", dev, ct_last_error_message());
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < num_tests; i++) {
    if (only && strcmp(only, tests[i].name) != 0) continue;
    current_test = tests[i].name;
    ct_test_current_failures = 0;
    current_skipped = false;
    ct_clear_error();
    ct_scope_begin();
    tests[i].fn();
    ct_scope_end();
    if (ct_test_current_failures) failed++;
    else if (current_skipped) skipped++;
    else passed++;
  }
  /* say which GPU ran the tests: a real one, or the emulated one of tests/cuda_emu/lib */
  ct_cuda_device_properties props;
  if (test_device.type == CT_DEVICE_CUDA && ct_cuda_get_device_properties(test_device.index, &props) == CT_OK)
    printf("on %s: %s%s\n", ct_device_name(test_device), props.name,
           strstr(ct_build_info(), "cuda=EMULATED") ? " (a CPU emulation, not a GPU run)" : "");
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (failed) return 1;
  if (skipped && passed == 0) return 77;
  return 0;
}
