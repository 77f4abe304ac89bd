/* The CUDA backend's plugin descriptor: its slot table (backend/backend.h)
 * holds the .cu files' entry points themselves (cuda_kernels.h), grouped by
 * family in the slots' order. Left NULL: the optional slots CUDA does without
 * (lstsq: CPU only, as torch's drivers; rnn_pack/rnn_matmul_packed: the
 * recurrent layers use matmul). */
#include "backend/cuda/cuda_kernels.h"
#include "backend/plugin.h"

static const ct_backend ct__cuda_backend = {
    .name = "cuda",
    /* memory: allocator.cu: caching allocator per device; pinned host memory for device_index -1 */
    .alloc = ct__cuda_alloc,
    .free = ct__cuda_free,
    .memory_stats = ct__cuda_memory_stats,
    .empty_cache = ct__cuda_empty_cache,
    .record_stream = ct__cuda_record_stream,
    /* transfers and fills: copy.cu */
    .copy = ct__cuda_copy,
    .copy_from_host = ct__cuda_copy_from_host,
    .copy_to_host = ct__cuda_copy_to_host,
    .fill = ct__cuda_fill,
    /* elementwise: unary.cu, binary.cu, unary_backward.cu */
    .unary = ct__cuda_unary,
    .binary = ct__cuda_binary,
    .binary_scalar = ct__cuda_binary_scalar,
    .axpy = ct__cuda_axpy,
    .where = ct__cuda_where,
    .unary_backward = ct__cuda_unary_backward,
    /* reductions: reduce.cu, arg_reduce.cu, softmax.cu, softmax_backward.cu */
    .reduce = ct__cuda_reduce,
    .arg_reduce = ct__cuda_arg_reduce,
    .softmax = ct__cuda_softmax,
    .softmax_backward = ct__cuda_softmax_backward,
    /* scans, sorting, searching: scan.cu, remap.cu, sort.cu, search.cu */
    .cumulative = ct__cuda_cumulative,
    .remap = ct__cuda_remap,
    .argsort = ct__cuda_argsort,
    .topk = ct__cuda_topk,
    .topk_wanted = ct__cuda_topk_wanted,
    .searchsorted = ct__cuda_searchsorted,
    .sort_flat = ct__cuda_sort_flat,
    /* indexing: index.cu, adv_index.cu (deterministic.cu) */
    .index_select = ct__cuda_index_select,
    .gather = ct__cuda_gather,
    .scatter = ct__cuda_scatter,
    .masked_select = ct__cuda_masked_select,
    .count_nonzero = ct__cuda_count_nonzero,
    .triangle = ct__cuda_triangle,
    .index_linearize = ct__cuda_index_linearize,
    .index_gather = ct__cuda_index_gather,
    .index_put = ct__cuda_index_put,
    /* linear algebra: matmul.cu (cuBLAS), solver.cu (cuSOLVER) */
    .matmul = ct__cuda_matmul,
    .lu_factor = ct__cuda_lu_factor,
    .lu_solve = ct__cuda_lu_solve,
    .cholesky = ct__cuda_cholesky,
    .eigh = ct__cuda_eigh,
    .svd = ct__cuda_svd,
    .geqrf = ct__cuda_geqrf,
    .orgqr = ct__cuda_orgqr,
    /* neural-network layers: conv.cu (cuDNN), pool.cu, upsample.cu, norm.cu, attention.cu, rnn.cu
     */
    .conv2d = ct__cuda_conv2d,
    .conv2d_backward = ct__cuda_conv2d_backward,
    .pool2d = ct__cuda_pool2d,
    .pool2d_backward = ct__cuda_pool2d_backward,
    .adaptive_pool2d = ct__cuda_adaptive_pool2d,
    .adaptive_pool2d_backward = ct__cuda_adaptive_pool2d_backward,
    .upsample2d = ct__cuda_upsample2d,
    .upsample2d_backward = ct__cuda_upsample2d_backward,
    .batch_norm = ct__cuda_batch_norm,
    .batch_norm_backward = ct__cuda_batch_norm_backward,
    .layer_norm = ct__cuda_layer_norm,
    .layer_norm_backward = ct__cuda_layer_norm_backward,
    .row_norm = ct__cuda_row_norm,
    .row_norm_backward = ct__cuda_row_norm_backward,
    .sdpa = ct__cuda_sdpa,
    .sdpa_backward = ct__cuda_sdpa_backward,
    .rnn_cell = ct__cuda_rnn_cell,
    .rnn_cell_backward = ct__cuda_rnn_cell_backward,
    /* optimizers: optim.cu, amp.cu */
    .optimizer_step = ct__cuda_optimizer_step,
    .amp_unscale = ct__cuda_amp_unscale,
    /* random: random.cu */
    .random = ct__cuda_random,
    /* execution: device.cu */
    .synchronize = ct__cuda_synchronize,
    .stream_new = ct__cuda_stream_new,
    .stream_free = ct__cuda_stream_free,
    .stream_set_current = ct__cuda_stream_set_current,
    .stream_synchronize = ct__cuda_stream_synchronize,
    .event_new = ct__cuda_event_new,
    .event_free = ct__cuda_event_free,
    .event_record = ct__cuda_event_record,
    .event_synchronize = ct__cuda_event_synchronize,
    .stream_wait_event = ct__cuda_stream_wait_event,
    .event_elapsed_ms = ct__cuda_event_elapsed_ms,
    /* devices: device.cu; TF32: matmul.cu and conv.cu */
    .device_count = ct__cuda_device_count,
    .device_usable = ct__cuda_device_usable,
    .set_device = ct__cuda_set_device,
    .current_device = ct__cuda_current_device,
    .set_allow_tf32 = ct__cuda_set_allow_tf32,
    /* device information: device.cu */
    .device_properties = ct__cuda_device_properties,
    .driver_version = ct__cuda_driver_version,
    .runtime_version = ct__cuda_runtime_version,
};

/* Why no GPU can be used (device.cu; declared here, its only user, so that
 * the kernels' common header does not change with it). */
void ct__cuda_unavailable_reason(char *buf, size_t size);

/* The plugin (backend/plugin.h): libctensor-cuda.so, or linked into
 * libctensor.a. */
const ct_plugin *ct__cuda_plugin(void) {
  static const ct_plugin plugin = {
      CT_PLUGIN_HEADER,
      .name = "cuda",
      .library_versions = ct__cuda_library_versions, /* version.cu */
      .unavailable_reason = ct__cuda_unavailable_reason,
      .backend = &ct__cuda_backend,
  };
  return &plugin;
}
