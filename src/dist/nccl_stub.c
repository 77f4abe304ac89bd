/* The NCCL engine of a build without NCCL (or without CUDA or MPI): dist.c
 * checks ct__nccl_compiled() before using it, so these only report. */
#include "dist/dist_internal.h"

static ct_status no_nccl(const char *op) {
  return ct__fail_status(CT_ERR_UNAVAILABLE,
                         "%s: ctensor was built without NCCL (it needs the CUDA backend, MPI "
                         "and NCCL's nccl.h and libnccl)",
                         op);
}

bool ct__nccl_compiled(void) { return false; }
ct_status ct__nccl_init(int rank, int world_size, ct_device dev) { return no_nccl("dist_init"); }
void ct__nccl_finalize(void) {}
ct_status ct__nccl_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                              ct_dist_op rop, ct_device dev) {
  return no_nccl(op);
}
ct_status ct__nccl_broadcast(const char *op, void *buf, int64_t count, ct_dtype dtype, int root,
                             ct_device dev) {
  return no_nccl(op);
}
ct_status ct__nccl_synchronize(const char *op, ct_device dev) { return no_nccl(op); }
ct_status ct__nccl_record(ct_device dev, void *data) { return CT_OK; }
