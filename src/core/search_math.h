/* Searching sorted data, shared by the CPU and CUDA searchsorted kernels:
 * ct_searchsorted_f64 and ct_searchsorted_i64 (overloads of ct_searchsorted
 * in C++), and ct_sorted_rank_* for the merges of the sort unique uses. Values are searched as f64
 * (floating dtypes, converted exactly) or i64 (integers and bool), so every dtype has an exact
 * order. */
#ifndef CT_CORE_SEARCH_MATH_H
#define CT_CORE_SEARCH_MATH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

/* a < b with nan after every number, nans equal (sort order) */
#define CT_T double
#define CT_S f64
#define CT_LT(a, b) ((a) < (b) || ((b) != (b) && (a) == (a)))
#include "core/search_math_t.h"
#undef CT_T
#undef CT_S
#undef CT_LT

#define CT_T int64_t
#define CT_S i64
#define CT_LT(a, b) ((a) < (b))
#include "core/search_math_t.h"
#undef CT_T
#undef CT_S
#undef CT_LT

#endif /* CT_CORE_SEARCH_MATH_H */
