/* The optimizer updates, one element at a time: SGD (momentum, dampening,
 * nesterov, weight decay), Adam and AdamW (amsgrad). The one definition both
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
 *     p = p + ((-lr / (1 - b1^t)) * m) / denom */
#ifndef CT_CORE_OPTIM_MATH_H
#define CT_CORE_OPTIM_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

/* One optimizer update over many parameters (the backends' optimizer_step
 * slot; one launch on CUDA). */
typedef enum { CT_OPTIM_SGD, CT_OPTIM_ADAM, CT_OPTIM_ADAMW } ct_optim_kind;
typedef struct ct_optim_params {
  ct_optim_kind kind;
  double lr, momentum, dampening, weight_decay; /* SGD (weight_decay for all) */
  bool nesterov, first_step;                    /* SGD: first_step initializes the buffer */
  double beta1, beta2, eps;                     /* Adam(W) */
  bool amsgrad;
  int64_t step; /* Adam(W): the step number, from 1 */
} ct_optim_params;

#define CT_TEMPLATE "core/optim_math_t.h"
#include "core/for_float_types.h"
#undef CT_TEMPLATE

#endif /* CT_CORE_OPTIM_MATH_H */
