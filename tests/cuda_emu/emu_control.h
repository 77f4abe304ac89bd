/* The test drivers' side of the CUDA emulator (emu_runtime.cpp): knobs that
 * stand for the device (multiprocessor count, CT_LAUNCH_BLOCKING), the errors
 * the emulator found in a kernel (deadlock, misaligned vector access, a bad
 * launch configuration, an overrun of device scratch), the last message the
 * backend recorded through ct__fail_status, and the launch counts. */
#ifndef CT_EMU_CONTROL_H
#define CT_EMU_CONTROL_H

#include <stddef.h>
#include <stdint.h>

namespace emu {
/* ctc_sm_count() of every device (sets the grid sizes and splits). */
extern int sm_count;
/* ctc_launch_blocking(): every launch synchronizes and checks faults. */
extern bool launch_blocking;

/* Errors found by the emulator since the last call: their count, and the
 * first one's message in msg (when not NULL). */
long take_errors(char *msg, size_t n);
/* The message of the last ct__fail_status / ctc_cuda_fail (and clears it). */
const char *last_message(void);
void clear_message(void);
/* Device scratch (ct__cuda_alloc) not yet freed, in blocks. */
long scratch_live(void);

/* Launch counts by kernel name (template arguments dropped). */
long launches(const char *kernel_prefix);
long total_launches(void);
long total_threads(void);
/* Prints the kernels launched since the last reset, with counts, and the
 * registered kernels of `files` (comma-separated .cu names) never launched. */
void report_coverage(const char *files);
void reset_coverage(void);

/* Marks [p, p + n) unaddressable under AddressSanitizer (a no-op otherwise). */
void poison(const void *p, size_t n);
void unpoison(const void *p, size_t n);
}  // namespace emu

#endif
