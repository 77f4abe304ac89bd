/* Template of the CPU convolution's im2col and col2im (conv.c), included once
 * per native floating type with CT_T (float, double) and CT_S (f32, f64),
 * for one sample and one group. col (K, ld): row (c*kH + i)*kW + j holds
 * x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] at column oh*Wo + ow (0 outside
 * the image). */
/* col (K, ld) = im2col(x (Cg, H, W)). */
static void CT_CAT(im2col_, CT_S)(const conv_geom *g, const CT_T *x, CT_T *col, int64_t ld) {
  for (int64_t c = 0; c < g->Cg; c++)
    for (int64_t i = 0; i < g->kH; i++)
      for (int64_t j = 0; j < g->kW; j++) {
        CT_T *row = col + ((c * g->kH + i) * g->kW + j) * ld;
        const CT_T *xc = x + c * g->H * g->W;
        int64_t off_w = j * g->dw - g->pw, ow0, ow1;
        conv_valid_cols(g, off_w, &ow0, &ow1);
        for (int64_t oh = 0; oh < g->Ho; oh++) {
          CT_T *r = row + oh * g->Wo;
          int64_t ih = oh * g->sh - g->ph + i * g->dh;
          if (ih < 0 || ih >= g->H) {
            for (int64_t ow = 0; ow < g->Wo; ow++) r[ow] = 0;
            continue;
          }
          const CT_T *xr = xc + ih * g->W + off_w;
          for (int64_t ow = 0; ow < ow0; ow++) r[ow] = 0;
          if (g->sw == 1)
            for (int64_t ow = ow0; ow < ow1; ow++) r[ow] = xr[ow];
          else
            for (int64_t ow = ow0; ow < ow1; ow++) r[ow] = xr[ow * g->sw];
          for (int64_t ow = ow1; ow < g->Wo; ow++) r[ow] = 0;
        }
      }
}
/* x (Cg, H, W) += col2im(col); x must be zeroed beforehand. */
static void CT_CAT(col2im_, CT_S)(const conv_geom *g, const CT_T *col, CT_T *x, int64_t ld) {
  for (int64_t c = 0; c < g->Cg; c++)
    for (int64_t i = 0; i < g->kH; i++)
      for (int64_t j = 0; j < g->kW; j++) {
        const CT_T *row = col + ((c * g->kH + i) * g->kW + j) * ld;
        CT_T *xc = x + c * g->H * g->W;
        int64_t off_w = j * g->dw - g->pw, ow0, ow1;
        conv_valid_cols(g, off_w, &ow0, &ow1);
        for (int64_t oh = 0; oh < g->Ho; oh++) {
          int64_t ih = oh * g->sh - g->ph + i * g->dh;
          if (ih < 0 || ih >= g->H) continue;
          const CT_T *r = row + oh * g->Wo;
          CT_T *xr = xc + ih * g->W + off_w;
          if (g->sw == 1)
            for (int64_t ow = ow0; ow < ow1; ow++) xr[ow] += r[ow];
          else
            for (int64_t ow = ow0; ow < ow1; ow++) xr[ow * g->sw] += r[ow];
        }
      }
}
