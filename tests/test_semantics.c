/* PyTorch's semantics where ctensor used to differ, and values that used to
 * come out silently wrong: each test names the torch behaviour it pins down
 * (checked with torch 1.13; the headers document each rule). */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

static ct_tensor_opts on(ct_dtype dtype) { return ct_test_opts(dtype); }

/* An i64 above 2^53 has no exact double: printing went through one. */
CT_TEST(print_int64_exactly) {
  int64_t v[4] = {9007199254740993, INT64_MAX, INT64_MIN, -9007199254740993};
  ct_tensor_opts o = on(CT_I64);
  char *s = ct_to_string(ct_from_data(v, CT_SHAPE(4), &o));
  CHECK_OK(s);
  if (!s) return;
  CHECK_MSG(strstr(s, "9007199254740993,") && strstr(s, "9223372036854775807") &&
                strstr(s, "-9223372036854775808") && strstr(s, "-9007199254740993]"),
            "got %s", s);
  free(s);
  s = ct_to_string(ct_full(CT_SHAPE(), 4611686018427387905.0, &o)); /* 2^62 + 1 as a double: 2^62 */
  CHECK(s && strstr(s, "tensor(4611686018427387904,"));
  free(s);
}

/* torch.full / fill_ / masked_fill raise "value cannot be converted to type
 * ... without overflow" instead of wrapping or storing nan as 0. */
CT_TEST(fills_refuse_values_their_dtype_cannot_hold) {
  ct_tensor_opts i8 = on(CT_I8), u8 = on(CT_U8), i32 = on(CT_I32), i64 = on(CT_I64);
  ct_tensor_opts f16 = on(CT_F16), f32 = on(CT_F32), b = on(CT_BOOL);
  CHECK_ERR_MSG(ct_full(CT_SHAPE(2), 300, &i8), CT_ERR_ARG, "without overflow");
  CHECK_ERR_MSG(ct_full(CT_SHAPE(2), -129, &i8), CT_ERR_ARG, "i8");
  CHECK_ERR(ct_full(CT_SHAPE(2), 127.5, &i8), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), NAN, &i32), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), INFINITY, &i32), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), 9223372036854775808.0, &i64), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), 1e6, &f16), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), 65520, &f16), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), 1e300, &f32), CT_ERR_ARG);
  CHECK_ERR(ct_scalar(1e300, &f32), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), -0.5, &u8), CT_ERR_ARG);
  CHECK_ERR(ct_full(CT_SHAPE(2), -256, &u8), CT_ERR_ARG);
  /* what torch takes: fractions truncate, u8 wraps integral -255..-1, bool
   * takes anything, floats take nan and infinities */
  CHECK_CLOSE(ct_full(CT_SHAPE(2), 126.9, &i8), ((double[]){126, 126}), 0, 0);
  CHECK_CLOSE(ct_full(CT_SHAPE(2), -1, &u8), ((double[]){255, 255}), 0, 0);
  CHECK_CLOSE(ct_full(CT_SHAPE(2), -128, &i8), ((double[]){-128, -128}), 0, 0);
  CHECK_CLOSE(ct_full(CT_SHAPE(1), -9223372036854775808.0, &i64),
              ((double[]){-9223372036854775808.0}), 0, 0);
  CHECK_CLOSE(ct_full(CT_SHAPE(2), NAN, &b), ((double[]){1, 1}), 0, 0);
  CHECK_CLOSE(ct_full(CT_SHAPE(2), INFINITY, &f16), ((double[]){INFINITY, INFINITY}), 0, 0);
  CHECK_CLOSE(ct_full(CT_SHAPE(1), 65504, &f16), ((double[]){65504}), 0, 0);
  /* fill_ and masked_fill: same rule, and nothing written on refusal */
  ct_tensor *t = ct_zeros(CT_SHAPE(3), &i8);
  CHECK_ERR(ct_fill_(t, 1000), CT_ERR_ARG);
  CHECK_ERR(ct_fill_(t, NAN), CT_ERR_ARG);
  CHECK_CLOSE(t, ((double[]){0, 0, 0}), 0, 0);
  ct_tensor *mask = ct_gt_scalar(ct_arange(0, 3, 1, &f32), 0.5);
  CHECK_ERR(ct_masked_fill(t, mask, 200), CT_ERR_ARG);
  CHECK_ERR(ct_masked_fill_(t, mask, -INFINITY), CT_ERR_ARG);
  CHECK_CLOSE(ct_masked_fill(t, mask, -7.9), ((double[]){0, -7, -7}), 0, 0);
  CHECK_ERR(ct_where_scalar(mask, t, 1000), CT_ERR_ARG); /* torch.where(c, i8, 1000) raises */
  CHECK(ct_zero_(t) == t);
}

