/* The elementwise op family's internal entry points, for the public wrappers
 * (elementwise.c, arith.c, compare.c) and for other families and autograd.
 *
 * All of them: check the inputs (NULL in -> NULL out keeping the first error;
 * one device; broadcastable shapes; dtypes), pick the result dtype by the op's
 * rule (op_table.h), cast/broadcast the inputs and call the backend slot.
 * `out` NULL: the result is a new, UNTRACKED reference (public wrappers pass
 * it through ct__track). `out` given (in place: out == an input; or an `_out`
 * argument): it must have the result shape, a dtype the result casts to
 * (ct_can_cast) and no internal overlap; it is written (through a temporary
 * when it overlaps an input other than exactly), its version bumped, and
 * returned without a new reference.
 *
 * Integer kernels report division by zero (floor_divide, remainder, fmod) and
 * negative integer powers as CT_ERR_ARG; elements already written stay so. */
#ifndef CT_OPS_ELEMENTWISE_H
#define CT_OPS_ELEMENTWISE_H

#include "ops/ops_internal.h"

/* out = op(x); p0, p1: the op's parameters (clamp: lo, hi; leaky_relu: slope). */
ct_tensor *ct__unary(ct_unary_op op, ct_tensor *out, const ct_tensor *x, double p0, double p1);
/* out = a op b with broadcasting and promotion. */
ct_tensor *ct__binary(ct_binary_op op, ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* out = a op s (reversed: s op a), with the scalar promotion rule below. */
ct_tensor *ct__binary_scalar(ct_binary_op op, ct_tensor *out, const ct_tensor *a, double s,
                             bool reversed);
/* out = a + alpha * b (alpha must be integral for integer results). */
ct_tensor *ct__add_scaled(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, double alpha);
/* out = cond ? a : b, broadcasting all three; cond nonzero means true. */
ct_tensor *ct__where(ct_tensor *out, const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);

/* The dtype two tensor operands promote to, with PyTorch's rule for 0-d
 * operands (ct_result_type in ops.h). */
ct_dtype ct__result_type(const ct_tensor *a, const ct_tensor *b);
/* Result dtype rules, exposed for autograd and other families. */
ct_dtype ct__binary_result_dtype(ct_binary_op op, ct_dtype a, ct_dtype b);
/* Dtype of a tensor of dtype t combined with the number s (PyTorch's rule for
 * Python scalars): floating t keeps t; a non-integral (or non-finite) s with
 * an integer/bool t gives f32; an integral s with a bool t gives i64. */
ct_dtype ct__scalar_dtype(ct_dtype t, double s);

/* ---- Shared by the op-layer files of the family ------------------------- */

/* Whether writing `out` while reading `in` (broadcast to out's shape) is
 * unsafe elementwise: they share memory other than element for element. */
bool ct__ew_overlaps(const ct_tensor *out, const ct_tensor *in);
/* The tensor a kernel writes: a fresh one when out is NULL; else as
 * ct__result_for, plus a fresh temporary when out overlaps one of ins[]
 * unsafely (ct__finish_out then copies it into out). */
ct_tensor *ct__ew_result(const char *op, ct_tensor *out, const int64_t *shape, int ndim,
                         ct_dtype dtype, ct_device device, const ct_tensor *const *ins, int nins);
/* `in` cast to dtype and broadcast to res's shape: `in` itself when nothing
 * is needed, else a temporary returned in *tmp too (release it). NULL on error. */
const ct_tensor *ct__ew_operand(const ct_tensor *in, ct_dtype dtype, const ct_tensor *res,
                                ct_tensor **tmp);
/* Broadcasts two shapes into (out, *out_ndim), else records CT_ERR_SHAPE
 * "op: shapes (3, 4) and (5,) cannot be broadcast" and returns false. */
bool ct__ew_broadcast(const char *op, const int64_t *a, int na, const int64_t *b, int nb,
                      int64_t *out, int *out_ndim);
/* Sets an error for an `_out` call given a NULL out (keeping an earlier error:
 * NULL in, NULL out) and returns false; true if out is given. */
bool ct__ew_need_out(const char *op, const ct_tensor *out);

#endif /* CT_OPS_ELEMENTWISE_H */
