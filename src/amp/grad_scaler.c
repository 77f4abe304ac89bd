/* The dynamic loss scaler (torch.amp.GradScaler): scale the loss, unscale and
 * check the gradients, step or skip, then grow or back off the scale. */
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "core/internal.h"
#include "ctensor/amp.h"
#include "ctensor/autograd.h"
#include "ctensor/ops.h"

/* What happened to each optimizer since the last update(), as torch tracks. */
typedef enum { OPT_UNSCALED = 1, OPT_STEPPED = 2 } opt_stage;
#define MAX_OPTIMIZERS 16

struct ct_grad_scaler {
  ct_grad_scaler_opts o;
  double scale;
  int64_t growth_tracker;
  int n_seen; /* optimizers unscaled or stepped since update() */
  struct {
    const ct_optimizer *opt;
    unsigned stage; /* opt_stage bits */
    bool found_inf;
  } seen[MAX_OPTIMIZERS];
};

ct_grad_scaler *ct_grad_scaler_new(const ct_grad_scaler_opts *opts) {
  ct_grad_scaler_opts o = opts ? *opts : (ct_grad_scaler_opts){0};
  if (o.init_scale == 0) o.init_scale = 65536.0;
  if (o.growth_factor == 0) o.growth_factor = 2.0;
  if (o.backoff_factor == 0) o.backoff_factor = 0.5;
  if (o.growth_interval == 0) o.growth_interval = 2000;
  if (!(o.init_scale > 0) || !isfinite(o.init_scale))
    return ct__fail(CT_ERR_ARG, "grad_scaler: init_scale must be finite and positive, got %g",
                    o.init_scale);
  if (!(o.growth_factor > 1) || !isfinite(o.growth_factor))
    return ct__fail(CT_ERR_ARG, "grad_scaler: growth_factor must be > 1, got %g", o.growth_factor);
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1))
    return ct__fail(CT_ERR_ARG, "grad_scaler: backoff_factor must be in (0, 1), got %g",
                    o.backoff_factor);
  if (o.growth_interval < 0)
    return ct__fail(CT_ERR_ARG, "grad_scaler: growth_interval must be positive, got %lld",
                    (long long)o.growth_interval);
  ct_grad_scaler *s = ct__calloc(1, sizeof *s);
  if (!s) return ct__fail(CT_ERR_OOM, "grad_scaler: out of host memory");
  s->o = o;
  s->scale = o.disabled ? 1.0 : o.init_scale;
  return s;
}

void ct_grad_scaler_free(ct_grad_scaler *s) { free(s); }

ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, const ct_tensor *loss) {
  if (!loss) return NULL;
  if (!s) return ct__fail(CT_ERR_ARG, "grad_scaler.scale: scaler is NULL");
  return ct_mul_scalar(loss, s->scale);
}

/* The record of opt for this iteration, made on first use. */
static int record_of(ct_grad_scaler *s, const ct_optimizer *opt, const char *op) {
  for (int i = 0; i < s->n_seen; i++)
    if (s->seen[i].opt == opt) return i;
  if (s->n_seen == MAX_OPTIMIZERS) {
    ct__fail_status(CT_ERR_ARG, "grad_scaler.%s: more than %d optimizers between updates", op,
                    MAX_OPTIMIZERS);
    return -1;
  }
  s->seen[s->n_seen].opt = opt;
  s->seen[s->n_seen].stage = 0;
  s->seen[s->n_seen].found_inf = false;
  return s->n_seen++;
}

/* Unscales the n gradients of one device and sets *found_inf if one held an
 * inf or NaN: the contiguous ones in one backend call (amp_unscale: a fused
 * multi-tensor pass), any other with isfinite, all and mul_scalar_ (the same
 * products, bit for bit). One flag comes back to the host. */
static ct_status unscale_device(ct_tensor **grads, int n, double inv_scale, bool *found_inf) {
  const ct_backend *be = ct__backend_of(grads[0]);
  ct_tensor *found = ct_zeros(CT_SHAPE(1), &(ct_tensor_opts){.device = ct_device_of(grads[0])});
  if (!found) return ct_last_error();
  int nf = 0; /* the fused ones first */
  for (int i = 0; i < n && be->amp_unscale; i++)
    if (ct__is_contiguous(grads[i])) {
      ct_tensor *t = grads[nf];
      grads[nf++] = grads[i];
      grads[i] = t;
    }
  ct_status st = nf > 0 ? be->amp_unscale(grads, nf, inv_scale, found) : CT_OK;
  for (int i = 0; i < nf; i++) ct__bump_version(grads[i]);
  ct_tensor *all_ok = NULL;
  for (int i = nf; i < n && st == CT_OK; i++) {
    ct_tensor *ok = ct_all(ct_isfinite(grads[i]), NULL);
    all_ok = all_ok ? ct_logical_and(all_ok, ok) : ok;
    if (!all_ok || !ct_mul_scalar_(grads[i], inv_scale)) st = ct_last_error();
  }
  double v = 0;
  if (st == CT_OK && nf > 0 && (st = ct_item(found, &v)) == CT_OK) *found_inf |= v != 0;
  if (st == CT_OK && all_ok && (st = ct_item(all_ok, &v)) == CT_OK) *found_inf |= v == 0;
  return st;
}

/* Multiplies every gradient by 1/scale and sets *found_inf if one holds an inf
 * or NaN, one device at a time. */
