/* Part of core/binary_math.h's templates for any element type CT_T (CT_S;
 * included by binary_math_t.h and binary_int_t.h): the comparisons and
 * logical ops of CT_BINARY_COMPARE_OPS, ct_bc_<op>(x, y), bool. A nan
 * compares unequal to everything, as IEEE. */

CT_HOST_DEVICE bool CT_FN(ct_bc_eq)(CT_T x, CT_T y) { return x == y; }
CT_HOST_DEVICE bool CT_FN(ct_bc_ne)(CT_T x, CT_T y) { return x != y; }
CT_HOST_DEVICE bool CT_FN(ct_bc_lt)(CT_T x, CT_T y) { return x < y; }
CT_HOST_DEVICE bool CT_FN(ct_bc_le)(CT_T x, CT_T y) { return x <= y; }
CT_HOST_DEVICE bool CT_FN(ct_bc_gt)(CT_T x, CT_T y) { return x > y; }
CT_HOST_DEVICE bool CT_FN(ct_bc_ge)(CT_T x, CT_T y) { return x >= y; }
CT_HOST_DEVICE bool CT_FN(ct_bc_logical_and)(CT_T x, CT_T y) { return x != 0 && y != 0; }
CT_HOST_DEVICE bool CT_FN(ct_bc_logical_or)(CT_T x, CT_T y) { return x != 0 || y != 0; }
CT_HOST_DEVICE bool CT_FN(ct_bc_logical_xor)(CT_T x, CT_T y) { return (x != 0) != (y != 0); }
