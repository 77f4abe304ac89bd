/* einsum, lowered to ops that exist (diagonal, sum, permute, reshape,
 * expand, bmm), so autograd and both backends come with them.
 *
 * Labels are numbered 0..51 for letters (A-Z then a-z: the implicit output
 * lists them in this order, as torch and NumPy) and 52.. for the dims an
 * ellipsis covers (aligned on the right across operands, broadcasting as
 * NumPy). Each operand first loses its repeated labels (diagonals) and the
 * labels no one else needs (sums); then operands are combined left to
 * right, each pair as one batched matrix product:
 *   A [batch, a-only, contracted] (B, M, K) @ B [batch, contracted, b-only]
 *   (B, K, N) -> [batch, a-only, b-only],
 * and the last result is permuted to the output's order. */
#include <ctype.h>

#include "ctensor/products.h"
#include "ops/ops_internal.h"

#define NLETTERS 52
#define NLABELS (NLETTERS + CT_MAX_DIMS)

typedef struct term {
  int labels[CT_MAX_DIMS + 1]; /* per dim of the operand (ellipsis dims expanded) */
  int n;
  bool ellipsis;
  int pos; /* where the term starts in the equation */
} term;

typedef struct operand {
  ct_tensor *t; /* owned by the scope */
  int labels[CT_MAX_DIMS];
  int n;
} operand;

static int letter_label(char c) { return isupper((unsigned char)c) ? c - 'A' : c - 'a' + 26; }

/* Parses one term [s, end) (letters, at most one "...", spaces). The
 * ellipsis is recorded as label -1 in place. */
static bool parse_term(const char *eq, int s, int end, term *t) {
  t->n = 0, t->ellipsis = false, t->pos = s;
  for (int i = s; i < end; i++) {
    char c = eq[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= end || eq[i + 1] != '.' || eq[i + 2] != '.') {
        ct__fail(CT_ERR_ARG,
                 "einsum: '.' at position %d is not part of an ellipsis '...' in \"%s\"", i, eq);
        return false;
      }
      if (t->ellipsis) {
        ct__fail(CT_ERR_ARG, "einsum: a second ellipsis at position %d in one term of \"%s\"", i,
                 eq);
        return false;
      }
      t->ellipsis = true;
      t->labels[t->n++] = -1;
      i += 2;
      continue;
    }
    if (!isalpha((unsigned char)c)) {
      ct__fail(CT_ERR_ARG,
               "einsum: invalid character '%c' at position %d in \"%s\" (labels are letters)", c, i,
               eq);
      return false;
    }
    if (t->n == CT_MAX_DIMS + 1) {
      ct__fail(CT_ERR_ARG, "einsum: the term at position %d has more than %d labels", s,
               CT_MAX_DIMS);
      return false;
    }
    t->labels[t->n++] = letter_label(c);
  }
  return true;
}

/* The term's labels for an operand of ndim dims, the ellipsis expanded to
 * labels NLETTERS + (its dims counted from the right of the widest one). */
static bool bind(const char *eq, const term *t, const ct_tensor *x, int ell_dims, operand *o) {
  int named = t->n - (t->ellipsis ? 1 : 0);
  if (t->ellipsis ? x->ndim < named : x->ndim != named) {
    ct__fail(CT_ERR_SHAPE,
             "einsum: the term at position %d of \"%s\" has %d labels for an operand of %d dims",
             t->pos, eq, named, x->ndim);
    return false;
  }
  int ne = x->ndim - named;
  o->n = 0;
  for (int k = 0; k < t->n; k++) {
    if (t->labels[k] >= 0) {
      o->labels[o->n++] = t->labels[k];
      continue;
    }
    for (int e = 0; e < ne; e++) o->labels[o->n++] = NLETTERS + ell_dims - ne + e;
  }
  o->t = (ct_tensor *)x;
  return true;
}