/* torch's fill_ may write an expanded view (filling is idempotent); other
 * in-place ops on one refuse (more than one element refers to one location). */
CT_TEST(fill_writes_expanded_views) {
  ct_tensor_opts f32 = on(CT_F32);
  ct_tensor *base = ct_zeros(CT_SHAPE(2, 1), &f32);
  ct_tensor *e = ct_expand(base, CT_SHAPE(2, 3));
  CHECK(ct_fill_(e, 4) == e);
  CHECK_CLOSE(base, ((double[]){4, 4}), 0, 0);
  CHECK_CLOSE(e, ((double[]){4, 4, 4, 4, 4, 4}), 0, 0);
  CHECK(ct_zero_(ct_expand(ct_select(base, 0, 1), CT_SHAPE(5))) != NULL);
  CHECK_CLOSE(base, ((double[]){4, 0}), 0, 0);
  CHECK_ERR(ct_add_scalar_(e, 1), CT_ERR_ARG);
  CHECK_ERR(ct_masked_fill_(e, ct_gt_scalar(e, 0), 1), CT_ERR_ARG);
}

/* torch.result_type(dimensioned of row dtype, 0-d of column dtype), from
 * torch 1.13: a 0-d operand raises the result only from a higher category. */
CT_TEST(zero_dim_operands_in_type_promotion) {
  static const ct_dtype D[CT_DTYPE_COUNT] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I8,
                                             CT_U8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
  /* columns in the order of D */
  static const char *const want[CT_DTYPE_COUNT][CT_DTYPE_COUNT] = {
      {"f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "f32"},
      {"f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64", "f64"},
      {"f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16", "f16"},
      {"bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16", "bf16"},
      {"f32", "f64", "f16", "bf16", "i8", "i8", "i8", "i8", "i8", "i8"},
      {"f32", "f64", "f16", "bf16", "u8", "u8", "u8", "u8", "u8", "u8"},
      {"f32", "f64", "f16", "bf16", "i16", "i16", "i16", "i16", "i16", "i16"},
      {"f32", "f64", "f16", "bf16", "i32", "i32", "i32", "i32", "i32", "i32"},
      {"f32", "f64", "f16", "bf16", "i64", "i64", "i64", "i64", "i64", "i64"},
      {"f32", "f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64", "bool"},
  };
  for (int i = 0; i < CT_DTYPE_COUNT; i++) {
    for (int j = 0; j < CT_DTYPE_COUNT; j++) {
      ct_tensor_opts oi = on(D[i]), oj = on(D[j]);
      ct_tensor *dim = ct_ones(CT_SHAPE(2), &oi), *zero = ct_ones(CT_SHAPE(), &oj);
      ct_tensor *empty = ct_ones(CT_SHAPE(0), &oi); /* size 0 still counts as dimensioned */
      CHECK_MSG(strcmp(ct_dtype_name(ct_result_type(dim, zero)), want[i][j]) == 0 &&
                    ct_result_type(zero, dim) == ct_result_type(dim, zero) &&
                    ct_result_type(empty, zero) == ct_result_type(dim, zero),
                "result_type(%s, 0-d %s) = %s, torch: %s", ct_dtype_name(D[i]), ct_dtype_name(D[j]),
                ct_dtype_name(ct_result_type(dim, zero)), want[i][j]);
      /* two 0-d operands, two dimensioned ones: the plain promotion */
      ct_tensor *zi = ct_ones(CT_SHAPE(), &oi), *dj = ct_ones(CT_SHAPE(3), &oj);
      CHECK(ct_result_type(zi, zero) == ct_promote_types(D[i], D[j]));
      CHECK(ct_result_type(dim, ct_ones(CT_SHAPE(1), &oj)) == ct_promote_types(D[i], D[j]));
      (void)dj;
    }
  }
  /* the ops follow it */
  ct_tensor_opts i16 = on(CT_I16), i32 = on(CT_I32), f32 = on(CT_F32), f64 = on(CT_F64);
  ct_tensor *a = ct_full(CT_SHAPE(2), 300, &i16);
  ct_tensor *m = ct_mul(a, ct_scalar(200, &i32)); /* i16: 60000 wraps as torch's does */
  CHECK(m && ct_dtype_of(m) == CT_I16);
  CHECK_CLOSE(m, ((double[]){-5536, -5536}), 0, 0);
  ct_tensor *x = ct_full(CT_SHAPE(2), 0.1, &f32);
  ct_tensor *y = ct_add(x, ct_scalar(0.2, &f64));
  CHECK(y && ct_dtype_of(y) == CT_F32);
  ct_tensor *z = ct_sub(ct_full(CT_SHAPE(2), 3, &i32), ct_scalar(0.5, &f64));
  CHECK(z && ct_dtype_of(z) == CT_F64);
  CHECK_CLOSE(z, ((double[]){2.5, 2.5}), 0, 0);
  CHECK(ct_dtype_of(ct_lt(a, ct_scalar(1.5, &f64))) == CT_BOOL);
  ct_tensor *w = ct_where(ct_gt_scalar(x, 0), x, ct_scalar(2, &f64));
  CHECK(w && ct_dtype_of(w) == CT_F32);
  /* in place: the result type decides what may be written */
  CHECK(ct_add_(a, ct_scalar(1, &i32)) == a);
  CHECK_ERR(ct_add_(a, ct_scalar(1.5, &f32)), CT_ERR_DTYPE);
}

/* torch raises for any subtraction with a bool operand. */
CT_TEST(bool_subtraction) {
  ct_tensor_opts b = on(CT_BOOL), i32 = on(CT_I32);
  ct_tensor *t = ct_ones(CT_SHAPE(2), &b), *i = ct_ones(CT_SHAPE(2), &i32);
  CHECK_ERR_MSG(ct_sub(i, t), CT_ERR_DTYPE, "bool");
  CHECK_ERR_MSG(ct_sub(t, i), CT_ERR_DTYPE, "bool");
  CHECK_ERR(ct_sub(t, t), CT_ERR_DTYPE);
  CHECK_ERR(ct_sub_scalar(t, 1), CT_ERR_DTYPE);
  CHECK_ERR(ct_sub_scalar(t, 1.5), CT_ERR_DTYPE);
  CHECK_ERR(ct_rsub_scalar(t, 1), CT_ERR_DTYPE);
  CHECK_ERR(ct_sub_(i, t), CT_ERR_DTYPE);
  CHECK_OK(ct_add(i, t)); /* other arithmetic with a bool operand is fine */
  CHECK_OK(ct_mul(t, i));
}

/* torch.clamp: a nan bound makes every element nan (also for an integer
 * tensor, which a float bound promotes to f32); integral bounds must fit an
 * integer dtype and convert as torch converts them. */
CT_TEST(clamp_bounds) {
  ct_tensor_opts f32 = on(CT_F32), i32 = on(CT_I32), u8 = on(CT_U8);
  ct_tensor *x = ct_from_data(((float[]){-1, 0.5f, 3, NAN}), CT_SHAPE(4), &f32);
  CHECK_CLOSE(ct_clamp(x, NAN, 1), ((double[]){NAN, NAN, NAN, NAN}), 0, 0);
  CHECK_CLOSE(ct_clamp(x, 0, NAN), ((double[]){NAN, NAN, NAN, NAN}), 0, 0);
  CHECK_CLOSE(ct_clamp(x, -INFINITY, 1), ((double[]){-1, 0.5, 1, NAN}), 0, 0);
  ct_tensor *i = ct_from_data(((int32_t[]){-5, 2, 9}), CT_SHAPE(3), &i32);
  ct_tensor *ci = ct_clamp(i, NAN, 3);
  CHECK(ci && ct_dtype_of(ci) == CT_F32);
  CHECK_CLOSE(ci, ((double[]){NAN, NAN, NAN}), 0, 0);
  CHECK_ERR(ct_clamp_(i, NAN, 3), CT_ERR_DTYPE); /* f32 can't be written into i32 */
  CHECK_CLOSE(i, ((double[]){-5, 2, 9}), 0, 0);
  ct_tensor *xc = ct_clone(x);
  CHECK(ct_clamp_(xc, 0, NAN) == xc);
  CHECK_CLOSE(xc, ((double[]){NAN, NAN, NAN, NAN}), 0, 0);
  /* u8 takes -1 as 255, so clamp(-1, 1) is min(max(x, 255), 1) = 1 */
  ct_tensor *b = ct_from_data(((uint8_t[]){1, 2}), CT_SHAPE(2), &u8);
  CHECK_CLOSE(ct_clamp(b, -1, 1), ((double[]){1, 1}), 0, 0);
  CHECK_ERR(ct_clamp(b, -256, 1), CT_ERR_ARG);
  /* the gradient through a nan bound is 0 (x >= nan is false), as torch */
  ct_tensor *g = ct_requires_grad_(
      ct_from_data(((double[]){1, 2}), CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_F64}), true);
  ct_tensor *tg = ct_to(g, ct_test_device(), NULL);
  CHECK_STATUS_OK(ct_backward(ct_sum(ct_clamp(tg, NAN, 5), NULL), NULL, NULL));
  CHECK_CLOSE(ct_grad(g), ((double[]){0, 0}), 0, 0);
}

