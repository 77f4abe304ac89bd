/* Template of the CPU radix argsort (sort.c), included once per key type
 * with CT_KEY (uint32_t for f32 rows, uint64_t for f64 and i64 rows) and
 * CT_S (u32, u64) defined. */
#define CT_NAME_(a, b) a##_##b
#define CT_NAME(a, b) CT_NAME_(a, b)

/* The keys of row r of x (f32 with 32-bit keys; f64 or i64 with 64-bit). */
static void CT_NAME(row_keys, CT_S)(const sort_ctx *c, int64_t r, int64_t i0, int64_t i1,
                                    CT_KEY *k) {
  const char *base = (const char *)ct__data(c->x) + (size_t)(r * c->n) * ct__elsize(c->x->dtype);
  for (int64_t i = i0; i < i1; i++) {
    if (sizeof(CT_KEY) == 4)
      k[i] = (CT_KEY)ct_sort_key_f32(((const float *)base)[i], c->descending);
    else if (c->x->dtype == CT_F64)
      k[i] = (CT_KEY)ct_sort_key_f64(((const double *)base)[i], c->descending);
    else
      k[i] = (CT_KEY)ct_sort_key_i64(((const int64_t *)base)[i], c->descending);
  }
}

/* One row, alone: insertion sort for short rows, else radix passes between
 * (k, id) and the scratch (k2, id2); the result lands in out. */
