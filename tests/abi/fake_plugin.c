/* A shared object posing as a plugin (tests/abi/check_backends.sh): built
 * from another ctensor version (FAKE_OLD_VERSION), or needing a library that
 * is not installed (linked against one that the test then hides). */
#include <stddef.h>
#include <string.h>

#include "backend/plugin.h"

#ifdef FAKE_NEEDS_LIBRARY
int ct_test_gone_function(void);
int (*volatile keep_needed)(void) = ct_test_gone_function;
#endif

__attribute__((visibility("default"))) const ct_plugin *ct_plugin_entry(const ct_plugin_host *h) {
  (void)h;
  static const ct_plugin p = {.abi = CT_PLUGIN_ABI,
                              .core_version = "0.0.0-test",
                              .host_size = sizeof(ct_plugin_host),
                              .backend_size = sizeof(ct_backend),
                              .plugin_size = sizeof(ct_plugin),
                              .name = "cuda"};
  return &p;
}
