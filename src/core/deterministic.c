/* The process-wide switch for deterministic algorithms
 * (ct_use_deterministic_algorithms, include/ctensor/device.h): an atomic the
 * GPU backend reads at each op that has a faster nondeterministic path, as
 * torch.use_deterministic_algorithms. The CPU's ops are deterministic either
 * way. */
#include <stdatomic.h>

#include "ctensor.h"

static atomic_bool deterministic;

void ct_use_deterministic_algorithms(bool mode) {
  atomic_store_explicit(&deterministic, mode, memory_order_relaxed);
}

bool ct_are_deterministic_algorithms_enabled(void) {
  return atomic_load_explicit(&deterministic, memory_order_relaxed);
}
