/* The optimizer updates, one element at a time: SGD (momentum, dampening,
 * nesterov, weight decay), Adam and AdamW (amsgrad), RMSprop (momentum,
 * centered) and Adagrad (lr decay). The one definition both
 * backends compile (backend/cpu/optim.c, backend/cuda/optim.cu).
 *
 * Each update follows torch.optim's single-tensor implementation op by op,
 * in the parameter's dtype with the scalars rounded to it as ATen does and a
 * fused multiply-add where ATen uses one (x.add_(y, alpha=a): every "+ a * y"
 * below but v's), so results match PyTorch to the last bit or so, and the CPU
 * and the GPU (optim.cu is compiled with -fmad=false) give the same bits:
 *   SGD (torch.optim.sgd._single_tensor_sgd):
 *     d = g + wd * p                                    (if wd != 0)
 *     buf = first ? d : buf * mom + (1 - dampening) * d (if mom != 0)
 *     d = nesterov ? d + mom * buf : buf
 *     p = p + (-lr) * d
 *   Adam / AdamW (torch.optim.adam._single_tensor_adam):
 *     AdamW: p = p * (1 - lr * wd);  Adam: g = g + wd * p (if wd != 0)
 *     m = m * b1 + (1 - b1) * g
 *     v = v * b2 + ((1 - b2) * g) * g
 *     vmax = max(vmax, v)                               (amsgrad; nan wins)
 *     denom = sqrt(amsgrad ? vmax : v) / sqrt(1 - b2^t) + eps
 *     p = p + ((-lr / (1 - b1^t)) * m) / denom
 *   RMSprop (torch.optim.rmsprop._single_tensor_rmsprop):
 *     g = g + wd * p                                    (if wd != 0)
 *     sq = sq * alpha + ((1 - alpha) * g) * g
 *     ga = ga * alpha + (1 - alpha) * g                 (centered; torch 2's
 *          lerp_(g, 1 - alpha) is the same up to an ulp)
 *     avg = sqrt(centered ? sq - ga * ga : sq) + eps
 *     momentum > 0: buf = buf * mom + g / avg;  p = p + (-lr) * buf
 *     else:         p = p + ((-lr) * g) / avg
 *   Adagrad (torch.optim.adagrad._single_tensor_adagrad):
 *     g = g + wd * p                                    (if wd != 0)
 *     sum = sum + g * g
 *     p = p + ((-lr / (1 + (t - 1) * lr_decay)) * g) / (sqrt(sum) + eps) */
#ifndef CT_CORE_OPTIM_MATH_H
#define CT_CORE_OPTIM_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

/* One optimizer update over many parameters (the backends' optimizer_step
 * slot; one launch on CUDA). */
typedef enum {
  CT_OPTIM_SGD,
  CT_OPTIM_ADAM,
  CT_OPTIM_ADAMW,
  CT_OPTIM_RMSPROP,
  CT_OPTIM_ADAGRAD
} ct_optim_kind;
typedef struct ct_optim_params {
  ct_optim_kind kind;
  double lr, momentum, dampening, weight_decay; /* SGD (weight_decay for all) */
  bool nesterov, first_step;                    /* SGD: first_step initializes the buffer */
  double beta1, beta2, eps;                     /* Adam(W) */
  bool amsgrad;
  int64_t step; /* Adam(W), Adagrad: the step number, from 1 */
  double alpha; /* RMSprop (also momentum, eps, weight_decay) */
  bool centered;
  double lr_decay; /* Adagrad (also eps, weight_decay) */
} ct_optim_params;

#define CT_TEMPLATE "core/optim_math_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

#endif /* CT_CORE_OPTIM_MATH_H */
