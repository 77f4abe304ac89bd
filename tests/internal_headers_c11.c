/* The internal headers shared with the CUDA backend, as strict ISO C11 (the
 * checks: internal_headers.h). */
#include "internal_headers.h"

int main(void) { return run_checks("C11"); }
