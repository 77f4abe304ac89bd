/* The PyTorch differential test: ctensor against torch, case by case.
 *
 * tests/oracle/gen_cases.py (Debian's python3 with torch) streams cases into
 * this test while it runs: a curated table of inputs where implementations go
 * wrong, then --cases N cases generated from --seed S (ops, dtypes, shapes from
 * 0-d and size 0 to rank 8, memory layouts, special values, autograd
 * compositions; format in gen_cases.py). Each case's inputs are built on the
 * device under test in the layout the case names, the op runs through the
 * dispatch table (oracle/oracle_ops.c) and its result is compared with torch's:
 * same dtype, same shape, values within a per-dtype tolerance (integers and
 * bool exactly, i64 without going through a double; nan matches nan,
 * infinities match by sign); with rg= the gradients of backward(out, gout)
 * too. Cases torch rejects (error=1) must fail with an error. Mismatches are
 * reported grouped by op, with the first few cases of each.
 *
 *   test_oracle [--device cuda] [--cases N] [--seed S] [--first I] [--no-table]
 *
 * In the suite it runs the table and 1500 generated cases of a fixed seed;
 * long runs pass --cases 100000 (tests/oracle/README.md). Without python,
 * torch or numpy it reports SKIP. */
#include "ct_test.h"

#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

#include "core/internal.h" /* ct__load_as_double / _i64: elements of any dtype */
#include "oracle/oracle_ops.h"

CT_TEST_DEVICE_GENERIC

#define DEFAULT_CASES 1500
#define DEFAULT_SEED 20240611
#define LINE_MAX_LEN 8192
#define MAX_OPS 128
#define EXAMPLES_PER_OP 3

/* ---- Mismatches grouped by op -------------------------------------------------- */

typedef struct op_stats {
  char op[32];
  int cases, bad;
  char examples[EXAMPLES_PER_OP][400];
} op_stats;

static op_stats stats[MAX_OPS];
static int nstats;

static op_stats *stats_for(const char *op) {
  for (int i = 0; i < nstats; i++)
    if (!strcmp(stats[i].op, op)) return &stats[i];
  if (nstats == MAX_OPS) return &stats[MAX_OPS - 1];
  op_stats *s = &stats[nstats++];
  memset(s, 0, sizeof *s);
  snprintf(s->op, sizeof s->op, "%s", op);
  return s;
}

