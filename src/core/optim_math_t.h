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
  CT_T alpha, one_alpha;                                       /* RMSprop */
  CT_T neg_clr; /* Adagrad: -lr / (1 + (step - 1) * lr_decay) */
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
  c.alpha = (CT_T)o->alpha;
  c.one_alpha = (CT_T)(1.0 - o->alpha);
  c.neg_clr = (CT_T)(-(o->lr / (1.0 + (double)(o->step - 1) * o->lr_decay)));
  return c;
}

/* SGD on one element: d, the gradient with weight decay, to p's new value;
 * with momentum (the _momentum form), buf is the element's momentum buffer,
 * read unless this is the first step, written. The CPU loops call the two
 * forms apiece, so that no per-element test of buf stands in a vector loop. */
CT_HOST_DEVICE CT_T CT_FN(ct_sgd_decayed)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g) {
  return c->use_wd ? CT_M(fma)(c->wd, p, g) : g;
}
CT_HOST_DEVICE CT_T CT_FN(ct_sgd_update_plain)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g) {
  return CT_M(fma)(c->neg_lr, CT_FN(ct_sgd_decayed)(c, p, g), p);
}
CT_HOST_DEVICE CT_T CT_FN(ct_sgd_update_momentum)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g,
                                                  CT_T *buf) {
  CT_T d = CT_FN(ct_sgd_decayed)(c, p, g);
  CT_T b = c->first ? d : CT_M(fma)(c->damp1, d, *buf * c->mom);
  *buf = b;
  d = c->nesterov ? CT_M(fma)(c->mom, b, d) : b;
  return CT_M(fma)(c->neg_lr, d, p);
}
/* Either, by buf (NULL without momentum). */
CT_HOST_DEVICE CT_T CT_FN(ct_sgd_update)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g,
                                         CT_T *buf) {
  return buf ? CT_FN(ct_sgd_update_momentum)(c, p, g, buf) : CT_FN(ct_sgd_update_plain)(c, p, g);
}

/* Adam / AdamW on one element: p's new value; m, v are the element's
 * moments, updated; amsgrad (*vmax: the largest v so far, nan wins) or not. */
CT_HOST_DEVICE CT_T CT_FN(ct_adam_step)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g, CT_T *m,
                                        CT_T *v, CT_T *vmax, bool amsgrad) {
  if (c->decoupled)
    p = p * c->decay;
  else if (c->use_wd)
    g = CT_M(fma)(c->wd, p, g);
  CT_T mi = CT_M(fma)(c->one_b1, g, *m * c->b1);
  CT_T vi = *v * c->b2 + c->one_b2 * g * g;
  *m = mi;
  *v = vi;
  CT_T s = vi;
  if (amsgrad) {
    CT_T mx = *vmax;
    s = (mx > vi || mx != mx) ? mx : vi;
    *vmax = s;
  }
  CT_T denom = CT_M(sqrt)(s) / c->bc2_sqrt + c->eps;
  return p + c->neg_step * mi / denom;
}
/* The same, amsgrad where vmax is not NULL. */
CT_HOST_DEVICE CT_T CT_FN(ct_adam_update)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g, CT_T *m,
                                          CT_T *v, CT_T *vmax) {
  return CT_FN(ct_adam_step)(c, p, g, m, v, vmax, vmax ? true : false);
}

/* RMSprop on one element: p's new value; sq (square_avg) updated, buf
 * (momentum_buffer) with momentum, ga (grad_avg) when centered. The flags are
 * constants in the CPU loops (one loop per combination, each vectorizes). */
CT_HOST_DEVICE CT_T CT_FN(ct_rmsprop_step)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g,
                                           CT_T *sq, CT_T *buf, CT_T *ga, bool momentum,
                                           bool centered) {
  if (c->use_wd) g = CT_M(fma)(c->wd, p, g);
  CT_T s = *sq * c->alpha + c->one_alpha * g * g;
  *sq = s;
  if (centered) {
    CT_T a = CT_M(fma)(c->one_alpha, g, *ga * c->alpha);
    *ga = a;
    s = s - a * a;
  }
  CT_T avg = CT_M(sqrt)(s) + c->eps;
  if (momentum) {
    CT_T b = *buf * c->mom + g / avg;
    *buf = b;
    return CT_M(fma)(c->neg_lr, b, p);
  }
  return p + c->neg_lr * g / avg;
}
/* The same, momentum where buf is not NULL, centered where ga is not NULL. */
CT_HOST_DEVICE CT_T CT_FN(ct_rmsprop_update)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g,
                                             CT_T *sq, CT_T *buf, CT_T *ga) {
  return CT_FN(ct_rmsprop_step)(c, p, g, sq, buf, ga, buf ? true : false, ga ? true : false);
}

/* Adagrad on one element: p's new value; sum (the sum of squares) updated. */
CT_HOST_DEVICE CT_T CT_FN(ct_adagrad_update)(const CT_TN(ct_optim_consts) * c, CT_T p, CT_T g,
                                             CT_T *sum) {
  if (c->use_wd) g = CT_M(fma)(c->wd, p, g);
  CT_T s = *sum + g * g;
  *sum = s;
  return p + c->neg_clr * g / (CT_M(sqrt)(s) + c->eps);
}
