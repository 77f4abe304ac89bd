/* Template of where's row kernel (binary.c), included once per element size
 * with CT_T an unsigned type of that size: out = cond ? a : b over one row of
 * (out, cond, a, b), the elements moved as bits. */
static void CT_CAT(where_, CT_T)(char **d, const int64_t *s, int64_t n, void *ctx) {
  (void)ctx;
  const int64_t es = (int64_t)sizeof(CT_T);
  if (s[0] == es && s[1] == 1 && s[2] == es && s[3] == es) {
    CT_T *o = (CT_T *)d[0];
    const uint8_t *c = (const uint8_t *)d[1];
    const CT_T *pa = (const CT_T *)d[2], *pb = (const CT_T *)d[3];
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = c[i] ? pa[i] : pb[i];
    return;
  }
  for (int64_t i = 0; i < n; i++)
    *(CT_T *)(d[0] + i * s[0]) = *(const uint8_t *)(d[1] + i * s[1])
                                     ? *(const CT_T *)(d[2] + i * s[2])
                                     : *(const CT_T *)(d[3] + i * s[3]);
}