/* Records a mismatch of the current case (printf-style message). */
static void mismatch(const oracle_case *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool case_failed;
static void mismatch(const oracle_case *c, const char *fmt, ...) {
  op_stats *s = stats_for(c->op);
  if (!case_failed) s->bad++;
  case_failed = true;
  char msg[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (int i = 0; i < EXAMPLES_PER_OP; i++)
    if (!s->examples[i][0]) {
      snprintf(s->examples[i], sizeof s->examples[i], "%.90s: %s", c->name, msg);
      break;
    }
  if (getenv("CT_ORACLE_VERBOSE")) fprintf(stderr, "MISMATCH %s (%s): %s\n", c->name, c->op, msg);
}

/* ---- Reading the stream ----------------------------------------------------------- */

typedef struct stream {
  FILE *f;
  char line[LINE_MAX_LEN];
  bool broken; /* a malformed stream: stop */
} stream;

static char *next_line(stream *s) {
  while (fgets(s->line, sizeof s->line, s->f)) {
    s->line[strcspn(s->line, "\r\n")] = 0;
    if (s->line[0] != '#') return s->line;
  }
  return NULL;
}

/* Splits line into tokens (in place); returns the count. */
static int tokens(char *line, char **tok, int max) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
    tok[n++] = t;
  return n;
}

/* "DTYPE NDIM D0 .. Dn-1" at tok, then the raw elements: a CPU tensor. On a
 * malformed line the stream is marked broken. *used: tokens consumed. */
static ct_tensor *read_tensor(stream *s, char **tok, int ntok, int *used) {
  ct_dtype dt;
  int64_t shape[CT_MAX_DIMS];
  int nd = ntok >= 2 ? atoi(tok[1]) : -1;
  if (ntok < 2 || !ct_dtype_parse(tok[0], &dt) || nd < 0 || nd > CT_MAX_DIMS || ntok < 2 + nd) {
    s->broken = true;
    return NULL;
  }
  for (int d = 0; d < nd; d++) shape[d] = strtoll(tok[2 + d], NULL, 10);
  *used = 2 + nd;
  ct_tensor *t = ct_empty(shape, nd, &(ct_tensor_opts){.dtype = dt});
  size_t n = ct_nbytes(t);
  if (!t || (n && fread(ct_data_ptr(t), 1, n, s->f) != n)) {
    s->broken = true;
    return NULL;
  }
  return t;
}

/* ---- Inputs in their layouts ---------------------------------------------------- */

/* t (logical values) stored as the layout says, with differentiable ops so
 * that a leaf t receives its gradient (gen_cases.py's with_layout). */
static ct_tensor *with_layout(ct_tensor *t, const char *lay) {
  int nd = ct_ndim(t);
  const int64_t *sh = ct_shape(t);
  if (!strcmp(lay, "c")) return t;
  if (!strcmp(lay, "t")) {
    int rev[CT_MAX_DIMS];
    for (int d = 0; d < nd; d++) rev[d] = nd - 1 - d;
    return ct_permute(ct_contiguous(ct_permute(t, rev, nd)), rev, nd);
  }
  if (!strcmp(lay, "s")) {
    int64_t big[CT_MAX_DIMS];
    memcpy(big, sh, sizeof(int64_t) * (size_t)nd);
    big[nd - 1] *= 2;
    if (!ct_requires_grad(t)) { /* works at rank 8, where stack can't add a dim */
      ct_tensor_opts o = {.dtype = ct_dtype_of(t), .device = ct_device_of(t)};
      ct_tensor *v = ct_slice(ct_zeros(big, nd, &o), -1, 1, INT64_MAX, 2);
      return ct_copy_(v, t);
    }
    ct_tensor *pair[2] = {ct_zeros_like(t, NULL), t};
    return ct_slice(ct_reshape(ct_stack(pair, 2, -1), big, nd), -1, 1, INT64_MAX, 2);
  }
  if (!strcmp(lay, "o")) {
    ct_tensor_opts o = {.dtype = ct_dtype_of(t), .device = ct_device_of(t)};
    ct_tensor *parts[2] = {ct_zeros(CT_SHAPE(3), &o), ct_flatten(t, 0, -1)};
    return ct_view(ct_slice(ct_cat(parts, 2, 0), 0, 3, INT64_MAX, 1), sh, nd);
  }
  if (!strncmp(lay, "e:", 2)) {
    int64_t shape[CT_MAX_DIMS];
    int n = 0;
    for (const char *p = lay + 2; *p && n < CT_MAX_DIMS;) {
      char *end;
      shape[n++] = strtoll(p, &end, 10);
      p = *end == ',' ? end + 1 : end;
      if (end == p && *p) break;
    }
    return ct_expand(t, shape, n);
  }
  ct_test_fail(__FILE__, __LINE__, "unknown layout '%s'", lay);
  return NULL;
}

/* ---- Comparison ------------------------------------------------------------------- */

/* Tolerance classes, scaled from the harness' per-dtype ones (ct_test_rtol
 * and atol: f64 1e-12, f32 2e-6, f16 2e-3, bf16 1.6e-2 relative). "loose"
 * covers results that sum many terms (reductions, matmul, autograd), whose
 * rounding depends on the order of the sums. Integer and bool: exact. */
static void tolerance(const char *cls, ct_dtype dt, double *rtol, double *atol) {
  *rtol = *atol = 0;
  if (!ct_dtype_is_floating(dt) || strcmp(cls, "exact") == 0) return;
  double scale = 1;
  if (strcmp(cls, "loose") == 0) scale = dt == CT_F64 ? 1000 : dt == CT_F32 ? 10 : 2;
  *rtol = ct_test_rtol(dt) * scale;
  *atol = ct_test_atol(dt) * scale;
}

static bool close_enough(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want); /* false for a nan got */
}

