/* ctensor/dtype.h: element types and PyTorch's type promotion.
 *
 * f16 and bf16 are stored natively (2 bytes) and computed in f32 on the CPU.
 * Promotion follows PyTorch: bool < integers < floating types; within a
 * category the wider type wins; u8 with a signed integer gives the next signed
 * type that holds both (u8+i8 -> i16); f16 with bf16 gives f32.
 *
 *   ct_promote_types(CT_I32, CT_F16) == CT_F16
 */
#ifndef CTENSOR_DTYPE_H
#define CTENSOR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#include "ctensor/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CT_F32 is 0 so that a zeroed options struct means the default dtype. */
typedef enum ct_dtype {
  CT_F32 = 0,
  CT_F64,
  CT_F16,
  CT_BF16,
  CT_I8,
  CT_U8,
  CT_I16,
  CT_I32,
  CT_I64,
  CT_BOOL,
  CT_DTYPE_COUNT
} ct_dtype;

/* "f32", "f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64", "bool". */
CT_API const char *ct_dtype_name(ct_dtype dtype);
/* Parses a name above (also "float32", "float", "int64", "long", "half", ...);
 * returns false for an unknown name or a NULL argument. */
CT_API bool ct_dtype_parse(const char *name, ct_dtype *out);
/* Bytes per element. */
CT_API size_t ct_dtype_size(ct_dtype dtype);
CT_API bool ct_dtype_is_floating(ct_dtype dtype);
/* True for i8..i64 and u8 (not bool). */
CT_API bool ct_dtype_is_integral(ct_dtype dtype);
/* The dtype of a binary operation between two tensors of these dtypes, as in
 * PyTorch (for tensors themselves, where 0-d operands count less, see
 * ct_result_type in ops.h). An invalid dtype gives the other one. */
CT_API ct_dtype ct_promote_types(ct_dtype a, ct_dtype b);
/* Whether a result of dtype `from` may be written into an output of dtype `to`
 * (PyTorch's rule: no float into integer, nothing non-bool into bool). */
CT_API bool ct_can_cast(ct_dtype from, ct_dtype to);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_DTYPE_H */
