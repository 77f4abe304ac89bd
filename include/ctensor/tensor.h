/* ctensor/tensor.h: the tensor handle, creation, views, lifetime, transfers.
 *
 * A tensor is a view (dtype, shape, strides in elements, offset) on a
 * reference-counted storage that lives on one device. Views share storage and
 * cost no copy. Every function returning a tensor returns a NEW reference the
 * caller owns (release it with ct_free), except in-place (`_`) and `_out`
 * functions, which return their target without a new reference.
 *
 *   ct_tensor *a = ct_arange(0, 6, 1, NULL);              // [0..5], f32, cpu
 *   ct_tensor *m = ct_reshape(a, CT_SHAPE(2, 3));          // a view
 *   ct_tensor *t = ct_transpose(m, 0, 1);                  // (3, 2), a view
 *   ct_print(t);
 *   ct_free(t); ct_free(m); ct_free(a);
 *
 * Scopes free the temporaries of a loop body: every tensor created between
 * ct_scope_begin() and ct_scope_end() is released at the end, unless ct_keep()
 * moved it to the enclosing scope (or, outside any scope, to the caller).
 *
 *   for (int epoch = 0; epoch < 1000; epoch++) {
 *     ct_scope_begin();
 *     ct_tensor *err = ct_sub(ct_matmul(X, W), y);
 *     ...
 *     ct_scope_end();   // frees every tensor made in the body
 *   }
 */
#ifndef CTENSOR_TENSOR_H
#define CTENSOR_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctensor/api.h"
#include "ctensor/device.h"
#include "ctensor/dtype.h"
#include "ctensor/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CT_MAX_DIMS 8

typedef struct ct_tensor ct_tensor;
typedef struct ct_generator ct_generator;

/* CT_SHAPE(2, 3) expands to the pair (const int64_t *shape, int ndim).
 * CT_SHAPE() is a scalar shape. C: a compound literal, which lives to the end
 * of the enclosing block. C++ (17 and later): a temporary (ct__shape, at the
 * end of this header), which lives to the end of the full expression: pass
 * CT_SHAPE(...) to the call directly, as in C. */
#ifndef __cplusplus
#define CT__NARGS_(_0, _1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define CT__NARGS(...) CT__NARGS_(0, ##__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CT_SHAPE(...) ((const int64_t[CT_MAX_DIMS]){__VA_ARGS__}), CT__NARGS(__VA_ARGS__)
#else
#define CT__NARGS(...) ct__nargs(__VA_ARGS__)
#define CT_SHAPE(...) ct__shape(__VA_ARGS__).dims, ct__nargs(__VA_ARGS__)
#endif

/* Options of creation functions; NULL or a zeroed struct means f32 on the CPU
 * (as PyTorch: creation goes to the CPU unless a device is named). */
typedef struct ct_tensor_opts {
  ct_dtype dtype;          /* default CT_F32 */
  ct_device device;        /* default the CPU */
  bool requires_grad;      /* make a leaf that records gradients */
  bool pin_memory;         /* CPU tensors: page-locked memory for fast GPU copies */
  ct_generator *generator; /* random creators: NULL = the default generator */
} ct_tensor_opts;

/* ---- Lifetime ---------------------------------------------------------- */

/* Drops one reference; the storage goes when its last view goes. NULL: no-op. */
CT_API void ct_free(ct_tensor *t);
/* Adds a reference and returns t (NULL-safe). */
CT_API ct_tensor *ct_retain(ct_tensor *t);
/* Opens a scope on this thread (scopes nest). CT_OK, or CT_ERR_OOM when the
 * scope stack cannot grow (possible only beyond 8 nested scopes): the scope
 * is then opened in name only; its tensors are released at the end of the
 * enclosing scope instead, and the matching ct_scope_end still closes it. */
CT_API ct_status ct_scope_begin(void);
/* Releases every tensor created since the matching ct_scope_begin and not kept. */
CT_API void ct_scope_end(void);
/* Moves t out of the current scope into the enclosing one (the caller owns it
 * outside any scope). Returns t. No-op for tensors not owned by this scope. */
