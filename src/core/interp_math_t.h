/* The linear-interpolation formulas of one axis in one compute type
 * (core/interp_math.h includes this with CT_T and CT_S). */

/* Output o of a linear axis reads inputs *i0 and *i1 (i0 + 1, or i0 itself at
 * the last input) with weights 1 - l and l; returns l. torch's
 * area_pixel_compute_source_index (align_corners: scale * o; else
 * scale * (o + 0.5) - 0.5, clamped at 0) and guard_index_and_lambda. */
CT_HOST_DEVICE CT_T CT_TN(ct_interp_linear)(const ct_interp_axis *a, int64_t o, int64_t *i0,
                                            int64_t *i1) {
  CT_T s = (CT_T)a->scale;
  CT_T real = a->align_corners ? s * (CT_T)o : s * ((CT_T)o + (CT_T)0.5) - (CT_T)0.5;
  if (real < 0) real = 0;
  int64_t i = (int64_t)real;
  if (i > a->n_in - 1) i = a->n_in - 1;
  CT_T l = real - (CT_T)i;
  l = l < 0 ? 0 : l > 1 ? 1 : l;
  *i0 = i;
  *i1 = i + (i < a->n_in - 1 ? 1 : 0);
  return l;
}

/* The lowest input output o reads (its only one in the nearest modes);
 * nondecreasing in o. */
CT_HOST_DEVICE int64_t CT_TN(ct_interp_low)(const ct_interp_axis *a, int64_t o) {
  if (a->kind != CT_INTERP_KIND_LINEAR) return ct_interp_nearest(a, o);
  int64_t i0, i1;
  (void)CT_TN(ct_interp_linear)(a, o, &i0, &i1);
  return i0;
}

/* The weight of input j in output o (0 when o does not read j). */
CT_HOST_DEVICE CT_T CT_TN(ct_interp_weight)(const ct_interp_axis *a, int64_t o, int64_t j) {
  if (a->kind != CT_INTERP_KIND_LINEAR) return ct_interp_nearest(a, o) == j ? (CT_T)1 : (CT_T)0;
  int64_t i0, i1;
  CT_T l = CT_TN(ct_interp_linear)(a, o, &i0, &i1);
  return (i0 == j ? (CT_T)1 - l : (CT_T)0) + (i1 == j ? l : (CT_T)0);
}

/* The first output whose lowest input is >= j (n_out if none): a binary
 * search over the nondecreasing ct_interp_low. The outputs that read input j
 * are [first_out(j), first_out(j + 1)) in the nearest modes and
 * [first_out(j - 1), first_out(j + 1)) in the linear one (an output reads
 * its lowest input and the next). */
CT_HOST_DEVICE int64_t CT_TN(ct_interp_first_out)(const ct_interp_axis *a, int64_t j) {
  int64_t lo = 0, hi = a->n_out;
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    if (CT_TN(ct_interp_low)(a, mid) < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}
