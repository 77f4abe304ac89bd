/* Template of core/rnn_math.h for one floating type (core/for_float_types.h). */

/* LSTM forward: pre-activations pi, pf, pg, po (input and hidden parts
 * already summed) and the old cell c -> the gates, tanh(c'), c' and h'. */
CT_HOST_DEVICE void CT_FN(ct_lstm_cell_fwd)(CT_T pi, CT_T pf, CT_T pg, CT_T po, CT_T c, CT_T *i,
                                            CT_T *f, CT_T *g, CT_T *o, CT_T *tc, CT_T *c_new,
                                            CT_T *h_new) {
  const CT_T z = (CT_T)0;
  *i = CT_FN(ct_uf_sigmoid)(pi, z, z);
  *f = CT_FN(ct_uf_sigmoid)(pf, z, z);
  *g = CT_FN(ct_uf_tanh)(pg, z, z);
  *o = CT_FN(ct_uf_sigmoid)(po, z, z);
  CT_T cn = *f * c + *i * *g;
  *c_new = cn;
  *tc = CT_FN(ct_uf_tanh)(cn, z, z);
  *h_new = *o * *tc;
}

/* LSTM backward: the gradients dh of h' and dc of c', the forward's gates,
 * tanh(c') and old cell c -> the gradients of the four pre-activations and
 * of c. */
CT_HOST_DEVICE void CT_FN(ct_lstm_cell_bwd)(CT_T dh, CT_T dc, CT_T i, CT_T f, CT_T g, CT_T o,
                                            CT_T tc, CT_T c, CT_T *dpi, CT_T *dpf, CT_T *dpg,
                                            CT_T *dpo, CT_T *dc_old) {
  const CT_T z = (CT_T)0;
  CT_T dct = dc + CT_FN(ct_ud_y_tanh)(dh * o, tc, z, z); /* total gradient of c' */
  *dpi = CT_FN(ct_ud_y_sigmoid)(dct * g, i, z, z);
  *dpf = CT_FN(ct_ud_y_sigmoid)(dct * c, f, z, z);
  *dpg = CT_FN(ct_ud_y_tanh)(dct * i, g, z, z);
  *dpo = CT_FN(ct_ud_y_sigmoid)(dh * tc, o, z, z);
  *dc_old = dct * f;
}

/* GRU forward: the input and hidden parts of the three gates and the old
 * state h -> r, z, n and h'. */
CT_HOST_DEVICE void CT_FN(ct_gru_cell_fwd)(CT_T ir, CT_T iz, CT_T in, CT_T hr, CT_T hz, CT_T hn,
                                           CT_T h, CT_T *r, CT_T *z, CT_T *n, CT_T *h_new) {
  const CT_T zero = (CT_T)0;
  *r = CT_FN(ct_uf_sigmoid)(ir + hr, zero, zero);
  *z = CT_FN(ct_uf_sigmoid)(iz + hz, zero, zero);
  *n = CT_FN(ct_uf_tanh)(in + *r * hn, zero, zero);
  *h_new = (h - *n) * *z + *n;
}

/* GRU backward: the gradient dh of h', the forward's r, z, n, the hidden
 * part hn of the n gate and the old state h -> the gradients of the input
 * parts (dir, diz, din; the hidden parts' are dir, diz and dhn) and of h. */
CT_HOST_DEVICE void CT_FN(ct_gru_cell_bwd)(CT_T dh, CT_T r, CT_T z, CT_T n, CT_T hn, CT_T h,
                                           CT_T *dir, CT_T *diz, CT_T *din, CT_T *dhn,
                                           CT_T *dh_old) {
  const CT_T zero = (CT_T)0, one = (CT_T)1;
  CT_T dpn = CT_FN(ct_ud_y_tanh)(dh * (one - z), n, zero, zero);
  *din = dpn;
  *dhn = dpn * r;
  *dir = CT_FN(ct_ud_y_sigmoid)(dpn * hn, r, zero, zero);
  *diz = CT_FN(ct_ud_y_sigmoid)(dh * (h - n), z, zero, zero);
  *dh_old = dh * z;
}
