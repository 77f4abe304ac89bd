// The public headers compile as C++17 and link from C++.
#include <ctensor.h>
#include <ctensor/dlpack.h> /* outside the umbrella header: it needs DLPack's */

#include <cstdio>

int main() {
  const int64_t shape[2] = {2, 3};
  ct_tensor *t = ct_zeros(shape, 2, nullptr);
  if (!t) return 1;
  int ok = ct_numel(t) == 6 && ct_dtype_of(t) == CT_F32;
  ct_free(t);
  std::printf("headers_cxx: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