/* torch.arange with fractional arguments in an integer dtype gives results
 * that depend on the dtype: ctensor refuses them; integral ones are exact.
 * linspace converts its endpoints with the fill check. */
CT_TEST(integer_arange_and_linspace) {
  ct_tensor_opts i64 = on(CT_I64), i32 = on(CT_I32), i8 = on(CT_I8), f32 = on(CT_F32);
  CHECK_ERR_MSG(ct_arange(0, 5.5, 1, &i64), CT_ERR_ARG, "integers");
  CHECK_ERR(ct_arange(0.9, 5, 1, &i32), CT_ERR_ARG);
  CHECK_ERR(ct_arange(0, 5, 0.5, &i64), CT_ERR_ARG);
  CHECK_ERR(ct_arange(0, 1e19, 1, &i64), CT_ERR_ARG);
  CHECK_CLOSE(ct_arange(5, 0, -2, &i64), ((double[]){5, 3, 1}), 0, 0);
  CHECK_CLOSE(ct_arange(-3, 3, 3, &i32), ((double[]){-3, 0}), 0, 0);
  CHECK_CLOSE(ct_arange(0, 300, 100, &i8), ((double[]){0, 100, -56}), 0, 0); /* wraps, as torch */
  CHECK_ERR(ct_arange(0, 2, 1, &(ct_tensor_opts){.dtype = CT_BOOL}), CT_ERR_DTYPE);
  CHECK_SHAPE(ct_arange(0, 5.5, 1, &f32), 6); /* floating: [0, 1, ..., 5] */
  int64_t big = (int64_t)1 << 53; /* big + 1 has no double: the values are computed in i64 */
  ct_tensor *ab = ct_arange((double)big, (double)big + 4, 1, &i64);
  CHECK_SHAPE(ab, 4);
  int64_t got[4] = {0};
  CHECK_STATUS_OK(ct_copy_to_host(ab, got, sizeof got));
  CHECK(got[0] == big && got[1] == big + 1 && got[2] == big + 2 && got[3] == big + 3);
  CHECK_CLOSE(ct_linspace(0, 10, 4, &i64), ((double[]){0, 3, 6, 10}), 0, 0);
  CHECK_CLOSE(ct_linspace(-1.5, 1.5, 3, &i64), ((double[]){-1, 0, 1}), 0, 0);
  CHECK_ERR_MSG(ct_linspace(0, 1000, 3, &i8), CT_ERR_ARG, "overflow");
  CHECK_ERR(ct_linspace(NAN, 1, 3, &i32), CT_ERR_ARG);
  CHECK_ERR(ct_linspace(0, 1, 3, &(ct_tensor_opts){.dtype = CT_BOOL}), CT_ERR_DTYPE);
}

