/* ctensor/amp.h: mixed precision, as torch.autocast and torch.amp.GradScaler.
 *
 *   ct_grad_scaler *scaler = ct_grad_scaler_new(NULL);
 *   for (...) {
 *     ct_optimizer_zero_grad(opt);
 *     ct_autocast_begin(CT_DEVICE_CUDA, CT_F16, true);
 *     ct_tensor *loss = ct_cross_entropy(ct_module_forward(net, x), y, NULL);
 *     ct_autocast_end();
 *     ct_backward(ct_grad_scaler_scale(scaler, loss), NULL, NULL);
 *     ct_grad_scaler_step(scaler, opt, NULL);  // skipped if a gradient is inf/NaN
 *     ct_grad_scaler_update(scaler);
 *   }
 *
 * Inside an autocast region for a device type, ops on tensors of that device
 * type choose their own precision, as in PyTorch:
 *   - in the region's dtype (f16 or bf16): matmul, mm, bmm, linear, conv2d;
 *   - in f32: softmax, log_softmax, layer_norm, batch_norm and the losses
 *     (cross_entropy, nll_loss, mse_loss, binary_cross_entropy_with_logits);
 *   - every other op runs in the dtype of its inputs (binary ops promote, so
 *     f16 + f32 gives f32).
 * Only floating inputs other than f64 are cast; integer targets and f64
 * tensors are left alone. The casts are recorded by autograd, so gradients
 * reach f32 parameters in f32 ("master weights"). Regions nest and are per
 * thread; begin(..., false) inside a region turns autocast off for its extent.
 *
 * f16 has a narrow range (largest finite 65504, smallest normal 6e-5): small
 * gradients flush to zero unless the loss is scaled up first. The grad scaler
 * multiplies the loss by a scale (2^16 at first), divides the gradients by it
 * before the optimizer step, skips the step when any gradient is inf or NaN
 * (and halves the scale), and doubles the scale after growth_interval steps
 * without overflow. bf16 has f32's range and needs no scaler. */
#ifndef CTENSOR_AMP_H
#define CTENSOR_AMP_H

#include "ctensor/api.h"
#include "ctensor/device.h"
#include "ctensor/optim.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Autocast -------------------------------------------------------------- */

/* Opens an autocast region for device_type (enabled) or a region where it is
 * off (!enabled). dtype is CT_F16 or CT_BF16 (torch's defaults: CT_F16 on
 * CUDA, CT_BF16 on the CPU); ignored when !enabled. Fails with CT_ERR_DTYPE
 * for another dtype, CT_ERR_ARG for an unknown device type, CT_ERR_STATE past
 * CT_AUTOCAST_MAX_DEPTH nested regions; a failed begin opens no region. */
#define CT_AUTOCAST_MAX_DEPTH 16
CT_API ct_status ct_autocast_begin(ct_device_type device_type, ct_dtype dtype, bool enabled);
/* Closes the innermost region (a no-op outside any region). */
CT_API void ct_autocast_end(void);
/* Whether ops on device_type tensors autocast here, and to which dtype. */
CT_API bool ct_autocast_is_enabled(ct_device_type device_type);
CT_API ct_dtype ct_autocast_dtype(ct_device_type device_type);
/* Whether autocast to `dtype` (f16 or bf16) makes this CPU's products
 * faster than f32: bf16 where the CPU has AVX512-BF16 (the library's bf16
 * GEMM; CTENSOR_CPU_BF16_GEMM=0 turns it off), f16 never (its products run
 * on f32 copies, and the casts only add time). When not, *why (if not NULL)
 * points at a static sentence saying why. */
CT_API bool ct_autocast_cpu_is_fast(ct_dtype dtype, const char **why);

/* ---- Dynamic loss scaling ------------------------------------------------- */

typedef struct ct_grad_scaler ct_grad_scaler;

/* A zeroed field means torch's default. */
typedef struct ct_grad_scaler_opts {
  double init_scale;       /* 0 means 65536 (2^16) */
  double growth_factor;    /* 0 means 2; must be > 1 */
  double backoff_factor;   /* 0 means 0.5; must be in (0, 1) */
  int64_t growth_interval; /* 0 means 2000 steps; must be > 0 */
  bool disabled;           /* scale() returns the loss as it is, step() steps */
} ct_grad_scaler_opts;

/* NULL opts: the defaults. Fails with CT_ERR_ARG for out-of-range options. */
CT_API ct_grad_scaler *ct_grad_scaler_new(const ct_grad_scaler_opts *opts);
CT_API void ct_grad_scaler_free(ct_grad_scaler *s); /* NULL is a no-op */

/* loss * scale, recorded by autograd (a new tensor; NULL on failure). */
CT_API ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *s, const ct_tensor *loss);
/* Divides the gradients of opt's parameters by the scale in place and notes
 * whether any is inf or NaN. Optional: call it before reading or clipping
 * gradients; step() calls it otherwise. Once per optimizer per update()
 * (CT_ERR_STATE otherwise). Reads one flag per device back to the host. */
CT_API ct_status ct_grad_scaler_unscale_(ct_grad_scaler *s, ct_optimizer *opt);
/* Unscales if not done yet, then steps opt unless a gradient was inf or NaN.
 * *stepped (may be NULL) says which. Once per optimizer per update(). */
CT_API ct_status ct_grad_scaler_step(ct_grad_scaler *s, ct_optimizer *opt, bool *stepped);
/* Ends the iteration: backs the scale off if any unscaled gradient was inf or
 * NaN, else counts a good step and grows the scale every growth_interval of
 * them. */
CT_API ct_status ct_grad_scaler_update(ct_grad_scaler *s);

/* The current scale (1 when disabled). */
CT_API double ct_grad_scaler_get_scale(const ct_grad_scaler *s);

/* The state a checkpoint needs to resume identically. */
typedef struct ct_grad_scaler_state {
  double scale;
  int64_t growth_tracker; /* good steps since the scale last changed */
} ct_grad_scaler_state;
CT_API ct_grad_scaler_state ct_grad_scaler_get_state(const ct_grad_scaler *s);
/* CT_ERR_ARG for a scale that is not finite and positive or a negative tracker. */
CT_API ct_status ct_grad_scaler_load_state(ct_grad_scaler *s, ct_grad_scaler_state state);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_AMP_H */
