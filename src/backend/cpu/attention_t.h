/* The CPU attention kernels for one floating type CT_T (included by
 * attention.c through core/for_float_types.h). Shapes (all contiguous):
 * q (BH, L, E), k (BH, S, E), v (BH, S, Ev), out and grad_out (BH, L, Ev),
 * lse (BH, L). Tiles of SDPA_BR query rows by SDPA_BC keys; their products
 * are single-threaded BLAS calls (ct__gemm inside a pool task). */

/* row[t] = e^(row[t] - shift) for t < n. f32 takes core/exp_math.h's
 * polynomial, which the compiler vectorizes (libm's expf is one call per
 * weight, the largest cost of the tiles after the products); f64 keeps
 * libm's exp. e^-inf = 0 for masked and hidden scores either way. */
static void CT_CAT(exp_shifted_, CT_S)(CT_T *row, int64_t n, CT_T shift) {
#pragma omp simd
  for (int64_t t = 0; t < n; t++) row[t] = CT_CAT(ct_expv_, CT_S)(row[t] - shift);
}

/* Scores of query rows [i0, i0 + nr) against keys [j0, j0 + nc) of problem
 * b, scaled, masked and hidden (-inf) as the params say, into s (nr, nc). */
static void CT_CAT(tile_scores_, CT_S)(const sdpa_ctx *c, int64_t b, int64_t i0, int64_t nr,
                                       int64_t j0, int64_t nc, CT_T *s) {
  const ct_sdpa_params *p = c->p;
  const bool f64 = CT_DT == CT_F64;
  const CT_T *q = (const CT_T *)c->q + (b * p->L + i0) * p->E;
  const CT_T *k = (const CT_T *)c->k + (b * p->S + j0) * p->E;
  ct__gemm(f64, false, true, nr, nc, p->E, q, p->E, k, p->E, 0.0, s, nc);
  const CT_T scale = (CT_T)p->scale;
  const CT_T *mask = (const CT_T *)c->mask;
  for (int64_t r = 0; r < nr; r++) {
    CT_T *row = s + r * nc;
    int64_t i = i0 + r;
    for (int64_t t = 0; t < nc; t++) row[t] *= scale;
    if (mask)
      for (int64_t t = 0; t < nc; t++) row[t] += mask[ct_sdpa_mask_offset(p, b, i, j0 + t)];
    if (p->causal)
      for (int64_t t = (i + 1 > j0 ? i + 1 - j0 : 0); t < nc; t++) row[t] = (CT_T)-INFINITY;
  }
}

/* Dropout factors of the weights (b, i, [j0, j0 + nc)): keep_scale or 0. */
static void CT_CAT(drop_row_, CT_S)(const ct_sdpa_params *p, int64_t b, int64_t i, int64_t j0,
                                    int64_t nc, CT_T keep_scale, CT_T *f) {
  uint32_t w[4];
  uint64_t blk = UINT64_MAX;
  for (int64_t t = 0; t < nc; t++) {
    uint64_t idx = ct_sdpa_drop_index(p, b, i, j0 + t);
    if (idx >> 2 != blk) ct_philox_block(p->dropout_seed, 0, blk = idx >> 2, w);
    f[t] = ct_sdpa_keep_word(p, w[idx & 3]) ? keep_scale : (CT_T)0;
  }
}

/* Forward of one (problem, query tile): the online softmax over key tiles,
 * accumulating into the output rows themselves. */
