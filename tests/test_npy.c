/* .npy files: round trips of every dtype and layout (saved from the device
 * under test), the exact byte layout NumPy writes, files written by NumPy
 * (big-endian, Fortran order, f16, bool, 0-d, empty, versions 2.0 and 3.0)
 * and ours read back by NumPy, and a table of corrupted files that must each
 * fail with CT_ERR_FORMAT naming the field. */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static char tmpdir[256];

static const char *tmp_path(const char *name) {
  static char path[512];
  if (!tmpdir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ct_npy_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
      fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
      abort();
    }
  }
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  return path;
}

__attribute__((destructor)) static void remove_tmpdir(void) {
  if (!tmpdir[0]) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

static unsigned char *read_file(const char *path, size_t *size) {
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  *size = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

/* A .npy image: magic, version, header length, `header` padded as given
 * (no automatic padding), then `data`. malloc'd. */
static unsigned char *make_npy(int major, const char *header, const void *data, size_t dlen, size_t *size) {
  size_t hl = strlen(header), pre = major == 1 ? 10 : 12;
  unsigned char *b = malloc(pre + hl + dlen + 1);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  if (major == 1) {
    b[8] = (unsigned char)(hl & 0xff), b[9] = (unsigned char)(hl >> 8);
  } else {
    for (int k = 0; k < 4; k++) b[8 + k] = (unsigned char)(hl >> (8 * k));
  }
  memcpy(b + pre, header, hl);
  if (dlen) memcpy(b + pre + hl, data, dlen);
  *size = pre + hl + dlen;
  return b;
}

CT_TEST(round_trip_every_dtype_and_layout) {
  const double v24[24] = {0, 1, -2, 3, 4.5, -5.25, 6, 7, 8, -9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
  const int64_t shapes[][3] = {{2, 3, 4}, {4, 6, 0}, {24, 0, 0}, {0, 3, 0}};
  const int ndims[] = {3, 2, 1, 2};
  for (int d = 0; d < CT_DTYPE_COUNT; d++) {
    ct_dtype dt = (ct_dtype)d;
    double vals[24];
    for (int i = 0; i < 24; i++) {
      vals[i] = v24[i];
      if (dt == CT_U8) vals[i] = fabs(vals[i]);
      if (dt == CT_BOOL) vals[i] = vals[i] != 0;
      if (!ct_dtype_is_floating(dt)) vals[i] = trunc(vals[i]);
    }
    for (int s = 0; s < 4; s++) {
      for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
        ct_tensor *t = ct_test_make(vals, shapes[s], ndims[s], dt, (ct_test_layout)l);
        CHECK_OK(t);
        const char *path = tmp_path("rt.npy");
        CHECK_STATUS_OK(ct_save_npy(path, t));
        ct_tensor *r = ct_load_npy(path);
        CHECK_OK(r);
        if (!r) continue;
        CHECK_MSG(ct_dtype_of(r) == (dt == CT_BF16 ? CT_F32 : dt), "%s saved, %s loaded", ct_dtype_name(dt),
                  ct_dtype_name(ct_dtype_of(r)));
        CHECK(ct_device_equal(ct_device_of(r), ct_cpu()) && ct_is_contiguous(r));
        CHECK(ct_ndim(r) == ndims[s] && memcmp(ct_shape(r), shapes[s], sizeof(int64_t) * (size_t)ndims[s]) == 0);
        double *want = ct_test_values(t);
        CHECK_CLOSE(r, want, 0, 0);
        free(want);
        /* the buffer reader gives the same */
        size_t size;
        unsigned char *img = read_file(path, &size);
        ct_tensor *rb = ct_load_npy_buffer(img, size);
        CHECK_OK(rb);
        CHECK(rb && ct_nbytes(rb) == ct_nbytes(r) && memcmp(ct_data_ptr(rb), ct_data_ptr(r), ct_nbytes(r)) == 0);
        free(img);
      }
    }
  }
  /* 0-d */
  ct_tensor *s = ct_scalar(-7.5, &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  CHECK_STATUS_OK(ct_save_npy(tmp_path("s.npy"), s));
  ct_tensor *rs = ct_load_npy(tmp_path("s.npy"));
  CHECK(rs && ct_ndim(rs) == 0 && ct_dtype_of(rs) == CT_F64);
  CHECK_CLOSE(rs, ((double[]){-7.5}), 0, 0);
}

CT_TEST(saved_bytes_match_numpy_layout) {
  ct_tensor *t = ct_test_make((double[]){1, 2, 3, 4, 5, 6}, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  const char *path = tmp_path("layout.npy");
  CHECK_STATUS_OK(ct_save_npy(path, t));
  size_t size;
  unsigned char *b = read_file(path, &size);
  CHECK(b && size == 128 + 24); /* 10 + 60 + 1 bytes of header round up to 128 */
  if (!b) return;
  CHECK(memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
  size_t hl = b[8] | (size_t)b[9] << 8;
  CHECK((10 + hl) % 64 == 0 && b[10 + hl - 1] == '\n');
  const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(memcmp(b + 10, want, strlen(want)) == 0);
  for (size_t i = 10 + strlen(want); i < 10 + hl - 1; i++) CHECK(b[i] == ' ');
  float f[6];
  memcpy(f, b + 10 + hl, sizeof f);
  CHECK(f[0] == 1 && f[5] == 6);
  free(b);
  /* 1-d shapes get the trailing comma, 0-d is () */
  ct_tensor *v = ct_test_make((double[]){1, 0, 1}, CT_SHAPE(3), CT_BOOL, CT_LAYOUT_CONTIG);
  CHECK_STATUS_OK(ct_save_npy(path, v));
  b = read_file(path, &size);
  CHECK(b && strstr((char *)b + 10, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }"));
  free(b);
  ct_tensor *z = ct_scalar(1, &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
  CHECK_STATUS_OK(ct_save_npy(path, z));
  b = read_file(path, &size);
  CHECK(b && strstr((char *)b + 10, "'shape': (), }"));
  free(b);
}

static const char *python_with_numpy(void) {
  const char *p = getenv("CT_PYTHON");
  if (!p || !*p) p = "/usr/bin/python3";
  char cmd[600];
  snprintf(cmd, sizeof cmd, "%s -c 'import numpy' >/dev/null 2>&1", p);
  return system(cmd) == 0 ? p : NULL;
}

static bool run_python(const char *python, const char *script) {
  const char *sp = tmp_path("script.py");
  FILE *f = fopen(sp, "w");
  if (!f) return false;
  fputs(script, f);
  fclose(f);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s'", tmpdir, python, sp);
  return system(cmd) == 0;
}

CT_TEST(files_written_by_numpy) {
  const char *py = python_with_numpy();
  if (!py) {
    ct_test_skip("python3 with numpy not available");
    return;
  }
  tmp_path("x"); /* creates tmpdir */
  static const char script[] =
      "import numpy as np\n"
      "from numpy.lib import format as F\n"
      "np.save('be_f8.npy', np.arange(6, dtype='>f8').reshape(2, 3) - 2.5)\n"
      "np.save('be_i4.npy', np.arange(-3, 3, dtype='>i4'))\n"
      "np.save('be_i8.npy', np.array([-2**40, 5], dtype='>i8'))\n"
      "np.save('be_f2.npy', np.array([1.5, -2, 65504], dtype='>f2'))\n"
      "np.save('le_f2.npy', np.array([0.5, -1, 2**-24], dtype='<f2'))\n"
      "np.save('fortran.npy', np.asfortranarray(np.arange(24, dtype='<f4').reshape(2, 3, 4)))\n"
      "np.save('fortran_be.npy', np.asfortranarray(np.arange(6, dtype='>i2').reshape(2, 3)))\n"
      "np.save('bool.npy', np.array([[True, False, True], [False, False, True]]))\n"
      "np.save('scalar.npy', np.array(3.25))\n"
      "np.save('empty.npy', np.zeros((0, 4), dtype='<i8'))\n"
      "np.save('u8.npy', np.array([0, 255, 7], dtype=np.uint8))\n"
      "np.save('i1.npy', np.array([-128, 127], dtype=np.int8))\n"
      "with open('v2.npy', 'wb') as f: F.write_array(f, np.arange(5, dtype='<f4'), version=(2, 0))\n"
      "with open('v3.npy', 'wb') as f: F.write_array(f, np.arange(5, dtype='<i2'), version=(3, 0))\n"
      "np.save('u4.npy', np.arange(3, dtype='<u4'))\n";
  CHECK(run_python(py, script));
  char path[600];
#define LOAD(name) (snprintf(path, sizeof path, "%s/%s", tmpdir, name), ct_load_npy(path))
  ct_tensor *t = LOAD("be_f8.npy");
  CHECK(t && ct_dtype_of(t) == CT_F64);
  CHECK_SHAPE(t, 2, 3);
  CHECK_CLOSE(t, ((double[]){-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}), 0, 0);
  t = LOAD("be_i4.npy");
  CHECK(t && ct_dtype_of(t) == CT_I32);
  CHECK_CLOSE(t, ((double[]){-3, -2, -1, 0, 1, 2}), 0, 0);
  t = LOAD("be_i8.npy");
  CHECK(t && ct_dtype_of(t) == CT_I64);
  CHECK_CLOSE(t, ((double[]){-1099511627776.0, 5}), 0, 0);
  t = LOAD("be_f2.npy");
  CHECK(t && ct_dtype_of(t) == CT_F16);
  CHECK_CLOSE(t, ((double[]){1.5, -2, 65504}), 0, 0);
  t = LOAD("le_f2.npy");
  CHECK(t && ct_dtype_of(t) == CT_F16);
  CHECK_CLOSE(t, ((double[]){0.5, -1, 5.9604644775390625e-08}), 0, 0);
  t = LOAD("fortran.npy");
  CHECK(t && ct_dtype_of(t) == CT_F32 && ct_is_contiguous(t));
  CHECK_SHAPE(t, 2, 3, 4);
  double ar[24];
  for (int i = 0; i < 24; i++) ar[i] = i;
  CHECK_CLOSE(t, ar, 0, 0);
  t = LOAD("fortran_be.npy");
  CHECK(t && ct_dtype_of(t) == CT_I16);
  CHECK_SHAPE(t, 2, 3);
  CHECK_CLOSE(t, ((double[]){0, 1, 2, 3, 4, 5}), 0, 0);
  t = LOAD("bool.npy");
  CHECK(t && ct_dtype_of(t) == CT_BOOL);
  CHECK_CLOSE(t, ((double[]){1, 0, 1, 0, 0, 1}), 0, 0);
  t = LOAD("scalar.npy");
  CHECK(t && ct_ndim(t) == 0 && ct_dtype_of(t) == CT_F64);
  CHECK_CLOSE(t, ((double[]){3.25}), 0, 0);
  t = LOAD("empty.npy");
  CHECK(t && ct_numel(t) == 0 && ct_dtype_of(t) == CT_I64);
  CHECK_SHAPE(t, 0, 4);
  t = LOAD("u8.npy");
  CHECK(t && ct_dtype_of(t) == CT_U8);
  CHECK_CLOSE(t, ((double[]){0, 255, 7}), 0, 0);
  t = LOAD("i1.npy");
  CHECK(t && ct_dtype_of(t) == CT_I8);
  CHECK_CLOSE(t, ((double[]){-128, 127}), 0, 0);
  t = LOAD("v2.npy");
  CHECK_CLOSE(t, ((double[]){0, 1, 2, 3, 4}), 0, 0);
  t = LOAD("v3.npy");
  CHECK(t && ct_dtype_of(t) == CT_I16);
  CHECK_CLOSE(t, ((double[]){0, 1, 2, 3, 4}), 0, 0);
  CHECK_ERR_MSG(LOAD("u4.npy"), CT_ERR_FORMAT, "'descr'");
#undef LOAD
}

CT_TEST(files_read_by_numpy) {
  const char *py = python_with_numpy();
  if (!py) {
    ct_test_skip("python3 with numpy not available");
    return;
  }
  double v[6] = {1, -2, 3.5, 0, 0.25, 6};
  static const struct {
    ct_dtype dt;
    const char *name;
  } cases[] = {{CT_F32, "f32"}, {CT_F64, "f64"}, {CT_F16, "f16"}, {CT_BF16, "bf16"}, {CT_I8, "i8"},
               {CT_I16, "i16"}, {CT_I32, "i32"}, {CT_I64, "i64"}, {CT_BOOL, "bool"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char name[32];
    snprintf(name, sizeof name, "ours_%s.npy", cases[k].name);
    ct_tensor *t = ct_test_make(v, CT_SHAPE(2, 3), cases[k].dt, CT_LAYOUT_TRANSPOSED);
    CHECK_STATUS_OK(ct_save_npy(tmp_path(name), t));
  }
  ct_tensor *u = ct_test_make((double[]){0, 200, 7}, CT_SHAPE(3), CT_U8, CT_LAYOUT_SLICED);
  CHECK_STATUS_OK(ct_save_npy(tmp_path("ours_u8.npy"), u));
  static const char script[] =
      "import numpy as np, sys\n"
      "v = np.array([[1, -2, 3.5], [0, 0.25, 6]])\n"
      "want = {'f32': 'float32', 'f64': 'float64', 'f16': 'float16', 'bf16': 'float32', 'i8': 'int8',\n"
      "        'i16': 'int16', 'i32': 'int32', 'i64': 'int64', 'bool': 'bool'}\n"
      "for k, dt in want.items():\n"
      "    a = np.load('ours_%s.npy' % k)\n"
      "    e = v.astype(dt)\n"
      "    if a.dtype != np.dtype(dt) or a.shape != (2, 3) or not (a == e).all(): sys.exit('mismatch ' + k)\n"
      "a = np.load('ours_u8.npy')\n"
      "if a.dtype != np.uint8 or list(a) != [0, 200, 7]: sys.exit('mismatch u8')\n"
      "import io\n"
      "for k in ['f32', 'f64', 'i64', 'bool']:\n"
      "    b = io.BytesIO(); np.save(b, v.astype(want[k]))\n"
      "    if open('ours_%s.npy' % k, 'rb').read() != b.getvalue(): sys.exit('bytes differ from numpy ' + k)\n";
  CHECK_MSG(run_python(py, script), "numpy did not read back our files as written");
}

CT_TEST(corrupted_files_fail_with_format_errors) {
  static const double f8[6] = {1, 2, 3, 4, 5, 6};
  static const struct {
    int major;
    const char *header;
    size_t data_bytes; /* of f8 */
    const char *needle;
  } cases[] = {
      {1, "{'descr': '<f8', 'fortran_order': False, }", 48, "missing key 'shape'"},
      {1, "{'fortran_order': False, 'shape': (6,), }", 48, "missing key 'descr'"},
      {1, "{'descr': '<f8', 'shape': (6,), }", 48, "missing key 'fortran_order'"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'extra': 1}", 48,
       "unexpected key 'extra'"},
      {1, "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (6,)}", 48, "twice"},
      {1, "{'descr': '<x9', 'fortran_order': False, 'shape': (6,), }", 48, "'descr'"},
      {1, "{'descr': '<f3', 'fortran_order': False, 'shape': (6,), }", 48, "'descr'"},
      {1, "{'descr': 'f8', 'fortran_order': False, 'shape': (6,), }", 48, "'descr'"},
      {1, "{'descr': '<c16', 'fortran_order': False, 'shape': (6,), }", 48, "'descr'"},
      {1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 48, "structured"},
      {1, "{'descr': 42, 'fortran_order': False, 'shape': (6,), }", 48, "'descr'"},
      {1, "{'descr': '<f8', 'fortran_order': maybe, 'shape': (6,), }", 48, "'fortran_order'"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 6), }", 48, "negative dimension"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 48,
       "overflow"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976,), }", 48,
       "too large"},
      /* Empty, yet the other dims make the strides overflow: refused, not a 0-element tensor. */
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", 48,
       "shape' (0, 4294967296, 4294967296) is too large"},
      {1, "{'descr': '|u1', 'fortran_order': False, 'shape': (9223372036854775807, 2, 0), }", 48,
       "too large"},
      {1, "{'descr': '<f2', 'fortran_order': True, 'shape': (0, 4611686018427387904), }", 48,
       "too large"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", 48,
       "too large"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,6), }", 48,
       "more than 8"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': 6, }", 48, "'shape' must be a tuple"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': [6], }", 48,
       "'shape' must be a tuple"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6, 'a'), }", 48,
       "'shape' must hold integers"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6 6), }", 48, "'shape'"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,", 48, "'shape'"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), } junk", 48, "after the dict"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,) 'x': 1}", 48,
       "expected ',' or '}'"},
      {1, "{'descr: '<f8', 'fortran_order': False, 'shape': (6,), }", 48, "header"},
      {1, "{'descr': '<f8\n', 'fortran_order': False, 'shape': (6,), }", 48, "'descr'"},
      {1, "['descr', '<f8']", 48, "expected a dict"},
      {1, "", 48, "expected a dict"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", 24,
       "data is truncated: 24 bytes present, 48 expected"},
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (7,), }", 48, "data is truncated"},
      {2, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", 0, "data is truncated"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    size_t size;
    unsigned char *b = make_npy(cases[k].major, cases[k].header, f8, cases[k].data_bytes, &size);
    ct_clear_error();
    ct_tensor *t = ct_load_npy_buffer(b, size);
    CHECK_MSG(!t && ct_last_error() == CT_ERR_FORMAT && strstr(ct_last_error_message(), cases[k].needle),
              "case %zu (%s): got %s: %s", k, cases[k].header, ct_status_name(ct_last_error()),
              ct_last_error_message());
    ct_clear_error();
    free(b);
  }

  /* The preamble. */
  size_t size;
  unsigned char *good = make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", f8, 48, &size);
  CHECK_ERR_MSG(ct_load_npy_buffer("", 0), CT_ERR_FORMAT, "magic");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPX\x01\x00", 8), CT_ERR_FORMAT, "magic");
  CHECK_ERR_MSG(ct_load_npy_buffer("PK\x03\x04", 4), CT_ERR_FORMAT, "magic");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPY\x01", 7), CT_ERR_FORMAT, "version");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPY\x04\x00\x10\x00", 10), CT_ERR_FORMAT, "version 4.0");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPY\x01\x01\x10\x00", 10), CT_ERR_FORMAT, "version 1.1");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPY\x02\x00\x10\x00", 10), CT_ERR_FORMAT, "header length field");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPY\x02\x00\x70\x11\x01\x00", 12), CT_ERR_FORMAT,
                "header length 70000 exceeds the 65536-byte limit");
  CHECK_ERR_MSG(ct_load_npy_buffer("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), CT_ERR_FORMAT, "header length");
  CHECK_ERR_MSG(ct_load_npy_buffer(good, 40), CT_ERR_FORMAT, "header is truncated");
  /* Every prefix of a good file fails cleanly; trailing bytes are ignored. */
  int bad = 0;
  for (size_t n = 0; n < size; n++) {
    ct_clear_error();
    ct_tensor *t = ct_load_npy_buffer(good, n);
    bad += t != NULL || ct_last_error() != CT_ERR_FORMAT;
  }
  ct_clear_error();
  CHECK_MSG(bad == 0, "%d prefixes did not fail with CT_ERR_FORMAT", bad);
  unsigned char *longer = malloc(size + 100);
  memcpy(longer, good, size);
  memset(longer + size, 0xab, 100);
  ct_tensor *t = ct_load_npy_buffer(longer, size + 100);
  CHECK_CLOSE(t, f8, 0, 0);
  /* Random corruption: never a crash, only success or CT_ERR_FORMAT. */
  unsigned seed = 12345;
  int other = 0;
  for (int it = 0; it < 3000; it++) {
    memcpy(longer, good, size);
    int flips = 1 + it % 4;
    for (int f = 0; f < flips; f++) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % 80; /* the preamble and header */
      seed = seed * 1103515245u + 12345u;
      longer[pos] = (unsigned char)(seed >> 16);
    }
    ct_clear_error();
    ct_tensor *r = ct_load_npy_buffer(longer, size);
    if (r) ct_free(r);
    else other += ct_last_error() != CT_ERR_FORMAT;
  }
  ct_clear_error();
  CHECK_MSG(other == 0, "%d corruptions failed with something other than CT_ERR_FORMAT", other);
  /* Whitespace and ordering as NumPy accepts them; Python 2 long suffixes. */
  const char *variants[] = {
      "{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<f8\"}\n",
      "{ 'descr' : '<f8' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }          \n",
      "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }\n",
  };
  for (int k = 0; k < 3; k++) {
    unsigned char *b = make_npy(1, variants[k], f8, 48, &size);
    ct_tensor *r = ct_load_npy_buffer(b, size);
    CHECK_MSG(r != NULL, "variant %d: %s", k, ct_last_error_message());
    CHECK_SHAPE(r, 2, 3);
    CHECK_CLOSE(r, f8, 0, 0);
    free(b);
  }
  /* Fortran order built by hand: (2, 3) stored column-major. */
  double colmajor[6] = {1, 4, 2, 5, 3, 6};
  unsigned char *fb = make_npy(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", colmajor, 48, &size);
  ct_tensor *fr = ct_load_npy_buffer(fb, size);
  CHECK_CLOSE(fr, f8, 0, 0);
  free(fb);
  /* bool bytes other than 0/1 read as true */
  unsigned char bb[3] = {0, 1, 7};
  unsigned char *bo = make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bb, 3, &size);
  ct_tensor *br = ct_load_npy_buffer(bo, size);
  CHECK(br && ((unsigned char *)ct_data_ptr(br))[2] == 1);
  free(bo);
  free(longer);
  free(good);
}