CT_API ct_tensor *ct_keep(ct_tensor *t);

/* ---- Properties -------------------------------------------------------- */

CT_API ct_dtype ct_dtype_of(const ct_tensor *t);
CT_API ct_device ct_device_of(const ct_tensor *t);
CT_API int ct_ndim(const ct_tensor *t);
/* Size of dim d; negative d counts from the end. -1 on a bad dim (with error). */
CT_API int64_t ct_size(const ct_tensor *t, int d);
CT_API int64_t ct_stride(const ct_tensor *t, int d);
CT_API const int64_t *ct_shape(const ct_tensor *t);   /* ndim entries */
CT_API const int64_t *ct_strides(const ct_tensor *t); /* in elements */
CT_API int64_t ct_offset(const ct_tensor *t);         /* in elements */
CT_API int64_t ct_numel(const ct_tensor *t);
CT_API size_t ct_nbytes(const ct_tensor *t); /* numel * element size */
CT_API bool ct_is_contiguous(const ct_tensor *t);
/* Pointer to the first element of a CPU tensor (NULL with CT_ERR_DEVICE for a
 * GPU tensor). Honours the offset; respect the strides when reading. */
CT_API void *ct_data_ptr(const ct_tensor *t);
/* The version counter of t's storage: bumped by every in-place write. */
CT_API uint32_t ct_version(const ct_tensor *t);
/* Whether two tensors share storage. */
CT_API bool ct_same_storage(const ct_tensor *a, const ct_tensor *b);

/* The value of a one-element tensor as a double (synchronizes on a GPU). */
CT_API ct_status ct_item(const ct_tensor *t, double *out);
/* Copies the elements, in row-major order, into a host buffer of `nbytes`
 * bytes (at least numel * element size). Synchronizes on a GPU. */
CT_API ct_status ct_copy_to_host(const ct_tensor *t, void *dst, size_t nbytes);

/* ---- Creation ---------------------------------------------------------- */

CT_API ct_tensor *ct_empty(const int64_t *shape, int ndim, const ct_tensor_opts *opts);
CT_API ct_tensor *ct_zeros(const int64_t *shape, int ndim, const ct_tensor_opts *opts);
CT_API ct_tensor *ct_ones(const int64_t *shape, int ndim, const ct_tensor_opts *opts);
/* `value` must convert to the dtype without overflow, as ct_fill_ (ops.h)
 * says (torch.full raises too): no nan into an integer dtype, 300 into i8... */
CT_API ct_tensor *ct_full(const int64_t *shape, int ndim, double value, const ct_tensor_opts *opts);
/* A 0-d tensor holding `value` (checked as ct_full). */
CT_API ct_tensor *ct_scalar(double value, const ct_tensor_opts *opts);
/* [start, end) by step, as torch.arange: ceil((end - start) / step) elements.
 * The dtype is opts->dtype, f32 by default like every creator here (C has no
 * integer literals to infer i64 from, as torch.arange(5) does: pass
 * .dtype = CT_I64 for that). In an integer dtype start, end and step must be
 * integers (CT_ERR_ARG otherwise): torch's results for fractional ones depend
 * on the dtype (arange(0, 5.5) has 5 elements in int64 but 6 in int32), so
 * ctensor refuses them rather than copy that; the values are computed in i64,
 * exact beyond 2^53, and wrap in narrower dtypes as torch's. Bool is refused. */
CT_API ct_tensor *ct_arange(double start, double end, double step, const ct_tensor_opts *opts);
/* `steps` evenly spaced values from start to end inclusive, computed in f64
 * and converted (truncated for integer dtypes); start and end must fit the
 * dtype as ct_full's value, and in an integer dtype are converted to it first
 * (as torch: linspace(-100, 0.5, 3) in i32 runs from -100 to 0). */
