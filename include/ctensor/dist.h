/* ctensor/dist.h: distributed data parallel, as torch.distributed and DDP.
 *
 * One process per rank, started by an MPI launcher (`mpirun -np 2 prog`).
 * Collectives go over MPI between processes (CPU tensors) or over NCCL
 * between GPUs (CUDA tensors; the NCCL unique id travels over MPI). Training
 * data parallel: every rank holds the same model, reads its own shard of each
 * epoch (ct_dataloader_opts.shard_rank / shard_count), and averages gradients
 * before each optimizer step, so all ranks take the same step.
 *
 *   ct_dist_init(NULL);                        // MPI; NCCL for .device = cuda
 *   ct_module *net = make_model();
 *   ct_dist_broadcast_module_(net, 0);         // everyone starts from rank 0's weights
 *   ct_dataloader *dl = ct_dataloader_new(ds, &(ct_dataloader_opts){
 *       .batch_size = 32, .shuffle = true, .seed = 1,
 *       .shard_rank = ct_dist_rank(), .shard_count = ct_dist_world_size()});
 *   ... for each batch: forward, loss, ct_backward,
 *       ct_dist_average_gradients(net);        // one bucketed all-reduce
 *       ct_optimizer_step(opt);
 *   ct_dist_finalize();
 *
 * Every collective must be called by all ranks, in the same order, with
 * tensors of the same shape and dtype (as with MPI and torch.distributed).
 * The functions are blocking for CPU tensors; for CUDA tensors with NCCL they
 * are queued on the device's current stream (the host does not wait).
 *
 * In a build without MPI every function exists: ct_dist_is_available() is
 * false and ct_dist_init (and every collective) fails with
 * CT_ERR_UNAVAILABLE. Before ct_dist_init, collectives fail with
 * CT_ERR_STATE; rank is 0 and world size 1. Functions are for the thread that
 * called ct_dist_init (MPI_THREAD_FUNNELED). This header includes no MPI or
 * NCCL header. */
#ifndef CTENSOR_DIST_H
#define CTENSOR_DIST_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_module ct_module;

/* Which engine carries the collectives. */
typedef enum ct_dist_backend {
  CT_DIST_BACKEND_AUTO = 0, /* NCCL when opts.device is CUDA and NCCL is built in, else MPI */
  CT_DIST_BACKEND_MPI,      /* any tensors; CUDA tensors are staged through host memory */
  CT_DIST_BACKEND_NCCL      /* CUDA tensors of opts.device only */
} ct_dist_backend;

/* The reduction of ct_dist_all_reduce_ (torch.distributed.ReduceOp). */
typedef enum ct_dist_op {
  CT_DIST_SUM = 0,
  CT_DIST_AVG, /* sum / world size; floating dtypes only */
  CT_DIST_MAX,
  CT_DIST_MIN
} ct_dist_op;

typedef struct ct_dist_opts {
  ct_dist_backend backend; /* default AUTO */
  /* The device of the tensors this rank reduces (zero value: the CPU). A
   * CUDA device with `device_from_local_rank` set uses
   * cuda:(local rank % visible GPUs), the usual one-GPU-per-process layout;
   * a CUDA device (given or from the local rank) also becomes the current
   * CUDA device. NCCL needs a CUDA device. */
  ct_device device;
  bool device_from_local_rank;
  /* Seconds a collective waits for the other ranks (0: the environment's
   * CT_DIST_TIMEOUT, else 300), over MPI and NCCL alike. Past it the rank
   * ends the job with a message on stderr naming the collective, itself and
   * the limit, since the collective cannot be abandoned on one rank only.
   * Over MPI the message also names the ranks that did not arrive (stopped,
   * hung, or calling other collectives). Over NCCL a watchdog thread checks
   * each collective's completion on the GPU; past the limit, or on an error
   * NCCL reports, it aborts the NCCL communicator (ncclCommAbort) and ends
   * the process, and the launcher the job; it cannot ask the other ranks
   * which one stopped (MPI is the main thread's). */
  double timeout_s;
} ct_dist_opts;

/* Whether this build has MPI (ct_dist_init can work) / NCCL. */
CT_API bool ct_dist_is_available(void);
CT_API bool ct_dist_is_nccl_available(void);
/* The world size a launcher announced in the environment (mpirun's
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE ...), or 1 when the process was
 * not started by one. Needs no initialization: programs use it to decide
 * whether to call ct_dist_init. */
