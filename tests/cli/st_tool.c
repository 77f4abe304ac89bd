/* st_tool.c: checkpoint helpers for the CLI tests.
 *   st_tool compare A B     exit 0 when every tensor not named "meta.*" is
 *                           in both files with the same dtype, shape and bytes
 *   st_tool set-i64 IN OUT NAME VALUE   copy IN to OUT with the i64 tensor NAME
 *                           set to VALUE (e.g. a wrong meta.model)
 *   st_tool set-f64 IN OUT NAME VALUE   the same with a number (strtod: nan,
 *                           inf) filling a tensor of any dtype (e.g. weights)
 *   st_tool add IN OUT NAME copy IN to OUT with one more tensor, NAME (one
 *                           u8 zero): a tensor no model has */
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int load(const char *path, ct_tensor ***t, char ***names, int *n) {
  if (ct_load_safetensors(path, t, names, n) != CT_OK) {
    fprintf(stderr, "st_tool: %s\n", ct_last_error_message());
    return -1;
  }
  return 0;
}

static int is_meta(const char *name) { return !strncmp(name, "meta.", 5); }

static int compare(const char *a, const char *b) {
  ct_tensor **ta, **tb;
  char **na, **nb;
  int n_a, n_b, diffs = 0, compared = 0;
  if (load(a, &ta, &na, &n_a) || load(b, &tb, &nb, &n_b)) return 2;
  for (int i = 0; i < n_a; i++) {
    if (is_meta(na[i])) continue;
    int j = 0;
    while (j < n_b && strcmp(na[i], nb[j])) j++;
    if (j == n_b) {
      fprintf(stderr, "st_tool: %s is only in %s\n", na[i], a);
      diffs++;
      continue;
    }
    size_t sz = ct_nbytes(ta[i]);
    if (ct_dtype_of(ta[i]) != ct_dtype_of(tb[j]) || ct_ndim(ta[i]) != ct_ndim(tb[j]) ||
        sz != ct_nbytes(tb[j]) ||
        memcmp(ct_shape(ta[i]), ct_shape(tb[j]), sizeof(int64_t) * (size_t)ct_ndim(ta[i]))) {
      fprintf(stderr, "st_tool: %s differs in dtype or shape\n", na[i]);
      diffs++;
      continue;
    }
    void *pa = malloc(sz + 1), *pb = malloc(sz + 1);
    if (!pa || !pb || ct_copy_to_host(ta[i], pa, sz) || ct_copy_to_host(tb[j], pb, sz)) return 2;
    if (memcmp(pa, pb, sz)) {
      fprintf(stderr, "st_tool: %s differs\n", na[i]);
      diffs++;
    }
    compared++;
    free(pa);
    free(pb);
  }
  for (int j = 0; j < n_b; j++) {
    if (is_meta(nb[j])) continue;
    int i = 0;
    while (i < n_a && strcmp(na[i], nb[j])) i++;
    if (i == n_a) fprintf(stderr, "st_tool: %s is only in %s\n", nb[j], b), diffs++;
  }
  ct_safetensors_free(ta, na, n_a);
  ct_safetensors_free(tb, nb, n_b);
  printf("compared %d tensors: %d differ\n", compared, diffs);
  return diffs ? 1 : 0;
}

/* set-i64 (integer) writes an i64 tensor's elements exactly (INT64_MAX has
 * no double); set-f64 fills any tensor with strtod's value. */
static int set_value(const char *in, const char *out, const char *name, const char *value,
                     bool integer) {
  ct_tensor **t;
  char **names;
  int n;
  if (load(in, &t, &names, &n)) return 2;
  int found = 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) {
      if (integer && ct_dtype_of(t[i]) == CT_I64) {
        int64_t *d = ct_data_ptr(t[i]); /* loaded: contiguous, on the CPU */
        for (int64_t j = 0; j < ct_numel(t[i]); j++) d[j] = strtoll(value, NULL, 10);
      } else {
        ct_fill_(t[i], integer ? (double)strtoll(value, NULL, 10) : strtod(value, NULL));
      }
      found = 1;
    }
  if (!found) return fprintf(stderr, "st_tool: no %s in %s\n", name, in), 2;
  if (ct_save_safetensors(out, t, (const char *const *)names, n) != CT_OK)
    return fprintf(stderr, "st_tool: %s\n", ct_last_error_message()), 2;
  ct_safetensors_free(t, names, n);
  return 0;
}

static int add(const char *in, const char *out, const char *name) {
  ct_tensor **t;
  char **names;
  int n;
  if (load(in, &t, &names, &n)) return 2;
  ct_tensor **t2 = calloc((size_t)n + 1, sizeof *t2);
  const char **n2 = calloc((size_t)n + 1, sizeof *n2);
  for (int i = 0; i < n; i++) t2[i] = t[i], n2[i] = names[i];
  t2[n] = ct_zeros(CT_SHAPE(1), &(ct_tensor_opts){.dtype = CT_U8});
  n2[n] = name;
  int rc = ct_save_safetensors(out, t2, n2, n + 1) == CT_OK ? 0 : 2;
  if (rc) fprintf(stderr, "st_tool: %s\n", ct_last_error_message());
  ct_free(t2[n]);
  free(t2);
  free(n2);
  ct_safetensors_free(t, names, n);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "compare")) return compare(argv[2], argv[3]);
  if (argc == 6 && (!strcmp(argv[1], "set-i64") || !strcmp(argv[1], "set-f64")))
    return set_value(argv[2], argv[3], argv[4], argv[5], !strcmp(argv[1], "set-i64"));
  if (argc == 5 && !strcmp(argv[1], "add")) return add(argv[2], argv[3], argv[4]);
  fprintf(stderr,
          "usage: st_tool compare A B | st_tool set-i64|set-f64 IN OUT NAME VALUE | st_tool add IN "
          "OUT NAME\n");
  return 2;
}
