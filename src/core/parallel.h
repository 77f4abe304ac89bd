/* ctensor's CPU thread pool: what the CPU kernels run their parallel loops on
 * (docs/design-notes.md, "CPU threads: a pool of the library's own").
 *
 * ct__parallel_run(n, fn, ctx) calls fn(i, ctx) once for each task i in
 * [0, n) and returns when all have returned. The calling thread takes part;
 * the pool's workers (ct__num_threads() - 1 of them, started on first use)
 * claim tasks from a shared counter, so a worker that the system does not
 * schedule in time delays only the task it holds, never a fixed share of the
 * work. Which data a task touches is the caller's business (fixed by i), so
 * results never depend on which thread ran what.
 *
 * Idle workers spin for a few microseconds (the next parallel loop of a
 * training step usually comes sooner), then sleep in the kernel, so that a
 * program waiting for its data loader or sharing the machine gets the CPU
 * back. A call made while the pool is busy (from a task, or from another
 * thread such as a data-loader worker) runs its tasks on the calling thread.
 */
#ifndef CT_CORE_PARALLEL_H
#define CT_CORE_PARALLEL_H

#include <stdint.h>

typedef void (*ct_task_fn)(int64_t task, void *ctx);

void ct__parallel_run(int64_t ntasks, ct_task_fn fn, void *ctx);

#endif /* CT_CORE_PARALLEL_H */
