/* Distributed data parallel: the process group, the collectives on tensors
 * and the module helpers (include/ctensor/dist.h). This file checks
 * arguments, makes buffers contiguous, converts dtypes the engine lacks,
 * stages CUDA tensors through the host for MPI and flattens gradients into
 * buckets; mpi.c and nccl.c move the bytes.
 *
 * Wire dtypes: MPI has no 16-bit float type, so f16 and bf16 are reduced in
 * f32 (converted, reduced, rounded once: more accurate than an f16 user op,
 * which rounds at every step); NCCL has no 16-bit integer type, so i16 is
 * reduced as i32 (sums wrap the same way modulo 2^16). Broadcasts move bytes
 * and need no conversion. */
#include <stdlib.h>

#include "dist/dist_internal.h"

static struct {
  bool initialized, owns_mpi;
  int rank, world_size, local_rank;
  ct_dist_backend backend;
  ct_device device;
} g = {.world_size = 1};

bool ct_dist_is_available(void) { return ct__mpi_compiled(); }
bool ct_dist_is_nccl_available(void) { return ct__nccl_compiled(); }
bool ct_dist_is_initialized(void) { return g.initialized; }
int ct_dist_rank(void) { return g.rank; }
int ct_dist_world_size(void) { return g.world_size; }
int ct_dist_local_rank(void) { return g.local_rank; }
ct_dist_backend ct_dist_get_backend(void) { return g.backend; }
ct_device ct_dist_device(void) { return g.device; }

const char *ct_dist_backend_name(ct_dist_backend b) {
  switch (b) {
    case CT_DIST_BACKEND_MPI:
      return "mpi";
    case CT_DIST_BACKEND_NCCL:
      return "nccl";
    case CT_DIST_BACKEND_AUTO:
      return "auto";
  }
  return "unknown";
}

int ct_dist_env_world_size(void) {
  /* Open MPI, MPICH/Hydra and Intel MPI (PMI), PMIx launchers, MVAPICH. */
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                     "MV2_COMM_WORLD_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) {
      long n = strtol(v, NULL, 10);
      if (n >= 1 && n <= 1 << 24) return (int)n;
    }
  }
  return 1;
}

/* ---- The process group ------------------------------------------------- */

#define CT_DIST_DEFAULT_TIMEOUT 300.0

/* The collectives' time limit: the option, else CT_DIST_TIMEOUT, else the
 * default; a bad value is an error rather than no limit or a tiny one. */
static ct_status resolve_timeout(double given, double *out) {
  if (given != given || given < 0)
    return ct__fail_status(CT_ERR_ARG, "dist_init: timeout_s must be >= 0 seconds, got %g", given);
  if (given > 0) {
    *out = given;
    return CT_OK;
  }
  const char *env = getenv("CT_DIST_TIMEOUT");
  if (!env || !*env) {
    *out = CT_DIST_DEFAULT_TIMEOUT;
    return CT_OK;
  }
  char *end = NULL;
  double v = strtod(env, &end);
  if (end == env || *end != '\0' || !(v > 0) || v > 1e9)
    return ct__fail_status(
        CT_ERR_ARG, "dist_init: CT_DIST_TIMEOUT='%.64s' is not a number of seconds > 0", env);
  *out = v;
  return CT_OK;
}

