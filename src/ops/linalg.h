/* Internal entry points of the linear-algebra ops (ops/linalg.c), for the
 * autograd layer and other op families. They return untracked new references
 * (or `out` itself when given) and record errors as the public functions do. */
#ifndef CT_OPS_LINALG_H
#define CT_OPS_LINALG_H

#include "core/internal.h"

/* torch.matmul semantics (see ct_matmul). out may be NULL (a new result) or
 * an existing tensor of the result shape (returned, no new reference). */
ct_tensor *ct__matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* x (..., in) @ w^T (w: (out, in)) + bias (broadcastable to (..., out), or
 * NULL): one GEMM accumulating onto the broadcast bias. */
ct_tensor *ct__linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias);

#endif /* CT_OPS_LINALG_H */