static ct_status unscale_grads(ct_grad_scaler *s, ct_optimizer *opt, bool *found_inf) {
  int n = ct_optimizer_parameters(opt, NULL, 0);
  ct_tensor **params = ct__calloc((size_t)(n ? n : 1), sizeof *params);
  ct_tensor **grads = ct__calloc((size_t)(n ? n : 1), sizeof *grads);
  ct_tensor **group = ct__calloc((size_t)(n ? n : 1), sizeof *group);
  if (!params || !grads || !group) {
    free(params);
    free(grads);
    free(group);
    return ct__fail_status(CT_ERR_OOM, "grad_scaler.unscale_: out of host memory");
  }
  ct_optimizer_parameters(opt, params, n);
  int ng = 0;
  for (int i = 0; i < n; i++)
    if ((grads[ng] = ct_grad(params[i]))) ng++;
  *found_inf = false;
  ct_status st = CT_OK;
  ct_no_grad_begin();
  ct_scope_begin();
  for (int i = 0; i < ng && st == CT_OK; i++) {
    if (!grads[i]) continue; /* taken by an earlier device's group */
    ct_device d = ct_device_of(grads[i]);
    int m = 0;
    for (int j = i; j < ng; j++)
      if (grads[j] && ct_device_equal(ct_device_of(grads[j]), d))
        group[m++] = grads[j], grads[j] = NULL;
    st = unscale_device(group, m, 1.0 / s->scale, found_inf);
  }
  ct_scope_end();
  ct_no_grad_end();
  free(params);
  free(grads);
  free(group);
  return st;
}

ct_status ct_grad_scaler_unscale_(ct_grad_scaler *s, ct_optimizer *opt) {
  if (!s || !opt)
    return ct__fail_status(CT_ERR_ARG, "grad_scaler.unscale_: %s is NULL",
                           s ? "optimizer" : "scaler");
  if (s->o.disabled) return CT_OK;
  int r = record_of(s, opt, "unscale_");
  if (r < 0) return ct_last_error();
  if (s->seen[r].stage & OPT_UNSCALED)
    return ct__fail_status(
        CT_ERR_STATE,
        "grad_scaler.unscale_: already called on this optimizer since the last update()");
  if (s->seen[r].stage & OPT_STEPPED)
    return ct__fail_status(CT_ERR_STATE,
                           "grad_scaler.unscale_: called after step(); call update() first");
  bool found = false;
  ct_status st = unscale_grads(s, opt, &found);
  if (st != CT_OK) return st;
  s->seen[r].stage |= OPT_UNSCALED;
  s->seen[r].found_inf = found;
  return CT_OK;
}

ct_status ct_grad_scaler_step(ct_grad_scaler *s, ct_optimizer *opt, bool *stepped) {
  if (stepped) *stepped = false;
  if (!s || !opt)
    return ct__fail_status(CT_ERR_ARG, "grad_scaler.step: %s is NULL", s ? "optimizer" : "scaler");
  if (s->o.disabled) {
    ct_status st = ct_optimizer_step(opt);
    if (stepped) *stepped = st == CT_OK;
    return st;
  }
  int r = record_of(s, opt, "step");
  if (r < 0) return ct_last_error();
  if (s->seen[r].stage & OPT_STEPPED)
    return ct__fail_status(
        CT_ERR_STATE, "grad_scaler.step: already called on this optimizer since the last update()");
  if (!(s->seen[r].stage & OPT_UNSCALED)) {
    ct_status st = ct_grad_scaler_unscale_(s, opt);
    if (st != CT_OK) return st;
  }
  s->seen[r].stage |= OPT_STEPPED;
  if (s->seen[r].found_inf) return CT_OK; /* skipped: the gradients overflowed */
  ct_status st = ct_optimizer_step(opt);
  if (stepped) *stepped = st == CT_OK;
  return st;
}

ct_status ct_grad_scaler_update(ct_grad_scaler *s) {
  if (!s) return ct__fail_status(CT_ERR_ARG, "grad_scaler.update: scaler is NULL");
  if (s->o.disabled) return CT_OK;
  if (s->n_seen == 0)
    return ct__fail_status(CT_ERR_STATE,
                           "grad_scaler.update: no gradients were checked since the last update() "
                           "(call step() or unscale_() first)");
  bool found_inf = false;
  for (int i = 0; i < s->n_seen; i++) found_inf |= s->seen[i].found_inf;
  if (found_inf) {
    s->scale *= s->o.backoff_factor;
    s->growth_tracker = 0;
  } else if (++s->growth_tracker == s->o.growth_interval) {
    s->scale *= s->o.growth_factor;
    s->growth_tracker = 0;
  }
  s->n_seen = 0;
  return CT_OK;
}

double ct_grad_scaler_get_scale(const ct_grad_scaler *s) { return s ? s->scale : 1.0; }

ct_grad_scaler_state ct_grad_scaler_get_state(const ct_grad_scaler *s) {
  return s ? (ct_grad_scaler_state){s->scale, s->growth_tracker} : (ct_grad_scaler_state){1.0, 0};
}

ct_status ct_grad_scaler_load_state(ct_grad_scaler *s, ct_grad_scaler_state state) {
  if (!s) return ct__fail_status(CT_ERR_ARG, "grad_scaler.load_state: scaler is NULL");
  if (!(state.scale > 0) || !isfinite(state.scale) || state.growth_tracker < 0)
    return ct__fail_status(CT_ERR_ARG,
                           "grad_scaler.load_state: invalid state (scale %g, growth_tracker %lld)",
                           state.scale, (long long)state.growth_tracker);
  s->scale = state.scale;
  s->growth_tracker = state.growth_tracker;
  s->n_seen = 0;
  return CT_OK;
}
