/* The CPU LSTM/GRU cell kernels for one floating type CT_T (included by
 * rnn.c through core/for_float_types.h): rows [r0, r1) of the (N, H) cell,
 * each row's H units in one loop over core/rnn_math.h's formulas. The row
 * functions take every gate as its own restrict pointer, so that the
 * compiler vectorizes the loop (the f32 nonlinearities are polynomials).
 * Shapes and layouts: backend/params.h's ct_rnn_cell_params. */

static void CT_CAT(lstm_fwd_row_,
                   CT_S)(int64_t H, const CT_T *restrict ai, const CT_T *restrict af,
                         const CT_T *restrict ag, const CT_T *restrict ao, const CT_T *restrict hi,
                         const CT_T *restrict hf, const CT_T *restrict hg, const CT_T *restrict ho,
                         const CT_T *restrict c, CT_T *restrict wi, CT_T *restrict wf,
                         CT_T *restrict wg, CT_T *restrict wo, CT_T *restrict wtc,
                         CT_T *restrict c_new, CT_T *restrict h_new) {
  CT_SIMD for (int64_t j = 0; j < H; j++)
      CT_FN(ct_lstm_cell_fwd)(ai[j] + hi[j], af[j] + hf[j], ag[j] + hg[j], ao[j] + ho[j], c[j],
                              &wi[j], &wf[j], &wg[j], &wo[j], &wtc[j], &c_new[j], &h_new[j]);
}

static void CT_CAT(lstm_bwd_row_, CT_S)(int64_t H, const CT_T *restrict dh, const CT_T *restrict dc,
                                        const CT_T *restrict wi, const CT_T *restrict wf,
                                        const CT_T *restrict wg, const CT_T *restrict wo,
                                        const CT_T *restrict wtc, const CT_T *restrict c,
                                        CT_T *restrict di, CT_T *restrict df, CT_T *restrict dg,
                                        CT_T *restrict dout, CT_T *restrict dc_old) {
  CT_SIMD for (int64_t j = 0; j < H; j++)
      CT_FN(ct_lstm_cell_bwd)(dh[j], dc[j], wi[j], wf[j], wg[j], wo[j], wtc[j], c[j], &di[j],
                              &df[j], &dg[j], &dout[j], &dc_old[j]);
}

static void CT_CAT(gru_fwd_row_, CT_S)(int64_t H, const CT_T *restrict ir, const CT_T *restrict iz,
                                       const CT_T *restrict in, const CT_T *restrict hr,
                                       const CT_T *restrict hz, const CT_T *restrict hn,
                                       const CT_T *restrict h, CT_T *restrict wr, CT_T *restrict wz,
                                       CT_T *restrict wn, CT_T *restrict whn,
                                       CT_T *restrict h_new) {
  CT_SIMD for (int64_t j = 0; j < H; j++) {
    whn[j] = hn[j];
    CT_FN(ct_gru_cell_fwd)
    (ir[j], iz[j], in[j], hr[j], hz[j], hn[j], h[j], &wr[j], &wz[j], &wn[j], &h_new[j]);
  }
}

static void CT_CAT(gru_bwd_row_, CT_S)(int64_t H, const CT_T *restrict dh, const CT_T *restrict wr,
                                       const CT_T *restrict wz, const CT_T *restrict wn,
                                       const CT_T *restrict whn, const CT_T *restrict h,
                                       CT_T *restrict dir, CT_T *restrict diz, CT_T *restrict din,
                                       CT_T *restrict dhr, CT_T *restrict dhz, CT_T *restrict dhn,
                                       CT_T *restrict dh_old) {
  CT_SIMD for (int64_t j = 0; j < H; j++) {
    CT_FN(ct_gru_cell_bwd)
    (dh[j], wr[j], wz[j], wn[j], whn[j], h[j], &dir[j], &diz[j], &din[j], &dhn[j], &dh_old[j]);
    dhr[j] = dir[j], dhz[j] = diz[j];
  }
}

static void CT_CAT(rnn_rows_, CT_S)(const rnn_ctx *c, int64_t r0, int64_t r1) {
  const int64_t H = c->p->H;
  const bool lstm = c->p->kind == CT_RNN_CELL_LSTM;
  const int64_t G = (lstm ? 4 : 3) * H, W = (lstm ? 5 : 4) * H;
  const CT_T *a = (const CT_T *)c->a, *b = (const CT_T *)c->b, *s = (const CT_T *)c->s;
  CT_T *out = (CT_T *)c->out, *ws = (CT_T *)c->ws, *gh = (CT_T *)c->gh, *gs = (CT_T *)c->gs;
  CT_T *h_new = (CT_T *)c->h, *c_new = (CT_T *)c->c;
  for (int64_t n = r0; n < r1; n++) {
    CT_T *w = ws + n * W;
    const CT_T *st = s + n * H;
    if (lstm && !c->backward) {
      const CT_T *ai = a + n * G, *hi = b + n * G;
      CT_CAT(lstm_fwd_row_, CT_S)
      (H, ai, ai + H, ai + 2 * H, ai + 3 * H, hi, hi + H, hi + 2 * H, hi + 3 * H, st, w, w + H,
       w + 2 * H, w + 3 * H, w + 4 * H, c_new + n * H, h_new + n * H);
    } else if (lstm) {
      CT_T *d = out + n * G;
      CT_CAT(lstm_bwd_row_, CT_S)
      (H, a + n * H, b + n * H, w, w + H, w + 2 * H, w + 3 * H, w + 4 * H, st, d, d + H, d + 2 * H,
       d + 3 * H, gs + n * H);
    } else if (!c->backward) {
      const CT_T *ai = a + n * G, *hi = b + n * G;
      CT_CAT(gru_fwd_row_, CT_S)
      (H, ai, ai + H, ai + 2 * H, hi, hi + H, hi + 2 * H, st, w, w + H, w + 2 * H, w + 3 * H,
       h_new + n * H);
    } else {
      CT_T *di = out + n * G, *dh = gh + n * G;
      CT_CAT(gru_bwd_row_, CT_S)
      (H, a + n * H, w, w + H, w + 2 * H, w + 3 * H, st, di, di + H, di + 2 * H, dh, dh + H,
       dh + 2 * H, gs + n * H);
    }
  }
}
