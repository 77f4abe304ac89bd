/* The signatures inspect.signature reads from the extension's functions.
 *
 * CPython takes a builtin's signature from the start of its docstring when it has the form
 * "name(x, /, *, axis=None)\n--\n\n" (its __text_signature__). The method tables here write
 * the signature the way a reader wants it, "abs(x): elementwise, a new tensor"; before the
 * functions are created, each such docstring gets the marked-up form in front, and the part
 * after the marker is the docstring unchanged. No "$module" parameter: the functions of
 * add_methods (module.c) are bound to no module object, so inspect would show it. Arguments that
 * the calling convention makes positional-only (METH_O, METH_VARARGS and METH_FASTCALL
 * without METH_KEYWORDS) get their "/" when the docstring does not show it, so that the
 * signature says what the function accepts; a function of no arguments whose docstring has
 * no signature gets "name()". A docstring already marked up is left as it is. */
#include "ctpy.h"

/* Where the ")" matching the "(" at s[0] is, or NULL (quotes and brackets are skipped). */
static const char *matching_paren(const char *s) {
  int depth = 0;
  char quote = 0;
  for (const char *p = s; *p && *p != '\n'; p++) {
    if (quote) {
      if (*p == quote) quote = 0;
    } else if (*p == '\'' || *p == '"') {
      quote = *p;
    } else if (*p == '(' || *p == '[' || *p == '{') {
      depth++;
    } else if (*p == ')' || *p == ']' || *p == '}') {
      if (--depth == 0) return *p == ')' ? p : NULL;
    }
  }
  return NULL;
}

/* Whether the parameter list [b, e) has a top-level "/" parameter; *star: where the first
 * top-level parameter starting with "*" begins (NULL if none). */
static bool has_slash(const char *b, const char *e, const char **star) {
  int depth = 0;
  char quote = 0;
  bool slash = false, at_start = true;
  *star = NULL;
  for (const char *p = b; p < e; p++) {
    if (quote) {
      if (*p == quote) quote = 0;
      continue;
    }
    if (*p == ' ') continue;
    if (at_start && depth == 0) {
      if (*p == '/') slash = true;
      if (*p == '*' && !*star) *star = p;
    }
    at_start = false;
    if (*p == '\'' || *p == '"')
      quote = *p;
    else if (*p == '(' || *p == '[' || *p == '{')
      depth++;
    else if (*p == ')' || *p == ']' || *p == '}')
      depth--;
    else if (*p == ',' && depth == 0)
      at_start = true;
  }
  return slash;
}

/* The marked-up docstring for one entry (malloc'd), or NULL to leave it. */
static char *marked_up(const PyMethodDef *d) {
  const char *doc = d->ml_doc, *name = d->ml_name;
  size_t nlen = strlen(name);
  int flags = d->ml_flags & ~(METH_CLASS | METH_STATIC | METH_COEXIST);
  bool positional = !(flags & METH_KEYWORDS) && !(flags & METH_NOARGS);
  if (!doc || strstr(doc, "\n--\n\n")) return NULL;
  if (strncmp(doc, name, nlen) != 0 || doc[nlen] != '(') {
    if (!(flags & METH_NOARGS)) return NULL; /* no signature to show */
    size_t n = nlen + strlen("()\n--\n\n") + strlen(doc) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s()\n--\n\n%s", name, doc);
    return out;
  }
  const char *open = doc + nlen, *close = matching_paren(open);
  if (!close) return NULL;
  const char *b = open + 1, *star;
  bool empty = b == close, slash = has_slash(b, close, &star);
  /* "/" goes before the first "*" parameter, or at the end */
  const char *cut = positional && !slash && !empty ? (star ? star : close) : NULL;
  size_t n = strlen(doc) * 2 + nlen + 32;
  char *out = malloc(n);
  if (!out) return NULL;
  int k;
  if (empty) {
    k = snprintf(out, n, "%s()", name);
  } else if (!cut) {
    k = snprintf(out, n, "%s(%.*s)", name, (int)(close - b), b);
  } else if (cut == close) {
    k = snprintf(out, n, "%s(%.*s, /)", name, (int)(close - b), b);
  } else {
    k = snprintf(out, n, "%s(%.*s/, %.*s)", name, (int)(cut - b), b, (int)(close - cut), cut);
  }
  snprintf(out + k, n - (size_t)k, "\n--\n\n%s", doc);
  return out;
}

int ctpy_text_signatures(PyMethodDef *defs) {
  for (PyMethodDef *d = defs; d->ml_name; d++) {
    char *doc = marked_up(d);
    if (doc) d->ml_doc = doc; /* kept for the life of the process, as the table is */
  }
  return 0;
}
