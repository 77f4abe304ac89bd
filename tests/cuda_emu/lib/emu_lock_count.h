/* Forced into the translated backend sources of the emulated library
 * (CMakeLists.txt): every pthread_mutex_lock of src/backend/cuda/*.cu is
 * counted as "pthread_mutex_lock" (emu_calls.h), so that the lock round
 * trips of the caching allocator and the library handles show in the per-op
 * counts. The C++ headers that lock through pthreads are read first, so the
 * macro below changes only the backend's own calls. */
#ifndef CT_EMU_LOCK_COUNT_H
#define CT_EMU_LOCK_COUNT_H

#include <pthread.h>

#include <functional>
#include <mutex>

#include "emu_calls.h"

static inline void emu_count_backend_lock(void) { EMU_CALL_NAMED("pthread_mutex_lock"); }
#define pthread_mutex_lock(m) (emu_count_backend_lock(), pthread_mutex_lock(m))

#endif
