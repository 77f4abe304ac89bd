/* A GPU that this build has no code for (the emulator's build has the
 * default architectures, sm_80 and sm_90 with PTX: capability 7.5 is too old)
 * is counted and described but not used: ops on it fail with
 * CT_ERR_UNAVAILABLE saying why, and the default device skips it. Run on the
 * emulated GPU with CT_EMU_COMPUTE_CAPABILITY="9.0,7.5" (cuda:1 is old) and
 * "7.5" (both are). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

static int failures = 0;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)

int main(void) {
  const char *cc = getenv("CT_EMU_COMPUTE_CAPABILITY");
  bool first_new = cc && strncmp(cc, "9.0", 3) == 0;
  EXPECT(ct_cuda_device_count() == 2);
  EXPECT(ct_cuda_is_available() == first_new);
  ct_device def = ct_default_device();
  EXPECT(first_new ? def.type == CT_DEVICE_CUDA && def.index == 0 : def.type == CT_DEVICE_CPU);

  ct_cuda_device_properties p;
  EXPECT(ct_cuda_get_device_properties(1, &p) == CT_OK && p.major == 7 && p.minor == 5);
  ct_tensor *t = ct_zeros(CT_SHAPE(4), &(ct_tensor_opts){.device = ct_cuda(1)});
  EXPECT(t == NULL && ct_last_error() == CT_ERR_UNAVAILABLE);
  const char *msg = ct_last_error_message();
  EXPECT(strstr(msg, "cuda:1 has compute capability 7.5") &&
         strstr(msg, "this build has no code for it") && strstr(msg, "80-real;90-real;90-virtual"));
  if (!t) printf("the old GPU: %s\n", msg);
  ct_free(t);
  ct_clear_error();
  EXPECT(ct_cuda_set_device(1) == CT_ERR_UNAVAILABLE);
  if (first_new) {
    ct_scope_begin(); /* frees the temporaries */
    ct_tensor *ok = ct_ones(CT_SHAPE(4), &(ct_tensor_opts){.device = ct_cuda(0)});
    double v = 0;
    EXPECT(ok && ct_item(ct_sum(ok, NULL), &v) == CT_OK && v == 4.0);
    ct_scope_end();
  }
  printf("old GPUs (CT_EMU_COMPUTE_CAPABILITY=%s, emulated): %s\n", cc ? cc : "", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
