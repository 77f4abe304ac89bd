/* Template of the CPU reduction kernels (reduce_kernels.c), included once
 * per dtype (for_reduce_types.h): the loops of reduce_loops_t.h twice, for
 * the passes that fold the element's value (rrow_<S>, rcol_<S>: double for
 * floating dtypes, int64 else) and for the NZ_ passes, which fold "nonzero"
 * as int64 (rrow_nz_<S>, rcol_nz_<S>). */
#ifdef CT_IS_FLOAT
#define CT_ACC double
#define CT_FIELD d
#define CT_RINIT ct_rpass_init_f
#define CT_FOLD ct_rpass_fold_f
#define CT_MERGE ct_rpass_merge_f
#else
#define CT_ACC int64_t
#define CT_FIELD i
#define CT_RINIT ct_rpass_init_i
#define CT_FOLD fold_i
#define CT_MERGE ct_rpass_merge_i
#endif
#define CT_LOAD CT_CAT(ct__rload_, CT_S)
#define CT_NAME CT_S
#include "backend/cpu/reduce_loops_t.h"
#undef CT_ACC
#undef CT_FIELD
#undef CT_RINIT
#undef CT_FOLD
#undef CT_MERGE
#undef CT_LOAD
#undef CT_NAME

#define CT_ACC int64_t
#define CT_FIELD i
#define CT_RINIT ct_rpass_init_i
#define CT_FOLD fold_i
#define CT_MERGE ct_rpass_merge_i
#define CT_LOAD CT_CAT(nz_, CT_S)
#define CT_NAME CT_CAT(nz_, CT_S)
#include "backend/cpu/reduce_loops_t.h"
#undef CT_ACC
#undef CT_FIELD
#undef CT_RINIT
#undef CT_FOLD
#undef CT_MERGE
#undef CT_LOAD
#undef CT_NAME
