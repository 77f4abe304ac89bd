/* The public headers compile as strict ISO C11 (no GNU extensions). */
#include <ctensor.h>
#include <ctensor/dlpack.h> /* outside the umbrella header: it needs DLPack's */

#include <stdio.h>

int main(void) {
  const int64_t shape[2] = {2, 3};
  ct_tensor *t = ct_ones(shape, 2, NULL);
  int ok = t && ct_numel(t) == 6;
  ct_free(t);
  printf("headers_c11: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