static char *format_index(int64_t flat, const int64_t *shape, int ndim, char *buf, size_t size) {
  int64_t idx[CT_MAX_DIMS];
  for (int d = ndim - 1; d >= 0; d--) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return ct_shape_format(idx, ndim, buf, size);
}

/* Compares got (any device, layout) with want (CPU, contiguous); records a
 * mismatch naming `what` (out, grad 1...) and returns false if they differ. */
static bool compare(const oracle_case *c, const char *what, const ct_tensor *got,
                    const ct_tensor *want) {
  char a[160], b[160];
  if (!got) {
    mismatch(c, "%s: failed: %s: %s", what, ct_status_name(ct_last_error()),
             ct_last_error_message());
    return false;
  }
  const int64_t *gs = ct_shape(got), *ws = ct_shape(want);
  bool same_shape = ct_ndim(got) == ct_ndim(want);
  for (int d = 0; same_shape && d < ct_ndim(want); d++) same_shape = gs[d] == ws[d];
  ct_dtype dt = ct_dtype_of(want);
  if (ct_dtype_of(got) != dt || !same_shape) {
    mismatch(c, "%s: got %s %s, torch %s %s", what, ct_dtype_name(ct_dtype_of(got)),
             ct_shape_format(gs, ct_ndim(got), a, sizeof a), ct_dtype_name(dt),
             ct_shape_format(ws, ct_ndim(want), b, sizeof b));
    return false;
  }
  if (ct_device_of(got).type != ct_test_device().type) {
    mismatch(c, "%s: result on %s", what, ct_device_name(ct_device_of(got)));
    return false;
  }
  ct_tensor *host = ct_contiguous(ct_to(got, ct_cpu(), NULL));
  if (!host) {
    mismatch(c, "%s: cannot read the result: %s", what, ct_last_error_message());
    return false;
  }
  double rtol, atol;
  tolerance(c->tol, dt, &rtol, &atol);
  int64_t n = ct_numel(want), bad = 0, first = -1;
  double gv = 0, wv = 0;
  size_t es = ct_dtype_size(dt);
  const char *gp = ct_data_ptr(host), *wp = ct_data_ptr(want);
  for (int64_t i = 0; i < n; i++) {
    const char *ge = gp + i * (int64_t)es, *we = wp + i * (int64_t)es;
    bool ok = ct_dtype_is_floating(dt)
                  ? close_enough(ct__load_as_double(ge, dt), ct__load_as_double(we, dt), rtol, atol)
                  : ct__load_as_i64(ge, dt) == ct__load_as_i64(we, dt); /* exact, also for i64 */
    if (!ok) {
      if (first < 0) first = i, gv = ct__load_as_double(ge, dt), wv = ct__load_as_double(we, dt);
      bad++;
    }
  }
  if (first >= 0)
    mismatch(c, "%s (%s %s): %lld of %lld elements differ; first at %s: got %.9g, torch %.9g", what,
             ct_dtype_name(dt), ct_shape_format(ws, ct_ndim(want), a, sizeof a), (long long)bad,
             (long long)n, format_index(first, ws, ct_ndim(want), b, sizeof b), gv, wv);
  return bad == 0;
}

/* ---- One case --------------------------------------------------------------------- */

/* Splits a "case ..." line into c (tokens point into line). */
static bool parse_case(char *line, oracle_case *c) {
  char *tok[5 + ORACLE_MAX_PARAMS];
  int n = tokens(line, tok, (int)(sizeof tok / sizeof tok[0]));
  memset(c, 0, sizeof *c);
  if (n < 5 || strcmp(tok[0], "case")) return false;
  c->name = tok[1], c->op = tok[2], c->nin = atoi(tok[3]), c->tol = tok[4];
  for (int i = 5; i < n && c->nparams < ORACLE_MAX_PARAMS; i++) {
    char *eq = strchr(tok[i], '=');
    if (!eq) continue;
    *eq = 0;
    c->keys[c->nparams] = tok[i], c->vals[c->nparams++] = eq + 1;
  }
  return c->nin >= 0 && c->nin <= ORACLE_MAX_IN;
}