CT_API ct_tensor *ct_linspace(double start, double end, int64_t steps, const ct_tensor_opts *opts);
/* n x m identity (m <= 0: square). */
CT_API ct_tensor *ct_eye(int64_t n, int64_t m, const ct_tensor_opts *opts);
/* Copies numel elements from a row-major host buffer. Their dtype is
 * opts->dtype (f32 by default); in C, ct_from_data is also a macro that reads
 * the element type from the pointer's C type, so that integer data is not
 * silently read as f32 (torch.tensor([1, 2]) is int64):
 *   int64_t v[] = {1, 2, 3};
 *   ct_from_data(v, CT_SHAPE(3), NULL);        // i64
 *   ct_from_data(v, CT_SHAPE(3), &(ct_tensor_opts){.device = gpu}); // i64 too
 *   ct_from_data(v, CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_F64}); // CT_ERR_DTYPE
 * Pointers to float, double, int8_t, uint8_t, int16_t, int32_t, int64_t and
 * bool (const or not) are recognized; with them opts->dtype must be that
 * dtype or CT_F32 (the zero value, meaning "the data's"). A void pointer (or
 * another type, such as uint16_t holding f16 bits) keeps opts->dtype. As the
 * first argument of a macro, a compound literal with commas needs its own
 * parentheses: ct_from_data(((int64_t[]){1, 2}), CT_SHAPE(2), NULL). */
CT_API ct_tensor *ct_from_data(const void *data, const int64_t *shape, int ndim,
                               const ct_tensor_opts *opts);
/* ct_from_data with the data's dtype given (-1: unknown, opts->dtype). */
CT_API ct_tensor *ct_from_data_typed(const void *data, int data_dtype, const int64_t *shape,
                                     int ndim, const ct_tensor_opts *opts);
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* The dtype of the elements a pointer points to, -1 when its type doesn't say. */
#define CT_DTYPE_OF_POINTER(p) \
  _Generic((p), float *: CT_F32, const float *: CT_F32, double *: CT_F64,                      \
           const double *: CT_F64, int8_t *: CT_I8, const int8_t *: CT_I8, uint8_t *: CT_U8,     \
           const uint8_t *: CT_U8, int16_t *: CT_I16, const int16_t *: CT_I16, int32_t *: CT_I32, \
           const int32_t *: CT_I32, int64_t *: CT_I64, const int64_t *: CT_I64, bool *: CT_BOOL, \
           const bool *: CT_BOOL, default: -1)
#define ct_from_data(data, ...) ct_from_data_typed((data), CT_DTYPE_OF_POINTER(data), __VA_ARGS__)
#endif
/* *_like: same shape; dtype and device of `t` unless opts is given. */
CT_API ct_tensor *ct_empty_like(const ct_tensor *t, const ct_tensor_opts *opts);
CT_API ct_tensor *ct_zeros_like(const ct_tensor *t, const ct_tensor_opts *opts);
CT_API ct_tensor *ct_ones_like(const ct_tensor *t, const ct_tensor_opts *opts);
CT_API ct_tensor *ct_full_like(const ct_tensor *t, double value, const ct_tensor_opts *opts);

/* ---- Views (no copy) --------------------------------------------------- */

/* A view with a new shape; one dim may be -1. Fails if the strides do not
 * allow a view (use ct_reshape). */
CT_API ct_tensor *ct_view(const ct_tensor *t, const int64_t *shape, int ndim);
/* A view when the strides allow one, else a contiguous copy. */
CT_API ct_tensor *ct_reshape(const ct_tensor *t, const int64_t *shape, int ndim);
CT_API ct_tensor *ct_permute(const ct_tensor *t, const int *dims, int ndim);
CT_API ct_tensor *ct_transpose(const ct_tensor *t, int dim0, int dim1);
/* Transpose of a matrix (ndim <= 2), as t.t(). */
CT_API ct_tensor *ct_t(const ct_tensor *t);
/* Elements start, start+step, ... < end along dim (negative start/end count
 * from the end and are clamped, as Python slices; step > 0). */
