/* safetensors: round trips of every dtype and layout, interoperability with
 * files built from PyTorch tensors (and read back by Python), and a table of
 * malformed files that must fail with CT_ERR_FORMAT. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct_test.h"
#include "io/safetensors.h"

CT_TEST_DEVICE_GENERIC

static void tmp_path(char *buf, size_t n, const char *tag) {
  snprintf(buf, n, "/tmp/ct_test_st_%ld_%s.safetensors", (long)getpid(), tag);
}

CT_TEST(round_trip_every_dtype_and_layout) {
  const ct_dtype dtypes[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8,
                             CT_U8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
  enum { ND = sizeof dtypes / sizeof dtypes[0] };
  const double vals[6] = {0, 1, 0, 1, 1, 0}; /* valid for every dtype, bool included */
  const double wide[6] = {-3, 2.5, 7, 100, -0.5, 1};
  ct_tensor *ts[ND + 3];
  const char *names[ND + 3];
  char namebuf[ND][32];
  for (int i = 0; i < ND; i++) {
    const double *v = dtypes[i] == CT_BOOL || dtypes[i] == CT_U8 ? vals : wide;
    ct_test_layout layout = (ct_test_layout)(i % CT_LAYOUT_COUNT);
    ts[i] = ct_test_make(v, CT_SHAPE(2, 3), dtypes[i], layout);
    snprintf(namebuf[i], sizeof namebuf[i], "t.%s", ct_dtype_name(dtypes[i]));
    names[i] = namebuf[i];
  }
  ts[ND] = ct_scalar(4.25, &(ct_tensor_opts){.dtype = CT_F64, .device = ct_test_device()});
  names[ND] = "scalar";
  ts[ND + 1] = ct_zeros(CT_SHAPE(0, 3), &(ct_tensor_opts){.device = ct_test_device()});
  names[ND + 1] = "empty";
  ts[ND + 2] = ct_test_make(wide, CT_SHAPE(6), CT_F32, CT_LAYOUT_CONTIG);
  names[ND + 2] = "quote\"and\\slash \xc3\xa9"; /* escaped in JSON, UTF-8 kept */
  char path[256];
  tmp_path(path, sizeof path, "rt");
  CHECK_STATUS_OK(ct_save_safetensors(path, ts, names, ND + 3));

  ct_tensor **got = NULL;
  char **gn = NULL;
  int n = -1;
  CHECK_STATUS_OK(ct_load_safetensors(path, &got, &gn, &n));
  CHECK(n == ND + 3);
  for (int i = 0; i < n && i < ND + 3; i++) {
    CHECK_MSG(!strcmp(gn[i], names[i]), "name %d: '%s' != '%s'", i, gn[i], names[i]);
    CHECK(ct_dtype_of(got[i]) == ct_dtype_of(ts[i]));
    CHECK(ct_device_of(got[i]).type == CT_DEVICE_CPU);
    CHECK(ct_ndim(got[i]) == ct_ndim(ts[i]));
    double *expect = ct_test_values(ts[i]);
    CHECK_CLOSE(got[i], expect, 0, 0);
    free(expect);
  }
  ct_safetensors_free(got, gn, n);

  /* The header is padded to a multiple of 8 and the file has no temporary left. */
  FILE *f = fopen(path, "rb");
  unsigned char le[8] = {0};
  CHECK(f && fread(le, 1, 8, f) == 8);
  if (f) fclose(f);
  uint64_t hsize = 0;
  for (int i = 7; i >= 0; i--) hsize = hsize << 8 | le[i];
  CHECK(hsize % 8 == 0);
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  CHECK(access(tmp, F_OK) != 0);
  remove(path);
}