ct_status ct_dist_init(const ct_dist_opts *opts) {
  ct_dist_opts o = opts ? *opts : (ct_dist_opts){0};
  if (g.initialized)
    return ct__fail_status(CT_ERR_STATE,
                           "dist_init: already initialized (rank %d of %d, %s); "
                           "call ct_dist_finalize first",
                           g.rank, g.world_size, ct_dist_backend_name(g.backend));
  if (o.backend != CT_DIST_BACKEND_AUTO && o.backend != CT_DIST_BACKEND_MPI &&
      o.backend != CT_DIST_BACKEND_NCCL)
    return ct__fail_status(CT_ERR_ARG, "dist_init: unknown backend %d", (int)o.backend);
  if (o.device.type != CT_DEVICE_CPU && o.device.type != CT_DEVICE_CUDA)
    return ct__fail_status(CT_ERR_DEVICE, "dist_init: unknown device type %d", (int)o.device.type);
  bool cuda = o.device.type == CT_DEVICE_CUDA;
  if (o.backend == CT_DIST_BACKEND_NCCL && !cuda)
    return ct__fail_status(CT_ERR_DEVICE, "dist_init: the NCCL backend needs a CUDA device, got %s",
                           ct_device_name(o.device));
  if (o.backend == CT_DIST_BACKEND_NCCL && !ct__nccl_compiled())
    return ct__nccl_init(0, 1, o.device, 0); /* reports why */
  double timeout = 0;
  ct_status bad = resolve_timeout(o.timeout_s, &timeout);
  if (bad != CT_OK) return bad;
  if (!ct__mpi_compiled())
    return ct__mpi_init(&g.rank, &g.world_size, &g.local_rank, &g.owns_mpi, timeout);
  if (cuda && ct_cuda_device_count() < 1)
    return ct__fail_status(CT_ERR_UNAVAILABLE, "dist_init: %s asked for, but no GPU is visible",
                           ct_device_name(o.device));
  ct_dist_backend backend = o.backend != CT_DIST_BACKEND_AUTO ? o.backend
                            : cuda && ct__nccl_compiled()     ? CT_DIST_BACKEND_NCCL
                                                              : CT_DIST_BACKEND_MPI;
  int rank = 0, world = 1, local = 0;
  bool owns = false;
  ct_status st = ct__mpi_init(&rank, &world, &local, &owns, timeout);
  if (st != CT_OK) return st;
  ct_device dev = o.device;
  if (cuda) {
    if (o.device_from_local_rank) dev.index = (int8_t)(local % ct_cuda_device_count());
    if (dev.index < 0 || dev.index >= ct_cuda_device_count())
      st = ct__fail_status(CT_ERR_DEVICE, "dist_init: %s is not visible (%d GPU(s))",
                           ct_device_name(dev), ct_cuda_device_count());
    if (st == CT_OK) st = ct_cuda_set_device(dev.index);
  }
  if (st == CT_OK && backend == CT_DIST_BACKEND_NCCL) st = ct__nccl_init(rank, world, dev, timeout);
  if (st != CT_OK) {
    char *msg = ct__strdup(ct_last_error_message());
    ct__mpi_finalize(owns);
    st = ct__fail_status(st, "%s", msg ? msg : "dist_init failed");
    free(msg);
    return st;
  }
  g.initialized = true;
  g.owns_mpi = owns;
  g.rank = rank;
  g.world_size = world;
  g.local_rank = local;
  g.backend = backend;
  g.device = dev;
  return CT_OK;
}

ct_status ct_dist_finalize(void) {
  if (!g.initialized) return CT_OK;
  if (g.backend == CT_DIST_BACKEND_NCCL) ct__nccl_finalize();
  ct_status st = ct__mpi_finalize(g.owns_mpi);
  g.initialized = false;
  g.rank = g.local_rank = 0;
  g.world_size = 1;
  g.backend = CT_DIST_BACKEND_AUTO;
  g.device = ct_cpu();
  return st;
}

static ct_status check_init(const char *op) {
  if (!ct__mpi_compiled()) return ct__mpi_barrier(op); /* says MPI is missing */
  if (!g.initialized)
    return ct__fail_status(
        CT_ERR_STATE, "%s: the process group is not initialized (call ct_dist_init first)", op);
  return CT_OK;
}

ct_status ct_dist_barrier(void) {
  ct_status st = check_init("dist_barrier");
  if (st == CT_OK && g.backend == CT_DIST_BACKEND_NCCL)
    st = ct__nccl_synchronize("dist_barrier", g.device);
  return st == CT_OK ? ct__mpi_barrier("dist_barrier") : st;
}

/* ---- Collectives -------------------------------------------------------- */

static ct_status check_tensor(const char *op, const ct_tensor *t) {
  ct_status st = check_init(op);
  if (st != CT_OK) return st;
  if (!t) return ct__fail_status(CT_ERR_ARG, "%s: tensor is NULL", op);
  if (g.backend == CT_DIST_BACKEND_NCCL && !ct_device_equal(ct__device(t), g.device))
    return ct__fail_status(CT_ERR_DEVICE,
                           "%s: tensor on %s, but the process group (nccl) was initialized for %s",
                           op, ct_device_name(ct__device(t)), ct_device_name(g.device));
  return CT_OK;
}

static ct_status check_reduce(const char *op, const ct_tensor *t, ct_dist_op rop) {
  if ((unsigned)rop > CT_DIST_MIN)
    return ct__fail_status(CT_ERR_ARG, "%s: unknown reduce op %d", op, (int)rop);
  if (rop == CT_DIST_AVG && !ct_dtype_is_floating(t->dtype))
    return ct__fail_status(CT_ERR_DTYPE, "%s: op avg needs a floating tensor, got %s", op,
                           ct_dtype_name(t->dtype));
  return CT_OK;
}

