/* Template of the CPU batch and layer norm kernels (norm.c), included once
 * per native floating type with CT_T (float, double) and CT_S (f32, f64):
 * bn_fwd_<S>, bn_bwd_<S> (channels [c0, c1) of a bn_ctx), ln_fwd_<S>,
 * ln_bwd_x_<S> (rows [r0, r1) of an ln_ctx) and ln_bwd_w_<S> (columns
 * [j0, j1)). Statistics accumulate in double. */

static void CT_CAT(bn_fwd_, CT_S)(int64_t c0, int64_t c1, void *vctx) {
  const bn_ctx *c = vctx;
  int64_t M = c->N * c->S;
  for (int64_t ch = c0; ch < c1; ch++) {
    double mean, invstd;
    if (c->training) {
      double s = 0, ss = 0;
      for (int64_t n = 0; n < c->N; n++) {
        const CT_T *x = (const CT_T *)c->x + (n * c->C + ch) * c->S;
        CT_T ps = 0;
        for (int64_t i = 0; i < c->S; i++) ps += x[i];
        s += (double)ps;
      }
      mean = M > 0 ? s / (double)M : NAN;
      for (int64_t n = 0; n < c->N; n++) {
        const CT_T *x = (const CT_T *)c->x + (n * c->C + ch) * c->S;
        CT_T m = (CT_T)mean, ps = 0;
        for (int64_t i = 0; i < c->S; i++) ps += (x[i] - m) * (x[i] - m);
        ss += (double)ps;
      }
      double var = M > 0 ? ss / (double)M : NAN;
      invstd = 1.0 / sqrt(var + c->eps);
      if (c->rm)
        st_(c->rm, c->f32, ch, (1 - c->momentum) * ld(c->rm, c->f32, ch) + c->momentum * mean);
      if (c->rv) {
        double unb = M > 1 ? ss / (double)(M - 1) : NAN;
        st_(c->rv, c->f32, ch, (1 - c->momentum) * ld(c->rv, c->f32, ch) + c->momentum * unb);
      }
    } else {
      mean = ld(c->rm, c->f32, ch);
      invstd = 1.0 / sqrt(ld(c->rv, c->f32, ch) + c->eps);
    }
    if (c->mean) st_(c->mean, c->f32, ch, mean);
    if (c->invstd) st_(c->invstd, c->f32, ch, invstd);
    double w = c->w ? ld(c->w, c->f32, ch) : 1.0, b = c->b ? ld(c->b, c->f32, ch) : 0.0;
    CT_T scale = (CT_T)(w * invstd), shift = (CT_T)(b - mean * w * invstd);
    for (int64_t n = 0; n < c->N; n++) {
      const CT_T *x = (const CT_T *)c->x + (n * c->C + ch) * c->S;
      CT_T *o = (CT_T *)c->out + (n * c->C + ch) * c->S;
      for (int64_t i = 0; i < c->S; i++) o[i] = x[i] * scale + shift;
    }
  }
}
static void CT_CAT(bn_bwd_, CT_S)(int64_t c0, int64_t c1, void *vctx) {
  const bn_ctx *c = vctx;
  int64_t M = c->N * c->S;
  for (int64_t ch = c0; ch < c1; ch++) {
    double mean = ld(c->cmean, c->f32, ch), invstd = ld(c->cinvstd, c->f32, ch);
    double sg = 0, sgx = 0;
    for (int64_t n = 0; n < c->N; n++) {
      const CT_T *x = (const CT_T *)c->x + (n * c->C + ch) * c->S;
      const CT_T *g = (const CT_T *)c->g + (n * c->C + ch) * c->S;
      CT_T m = (CT_T)mean, a = 0, b = 0;
      for (int64_t i = 0; i < c->S; i++) {
        a += g[i];
        b += g[i] * (x[i] - m);
      }
      sg += (double)a, sgx += (double)b;
    }
    if (c->gw) st_(c->gw, c->f32, ch, sgx * invstd);
    if (c->gb) st_(c->gb, c->f32, ch, sg);
    if (!c->gx) continue;
    double w = c->w ? ld(c->w, c->f32, ch) : 1.0;
    /* training: gx = w*invstd*(g - sg/M - (x-mean)*invstd^2*sgx/M) */
    CT_T k = (CT_T)(w * invstd), m = (CT_T)mean;
    CT_T dm = c->training && M > 0 ? (CT_T)(sg / (double)M) : 0;
    CT_T dv = c->training && M > 0 ? (CT_T)(invstd * invstd * sgx / (double)M) : 0;
    for (int64_t n = 0; n < c->N; n++) {
      const CT_T *x = (const CT_T *)c->x + (n * c->C + ch) * c->S;
      const CT_T *g = (const CT_T *)c->g + (n * c->C + ch) * c->S;
      CT_T *gx = (CT_T *)c->gx + (n * c->C + ch) * c->S;
      for (int64_t i = 0; i < c->S; i++) gx[i] = k * (g[i] - dm - (x[i] - m) * dv);
    }
  }
}

