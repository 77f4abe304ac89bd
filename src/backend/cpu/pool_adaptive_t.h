/* Template of the CPU adaptive pooling kernels (pool_adaptive.c), included
 * once per native floating type with CT_T and CT_S: ap_fwd_<S> and
 * ap_bwd_<S> over planes [p0, p1) of an ap_ctx. Windows from backend/params.h
 * (ct_adaptive_*); the backward gathers, per input element, from the outputs
 * whose windows hold it. */

static void CT_CAT(ap_fwd_, CT_S)(int64_t p0, int64_t p1, void *vctx) {
  const ap_ctx *c = vctx;
  for (int64_t pl = p0; pl < p1; pl++) {
    const CT_T *x = (const CT_T *)c->x + pl * c->H * c->W;
    CT_T *o = (CT_T *)c->out + pl * c->OH * c->OW;
    int64_t *ix = c->idx ? c->idx + pl * c->OH * c->OW : NULL;
    for (int64_t oh = 0; oh < c->OH; oh++) {
      int64_t h0 = ct_adaptive_start(oh, c->OH, c->H), h1 = ct_adaptive_end(oh, c->OH, c->H);
      for (int64_t ow = 0; ow < c->OW; ow++) {
        int64_t w0 = ct_adaptive_start(ow, c->OW, c->W), w1 = ct_adaptive_end(ow, c->OW, c->W);
        if (c->is_max) {
          CT_T best = x[h0 * c->W + w0];
          int64_t at = h0 * c->W + w0;
          for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) {
              CT_T v = x[h * c->W + w];
              if (v > best || isnan(v)) best = v, at = h * c->W + w;
            }
          o[oh * c->OW + ow] = best;
          if (ix) ix[oh * c->OW + ow] = at;
        } else {
          double s = 0;
          for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) s += x[h * c->W + w];
          o[oh * c->OW + ow] = (CT_T)(s / (double)((h1 - h0) * (w1 - w0)));
        }
      }
    }
  }
}

static void CT_CAT(ap_bwd_, CT_S)(int64_t p0, int64_t p1, void *vctx) {
  const ap_ctx *c = vctx;
  for (int64_t pl = p0; pl < p1; pl++) {
    CT_T *gx = (CT_T *)c->x + pl * c->H * c->W;
    const CT_T *g = (const CT_T *)c->out + pl * c->OH * c->OW;
    const int64_t *ix = c->cidx ? c->cidx + pl * c->OH * c->OW : NULL;
    for (int64_t h = 0; h < c->H; h++) {
      int64_t oh0 = ct_adaptive_first_out(h, c->OH, c->H),
              oh1 = ct_adaptive_last_out(h, c->OH, c->H);
      for (int64_t w = 0; w < c->W; w++) {
        int64_t ow0 = ct_adaptive_first_out(w, c->OW, c->W),
                ow1 = ct_adaptive_last_out(w, c->OW, c->W);
        double s = 0;
        for (int64_t oh = oh0; oh <= oh1; oh++)
          for (int64_t ow = ow0; ow <= ow1; ow++) {
            int64_t o = oh * c->OW + ow;
            if (c->is_max) {
              if (ix[o] == h * c->W + w) s += g[o];
            } else {
              int64_t kh = ct_adaptive_end(oh, c->OH, c->H) - ct_adaptive_start(oh, c->OH, c->H);
              int64_t kw = ct_adaptive_end(ow, c->OW, c->W) - ct_adaptive_start(ow, c->OW, c->W);
              s += (double)g[o] / (double)(kh * kw);
            }
          }
        gx[h * c->W + w] = (CT_T)s;
      }
    }
  }
}