/* Removes repeated labels of o by taking diagonals. */
static bool take_diagonals(const char *eq, operand *o) {
  for (int i = 0; i < o->n; i++)
    for (int j = i + 1; j < o->n; j++) {
      if (o->labels[i] != o->labels[j]) continue;
      if (o->t->shape[i] != o->t->shape[j]) {
        ct__fail(CT_ERR_SHAPE,
                 "einsum: label '%c' repeated in one term of \"%s\" spans dims of sizes %lld and "
                 "%lld",
                 o->labels[i] < 26 ? 'A' + o->labels[i] : 'a' + o->labels[i] - 26, eq,
                 (long long)o->t->shape[i], (long long)o->t->shape[j]);
        return false;
      }
      int lab = o->labels[i];
      o->t = ct_diagonal(o->t, 0, i, j); /* removes i and j, appends the diagonal */
      if (!o->t) return false;
      int k = 0;
      for (int d = 0; d < o->n; d++)
        if (d != i && d != j) o->labels[k++] = o->labels[d];
      o->labels[k++] = lab;
      o->n = k;
      i = -1; /* start over: positions moved */
      break;
    }
  return true;
}

/* Sums the labels of o that `needed` doesn't hold. */
static bool sum_unneeded(operand *o, const bool *needed) {
  ct_reduce_opts r = {.ndims = 0};
  int k = 0;
  for (int d = 0; d < o->n; d++) {
    if (needed[o->labels[d]])
      o->labels[k++] = o->labels[d];
    else
      r.dims[r.ndims++] = d;
  }
  if (r.ndims == 0) return true;
  o->t = ct_sum(o->t, &r);
  o->n = k;
  return o->t != NULL;
}

static int find(const operand *o, int label) {
  for (int d = 0; d < o->n; d++)
    if (o->labels[d] == label) return d;
  return -1;
}

/* a and b's shared labels brought to one size (a size-1 dim broadcasts). */
static bool broadcast_shared(const char *eq, operand *a, operand *b) {
  int64_t sa[CT_MAX_DIMS], sb[CT_MAX_DIMS];
  memcpy(sa, a->t->shape, sizeof sa), memcpy(sb, b->t->shape, sizeof sb);
  bool ea = false, eb = false;
  for (int d = 0; d < a->n; d++) {
    int e = find(b, a->labels[d]);
    if (e < 0 || sa[d] == sb[e]) continue;
    if (sa[d] != 1 && sb[e] != 1) {
      ct__fail(CT_ERR_SHAPE, "einsum: a label of \"%s\" spans dims of sizes %lld and %lld", eq,
               (long long)sa[d], (long long)sb[e]);
      return false;
    }
    if (sa[d] == 1)
      sa[d] = sb[e], ea = true;
    else
      sb[e] = sa[d], eb = true;
  }
  if (ea) a->t = ct_expand(a->t, sa, a->n);
  if (eb) b->t = ct_expand(b->t, sb, b->n);
  return a->t && b->t;
}

/* o's dims in the order of labels[0..n) (a permutation of o's), as one
 * reshaped group per [start, end) of sizes in *size. */
static ct_tensor *grouped(const operand *o, const int *order, const int *cuts, int ngroups,
                          int64_t *sizes) {
  int perm[CT_MAX_DIMS];
  for (int k = 0; k < o->n; k++) perm[k] = find(o, order[k]);
  ct_tensor *p = ct_permute(o->t, perm, o->n);
  if (!p) return NULL;
  for (int g = 0; g < ngroups; g++) {
    sizes[g] = 1;
    for (int k = cuts[g]; k < cuts[g + 1]; k++) sizes[g] *= o->t->shape[perm[k]];
  }
  return ct_reshape(p, sizes, ngroups);
}

