/* The MPI engine of a build without MPI: every entry reports that MPI is
 * missing (dist.c checks ct__mpi_compiled first, so only init reaches here). */
#include "dist/dist_internal.h"

static ct_status no_mpi(const char *op) {
  return ct__fail_status(CT_ERR_UNAVAILABLE,
                         "%s: ctensor was built without MPI (install an MPI, e.g. Debian's "
                         "libopenmpi-dev, and reconfigure with -DCTENSOR_MPI=ON)",
                         op);
}

bool ct__mpi_compiled(void) { return false; }
ct_status ct__mpi_init(int *rank, int *world_size, int *local_rank, bool *owns_mpi) {
  return no_mpi("dist_init");
}
ct_status ct__mpi_finalize(bool owns_mpi) { return CT_OK; }
ct_status ct__mpi_barrier(const char *op) { return no_mpi(op); }
ct_status ct__mpi_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                             ct_dist_op rop) {
  return no_mpi(op);
}
ct_status ct__mpi_broadcast(const char *op, void *buf, int64_t nbytes, int root) {
  return no_mpi(op);
}
ct_status ct__mpi_max_min_i64(const char *op, const int64_t *in, int64_t *max, int64_t *min,
                              int n) {
  return no_mpi(op);
}