CT_TEST(save_errors) {
  ct_tensor *a = ct_zeros(CT_SHAPE(2), NULL);
  ct_tensor *ts[2] = {a, a};
  CHECK_ERR(ct_save_safetensors("/tmp/x.safetensors", ts, (const char *[]){"a", "a"}, 2) == CT_OK,
            CT_ERR_ARG);
  CHECK_ERR(ct_save_safetensors("/tmp/x.safetensors", ts, (const char *[]){"a", NULL}, 2) == CT_OK,
            CT_ERR_ARG);
  CHECK_ERR(ct_save_safetensors("/nonexistent-dir/x.safetensors", ts, (const char *[]){"a"}, 1) == CT_OK,
            CT_ERR_IO);
  /* The names the reader refuses (malformed_files_fail_with_format_errors). */
  CHECK_ERR_MSG(ct_save_safetensors("/tmp/x.safetensors", ts, (const char *[]){""}, 1) == CT_OK,
                CT_ERR_ARG, "name 0 ('') is empty");
  CHECK_ERR_MSG(
      ct_save_safetensors("/tmp/x.safetensors", ts, (const char *[]){"ok", "a\xff"}, 2) == CT_OK,
      CT_ERR_ARG, "name 1 ('a\\xff') is not valid UTF-8");
  CHECK_ERR_MSG(
      ct_save_safetensors("/tmp/x.safetensors", ts, (const char *[]){"__metadata__"}, 1) == CT_OK,
      CT_ERR_ARG, "reserved");
  /* A folder where the file should be: refused, with the path in the message, no temporary left. */
  char dir[256], tmp[300];
  tmp_path(dir, sizeof dir, "dir");
  CHECK(mkdir(dir, 0700) == 0);
  CHECK_ERR_MSG(ct_save_safetensors(dir, ts, (const char *[]){"a"}, 1) == CT_OK, CT_ERR_IO,
                "Is a directory");
  CHECK_ERR_MSG(ct_save_safetensors(dir, ts, (const char *[]){"a"}, 1) == CT_OK, CT_ERR_IO, dir);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
  CHECK(access(tmp, F_OK) != 0);
  rmdir(dir);
}

/* Temporaries of saves that were killed are removed; nothing else is. */
CT_TEST(remove_stale_temporaries) {
  char path[256], name[400];
  tmp_path(path, sizeof path, "stale");
  pid_t child = fork();
  if (child == 0) _exit(0);
  CHECK(child > 0 && waitpid(child, NULL, 0) == child); /* a pid no process holds now */
  const long pids[] = {(long)child, (long)getpid()};
  for (int i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "%s.tmp.%ld", path, pids[i]);
    FILE *f = fopen(name, "wb");
    CHECK(f != NULL);
    if (f) fclose(f);
  }
  const char *others[] = {".tmp.abc", ".tmp.", ".tmp.01", ".other", "x.tmp.1"};
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "%s%s", path, others[i]);
    FILE *f = fopen(name, "wb");
    if (f) fclose(f);
  }
  /* A symbolic link with a stale name is not followed, nor removed. */
  char target[300];
  snprintf(target, sizeof target, "%s.target", path);
  FILE *f = fopen(target, "wb");
  if (f) fclose(f);
  snprintf(name, sizeof name, "%s.tmp.%ld", path, (long)child + 1000000);
  CHECK(symlink(target, name) == 0);
  int removed = -1;
  CHECK_STATUS_OK(ct_safetensors_remove_stale(path, &removed));
  CHECK_MSG(removed == 1, "removed %d", removed);
  snprintf(name, sizeof name, "%s.tmp.%ld", path, (long)child);
  CHECK(access(name, F_OK) != 0);
  snprintf(name, sizeof name, "%s.tmp.%ld", path, (long)getpid());
  CHECK(access(name, F_OK) == 0); /* a live process's */
  remove(name);
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "%s%s", path, others[i]);
    CHECK_MSG(access(name, F_OK) == 0, "%s was removed", name);
    remove(name);
  }
  snprintf(name, sizeof name, "%s.tmp.%ld", path, (long)child + 1000000);
  CHECK(access(target, F_OK) == 0);
  remove(name);
  remove(target);
  CHECK_STATUS_OK(ct_safetensors_remove_stale(path, NULL)); /* nothing to do */
  CHECK_ERR(ct_safetensors_remove_stale("/nonexistent-dir/x", NULL) == CT_OK, CT_ERR_IO);
  CHECK_ERR(ct_safetensors_remove_stale("dir/", NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_safetensors_remove_stale(NULL, NULL) == CT_OK, CT_ERR_ARG);
}

