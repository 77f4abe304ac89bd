/* Matrix norms (torch.linalg.matrix_norm) over the last two dims, composed
 * from recorded ops, so their gradients are those of the pieces (torch's
 * too): 'fro' is the 2-norm of the elements (gradient 0 at 0), 1 / -1 the
 * max / min column sum of |a|, inf / -inf the max / min row sum, 'nuc' the
 * sum of the singular values and 2 / -2 the largest / smallest (through
 * ct_linalg_svd; their gradients at repeated singular values are those of
 * the svd). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

#include "ctensor/linalg.h"
#include "ctensor/ops.h"

typedef enum {
  NORM_FRO,
  NORM_NUC,
  NORM_2,
  NORM_M2,
  NORM_1,
  NORM_M1,
  NORM_INF,
  NORM_MINF
} norm_kind;

static bool parse(const char *ord, norm_kind *k) {
  static const struct {
    const char *name;
    norm_kind kind;
  } names[] = {{"fro", NORM_FRO}, {"nuc", NORM_NUC}, {"2", NORM_2},     {"-2", NORM_M2},
               {"1", NORM_1},     {"-1", NORM_M1},   {"inf", NORM_INF}, {"-inf", NORM_MINF}};
  for (size_t i = 0; ord && i < sizeof names / sizeof *names; i++)
    if (strcmp(ord, names[i].name) == 0) return *k = names[i].kind, true;
  return false;
}

ct_tensor *ct_linalg_matrix_norm(const ct_tensor *a, const char *ord, bool keepdim) {
  static const char op[] = "linalg_matrix_norm";
  if (!a) return NULL;
  norm_kind kind;
  if (!parse(ord, &kind))
    return ct__fail(CT_ERR_ARG,
                    "%s: ord must be one of \"fro\", \"nuc\", \"2\", \"-2\", \"1\", \"-1\", "
                    "\"inf\", \"-inf\", got %s%s%s",
                    op, ord ? "\"" : "", ord ? ord : "NULL", ord ? "\"" : "");
  char s[CT_SHAPE_STR_MAX];
  if (ct_ndim(a) < 2)
    return ct__fail(CT_ERR_SHAPE, "%s: expected a matrix or a batch of matrices, got shape %s", op,
                    ct__shape_str(a, s, sizeof s));
  ct_dtype dt = ct_dtype_of(a);
  if (dt != CT_F32 && dt != CT_F64)
    return ct__fail(CT_ERR_DTYPE, "%s: expected an f32 or f64 tensor, got %s", op,
                    ct_dtype_name(dt));
  ct_scope_begin();
  ct_tensor *r = NULL;
  switch (kind) {
    case NORM_FRO:
      r = ct_norm(a, 2, CT_DIMS(-2, -1));
      break;
    case NORM_NUC:
    case NORM_2:
    case NORM_M2: {
      ct_tensor *sv = ct_linalg_svd(a, false, NULL, NULL);
      r = kind == NORM_NUC ? ct_sum(sv, CT_DIMS(-1))
          : kind == NORM_2 ? ct_max(sv, CT_DIMS(-1))
                           : ct_min(sv, CT_DIMS(-1));
      break;
    }
    case NORM_1:
    case NORM_M1:
    case NORM_INF:
    case NORM_MINF: {
      bool cols = kind == NORM_1 || kind == NORM_M1, big = kind == NORM_1 || kind == NORM_INF;
      ct_tensor *sums = ct_sum(ct_abs(a), CT_DIMS(cols ? -2 : -1));
      r = big ? ct_max(sums, CT_DIMS(-1)) : ct_min(sums, CT_DIMS(-1));
      break;
    }
  }
  if (r && keepdim) r = ct_unsqueeze(ct_unsqueeze(r, -1), -1);
  if (r) ct_keep(r);
  ct_scope_end();
  return r;
}