/* a, b -> their product over the shared labels that `needed` doesn't hold. */
static bool contract(const char *eq, operand *a, operand *b, const bool *needed, operand *out) {
  if (!broadcast_shared(eq, a, b)) return false;
  int batch[CT_MAX_DIMS], aonly[CT_MAX_DIMS], bonly[CT_MAX_DIMS], con[CT_MAX_DIMS];
  int nb = 0, na = 0, nbo = 0, nc = 0;
  for (int d = 0; d < a->n; d++) {
    int l = a->labels[d];
    if (find(b, l) < 0)
      aonly[na++] = l;
    else if (needed[l])
      batch[nb++] = l;
    else
      con[nc++] = l;
  }
  for (int d = 0; d < b->n; d++)
    if (find(a, b->labels[d]) < 0) bonly[nbo++] = b->labels[d];
  if (nb + na + nbo > CT_MAX_DIMS) {
    ct__fail(CT_ERR_SHAPE, "einsum: an intermediate of \"%s\" would have %d dims (max %d)", eq,
             nb + na + nbo, CT_MAX_DIMS);
    return false;
  }
  int oa[CT_MAX_DIMS], ob[CT_MAX_DIMS];
  memcpy(oa, batch, sizeof(int) * (size_t)nb), memcpy(oa + nb, aonly, sizeof(int) * (size_t)na);
  memcpy(oa + nb + na, con, sizeof(int) * (size_t)nc);
  memcpy(ob, batch, sizeof(int) * (size_t)nb), memcpy(ob + nb, con, sizeof(int) * (size_t)nc);
  memcpy(ob + nb + nc, bonly, sizeof(int) * (size_t)nbo);
  int64_t s3a[3], s3b[3];
  ct_tensor *a3 = grouped(a, oa, (int[]){0, nb, nb + na, nb + na + nc}, 3, s3a);
  ct_tensor *b3 = grouped(b, ob, (int[]){0, nb, nb + nc, nb + nc + nbo}, 3, s3b);
  ct_tensor *p = a3 && b3 ? ct_bmm(a3, b3) : NULL; /* (batch, a-only, b-only) */
  if (!p) return false;
  int64_t shape[CT_MAX_DIMS];
  int n = 0;
  for (int k = 0; k < nb; k++)
    out->labels[n] = batch[k], shape[n++] = a->t->shape[find(a, batch[k])];
  for (int k = 0; k < na; k++)
    out->labels[n] = aonly[k], shape[n++] = a->t->shape[find(a, aonly[k])];
  for (int k = 0; k < nbo; k++)
    out->labels[n] = bonly[k], shape[n++] = b->t->shape[find(b, bonly[k])];
  out->n = n;
  out->t = ct_reshape(p, shape, n);
  return out->t != NULL;
}

/* Which labels are needed after operand i: in the output or in a later operand. */
static void needed_after(const operand *ops, int n, int i, const int *outl, int nout, bool *need) {
  memset(need, 0, sizeof(bool) * NLABELS);
  for (int k = 0; k < nout; k++) need[outl[k]] = true;
  for (int j = i + 1; j < n; j++)
    for (int d = 0; d < ops[j].n; d++) need[ops[j].labels[d]] = true;
}

/* The output labels: explicit (checked), or the ellipsis then the labels
 * used once, in label order. */
static bool output_labels(const char *eq, const char *arrow, const operand *ops, int n,
                          int ell_dims, int *outl, int *nout) {
  int count[NLABELS] = {0};
  for (int i = 0; i < n; i++)
    for (int d = 0; d < ops[i].n; d++) count[ops[i].labels[d]]++;
  *nout = 0;
  if (!arrow) {
    for (int e = 0; e < ell_dims; e++) outl[(*nout)++] = NLETTERS + e;
    for (int l = 0; l < NLETTERS; l++)
      if (count[l] == 1) outl[(*nout)++] = l;
    return true;
  }
  term t;
  int s = (int)(arrow - eq) + 2;
  if (!parse_term(eq, s, (int)strlen(eq), &t)) return false;
  bool seen[NLABELS] = {false};
  for (int k = 0; k < t.n; k++) {
    if (t.labels[k] < 0) {
      for (int e = 0; e < ell_dims; e++) outl[(*nout)++] = NLETTERS + e;
      continue;
    }
    int l = t.labels[k];
    char c = l < 26 ? (char)('A' + l) : (char)('a' + l - 26);
    if (!count[l] || seen[l]) {
      ct__fail(CT_ERR_ARG, "einsum: output label '%c' after position %d of \"%s\" %s", c, s, eq,
               seen[l] ? "appears twice" : "is in no input term");
      return false;
    }
    seen[l] = true;
    outl[(*nout)++] = l;
  }
  if (*nout > CT_MAX_DIMS) {
    ct__fail(CT_ERR_SHAPE, "einsum: the output of \"%s\" would have %d dims (max %d)", eq, *nout,
             CT_MAX_DIMS);
    return false;
  }
  return true;
}

/* Splits the inputs at the commas and binds them; *ell_dims is the widest
 * ellipsis. */
