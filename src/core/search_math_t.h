/* Binary search in a sorted row, once per element type (core/search_math.h
 * includes it with CT_T and CT_S). */

/* torch.searchsorted of v in row[0, n) (element i at row[i * stride]): the
 * first i with row[i] >= v (left), or with row[i] > v (right). The
 * comparisons and the halving are torch's (cus_lower_bound /
 * cus_upper_bound), so a nan (never >= nor >) gives the same answer: n for
 * a nan value. */
CT_HOST_DEVICE int64_t CT_FN(ct_searchsorted)(const CT_T *row, int64_t stride, int64_t n, CT_T v,
                                              bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    CT_T s = row[mid * stride];
    if (right ? !(s > v) : !(s >= v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The number of elements of the sorted row[0, n) (contiguous) that order
 * before v (upper: before or equal to v), in the total order of CT_LT (nan
 * after every number, nans equal): the rank of v in the row, as a merge
 * needs it. */
CT_HOST_DEVICE int64_t CT_FN(ct_sorted_rank)(const CT_T *row, int64_t n, CT_T v, bool upper) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    if (upper ? !CT_LT(v, row[mid]) : CT_LT(row[mid], v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}
