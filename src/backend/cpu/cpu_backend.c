/* The CPU backend's table and its memory: the host caching allocator. */
#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/onednn.h"

#include <pthread.h>
#include <stdio.h>

void *ct__cpu_alloc(int device_index, size_t nbytes, bool pinned) {
  (void)device_index;
  (void)pinned; /* page-locking is the CUDA backend's business; plain memory here */
  void *p = ct__host_alloc(nbytes);
  if (!p) {
    ct_memory_stats st;
    ct__host_memory_stats(&st);
    ct__fail(CT_ERR_OOM,
             "out of host memory allocating %zu bytes (ctensor holds %zu bytes in tensors, %zu "
             "reserved)",
             nbytes, st.allocated, st.reserved);
  }
  return p;
}

void ct__cpu_free(int device_index, void *ptr, size_t nbytes, bool pinned) {
  (void)device_index;
  (void)pinned;
  ct__host_free(ptr, nbytes);
}

static ct_status cpu_memory_stats(int device_index, ct_memory_stats *out) {
  (void)device_index;
  ct__host_memory_stats(out);
  return CT_OK;
}

static ct_status cpu_empty_cache(int device_index) {
  (void)device_index;
  ct__host_empty_cache();
  return CT_OK;
}

const ct_backend ct__cpu_backend = {
    .name = "cpu",
    /* memory */
    .alloc = ct__cpu_alloc,
    .free = ct__cpu_free,
    .memory_stats = cpu_memory_stats,
    .empty_cache = cpu_empty_cache,
    /* transfers and fills */
    .copy = ct__cpu_copy,
    .copy_from_host = ct__cpu_copy_from_host,
    .copy_to_host = ct__cpu_copy_to_host,
    .fill = ct__cpu_fill,
    /* elementwise */
    .unary = ct__cpu_unary,
    .binary = ct__cpu_binary,
    .binary_scalar = ct__cpu_binary_scalar,
    .axpy = ct__cpu_axpy,
    .where = ct__cpu_where,
    .unary_backward = ct__cpu_unary_backward,
    /* reductions */
    .reduce = ct__cpu_reduce,
    .arg_reduce = ct__cpu_arg_reduce,
    .softmax = ct__cpu_softmax,
    .softmax_backward = ct__cpu_softmax_backward,
    /* scans, sorting, searching */
    .cumulative = ct__cpu_cumulative,
    .remap = ct__cpu_remap,
    .argsort = ct__cpu_argsort,
    .topk = ct__cpu_topk,
    .searchsorted = ct__cpu_searchsorted,
    .sort_flat = ct__cpu_sort_flat,
    /* indexing */
    .index_select = ct__cpu_index_select,
    .gather = ct__cpu_gather,
    .scatter = ct__cpu_scatter,
    .masked_select = ct__cpu_masked_select,
    .count_nonzero = ct__cpu_count_nonzero,
    .triangle = ct__cpu_triangle,
    .index_linearize = ct__cpu_index_linearize,
    .index_gather = ct__cpu_index_gather,
    .index_put = ct__cpu_index_put,
    /* linear algebra: matmul: blas.c; factorizations: LAPACK (lapack.c) */
    .matmul = ct__cpu_matmul,
    .lu_factor = ct__cpu_lu_factor,
    .lu_solve = ct__cpu_lu_solve,
    .cholesky = ct__cpu_cholesky,
    .eigh = ct__cpu_eigh,
    .svd = ct__cpu_svd,
    .geqrf = ct__cpu_geqrf,
    .orgqr = ct__cpu_orgqr,
    .lstsq = ct__cpu_lstsq, /* lapack_lstsq.c */
    /* neural-network layers */
    .conv2d = ct__cpu_conv2d,
    .conv2d_backward = ct__cpu_conv2d_backward,
    .pool2d = ct__cpu_pool2d,
    .pool2d_backward = ct__cpu_pool2d_backward,
    .adaptive_pool2d = ct__cpu_adaptive_pool2d,
    .adaptive_pool2d_backward = ct__cpu_adaptive_pool2d_backward,
    .upsample2d = ct__cpu_upsample2d,
    .upsample2d_backward = ct__cpu_upsample2d_backward,
    .batch_norm = ct__cpu_batch_norm,
    .batch_norm_backward = ct__cpu_batch_norm_backward,
    .layer_norm = ct__cpu_layer_norm,
    .layer_norm_backward = ct__cpu_layer_norm_backward,
    .row_norm = ct__cpu_row_norm,
    .row_norm_backward = ct__cpu_row_norm_backward,
    .sdpa = ct__cpu_sdpa,
    .sdpa_backward = ct__cpu_sdpa_backward,
    .rnn_cell = ct__cpu_rnn_cell,
    .rnn_cell_backward = ct__cpu_rnn_cell_backward,
    .rnn_pack = ct__cpu_rnn_pack, /* rnn_gemm.c */
    .rnn_matmul_packed = ct__cpu_rnn_matmul_packed,
    /* optimizers */
    .optimizer_step = ct__cpu_optimizer_step,
    .amp_unscale = ct__cpu_amp_unscale,
    /* random */
    .random = ct__cpu_random,
    /* No execution or device slots: CPU work is synchronous, on one device. */
};

/* The BLAS and oneDNN the CPU backend loads on first use (blas.c, onednn.c),
 * loaded now: "<BLAS>; oneDNN: <version or why not>". */
static char cpu_libraries[1536];
static void describe_libraries(void) {
  snprintf(cpu_libraries, sizeof cpu_libraries, "%s; oneDNN: %s", ct__blas_describe(),
           ct__onednn_describe());
}
const char *ct__cpu_library_versions(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, describe_libraries);
  return cpu_libraries;
}