static void CT_CAT(sdpa_fwd_tile_, CT_S)(const sdpa_ctx *c, int64_t b, int64_t i0, int64_t nr,
                                         CT_T *s, CT_T *f) {
  const ct_sdpa_params *p = c->p;
  const bool f64 = CT_DT == CT_F64;
  CT_T *o = (CT_T *)c->out + (b * p->L + i0) * p->Ev;
  CT_T m[SDPA_BR], l[SDPA_BR];
  for (int64_t r = 0; r < nr; r++) m[r] = (CT_T)-INFINITY, l[r] = 0;
  memset(o, 0, sizeof(CT_T) * (size_t)(nr * p->Ev));
  const CT_T ks = (CT_T)ct_sdpa_keep_scale(p);
  int64_t S_end = p->causal && i0 + nr < p->S ? i0 + nr : p->S; /* keys past the last row's */
  for (int64_t j0 = 0; j0 < S_end; j0 += SDPA_BC) {
    int64_t nc = S_end - j0 < SDPA_BC ? S_end - j0 : SDPA_BC;
    CT_CAT(tile_scores_, CT_S)(c, b, i0, nr, j0, nc, s);
    for (int64_t r = 0; r < nr; r++) {
      CT_T *row = s + r * nc, mt = (CT_T)-INFINITY;
      for (int64_t t = 0; t < nc; t++) mt = row[t] > mt ? row[t] : mt;
      CT_T mn = m[r] > mt ? m[r] : mt;
      if (mn == (CT_T)-INFINITY) { /* nothing seen yet: the tile adds nothing */
        memset(row, 0, sizeof(CT_T) * (size_t)nc);
        continue;
      }
      CT_T alpha = CT_CAT(ct_expv_, CT_S)(m[r] - mn), sum = 0;
      CT_CAT(exp_shifted_, CT_S)(row, nc, mn);
      for (int64_t t = 0; t < nc; t++) sum += row[t];
      l[r] = l[r] * alpha + sum;
      m[r] = mn;
      if (alpha != (CT_T)1)
        for (int64_t e = 0; e < p->Ev; e++) o[r * p->Ev + e] *= alpha;
      if (p->dropout_p > 0) {
        CT_CAT(drop_row_, CT_S)(p, b, i0 + r, j0, nc, ks, f);
        for (int64_t t = 0; t < nc; t++) row[t] *= f[t];
      }
    }
    const CT_T *vt = (const CT_T *)c->v + (b * p->S + j0) * p->Ev;
    ct__gemm(f64, false, false, nr, p->Ev, nc, s, nc, vt, p->Ev, 1.0, o, p->Ev);
  }
  CT_T *lse = (CT_T *)c->lse + b * p->L + i0;
  for (int64_t r = 0; r < nr; r++) {
    /* every key masked: nan, as softmax; no key at all: zeros, as an empty product */
    CT_T inv = l[r] > 0 ? 1 / l[r] : p->S == 0 ? (CT_T)0 : (CT_T)NAN;
    for (int64_t e = 0; e < p->Ev; e++) o[r * p->Ev + e] *= inv;
    lse[r] = l[r] > 0 ? m[r] + CT_CAT(log, CT_MATH)(l[r]) : (CT_T)-INFINITY;
  }
}

/* D_i = sum_e grad_out[i, e] * out[i, e] for rows [i0, i0 + nr) of b. */
static void CT_CAT(sdpa_delta_, CT_S)(const sdpa_ctx *c, int64_t b, int64_t i0, int64_t nr) {
  const ct_sdpa_params *p = c->p;
  const CT_T *g = (const CT_T *)c->g + (b * p->L + i0) * p->Ev;
  const CT_T *o = (const CT_T *)c->out + (b * p->L + i0) * p->Ev;
  CT_T *d = (CT_T *)c->delta + b * p->L + i0;
  for (int64_t r = 0; r < nr; r++) {
    CT_T acc = 0;
    for (int64_t e = 0; e < p->Ev; e++) acc += g[r * p->Ev + e] * o[r * p->Ev + e];
    d[r] = acc;
  }
}

/* Recomputes one tile of the backward pass: the weights P = exp(s - lse)
 * into pw, the dropped weights (P * factor) into pd, and the scaled score
 * gradient dS = scale * P * (factor * (dO @ V^T) - D) into ds. */
static void CT_CAT(sdpa_bwd_tile_, CT_S)(const sdpa_ctx *c, int64_t b, int64_t i0, int64_t nr,
                                         int64_t j0, int64_t nc, CT_T *pw, CT_T *pd, CT_T *ds,
                                         CT_T *f) {
  const ct_sdpa_params *p = c->p;
  const bool f64 = CT_DT == CT_F64, drop = p->dropout_p > 0;
  CT_CAT(tile_scores_, CT_S)(c, b, i0, nr, j0, nc, pw);
  const CT_T *g = (const CT_T *)c->g + (b * p->L + i0) * p->Ev;
  const CT_T *vt = (const CT_T *)c->v + (b * p->S + j0) * p->Ev;
  ct__gemm(f64, false, true, nr, nc, p->Ev, g, p->Ev, vt, p->Ev, 0.0, ds, nc); /* dO V^T */
  const CT_T *lse = (const CT_T *)c->lse + b * p->L + i0;
  const CT_T *d = (const CT_T *)c->delta + b * p->L + i0;
  const CT_T scale = (CT_T)p->scale, ks = (CT_T)ct_sdpa_keep_scale(p);
  for (int64_t r = 0; r < nr; r++) {
    CT_T *w = pw + r * nc, *wd = pd + r * nc, *dr = ds + r * nc;
    if (drop) CT_CAT(drop_row_, CT_S)(p, b, i0 + r, j0, nc, ks, f);
    CT_CAT(exp_shifted_, CT_S)(w, nc, lse[r]);
    for (int64_t t = 0; t < nc; t++) {
      CT_T pr = w[t];
      CT_T fa = drop ? f[t] : (CT_T)1;
      wd[t] = pr * fa;
      dr[t] = scale * pr * (fa * dr[t] - d[r]);
    }
  }
}