/* The dtype the engine reduces `d` in. */
static ct_dtype wire_dtype(ct_dtype d) {
  if (g.backend == CT_DIST_BACKEND_NCCL) return d == CT_I16 ? CT_I32 : d;
  return d == CT_F16 || d == CT_BF16 ? CT_F32 : d;
}

/* Reduces buf, a contiguous tensor of the wire dtype on the engine's side
 * (host memory for MPI, the group's GPU for NCCL). */
static ct_status reduce_wire(const char *op, ct_tensor *buf, ct_dist_op rop) {
  if (g.backend == CT_DIST_BACKEND_NCCL) {
    ct_status st = ct__nccl_all_reduce(op, ct__data(buf), buf->numel, buf->dtype, rop, g.device);
    return st == CT_OK ? ct__nccl_record(g.device, buf->storage->data) : st;
  }
  ct_status st = ct__mpi_all_reduce(op, ct__data(buf), buf->numel, buf->dtype,
                                    rop == CT_DIST_AVG ? CT_DIST_SUM : rop);
  if (st == CT_OK && rop == CT_DIST_AVG && g.world_size > 1 &&
      !ct_div_scalar_(buf, (double)g.world_size))
    st = ct_last_error();
  return st;
}

/* all_reduce of t in place, in grad-free mode. t is contiguous for the fast
 * path (reduced where it is); otherwise it goes through a wire buffer. */
static ct_status all_reduce_nograd(const char *op, ct_tensor *t, ct_dist_op rop) {
  if (t->numel == 0) return CT_OK;
  ct_dtype wire = wire_dtype(t->dtype);
  bool on_engine = g.backend == CT_DIST_BACKEND_NCCL || ct__is_cpu(t);
  if (on_engine && wire == t->dtype && ct__is_contiguous(t)) {
    ct_status st = reduce_wire(op, t, rop);
    if (st == CT_OK) ct__bump_version(t);
    return st;
  }
  ct_device where = g.backend == CT_DIST_BACKEND_NCCL ? g.device : ct_cpu();
  ct_tensor *tmp = ct_to(t, where, &(ct_to_opts){.copy = wire == t->dtype});
  ct_tensor *buf = tmp ? ct_cast(tmp, wire) : NULL;
  ct_tensor *cbuf = buf ? ct_contiguous(buf) : NULL;
  ct_status st = cbuf ? reduce_wire(op, cbuf, rop) : ct_last_error();
  if (st == CT_OK && !ct_copy_(t, cbuf)) st = ct_last_error();
  ct_free(cbuf);
  ct_free(buf);
  ct_free(tmp);
  return st;
}

ct_status ct_dist_all_reduce_(ct_tensor *t, ct_dist_op rop) {
  static const char op[] = "dist_all_reduce_";
  ct_status st = check_tensor(op, t);
  if (st == CT_OK) st = check_reduce(op, t, rop);
  if (st != CT_OK) return st;
  ct_no_grad_begin();
  st = all_reduce_nograd(op, t, rop);
  ct_no_grad_end();
  return st;
}

static ct_status broadcast_nograd(const char *op, ct_tensor *t, int root) {
  if (t->numel == 0) return CT_OK;
  bool on_engine = g.backend == CT_DIST_BACKEND_NCCL || ct__is_cpu(t);
  ct_tensor *buf = NULL;
  if (!(on_engine && ct__is_contiguous(t))) {
    ct_device where = g.backend == CT_DIST_BACKEND_NCCL ? g.device : ct_cpu();
    ct_tensor *tmp = ct_to(t, where, &(ct_to_opts){.copy = true});
    buf = tmp ? ct_contiguous(tmp) : NULL;
    ct_free(tmp);
    if (!buf) return ct_last_error();
  }
  ct_tensor *b = buf ? buf : t;
  int64_t nbytes = b->numel * (int64_t)ct__elsize(b->dtype);
  ct_status st;
  if (g.backend == CT_DIST_BACKEND_NCCL) {
    st = ct__nccl_broadcast(op, ct__data(b), nbytes, CT_U8, root, g.device);
    if (st == CT_OK) st = ct__nccl_record(g.device, b->storage->data);
  } else {
    st = ct__mpi_broadcast(op, ct__data(b), nbytes, root);
  }
  if (st == CT_OK && buf && !ct_copy_(t, buf)) st = ct_last_error();
  if (st == CT_OK && !buf) ct__bump_version(t);
  ct_free(buf);
  return st;
}

static ct_status check_root(const char *op, int root) {
  if (root < 0 || root >= g.world_size)
    return ct__fail_status(CT_ERR_ARG, "%s: root %d is outside 0..%d", op, root, g.world_size - 1);
  return CT_OK;
}

