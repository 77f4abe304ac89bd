/* Core: dtypes, promotion, creation, views, copies, scopes, errors. */
#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

CT_TEST(promotion_follows_torch) {
  CHECK(ct_promote_types(CT_I32, CT_F16) == CT_F16);
  CHECK(ct_promote_types(CT_U8, CT_I8) == CT_I16);
  CHECK(ct_promote_types(CT_F16, CT_BF16) == CT_F32);
  CHECK(ct_promote_types(CT_BOOL, CT_U8) == CT_U8);
  CHECK(ct_promote_types(CT_I64, CT_F32) == CT_F32);
  CHECK(ct_promote_types(CT_I16, CT_I64) == CT_I64);
  CHECK(ct_promote_types(CT_U8, CT_I32) == CT_I32);
  CHECK(ct_can_cast(CT_I64, CT_F16));
  CHECK(!ct_can_cast(CT_F32, CT_I64));
  CHECK(!ct_can_cast(CT_I8, CT_BOOL));
}

CT_TEST(creation_values) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *z = ct_zeros(CT_SHAPE(2, 3), &o);
  CHECK_SHAPE(z, 2, 3);
  CHECK_CLOSE(z, ((double[]){0, 0, 0, 0, 0, 0}), 0, 0);
  ct_tensor *f = ct_full(CT_SHAPE(2), 2.5, &o);
  CHECK_CLOSE(f, ((double[]){2.5, 2.5}), 0, 0);
  ct_tensor *a = ct_arange(0, 5, 2, &o);
  CHECK_SHAPE(a, 3);
  CHECK_CLOSE(a, ((double[]){0, 2, 4}), 0, 0);
  ct_tensor *l = ct_linspace(0, 1, 5, &o);
  CHECK_CLOSE(l, ((double[]){0, 0.25, 0.5, 0.75, 1}), 0, 0);
  ct_tensor *e = ct_eye(2, 3, &o);
  CHECK_CLOSE(e, ((double[]){1, 0, 0, 0, 1, 0}), 0, 0);
  int32_t raw[4] = {1, -2, 3, 2147483647};
  ct_tensor_opts oi = ct_test_opts(CT_I32);
  ct_tensor *d = ct_from_data(raw, CT_SHAPE(2, 2), &oi);
  CHECK_CLOSE(d, ((double[]){1, -2, 3, 2147483647}), 0, 0);
  ct_tensor *s = ct_scalar(7, &o);
  CHECK(ct_ndim(s) == 0 && ct_numel(s) == 1);
  double v = 0;
  CHECK_STATUS_OK(ct_item(s, &v));
  CHECK(v == 7);
}

CT_TEST(creation_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  CHECK_ERR(ct_zeros(CT_SHAPE(2, -1), &o), CT_ERR_SHAPE);
  CHECK_ERR(ct_zeros((int64_t[9]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 9, &o), CT_ERR_SHAPE);
  CHECK_ERR(ct_arange(0, 1, 0, &o), CT_ERR_ARG);
  CHECK_ERR(ct_zeros(CT_SHAPE(1), &(ct_tensor_opts){.device = ct_cuda(7)}), CT_ERR_UNAVAILABLE);
  CHECK_ERR(ct_zeros(CT_SHAPE(INT64_MAX, 4), &o), CT_ERR_SHAPE);
}

CT_TEST(views_share_storage) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *a = ct_arange(0, 6, 1, &o);
  ct_tensor *m = ct_view(a, CT_SHAPE(2, 3));
  CHECK(ct_same_storage(a, m));
  ct_tensor *t = ct_transpose(m, 0, 1);
  CHECK_SHAPE(t, 3, 2);
  CHECK(!ct_is_contiguous(t));
  CHECK_CLOSE(t, ((double[]){0, 3, 1, 4, 2, 5}), 0, 0);
  ct_tensor *s = ct_slice(m, 1, 0, 3, 2);
  CHECK_CLOSE(s, ((double[]){0, 2, 3, 5}), 0, 0);
  ct_tensor *sel = ct_select(m, 0, -1);
  CHECK_CLOSE(sel, ((double[]){3, 4, 5}), 0, 0);
  ct_tensor *u = ct_unsqueeze(sel, 0);
  CHECK_SHAPE(u, 1, 3);
  ct_tensor *ex = ct_expand(u, CT_SHAPE(2, -1));
  CHECK_CLOSE(ex, ((double[]){3, 4, 5, 3, 4, 5}), 0, 0);
  ct_tensor *sq = ct_squeeze(u);
  CHECK_SHAPE(sq, 3);
  ct_tensor *fl = ct_flatten(t, 0, -1);
  CHECK_CLOSE(fl, ((double[]){0, 3, 1, 4, 2, 5}), 0, 0);
  CHECK(!ct_same_storage(fl, t)); /* transposed can't be viewed flat: a copy */
  ct_tensor *r = ct_reshape(m, CT_SHAPE(3, -1));
  CHECK_SHAPE(r, 3, 2);
  CHECK(ct_same_storage(r, a));
  ct_tensor *p = ct_permute(m, (int[]){1, 0}, 2);
  CHECK_CLOSE(p, ((double[]){0, 3, 1, 4, 2, 5}), 0, 0);
  ct_tensor *dg = ct_diagonal(m, 1, 0, 1);
  CHECK_CLOSE(dg, ((double[]){1, 5}), 0, 0);
  ct_tensor *n = ct_narrow(m, 1, 1, 2);
  CHECK_CLOSE(n, ((double[]){1, 2, 4, 5}), 0, 0);
}

