/* The library's host allocation functions and their fault injection hook
 * (core/alloc.h). */
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static atomic_bool armed;
static atomic_uint_fast64_t calls, failures;
static uint64_t fail_first, fail_last; /* inclusive; written only while disarmed */

/* Whether this allocation is one the armed hook fails. */
static bool inject(void) {
  if (__builtin_expect(!atomic_load_explicit(&armed, memory_order_relaxed), 1)) return false;
  uint64_t k = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) + 1;
  if (fail_first == 0 || k < fail_first || k > fail_last) return false;
  atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
  return true;
}

void *ct__malloc(size_t nbytes) { return inject() ? NULL : malloc(nbytes ? nbytes : 1); }

void *ct__calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) return NULL;
  return inject() ? NULL : calloc(total ? total : 1, 1);
}

void *ct__malloc_array(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) return NULL;
  return ct__malloc(total);
}

void *ct__realloc(void *p, size_t nbytes) {
  return inject() ? NULL : realloc(p, nbytes ? nbytes : 1);
}

void *ct__realloc_array(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) return NULL;
  return ct__realloc(p, total);
}

void *ct__aligned_alloc(size_t align, size_t nbytes) {
  size_t rounded = (nbytes + align - 1) & ~(align - 1);
  if (rounded < nbytes) return NULL; /* overflow */
  return inject() ? NULL : aligned_alloc(align, rounded ? rounded : align);
}

char *ct__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = ct__malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void ct__free(void *p) { free(p); }

void ct__alloc_fault_arm(uint64_t first, uint64_t count) {
  atomic_store(&armed, false);
  fail_first = first;
  fail_last = count == UINT64_MAX || first + count < first ? UINT64_MAX : first + count - 1;
  if (count == 0) fail_first = 0;
  atomic_store(&calls, 0);
  atomic_store(&failures, 0);
  atomic_store(&armed, true);
}

uint64_t ct__alloc_fault_disarm(void) {
  atomic_store(&armed, false);
  return atomic_load(&calls);
}

uint64_t ct__alloc_fault_failures(void) { return atomic_load(&failures); }
