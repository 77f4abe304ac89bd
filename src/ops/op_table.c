/* The op tables (op_table.h): names and dtype rules of the unary, binary and
 * reduce ops. Constant data with no dependency, compiled into the core and
 * into the CUDA backend's shared object (whose kernels name their ops), so
 * that the core need not export it. */
#include "ops/op_table.h"

const ct_unary_info ct__unary_info[] = {
#define X(E, n, r, ...) [CT_UOP_##E] = {#n, CT_RULE_##r},
    CT_UNARY_OPS(X)
#undef X
};
_Static_assert(sizeof ct__unary_info / sizeof ct__unary_info[0] == CT_UOP_COUNT,
               "ct__unary_info must have one entry per unary op");

const ct_binary_info ct__binary_info[] = {
#define X(E, n, r, ...) [CT_BOP_##E] = {#n, CT_BRULE_##r},
    CT_BINARY_OPS(X)
#undef X
};
_Static_assert(sizeof ct__binary_info / sizeof ct__binary_info[0] == CT_BOP_COUNT,
               "ct__binary_info must have one entry per binary op");

const char *const ct__reduce_names[CT_ROP_COUNT] = {
#define X(E, n) [CT_ROP_##E] = #n,
    CT_REDUCE_OPS(X)
#undef X
};
#define X(E, n) +1
_Static_assert(0 CT_REDUCE_OPS(X) == CT_ROP_COUNT, "ct__reduce_names must name every reduce op");
#undef X