/* The case whose header is in s->line: reads its records, runs it, compares.
 * Everything it makes lives in the caller's scope. */
static void run_case(stream *s, oracle_case *c) {
  ct_tensor *in[ORACLE_MAX_IN] = {0}, *leaf[ORACLE_MAX_IN] = {0};
  int64_t rg[ORACLE_MAX_IN];
  int nrg = oracle_param_list(c, "rg", rg, ORACLE_MAX_IN);
  case_failed = false;
  stats_for(c->op)->cases++;
  for (int k = 0; k < c->nin; k++) { /* in K DTYPE NDIM D.. LAYOUT */
    char *tok[8 + CT_MAX_DIMS];
    int used = 0, n = next_line(s) ? tokens(s->line, tok, 8 + CT_MAX_DIMS) : 0;
    if (n < 4 || strcmp(tok[0], "in") || atoi(tok[1]) != k) {
      s->broken = true;
      return;
    }
    ct_tensor *t = read_tensor(s, tok + 2, n - 2, &used);
    if (!t) return;
    const char *lay = 2 + used < n ? tok[2 + used] : "c";
    char layout[64];
    snprintf(layout, sizeof layout, "%s", lay);
    t = ct_to(t, ct_test_device(), NULL);
    for (int j = 0; j < nrg; j++)
      if (rg[j] == k) t = ct_requires_grad_(ct_detach(t), true);
    leaf[k] = t;
    in[k] = with_layout(t, layout);
    if (!in[k]) mismatch(c, "input %d: building layout %s: %s", k, layout, ct_last_error_message());
  }
  /* what torch did: err MESSAGE, or out (+ gout and grads) */
  char *tok[8 + CT_MAX_DIMS];
  if (!next_line(s)) {
    s->broken = true;
    return;
  }
  ct_tensor *want = NULL;
  bool torch_failed = strncmp(s->line, "err", 3) == 0;
  if (!torch_failed) {
    int used, n = tokens(s->line, tok, 8 + CT_MAX_DIMS);
    if (n < 1 || strcmp(tok[0], "out") || !(want = read_tensor(s, tok + 1, n - 1, &used))) {
      s->broken = true;
      return;
    }
  }
  oracle_call call = {c, in, want ? ct_dtype_of(want) : CT_F32, want ? ct_shape(want) : NULL,
                      want ? ct_ndim(want) : 0};
  ct_tensor *got = NULL;
  bool inputs_ok = true;
  for (int k = 0; k < c->nin; k++) inputs_ok = inputs_ok && in[k];
  if (inputs_ok) {
    ct_clear_error();
    got = ct_test_synced(oracle_dispatch(&call)); /* a GPU reports bad data at a sync */
    if (torch_failed) {
      if (got || ct_last_error() == CT_OK || !*ct_last_error_message())
        mismatch(c, "torch raises an error, ctensor %s",
                 got ? "returned a result" : "returned NULL without an error");
    } else {
      compare(c, "out", got, want);
    }
  }
  /* grad cases: gout, then "grad K ..." for each input in rg= */
  while (next_line(s) && strcmp(s->line, "end")) {
    int used, n = tokens(s->line, tok, 8 + CT_MAX_DIMS);
    if (n >= 1 && !strcmp(tok[0], "gout")) {
      ct_tensor *gout = read_tensor(s, tok + 1, n - 1, &used);
      if (!gout) return;
      if (!case_failed && ct_backward(got, ct_to(gout, ct_test_device(), NULL), NULL) != CT_OK)
        mismatch(c, "backward failed: %s", ct_last_error_message());
      continue;
    }
    if (n < 3 || strcmp(tok[0], "grad")) {
      s->broken = true;
      return;
    }
    int k = atoi(tok[1]);
    ct_tensor *gw = strcmp(tok[2], "none") ? read_tensor(s, tok + 2, n - 2, &used) : NULL;
    if (s->broken) return;
    if (k < 0 || k >= c->nin || case_failed) continue;
    ct_tensor *g = ct_grad(leaf[k]);
    char what[32];
    snprintf(what, sizeof what, "grad %d", k);
    if (!gw) {
      if (g) mismatch(c, "%s: torch has none, ctensor has one", what);
    } else {
      compare(c, what, g ? g : ct_zeros_like(leaf[k], NULL), gw);
    }
  }
}

