/* DLPack export and import, ct_from_blob: round trips, layouts, dtypes,
 * lifetime (the deleter runs exactly once, an export keeps the storage alive),
 * read-only and copied tensors, stream ordering on a GPU, and bad input. */
#include <ctensor/dlpack.h>

#include "ct_test.h"

CT_TEST_DEVICE_GENERIC

/* The producer's deleter, wrapped to count its calls. */
static int deleter_calls;
static void (*inner_versioned)(DLManagedTensorVersioned *);
static void (*inner_legacy)(DLManagedTensor *);
static void counting_versioned(DLManagedTensorVersioned *m) {
  deleter_calls++;
  inner_versioned(m);
}
static void counting_legacy(DLManagedTensor *m) {
  deleter_calls++;
  inner_legacy(m);
}
static DLManagedTensorVersioned *counted_versioned(DLManagedTensorVersioned *m) {
  deleter_calls = 0;
  if (m) inner_versioned = m->deleter, m->deleter = counting_versioned;
  return m;
}
static DLManagedTensor *counted_legacy(DLManagedTensor *m) {
  deleter_calls = 0;
  if (m) inner_legacy = m->deleter, m->deleter = counting_legacy;
  return m;
}

static const double vals6[6] = {0, 1.5, -2, 3, 4.25, -5};

