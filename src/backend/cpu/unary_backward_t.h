/* Template of the CPU unary-gradient row loop (unary_backward.c), included
 * with CT_T (float, double) and CT_S (f32, f64): gx = f(g, v, p0, p1) over one
 * row of the operands (grad_x, grad_out, v); always inlined into one kernel per
 * (op, type), where f is a constant, so the contiguous loop vectorizes. */
static CT_ALWAYS_INLINE void CT_FN(ubw_row)(char **d, const int64_t *s, int64_t n, void *ctx,
                                            CT_T (*f)(CT_T, CT_T, CT_T, CT_T)) {
  const ct_ew_ctx *c = ctx;
  const CT_T p0 = (CT_T)c->p0, p1 = (CT_T)c->p1;
  const int64_t es = (int64_t)sizeof(CT_T);
  if (s[0] == es && s[1] == es && s[2] == es) {
    CT_T *restrict gx = (CT_T *)d[0];
    const CT_T *restrict g = (const CT_T *)d[1], *restrict v = (const CT_T *)d[2];
    for (int64_t i = 0; i < n; i++) gx[i] = f(g[i], v[i], p0, p1);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    *(CT_T *)(d[0] + i * s[0]) =
        f(*(const CT_T *)(d[1] + i * s[1]), *(const CT_T *)(d[2] + i * s[2]), p0, p1);
}
