/* Version and build information. */
#include "ctensor.h"

const char *ct_library_version(void) { return CT_VERSION_STRING; }
const char *ct_build_info(void) { return CT_BUILD_INFO; }
