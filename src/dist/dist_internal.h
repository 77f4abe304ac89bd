/* What the distributed layer (dist.c: checks, staging, buckets, module
 * helpers) asks of its engines. The engines are plugins (backend/plugin.h):
 * mpi.c fills a ct_mpi_engine (libctensor-mpi.so), nccl.c a ct_nccl_engine
 * (libctensor-nccl.so), and engines.c answers the ct__mpi_* and ct__nccl_*
 * calls below through them, loading each on first use; without one, the
 * calls fail with CT_ERR_UNAVAILABLE saying why it could not be loaded. Every
 * function records an error naming `op` and returns its code on failure. */
#ifndef CT_DIST_INTERNAL_H
#define CT_DIST_INTERNAL_H

#include "core/internal.h"

/* ---- MPI (the process group; also carries NCCL's unique id) ---- */

/* The MPI engine is loaded (loads it). */
bool ct__mpi_compiled(void);
/* Initializes MPI unless the program did (then *owns_mpi is false),
 * duplicates MPI_COMM_WORLD and finds rank, size and the local rank. A
 * collective that waits more than timeout_s seconds ends the job with a
 * message naming the ranks it waited for. */
ct_status ct__mpi_init(int *rank, int *world_size, int *local_rank, bool *owns_mpi,
                       double timeout_s);
ct_status ct__mpi_finalize(bool owns_mpi);
ct_status ct__mpi_barrier(const char *op);
/* In-place collectives on host memory: count elements of dtype (not f16/bf16:
 * the caller converts those to f32). AVG is not an MPI op: pass SUM. */
ct_status ct__mpi_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                             ct_dist_op rop);
ct_status ct__mpi_broadcast(const char *op, void *buf, int64_t nbytes, int root);
/* Element-wise max and min over ranks of n int64 values (consistency checks). */
ct_status ct__mpi_max_min_i64(const char *op, const int64_t *in, int64_t *max, int64_t *min, int n);

/* ---- NCCL (CUDA tensors; built only with CUDA, NCCL and MPI) ---- */

/* The NCCL engine is loaded (loads it). */
bool ct__nccl_compiled(void);
/* Creates the communicator on device dev (rank 0's unique id broadcast over
 * MPI with ct__mpi_broadcast). A collective that has not completed on the
 * GPU after timeout_s seconds ends the job (a watchdog thread). */
ct_status ct__nccl_init(int rank, int world_size, ct_device dev, double timeout_s);
void ct__nccl_finalize(void);
/* In-place on contiguous device memory of dev, ordered after the work queued
 * on dev's current stream and before the work queued on it afterwards. */
ct_status ct__nccl_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                              ct_dist_op rop, ct_device dev);
ct_status ct__nccl_broadcast(const char *op, void *buf, int64_t count, ct_dtype dtype, int root,
                             ct_device dev);
/* Waits for the collectives queued so far (barrier). */
ct_status ct__nccl_synchronize(const char *op, ct_device dev);
/* Marks dev memory at data as used by the NCCL stream until freed, so the
 * caching allocator does not hand it to other work before the collective
 * ends. */
ct_status ct__nccl_record(ct_device dev, void *data);

/* ---- The engines' tables (one slot per function above) ---- */

typedef struct ct_mpi_engine {
  ct_status (*init)(int *rank, int *world_size, int *local_rank, bool *owns_mpi, double timeout_s);
  ct_status (*finalize)(bool owns_mpi);
  ct_status (*barrier)(const char *op);
  ct_status (*all_reduce)(const char *op, void *buf, int64_t count, ct_dtype dtype, ct_dist_op rop);
  ct_status (*broadcast)(const char *op, void *buf, int64_t nbytes, int root);
  ct_status (*max_min_i64)(const char *op, const int64_t *in, int64_t *max, int64_t *min, int n);
} ct_mpi_engine;

typedef struct ct_nccl_engine {
  ct_status (*init)(int rank, int world_size, ct_device dev, double timeout_s);
  void (*finalize)(void);
  ct_status (*all_reduce)(const char *op, void *buf, int64_t count, ct_dtype dtype, ct_dist_op rop,
                          ct_device dev);
  ct_status (*broadcast)(const char *op, void *buf, int64_t count, ct_dtype dtype, int root,
                         ct_device dev);
  ct_status (*synchronize)(const char *op, ct_device dev);
  ct_status (*record)(ct_device dev, void *data);
} ct_nccl_engine;

#endif /* CT_DIST_INTERNAL_H */
