/* Shared by the module core (module.c), the built-in modules
 * (modules_builtin.c) and PyTorch's default initializations (init.c). */
#ifndef CT_NN_MODULE_INTERNAL_H
#define CT_NN_MODULE_INTERNAL_H

#include "core/internal.h"

/* A built-in module: like ct_module_new, but ct_module_self() hides `impl`
 * (built-ins keep their configuration there; it is freed with vtable->destroy). */
ct_module *ct__module_new_builtin(const ct_module_vtable *vtable, void *impl);
/* The configuration of a built-in module (its `self`). */
void *ct__module_impl(const ct_module *m);

/* The module's vtable (identifies built-in types). */
const ct_module_vtable *ct__module_vtable(const ct_module *m);
/* Children in registration order (Sequential's forward). */
int ct__module_n_children(const ct_module *m);
ct_module *ct__module_child_at(const ct_module *m, int i);

/* m's own parameter `name` (no dots) or NULL: built-in forwards read their
 * parameters here, so that ct_module_tie_parameter reaches them. */
ct_tensor *ct__module_param(const ct_module *m, const char *name);

/* Module options with defaults filled in (f32, CPU, default generator);
 * false with CT_ERR_DTYPE naming `what` for a non-floating dtype. */
bool ct__module_opts(const char *what, const ct_module_opts *opts, ct_module_opts *out);

/* ---- init.c: new parameters initialized as torch.nn.init does ---------- */

/* Bound of torch's kaiming_uniform_(w, a=sqrt(5)) for a weight with `fan_in`
 * inputs: gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)), i.e.
 * 1/sqrt(fan_in); 0 for fan_in 0. */
double ct__kaiming_uniform_bound(int64_t fan_in);
/* Bound of the default bias init: 1/sqrt(fan_in) (0 for fan_in 0). */
double ct__bias_bound(int64_t fan_in);
/* A new tensor of shape (opts' dtype and device) ~ U(-bound, bound). */
ct_tensor *ct__init_uniform(const int64_t *shape, int ndim, double bound, const ct_module_opts *o);
/* A new tensor ~ N(mean, std). */
ct_tensor *ct__init_normal(const int64_t *shape, int ndim, double mean, double std,
                           const ct_module_opts *o);
/* A new tensor filled with value, of `dtype` on opts' device. */
ct_tensor *ct__init_full(const int64_t *shape, int ndim, double value, ct_dtype dtype,
                         const ct_module_opts *o);

#endif /* CT_NN_MODULE_INTERNAL_H */
