/* run_line.c: the line every command prints (on stderr, before it starts)
 * to say what it runs on: the device and why (the GPU's name and memory, or
 * the CPU and the reason there is no GPU), then the model, the data, the
 * precision and the CPU threads:
 *   device cpu (no GPU: the CUDA driver is not installed (...)) · model cnn ·
 *   dataset fashion-mnist 60000/10000 · precision f32 · threads 2 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The device and why it was chosen, into buf. */
static void describe_device(const cli_opts *o, ct_device dev, char *buf, size_t n) {
  if (dev.type == CT_DEVICE_CUDA) {
    ct_cuda_device_properties p;
    if (ct_cuda_get_device_properties(dev.index, &p) == CT_OK)
      snprintf(buf, n, "%s (%s, %.1f GiB)", ct_device_name(dev), p.name,
               (double)p.total_memory / (double)(1u << 30));
    else
      snprintf(buf, n, "%s", ct_device_name(dev));
    ct_clear_error();
    return;
  }
  const char *env = getenv("CT_DEVICE");
  const char *why = ct_cuda_unavailable_reason();
  if (o->disable_cuda)
    snprintf(buf, n, "cpu (--disable-cuda)");
  else if (strcmp(o->device, "auto") != 0)
    snprintf(buf, n, "cpu (--device %s)", cli_shown(o->device));
  else if (env && *env && strcmp(env, "auto") != 0)
    snprintf(buf, n, "cpu (CT_DEVICE=%s)", cli_shown(env));
  else if (*why)
    snprintf(buf, n, "cpu (no GPU: %s)", why);
  else
    snprintf(buf, n, "cpu");
}

void cli_print_run_line(const cli_opts *o, ct_device dev, const char *fmt, ...) {
  char device[1400], what[512];
  describe_device(o, dev, device, sizeof device);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fprintf(stderr, "device %s \u00b7 %s \u00b7 threads %d\n", device, what, ct_get_num_threads());
  fflush(stderr);
}

const char *cli_precision_name(int amp) {
  switch (amp) {
    case AMP_F16:
      return "amp f16 (f32 weights, loss scaling)";
    case AMP_BF16:
      return "amp bf16 (f32 weights)";
    default:
      return "f32";
  }
}
