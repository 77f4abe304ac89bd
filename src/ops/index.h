/* Internal entry points of the indexing, joining and splitting ops
 * (ops/index.c, ops/join.c), for the autograd layer and other op families.
 * Out-of-place forms return untracked new references; in-place forms return
 * their first argument (no new reference). Errors as the public functions. */
#ifndef CT_OPS_INDEX_H
#define CT_OPS_INDEX_H

#include "core/internal.h"

ct_tensor *ct__index_select(const ct_tensor *x, int dim, const ct_tensor *index);
ct_tensor *ct__gather(const ct_tensor *x, int dim, const ct_tensor *index);
/* gather, its errors named `op` (a static string): an op built on it, such as
 * cross_entropy, names itself in an index error, on CUDA at the next sync too. */
ct_tensor *ct__gather_as(const char *op, const ct_tensor *x, int dim, const ct_tensor *index);
/* x.scatter(dim, index, src) (add: scatter_add); in_place writes x itself. */
ct_tensor *ct__scatter(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src,
                       bool add, bool in_place);
ct_tensor *ct__masked_select(const ct_tensor *x, const ct_tensor *mask);
ct_tensor *ct__masked_fill(ct_tensor *x, const ct_tensor *mask, double value, bool in_place);
/* tril (upper false) / triu (upper true) of the last two dims. */
ct_tensor *ct__triangle(ct_tensor *x, int64_t k, bool upper, bool in_place);
ct_tensor *ct__one_hot(const ct_tensor *index, int64_t num_classes);
ct_tensor *ct__cat(ct_tensor *const *tensors, int n, int dim);
ct_tensor *ct__stack(ct_tensor *const *tensors, int n, int dim);

#endif /* CT_OPS_INDEX_H */
