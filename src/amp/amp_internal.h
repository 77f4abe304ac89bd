/* Autocast hooks for the ops that choose their own precision (ctensor/amp.h).
 *
 * An op of one of autocast's lists starts with
 *   ct__autocast_args ac;
 *   if (ct__autocast(&ac, CT__AUTOCAST_LOWER, x, w, bias)) {
 *     ct_tensor *r = ct_linear(ac.t[0], ac.t[1], ac.t[2]);   // same op, cast inputs
 *     ct__autocast_done(&ac);
 *     return r;
 *   }
 * The inner call finds nothing left to cast and runs as usual. */
#ifndef CT_AMP_INTERNAL_H
#define CT_AMP_INTERNAL_H

#include "core/internal.h"

typedef enum ct__autocast_list {
  CT__AUTOCAST_LOWER, /* run in the region's f16/bf16: matmul, linear, conv */
  CT__AUTOCAST_F32,   /* run in f32: softmax, norms, losses */
} ct__autocast_list;

#define CT__AUTOCAST_MAX_ARGS 3
typedef struct ct__autocast_args {
  const ct_tensor *t[CT__AUTOCAST_MAX_ARGS]; /* the inputs to run the op on */
  ct_tensor *owned[CT__AUTOCAST_MAX_ARGS];   /* casts made here (released by done) */
} ct__autocast_args;

/* Whether the calling thread is in an autocast region for the device type of
 * the first non-NULL input and some input (up to three, NULLs allowed) needs a
 * cast for `list`. Then a->t holds the inputs to use, casts recorded by
 * autograd; a failed cast leaves NULL there, so the op's NULL-in rule reports
 * it. False leaves *a untouched: the op runs on its own inputs. */
bool ct__autocast(ct__autocast_args *a, ct__autocast_list list, const ct_tensor *x0,
                  const ct_tensor *x1, const ct_tensor *x2);
void ct__autocast_done(ct__autocast_args *a);

/* Backward runs with autocast off, whatever region it is called in: its
 * formulas keep the dtypes the forward pass chose. suspend returns the state
 * to hand back to resume. */
unsigned ct__autocast_suspend(void);
void ct__autocast_resume(unsigned saved);

#endif /* CT_AMP_INTERNAL_H */