ct_status ct_dist_broadcast_(ct_tensor *t, int root) {
  static const char op[] = "dist_broadcast_";
  ct_status st = check_tensor(op, t);
  if (st == CT_OK) st = check_root(op, root);
  if (st != CT_OK) return st;
  ct_no_grad_begin();
  st = broadcast_nograd(op, t, root);
  ct_no_grad_end();
  return st;
}

/* One bucket: the tensors ts[0..n) (same dtype and device) flattened into
 * one buffer, reduced, copied back. */
static ct_status reduce_bucket(const char *op, ct_tensor *const *ts, int n, ct_dist_op rop) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += ts[i]->numel;
  if (total == 0) return CT_OK;
  if (n == 1) return all_reduce_nograd(op, ts[0], rop);
  ct_tensor *flat =
      ct_empty(&total, 1, &(ct_tensor_opts){.dtype = ts[0]->dtype, .device = ct__device(ts[0])});
  ct_tensor **views = ct__calloc((size_t)n, sizeof *views);
  ct_status st = flat && views ? CT_OK
                 : flat        ? ct__fail_status(CT_ERR_OOM, "%s: out of host memory", op)
                               : ct_last_error();
  int64_t at = 0;
  for (int i = 0; i < n && st == CT_OK; i++) {
    ct_tensor *slice = ct_narrow(flat, 0, at, ts[i]->numel);
    views[i] = slice ? ct_view(slice, ts[i]->shape, ts[i]->ndim) : NULL;
    ct_free(slice);
    if (!views[i] || !ct_copy_(views[i], ts[i])) st = ct_last_error();
    at += ts[i]->numel;
  }
  if (st == CT_OK) st = all_reduce_nograd(op, flat, rop);
  for (int i = 0; i < n && st == CT_OK; i++) {
    if (!ct_copy_(ts[i], views[i]))
      st = ct_last_error();
    else
      ct__bump_version(ts[i]);
  }
  for (int i = 0; views && i < n; i++) ct_free(views[i]);
  free(views);
  ct_free(flat);
  return st;
}

ct_status ct_dist_all_reduce_coalesced_(ct_tensor *const *tensors, int n, ct_dist_op rop) {
  static const char op[] = "dist_all_reduce_coalesced_";
  ct_status st = check_init(op);
  if (st != CT_OK) return st;
  if (n < 0 || (n > 0 && !tensors))
    return ct__fail_status(CT_ERR_ARG, "%s: %d tensors at %p", op, n, (const void *)tensors);
  for (int i = 0; i < n && st == CT_OK; i++)
    if (tensors[i] && (st = check_tensor(op, tensors[i])) == CT_OK)
      st = check_reduce(op, tensors[i], rop);
  if (st != CT_OK) return st;
  ct_tensor **group = ct__malloc(sizeof *group * (size_t)(n ? n : 1));
  bool *done = ct__calloc((size_t)(n ? n : 1), 1);
  if (!group || !done) st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory", op);
  ct_no_grad_begin();
  /* Buckets in order of first appearance: the same on every rank. */
  for (int i = 0; i < n && st == CT_OK; i++) {
    if (done[i] || !tensors[i]) continue;
    int k = 0;
    for (int j = i; j < n; j++) {
      ct_tensor *t = tensors[j];
      if (!done[j] && t && t->dtype == tensors[i]->dtype &&
          ct_device_equal(ct__device(t), ct__device(tensors[i]))) {
        group[k++] = t;
        done[j] = true;
      }
    }
    st = reduce_bucket(op, group, k, rop);
  }
  ct_no_grad_end();
  free(group);
  free(done);
  return st;
}

/* ---- Module helpers ------------------------------------------------------ */

/* Checks that every rank has the same n, and, per entry, the same values of
 * the k int64 in vals[i * k ..] (max == min), except columns where
 * any_col[c] (their maximum is returned in vals instead). */
