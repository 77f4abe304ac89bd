/* Template of the CPU row-normalization kernels (norm.c: group norm,
 * instance norm, RMS norm; backend/params.h, ct_row_norm_params), included
 * once per native floating type with CT_T (float, double) and CT_S (f32,
 * f64): rn_fwd_<S> and rn_bwd_x_<S> (rows [r0, r1) of an rn_ctx),
 * rn_bwd_w_<S> (affine parameters [c0, c1)). Sums accumulate in double. */

/* The affine parameter of row r, channel d. */
static inline int64_t CT_CAT(rn_param_, CT_S)(const rn_ctx *c, int64_t r, int64_t d) {
  return (r % c->p.groups) * c->p.channels + d;
}

static void CT_CAT(rn_fwd_, CT_S)(int64_t r0, int64_t r1, void *vctx) {
  const rn_ctx *c = vctx;
  const CT_T *w = (const CT_T *)c->w, *b = (const CT_T *)c->b;
  int64_t D = c->p.channels, S = c->p.inner, cols = D * S;
  for (int64_t r = r0; r < r1; r++) {
    const CT_T *x = (const CT_T *)c->x + r * cols;
    CT_T *o = (CT_T *)c->out + r * cols;
    double mean = 0, ss = 0;
    if (!c->p.rms) {
      double s = 0;
      for (int64_t i = 0; i < cols; i++) s += x[i];
      mean = s / (double)cols;
    }
    for (int64_t i = 0; i < cols; i++) ss += ((double)x[i] - mean) * ((double)x[i] - mean);
    double rstd = 1.0 / sqrt(ss / (double)cols + c->p.eps);
    if (c->mean) st_(c->mean, c->f32, r, mean);
    if (c->rstd) st_(c->rstd, c->f32, r, rstd);
    CT_T m = (CT_T)mean, k = (CT_T)rstd;
    for (int64_t d = 0; d < D; d++) {
      int64_t j = CT_CAT(rn_param_, CT_S)(c, r, d);
      CT_T wj = w ? w[j] : (CT_T)1, bj = b ? b[j] : (CT_T)0;
      for (int64_t s = d * S; s < (d + 1) * S; s++) {
        CT_T v = (x[s] - m) * k;
        if (w) v *= wj;
        if (b) v += bj;
        o[s] = v;
      }
    }
  }
}

/* gx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)), wg = grad_out * weight
 * and xhat = (x - mean) * rstd; rms: mean 0 and no mean(wg) term. */
static void CT_CAT(rn_bwd_x_, CT_S)(int64_t r0, int64_t r1, void *vctx) {
  const rn_ctx *c = vctx;
  const CT_T *w = (const CT_T *)c->w;
  int64_t D = c->p.channels, S = c->p.inner, cols = D * S;
  for (int64_t r = r0; r < r1; r++) {
    const CT_T *x = (const CT_T *)c->x + r * cols, *g = (const CT_T *)c->g + r * cols;
    CT_T *gx = (CT_T *)c->gx + r * cols;
    CT_T m = c->p.rms ? (CT_T)0 : (CT_T)ld(c->cmean, c->f32, r), k = (CT_T)ld(c->crstd, c->f32, r);
    double a = 0, bb = 0;
    for (int64_t d = 0; d < D; d++) {
      CT_T wj = w ? w[CT_CAT(rn_param_, CT_S)(c, r, d)] : (CT_T)1;
      for (int64_t s = d * S; s < (d + 1) * S; s++) {
        CT_T wg = g[s] * wj;
        a += wg;
        bb += wg * (x[s] - m) * k;
      }
    }
    CT_T am = c->p.rms ? (CT_T)0 : (CT_T)(a / (double)cols), bm = (CT_T)(bb / (double)cols);
    for (int64_t d = 0; d < D; d++) {
      CT_T wj = w ? w[CT_CAT(rn_param_, CT_S)(c, r, d)] : (CT_T)1;
      for (int64_t s = d * S; s < (d + 1) * S; s++)
        gx[s] = k * (g[s] * wj - am - (x[s] - m) * k * bm);
    }
  }
}

/* grad_w[j] = sum of grad_out * xhat, grad_b[j] = sum of grad_out over the
 * rows and elements that parameter j scales. */
static void CT_CAT(rn_bwd_w_, CT_S)(int64_t c0, int64_t c1, void *vctx) {
  const rn_ctx *c = vctx;
  int64_t G = c->p.groups, D = c->p.channels, S = c->p.inner, cols = D * S;
  for (int64_t j = c0; j < c1; j++) {
    int64_t grp = j / D, d = j % D;
    double sw = 0, sb = 0;
    for (int64_t r = grp; r < c->p.rows; r += G) {
      const CT_T *x = (const CT_T *)c->x + r * cols + d * S,
                 *g = (const CT_T *)c->g + r * cols + d * S;
      CT_T m = c->p.rms ? (CT_T)0 : (CT_T)ld(c->cmean, c->f32, r),
           k = (CT_T)ld(c->crstd, c->f32, r);
      for (int64_t s = 0; s < S; s++) {
        sw += (double)(g[s] * (x[s] - m) * k);
        sb += (double)g[s];
      }
    }
    if (c->gw) ((CT_T *)c->gw)[j] = (CT_T)sw;
    if (c->gb) ((CT_T *)c->gb)[j] = (CT_T)sb;
  }
}
