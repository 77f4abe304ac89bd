/* Template of copy.c's kernels that move elements as bits, included once per
 * element size with CT_T the unsigned type of that size: move_<T> (dst = src,
 * same dtype, strided) and fill_<T> (every element = the value's bits). */
static void CT_CAT(move_, CT_T)(char **d, const int64_t *s, int64_t n, void *ctx) {
  (void)ctx;
  for (int64_t i = 0; i < n; i++) *(CT_T *)(d[0] + i * s[0]) = *(const CT_T *)(d[1] + i * s[1]);
}

static void CT_CAT(fill_, CT_T)(char **d, const int64_t *s, int64_t n, void *ctx) {
  CT_T v;
  memcpy(&v, ctx, sizeof v);
  if (s[0] == sizeof(CT_T)) {
    CT_T *o = (CT_T *)d[0];
    for (int64_t i = 0; i < n; i++) o[i] = v;
    return;
  }
  for (int64_t i = 0; i < n; i++) *(CT_T *)(d[0] + i * s[0]) = v;
}