/* torch.randint's dtype is int64 unless one is given: options that only name
 * a device must not turn the integers into floats. */
CT_TEST(randint_default_dtype) {
  ct_tensor *r = ct_randint(0, 10, CT_SHAPE(4), &(ct_tensor_opts){.device = ct_test_device()});
  CHECK(r && ct_dtype_of(r) == CT_I64);
  CHECK(ct_dtype_of(ct_randint(0, 10, CT_SHAPE(4), NULL)) == CT_I64);
  ct_tensor_opts i16 = on(CT_I16), f64 = on(CT_F64);
  CHECK(ct_dtype_of(ct_randint(-5, 5, CT_SHAPE(4), &i16)) == CT_I16);
  CHECK(ct_dtype_of(ct_randint(-5, 5, CT_SHAPE(4), &f64)) == CT_F64);
}

/* torch.tensor([1, 2]) is int64: in C, ct_from_data reads the element type
 * from the pointer's type; a contradicting dtype is refused. */
CT_TEST(from_data_reads_the_pointer_type) {
  int64_t v64[3] = {1, 2, 3};
  int32_t v32[2] = {-4, 5};
  uint8_t vu8[2] = {7, 255};
  bool vb[2] = {true, false};
  double vd[2] = {0.5, -1.25};
  ct_tensor_opts dev = {.device = ct_test_device()};
  ct_tensor *a = ct_from_data(v64, CT_SHAPE(3), NULL);
  CHECK(a && ct_dtype_of(a) == CT_I64);
  CHECK_CLOSE(a, ((double[]){1, 2, 3}), 0, 0);
  ct_tensor *b = ct_from_data(v32, CT_SHAPE(2), &dev); /* zero dtype: the data's */
  CHECK(b && ct_dtype_of(b) == CT_I32 && ct_device_of(b).type == ct_test_device().type);
  CHECK_CLOSE(b, ((double[]){-4, 5}), 0, 0);
  CHECK(ct_dtype_of(ct_from_data(vu8, CT_SHAPE(2), NULL)) == CT_U8);
  CHECK(ct_dtype_of(ct_from_data(vb, CT_SHAPE(2), NULL)) == CT_BOOL);
  const double *cd = vd;
  CHECK(ct_dtype_of(ct_from_data(cd, CT_SHAPE(2), NULL)) == CT_F64);
  CHECK_CLOSE(ct_from_data(((float[]){1.5f, 2}), CT_SHAPE(2), NULL), ((double[]){1.5, 2}), 0, 0);
  CHECK_ERR_MSG(ct_from_data(v64, CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_F64}), CT_ERR_DTYPE,
                "i64");
  CHECK_ERR(ct_from_data(vd, CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I64}), CT_ERR_DTYPE);
  /* a void pointer keeps opts->dtype (f32 by default): bytes are reinterpreted */
  const void *raw = v32;
  ct_tensor *r = ct_from_data(raw, CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I32});
  CHECK_CLOSE(r, ((double[]){-4, 5}), 0, 0);
  CHECK(ct_dtype_of(ct_from_data(raw, CT_SHAPE(2), NULL)) == CT_F32);
  /* the function itself, as C++ and function pointers see it */
  ct_tensor *(*fn)(const void *, const int64_t *, int, const ct_tensor_opts *) = ct_from_data;
  CHECK(ct_dtype_of(fn(v64, CT_SHAPE(3), NULL)) == CT_F32);
}