/* grad_k and grad_v of keys [j0, j0 + nc) of b: sums over every query tile.
 * with_dq: also adds these keys' part of grad_q (the caller owns all of b). */
static void CT_CAT(sdpa_dkdv_tile_, CT_S)(const sdpa_ctx *c, int64_t b, int64_t j0, int64_t nc,
                                          CT_T *pw, CT_T *pd, CT_T *ds, CT_T *f, bool with_dq) {
  const ct_sdpa_params *p = c->p;
  const bool f64 = CT_DT == CT_F64;
  CT_T *gk = (CT_T *)c->gk + (b * p->S + j0) * p->E;
  CT_T *gv = (CT_T *)c->gv + (b * p->S + j0) * p->Ev;
  memset(gk, 0, sizeof(CT_T) * (size_t)(nc * p->E));
  memset(gv, 0, sizeof(CT_T) * (size_t)(nc * p->Ev));
  int64_t i_start =
      p->causal ? j0 / SDPA_BR * SDPA_BR : 0; /* earlier rows see none of these keys */
  for (int64_t i0 = i_start; i0 < p->L; i0 += SDPA_BR) {
    int64_t nr = p->L - i0 < SDPA_BR ? p->L - i0 : SDPA_BR;
    CT_CAT(sdpa_bwd_tile_, CT_S)(c, b, i0, nr, j0, nc, pw, pd, ds, f);
    const CT_T *g = (const CT_T *)c->g + (b * p->L + i0) * p->Ev;
    const CT_T *q = (const CT_T *)c->q + (b * p->L + i0) * p->E;
    ct__gemm(f64, true, false, nc, p->Ev, nr, pd, nc, g, p->Ev, 1.0, gv, p->Ev); /* Pd^T dO */
    ct__gemm(f64, true, false, nc, p->E, nr, ds, nc, q, p->E, 1.0, gk, p->E);    /* dS^T Q */
    if (with_dq) {
      const CT_T *k = (const CT_T *)c->k + (b * p->S + j0) * p->E;
      CT_T *gq = (CT_T *)c->gq + (b * p->L + i0) * p->E;
      ct__gemm(f64, false, false, nr, p->E, nc, ds, nc, k, p->E, 1.0, gq, p->E); /* dS K */
    }
  }
}

/* grad_q of query rows [i0, i0 + nr) of b: a sum over the key tiles. */
static void CT_CAT(sdpa_dq_tile_, CT_S)(const sdpa_ctx *c, int64_t b, int64_t i0, int64_t nr,
                                        CT_T *pw, CT_T *pd, CT_T *ds, CT_T *f) {
  const ct_sdpa_params *p = c->p;
  const bool f64 = CT_DT == CT_F64;
  CT_T *gq = (CT_T *)c->gq + (b * p->L + i0) * p->E;
  memset(gq, 0, sizeof(CT_T) * (size_t)(nr * p->E));
  int64_t S_end = p->causal && i0 + nr < p->S ? i0 + nr : p->S;
  for (int64_t j0 = 0; j0 < S_end; j0 += SDPA_BC) {
    int64_t nc = S_end - j0 < SDPA_BC ? S_end - j0 : SDPA_BC;
    CT_CAT(sdpa_bwd_tile_, CT_S)(c, b, i0, nr, j0, nc, pw, pd, ds, f);
    const CT_T *k = (const CT_T *)c->k + (b * p->S + j0) * p->E;
    ct__gemm(f64, false, false, nr, p->E, nc, ds, nc, k, p->E, 1.0, gq, p->E); /* dS K */
  }
}