/* Internal parsers given NULL where they write: an argument error, no crash. */
CT_TEST(null_outputs) {
  ct__st_header h;
  CHECK_ERR(ct__st_parse_header("{}", 2, 0, "x", NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__st_parse_header(NULL, 2, 0, "x", &h) == CT_OK, CT_ERR_ARG);
  ct_tensor **t;
  char **nm;
  int n;
  CHECK_ERR(ct__load_safetensors_buffer("", 0, "x", NULL, &nm, &n) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct__load_safetensors_buffer("", 0, "x", &t, NULL, &n) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_load_safetensors("/tmp", &t, &nm, NULL) == CT_OK, CT_ERR_ARG);
}

CT_TEST(missing_file_is_io_error) {
  ct_tensor **t;
  char **nm;
  int n;
  CHECK_ERR_MSG(ct_load_safetensors("/nonexistent/file.safetensors", &t, &nm, &n) == CT_OK, CT_ERR_IO,
                "/nonexistent/file.safetensors");
  CHECK_ERR(ct_load_safetensors("/tmp", &t, &nm, &n) == CT_OK, CT_ERR_IO);
}

/* A file image: 8-byte size (hsize, or the header's length when hsize < 0),
 * the header text, then `data` bytes. malloc'd; *size set. */
static unsigned char *image(const char *header, const void *data, size_t ndata, int64_t hsize,
                            size_t *size) {
  size_t hl = strlen(header);
  uint64_t hs = hsize < 0 ? (uint64_t)hl : (uint64_t)hsize;
  unsigned char *b = malloc(8 + hl + ndata + 1);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(hs >> (8 * i));
  memcpy(b + 8, header, hl);
  if (ndata) memcpy(b + 8 + hl, data, ndata);
  *size = 8 + hl + ndata;
  return b;
}

CT_TEST(valid_buffers) {
  static const unsigned char data[16] = {0, 0, 128, 63, 0, 0, 0, 64, 1, 0, 0, 0, 0, 0, 0, 0};
  size_t size;
  unsigned char *b = image(
      "{\"__metadata__\":{\"format\":\"pt\"}, \"b\": {\"shape\":[], \"dtype\":\"I64\", "
      "\"data_offsets\":[8,16]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  ",
      data, 16, -1, &size);
  ct_tensor **t = NULL;
  char **nm = NULL;
  int n = 0;
  CHECK_STATUS_OK(ct__load_safetensors_buffer(b, size, "mem", &t, &nm, &n));
  CHECK(n == 2);
  if (n == 2) {
    CHECK(!strcmp(nm[0], "b") && !strcmp(nm[1], "a"));
    CHECK(ct_ndim(t[0]) == 0 && ct_dtype_of(t[0]) == CT_I64);
    CHECK_CLOSE(t[0], ((double[]){1}), 0, 0);
    CHECK_CLOSE(t[1], ((double[]){1, 2}), 0, 0);
  }
  ct_safetensors_free(t, nm, n);
  free(b);
  /* No tensors at all. */
  b = image("{}", NULL, 0, -1, &size);
  CHECK_STATUS_OK(ct__load_safetensors_buffer(b, size, "mem", &t, &nm, &n));
  CHECK(n == 0);
  ct_safetensors_free(t, nm, n);
  free(b);
}

CT_TEST(malformed_files_fail_with_format_errors) {
  static const unsigned char data[32] = {0};
  static const struct {
    const char *what, *header;
    size_t ndata;
    int64_t hsize; /* -1: the header's length */
    const char *needle;
  } cases[] = {
      {"header size beyond the file", "{}", 0, 100, "header size"},
      {"header size huge", "{}", 0, (int64_t)1 << 62, "header size"},
      {"unterminated object", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
       -1, "close the header"},
      {"not JSON", "{\"a\" 1}", 0, -1, "':'"},
      {"trailing garbage", "{} x", 0, -1, "after the header"},
      {"not an object", "[]", 0, -1, "'{'"},
      {"unknown dtype", "{\"a\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16,
       -1, "F128"},
      {"overlapping",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
       12, -1, "overlap"},
      {"gap",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
       12, -1, "gap"},
      {"out of range", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, -1,
       "beyond"},
      {"uncovered bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, -1,
       "cover"},
      {"size != shape x dtype", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
       8, -1, "shape x"},
      {"overflowing shape",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
       "\"data_offsets\":[0,4]}}",
       4, -1, "overflow"},
      {"integer too large",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],"
       "\"data_offsets\":[0,4]}}",
       4, -1, "too large"},
      {"negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, -1,
       "non-negative"},
      {"fractional dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4,
       -1, "fraction"},
      {"begin after end", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, -1,
       "data_offsets"},
      {"duplicate name",
       "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
       "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
       2, -1, "duplicate"},
      {"duplicate field",
       "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -1,
       "duplicate"},
      {"missing field", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, -1, "missing"},
      {"unknown field", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}",
       1, -1, "unknown field"},
      {"too many dims",
       "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1, -1,
       "dims"},
      {"bool not 0/1", "{\"a\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -1,
       "bool"},
      {"metadata not strings", "{\"__metadata__\":{\"k\":1}}", 0, -1, "string"},
      {"NUL in a name", "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}",
       0, -1, "NUL"},
      {"bad escape", "{\"a\\q\":{}}", 0, -1, "escape"},
      {"raw control char", "{\"a\nb\":{}}", 0, -1, "control"},
      {"unterminated string", "{\"abc", 0, -1, "unterminated"},
      /* Names the writer refuses, the reader refuses too. */
      {"empty name", "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -1,
       "tensor name '' is empty"},
      {"name not UTF-8", "{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
       -1, "not valid UTF-8"},
      {"metadata not UTF-8", "{\"__metadata__\":{\"k\":\"\xc3\"}}", 0, -1, "not valid UTF-8"},
      {"overlong UTF-8", "{\"\xc0\xaf\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
       1, -1, "not valid UTF-8"},
      /* Empty, yet the other dims make the strides overflow. */
      {"empty tensor with overflowing strides",
       "{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
       -1, "shape (0, 4294967296, 4294967296) is too large"},
      {"empty u8 tensor with a dim of 2^63-1 and 2",
       "{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775807,2,0],\"data_offsets\":[0,0]}}", 0,
       -1, "too large"},
      /* Names from the file appear escaped in messages. */
      {"bool not 0/1 in an escaped name",
       "{\"x\\u001b[2J\\u0085\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, -1,
       "tensor 'x\\x1b[2J\\xc2\\x85': bool"},
  };
  unsigned char bool_two[1] = {2};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t size;
    const void *d = strstr(cases[i].what, "bool") ? (const void *)bool_two : (const void *)data;
    unsigned char *b = image(cases[i].header, d, cases[i].ndata, cases[i].hsize, &size);
    ct_tensor **t = (ct_tensor **)1;
    char **nm = (char **)1;
    int n = -1;
    ct_clear_error();
    ct_status st = ct__load_safetensors_buffer(b, size, "case.safetensors", &t, &nm, &n);
    CHECK_MSG(st == CT_ERR_FORMAT, "%s: expected CT_ERR_FORMAT, got %s (%s)", cases[i].what,
              ct_status_name(st), ct_last_error_message());
    CHECK_MSG(strstr(ct_last_error_message(), cases[i].needle) &&
                  strstr(ct_last_error_message(), "case.safetensors"),
              "%s: message '%s' lacks '%s' or the file name", cases[i].what, ct_last_error_message(),
              cases[i].needle);
    CHECK_MSG(t == NULL && nm == NULL && n == 0, "%s: outputs not cleared", cases[i].what);
    bool raw = false;
    for (const char *c = ct_last_error_message(); *c; c++)
      raw |= (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x80;
    CHECK_MSG(!raw, "%s: raw bytes in the message '%s'", cases[i].what, ct_last_error_message());
    free(b);
  }
  /* Too short for the size field, through the file path too. */
  char path[256];
  tmp_path(path, sizeof path, "short");
  FILE *f = fopen(path, "wb");
  fwrite("abc", 1, 3, f);
  fclose(f);
  ct_tensor **t;
  char **nm;
  int n;
  CHECK_ERR_MSG(ct_load_safetensors(path, &t, &nm, &n) == CT_OK, CT_ERR_FORMAT, path);
  remove(path);
  /* Every truncation of a valid file fails cleanly. */
  ct_tensor *x = ct_arange(0, 10, 1, NULL);
  tmp_path(path, sizeof path, "trunc");
  CHECK_STATUS_OK(ct_save_safetensors(path, &x, (const char *[]){"x"}, 1));
  f = fopen(path, "rb");
  unsigned char full[512];
  size_t len = f ? fread(full, 1, sizeof full, f) : 0;
  if (f) fclose(f);
  remove(path);
  for (size_t cut = 0; cut < len; cut++) {
    ct_clear_error();
    ct_status st = ct__load_safetensors_buffer(full, cut, "trunc", &t, &nm, &n);
    CHECK_MSG(st == CT_ERR_FORMAT, "truncated to %zu of %zu bytes: got %s", cut, len,
              ct_status_name(st));
  }
  ct_clear_error();
}