/* Tensor-with-number ops convert the number as torch does: comparisons in
 * the tensor's floating dtype, maximum/minimum as torch.clamp's checked
 * conversion (u8 takes -1 as 255), and an integer division by a zero number
 * raises only when there is an element to divide. */
CT_TEST(scalar_conversions_as_torch) {
  ct_tensor_opts f32 = on(CT_F32), f16 = on(CT_F16), i32 = on(CT_I32), u8 = on(CT_U8);
  ct_tensor *x = ct_full(CT_SHAPE(2), 0.1, &f32); /* 0.1f */
  CHECK_CLOSE(ct_eq_scalar(x, 0.1), ((double[]){1, 1}), 0, 0);
  CHECK_CLOSE(ct_lt_scalar(x, 0.1), ((double[]){0, 0}), 0, 0);
  ct_tensor *h = ct_full(CT_SHAPE(1), INFINITY, &f16); /* 1e10 is inf in f16 */
  CHECK_CLOSE(ct_ne_scalar(h, 1e10), ((double[]){0}), 0, 0);
  ct_tensor *xi = ct_full(CT_SHAPE(2), 3, &i32);
  CHECK_ERR_MSG(ct_maximum_scalar(xi, 1e10), CT_ERR_ARG, "maximum");
  CHECK_ERR_MSG(ct_minimum_scalar_(xi, -1e10), CT_ERR_ARG, "minimum");
  CHECK_CLOSE(xi, ((double[]){3, 3}), 0, 0); /* refused before anything is written */
  CHECK_CLOSE(ct_maximum_scalar(ct_full(CT_SHAPE(1), 3, &u8), -1), ((double[]){255}), 0, 0);
  CHECK_ERR(ct_floor_divide_scalar(xi, 0), CT_ERR_ARG);
  CHECK_SHAPE(ct_remainder_scalar(ct_zeros(CT_SHAPE(2, 0), &i32), 0), 2, 0);
}

