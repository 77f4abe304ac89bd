/* The safetensors header: a strict JSON parser for its subset and the checks
 * that make a header safe to act on.
 *
 * Grammar accepted (JSON, RFC 8259, restricted):
 *   header  = ws "{" [ member *( "," member ) ] "}" ws      (ws: space, tab, CR, LF)
 *   member  = string ":" ( tensor | metadata )             (no duplicate keys)
 *   tensor  = "{" "dtype": string, "shape": [int...], "data_offsets": [int, int] "}"
 *             (these three keys, any order, each exactly once)
 *   metadata (key "__metadata__") = "{" string ":" string ... "}"
 *   int     = non-negative integer without sign, fraction, exponent or leading zero
 * Strings take every JSON escape (\uXXXX with surrogate pairs, decoded to
 * UTF-8); a NUL character (\u0000), a raw control character or bytes that
 * are not UTF-8 are rejected. Tensor names follow the writer's rule
 * (ct__st_name_problem: non-empty). Names appear in messages escaped
 * (ct_escape_name). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/io_internal.h"
#include "io/safetensors.h"

typedef struct parser {
  const char *s;
  size_t len, pos;
  const char *what;
  bool failed;
} parser;

static void fail(parser *p, const char *fmt, ...) CT_PRINTF(2, 3);
static void fail(parser *p, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = true;
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ct__fail(CT_ERR_FORMAT, "load_safetensors: %s: header: %s", p->what, msg);
}

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

/* Consumes c (after whitespace) or fails naming `context`. */
static bool expect(parser *p, char c, const char *context) {
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    p->pos++;
    return true;
  }
  if (p->pos >= p->len)
    fail(p, "unexpected end while expecting '%c' %s", c, context);
  else
    fail(p, "expected '%c' %s at byte %zu, found '%c'", c, context, p->pos, p->s[p->pos]);
  return false;
}

/* Consumes c if it is next (after whitespace). */
static bool accept(parser *p, char c) {
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    p->pos++;
    return true;
  }
  return false;
}

static int hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static size_t put_utf8(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A JSON string, decoded into a malloc'd NUL-terminated buffer (NULL on failure). */
static char *parse_string(parser *p, const char *context) {
  if (!expect(p, '"', context)) return NULL;
  size_t start = p->pos, end = start;
  /* Find the closing quote first: the decoded text is never longer. */
  while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
  if (end >= p->len) {
    fail(p, "unterminated string starting at byte %zu", start - 1);
    return NULL;
  }
  char *out = ct__malloc(end - start + 1);
  if (!out) {
    p->failed = true;
    ct__fail(CT_ERR_OOM, "load_safetensors: %s: out of host memory parsing the header", p->what);
    return NULL;
  }
  size_t o = 0, i = start;
  while (i < end) {
    unsigned char c = (unsigned char)p->s[i];
    if (c < 0x20) {
      fail(p, "control character 0x%02x in a string at byte %zu", c, i);
      goto bad;
    }
    if (c != '\\') {
      out[o++] = (char)c;
      i++;
      continue;
    }
    char e = p->s[i + 1]; /* exists: end was found by skipping escapes in pairs */
    i += 2;
    switch (e) {
      case '"':
        out[o++] = '"';
        break;
      case '\\':
        out[o++] = '\\';
        break;
      case '/':
        out[o++] = '/';
        break;
      case 'b':
        out[o++] = '\b';
        break;
      case 'f':
        out[o++] = '\f';
        break;
      case 'n':
        out[o++] = '\n';
        break;
      case 'r':
        out[o++] = '\r';
        break;
      case 't':
        out[o++] = '\t';
        break;
      case 'u': {
        int u = i + 4 <= end ? hex4(p->s + i) : -1;
        if (u < 0) {
          fail(p, "bad \\u escape at byte %zu", i - 2);
          goto bad;
        }
        i += 4;
        uint32_t cp = (uint32_t)u;
        if (cp >= 0xD800 && cp < 0xDC00) { /* a high surrogate needs its low half */
          int lo = i + 6 <= end && p->s[i] == '\\' && p->s[i + 1] == 'u' ? hex4(p->s + i + 2) : -1;
          if (lo < 0xDC00 || lo >= 0xE000) {
            fail(p, "unpaired surrogate in a \\u escape at byte %zu", i - 6);
            goto bad;
          }
          i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          fail(p, "unpaired surrogate in a \\u escape at byte %zu", i - 6);
          goto bad;
        }
        if (cp == 0) {
          fail(p, "NUL character (\\u0000) in a string at byte %zu", i - 6);
          goto bad;
        }
        o += put_utf8(out + o, cp); /* never longer than the 6+ bytes it came from */
        break;
      }
      default:
        fail(p, "bad escape '\\%c' at byte %zu", e, i - 2);
        goto bad;
    }
  }
  out[o] = '\0';
  /* JSON text is UTF-8 (RFC 8259, 8.1): raw bytes that are not, in any
   * string, make the header invalid, as for safetensors' own parser. */
  if (!ct__utf8_valid(out, o)) {
    fail(p, "a string starting at byte %zu is not valid UTF-8", start - 1);
    goto bad;
  }
  p->pos = end + 1;
  return out;
bad:
  free(out);
  return NULL;
}

/* A non-negative integer <= INT64_MAX. */
static bool parse_uint(parser *p, const char *context, uint64_t *v) {
  skip_ws(p);
  size_t start = p->pos;
  if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') {
    fail(p, "expected a non-negative integer %s at byte %zu", context, start);
    return false;
  }
  uint64_t x = 0;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    unsigned d = (unsigned)(p->s[p->pos] - '0');
    if (x > ((uint64_t)INT64_MAX - d) / 10) {
      fail(p, "integer %s too large at byte %zu", context, start);
      return false;
    }
    x = x * 10 + d;
    p->pos++;
  }
  if (p->pos - start > 1 && p->s[start] == '0') {
    fail(p, "integer %s with a leading zero at byte %zu", context, start);
    return false;
  }
  if (p->pos < p->len && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    fail(p, "integer %s has a fraction or exponent at byte %zu", context, start);
    return false;
  }
  *v = x;
  return true;
}