/* Python writes a file from a torch state_dict with only json + struct, we
 * read it; we write one, Python parses it and compares with torch. */
CT_TEST(interoperates_with_torch) {
  const char *py = ct_test_python_with_torch();
  if (!py) {
    ct_test_skip("python3 with torch not available");
    return;
  }
  char from_py[256], to_py[256], script[256];
  tmp_path(from_py, sizeof from_py, "from_py");
  tmp_path(to_py, sizeof to_py, "to_py");
  snprintf(script, sizeof script, "/tmp/ct_test_st_%ld.py", (long)getpid());
  FILE *f = fopen(script, "w");
  fputs("import json, struct, sys, torch\n"
        "def write(path, sd):\n"
        "    hdr, off, blobs = {}, 0, []\n"
        "    names = {torch.float32:'F32', torch.float64:'F64', torch.float16:'F16', torch.bfloat16:'BF16',\n"
        "             torch.int64:'I64', torch.int32:'I32', torch.int16:'I16', torch.int8:'I8', torch.uint8:'U8', torch.bool:'BOOL'}\n"
        "    for k, t in sd.items():\n"
        "        b = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b''\n"
        "        hdr[k] = {'dtype': names[t.dtype], 'shape': list(t.shape), 'data_offsets': [off, off + len(b)]}\n"
        "        off += len(b); blobs.append(b)\n"
        "    hdr['__metadata__'] = {'format': 'pt'}\n"
        "    h = json.dumps(hdr).encode(); h += b' ' * (-len(h) % 8)\n"
        "    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + b''.join(blobs))\n"
        "def read(path):\n"
        "    d = open(path, 'rb').read(); n = struct.unpack('<Q', d[:8])[0]\n"
        "    hdr = json.loads(d[8:8 + n]); base = 8 + n\n"
        "    types = {'F32':torch.float32, 'F64':torch.float64, 'BF16':torch.bfloat16, 'I64':torch.int64}\n"
        "    out = {}\n"
        "    for k, v in hdr.items():\n"
        "        b, e = v['data_offsets']\n"
        "        raw = torch.frombuffer(bytearray(d[base + b:base + e]), dtype=torch.uint8)\n"
        "        out[k] = raw.view(types[v['dtype']]).reshape(v['shape'])\n"
        "    return out\n"
        "torch.manual_seed(0)\n"
        "class SimpleNN(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.fc1 = torch.nn.Linear(3, 4); self.fc2 = torch.nn.Linear(4, 2)\n"
        "net = SimpleNN()\n"
        "with torch.no_grad():\n"
        "    for i, p in enumerate(net.parameters()):\n"
        "        p.copy_(torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape) * 0.5 - i)\n"
        "sd = dict(net.state_dict())\n"
        "sd['half'] = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)\n"
        "sd['steps'] = torch.tensor(7, dtype=torch.int64)\n"
        "if sys.argv[1] == 'write':\n"
        "    write(sys.argv[2], sd)\n"
        "else:\n"
        "    got = read(sys.argv[2])\n"
        "    assert list(got) == ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias', 'half', 'steps'], list(got)\n"
        "    for k in got: assert torch.equal(got[k], sd[k] + (k == 'steps')), k\n"
        "    print('python read ok')\n",
        f);
  fclose(f);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s %s write %s", py, script, from_py);
  CHECK(system(cmd) == 0);
  ct_tensor **t = NULL;
  char **nm = NULL;
  int n = 0;
  CHECK_STATUS_OK(ct_load_safetensors(from_py, &t, &nm, &n));
  CHECK(n == 6);
  if (n == 6) {
    const char *want[6] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "half", "steps"};
    for (int i = 0; i < 6; i++) CHECK_MSG(!strcmp(nm[i], want[i]), "%s != %s", nm[i], want[i]);
    CHECK_SHAPE(t[0], 4, 3);
    double w[12];
    for (int i = 0; i < 12; i++) w[i] = i * 0.5;
    CHECK_CLOSE(t[0], w, 0, 0);
    CHECK_CLOSE(t[3], ((double[]){-3, -2.5}), 0, 0);
    CHECK(ct_dtype_of(t[4]) == CT_BF16);
    CHECK_CLOSE(t[4], ((double[]){1.5, -2.0}), 0, 0);
    CHECK(ct_dtype_of(t[5]) == CT_I64 && ct_ndim(t[5]) == 0);
    /* Write back (moved to the device under test, "steps" + 1) for Python. */
    ct_tensor *dev[6];
    for (int i = 0; i < 6; i++) dev[i] = ct_to(t[i], ct_test_device(), NULL);
    int64_t eight = 8;
    dev[5] = ct_from_data(&eight, CT_SHAPE(), &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
    CHECK_STATUS_OK(ct_save_safetensors(to_py, dev, (const char *const *)nm, 6));
    snprintf(cmd, sizeof cmd, "%s %s read %s", py, script, to_py);
    CHECK(system(cmd) == 0);
  }
  ct_safetensors_free(t, nm, n);
  remove(from_py);
  remove(to_py);
  remove(script);
}