/* ---- Dims of a 0-d tensor ---------------------------------------------------------- */

/* Op k of the table on x (0-d) at dim d (two dims: flatten's start or end). */
static ct_tensor *dim_op(int k, const ct_tensor *x, int d) {
  ct_tensor *idx =
      ct_zeros(NULL, 0, &(ct_tensor_opts){.dtype = CT_I64, .device = ct_test_device()});
  ct_tensor *i1 = ct_reshape(idx, CT_SHAPE(1)), *pieces[2], *ix = NULL;
  switch (k) {
    case 0:
      return ct_sum(x, CT_DIMS(d));
    case 1:
      return ct_mean(x, CT_DIMS(d));
    case 2:
      return ct_logsumexp(x, CT_DIMS(d));
    case 3:
      return ct_cumsum(x, d);
    case 4:
      return ct_cumprod(x, d);
    case 5:
      return ct_softmax(x, d);
    case 6:
      return ct_log_softmax(x, d);
    case 7:
      return ct_unsqueeze(x, d);
    case 8:
      return ct_squeeze_dim(x, d);
    case 9:
      return ct_flatten(x, d, -1);
    case 10:
      return ct_flatten(x, 0, d);
    case 11:
      return ct_repeat_interleave(x, 2, d);
    case 12:
      return ct_sort(x, d, false, &ix);
    case 13:
      return ct_argsort(x, d, true);
    case 14:
      return ct_topk(x, 1, d, true, true, &ix);
    case 15:
      return ct_kthvalue(x, 1, d, false, &ix);
    case 16:
      return ct_argmax(x, d, false);
    case 17:
      return ct_argmin(x, d, true);
    case 18:
      return ct_max_dim(x, d, false, &ix);
    case 19:
      return ct_min_dim(x, d, false, &ix);
    case 20:
      return ct_index_select(x, d, i1);
    case 21:
      return ct_gather(x, d, idx);
    case 22:
      return ct_stack((ct_tensor *[]){(ct_tensor *)x, (ct_tensor *)x}, 2, d);
    case 23:
      return ct_transpose(x, d, 0);
    case 24:
      return ct_scatter_add(x, d, idx, x);
    /* below: never on a 0-d tensor, as torch */
    case 25:
      return ct_narrow(x, d, 0, 1);
    case 26:
      return ct_select(x, d, 0);
    case 27:
      return ct_slice(x, d, 0, 1, 1);
    case 28:
      return ct_split(x, 1, d, pieces, 2) >= 0 ? pieces[0] : NULL;
    case 29:
      return ct_chunk(x, 1, d, pieces, 2) >= 0 ? pieces[0] : NULL;
    default:
      return ct_cat((ct_tensor *[]){(ct_tensor *)x, (ct_tensor *)x}, 2, d);
  }
}

/* A 0-d tensor takes dim -1 or 0 (as a 1-d one), no other; narrow, select,
 * slice, split, chunk and cat refuse it at every dim (torch 1.13). */
CT_TEST(dims_of_a_0d_tensor) {
  ct_tensor *x =
      ct_full(NULL, 0, 2.0, &(ct_tensor_opts){.dtype = CT_F32, .device = ct_test_device()});
  for (int k = 0; k <= 30; k++)
    for (int d = -3; d <= 2; d++) {
      ct_clear_error();
      ct_tensor *r = dim_op(k, x, d);
      bool want = k <= 24 && (d == -1 || d == 0);
      WITH_CONTEXT(CHECK(want ? r != NULL : r == NULL && ct_last_error() != CT_OK),
                   "op %d, dim %d: %s", k, d, r ? "accepted" : ct_last_error_message());
    }
  ct_clear_error();
}

/* ---- Empty tensors beside a huge dim ----------------------------------------------- */

