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
