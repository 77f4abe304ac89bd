/* Searching sorted data, shared by the CPU and CUDA searchsorted kernels:
 * ct_searchsorted_f64 and ct_searchsorted_i64 (overloads of ct_searchsorted
 * in C++). Values are searched as f64 (floating dtypes, converted exactly) or
 * i64 (integers and bool), so every dtype has an exact order. */
#ifndef CT_CORE_SEARCH_MATH_H
#define CT_CORE_SEARCH_MATH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

#define CT_T double
#define CT_S f64
#include "core/search_math_t.h"
#undef CT_T
#undef CT_S

#define CT_T int64_t
#define CT_S i64
#include "core/search_math_t.h"
#undef CT_T
#undef CT_S

#endif /* CT_CORE_SEARCH_MATH_H */
