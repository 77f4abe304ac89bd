/* The CPU backend's BLAS (OpenBLAS), loaded on first use (blas.c; design in
 * docs/design-notes.md, "CPU threads: a pool of the library's own").
 *
 * A kernel calls ct__blas_load(op) before its first BLAS call and returns
 * the status on failure (the BLAS is missing, or the address-space limit
 * leaves no room for its buffers: CT_ERR_UNAVAILABLE or CT_ERR_OOM naming
 * op); then ct__blas_sgemm & co., which take cblas's arguments. The BLAS
 * runs single-threaded: kernels split large products across ctensor's pool
 * themselves, into at most ct__blas_max_threads() pieces at a time. */
#ifndef CT_BACKEND_CPU_BLAS_H
#define CT_BACKEND_CPU_BLAS_H

#include <cblas.h>

#include "core/internal.h"

typedef struct ct_blas_fns {
  __typeof__(cblas_sgemm) *sgemm;
  __typeof__(cblas_dgemm) *dgemm;
  __typeof__(cblas_sgemv) *sgemv;
  __typeof__(cblas_dgemv) *dgemv;
} ct_blas_fns;
extern ct_blas_fns ct__blas_fns;

ct_status ct__blas_load(const char *op);
/* The dlopen handle of the loaded BLAS (LAPACK's routines are resolved from
 * it: lapack.c). Valid after ct__blas_load. */
void *ct__blas_handle(void);
/* Brackets a call into the loaded library other than ct__blas_fns (LAPACK's
 * routines, which call the BLAS inside and may need a buffer of their own).
 * false: under the load's address-space limit there is no room for one, and
 * OpenBLAS would wait for it forever: the caller must not call, and reports
 * ct__blas_no_room(op). true: call, then ct__blas_call_end(holds). Without a
 * limit at load both cost a branch. */
bool ct__blas_call_begin(bool *holds);
void ct__blas_call_end(bool holds);
/* Records CT_ERR_OOM: op, and why the call was not made. */
ct_status ct__blas_no_room(const char *op);
/* Whether `bytes` more of address space can be mapped now (always, without
 * an RLIMIT_AS): what the libraries loaded at run time (OpenBLAS, oneDNN)
 * check before a load or a call that may reserve memory. */
bool ct__room_for(size_t bytes);
/* How many threads may call the BLAS at once (1 for a build that is not
 * thread-safe, or when the address-space limit leaves room for fewer buffers
 * than ctensor has threads). Valid after ct__blas_load. */
int ct__blas_max_threads(void);
/* "OpenBLAS 0.3.21 ... (file), single-threaded, called from ...", or why it
 * is not loaded. */
const char *ct__blas_describe(void);

#define ct__blas_sgemm (*ct__blas_fns.sgemm)
#define ct__blas_dgemm (*ct__blas_fns.dgemm)
#define ct__blas_sgemv (*ct__blas_fns.sgemv)
#define ct__blas_dgemv (*ct__blas_fns.dgemv)

#endif /* CT_BACKEND_CPU_BLAS_H */