CT_API ct_tensor *ct_slice(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step);
/* The index-th entry along dim, removing dim (t[index] for dim 0). */
CT_API ct_tensor *ct_select(const ct_tensor *t, int dim, int64_t index);
/* Length `length` from `start` along dim. */
CT_API ct_tensor *ct_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length);
/* Broadcasts size-1 dims to `shape` (stride 0); -1 keeps a size. */
CT_API ct_tensor *ct_expand(const ct_tensor *t, const int64_t *shape, int ndim);
CT_API ct_tensor *ct_expand_as(const ct_tensor *t, const ct_tensor *other);
/* Removes all size-1 dims. */
CT_API ct_tensor *ct_squeeze(const ct_tensor *t);
/* Removes dim if its size is 1 (else returns a plain view). */
CT_API ct_tensor *ct_squeeze_dim(const ct_tensor *t, int dim);
CT_API ct_tensor *ct_unsqueeze(const ct_tensor *t, int dim);
/* Merges dims start_dim..end_dim (inclusive; negatives count from the end). */
CT_API ct_tensor *ct_flatten(const ct_tensor *t, int start_dim, int end_dim);
/* The diagonal of the last... of dims dim1, dim2 with offset (as torch.diagonal). */
CT_API ct_tensor *ct_diagonal(const ct_tensor *t, int64_t offset, int dim1, int dim2);
/* A plain alias (same view, new handle). */
CT_API ct_tensor *ct_alias(const ct_tensor *t);

/* ---- Copies, casts, transfers ----------------------------------------- */

/* t itself (a new reference) when already contiguous, else a contiguous copy. */
CT_API ct_tensor *ct_contiguous(const ct_tensor *t);
/* A contiguous copy with its own storage. */
CT_API ct_tensor *ct_clone(const ct_tensor *t);
/* Converts to dtype (a new reference to t when the dtype already matches). */
CT_API ct_tensor *ct_cast(const ct_tensor *t, ct_dtype dtype);

typedef struct ct_to_opts {
  bool non_blocking; /* host<->GPU copies from pinned memory return at once */
  bool copy;         /* always copy, even when already on the device */
} ct_to_opts;
/* The tensor on `device` (a new reference to t when already there and
 * opts->copy is false). The only way, with ct_copy_, to cross devices. */
CT_API ct_tensor *ct_to(const ct_tensor *t, ct_device device, const ct_to_opts *opts);
/* Copies src into dst (broadcasting src, casting dtype, across devices).
 * Returns dst, or NULL on error. */
CT_API ct_tensor *ct_copy_(ct_tensor *dst, const ct_tensor *src);
/* A CPU copy in page-locked memory, for fast and non-blocking copies to a GPU.
 * Fails with CT_ERR_UNAVAILABLE when no GPU is usable (as torch does). */
CT_API ct_tensor *ct_pin_memory(const ct_tensor *t);
CT_API bool ct_is_pinned(const ct_tensor *t);

/* ---- Printing ---------------------------------------------------------- */

/* PyTorch-like text: values (truncated with "..." for large tensors), then
 * shape, dtype and device. ct_to_string returns a malloc'd string (free()). */
CT_API char *ct_to_string(const ct_tensor *t);
CT_API ct_status ct_fprint(FILE *f, const ct_tensor *t);
CT_API ct_status ct_print(const ct_tensor *t);
/* "(2, 3)": the shape as text in a caller buffer; returns buf. */
CT_API char *ct_shape_format(const int64_t *shape, int ndim, char *buf, size_t size);

#ifdef __cplusplus
}
/* The C++ forms of CT_SHAPE and CT_DIMS (C++ has no compound literals):
 * each value converted as the C initializer would (to int64_t, int), more
 * than CT_MAX_DIMS values a compile error. */
template <typename... T>
constexpr int ct__nargs(T...) {
  static_assert(sizeof...(T) <= CT_MAX_DIMS, "more than CT_MAX_DIMS values");
  return (int)sizeof...(T);
}
struct ct__shape {
  int64_t dims[CT_MAX_DIMS];
  template <typename... T>
  constexpr ct__shape(T... d) : dims{static_cast<int64_t>(d)...} {
    static_assert(sizeof...(T) <= CT_MAX_DIMS, "CT_SHAPE: more than CT_MAX_DIMS dims");
  }
};
#endif
#endif /* CTENSOR_TENSOR_H */
