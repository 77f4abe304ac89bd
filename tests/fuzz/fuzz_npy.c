/* libFuzzer target for the .npy reader: any input must either load or fail
 * with CT_ERR_FORMAT (never crash, read out of bounds, leak or abort).
 * Build and run: see README.md in this folder. */
#include <stdint.h>
#include <stdlib.h>

#include <ctensor.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ct_clear_error();
  ct_tensor *t = ct_load_npy_buffer(data, size);
  if (t) {
    /* touch every byte of the result */
    volatile uint8_t sink = 0;
    const uint8_t *p = ct_data_ptr(t);
    for (size_t i = 0; i < ct_nbytes(t); i++) sink ^= p[i];
    (void)sink;
    ct_free(t);
  } else if (ct_last_error() != CT_ERR_FORMAT && ct_last_error() != CT_ERR_OOM) {
    abort(); /* a hostile buffer is a format error, nothing else */
  }
  return 0;
}
