/* PyTorch-like text of a tensor:
 *   tensor([[0., 1., 2.],
 *           [3., 4., 5.]], shape=(2, 3), dtype=f32, device=cpu)
 * Dims longer than 6 are summarized when the tensor has more than 1000
 * elements: the first and last 3 entries with "..." between. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"

#define SUMMARY_THRESHOLD 1000
#define EDGE 3

typedef struct sbuf {
  char *s;
  size_t len, cap;
  bool oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  char tmp[128];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = (b->cap ? 2 * b->cap : 256) + (size_t)n;
    char *g = ct__realloc(b->s, cap);
    if (!g) {
      b->oom = true;
      return;
    }
    b->s = g;
    b->cap = cap;
  }
  memcpy(b->s + b->len, tmp, (size_t)n + 1);
  b->len += (size_t)n;
}

typedef struct printer {
  const ct_tensor *t; /* CPU, any layout */
  const char *base;
  bool summarize;
  int mode; /* 0 int, 1 bool, 2 float-integral, 3 fixed, 4 sci */
  int width;
  sbuf *out;
} printer;

/* An element: its value as a double (floats; the statistics of the modes)
 * and, for integer dtypes, exactly (an i64 above 2^53 is not a double). */
typedef struct element {
  double v;
  int64_t i;
} element;

static element value_at(const printer *p, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < p->t->ndim; d++) off += idx[d] * p->t->strides[d];
  const char *e = p->base + off * (int64_t)ct__elsize(p->t->dtype);
  element r = {0, 0};
  if (p->mode <= 1) r.i = ct__load_as_i64(e, p->t->dtype);
  else r.v = ct__load_as_double(e, p->t->dtype);
  return r;
}

static int format_value(const printer *p, element x, char *buf, size_t n) {
  double v = x.v;
  if (p->mode == 1) return snprintf(buf, n, "%s", x.i != 0 ? "True" : "False");
  if (p->mode == 0) return snprintf(buf, n, "%lld", (long long)x.i);
  if (isnan(v)) return snprintf(buf, n, "nan");
  if (isinf(v)) return snprintf(buf, n, v > 0 ? "inf" : "-inf");
  if (p->mode == 2) return snprintf(buf, n, "%.0f.", v);
  if (p->mode == 3) return snprintf(buf, n, "%.4f", v);
  return snprintf(buf, n, "%.4e", v);
}

/* Visits the elements that will be printed (for widths and modes). */
static void visit(const printer *p, int d, int64_t *idx, void (*fn)(const printer *, element, void *),
                  void *ctx) {
  if (d == p->t->ndim) {
    fn(p, value_at(p, idx), ctx);
    return;
  }
  int64_t n = p->t->shape[d];
  for (int64_t i = 0; i < n; i++) {
    if (p->summarize && n > 2 * EDGE && i == EDGE) i = n - EDGE;
    idx[d] = i;
    visit(p, d + 1, idx, fn, ctx);
  }
}

typedef struct stats {
  bool all_integral;
  double max_abs, min_abs;
  bool any;
} stats;

static void collect(const printer *p, element x, void *ctx) {
  (void)p;
  double v = x.v;
  stats *s = ctx;
  if (!isfinite(v)) return;
  if (v != floor(v)) s->all_integral = false;
  double a = fabs(v);
  if (a > s->max_abs) s->max_abs = a;
  if (a > 0 && (!s->any || a < s->min_abs)) s->min_abs = a, s->any = true;
}

static void measure(const printer *p, element x, void *ctx) {
  char buf[64];
  int w = format_value(p, x, buf, sizeof buf);
  if (w > *(int *)ctx) *(int *)ctx = w;
}

static void emit(printer *p, int d, int64_t *idx, int indent) {
  if (p->t->ndim == 0) {
    char buf[64];
    format_value(p, value_at(p, idx), buf, sizeof buf);
    put(p->out, "%s", buf);
    return;
  }
  int64_t n = p->t->shape[d];
  put(p->out, "[");
  for (int64_t i = 0; i < n; i++) {
    if (p->summarize && n > 2 * EDGE && i == EDGE) {
      if (d == p->t->ndim - 1) put(p->out, "...");
      else put(p->out, "...");
      put(p->out, d == p->t->ndim - 1 ? ", " : ",\n%*s", d == p->t->ndim - 1 ? 0 : indent + d + 1, "");
      i = n - EDGE;
    }
    idx[d] = i;
    if (d == p->t->ndim - 1) {
      char buf[64];
      format_value(p, value_at(p, idx), buf, sizeof buf);
      put(p->out, "%*s", p->width, buf);
    } else {
      emit(p, d + 1, idx, indent);
    }
    if (i < n - 1) {
      if (d == p->t->ndim - 1) put(p->out, ", ");
      else {
        put(p->out, ",");
        for (int k = 0; k < p->t->ndim - 1 - d; k++) put(p->out, "\n");
        put(p->out, "%*s", indent + d + 1, "");
      }
    }
  }
  put(p->out, "]");
}

char *ct_to_string(const ct_tensor *t) {
  if (!t) return NULL;
  ct_tensor *cpu = ct_to(t, ct_cpu(), NULL); /* synchronizes a GPU tensor */
  if (!cpu) return NULL;
  sbuf out = {0};
  printer p = {.t = cpu, .base = ct__data(cpu), .out = &out};
  p.summarize = cpu->numel > SUMMARY_THRESHOLD;
  int64_t idx[CT_MAX_DIMS] = {0};
  if (t->dtype == CT_BOOL) {
    p.mode = 1;
  } else if (!ct_dtype_is_floating(t->dtype)) {
    p.mode = 0;
  } else {
    p.mode = 3; /* value_at reads doubles for the statistics */
    stats s = {.all_integral = true};
    if (cpu->numel) visit(&p, 0, idx, collect, &s);
    if (s.all_integral && s.max_abs < 1e8) p.mode = 2;
    else if (s.max_abs < 1e8 && (!s.any || s.min_abs >= 1e-4)) p.mode = 3;
    else p.mode = 4;
  }
  if (cpu->numel) visit(&p, 0, idx, measure, &p.width);
  put(&out, "tensor(");
  if (cpu->numel == 0) {
    put(&out, "[]");
  } else {
    memset(idx, 0, sizeof idx);
    emit(&p, 0, idx, (int)strlen("tensor("));
  }
  char shape[CT_SHAPE_STR_MAX];
  put(&out, ", shape=%s, dtype=%s, device=%s)", ct__shape_str(t, shape, sizeof shape),
      ct_dtype_name(t->dtype), ct_device_name(ct__device(t)));
  ct_free(cpu);
  if (out.oom) {
    free(out.s);
    return ct__fail(CT_ERR_OOM, "to_string: out of host memory");
  }
  return out.s;
}

ct_status ct_fprint(FILE *f, const ct_tensor *t) {
  if (!t) return ct_last_error() ? ct_last_error() : ct__fail_status(CT_ERR_ARG, "print: tensor is NULL");
  if (!f) return ct__fail_status(CT_ERR_ARG, "print: the FILE is NULL");
  char *s = ct_to_string(t);
  if (!s) return ct_last_error();
  bool ok = fprintf(f, "%s\n", s) >= 0;
  free(s);
  return ok ? CT_OK : ct__fail_status(CT_ERR_IO, "print: writing the text failed");
}

ct_status ct_print(const ct_tensor *t) { return ct_fprint(stdout, t); }
