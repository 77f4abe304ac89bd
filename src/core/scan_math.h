/* The combine step of cumulative sums and products, shared by the CPU and
 * CUDA scans (backend.h, `cumulative`): floats accumulate in double, integers
 * in i64 with two's-complement wrap-around (computed unsigned: signed
 * overflow is undefined in C, and torch wraps). */
#ifndef CT_CORE_SCAN_MATH_H
#define CT_CORE_SCAN_MATH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/host_device.h"

CT_HOST_DEVICE double ct_scan_combine_f(bool prod, double a, double b) {
  return prod ? a * b : a + b;
}

CT_HOST_DEVICE int64_t ct_scan_combine_i(bool prod, int64_t a, int64_t b) {
  uint64_t r = prod ? (uint64_t)a * (uint64_t)b : (uint64_t)a + (uint64_t)b;
  return (int64_t)r;
}

/* The identity of the combine: 0 for sums, 1 for products. */
CT_HOST_DEVICE int64_t ct_scan_identity(bool prod) { return prod ? 1 : 0; }

#endif /* CT_CORE_SCAN_MATH_H */