static ct_status agree(const char *op, const char *what, int64_t *vals, int n, int k,
                       const bool *any_col, const char *const *names) {
  int64_t count = n, cmax, cmin;
  ct_status st = ct__mpi_max_min_i64(op, &count, &cmax, &cmin, 1);
  if (st != CT_OK) return st;
  if (cmax != cmin)
    return ct__fail_status(CT_ERR_STATE,
                           "%s: ranks have different numbers of %s (%lld to %lld; "
                           "this rank %d has %d)",
                           op, what, (long long)cmin, (long long)cmax, g.rank, n);
  if (n == 0) return CT_OK;
  size_t sz = sizeof(int64_t) * (size_t)n * (size_t)k;
  int64_t *mx = ct__malloc(sz), *mn = ct__malloc(sz);
  st = mx && mn ? ct__mpi_max_min_i64(op, vals, mx, mn, n * k)
                : ct__fail_status(CT_ERR_OOM, "%s: out of host memory", op);
  for (int i = 0; i < n && st == CT_OK; i++)
    for (int c = 0; c < k; c++) {
      int64_t at = (int64_t)i * k + c;
      if (any_col && any_col[c])
        vals[at] = mx[at];
      else if (mx[at] != mn[at])
        st = ct__fail_status(CT_ERR_STATE,
                             "%s: %s %d (%s) differs across ranks (%s from %lld to "
                             "%lld): the modules must have the same structure",
                             op, what, i, names[i] ? names[i] : "?",
                             c == 0 ? "element count" : "dtype", (long long)mn[at],
                             (long long)mx[at]);
    }
  free(mx);
  free(mn);
  return st;
}

ct_status ct_dist_broadcast_module_(ct_module *m, int root) {
  static const char op[] = "dist_broadcast_module_";
  ct_status st = check_init(op);
  if (st == CT_OK) st = check_root(op, root);
  if (st != CT_OK) return st;
  if (!m) return ct__fail_status(CT_ERR_ARG, "%s: module is NULL", op);
  int n = ct_module_state(m, NULL, NULL, 0);
  ct_tensor **ts = ct__calloc((size_t)(n ? n : 1), sizeof *ts);
  const char **names = ct__calloc((size_t)(n ? n : 1), sizeof *names);
  int64_t *vals = ct__malloc(sizeof(int64_t) * 2 * (size_t)(n ? n : 1));
  if (!ts || !names || !vals) st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory", op);
  if (st == CT_OK && ct_module_state(m, ts, names, n) != n) st = ct_last_error();
  if (st == CT_OK) {
    for (int i = 0; i < n; i++) {
      vals[2 * i] = ts[i]->numel;
      vals[2 * i + 1] = ts[i]->dtype;
    }
    st = agree(op, "parameters and buffers", vals, n, 2, NULL, names);
  }
  ct_no_grad_begin();
  for (int i = 0; i < n && st == CT_OK; i++) {
    if ((st = check_tensor(op, ts[i])) == CT_OK) st = broadcast_nograd(op, ts[i], root);
  }
  ct_no_grad_end();
  free(ts);
  free(names);
  free(vals);
  return st;
}

ct_status ct_dist_average_gradients(ct_module *m) {
  static const char op[] = "dist_average_gradients";
  ct_status st = check_init(op);
  if (st != CT_OK) return st;
  if (!m) return ct__fail_status(CT_ERR_ARG, "%s: module is NULL", op);
  int n = ct_module_parameters(m, NULL, NULL, 0);
  ct_tensor **ps = ct__calloc((size_t)(n ? n : 1), sizeof *ps);
  ct_tensor **grads = ct__calloc((size_t)(n ? n : 1), sizeof *grads);
  const char **names = ct__calloc((size_t)(n ? n : 1), sizeof *names);
  int64_t *vals = ct__malloc(sizeof(int64_t) * 3 * (size_t)(n ? n : 1));
  if (!ps || !grads || !names || !vals)
    st = ct__fail_status(CT_ERR_OOM, "%s: out of host memory", op);
  if (st == CT_OK && ct_module_parameters(m, ps, names, n) != n) st = ct_last_error();
  if (st == CT_OK) {
    for (int i = 0; i < n; i++) {
      vals[3 * i] = ps[i]->numel;
      vals[3 * i + 1] = ps[i]->dtype;
      vals[3 * i + 2] = ct_grad(ps[i]) != NULL;
    }
    st = agree(op, "parameters", vals, n, 3, (const bool[3]){false, false, true}, names);
  }
  int k = 0;
  for (int i = 0; i < n && st == CT_OK; i++) {
    if (!vals[3 * i + 2]) continue; /* no gradient on any rank */
    ct_tensor *gr = ct_grad(ps[i]);
    if (!gr) { /* a gradient elsewhere: this rank contributes zeros */
      ct_tensor *z = ct_zeros_like(ps[i], NULL);
      st = z ? ct_set_grad(ps[i], z) : ct_last_error();
      ct_free(z);
      gr = ct_grad(ps[i]);
    }
    if (st == CT_OK && (st = check_tensor(op, gr)) == CT_OK) grads[k++] = gr;
  }
  if (st == CT_OK) st = ct_dist_all_reduce_coalesced_(grads, k, CT_DIST_AVG);
  free(ps);
  free(grads);
  free(names);
  free(vals);
  return st;
}