CT_TEST(io_errors) {
  CHECK_ERR_MSG(ct_load_npy("/nonexistent/dir/x.npy"), CT_ERR_IO, "/nonexistent/dir/x.npy");
  CHECK_ERR_MSG(ct_load_npy("/nonexistent/dir/x.npy"), CT_ERR_IO, "No such file");
  tmp_path("x");
  CHECK_ERR(ct_load_npy(tmpdir), CT_ERR_IO); /* a directory */
  ct_tensor *t = ct_zeros(CT_SHAPE(2), &(ct_tensor_opts){.device = ct_test_device()});
  CHECK_ERR_MSG(ct_save_npy("/nonexistent/dir/y.npy", t) == CT_OK, CT_ERR_IO, "/nonexistent/dir/y.npy");
  if (access("/dev/full", W_OK) == 0) {
    ct_tensor *big = ct_zeros(CT_SHAPE(100000), &(ct_tensor_opts){.device = ct_test_device()});
    CHECK_ERR_MSG(ct_save_npy("/dev/full", big) == CT_OK, CT_ERR_IO, "No space left");
  }
  /* Truncated and oversized files fail before allocating (the size is
   * compared with the file's). */
  static const double f8[3] = {1, 2, 3};
  const char *hdrs[2] = {"{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }\n",
                         "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }\n"};
  const char *needles[2] = {"data is truncated: 24 bytes present, 48 expected", "data is truncated"};
  for (int k = 0; k < 2; k++) {
    size_t size;
    unsigned char *b = make_npy(1, hdrs[k], f8, 24, &size);
    FILE *f = fopen(tmp_path("trunc.npy"), "wb");
    CHECK(f && fwrite(b, 1, size, f) == size);
    if (f) fclose(f);
    free(b);
    CHECK_ERR_MSG(ct_load_npy(tmp_path("trunc.npy")), CT_ERR_FORMAT, needles[k]);
  }
  ct_clear_error();
  CHECK(ct_save_npy(tmp_path("n.npy"), NULL) == CT_ERR_ARG);
  ct_clear_error();
  CHECK_ERR(ct_load_npy(NULL), CT_ERR_ARG);
  CHECK_ERR(ct_load_npy_buffer(NULL, 10), CT_ERR_ARG);
}

