/* A shared object posing as a plugin (tests/abi/check_backends.sh): built
 * from another ctensor version (the default), needing a library that is not
 * installed (FAKE_NEEDS_LIBRARY: linked against one that the test then
 * hides), returning a descriptor of another layout whose pointers lead
 * nowhere (FAKE_FOREIGN: a plugin interface number the core does not have),
 * or returning no descriptor (FAKE_NULL). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/plugin.h"

#ifdef FAKE_NEEDS_LIBRARY
int ct_test_gone_function(void);
int (*volatile keep_needed)(void) = ct_test_gone_function;
#endif

__attribute__((visibility("default"))) const ct_plugin *ct_plugin_entry(const ct_plugin_host *h) {
  (void)h;
#if defined(FAKE_NULL)
  return NULL;
#elif defined(FAKE_FOREIGN)
  /* Every field garbage: reading a string or calling a function of it would
   * crash the process; the core must stop at the interface number. */
  static ct_plugin p;
  memset(&p, 0xA5, sizeof p);
  p.abi = 999;
  p.core_version = (const char *)(uintptr_t)0x10;
  p.name = (const char *)(uintptr_t)0x20;
  return &p;
#else
  static const ct_plugin p = {.abi = CT_PLUGIN_ABI,
                              .core_version = "0.0.0-test",
                              .host_size = sizeof(ct_plugin_host),
                              .backend_size = sizeof(ct_backend),
                              .plugin_size = sizeof(ct_plugin),
                              .name = "cuda"};
  return &p;
#endif
}
