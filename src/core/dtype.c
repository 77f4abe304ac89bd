/* The dtype traits table and PyTorch's type promotion. */
#include <string.h>

#include "core/internal.h"

typedef struct dtype_traits {
  const char *name;
  size_t size;
  bool is_floating;
  bool is_integral; /* integer, not bool */
  bool is_signed;
  int rank;         /* order within its category, for promotion */
} dtype_traits;

static const dtype_traits traits[] = {
    [CT_F32] = {"f32", 4, true, false, true, 2},
    [CT_F64] = {"f64", 8, true, false, true, 3},
    [CT_F16] = {"f16", 2, true, false, true, 1},
    [CT_BF16] = {"bf16", 2, true, false, true, 1},
    [CT_I8] = {"i8", 1, false, true, true, 1},
    [CT_U8] = {"u8", 1, false, true, false, 1},
    [CT_I16] = {"i16", 2, false, true, true, 2},
    [CT_I32] = {"i32", 4, false, true, true, 3},
    [CT_I64] = {"i64", 8, false, true, true, 4},
    [CT_BOOL] = {"bool", 1, false, false, false, 0},
};
_Static_assert(sizeof(traits) / sizeof(traits[0]) == CT_DTYPE_COUNT,
               "traits must describe every ct_dtype");

static bool valid(ct_dtype d) { return (unsigned)d < CT_DTYPE_COUNT; }

const char *ct_dtype_name(ct_dtype d) { return valid(d) ? traits[d].name : "invalid"; }
size_t ct_dtype_size(ct_dtype d) { return valid(d) ? traits[d].size : 0; }
bool ct_dtype_is_floating(ct_dtype d) { return valid(d) && traits[d].is_floating; }
bool ct_dtype_is_integral(ct_dtype d) { return valid(d) && traits[d].is_integral; }

bool ct_dtype_parse(const char *name, ct_dtype *out) {
  static const struct { const char *alias; ct_dtype d; } aliases[] = {
      {"float32", CT_F32}, {"float", CT_F32},   {"float64", CT_F64}, {"double", CT_F64},
      {"float16", CT_F16}, {"half", CT_F16},    {"bfloat16", CT_BF16}, {"int8", CT_I8},
      {"uint8", CT_U8},    {"int16", CT_I16},   {"short", CT_I16},   {"int32", CT_I32},
      {"int", CT_I32},     {"int64", CT_I64},   {"long", CT_I64},
  };
  if (!name || !out) return false;
  for (int d = 0; d < CT_DTYPE_COUNT; d++)
    if (strcmp(name, traits[d].name) == 0) return *out = (ct_dtype)d, true;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) return *out = aliases[i].d, true;
  return false;
}

ct_dtype ct_promote_types(ct_dtype a, ct_dtype b) {
  /* an invalid dtype promotes to the other (or stays): callers validate */
  if (!valid(a)) return b;
  if (!valid(b) || a == b) return a;
  const dtype_traits *ta = &traits[a], *tb = &traits[b];
  if (ta->is_floating || tb->is_floating) {
    if (ta->is_floating && tb->is_floating) {
      if (ta->rank == tb->rank) return CT_F32; /* f16 with bf16 */
      return ta->rank > tb->rank ? a : b;
    }
    return ta->is_floating ? a : b;
  }
  if (a == CT_BOOL) return b;
  if (b == CT_BOOL) return a;
  /* both integral */
  if (ta->is_signed == tb->is_signed) return ta->rank > tb->rank ? a : b;
  /* u8 with a signed type: the signed one if wider, else i16 */
  ct_dtype s = ta->is_signed ? a : b;
  return s == CT_I8 ? CT_I16 : s;
}

static int category(ct_dtype d) {
  return traits[d].is_floating ? 2 : traits[d].is_integral ? 1 : 0;
}

bool ct_can_cast(ct_dtype from, ct_dtype to) {
  if (!valid(from) || !valid(to)) return false;
  return category(from) <= category(to);
}
