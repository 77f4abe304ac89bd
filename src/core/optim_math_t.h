/* Template of core/optim_math.h for one floating type (core/for_float_types.h:
 * CT_T, CT_S, CT_MATH): the per-call constants of an update, rounded to CT_T
 * once (ct_optim_consts_f32 / _f64: a type keeps its suffix in C++ too), and
 * the element updates. Where torch adds a scaled tensor (x.add_(y, alpha=a),
 * which ATen computes as fmadd(y, a, x)) the update uses fma; every other
 * operation is rounded as written. */

typedef struct CT_TN(ct_optim_consts) {
  bool use_wd, first, nesterov, decoupled;
  CT_T wd, mom, damp1, neg_lr;                                 /* SGD */
  CT_T decay, b1, b2, one_b1, one_b2, neg_step, bc2_sqrt, eps; /* Adam(W) */
} CT_TN(ct_optim_consts);

/* The constants of an update in CT_T (host side, once per call; suffixed in
 * C++ too: only the return type differs). */
CT_HOST_DEVICE CT_TN(ct_optim_consts) CT_TN(ct_optim_consts_of)(const ct_optim_params *o) {
  CT_TN(ct_optim_consts) c;
  c.use_wd = o->weight_decay != 0;
  c.first = o->first_step;
  c.nesterov = o->nesterov;
  c.decoupled = o->kind == CT_OPTIM_ADAMW;
  c.wd = (CT_T)o->weight_decay;
  c.mom = (CT_T)o->momentum;
  c.damp1 = (CT_T)(1.0 - o->dampening);
  c.neg_lr = (CT_T)(-o->lr);
  c.decay = (CT_T)(1.0 - o->lr * o->weight_decay);
  c.b1 = (CT_T)o->beta1;
  c.b2 = (CT_T)o->beta2;
  c.one_b1 = (CT_T)(1.0 - o->beta1);
  c.one_b2 = (CT_T)(1.0 - o->beta2);
  double bc1 = 1.0 - pow(o->beta1, (double)o->step), bc2 = 1.0 - pow(o->beta2, (double)o->step);
  c.neg_step = (CT_T)(-(o->lr / bc1));
  c.bc2_sqrt = (CT_T)sqrt(bc2);
  c.eps = (CT_T)o->eps;
  return c;
}

/* SGD on one element: p's new value; buf (NULL without momentum) is the
 * element's momentum buffer, read unless this is the first step, written. */
CT_HOST_DEVICE CT_T CT_FN(ct_sgd_update)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g,
                                         CT_T *buf) {
  CT_T d = g;
  if (c->use_wd) d = CT_M(fma)(c->wd, p, d);
  if (buf) {
    CT_T b = c->first ? d : CT_M(fma)(c->damp1, d, *buf * c->mom);
    *buf = b;
    d = c->nesterov ? CT_M(fma)(c->mom, b, d) : b;
  }
  return CT_M(fma)(c->neg_lr, d, p);
}

/* Adam / AdamW on one element: p's new value; m, v (and vmax with amsgrad,
 * else NULL) are the element's moments, updated. */
CT_HOST_DEVICE CT_T CT_FN(ct_adam_update)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g, CT_T *m,
                                          CT_T *v, CT_T *vmax) {
  if (c->decoupled)
    p = p * c->decay;
  else if (c->use_wd)
    g = CT_M(fma)(c->wd, p, g);
  CT_T mi = CT_M(fma)(c->one_b1, g, *m * c->b1);
  CT_T vi = *v * c->b2 + c->one_b2 * g * g;
  *m = mi;
  *v = vi;
  CT_T s = vi;
  if (vmax) {
    CT_T mx = *vmax;
    s = (mx > vi || mx != mx) ? mx : vi;
    *vmax = s;
  }
  CT_T denom = CT_M(sqrt)(s) / c->bc2_sqrt + c->eps;
  return p + c->neg_step * mi / denom;
}