/* (0, 2^60, 4): 0 elements, but its contiguous strides times the element
 * size (8 bytes) overflow 64 bits. Elementwise ops,
 * copies, casts and reductions give empty results or the identity, with no
 * overflow (checked under UBSan in CI); a result that cannot exist is an
 * error. */
CT_TEST(empty_tensors_beside_a_huge_dim) {
  ct_tensor_opts o = ct_test_opts(CT_F64);
  int64_t big = (int64_t)1 << 60;
  ct_tensor *x = ct_zeros(CT_SHAPE(0, big, 4), &o);
  CHECK_OK(x);
  if (!x) return;
  ct_tensor *r[6] = {ct_add(x, x),
                     ct_exp(x),
                     ct_mul_scalar(ct_transpose(x, 0, 2), 2.0),
                     ct_contiguous(ct_transpose(x, 1, 2)),
                     ct_cast(x, CT_F32),
                     ct_max(x, CT_DIMS(2))};
  for (int i = 0; i < 6; i++) {
    WITH_CONTEXT(CHECK_OK(r[i]), "op %d", i);
    if (r[i]) CHECK(ct_numel(r[i]) == 0);
  }
  ct_tensor *s = ct_sum(x, CT_DIMS(0, 1)), *all = ct_sum(x, NULL), *m = ct_sum(x, CT_DIMS(1));
  CHECK_OK(s);
  if (s) CHECK_CLOSE(s, ((double[]){0, 0, 0, 0}), 0, 0);
  CHECK_OK(all);
  if (all) CHECK_CLOSE(all, ((double[]){0}), 0, 0);
  CHECK_OK(m);
  if (m) CHECK_SHAPE(m, 0, 4);
  ct_clear_error();
  CHECK(ct_sum(x, CT_DIMS(0)) == NULL && ct_last_error() != CT_OK); /* (2^60, 4): no memory */
  ct_clear_error();
}

/* The value of a one-element result, NAN when there is none. */
static double value_of(const ct_tensor *t) {
  double v = NAN;
  if (!t || ct_numel(t) != 1 || ct_item(t, &v) != CT_OK) return NAN;
  return v;
}

/* A result that must exist and hold no element. */
#define CHECK_EMPTY(r, ...) WITH_CONTEXT(CHECK((r) != NULL && ct_numel(r) == 0), __VA_ARGS__)

/* (2^31, 0, 2^31) and its permutations, (0, 2^62) and its transpose: beside
 * the 0, the products of the other sizes (a reduction's outputs times its
 * reduced count, a line's length) reach 2^62, and in bytes a stride, or a
 * stride times a size of a permuted layout, overflows 64 bits. ((2^40, 0, 2^40),
 * whose size product itself overflows, is refused.) Every reduction over
 * dims that keep the 0 gives an empty result, over all dims the identity;
 * argmax/argmin, max_dim, softmax, log_softmax, cumsum, sort, copies and
 * elementwise ops of every layout give empty results; nothing overflows
 * (the sanitizer build runs it on the CPU and the emulated GPU under
 * UBSan). */