/* Every error of ct_load_npy names the operation and the file; a name that is
 * not UTF-8 (or holds control characters) shows escaped, never raw. */
CT_TEST(errors_name_the_file) {
  const char *name = tmp_path("bad\xff\x1b[31m.npy");
  FILE *f = fopen(name, "wb");
  CHECK(f && fwrite("\x93NUMPY\x01\x00\x04\x00{}  ", 1, 14, f) == 14);
  if (f) fclose(f);
  CHECK_ERR_MSG(ct_load_npy(name), CT_ERR_FORMAT, "load_npy: ");
  CHECK_ERR_MSG(ct_load_npy(name), CT_ERR_FORMAT, "bad\\xff\\x1b[31m.npy: header: missing key");
  ct_load_npy(name);
  const char *msg = ct_last_error_message();
  bool raw = false;
  for (const char *c = msg; *c; c++) raw |= (unsigned char)*c >= 0x80 || (unsigned char)*c < 0x20;
  CHECK_MSG(!raw, "raw bytes in: %s", msg);
  CHECK_ERR_MSG(ct_load_npy(tmp_path("missing\xfe.npy")), CT_ERR_IO,
                "missing\\xfe.npy: cannot open");
  CHECK_ERR_MSG(ct_load_npy_buffer("xx", 2), CT_ERR_FORMAT, "load_npy_buffer: bad magic");
  /* Valid UTF-8 stays as it is. */
  char buf[64];
  CHECK(!strcmp(ct_escape_name("d\xc3\xa9j\xc3\xa0/\xe2\x82\xac.npy", buf, sizeof buf),
                "d\xc3\xa9j\xc3\xa0/\xe2\x82\xac.npy"));
  CHECK(!strcmp(ct_escape_name("a\\b\tc\xc2\x85\xed\xa0\x80", buf, sizeof buf),
                "a\\\\b\\x09c\\xc2\\x85\\xed\\xa0\\x80"));
  CHECK(!strcmp(ct_escape_name("abcdefghij", buf, 8), "abcd..."));
  CHECK(!strcmp(ct_escape_name("abcdefg", buf, 8), "abcdefg"));
  CHECK(!strcmp(ct_escape_name(NULL, buf, sizeof buf), "(null)"));
}
