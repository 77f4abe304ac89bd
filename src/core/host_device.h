/* The one definition of how a shared formula is compiled: the inline headers
 * of src/core that both backends include (philox.h, convert.h, unary_math.h,
 * binary_math.h, optim_math.h, reduce_plan.h) declare their functions
 * CT_HOST_DEVICE, so that the same source text is a static inline function
 * for C and C++ compilers (the CPU backend, the CUDA emulator) and a
 * __host__ __device__ one for nvcc (the CUDA backend). Every such header
 * compiles as C11 and as C++17 (tests/internal_headers.c, .cpp).
 *
 * The template headers among them (*_t.h) are included once per element type
 * (core/for_float_types.h, for_int_types.h) with CT_T (the type), CT_S (its
 * suffix) and, for floating types, CT_MATH (the libm suffix: f for float,
 * nothing for double) defined; CT_FN(name) names the instance: name_f32 in
 * C; in C++ the suffix is dropped, so the instances are overloads of one
 * name that templates can call. */
#ifndef CT_CORE_HOST_DEVICE_H
#define CT_CORE_HOST_DEVICE_H

#if defined(__CUDACC__)
#define CT_HOST_DEVICE static __host__ __device__ __forceinline__
#else
#define CT_HOST_DEVICE static inline
#endif

/* constexpr in C++ (usable in templates' constant expressions), nothing in C. */
#ifdef __cplusplus
#define CT_CONSTEXPR constexpr
#else
#define CT_CONSTEXPR
#endif

#define CT_CAT_(a, b) a##b
#define CT_CAT(a, b) CT_CAT_(a, b)
#ifdef __cplusplus
#define CT_FN(name) name
#else
#define CT_FN(name) CT_CAT(name, CT_CAT(_, CT_S))
#endif
/* A type defined by a template keeps its suffix in both languages (C++
 * can't overload type names): CT_TN(ct_optim_consts) is ct_optim_consts_f32. */
#define CT_TN(name) CT_CAT(name, CT_CAT(_, CT_S))
/* libm function f for CT_T: CT_M(exp) is expf for float, exp for double. */
#define CT_M(f) CT_CAT(f, CT_MATH)

#endif /* CT_CORE_HOST_DEVICE_H */
