/* Helpers shared by the CPU neural-network kernels (conv.c, pool.c, norm.c):
 * f16/bf16 operands are computed in f32 (converted into temporaries and the
 * outputs converted back). */
#ifndef CT_CPU_NN_UTIL_H
#define CT_CPU_NN_UTIL_H

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"

/* An f32 contiguous copy of a half tensor (copy = false: uninitialized, for
 * outputs); NULL passes through. Sets *fail on out of memory. */
static inline ct_tensor *ct__nn_f32(const ct_tensor *t, bool copy, bool *fail) {
  if (!t) return NULL;
  ct_tensor *r = ct__empty(t->shape, t->ndim, CT_F32, ct__device(t));
  if (!r || (copy && ct__cpu_copy(r, t) != CT_OK)) {
    ct__release(r);
    *fail = true;
    return NULL;
  }
  return r;
}

/* Copies an f32 temporary back into its half destination (both may be NULL)
 * and releases it. */
static inline ct_status ct__nn_back(ct_tensor *dst, ct_tensor *tmp, ct_status st) {
  if (st == CT_OK && dst && tmp) st = ct__cpu_copy(dst, tmp);
  ct__release(tmp);
  return st;
}

#endif /* CT_CPU_NN_UTIL_H */