static void CT_CAT(ln_fwd_, CT_S)(int64_t r0, int64_t r1, void *vctx) {
  const ln_ctx *c = vctx;
  const CT_T *w = (const CT_T *)c->w, *b = (const CT_T *)c->b;
  for (int64_t r = r0; r < r1; r++) {
    const CT_T *x = (const CT_T *)c->x + r * c->cols;
    CT_T *o = (CT_T *)c->out + r * c->cols;
    double s = 0, ss = 0;
    for (int64_t i = 0; i < c->cols; i++) s += x[i];
    double mean = s / (double)c->cols;
    for (int64_t i = 0; i < c->cols; i++) ss += ((double)x[i] - mean) * ((double)x[i] - mean);
    double rstd = 1.0 / sqrt(ss / (double)c->cols + c->eps);
    if (c->mean) ((CT_T *)c->mean)[r] = (CT_T)mean;
    if (c->rstd) ((CT_T *)c->rstd)[r] = (CT_T)rstd;
    CT_T m = (CT_T)mean, k = (CT_T)rstd;
    for (int64_t i = 0; i < c->cols; i++) {
      CT_T v = (x[i] - m) * k;
      if (w) v *= w[i];
      if (b) v += b[i];
      o[i] = v;
    }
  }
}
static void CT_CAT(ln_bwd_x_, CT_S)(int64_t r0, int64_t r1, void *vctx) {
  const ln_ctx *c = vctx;
  const CT_T *w = (const CT_T *)c->w;
  for (int64_t r = r0; r < r1; r++) {
    const CT_T *x = (const CT_T *)c->x + r * c->cols, *g = (const CT_T *)c->g + r * c->cols;
    CT_T *gx = (CT_T *)c->gx + r * c->cols;
    CT_T m = ((const CT_T *)c->cmean)[r], k = ((const CT_T *)c->crstd)[r];
    double a = 0, bb = 0;
    for (int64_t i = 0; i < c->cols; i++) {
      CT_T wg = w ? g[i] * w[i] : g[i];
      a += wg;
      bb += wg * (x[i] - m) * k;
    }
    CT_T am = (CT_T)(a / (double)c->cols), bm = (CT_T)(bb / (double)c->cols);
    for (int64_t i = 0; i < c->cols; i++) {
      CT_T wg = w ? g[i] * w[i] : g[i];
      gx[i] = k * (wg - am - (x[i] - m) * k * bm);
    }
  }
}
static void CT_CAT(ln_bwd_w_, CT_S)(int64_t j0, int64_t j1, void *vctx) {
  const ln_ctx *c = vctx;
  for (int64_t j = j0; j < j1; j++) {
    if (c->gw) ((CT_T *)c->gw)[j] = 0;
    if (c->gb) ((CT_T *)c->gb)[j] = 0;
  }
  for (int64_t r = 0; r < c->rows; r++) {
    const CT_T *x = (const CT_T *)c->x + r * c->cols, *g = (const CT_T *)c->g + r * c->cols;
    CT_T m = ((const CT_T *)c->cmean)[r], k = ((const CT_T *)c->crstd)[r];
    if (c->gw)
      for (int64_t j = j0; j < j1; j++) ((CT_T *)c->gw)[j] += g[j] * (x[j] - m) * k;
    if (c->gb)
      for (int64_t j = j0; j < j1; j++) ((CT_T *)c->gb)[j] += g[j];
  }
}
