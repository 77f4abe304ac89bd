/* The core's side of the distributed engines: the ct__mpi_* and ct__nccl_*
 * calls of dist.c, answered by the MPI and NCCL plugins (mpi.c, nccl.c),
 * which the registry loads on first use. Without a plugin, each call fails
 * with CT_ERR_UNAVAILABLE and the loader's reason (the file that is missing,
 * or the library it could not load). */
#include "backend/plugin.h"

static const ct_mpi_engine *mpi(void) {
  const ct_plugin *p = ct__plugin(CT_PLUGIN_MPI);
  return p ? p->mpi : NULL;
}
static const ct_nccl_engine *nccl(void) {
  const ct_plugin *p = ct__plugin(CT_PLUGIN_NCCL);
  return p ? p->nccl : NULL;
}

static ct_status missing(const char *op, ct_plugin_id id) {
  return ct__fail_status(CT_ERR_UNAVAILABLE, "%s: %s", op, ct__plugin_error(id));
}

/* ---- MPI ---- */

bool ct__mpi_compiled(void) { return mpi() != NULL; }

ct_status ct__mpi_init(int *rank, int *world_size, int *local_rank, bool *owns_mpi,
                       double timeout_s) {
  const ct_mpi_engine *e = mpi();
  return e ? e->init(rank, world_size, local_rank, owns_mpi, timeout_s)
           : missing("dist_init", CT_PLUGIN_MPI);
}
ct_status ct__mpi_finalize(bool owns_mpi) {
  const ct_mpi_engine *e = mpi();
  return e ? e->finalize(owns_mpi) : CT_OK;
}
ct_status ct__mpi_barrier(const char *op) {
  const ct_mpi_engine *e = mpi();
  return e ? e->barrier(op) : missing(op, CT_PLUGIN_MPI);
}
ct_status ct__mpi_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                             ct_dist_op rop) {
  const ct_mpi_engine *e = mpi();
  return e ? e->all_reduce(op, buf, count, dtype, rop) : missing(op, CT_PLUGIN_MPI);
}
ct_status ct__mpi_broadcast(const char *op, void *buf, int64_t nbytes, int root) {
  const ct_mpi_engine *e = mpi();
  return e ? e->broadcast(op, buf, nbytes, root) : missing(op, CT_PLUGIN_MPI);
}
ct_status ct__mpi_max_min_i64(const char *op, const int64_t *in, int64_t *max, int64_t *min,
                              int n) {
  const ct_mpi_engine *e = mpi();
  return e ? e->max_min_i64(op, in, max, min, n) : missing(op, CT_PLUGIN_MPI);
}

/* ---- NCCL ---- */

bool ct__nccl_compiled(void) { return nccl() != NULL; }

ct_status ct__nccl_init(int rank, int world_size, ct_device dev, double timeout_s) {
  const ct_nccl_engine *e = nccl();
  return e ? e->init(rank, world_size, dev, timeout_s) : missing("dist_init", CT_PLUGIN_NCCL);
}
void ct__nccl_finalize(void) {
  const ct_nccl_engine *e = nccl();
  if (e) e->finalize();
}
ct_status ct__nccl_all_reduce(const char *op, void *buf, int64_t count, ct_dtype dtype,
                              ct_dist_op rop, ct_device dev) {
  const ct_nccl_engine *e = nccl();
  return e ? e->all_reduce(op, buf, count, dtype, rop, dev) : missing(op, CT_PLUGIN_NCCL);
}
ct_status ct__nccl_broadcast(const char *op, void *buf, int64_t count, ct_dtype dtype, int root,
                             ct_device dev) {
  const ct_nccl_engine *e = nccl();
  return e ? e->broadcast(op, buf, count, dtype, root, dev) : missing(op, CT_PLUGIN_NCCL);
}
ct_status ct__nccl_synchronize(const char *op, ct_device dev) {
  const ct_nccl_engine *e = nccl();
  return e ? e->synchronize(op, dev) : missing(op, CT_PLUGIN_NCCL);
}
ct_status ct__nccl_record(ct_device dev, void *data) {
  const ct_nccl_engine *e = nccl();
  return e ? e->record(dev, data) : CT_OK;
}
