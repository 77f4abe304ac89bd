/* Bad arguments get a clean error, never a crash: NULL pointers for shapes,
 * dims, files and outputs; sizes whose products or byte counts overflow;
 * slices, narrows and diagonals at the limits of int64; invalid enum values
 * (dtypes, device types, reductions, reduce dims) handed to public functions.
 * Run under ASan/UBSan (scripts/test.sh), an out-of-bounds write or an
 * overflow here fails the test even where the error code looks right. */
#include "ct_test.h"

#define BAD_DTYPE ((ct_dtype)99)
#define NEG_DTYPE ((ct_dtype)-1)
static const int64_t BIG = (int64_t)1 << 62;

CT_TEST(null_pointers) {
  ct_tensor *t = ct_zeros(CT_SHAPE(2, 3), NULL);
  CHECK_ERR_MSG(ct_view(t, NULL, 2), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_reshape(t, NULL, 1), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_permute(t, NULL, 2), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_expand(t, NULL, 2), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_empty(NULL, 2, NULL), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_full(NULL, 1, 0, NULL), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_rand(NULL, 1, NULL), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_randint(0, 2, NULL, 1, NULL), CT_ERR_ARG, "NULL");
  double d = 1;
  CHECK_ERR_MSG(ct_from_data(&d, NULL, 1, NULL), CT_ERR_ARG, "NULL");
  CHECK_ERR_MSG(ct_from_data(NULL, CT_SHAPE(1), NULL), CT_ERR_ARG, "NULL");
  CHECK(ct_from_data(NULL, CT_SHAPE(0), NULL) != NULL); /* no elements, no data needed */
  CHECK(ct_view(t, NULL, 0) == NULL);                   /* 6 elements into a scalar */
  ct_clear_error();
  /* a 0-d shape may be NULL */
  CHECK_OK(ct_reshape(ct_ones(CT_SHAPE(1), NULL), NULL, 0));
  CHECK_ERR_MSG(ct_fprint(NULL, t) == CT_OK, CT_ERR_ARG, "FILE");
  CHECK(!ct_dtype_parse("f32", NULL));
  CHECK(!ct_dtype_parse(NULL, &(ct_dtype){CT_F32}));
  CHECK_ERR(ct_device_parse("cpu", NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_copy_to_host(t, NULL, 24) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_item(t, NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_cat(NULL, 2, 0), CT_ERR_ARG);
  CHECK_ERR(ct_stack(NULL, 1, 0), CT_ERR_ARG);
  CHECK_ERR(ct_split(t, 1, 0, NULL, 4) >= 0 && false, CT_ERR_ARG);
  CHECK_ERR(ct_memory_stats_get(ct_cpu(), NULL) == CT_OK, CT_ERR_ARG);
  CHECK_ERR(ct_layer_norm_new(NULL, 1, 1e-5, NULL), CT_ERR_ARG);
}

CT_TEST(sizes_that_overflow) {
  /* byte counts: 2^62 doubles is 2^65 bytes */
  CHECK_ERR(ct_linspace(0, 1, BIG, NULL), CT_ERR_OOM);
  CHECK_ERR(ct_linspace(0, 1, BIG, &(ct_tensor_opts){.dtype = CT_F64}), CT_ERR_OOM);
  CHECK_ERR(ct_empty(CT_SHAPE(BIG / 2, 2), NULL), CT_ERR_OOM);
  CHECK_ERR(ct_arange(0, 1e300, 1e-300, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_randperm(BIG, NULL), CT_ERR_OOM);
  CHECK_ERR(ct_eye(BIG, BIG, NULL), CT_ERR_SHAPE);
  /* element counts, also when another size is 0 (the strides would overflow) */
  CHECK_ERR_MSG(ct_empty(CT_SHAPE(BIG, BIG), NULL), CT_ERR_SHAPE, "overflows");
  CHECK_ERR_MSG(ct_empty(CT_SHAPE(BIG, BIG, 0), NULL), CT_ERR_SHAPE, "overflows");
  CHECK_ERR_MSG(ct_zeros(CT_SHAPE(BIG, 4, 0), NULL), CT_ERR_SHAPE, "overflows");
  ct_tensor *z = ct_zeros(CT_SHAPE((int64_t)1 << 31, (int64_t)1 << 31, 0), NULL); /* 2^62: fits */
  CHECK(z && ct_numel(z) == 0);
  ct_tensor *e = ct_zeros(CT_SHAPE(0), NULL);
  CHECK_ERR_MSG(ct_view(e, CT_SHAPE(BIG, BIG, 0)), CT_ERR_SHAPE, "overflows");
  CHECK_ERR_MSG(ct_reshape(e, CT_SHAPE(BIG, 4, 0)), CT_ERR_SHAPE, "overflows");
  CHECK_ERR(ct_reshape(e, CT_SHAPE(BIG, -1, 0)), CT_ERR_SHAPE);
  CHECK_ERR(ct_reshape(e, CT_SHAPE(-1, 0)), CT_ERR_SHAPE); /* -1 is ambiguous */
  ct_tensor *one = ct_zeros(CT_SHAPE(1, 1), NULL);
  CHECK_ERR_MSG(ct_expand(one, CT_SHAPE(BIG, BIG)), CT_ERR_SHAPE, "overflows");
  CHECK_ERR_MSG(ct_expand(ct_zeros(CT_SHAPE(1, 0), NULL), CT_SHAPE(BIG, BIG, 0)), CT_ERR_SHAPE,
                "overflows");
  CHECK_ERR(ct_expand(one, CT_SHAPE(-2, 1)), CT_ERR_SHAPE);
  CHECK_ERR(ct_expand(one, CT_SHAPE(-1, 1, 1)), CT_ERR_SHAPE); /* -1 for a new dim */
  CHECK_SHAPE(ct_expand(one, CT_SHAPE(3, -1, 4)), 3, 1, 4);
}

CT_TEST(views_at_the_limits_of_int64) {
  ct_tensor *t = ct_arange(0, 5, 1, NULL);
  ct_tensor *s = ct_slice(t, 0, 0, 3, INT64_MAX); /* one element, not a negative size */
  CHECK(s && ct_numel(s) == 1);
  CHECK_CLOSE(s, ((double[]){0}), 0, 0);
  s = ct_slice(t, 0, 1, INT64_MAX, INT64_MAX - 1);
  CHECK(s && ct_numel(s) == 1);
  CHECK_CLOSE(s, ((double[]){1}), 0, 0);
  s = ct_slice(t, 0, INT64_MIN, INT64_MAX, 2);
  CHECK_CLOSE(s, ((double[]){0, 2, 4}), 0, 0);
  s = ct_slice(t, 0, INT64_MAX, INT64_MIN, 1);
  CHECK(s && ct_numel(s) == 0);
  CHECK_ERR(ct_slice(t, 0, 0, 5, 0), CT_ERR_ARG);
  CHECK_ERR(ct_slice(t, 0, 0, 5, INT64_MIN), CT_ERR_ARG);
  CHECK_ERR(ct_narrow(t, 0, 2, INT64_MAX), CT_ERR_ARG);
  CHECK_ERR(ct_narrow(t, 0, INT64_MAX, 1), CT_ERR_ARG);
  CHECK_ERR(ct_narrow(t, 0, INT64_MIN, 1), CT_ERR_ARG);
  CHECK_ERR(ct_narrow(t, 0, 1, -1), CT_ERR_ARG);
  CHECK(ct_numel(ct_narrow(t, 0, 5, 0)) == 0);
  CHECK_ERR(ct_select(t, 0, INT64_MIN), CT_ERR_ARG);
  CHECK_ERR(ct_select(t, 0, INT64_MAX), CT_ERR_ARG);
  ct_tensor *m = ct_reshape(ct_arange(0, 6, 1, NULL), CT_SHAPE(2, 3));
  CHECK(ct_numel(ct_diagonal(m, INT64_MAX, 0, 1)) == 0);
  CHECK(ct_numel(ct_diagonal(m, INT64_MIN, 0, 1)) == 0);
  CHECK(ct_numel(ct_diagonal(m, -1, 0, 1)) == 1);
  CHECK_CLOSE(ct_diagonal(m, 2, 0, 1), ((double[]){2}), 0, 0);
  CHECK_ERR(ct_permute(m, ((int[]){0, 0}), 2), CT_ERR_ARG);
  CHECK_ERR(ct_permute(m, ((int[]){0, 1000}), 2), CT_ERR_ARG);
  CHECK_ERR(ct_transpose(m, INT32_MIN, 0), CT_ERR_ARG);
  CHECK_ERR(ct_unsqueeze(m, INT32_MAX), CT_ERR_ARG);
  CHECK_ERR(ct_flatten(m, 1, 0), CT_ERR_ARG);
}

CT_TEST(invalid_dtypes) {
  ct_tensor *t = ct_zeros(CT_SHAPE(2), NULL);
  ct_dtype bad[2] = {BAD_DTYPE, NEG_DTYPE};
  for (int i = 0; i < 2; i++) {
    ct_tensor_opts o = {.dtype = bad[i]};
    CHECK_ERR(ct_cast(t, bad[i]), CT_ERR_DTYPE);
    CHECK_ERR(ct_empty(CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_zeros(CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_full(CT_SHAPE(2), 1.5, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_scalar(3, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_arange(0, 3, 1, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_linspace(0, 3, 4, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_eye(2, 2, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_rand(CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_randn(CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_randint(0, 4, CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_uniform(0, 1, CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_normal(0, 1, CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_from_data(((float[]){1, 2}), CT_SHAPE(2), &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_zeros_like(t, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_full_like(t, 2, &o), CT_ERR_DTYPE);
    CHECK_ERR(ct_linear_new(2, 2, true, &(ct_module_opts){.dtype = bad[i]}), CT_ERR_DTYPE);
    ct_module *lin = ct_linear_new(2, 2, true, NULL);
    CHECK_ERR(ct_module_to_dtype(lin, bad[i]) == CT_OK, CT_ERR_DTYPE);
    ct_module_free(lin);
    CHECK_ERR(ct_autocast_begin(CT_DEVICE_CPU, bad[i], true) == CT_OK, CT_ERR_DTYPE);
    /* the dtype queries answer without reading outside their tables */
    CHECK(strcmp(ct_dtype_name(bad[i]), "invalid") == 0);
    CHECK(ct_dtype_size(bad[i]) == 0);
    CHECK(!ct_dtype_is_floating(bad[i]) && !ct_dtype_is_integral(bad[i]));
    CHECK(!ct_can_cast(bad[i], CT_F32) && !ct_can_cast(CT_F32, bad[i]));
    CHECK(ct_promote_types(bad[i], CT_I32) == CT_I32);
    CHECK(ct_promote_types(CT_F16, bad[i]) == CT_F16);
  }
}

CT_TEST(invalid_devices) {
  ct_tensor *t = ct_zeros(CT_SHAPE(2), NULL);
  ct_device bad[4] = {{7, 0}, {-1, 0}, {CT_DEVICE_CPU, 3}, {CT_DEVICE_CUDA, -1}};
  for (int i = 0; i < 4; i++) {
    ct_device d = bad[i];
    ct_clear_error();
    CHECK_MSG(!ct_to(t, d, NULL) && ct_last_error() != CT_OK, "to %s", ct_device_name(d));
    ct_clear_error();
    CHECK_MSG(!ct_empty(CT_SHAPE(2), &(ct_tensor_opts){.device = d}) && ct_last_error() != CT_OK,
              "empty on %s", ct_device_name(d));
    ct_clear_error();
    CHECK(!ct_rand(CT_SHAPE(2), &(ct_tensor_opts){.device = d}));
    CHECK(!ct_stream_new(d));
    CHECK(!ct_event_new(d, false));
    CHECK(ct_synchronize(d) != CT_OK);
    ct_memory_stats s;
    CHECK(ct_memory_stats_get(d, &s) != CT_OK);
    CHECK(ct_empty_cache(d) != CT_OK);
    CHECK(ct_stream_set_current(d, NULL) != CT_OK);
    CHECK(ct_stream_current(d) == NULL || d.type == CT_DEVICE_CPU);
    ct_module *lin = ct_linear_new(2, 2, true, NULL);
    CHECK(ct_module_to(lin, d) != CT_OK);
    ct_module_free(lin);
    CHECK(ct_linear_new(2, 2, true, &(ct_module_opts){.device = d}) == NULL);
    CHECK(ct_device_name(d) != NULL);
    ct_clear_error();
  }
  CHECK_ERR(ct_autocast_begin((ct_device_type)9, CT_F16, true) == CT_OK, CT_ERR_ARG);
}

CT_TEST(invalid_reductions_and_dims) {
  ct_tensor *x = ct_zeros(CT_SHAPE(2, 3), NULL);
  ct_tensor *logits = ct_zeros(CT_SHAPE(2, 3), NULL);
  ct_tensor *target = ct_zeros(CT_SHAPE(2), &(ct_tensor_opts){.dtype = CT_I64});
  ct_loss_opts bad = {.reduction = (ct_reduction)9};
  CHECK_ERR(ct_mse_loss(x, x, &bad), CT_ERR_ARG);
  CHECK_ERR(ct_cross_entropy(logits, target, &bad), CT_ERR_ARG);
  CHECK_ERR(ct_nll_loss(logits, target, &bad), CT_ERR_ARG);
  CHECK_ERR(ct_binary_cross_entropy_with_logits(x, x, &bad), CT_ERR_ARG);
  bad.reduction = (ct_reduction)-1;
  CHECK_ERR(ct_mse_loss(x, x, &bad), CT_ERR_ARG);
  /* reduce options with a dims count out of range, or dims out of range */
  ct_reduce_opts r = {.ndims = 100};
  CHECK_ERR(ct_sum(x, &r), CT_ERR_ARG);
  r.ndims = -3;
  CHECK_ERR(ct_mean(x, &r), CT_ERR_ARG);
  CHECK_ERR(ct_max(x, &(ct_reduce_opts){.dims = {5}, .ndims = 1}), CT_ERR_ARG);
  CHECK_ERR(ct_sum(x, &(ct_reduce_opts){.dims = {0, -2}, .ndims = 2}), CT_ERR_ARG);
  CHECK_ERR(ct_argmax(x, 7, false), CT_ERR_ARG);
  CHECK_ERR(ct_argmin(x, INT32_MIN, false), CT_ERR_ARG);
  CHECK_ERR(ct_max_dim(x, 2, false, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_softmax(x, 2), CT_ERR_ARG);
  CHECK_ERR(ct_log_softmax(x, -3), CT_ERR_ARG);
  CHECK_ERR(ct_index_select(x, 9, target), CT_ERR_ARG);
  CHECK_ERR(ct_cat(((ct_tensor *[]){x, x}), -1, 0), CT_ERR_ARG);
  CHECK_ERR(ct_cat(((ct_tensor *[]){x, x}), 2, 5), CT_ERR_ARG);
  CHECK_ERR(ct_chunk(x, 0, 0, NULL, 0) >= 0 && false, CT_ERR_ARG);
  CHECK_ERR(ct_layer_norm(x, 3, NULL, NULL, 1e-5), CT_ERR_ARG);
  CHECK_ERR(ct_layer_norm(x, -1, NULL, NULL, 1e-5), CT_ERR_ARG);
  CHECK_ERR(ct_dropout(x, 1.5, true, NULL), CT_ERR_ARG);
  CHECK_ERR(ct_dropout(x, NAN, true, NULL), CT_ERR_ARG);
}

CT_TEST(pooling_arguments_at_the_limits) {
  ct_tensor *x = ct_zeros(CT_SHAPE(1, 1, 4, 4), NULL);
  CHECK_ERR(ct_max_pool2d(x, &(ct_pool2d_opts){.kernel = {INT64_MAX, 1}}), CT_ERR_SHAPE);
  CHECK_ERR(ct_avg_pool2d(x, &(ct_pool2d_opts){.kernel = {INT64_MAX, INT64_MAX},
                                               .padding = {INT64_MAX / 2, INT64_MAX / 2}}),
            CT_ERR_SHAPE);
  ct_tensor *y = ct_max_pool2d(
      x, &(ct_pool2d_opts){.kernel = {2, 2}, .stride = {INT64_MAX, INT64_MAX}, .ceil_mode = true});
  CHECK(y && ct_size(y, 2) == 1 && ct_size(y, 3) == 1);
  CHECK_ERR(ct_max_pool2d(x, &(ct_pool2d_opts){.kernel = {2, 2}, .stride = {-1, 1}}), CT_ERR_ARG);
  CHECK_ERR(ct_conv2d(x, ct_zeros(CT_SHAPE(1, 1, 1, 1), NULL), NULL,
                      &(ct_conv2d_opts){.stride = {INT64_MAX, 1}}),
            CT_ERR_ARG);
  CHECK_ERR(ct_conv2d(x, ct_zeros(CT_SHAPE(1, 1, 1, 1), NULL), NULL,
                      &(ct_conv2d_opts){.padding = {INT64_MAX, 0}}),
            CT_ERR_ARG);
  CHECK_ERR(ct_conv2d(x, ct_zeros(CT_SHAPE(1, 1, 1, 1), NULL), NULL,
                      &(ct_conv2d_opts){.dilation = {INT64_MAX, 1}}),
            CT_ERR_ARG);
  CHECK_ERR(ct_conv2d(x, ct_zeros(CT_SHAPE(1, 1, 3, 0), NULL), NULL, NULL), CT_ERR_SHAPE);
  CHECK_ERR(ct_conv2d(x, ct_zeros(CT_SHAPE(1, 1, 5, 1), NULL), NULL, NULL), CT_ERR_SHAPE);
  CHECK_ERR(
      ct_conv2d(x, ct_zeros(CT_SHAPE(1, 1, 1, 1), NULL), NULL, &(ct_conv2d_opts){.groups = -1}),
      CT_ERR_ARG);
}