CT_TEST(versioned_round_trip_shares_memory) {
  ct_tensor *x = ct_test_make(vals6, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  DLManagedTensorVersioned *m = counted_versioned(ct_to_dlpack_versioned(x, NULL));
  CHECK_OK(m);
  if (!m) return;
  CHECK(m->version.major == 1 && m->version.minor == 0 && m->flags == 0);
  DLTensor *dl = &m->dl_tensor;
  CHECK(dl->ndim == 2 && dl->shape[0] == 2 && dl->shape[1] == 3);
  CHECK(dl->strides[0] == 3 && dl->strides[1] == 1 && dl->byte_offset == 0);
  CHECK(dl->dtype.code == kDLFloat && dl->dtype.bits == 32 && dl->dtype.lanes == 1);
  DLDevice want = ct_dlpack_device(ct_test_device());
  CHECK(dl->device.device_type == want.device_type && dl->device.device_id == want.device_id);
  void *data = dl->data;
  ct_tensor *y = ct_from_dlpack_versioned(m);
  CHECK_OK(y);
  CHECK_SHAPE(y, 2, 3);
  CHECK(ct_dtype_of(y) == CT_F32 && ct_device_equal(ct_device_of(y), ct_test_device()));
  CHECK_CLOSE(y, vals6, 0, 0);
  /* one memory: a write through y is seen by x, and y exports the same address */
  ct_mul_scalar_(y, 2);
  CHECK_CLOSE(x, ((double[]){0, 3, -4, 6, 8.5, -10}), 0, 0);
  DLManagedTensor *again = ct_to_dlpack(y, NULL);
  CHECK(again && again->dl_tensor.data == data);
  if (again) again->deleter(again);
  CHECK(deleter_calls == 0);
  ct_free(y);
  CHECK(deleter_calls == 1);
}

CT_TEST(legacy_round_trip_of_views) {
  /* a transposed view and a slice with a step at an offset: strides and the
   * data pointer carry the layout, nothing is copied */
  for (int layout = 0; layout < CT_LAYOUT_COUNT; layout++) {
    ct_tensor *x = ct_test_make(vals6, CT_SHAPE(2, 3), CT_F64, (ct_test_layout)layout);
    ct_tensor *t = ct_transpose(x, 0, 1);
    DLManagedTensor *m = counted_legacy(ct_to_dlpack(t, NULL));
    CHECK_OK(m);
    if (!m) continue;
    CHECK(m->dl_tensor.ndim == 2 && m->dl_tensor.strides[0] == ct_stride(t, 0) &&
          m->dl_tensor.strides[1] == ct_stride(t, 1));
    ct_tensor *y = ct_from_dlpack(m);
    CHECK_OK(y);
    CHECK_SHAPE(y, 3, 2);
    WITH_CONTEXT(CHECK_CLOSE(y, ((double[]){0, 3, 1.5, 4.25, -2, -5}), 0, 0), "layout %s",
                 ct_test_layout_names[layout]);
    CHECK(ct_stride(y, 0) == ct_stride(t, 0) && ct_stride(y, 1) == ct_stride(t, 1));
    ct_fill_(y, 7);
    double *xs = ct_test_values(x);
    CHECK(xs && xs[0] == 7 && xs[5] == 7);
    free(xs);
    ct_free(y);
    CHECK(deleter_calls == 1);
  }
}

CT_TEST(export_keeps_storage_alive_and_deleter_runs_once) {
  ct_scope_begin();
  ct_tensor *x = ct_keep(ct_test_make(vals6, CT_SHAPE(6), CT_F32, CT_LAYOUT_OFFSET));
  ct_scope_end();
  DLManagedTensorVersioned *m = counted_versioned(ct_to_dlpack_versioned(x, NULL));
  CHECK_OK(m);
  if (!m) return;
  ct_free(x); /* the export holds the storage */
  ct_tensor *y = ct_from_dlpack_versioned(m);
  CHECK_OK(y);
  ct_tensor *v = ct_slice(y, 0, 1, 6, 2); /* a view outliving y */
  ct_free(y);
  CHECK(deleter_calls == 0);
  CHECK_CLOSE(v, ((double[]){1.5, 3, -5}), 0, 0);
  ct_free(v);
  CHECK(deleter_calls == 1);
}

CT_TEST(unconsumed_export_released_by_its_deleter) {
  ct_tensor *x = ct_test_make(vals6, CT_SHAPE(3, 2), CT_I64, CT_LAYOUT_CONTIG);
  DLManagedTensor *m = ct_to_dlpack(x, NULL);
  DLManagedTensorVersioned *mv = ct_to_dlpack_versioned(x, NULL);
  CHECK(m && mv);
  if (m) m->deleter(m); /* LeakSanitizer checks that this frees everything */
  if (mv) mv->deleter(mv);
  CHECK_CLOSE(x, ((double[]){0, 1, -2, 3, 4, -5}), 0, 0);
}

CT_TEST(every_dtype_round_trips) {
  static const struct {
    ct_dtype dtype;
    uint8_t code, bits;
  } map[] = {{CT_F32, kDLFloat, 32}, {CT_F64, kDLFloat, 64},
             {CT_F16, kDLFloat, 16}, {CT_BF16, kDLBfloat, 16},
             {CT_I8, kDLInt, 8},     {CT_U8, kDLUInt, 8},
             {CT_I16, kDLInt, 16},   {CT_I32, kDLInt, 32},
             {CT_I64, kDLInt, 64},   {CT_BOOL, CT_DLPACK_BOOL_CODE, 8}};
  CHECK(sizeof map / sizeof map[0] == CT_DTYPE_COUNT);
  const double v[4] = {0, 1, 1, 0};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    ct_tensor *x = ct_test_make(v, CT_SHAPE(2, 2), map[i].dtype, CT_LAYOUT_CONTIG);
    DLManagedTensorVersioned *m = ct_to_dlpack_versioned(x, NULL);
    CHECK_OK(m);
    if (!m) continue;
    WITH_CONTEXT(
        CHECK(m->dl_tensor.dtype.code == map[i].code && m->dl_tensor.dtype.bits == map[i].bits),
        "%s", ct_dtype_name(map[i].dtype));
    ct_tensor *y = ct_from_dlpack_versioned(m);
    CHECK_OK(y);
    CHECK(ct_dtype_of(y) == map[i].dtype);
    CHECK_CLOSE(y, v, 0, 0);
    ct_free(y);
  }
}

CT_TEST(scalars_and_empty_tensors) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *s = ct_scalar(2.5, &o);
  ct_tensor *y = ct_from_dlpack_versioned(ct_to_dlpack_versioned(s, NULL));
  CHECK_OK(y);
  CHECK(ct_ndim(y) == 0);
  CHECK_CLOSE(y, ((double[]){2.5}), 0, 0);
  ct_free(y);
  ct_tensor *e = ct_zeros(CT_SHAPE(0, 3), &o);
  ct_tensor *z = ct_from_dlpack(ct_to_dlpack(e, NULL));
  CHECK_OK(z);
  CHECK_SHAPE(z, 0, 3);
  ct_free(z);
}

CT_TEST(copy_option_exports_a_copy) {
  ct_tensor *x = ct_test_make(vals6, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_TRANSPOSED);
  DLManagedTensorVersioned *m = ct_to_dlpack_versioned(x, &(ct_dlpack_opts){.copy = true});
  CHECK_OK(m);
  if (!m) return;
  CHECK(m->flags == DLPACK_FLAG_BITMASK_IS_COPIED);
  CHECK(m->dl_tensor.strides[0] == 3 && m->dl_tensor.strides[1] == 1); /* a contiguous copy */
  ct_tensor *y = ct_from_dlpack_versioned(m);
  ct_fill_(y, 0);
  CHECK_CLOSE(x, vals6, 0, 0);
  ct_free(y);
}