/* ---- The test ---------------------------------------------------------------------- */

/* CT_ORACLE_SCRIPT, else the build's absolute path (tests/CMakeLists.txt). */
static const char *generator_script(char *buf, size_t size) {
  const char *env = getenv("CT_ORACLE_SCRIPT");
  snprintf(buf, size, "%s", env && *env ? env : CT_ORACLE_GENERATOR);
  return buf;
}

CT_TEST(pytorch_differential) {
  const char *python = ct_test_python_with_torch();
  if (!python) {
    ct_test_skip(
        "no python3 with torch and numpy (Debian: apt install python3-torch python3-numpy)");
    return;
  }
  char script[1024];
  generator_script(script, sizeof script);
  if (access(script, R_OK) != 0) {
    char msg[1200];
    snprintf(msg, sizeof msg, "generator %s not found (set CT_ORACLE_SCRIPT)", script);
    ct_test_skip(msg);
    return;
  }
  const char *cases = ct_test_option("cases"), *seed = ct_test_option("seed");
  const char *first = ct_test_option("first");
  long long ncases = cases ? atoll(cases) : DEFAULT_CASES;
  long long nseed = seed ? atoll(seed) : DEFAULT_SEED, nfirst = first ? atoll(first) : 0;
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' '%s' --cases %lld --seed %lld --first %lld%s", python, script,
           ncases, nseed, nfirst, getenv("CT_ORACLE_NO_TABLE") ? " --no-table" : "");
  stream s = {.f = popen(cmd, "r")};
  if (!s.f) {
    ct_test_fail(__FILE__, __LINE__, "cannot run %s", cmd);
    return;
  }
  int total = 0, failed = 0;
  char *line, last_case[128] = "";
  while (!s.broken && (line = next_line(&s))) {
    oracle_case c;
    char header[LINE_MAX_LEN];
    snprintf(header, sizeof header, "%s", line);
    if (!parse_case(header, &c)) {
      s.broken = true;
      break;
    }
    total++;
    snprintf(last_case, sizeof last_case, "%s", c.name);
    ct_scope_begin();
    run_case(&s, &c);
    ct_scope_end();
    failed += case_failed;
    ct_clear_error();
  }
  int rc = pclose(s.f);
  CHECK_MSG(!s.broken, "the case stream is malformed in case %s near: %.200s", last_case, s.line);
  CHECK_MSG(rc == 0, "%s exited with status %d", cmd, rc);
  printf(
      "differential [%s]: %d cases (table + %lld generated, seed %lld), %d passed, %d mismatched\n",
      ct_device_name(ct_test_device()), total, ncases, nseed, total - failed, failed);
  for (int i = 0; i < nstats; i++) {
    if (!stats[i].bad) continue;
    printf("  %-16s %d of %d cases\n", stats[i].op, stats[i].bad, stats[i].cases);
    for (int j = 0; j < EXAMPLES_PER_OP && stats[i].examples[j][0]; j++)
      printf("      %s\n", stats[i].examples[j]);
  }
  CHECK_MSG(failed == 0, "%d of %d cases differ from torch (grouped by op above)", failed, total);
  CHECK_MSG(total > 0, "no cases from %s", cmd);
}
