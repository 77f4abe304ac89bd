/* libFuzzer target for the safetensors reader (ct__load_safetensors_buffer):
 * any input must either load or fail with a recorded error and empty outputs;
 * a crash, an out-of-bounds access under ASan, UB under UBSan or a leak is a
 * finding. Build and run: README.md in this folder. */
#include <stdint.h>
#include <stdlib.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ct_tensor **tensors = NULL;
  char **names = NULL;
  int n = 0;
  ct_status st = ct__load_safetensors_buffer(data, size, "fuzz", &tensors, &names, &n);
  if (st == CT_OK) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
      if (!tensors[i] || !names[i]) __builtin_trap();
      total += ct_numel(tensors[i]);
    }
    (void)total;
  } else if (tensors || names || n || !*ct_last_error_message()) {
    __builtin_trap(); /* a failure must leave the outputs empty and say why */
  }
  ct_safetensors_free(tensors, names, n);
  ct_clear_error();
  return 0;
}
