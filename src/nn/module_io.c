/* A module's parameter count, printed summary, and state_dict saved to and
 * loaded from a safetensors file in one call, on top of ct_module_state and
 * the safetensors reader and writer. Loading checks every key, shape and
 * dtype before it copies anything, so a failed load leaves the module as it
 * was. */
#include <stdlib.h>

#include "nn/module_internal.h"

/* The module's state (parameters only when params_only) as malloc'd arrays;
 * the count, or -1 (error recorded). */
static int state_of(const char *op, const ct_module *m, bool params_only, ct_tensor ***tensors,
                    const char ***names) {
  *tensors = NULL, *names = NULL;
  if (!m) {
    ct__fail(CT_ERR_ARG, "%s: module is NULL", op);
    return -1;
  }
  int n = params_only ? ct_module_parameters(m, NULL, NULL, 0) : ct_module_state(m, NULL, NULL, 0);
  *tensors = ct__calloc((size_t)n + 1, sizeof **tensors);
  *names = ct__calloc((size_t)n + 1, sizeof **names);
  if (!*tensors || !*names) {
    free(*tensors), free(*names);
    *tensors = NULL, *names = NULL;
    ct__fail(CT_ERR_OOM, "%s: out of host memory", op);
    return -1;
  }
  /* Building the names can run out of memory (-1, the error set). */
  int got = params_only ? ct_module_parameters(m, *tensors, *names, n)
                        : ct_module_state(m, *tensors, *names, n);
  if (got < 0) {
    free(*tensors), free(*names);
    *tensors = NULL, *names = NULL;
    return -1;
  }
  return n;
}

/* Whether t appears in ts[0..i). */
static bool seen_before(ct_tensor *const *ts, int i, const ct_tensor *t) {
  for (int j = 0; j < i; j++)
    if (ts[j] == t) return true;
  return false;
}

int64_t ct_module_num_parameters(const ct_module *m, bool trainable_only) {
  ct_tensor **ts;
  const char **names;
  int n = state_of("module_num_parameters", m, true, &ts, &names);
  if (n < 0) return -1;
  int64_t total = 0;
  for (int i = 0; i < n; i++)
    if (!seen_before(ts, i, ts[i]) && (!trainable_only || ct_requires_grad(ts[i])))
      total += ct_numel(ts[i]);
  free(ts), free(names);
  return total;
}

ct_status ct_module_print_summary(const ct_module *m, FILE *out) {
  static const char op[] = "module_print_summary";
  if (!out) out = stdout;
  ct_tensor **ts;
  const char **names;
  int n = state_of(op, m, false, &ts, &names);
  if (n < 0) return ct_last_error();
  ct_tensor **ps;
  const char **pnames;
  int np = state_of(op, m, true, &ps, &pnames);
  if (np < 0) {
    free(ts), free(names);
    return ct_last_error();
  }
  int width = 4;
  for (int i = 0; i < n; i++)
    if ((int)strlen(names[i]) > width) width = (int)strlen(names[i]);
  int64_t params = 0, trainable = 0, buffers = 0, buffer_elems = 0;
  fprintf(out, "%s\n  %-*s  %-20s %-5s %-8s %12s\n", ct_module_type_name(m), width, "name", "shape",
          "dtype", "device", "elements");
  for (int i = 0; i < n; i++) {
    char shape[CT_SHAPE_STR_MAX];
    bool is_param = seen_before(ps, np, ts[i]), grad = ct_requires_grad(ts[i]);
    int64_t k = ct_numel(ts[i]);
    if (!seen_before(ts, i, ts[i])) { /* a tensor registered twice counts once */
      if (is_param)
        params += k, trainable += grad ? k : 0;
      else
        buffers++, buffer_elems += k;
    }
    fprintf(out, "  %-*s  %-20s %-5s %-8s %12lld%s\n", width, names[i],
            ct_shape_format(ct_shape(ts[i]), ct_ndim(ts[i]), shape, sizeof shape),
            ct_dtype_name(ct_dtype_of(ts[i])), ct_device_name(ct_device_of(ts[i])), (long long)k,
            is_param ? (grad ? "" : "  (frozen)") : "  (buffer)");
  }
  fprintf(out, "parameters: %lld (trainable %lld, frozen %lld); buffers: %lld (%lld elements)\n",
          (long long)params, (long long)trainable, (long long)(params - trainable),
          (long long)buffers, (long long)buffer_elems);
  free(ts), free(names), free(ps), free(pnames);
  if (fflush(out) != 0 || ferror(out)) {
    ct__fail(CT_ERR_IO, "%s: writing the summary failed", op);
    return CT_ERR_IO;
  }
  return CT_OK;
}

ct_status ct_module_save(const ct_module *m, const char *path) {
  ct_tensor **ts;
  const char **names;
  int n = state_of("module_save", m, false, &ts, &names);
  if (n < 0) return ct_last_error();
  ct_status st = ct_save_safetensors(path, ts, names, n);
  free(ts), free(names);
  return st;
}

/* ---- Loading ------------------------------------------------------------------- */