static const struct {
  const char *name;
  ct_dtype dtype;
} st_dtypes[] = {{"F64", CT_F64}, {"F32", CT_F32},  {"F16", CT_F16}, {"BF16", CT_BF16},
                 {"I64", CT_I64}, {"I32", CT_I32},  {"I16", CT_I16}, {"I8", CT_I8},
                 {"U8", CT_U8},   {"BOOL", CT_BOOL}};
_Static_assert(sizeof st_dtypes / sizeof st_dtypes[0] == CT_DTYPE_COUNT,
               "every ctensor dtype has a safetensors name");

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]} into e. */
static void parse_tensor(parser *p, ct__st_entry *e) {
  char tn[CT_NAME_MSG], shown[64];
  ct_escape_name(e->name, tn, sizeof tn);
  bool have_dtype = false, have_shape = false, have_offsets = false;
  if (!expect(p, '{', "to open a tensor entry")) return;
  if (accept(p, '}')) {
    fail(p, "tensor '%s': empty entry (needs dtype, shape, data_offsets)", tn);
    return;
  }
  do {
    char *key = parse_string(p, "(a tensor field name)");
    if (!key) return;
    if (!expect(p, ':', "after a field name")) goto done;
    if (!strcmp(key, "dtype")) {
      if (have_dtype) {
        fail(p, "tensor '%s': duplicate field \"dtype\"", tn);
        goto done;
      }
      have_dtype = true;
      char *d = parse_string(p, "(the dtype)");
      if (!d) goto done;
      size_t k = 0, nd = sizeof st_dtypes / sizeof st_dtypes[0];
      while (k < nd && strcmp(st_dtypes[k].name, d)) k++;
      if (k == nd)
        fail(p, "tensor '%s': unknown dtype \"%s\"", tn, ct_escape_name(d, shown, sizeof shown));
      else
        e->dtype = st_dtypes[k].dtype;
      free(d);
    } else if (!strcmp(key, "shape")) {
      if (have_shape) {
        fail(p, "tensor '%s': duplicate field \"shape\"", tn);
        goto done;
      }
      have_shape = true;
      if (!expect(p, '[', "to open the shape")) goto done;
      if (!accept(p, ']')) {
        do {
          uint64_t v;
          if (!parse_uint(p, "in the shape", &v)) goto done;
          if (e->ndim == CT_MAX_DIMS) {
            fail(p, "tensor '%s': shape has more than %d dims", tn, CT_MAX_DIMS);
            goto done;
          }
          e->shape[e->ndim++] = (int64_t)v;
        } while (accept(p, ','));
        if (!expect(p, ']', "to close the shape")) goto done;
      }
    } else if (!strcmp(key, "data_offsets")) {
      if (have_offsets) {
        fail(p, "tensor '%s': duplicate field \"data_offsets\"", tn);
        goto done;
      }
      have_offsets = true;
      if (!expect(p, '[', "to open data_offsets") || !parse_uint(p, "in data_offsets", &e->begin) ||
          !expect(p, ',', "between the two data_offsets") ||
          !parse_uint(p, "in data_offsets", &e->end) ||
          !expect(p, ']', "after the two data_offsets"))
        goto done;
    } else {
      fail(p, "tensor '%s': unknown field \"%s\"", tn, ct_escape_name(key, shown, sizeof shown));
    }
  done:
    free(key);
    if (p->failed) return;
  } while (accept(p, ','));
  if (!expect(p, '}', "to close a tensor entry")) return;
  if (!have_dtype || !have_shape || !have_offsets)
    fail(p, "tensor '%s': missing field \"%s\"", tn,
         !have_dtype   ? "dtype"
         : !have_shape ? "shape"
                       : "data_offsets");
}

