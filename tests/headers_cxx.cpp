// The public headers compile as C++17 (with -pedantic) and link from C++,
// and every public macro works there: CT_SHAPE and CT_DIMS have C++ forms
// (include/ctensor/tensor.h, ops.h), checked here against the C meaning.
#include <ctensor.h>
#include <ctensor/dlpack.h> /* outside the umbrella header: it needs DLPack's */

#include <cstdio>
#include <initializer_list>

static int failures = 0;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::printf("headers_cxx: %s failed (line %d)\n", #cond, __LINE__); \
      failures++;                                                         \
    }                                                                     \
  } while (0)

// The (shape, ndim) pair CT_SHAPE expands to, as a function sees it.
static bool shape_is(const int64_t *shape, int ndim, const int64_t *want, int want_ndim) {
  if (ndim != want_ndim) return false;
  for (int i = 0; i < ndim; i++)
    if (shape[i] != want[i]) return false;
  return true;
}

int main() {
  // CT_SHAPE: values of any integer type, 0 to CT_MAX_DIMS of them.
  const int64_t s23[] = {2, 3};
  EXPECT(shape_is(CT_SHAPE(2, 3), s23, 2));
  EXPECT(shape_is(CT_SHAPE(), nullptr, 0));
  size_t n = 4;
  unsigned char small = 5;
  const int64_t s8[] = {4, 5, 1, 1, 1, 1, 1, 2};
  EXPECT(shape_is(CT_SHAPE(n, small, 1, 1, 1, 1, 1, 2), s8, CT_MAX_DIMS));
  EXPECT(CT__NARGS() == 0 && CT__NARGS(7, 8, 9) == 3);

  ct_tensor *t = ct_zeros(CT_SHAPE(2, 3), nullptr);
  ct_tensor *a = ct_arange(0, 6, 1, nullptr);
  ct_tensor *m = ct_reshape(a, CT_SHAPE(2, 3));
  EXPECT(t && ct_numel(t) == 6 && ct_dtype_of(t) == CT_F32);

  // CT_DIMS, CT_DIMS_KEEP, CT_DIM_ALL: sums of [[0, 1, 2], [3, 4, 5]].
  ct_tensor *rows = ct_sum(m, CT_DIMS(1));
  ct_tensor *cols = ct_sum(m, CT_DIMS_KEEP(0));
  ct_tensor *both = ct_sum(m, CT_DIMS(0, -1));
  ct_tensor *all = ct_sum(m, CT_DIMS());
  EXPECT(rows && ct_ndim(rows) == 1 && ct_size(rows, 0) == 2);
  EXPECT(cols && ct_ndim(cols) == 2 && ct_size(cols, 0) == 1 && ct_size(cols, 1) == 3);
  double v = 0;
  EXPECT(both && ct_item(both, &v) == CT_OK && v == 15);
  EXPECT(all && ct_item(all, &v) == CT_OK && v == 15);
  if (rows) {
    const float *r = static_cast<const float *>(ct_data_ptr(rows));
    EXPECT(r[0] == 3 && r[1] == 12);
  }
  EXPECT(CT_DIMS(1)->ndims == 1 && CT_DIMS(1)->dims[0] == 1 && !CT_DIMS(1)->keepdim);
  EXPECT(CT_DIMS_KEEP(0, 2)->ndims == 2 && CT_DIMS_KEEP(0, 2)->keepdim);
  EXPECT(CT_DIM_ALL < 0 && CT_END == INT64_MAX);

  // The constants.
  EXPECT(CTENSOR_VERSION_MAJOR >= 0 && CTENSOR_VERSION_MINOR >= 0 && CTENSOR_VERSION_PATCH >= 0);
  EXPECT(CT_DEVICE_NAME_MAX >= 8 && CT_AUTOCAST_MAX_DEPTH > 0 && CT_RMS_NORM_EPS_DEFAULT < 0);
  EXPECT(CT_DLPACK_MAJOR_VERSION >= 1 && CT_DLPACK_MINOR_VERSION >= 0 && CT_DLPACK_BOOL_CODE > 0);
  EXPECT((DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED) == 3);

  for (ct_tensor *x : {t, a, m, rows, cols, both, all}) ct_free(x);
  std::printf("headers_cxx: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