CT_TEST(empty_tensors_beside_two_huge_dims) {
  ct_tensor_opts o = ct_test_opts(CT_F64);
  int64_t big = (int64_t)1 << 31, too_big = (int64_t)1 << 40;
  CHECK_ERR(ct_zeros(CT_SHAPE(too_big, 0, too_big), &o), CT_ERR_SHAPE);
  ct_tensor *x = ct_zeros(CT_SHAPE(big, 0, big), &o);
  CHECK_OK(x);
  if (!x) return;
  const ct_tensor *views[4] = {x, ct_transpose(x, 0, 1), ct_permute(x, (int[]){2, 0, 1}, 3),
                               ct_transpose(x, 0, 2)};
  for (int v = 0; v < 4; v++) {
    const ct_tensor *t = views[v];
    WITH_CONTEXT(CHECK_OK(t), "view %d", v);
    if (!t) continue;
    int z = 0; /* the dim of size 0 */
    while (ct_shape(t)[z] != 0) z++;
    int a = z == 0 ? 1 : 0, b = 3 - z - a; /* the huge dims */
    const ct_reduce_opts *keeps_z[3] = {CT_DIMS(a), CT_DIMS(b), CT_DIMS(a, b)};
    for (int k = 0; k < 3; k++) {
      const ct_reduce_opts *r = keeps_z[k];
      ct_tensor *res[10] = {ct_sum(t, r), ct_mean(t, r),      ct_prod(t, r),   ct_max(t, r),
                            ct_min(t, r), ct_logsumexp(t, r), ct_var(t, r, 1), ct_norm(t, 2, r),
                            ct_all(t, r), ct_any(t, r)};
      for (int i = 0; i < 10; i++) CHECK_EMPTY(res[i], "view %d, dims %d, reduction %d", v, k, i);
    }
    double sum = value_of(ct_sum(t, NULL)), prod = value_of(ct_prod(t, NULL)),
           lse = value_of(ct_logsumexp(t, CT_DIMS(0, 1, 2))), all = value_of(ct_all(t, NULL)),
           any = value_of(ct_any(t, NULL)), mean = value_of(ct_mean(t, NULL)),
           norm = value_of(ct_norm(t, 2, NULL));
    WITH_CONTEXT(CHECK(sum == 0 && prod == 1 && lse == -INFINITY && all == 1 && any == 0 &&
                       isnan(mean) && norm == 0),
                 "view %d: sum %g prod %g logsumexp %g all %g any %g mean %g norm %g", v, sum, prod,
                 lse, all, any, mean, norm);
    for (int d = 0; d < 3; d++) {
      ct_tensor *idx = NULL;
      if (d != z) {
        CHECK_EMPTY(ct_argmax(t, d, false), "view %d, argmax dim %d", v, d);
        CHECK_EMPTY(ct_argmin(t, d, true), "view %d, argmin dim %d", v, d);
        ct_tensor *m = ct_max_dim(t, d, false, &idx);
        CHECK_EMPTY(m, "view %d, max_dim %d", v, d);
        CHECK_EMPTY(idx, "view %d, max_dim %d indices", v, d);
      }
      CHECK_EMPTY(ct_softmax(t, d), "view %d, softmax dim %d", v, d);
      CHECK_EMPTY(ct_log_softmax(t, d), "view %d, log_softmax dim %d", v, d);
      CHECK_EMPTY(ct_cumsum(t, d), "view %d, cumsum dim %d", v, d);
      CHECK_EMPTY(ct_sort(t, d, false, &idx), "view %d, sort dim %d", v, d);
    }
    CHECK_EMPTY(ct_contiguous(t), "view %d, contiguous", v);
    CHECK_EMPTY(ct_add(t, t), "view %d, add", v);
    CHECK_EMPTY(ct_cast(t, CT_F64), "view %d, cast", v);
  }

  /* (0, 2^62) f32 and its transpose: 2^62 elements' bytes overflow */
  ct_tensor *y = ct_zeros(CT_SHAPE(0, (int64_t)1 << 62), &o);
  CHECK_OK(y);
  if (!y) return;
  const ct_tensor *ys[2] = {y, ct_transpose(y, 0, 1)};
  for (int v = 0; v < 2; v++) {
    const ct_tensor *t = ys[v];
    int huge = v == 0 ? 1 : 0;
    CHECK_EMPTY(ct_sum(t, CT_DIMS(huge)), "(0, 2^62) view %d, sum", v);
    CHECK_EMPTY(ct_max(t, CT_DIMS(huge)), "(0, 2^62) view %d, max", v);
    CHECK_EMPTY(ct_argmax(t, huge, false), "(0, 2^62) view %d, argmax", v);
    CHECK_EMPTY(ct_softmax(t, huge), "(0, 2^62) view %d, softmax", v);
    CHECK_EMPTY(ct_cumsum(t, 1 - huge), "(0, 2^62) view %d, cumsum", v);
    CHECK_EMPTY(ct_contiguous(t), "(0, 2^62) view %d, contiguous", v);
    double sum = value_of(ct_sum(t, NULL)), any = value_of(ct_any(t, NULL));
    WITH_CONTEXT(CHECK(sum == 0 && any == 0), "(0, 2^62) view %d: sum %g any %g", v, sum, any);
    /* a result of 2^62 elements cannot exist */
    ct_clear_error();
    CHECK(ct_sum(t, CT_DIMS(1 - huge)) == NULL && ct_last_error() != CT_OK);
    ct_clear_error();
  }
  ct_clear_error();
}
