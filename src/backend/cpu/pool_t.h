/* Template of the CPU pooling kernels (pool.c), included once per native
 * floating type with CT_T (float, double) and CT_S (f32, f64): fwd_<S> and
 * bwd_<S> run planes [b, e) of a pool_ctx. The windows are
 * backend/params.h's (ct_pool2d_window, as the CUDA kernels); the 2x2
 * stride-2 max takes the vector kernels pool.c selects (max2x2_*_vec_<S>)
 * for what they cover. */

static void CT_CAT(fwd_max_fast_, CT_S)(const pool_ctx *c, int64_t pl) {
  const CT_T *x = (const CT_T *)c->x + pl * c->H * c->W;
  CT_T *o = (CT_T *)c->out + pl * c->Ho * c->Wo;
  int64_t *ix = c->idx ? c->idx + pl * c->Ho * c->Wo : NULL;
  const int64_t W = c->W, kH = c->p->kernel[0], kW = c->p->kernel[1];
  const int64_t sh = c->p->stride[0], sw = c->p->stride[1];
  if (kH == 2 && kW == 2 && sh == 2 && sw == 2) {
    for (int64_t oh = 0; oh < c->Ho; oh++) {
      const CT_T *r0 = x + 2 * oh * W, *r1 = r0 + W;
      CT_T *orow = o + oh * c->Wo;
      int64_t *irow = ix ? ix + oh * c->Wo : NULL;
      int64_t base = 2 * oh * W, ow0 = 0;
      ow0 = CT_CAT(max2x2_row_vec_, CT_S)(c, r0, r1, orow, irow, base);
      /* A tree ((v0, v1), (v2, v3)) of the window in order: the same first nan or   */
      /* first maximum as the sequential loop; branch-free selects, vectorizable.    */
      for (int64_t ow = ow0; ow < c->Wo; ow++) {
        CT_T v0 = r0[2 * ow], v1 = r0[2 * ow + 1], v2 = r1[2 * ow], v3 = r1[2 * ow + 1];
        int u0 = (v0 == v0) & ((v1 > v0) | (v1 != v1));
        int u1 = (v2 == v2) & ((v3 > v2) | (v3 != v3));
        CT_T h0 = u0 ? v1 : v0, h1 = u1 ? v3 : v2;
        int u = (h0 == h0) & ((h1 > h0) | (h1 != h1));
        orow[ow] = u ? h1 : h0;
        if (irow) irow[ow] = base + 2 * ow + (u ? W + u1 : u0);
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < c->Ho; oh++)
    for (int64_t ow = 0; ow < c->Wo; ow++) {
      int64_t i0 = oh * sh * W + ow * sw, bi = i0;
      CT_T best = x[i0];
      for (int64_t h = 0; h < kH; h++)
        for (int64_t w = 0; w < kW; w++) {
          CT_T v = x[i0 + h * W + w];
          if (best == best && (v > best || v != v)) best = v, bi = i0 + h * W + w;
        }
      o[oh * c->Wo + ow] = best;
      if (ix) ix[oh * c->Wo + ow] = bi;
    }
}
static void CT_CAT(fwd_, CT_S)(int64_t b, int64_t e, void *vctx) {
  const pool_ctx *c = vctx;
  if (max_unclipped(c)) {
    for (int64_t pl = b; pl < e; pl++) CT_CAT(fwd_max_fast_, CT_S)(c, pl);
    return;
  }
  for (int64_t pl = b; pl < e; pl++) {
    const CT_T *x = (const CT_T *)c->x + pl * c->H * c->W;
    CT_T *o = (CT_T *)c->out + pl * c->Ho * c->Wo;
    int64_t *ix = c->idx ? c->idx + pl * c->Ho * c->Wo : NULL;
    for (int64_t oh = 0; oh < c->Ho; oh++)
      for (int64_t ow = 0; ow < c->Wo; ow++) {
        int64_t hr[2], wr[2], div = ct_pool2d_window(c->p, c->H, c->W, oh, ow, hr, wr);
        if (c->is_max) {
          CT_T best = -INFINITY;
          int64_t bi = hr[0] * c->W + wr[0];
          for (int64_t h = hr[0]; h < hr[1]; h++)
            for (int64_t w = wr[0]; w < wr[1]; w++) {
              CT_T v = x[h * c->W + w];
              if (v > best || isnan(v)) {
                best = v;
                bi = h * c->W + w;
                if (isnan(v)) goto done;
              }
            }
        done:
          o[oh * c->Wo + ow] = best;
          if (ix) ix[oh * c->Wo + ow] = bi;
        } else {
          CT_T s = 0;
          for (int64_t h = hr[0]; h < hr[1]; h++)
            for (int64_t w = wr[0]; w < wr[1]; w++) s += x[h * c->W + w];
          o[oh * c->Wo + ow] = div > 0 ? s / (CT_T)div : (CT_T)NAN;
        }
      }
  }
}
static void CT_CAT(bwd_, CT_S)(int64_t b, int64_t e, void *vctx) {
  const pool_ctx *c = vctx;
  for (int64_t pl = b; pl < e; pl++) {
    if (CT_CAT(max2x2_bwd_vec_, CT_S)(c, pl)) continue;
    CT_T *gx = (CT_T *)c->x + pl * c->H * c->W;
    const CT_T *go = (const CT_T *)c->out + pl * c->Ho * c->Wo;
    for (int64_t i = 0; i < c->H * c->W; i++) gx[i] = 0;
    if (c->is_max) {
      const int64_t *ix = c->cidx + pl * c->Ho * c->Wo;
      for (int64_t q = 0; q < c->Ho * c->Wo; q++) gx[ix[q]] += go[q];
      continue;
    }
    for (int64_t oh = 0; oh < c->Ho; oh++)
      for (int64_t ow = 0; ow < c->Wo; ow++) {
        int64_t hr[2], wr[2], div = ct_pool2d_window(c->p, c->H, c->W, oh, ow, hr, wr);
        if (div <= 0) continue;
        CT_T v = go[oh * c->Wo + ow] / (CT_T)div;
        for (int64_t h = hr[0]; h < hr[1]; h++)
          for (int64_t w = wr[0]; w < wr[1]; w++) gx[h * c->W + w] += v;
      }
  }
}
