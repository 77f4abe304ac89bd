/* Sort keys shared by the CPU and CUDA sorts (backend.h, `argsort`): a
 * value becomes an unsigned integer whose order is torch's order of the
 * values, so both backends sort integers (radix passes, bitonic compares)
 * and agree bit for bit. Floats: the sign bit flipped for positives, every
 * bit for negatives; -0 counts as +0 (equal, as torch compares them) and
 * every nan is above +inf (torch puts nan last in ascending order, first in
 * descending). Integers: the sign bit flipped. Descending order is the
 * complement of the key, so a stable ascending sort of the keys is a stable
 * descending sort of the values (equal values keep their order). */
#ifndef CT_CORE_SORT_MATH_H
#define CT_CORE_SORT_MATH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/host_device.h"

CT_HOST_DEVICE uint32_t ct_sort_key_f32(float v, bool descending) {
  uint32_t u;
  if (v != v) {
    u = 0xFFFFFFFFu;
  } else {
    if (v == 0) v = 0; /* -0 sorts as +0 */
    memcpy(&u, &v, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  return descending ? ~u : u;
}

CT_HOST_DEVICE uint64_t ct_sort_key_f64(double v, bool descending) {
  uint64_t u;
  if (v != v) {
    u = ~(uint64_t)0;
  } else {
    if (v == 0) v = 0;
    memcpy(&u, &v, sizeof u);
    u = (u >> 63) ? ~u : (u | ((uint64_t)1 << 63));
  }
  return descending ? ~u : u;
}

CT_HOST_DEVICE uint64_t ct_sort_key_i64(int64_t v, bool descending) {
  uint64_t u = (uint64_t)v ^ ((uint64_t)1 << 63);
  return descending ? ~u : u;
}

#endif /* CT_CORE_SORT_MATH_H */