CT_API int ct_dist_env_world_size(void);

/* Joins the job (torch.distributed.init_process_group): initializes MPI
 * (unless the program did: then MPI is left for it to finalize), duplicates
 * MPI_COMM_WORLD, and with NCCL creates a communicator whose unique id rank 0
 * broadcasts over MPI. NULL opts: defaults. CT_ERR_STATE if already
 * initialized, CT_ERR_UNAVAILABLE without MPI (or NCCL when asked for it),
 * CT_ERR_DEVICE for a CUDA device this machine lacks; an MPI or NCCL failure
 * is reported with the engine's message. */
CT_API ct_status ct_dist_init(const ct_dist_opts *opts);
CT_API bool ct_dist_is_initialized(void);
/* This process's rank in 0..world_size-1 (0 before init). */
CT_API int ct_dist_rank(void);
/* The number of ranks (1 before init). */
CT_API int ct_dist_world_size(void);
/* The rank among the processes on this machine (0 before init). */
CT_API int ct_dist_local_rank(void);
/* The backend in use (MPI or NCCL; AUTO before init), its name ("mpi",
 * "nccl") and the device given at init. */
CT_API ct_dist_backend ct_dist_get_backend(void);
CT_API const char *ct_dist_backend_name(ct_dist_backend backend);
CT_API ct_device ct_dist_device(void);
/* Leaves the job (torch.distributed.destroy_process_group): frees the
 * communicators and finalizes MPI if ct_dist_init initialized it (after which
 * MPI cannot be initialized again in this process). No-op before init. */
CT_API ct_status ct_dist_finalize(void);
/* Blocks until every rank has called it (and, with NCCL, until the device's
 * queued work is done). */
CT_API ct_status ct_dist_barrier(void);

/* ---- Collectives on one tensor (in place) ------------------------------ */

/* t = op over all ranks of t, on every rank (torch.distributed.all_reduce).
 * Any dtype; AVG floating only (CT_ERR_DTYPE); bool SUM and MAX are logical
 * or, MIN logical and. Integer sums wrap as in C. f16 and bf16 are reduced in
 * f32 over MPI (converted, reduced, rounded once), natively by NCCL.
 * A non-contiguous t is reduced through a contiguous copy. With NCCL, t must
 * be on the init device (CT_ERR_DEVICE). t may require grad: the write is not
 * recorded by autograd (as torch's in-place collectives under no_grad). */
CT_API ct_status ct_dist_all_reduce_(ct_tensor *t, ct_dist_op op);
/* t = root's t, on every rank (torch.distributed.broadcast). CT_ERR_ARG for a
 * root outside 0..world_size-1. */
CT_API ct_status ct_dist_broadcast_(ct_tensor *t, int root);
/* All-reduces n tensors (NULL entries skipped) with one collective per
 * (dtype, device): they are flattened into one buffer, reduced, and copied
 * back. Same rules as ct_dist_all_reduce_. */
CT_API ct_status ct_dist_all_reduce_coalesced_(ct_tensor *const *tensors, int n, ct_dist_op op);

/* ---- Data parallel helpers for modules (DDP) -------------------------- */

/* Copies root's parameters and buffers (ct_module_state order) into every
 * rank's module, as DDP does at construction. The modules must have the same
 * structure on all ranks: the count and every tensor's shape and dtype are
 * checked across ranks first (CT_ERR_STATE naming the first mismatch). */
CT_API ct_status ct_dist_broadcast_module_(ct_module *m, int root);
/* Replaces every parameter's gradient by its average over the ranks, as
 * DDP's backward hook: gradients of one dtype and device are flattened into
 * one buffer and reduced with a single collective, then copied back. A
 * parameter that has a gradient on some ranks but not others gets a zero
 * gradient where it lacks one (so it counts as 0 in the average); one with no
 * gradient anywhere is skipped on all ranks. The parameter count is checked
 * across ranks (CT_ERR_STATE). With loss = mean over each rank's equal share
 * of a batch, the result is the gradient of the mean over the whole batch. */
CT_API ct_status ct_dist_average_gradients(ct_module *m);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_DIST_H */