static void parse_metadata(parser *p) {
  if (!expect(p, '{', "to open __metadata__") || accept(p, '}')) return;
  do {
    char *k = parse_string(p, "(a __metadata__ key)");
    if (!k) return;
    char *v = expect(p, ':', "after a __metadata__ key") ? parse_string(p,
                                                                        "(a __metadata__ value, "
                                                                        "which must be a string)")
                                                         : NULL;
    free(k);
    free(v);
    if (p->failed) return;
  } while (accept(p, ','));
  expect(p, '}', "to close __metadata__");
}

void ct__st_header_free(ct__st_header *h) {
  if (!h) return;
  for (int i = 0; i < h->n; i++) free(h->entries[i].name);
  free(h->entries);
  h->entries = NULL;
  h->n = 0;
}

static int cmp_offsets(const void *a, const void *b) {
  const ct__st_entry *x = *(ct__st_entry *const *)a, *y = *(ct__st_entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}
static int cmp_names(const void *a, const void *b) {
  return strcmp((*(ct__st_entry *const *)a)->name, (*(ct__st_entry *const *)b)->name);
}

/* Bytes of an entry's tensor into *bytes. The product of the dims with each
 * 0 taken as 1, times the dtype size, bounds every stride in bytes: a tensor
 * (0, 2^40, 2^40) holds nothing, yet its strides overflow, so it is refused
 * like one too large to hold. */
static bool entry_bytes(const ct__st_entry *e, uint64_t *bytes) {
  uint64_t span = ct_dtype_size(e->dtype);
  bool empty = false;
  for (int d = 0; d < e->ndim; d++) {
    empty |= e->shape[d] == 0;
    if (__builtin_mul_overflow(span, (uint64_t)(e->shape[d] ? e->shape[d] : 1), &span) ||
        span > (uint64_t)INT64_MAX)
      return false;
  }
  *bytes = empty ? 0 : span;
  return true;
}

/* Sizes and offsets: each tensor's bytes, then the layout of the buffer. */
static ct_status check_layout(ct__st_header *h, uint64_t data_size, const char *what) {
  char tn[CT_NAME_MSG];
  for (int i = 0; i < h->n; i++) {
    ct__st_entry *e = &h->entries[i];
    ct_escape_name(e->name, tn, sizeof tn);
    uint64_t bytes;
    if (!entry_bytes(e, &bytes)) {
      char sh[CT_MAX_DIMS * 22 + 4];
      return ct__fail_status(
          CT_ERR_FORMAT,
          "load_safetensors: %s: tensor '%s': shape %s is too large: its size in "
          "bytes or a stride overflows 64 bits",
          what, tn, ct_shape_format(e->shape, e->ndim, sh, sizeof sh));
    }
    if (e->begin > e->end)
      return ct__fail_status(CT_ERR_FORMAT,
                             "load_safetensors: %s: tensor '%s': data_offsets [%llu, %llu] end "
                             "before they begin",
                             what, tn, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end - e->begin != bytes)
      return ct__fail_status(CT_ERR_FORMAT,
                             "load_safetensors: %s: tensor '%s': data_offsets [%llu, %llu] hold "
                             "%llu bytes but shape x %s size is %llu",
                             what, tn, (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)(e->end - e->begin), ct_dtype_name(e->dtype),
                             (unsigned long long)bytes);
    if (e->end > data_size)
      return ct__fail_status(CT_ERR_FORMAT,
                             "load_safetensors: %s: tensor '%s': data_offsets [%llu, %llu] beyond "
                             "the data buffer of %llu bytes",
                             what, tn, (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)data_size);
  }
  ct__st_entry **order = ct__malloc(sizeof *order * (size_t)(h->n ? h->n : 1));
  if (!order) return ct__fail_status(CT_ERR_OOM, "load_safetensors: %s: out of host memory", what);
  for (int i = 0; i < h->n; i++) order[i] = &h->entries[i];
  ct_status st = CT_OK;
  qsort(order, (size_t)h->n, sizeof *order, cmp_names);
  for (int i = 1; i < h->n && st == CT_OK; i++)
    if (!strcmp(order[i - 1]->name, order[i]->name))
      st = ct__fail_status(CT_ERR_FORMAT, "load_safetensors: %s: header: duplicate tensor '%s'",
                           what, ct_escape_name(order[i]->name, tn, sizeof tn));
  qsort(order, (size_t)h->n, sizeof *order, cmp_offsets);
  uint64_t at = 0;
  for (int i = 0; i < h->n && st == CT_OK; i++) {
    const ct__st_entry *e = order[i];
    if (e->begin != at)
      st = ct__fail_status(CT_ERR_FORMAT,
                           "load_safetensors: %s: tensor '%s': data_offsets [%llu, %llu] %s "
                           "(expected to begin at %llu)",
                           what, ct_escape_name(e->name, tn, sizeof tn),
                           (unsigned long long)e->begin, (unsigned long long)e->end,
                           e->begin < at ? "overlap another tensor" : "leave a gap",
                           (unsigned long long)at);
    at = e->end;
  }
  if (st == CT_OK && at != data_size)
    st = ct__fail_status(CT_ERR_FORMAT,
                         "load_safetensors: %s: the tensors cover %llu bytes of a data buffer of "
                         "%llu bytes",
                         what, (unsigned long long)at, (unsigned long long)data_size);
  free(order);
  return st;
}

ct_status ct__st_parse_header(const char *json, size_t len, uint64_t data_size, const char *what,
                              ct__st_header *out) {
  if (!out || (!json && len) || !what)
    return ct__fail_status(CT_ERR_ARG, "load_safetensors: header parser: out, json and what must not be NULL");
  *out = (ct__st_header){0};
  parser p = {.s = json, .len = len, .what = what};
  int cap = 0;
  bool have_meta = false;
  if (!expect(&p, '{', "to open the header")) return ct_last_error();
  if (!accept(&p, '}')) {
    do {
      char *key = parse_string(&p, "(a tensor name)");
      if (!key) break;
      if (!expect(&p, ':', "after a tensor name")) {
        free(key);
        break;
      }
      if (!strcmp(key, "__metadata__")) {
        free(key);
        if (have_meta) fail(&p, "duplicate \"__metadata__\"");
        have_meta = true;
        parse_metadata(&p);
        continue;
      }
      if (out->n == cap) {
        int ncap = cap ? 2 * cap : 16;
        ct__st_entry *grown = ct__realloc(out->entries, sizeof *grown * (size_t)ncap);
        if (!grown) {
          free(key);
          p.failed = true;
          ct__fail(CT_ERR_OOM, "load_safetensors: %s: out of host memory parsing the header", what);
          break;
        }
        out->entries = grown;
        cap = ncap;
      }
      ct__st_entry *e = &out->entries[out->n++];
      *e = (ct__st_entry){.name = key};
      /* The writer's rule for names (ct_save_safetensors refuses the others). */
      const char *problem = ct__st_name_problem(key, strlen(key));
      if (problem) {
        char tn[CT_NAME_MSG];
        fail(&p, "tensor name '%s' %s", ct_escape_name(key, tn, sizeof tn), problem);
        break;
      }
      parse_tensor(&p, e);
    } while (!p.failed && accept(&p, ','));
    if (!p.failed) expect(&p, '}', "to close the header");
  }
  skip_ws(&p);
  if (!p.failed && p.pos != len)
    fail(&p, "unexpected '%c' after the header object at byte %zu", p.s[p.pos], p.pos);
  ct_status st = p.failed ? ct_last_error() : check_layout(out, data_size, what);
  if (st != CT_OK) ct__st_header_free(out);
  return st;
}
