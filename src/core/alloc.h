/* Host memory of the library: every malloc, calloc, realloc, aligned_alloc
 * and strdup of ctensor's own code goes through these functions (a lint test,
 * tests/lint_alloc.sh, keeps it so). The memory is the C library's: free()
 * releases it, and ct__free is free().
 *
 * Going through one place is what makes allocation failure testable: a test
 * can make the Nth allocation (or every allocation from the Nth on) fail and
 * check that each public call then returns CT_ERR_OOM cleanly
 * (tests/test_alloc_failure.c). The check costs one relaxed atomic load per
 * allocation while no fault is armed.
 *
 * C and C++ (the CUDA backend's .cu files) include this header. A plugin's
 * shared object (backend/plugin.h) reaches ct__malloc, ct__calloc and
 * ct__realloc through the host table, so its allocations are counted too. */
#ifndef CT_CORE_ALLOC_H
#define CT_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *ct__malloc(size_t nbytes);
/* count * size bytes, zeroed; NULL (no allocation) when the product overflows. */
void *ct__calloc(size_t count, size_t size);
/* count * size bytes; NULL when the product overflows. */
void *ct__malloc_array(size_t count, size_t size);
/* On failure returns NULL and leaves p allocated, as realloc. */
void *ct__realloc(void *p, size_t nbytes);
/* count * size bytes, growing p; NULL when the product overflows (p kept). */
void *ct__realloc_array(void *p, size_t count, size_t size);
/* align a power of two; nbytes rounded up to a multiple of align here. */
void *ct__aligned_alloc(size_t align, size_t nbytes);
char *ct__strdup(const char *s);
void ct__free(void *p);

/* ---- Fault injection, for tests ------------------------------------------- */

/* Arms the hook: from now on allocations are numbered 1, 2, ...; those
 * numbered first .. first + count - 1 fail (count UINT64_MAX: every one from
 * `first` on; first 0: none, only counting). Not meant to be changed while
 * other threads allocate. */
void ct__alloc_fault_arm(uint64_t first, uint64_t count);
/* Disarms the hook; returns how many allocations were numbered since arming. */
uint64_t ct__alloc_fault_disarm(void);
/* How many allocations failed since arming. */
uint64_t ct__alloc_fault_failures(void);

#ifdef __cplusplus
}
#endif
#endif /* CT_CORE_ALLOC_H */