static bool parse_inputs(const char *eq, const char *arrow, ct_tensor *const *operands, int n,
                         operand *ops, int *ell_dims) {
  int end = arrow ? (int)(arrow - eq) : (int)strlen(eq);
  term terms[64];
  int nt = 0, s = 0;
  for (int i = 0; i <= end; i++) {
    if (i < end && eq[i] != ',') continue;
    if (nt == n) {
      ct__fail(CT_ERR_ARG, "einsum: \"%s\" has more terms than the %d operands given (position %d)",
               eq, n, s);
      return false;
    }
    if (!parse_term(eq, s, i, &terms[nt++])) return false;
    s = i + 1;
  }
  if (nt != n) {
    ct__fail(CT_ERR_ARG, "einsum: \"%s\" has %d input terms for %d operands", eq, nt, n);
    return false;
  }
  *ell_dims = 0;
  for (int i = 0; i < n; i++) {
    int named = terms[i].n - (terms[i].ellipsis ? 1 : 0);
    if (terms[i].ellipsis && operands[i]->ndim - named > *ell_dims)
      *ell_dims = operands[i]->ndim - named;
  }
  for (int i = 0; i < n; i++)
    if (!bind(eq, &terms[i], operands[i], *ell_dims, &ops[i])) return false;
  return true;
}

static ct_tensor *einsum_in_scope(const char *eq, ct_tensor *const *operands, int n) {
  const char *arrow = strstr(eq, "->");
  if (arrow && strstr(arrow + 2, "->")) {
    ct__fail(CT_ERR_ARG, "einsum: a second '->' at position %d in \"%s\"",
             (int)(strstr(arrow + 2, "->") - eq), eq);
    return NULL;
  }
  for (const char *c = eq; *c; c++)
    if ((*c == '-' && c[1] != '>') || (*c == '>' && (c == eq || c[-1] != '-'))) {
      ct__fail(CT_ERR_ARG, "einsum: a stray '%c' at position %d in \"%s\"", *c, (int)(c - eq), eq);
      return NULL;
    }
  operand ops[64];
  int ell_dims, outl[NLABELS], nout;
  if (!parse_inputs(eq, arrow, operands, n, ops, &ell_dims) ||
      !output_labels(eq, arrow, ops, n, ell_dims, outl, &nout))
    return NULL;
  bool need[NLABELS];
  operand acc = {0};
  for (int i = 0; i < n; i++) {
    if (!take_diagonals(eq, &ops[i])) return NULL;
    /* what this operand holds that neither the output nor another operand uses */
    bool keep[NLABELS];
    needed_after(ops, n, i, outl, nout, keep);
    for (int j = 0; j < i; j++)
      for (int d = 0; d < ops[j].n; d++) keep[ops[j].labels[d]] = true;
    if (i > 0)
      for (int d = 0; d < acc.n; d++) keep[acc.labels[d]] = true;
    if (!sum_unneeded(&ops[i], keep)) return NULL;
    if (i == 0) {
      acc = ops[0];
      continue;
    }
    needed_after(ops, n, i, outl, nout, need);
    operand next;
    if (!contract(eq, &acc, &ops[i], need, &next)) return NULL;
    acc = next;
  }
  needed_after(ops, n, n - 1, outl, nout, need);
  if (!sum_unneeded(&acc, need)) return NULL;
  int perm[CT_MAX_DIMS];
  for (int k = 0; k < nout; k++) perm[k] = find(&acc, outl[k]);
  return nout ? ct_permute(acc.t, perm, nout) : ct_alias(acc.t);
}

ct_tensor *ct_einsum(const char *equation, ct_tensor *const *operands, int n) {
  if (!equation || !operands || n < 1 || n > 64)
    return ct__fail(CT_ERR_ARG, "einsum: expected an equation and 1 to 64 operands, got %s and %d",
                    equation ? "an equation" : "NULL", n);
  for (int i = 0; i < n; i++) {
    if (!operands[i]) return NULL;
    if (!ct__check_same_device("einsum", operands[0], operands[i])) return NULL;
  }
  ct_scope_begin();
  ct_tensor *r = einsum_in_scope(equation, operands, n);
  r = ct_keep(r);
  ct_scope_end();
  return r;
}
