// The internal headers shared with the CUDA backend, as C++17, the language
// of the .cu files (the checks: internal_headers.h).
#include "internal_headers.h"

int main() { return run_checks("C++17"); }