CT_TEST(view_errors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *m = ct_zeros(CT_SHAPE(2, 3), &o);
  CHECK_ERR_MSG(ct_view(m, CT_SHAPE(4, 2)), CT_ERR_SHAPE, "(4, 2)");
  CHECK_ERR(ct_view(ct_transpose(m, 0, 1), CT_SHAPE(6)), CT_ERR_SHAPE);
  CHECK_ERR(ct_transpose(m, 0, 2), CT_ERR_ARG);
  CHECK_ERR(ct_expand(m, CT_SHAPE(3, 3)), CT_ERR_SHAPE);
  CHECK_ERR(ct_permute(m, (int[]){0, 0}, 2), CT_ERR_ARG);
  CHECK_ERR(ct_select(m, 0, 2), CT_ERR_ARG);
  CHECK_ERR(ct_slice(m, 0, 0, 1, 0), CT_ERR_ARG);
  /* NULL in, NULL out keeps the first error */
  ct_clear_error();
  ct_tensor *bad = ct_view(m, CT_SHAPE(5));
  CHECK(bad == NULL && ct_last_error() == CT_ERR_SHAPE);
  CHECK(ct_transpose(ct_unsqueeze(bad, 0), 0, 1) == NULL);
  CHECK(ct_last_error() == CT_ERR_SHAPE);
  ct_clear_error();
}

CT_TEST(copy_and_cast_all_dtypes) {
  double vals[6] = {0, 1, -2, 3.5, 100, -7.25};
  for (int d = 0; d < CT_DTYPE_COUNT; d++) {
    for (int l = 0; l < CT_LAYOUT_COUNT; l++) {
      double exp[6];
      memcpy(exp, vals, sizeof exp);
      ct_test_round_to(exp, 6, (ct_dtype)d);
      ct_tensor *t = ct_test_make(vals, CT_SHAPE(2, 3), (ct_dtype)d, (ct_test_layout)l);
      CHECK_OK(t);
      CHECK_CLOSE(t, exp, 0, 0);
      for (int d2 = 0; d2 < CT_DTYPE_COUNT; d2++) {
        ct_tensor *c = ct_cast(t, (ct_dtype)d2);
        double exp2[6];
        memcpy(exp2, exp, sizeof exp2);
        ct_test_round_to(exp2, 6, (ct_dtype)d2);
        CHECK_CLOSE(c, exp2, 0, 0);
      }
      ct_tensor *c = ct_contiguous(t);
      CHECK(ct_is_contiguous(c));
      CHECK_CLOSE(c, exp, 0, 0);
    }
  }
}

CT_TEST(half_conversions_round_to_nearest_even) {
  ct_tensor *t = ct_from_data(((float[]){1.0f + 1.0f / 2048, 65504, 65520, 1e-8f, -0.0f, NAN}),
                              CT_SHAPE(6), &(ct_tensor_opts){0});
  ct_tensor *h = ct_cast(t, CT_F16);
  CHECK_CLOSE(h, ((double[]){1.0, 65504, INFINITY, 0, 0, NAN}), 0, 0);
  ct_tensor *b = ct_cast(ct_from_data(((float[]){1.0f + 1.0f / 256, 3e38f}), CT_SHAPE(2), NULL), CT_BF16);
  CHECK_CLOSE(b, ((double[]){1.0, 3.00405527e38}), 1e-7, 0);
}

