/* Template of the CPU optimizer loops (optim.c), included with CT_T (float,
 * double) and CT_S (f32, f64): one parameter's update, element by element
 * with core/optim_math.h's formulas, on one range of elements (optim.c splits
 * large tensors across the thread pool). The optional buffer is tested
 * outside the loop, and the constants are a local copy (a shared one might
 * alias the stores), so each loop vectorizes. */

static void CT_FN(sgd)(const ct_optim_params *o, CT_T *restrict p, const CT_T *restrict g,
                       CT_T *restrict buf, int64_t n) {
  const CT_TN(ct_optim_consts) c = CT_TN(ct_optim_consts_of)(o);
  if (buf) {
    for (int64_t i = 0; i < n; i++) p[i] = CT_FN(ct_sgd_update_momentum)(&c, p[i], g[i], &buf[i]);
  } else {
    for (int64_t i = 0; i < n; i++) p[i] = CT_FN(ct_sgd_update_plain)(&c, p[i], g[i]);
  }
}

static void CT_FN(adam)(const ct_optim_params *o, CT_T *restrict p, const CT_T *restrict g,
                        CT_T *restrict m, CT_T *restrict v, CT_T *restrict vmax, int64_t n) {
  const CT_TN(ct_optim_consts) c = CT_TN(ct_optim_consts_of)(o);
  if (vmax) {
    for (int64_t i = 0; i < n; i++)
      p[i] = CT_FN(ct_adam_step)(&c, p[i], g[i], &m[i], &v[i], &vmax[i], true);
  } else {
    for (int64_t i = 0; i < n; i++)
      p[i] = CT_FN(ct_adam_step)(&c, p[i], g[i], &m[i], &v[i], NULL, false);
  }
}

static void CT_FN(rmsprop)(const ct_optim_params *o, CT_T *restrict p, const CT_T *restrict g,
                           CT_T *restrict sq, CT_T *restrict buf, CT_T *restrict ga, int64_t n) {
  const CT_TN(ct_optim_consts) c = CT_TN(ct_optim_consts_of)(o);
#define CT__RMSPROP_LOOP(B, A, MOM, CEN) \
  for (int64_t i = 0; i < n; i++)        \
  p[i] = CT_FN(ct_rmsprop_step)(&c, p[i], g[i], &sq[i], B, A, MOM, CEN)
  if (buf && ga)
    CT__RMSPROP_LOOP(&buf[i], &ga[i], true, true);
  else if (buf)
    CT__RMSPROP_LOOP(&buf[i], NULL, true, false);
  else if (ga)
    CT__RMSPROP_LOOP(NULL, &ga[i], false, true);
  else
    CT__RMSPROP_LOOP(NULL, NULL, false, false);
#undef CT__RMSPROP_LOOP
}

static void CT_FN(adagrad)(const ct_optim_params *o, CT_T *restrict p, const CT_T *restrict g,
                           CT_T *restrict sum, int64_t n) {
  const CT_TN(ct_optim_consts) c = CT_TN(ct_optim_consts_of)(o);
  for (int64_t i = 0; i < n; i++) p[i] = CT_FN(ct_adagrad_update)(&c, p[i], g[i], &sum[i]);
}
