/* Template of one converting row kernel (copy_convert_t.h): dst CT_TD (suffix
 * CT_SD) = src CT_T (suffix CT_S; floating when CT_UT is not defined) over
 * one row. A C cast, except floats to
 * integers: saturated to int64 first and then wrapped (core/convert.h), as
 * every backend does; casting to bool already means "!= 0". */
static void CT_CAT(convert_, CT_CAT(CT_SD, CT_CAT(_, CT_S)))(char **d, const int64_t *s, int64_t n,
                                                             void *ctx) {
  (void)ctx;
#if !defined(CT_UT) && defined(CT_DST_INT)
  for (int64_t i = 0; i < n; i++)
    *(CT_TD *)(d[0] + i * s[0]) =
        (CT_TD)(uint64_t)ct_f64_to_i64((double)*(const CT_T *)(d[1] + i * s[1]));
#else
  if (s[0] == sizeof(CT_TD) && s[1] == sizeof(CT_T)) {
    CT_TD *o = (CT_TD *)d[0];
    const CT_T *x = (const CT_T *)d[1];
    for (int64_t i = 0; i < n; i++) o[i] = (CT_TD)x[i];
    return;
  }
  for (int64_t i = 0; i < n; i++)
    *(CT_TD *)(d[0] + i * s[0]) = (CT_TD) * (const CT_T *)(d[1] + i * s[1]);
#endif
}