CT_TEST(transfers_roundtrip) {
  ct_tensor *h = ct_arange(0, 10, 1, NULL);
  ct_tensor *d = ct_to(h, ct_test_device(), NULL);
  CHECK(ct_device_equal(ct_device_of(d), ct_test_device()));
  ct_tensor *back = ct_to(d, ct_cpu(), NULL);
  CHECK_CLOSE(back, ((double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0, 0);
  ct_tensor *dst = ct_zeros(CT_SHAPE(2, 10), &(ct_tensor_opts){.device = ct_test_device(), .dtype = CT_F64});
  CHECK_OK(ct_copy_(dst, h)); /* broadcast + cast + maybe cross-device */
  double *v = ct_test_values(dst);
  CHECK(v[10] == 0 && v[19] == 9);
  free(v);
  float buf[10];
  CHECK_STATUS_OK(ct_copy_to_host(d, buf, sizeof buf));
  CHECK(buf[9] == 9);
  CHECK_ERR(ct_copy_to_host(d, buf, 4) == CT_OK, CT_ERR_ARG);
  /* a source overlapping the destination is read whole first, on every device */
  ct_tensor *x = ct_to(ct_arange(0, 10, 1, NULL), ct_test_device(), NULL);
  CHECK_OK(ct_copy_(ct_narrow(x, 0, 1, 9), ct_narrow(x, 0, 0, 9)));
  CHECK_CLOSE(x, ((double[]){0, 0, 1, 2, 3, 4, 5, 6, 7, 8}), 0, 0);
  CHECK_OK(ct_copy_(ct_narrow(x, 0, 0, 9), ct_narrow(x, 0, 1, 9)));
  CHECK_CLOSE(x, ((double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 8}), 0, 0);
}

CT_TEST(scopes_free_temporaries) {
  ct_memory_stats before, after;
  ct_tensor *kept = NULL;
  ct_memory_stats_get(ct_cpu(), &before);
  ct_scope_begin();
  for (int i = 0; i < 10; i++) {
    ct_scope_begin();
    ct_tensor *big = ct_zeros(CT_SHAPE(1 << 16), NULL); /* 256 KiB, through the cache */
    ct_tensor *v = ct_view(big, CT_SHAPE(256, 256));
    (void)v;
    if (i == 9) kept = ct_keep(ct_clone(big));
    ct_scope_end();
  }
  kept = ct_keep(kept); /* out of the outer scope: the caller owns it */
  ct_scope_end();
  ct_memory_stats_get(ct_cpu(), &after);
  CHECK(after.allocated - before.allocated == (size_t)(1 << 18));
  CHECK(ct_numel(kept) == 1 << 16);
  ct_free(kept);
  ct_memory_stats_get(ct_cpu(), &after);
  CHECK(after.allocated == before.allocated);
  /* freeing a scoped tensor by hand is safe */
  ct_scope_begin();
  ct_tensor *x = ct_zeros(CT_SHAPE(3), NULL);
  ct_free(x);
  ct_scope_end();
}

CT_TEST(device_parse_and_default) {
  ct_device d;
  CHECK_STATUS_OK(ct_device_parse("cpu", &d));
  CHECK(d.type == CT_DEVICE_CPU);
  CHECK_ERR(ct_device_parse("gpu", &d) == CT_OK, CT_ERR_DEVICE);
  CHECK_ERR(ct_device_parse("cuda:x", &d) == CT_OK, CT_ERR_DEVICE);
  if (!ct_cuda_is_available()) {
    CHECK_ERR(ct_device_parse("cuda:0", &d) == CT_OK, CT_ERR_UNAVAILABLE);
    CHECK(ct_default_device().type == CT_DEVICE_CPU);
  }
  CHECK(strcmp(ct_device_name(ct_cuda(1)), "cuda:1") == 0);
}

CT_TEST(printing) {
  ct_tensor *t = ct_arange(0, 6, 1, NULL);
  ct_tensor *m = ct_view(t, CT_SHAPE(2, 3));
  char *s = ct_to_string(m);
  CHECK_OK(s);
  CHECK_MSG(s && strstr(s, "[[0., 1., 2.],\n        [3., 4., 5.]]") && strstr(s, "f32"), "got:\n%s", s);
  free(s);
  ct_tensor *big = ct_arange(0, 10000, 1, &(ct_tensor_opts){.dtype = CT_I64});
  s = ct_to_string(big);
  CHECK_MSG(s && strstr(s, "...") && strlen(s) < 400, "got:\n%s", s);
  free(s);
}
