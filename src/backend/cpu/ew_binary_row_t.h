/* Template of the binary row loop (ew_rows_t.h): out (CT_EW_OUT) = f(a, b)
 * over one row, a and b of CT_T, named CT_FN(CT_EW_NAME). */
static CT_ALWAYS_INLINE void CT_FN(CT_EW_NAME)(char **d, const int64_t *s, int64_t n,
                                               CT_EW_OUT (*f)(CT_T, CT_T)) {
  const int64_t eo = (int64_t)sizeof(CT_EW_OUT), ei = (int64_t)sizeof(CT_T);
  CT_EW_OUT *o = (CT_EW_OUT *)d[0];
  const CT_T *pa = (const CT_T *)d[1], *pb = (const CT_T *)d[2];
  if (s[0] == eo && s[1] == ei && s[2] == ei) {
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = f(pa[i], pb[i]);
  } else if (s[0] == eo && s[1] == ei && s[2] == 0) {
    const CT_T y = *pb;
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = f(pa[i], y);
  } else if (s[0] == eo && s[1] == 0 && s[2] == ei) {
    const CT_T x = *pa;
    CT_SIMD for (int64_t i = 0; i < n; i++) o[i] = f(x, pb[i]);
  } else {
    for (int64_t i = 0; i < n; i++)
      *(CT_EW_OUT *)(d[0] + i * s[0]) =
          f(*(const CT_T *)(d[1] + i * s[1]), *(const CT_T *)(d[2] + i * s[2]));
  }
}
