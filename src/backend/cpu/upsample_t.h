/* Template of the CPU upsampling kernels (upsample.c), included once per
 * native floating type with CT_T and CT_S: up_fwd_<S> and up_bwd_<S> over
 * planes [p0, p1) of an up_ctx, with torch's order of operations (the row
 * weights outside, the column weights inside). */

static void CT_CAT(up_fwd_, CT_S)(int64_t p0, int64_t p1, void *vctx) {
  const up_ctx *c = vctx;
  for (int64_t pl = p0; pl < p1; pl++) {
    const CT_T *x = (const CT_T *)c->x + pl * c->H * c->W;
    CT_T *o = (CT_T *)c->out + pl * c->OH * c->OW;
    for (int64_t oh = 0; oh < c->OH; oh++) {
      const CT_T *r0 = x + c->h.i0[oh] * c->W, *r1 = x + c->h.i1[oh] * c->W;
      CT_T *orow = o + oh * c->OW;
      if (!c->linear) {
        for (int64_t ow = 0; ow < c->OW; ow++) orow[ow] = r0[c->w.i0[ow]];
        continue;
      }
      CT_T lh = (CT_T)c->h.l[oh], kh = (CT_T)1 - lh;
      for (int64_t ow = 0; ow < c->OW; ow++) {
        int64_t w0 = c->w.i0[ow], w1 = c->w.i1[ow];
        CT_T lw = (CT_T)c->w.l[ow], kw = (CT_T)1 - lw;
        orow[ow] = kh * (kw * r0[w0] + lw * r0[w1]) + lh * (kw * r1[w0] + lw * r1[w1]);
      }
    }
  }
}

static void CT_CAT(up_bwd_, CT_S)(int64_t p0, int64_t p1, void *vctx) {
  const up_ctx *c = vctx;
  for (int64_t pl = p0; pl < p1; pl++) {
    CT_T *gx = (CT_T *)c->x + pl * c->H * c->W;
    const CT_T *go = (const CT_T *)c->out + pl * c->OH * c->OW;
    for (int64_t i = 0; i < c->H * c->W; i++) gx[i] = 0;
    for (int64_t oh = 0; oh < c->OH; oh++) {
      CT_T *r0 = gx + c->h.i0[oh] * c->W, *r1 = gx + c->h.i1[oh] * c->W;
      const CT_T *grow = go + oh * c->OW;
      if (!c->linear) {
        for (int64_t ow = 0; ow < c->OW; ow++) r0[c->w.i0[ow]] += grow[ow];
        continue;
      }
      CT_T lh = (CT_T)c->h.l[oh], kh = (CT_T)1 - lh;
      for (int64_t ow = 0; ow < c->OW; ow++) {
        int64_t w0 = c->w.i0[ow], w1 = c->w.i1[ow];
        CT_T lw = (CT_T)c->w.l[ow], kw = (CT_T)1 - lw, g = grow[ow];
        r0[w0] += kh * kw * g;
        r0[w1] += kh * lw * g;
        r1[w0] += lh * kw * g;
        r1[w1] += lh * lw * g;
      }
    }
  }
}
