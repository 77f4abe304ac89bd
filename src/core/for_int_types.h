/* Instantiates a template header once per integer type: includes
 * CT_TEMPLATE (a quoted path) with CT_T = int8_t, uint8_t, int16_t, int32_t,
 * int64_t and, with CT_WITH_BOOL defined, bool (then CT_IS_BOOL is defined
 * too); CT_S (i8, u8, i16, i32, i64, b8), CT_DT (CT_I8 ...) and CT_UT (the
 * unsigned type arithmetic wraps through: at least unsigned int, so that
 * narrow types are not promoted to a signed int that overflows). Sign tests
 * are constant for u8 and bool, so -Wtype-limits (clang: its
 * tautological-compare family) is off here.
 *
 * nvcc gets the int64 instance only: CUDA kernels compute every integer
 * dtype in int64 and wrap on store. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wtautological-constant-out-of-range-compare"
#pragma clang diagnostic ignored "-Wtautological-unsigned-zero-compare"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#endif

#ifndef __CUDACC__
#define CT_T int8_t
#define CT_S i8
#define CT_DT CT_I8
#define CT_UT unsigned
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_UT

#define CT_T uint8_t
#define CT_S u8
#define CT_DT CT_U8
#define CT_UT unsigned
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_UT

#define CT_T int16_t
#define CT_S i16
#define CT_DT CT_I16
#define CT_UT unsigned
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_UT

#define CT_T int32_t
#define CT_S i32
#define CT_DT CT_I32
#define CT_UT uint32_t
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_UT
#endif

#define CT_T int64_t
#define CT_S i64
#define CT_DT CT_I64
#define CT_UT uint64_t
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_UT

#if defined(CT_WITH_BOOL) && !defined(__CUDACC__)
#define CT_T bool
#define CT_S b8
#define CT_DT CT_BOOL
#define CT_UT unsigned
#define CT_IS_BOOL
#include CT_TEMPLATE
#undef CT_T
#undef CT_S
#undef CT_DT
#undef CT_UT
#undef CT_IS_BOOL
#endif

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