void ct_load_report_free(ct_load_report *r) {
  if (!r) return;
  for (int i = 0; i < r->n_missing; i++) free(r->missing[i]);
  for (int i = 0; i < r->n_unexpected; i++) free(r->unexpected[i]);
  free(r->missing), free(r->unexpected);
  *r = (ct_load_report){0};
}

static int find(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

/* Appends copies of the names to *list (malloc'd); false on OOM. */
static bool add_name(char ***list, int *n, const char *name) {
  char **l = ct__realloc_array(*list, (size_t)*n + 1, sizeof **list);
  if (!l) return false;
  *list = l;
  size_t len = strlen(name) + 1;
  if (!(l[*n] = ct__malloc(len))) return false;
  memcpy(l[*n], name, len);
  (*n)++;
  return true;
}

/* "a, b, c and 4 more" (names escaped) into buf. */
static void list_names(char *buf, size_t cap, char *const *names, int n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && i < 5 && len < cap; i++) {
    char esc[96];
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
                            ct_escape_name(names[i], esc, sizeof esc));
  }
  if (n > 5 && len < cap) snprintf(buf + len, cap - len, " and %d more", n - 5);
}

/* The missing and unexpected keys into r; false on OOM. */
static bool compare_keys(const char *const *want, int n, char *const *have, int nf,
                         ct_load_report *r) {
  for (int i = 0; i < n; i++)
    if (find((const char *const *)have, nf, want[i]) < 0 &&
        !add_name(&r->missing, &r->n_missing, want[i]))
      return false;
  for (int j = 0; j < nf; j++)
    if (find(want, n, have[j]) < 0 && !add_name(&r->unexpected, &r->n_unexpected, have[j]))
      return false;
  return true;
}

/* A shape or dtype mismatch between the module's tensor and the file's, or
 * CT_OK. */
static ct_status check_match(const char *path, const char *name, const ct_tensor *dst,
                             const ct_tensor *src) {
  char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX], esc[160], pesc[160];
  bool same_shape = ct_ndim(src) == ct_ndim(dst) &&
                    !memcmp(ct_shape(src), ct_shape(dst), sizeof(int64_t) * (size_t)ct_ndim(src));
  if (same_shape && ct_dtype_of(src) == ct_dtype_of(dst)) return CT_OK;
  ct_status st = same_shape ? CT_ERR_DTYPE : CT_ERR_SHAPE;
  ct__fail(st, "module_load: %s is %s %s in %s but the module's is %s %s",
           ct_escape_name(name, esc, sizeof esc), ct_dtype_name(ct_dtype_of(src)),
           ct_shape_format(ct_shape(src), ct_ndim(src), a, sizeof a),
           ct_escape_name(path, pesc, sizeof pesc), ct_dtype_name(ct_dtype_of(dst)),
           ct_shape_format(ct_shape(dst), ct_ndim(dst), b, sizeof b));
  return st;
}

ct_status ct_module_load(ct_module *m, const char *path, bool strict, ct_load_report *report) {
  static const char op[] = "module_load";
  ct_load_report local = {0}, *r = report ? report : &local;
  *r = (ct_load_report){0};
  if (!path) {
    ct__fail(CT_ERR_ARG, "%s: path is NULL", op);
    return CT_ERR_ARG;
  }
  ct_tensor **dst;
  const char **names;
  int n = state_of(op, m, false, &dst, &names);
  if (n < 0) return ct_last_error();
  ct_tensor **src = NULL;
  char **file_names = NULL;
  int nf = 0;
  ct_status st = ct_load_safetensors(path, &src, &file_names, &nf);
  if (st != CT_OK) goto done;
  if (!compare_keys(names, n, file_names, nf, r)) {
    ct_load_report_free(r);
    ct__fail(st = CT_ERR_OOM, "%s: out of host memory", op);
    goto done;
  }
  if (strict && (r->n_missing || r->n_unexpected)) {
    char miss[512], unexp[512], pesc[160];
    list_names(miss, sizeof miss, r->missing, r->n_missing);
    list_names(unexp, sizeof unexp, r->unexpected, r->n_unexpected);
    ct__fail(st = CT_ERR_ARG, "%s: %s does not match the module's state_dict:%s%s%s%s", op,
             ct_escape_name(path, pesc, sizeof pesc), r->n_missing ? " missing key(s) " : "", miss,
             r->n_unexpected ? (r->n_missing ? "; unexpected key(s) " : " unexpected key(s) ") : "",
             unexp);
    goto done;
  }
  for (int i = 0; i < n && st == CT_OK; i++) {
    int j = find((const char *const *)file_names, nf, names[i]);
    if (j >= 0) st = check_match(path, names[i], dst[i], src[j]);
  }
  if (st != CT_OK) {
    ct_load_report_free(r);
    goto done;
  }
  ct_no_grad_begin();
  for (int i = 0; i < n && st == CT_OK; i++) {
    int j = find((const char *const *)file_names, nf, names[i]);
    if (j >= 0 && !ct_copy_(dst[i], src[j])) st = ct_last_error();
  }
  ct_no_grad_end();
done:
  ct_safetensors_free(src, file_names, nf);
  ct_load_report_free(&local);
  free(dst), free(names);
  return st;
}
