/* conv2d's forward and backward on oneDNN (conv_onednn.c), for the cases
 * where it measured faster than ctensor's own kernels (conv.c): f32, and bf16
 * on CPUs with AVX512-BF16. conv.c asks here first; false means "not done
 * here" (oneDNN missing or switched off, a case it loses or cannot compute, a
 * failure of the library), and conv.c computes it itself. */
#ifndef CT_BACKEND_CPU_CONV_ONEDNN_H
#define CT_BACKEND_CPU_CONV_ONEDNN_H

#include "backend/cpu/conv.h"

/* out = conv2d(x, w) + bias (bias may be NULL), all of x's dtype; g: the
 * geometry of the call (conv.c's geom_of). */
bool ct__conv_onednn_forward(const conv_geom *g, ct_tensor *out, const ct_tensor *x,
                             const ct_tensor *w, const ct_tensor *bias);

/* The gradients it can: grad_x (if not NULL) in *did_x, grad_w with grad_b
 * (grad_b may be NULL) in *did_w. What it did not is left to the caller. */
void ct__conv_onednn_backward(const conv_geom *g, ct_tensor *grad_x, ct_tensor *grad_w,
                              ct_tensor *grad_b, const ct_tensor *grad_out, const ct_tensor *x,
                              const ct_tensor *w, bool *did_x, bool *did_w);

/* How many convolution primitives (forward, grad_x, grad_w) oneDNN has run
 * in this process: the tests check which path computed their cases. */
uint64_t ct__conv_onednn_calls(void);

#endif /* CT_BACKEND_CPU_CONV_ONEDNN_H */