CT_TEST(read_only_imports_are_copied) {
  ct_tensor *x = ct_test_make(vals6, CT_SHAPE(6), CT_F32, CT_LAYOUT_CONTIG);
  DLManagedTensorVersioned *m = counted_versioned(ct_to_dlpack_versioned(x, NULL));
  CHECK_OK(m);
  if (!m) return;
  m->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
  ct_tensor *y = ct_from_dlpack_versioned(m);
  CHECK_OK(y);
  CHECK(deleter_calls == 1); /* copied, so released at once */
  ct_fill_(y, 1);
  CHECK_CLOSE(x, vals6, 0, 0);
  CHECK_CLOSE(y, ((double[]){1, 1, 1, 1, 1, 1}), 0, 0);
  ct_free(y);
  CHECK(deleter_calls == 1);
}

CT_TEST(bad_imports_fail_and_leave_ownership) {
  ct_tensor *x = ct_test_make(vals6, CT_SHAPE(2, 3), CT_F32, CT_LAYOUT_CONTIG);
  DLManagedTensorVersioned *m = counted_versioned(ct_to_dlpack_versioned(x, NULL));
  CHECK_OK(m);
  if (!m) return;
  DLTensor good = m->dl_tensor;
  m->version.major = 2;
  CHECK_ERR_MSG(ct_from_dlpack_versioned(m), CT_ERR_UNAVAILABLE, "version 2.0");
  m->version.major = 1;
  m->dl_tensor.dtype = (DLDataType){kDLComplex, 64, 1};
  CHECK_ERR_MSG(ct_from_dlpack_versioned(m), CT_ERR_DTYPE, "code 5");
  m->dl_tensor.dtype = (DLDataType){kDLFloat, 32, 4};
  CHECK_ERR(ct_from_dlpack_versioned(m), CT_ERR_DTYPE);
  m->dl_tensor = good;
  m->dl_tensor.device = (DLDevice){kDLOpenCL, 0};
  CHECK_ERR_MSG(ct_from_dlpack_versioned(m), CT_ERR_DEVICE, "device type 4");
  m->dl_tensor.device = (DLDevice){kDLCUDA, 7};
  CHECK_ERR_MSG(ct_from_dlpack_versioned(m), CT_ERR_UNAVAILABLE, "cuda:7");
  m->dl_tensor = good;
  int64_t neg[2] = {-1, 1};
  m->dl_tensor.strides = neg;
  CHECK_ERR_MSG(ct_from_dlpack_versioned(m), CT_ERR_ARG, "negative");
  m->dl_tensor = good;
  m->dl_tensor.byte_offset = 2; /* an f32 at an odd address */
  CHECK_ERR_MSG(ct_from_dlpack_versioned(m), CT_ERR_ARG, "aligned");
  m->dl_tensor = good;
  m->dl_tensor.ndim = CT_MAX_DIMS + 1;
  CHECK_ERR(ct_from_dlpack_versioned(m), CT_ERR_ARG);
  CHECK_ERR(ct_from_dlpack_versioned(NULL), CT_ERR_ARG);
  CHECK_ERR(ct_from_dlpack(NULL), CT_ERR_ARG);
  m->dl_tensor = good;
  CHECK(deleter_calls == 0);                  /* every failure left m to us */
  ct_tensor *y = ct_from_dlpack_versioned(m); /* and it is still good */
  CHECK_CLOSE(y, vals6, 0, 0);
  ct_free(y);
  CHECK(deleter_calls == 1);
  /* byte_offset is honoured: element 2 onwards */
  DLManagedTensor *l = ct_to_dlpack(x, NULL);
  CHECK_OK(l);
  if (!l) return;
  l->dl_tensor.byte_offset = 2 * sizeof(float);
  l->dl_tensor.ndim = 1;
  l->dl_tensor.shape[0] = 4;
  l->dl_tensor.strides = NULL; /* compact row-major */
  ct_tensor *z = ct_from_dlpack(l);
  CHECK_CLOSE(z, ((double[]){-2, 3, 4.25, -5}), 0, 0);
  ct_free(z);
}

static int blob_frees;
static void count_blob_free(void *ctx) {
  blob_frees++;
  free(ctx);
}