static void CT_NAME(sort_row, CT_S)(const sort_ctx *c, int64_t r, CT_KEY *k, int64_t *id,
                                    CT_KEY *k2, int64_t *id2) {
  int64_t n = c->n, *out = c->idx + r * n;
  CT_NAME(row_keys, CT_S)(c, r, 0, n, k);
  if (n <= SORT_SMALL) {
    for (int64_t i = 0; i < n; i++) {
      CT_KEY v = k[i];
      int64_t j = i;
      for (; j > 0 && k[j - 1] > v; j--) k[j] = k[j - 1], out[j] = out[j - 1];
      k[j] = v;
      out[j] = i;
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) id[i] = i;
  for (int shift = 0; shift < (int)(8 * sizeof(CT_KEY)); shift += 8) {
    int64_t cnt[256] = {0};
    for (int64_t i = 0; i < n; i++) cnt[(k[i] >> shift) & 255]++;
    if (cnt[(k[0] >> shift) & 255] == n) continue; /* one digit: nothing moves */
    int64_t pos = 0;
    for (int d = 0; d < 256; d++) {
      int64_t t = cnt[d];
      cnt[d] = pos;
      pos += t;
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t p = cnt[(k[i] >> shift) & 255]++;
      k2[p] = k[i];
      id2[p] = id[i];
    }
    CT_KEY *tk = k;
    k = k2, k2 = tk;
    int64_t *ti = id;
    id = id2, id2 = ti;
  }
  memcpy(out, id, (size_t)n * sizeof *out);
}

static void CT_NAME(sort_rows, CT_S)(int64_t r0, int64_t r1, void *vc) {
  const sort_ctx *c = vc;
  size_t n = (size_t)c->n;
  char *buf = ct__malloc(n * 2 * (sizeof(CT_KEY) + sizeof(int64_t)));
  if (!buf) { /* reported by the caller, which checks every row's task ran */
    for (int64_t r = r0; r < r1; r++) c->idx[r * c->n] = -1;
    return;
  }
  CT_KEY *k = (CT_KEY *)buf, *k2 = k + n;
  int64_t *id = (int64_t *)(k2 + n), *id2 = id + n;
  for (int64_t r = r0; r < r1; r++) CT_NAME(sort_row, CT_S)(c, r, k, id, k2, id2);
  ct__free(buf);
}

/* ---- long rows: parallel passes over SORT_PARTS parts ---- */

static void CT_NAME(part_range, CT_S)(const sort_ctx *c, int64_t p, int64_t *i0, int64_t *i1) {
  int64_t per = (c->n + SORT_PARTS - 1) / SORT_PARTS;
  *i0 = p * per < c->n ? p * per : c->n;
  *i1 = *i0 + per < c->n ? *i0 + per : c->n;
}
static void CT_NAME(part_count, CT_S)(int64_t p0, int64_t p1, void *vc) {
  sort_ctx *c = vc;
  const CT_KEY *k = c->keys[c->src];
  for (int64_t p = p0; p < p1; p++) {
    int64_t i0, i1, *cnt = c->counts[p];
    CT_NAME(part_range, CT_S)(c, p, &i0, &i1);
    memset(cnt, 0, 256 * sizeof *cnt);
    for (int64_t i = i0; i < i1; i++) cnt[(k[i] >> c->shift) & 255]++;
  }
}
static void CT_NAME(part_scatter, CT_S)(int64_t p0, int64_t p1, void *vc) {
  sort_ctx *c = vc;
  const CT_KEY *k = c->keys[c->src];
  const int64_t *id = c->ids[c->src];
  CT_KEY *k2 = c->keys[1 - c->src];
  int64_t *id2 = c->ids[1 - c->src];
  for (int64_t p = p0; p < p1; p++) {
    int64_t i0, i1, *pos = c->counts[p];
    CT_NAME(part_range, CT_S)(c, p, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
      int64_t q = pos[(k[i] >> c->shift) & 255]++;
      k2[q] = k[i];
      id2[q] = id[i];
    }
  }
}
static void CT_NAME(part_keys, CT_S)(int64_t p0, int64_t p1, void *vc) {
  sort_ctx *c = vc;
  for (int64_t p = p0; p < p1; p++) {
    int64_t i0, i1;
    CT_NAME(part_range, CT_S)(c, p, &i0, &i1);
    CT_NAME(row_keys, CT_S)(c, c->src, i0, i1, c->keys[0]); /* src holds the row here */
    for (int64_t i = i0; i < i1; i++) c->ids[0][i] = i;
  }
}

static ct_status CT_NAME(sort_long_rows, CT_S)(sort_ctx *c, int64_t rows) {
  size_t n = (size_t)c->n;
  char *buf =
      ct__malloc(n * 2 * (sizeof(CT_KEY) + sizeof(int64_t)) + SORT_PARTS * 256 * sizeof(int64_t));
  if (!buf) {
    ct__fail(CT_ERR_OOM, "sort: out of memory for the scratch of a row of %lld elements",
             (long long)c->n);
    return CT_ERR_OOM;
  }
  c->keys[0] = buf;
  c->keys[1] = (CT_KEY *)c->keys[0] + n;
  c->ids[0] = (int64_t *)((CT_KEY *)c->keys[1] + n);
  c->ids[1] = c->ids[0] + n;
  c->counts = (int64_t(*)[256])(c->ids[1] + n);
  for (int64_t r = 0; r < rows; r++) {
    c->src = (int)r; /* part_keys reads row src */
    ct__parallel_for(SORT_PARTS, 1, CT_NAME(part_keys, CT_S), c);
    c->src = 0;
    for (c->shift = 0; c->shift < (int)(8 * sizeof(CT_KEY)); c->shift += 8) {
      ct__parallel_for(SORT_PARTS, 1, CT_NAME(part_count, CT_S), c);
      int64_t pos = 0;
      bool one_digit = false;
      for (int d = 0; d < 256 && !one_digit; d++) {
        int64_t total = 0;
        for (int p = 0; p < SORT_PARTS; p++) total += c->counts[p][d];
        one_digit = total == c->n;
      }
      for (int d = 0; d < 256 && !one_digit; d++)
        for (int p = 0; p < SORT_PARTS; p++) {
          int64_t t = c->counts[p][d];
          c->counts[p][d] = pos;
          pos += t;
        }
      if (one_digit) continue; /* every key has this digit: nothing moves */
      ct__parallel_for(SORT_PARTS, 1, CT_NAME(part_scatter, CT_S), c);
      c->src = 1 - c->src;
    }
    memcpy(c->idx + r * c->n, c->ids[c->src], n * sizeof(int64_t));
  }
  ct__free(buf);
  return CT_OK;
}

static ct_status CT_NAME(argsort_run, CT_S)(sort_ctx *c) {
  int64_t rows = c->x->numel / c->n;
  if (c->n >= SORT_LONG && rows < 4) return CT_NAME(sort_long_rows, CT_S)(c, rows);
  ct__parallel_for(rows, (CT_PARALLEL_GRAIN / 8 + c->n - 1) / c->n, CT_NAME(sort_rows, CT_S), c);
  for (int64_t r = 0; r < rows; r++)
    if (c->idx[r * c->n] < 0) {
      ct__fail(CT_ERR_OOM, "sort: out of memory for the scratch of rows of %lld elements",
               (long long)c->n);
      return CT_ERR_OOM;
    }
  return CT_OK;
}

#undef CT_NAME
#undef CT_NAME_