CT_TEST(from_blob_wraps_host_memory) {
  if (ct_test_device().type != CT_DEVICE_CPU) {
    ct_test_skip("host memory: the CPU run covers it");
    return;
  }
  float *buf = malloc(12 * sizeof *buf);
  for (int i = 0; i < 12; i++) buf[i] = (float)i;
  blob_frees = 0;
  /* columns 0 and 2 of a 4 x 3 matrix: shape (4, 2), strides (3, 2) */
  ct_tensor *t = ct_from_blob(buf, CT_SHAPE(4, 2), (const int64_t[]){3, 2}, CT_F32, ct_cpu(),
                              count_blob_free, buf);
  CHECK_OK(t);
  CHECK_CLOSE(t, ((double[]){0, 2, 3, 5, 6, 8, 9, 11}), 0, 0);
  CHECK(ct_data_ptr(t) == buf);
  ct_add_scalar_(t, 100);
  CHECK(buf[0] == 100 && buf[1] == 1 && buf[2] == 102);
  ct_tensor *s = ct_sum(t, NULL);
  double v = 0;
  CHECK_STATUS_OK(ct_item(s, &v));
  CHECK(v == 844);
  ct_free(t);
  CHECK(blob_frees == 1);
  /* failures do not call the deleter */
  float local[4] = {0};
  CHECK_ERR(ct_from_blob(local, CT_SHAPE(2, 2), (const int64_t[]){-2, 1}, CT_F32, ct_cpu(),
                         count_blob_free, NULL),
            CT_ERR_ARG);
  CHECK_ERR(ct_from_blob(local, CT_SHAPE(-1), NULL, CT_F32, ct_cpu(), count_blob_free, NULL),
            CT_ERR_ARG);
  CHECK_ERR(ct_from_blob(local, CT_SHAPE(4), NULL, CT_DTYPE_COUNT, ct_cpu(), count_blob_free, NULL),
            CT_ERR_DTYPE);
  CHECK_ERR(ct_from_blob(local, CT_SHAPE(4), NULL, CT_F32, ct_cuda(7), count_blob_free, NULL),
            CT_ERR_UNAVAILABLE);
  CHECK(blob_frees == 1);
  /* a NULL deleter: the memory outlives the tensor */
  ct_tensor *u = ct_from_blob(local, CT_SHAPE(4), NULL, CT_F32, ct_cpu(), NULL, NULL);
  CHECK_OK(u);
  ct_fill_(u, 3);
  CHECK(local[3] == 3);
  ct_free(u);
}

/* On a GPU the export orders the consumer's stream after the producer's: a
 * result computed on a side stream is read correctly on the default stream
 * (the emulated GPU runs each stream's queue only when something waits, so a
 * missing wait reads stale memory there). */
CT_TEST(export_orders_the_consumer_stream) {
  ct_device dev = ct_test_device();
  if (dev.type != CT_DEVICE_CUDA) {
    ct_test_skip("streams: GPU only");
    return;
  }
  ct_tensor *x = ct_test_make(vals6, CT_SHAPE(6), CT_F32, CT_LAYOUT_CONTIG);
  ct_synchronize(dev);
  ct_stream *side = ct_stream_new(dev);
  ct_stream *consumer = ct_stream_new(dev);
  CHECK_OK(side && consumer);
  if (!side || !consumer) return;
  CHECK(ct_stream_native_handle(side) != NULL && ct_stream_native_handle(NULL) == NULL);
  for (int round = 0; round < 2; round++) {
    CHECK_STATUS_OK(ct_stream_set_current(dev, side));
    ct_tensor *y = ct_mul_scalar(x, 10); /* queued on the side stream */
    ct_tensor *z = ct_add_scalar(y, 1);
    intptr_t to = round == 0 ? 0 : (intptr_t)ct_stream_native_handle(consumer);
    DLManagedTensorVersioned *m = ct_to_dlpack_versioned(z, &(ct_dlpack_opts){.stream = to});
    CHECK_OK(m);
    CHECK_STATUS_OK(ct_stream_set_current(dev, round == 0 ? NULL : consumer));
    ct_tensor *w = m ? ct_from_dlpack_versioned(m) : NULL;
    ct_tensor *host = ct_to(w, ct_cpu(), NULL); /* read on the consumer's stream */
    CHECK_CLOSE(host, ((double[]){1, 16, -19, 31, 43.5, -49}), 0, 0);
    ct_free(w);
    CHECK_STATUS_OK(ct_stream_set_current(dev, NULL));
  }
  ct_synchronize(dev);
  ct_stream_free(side);
  ct_stream_free(consumer);
}
