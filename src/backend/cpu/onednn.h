/* oneDNN (Intel's deep-learning primitives, the library PyTorch's CPU
 * convolutions run on), loaded on first use like the BLAS (blas.h): the
 * library is optional at run time. Without it, with CT_ONEDNN=0, or in a
 * build that did not find dnnl.h, the kernels that could use it run their
 * own code (onednn.c says why in ct__onednn_describe()).
 *
 * Only the 2.x C API is used (op descriptors: Debian's libdnnl.so.2);
 * conv_onednn.c is its one user. Design and measures: docs/design-notes.md,
 * "Convolutions through oneDNN". */
#ifndef CT_BACKEND_CPU_ONEDNN_H
#define CT_BACKEND_CPU_ONEDNN_H

#include <stdbool.h>

/* What CT_ONEDNN asks for: "0" off, "all" every case oneDNN can compute
 * (tests and measurement), anything else (or unset) the cases where it
 * measured faster than ctensor's own kernels. */
typedef enum ct_onednn_mode { CT_ONEDNN_OFF, CT_ONEDNN_AUTO, CT_ONEDNN_ALL } ct_onednn_mode;
ct_onednn_mode ct__onednn_mode(void);

/* "2.6.3 (file), on ctensor's threads, for conv2d ..." or "not used: why"
 * (loads it). */
const char *ct__onednn_describe(void);

#if defined(CT_HAVE_DNNL)
#include <dnnl.h>

typedef struct ct_onednn_fns {
  __typeof__(dnnl_memory_desc_init_by_tag) *memory_desc_init_by_tag;
  __typeof__(dnnl_memory_desc_equal) *memory_desc_equal;
  __typeof__(dnnl_memory_desc_get_size) *memory_desc_get_size;
  __typeof__(dnnl_memory_create) *memory_create;
  __typeof__(dnnl_memory_set_data_handle) *memory_set_data_handle;
  __typeof__(dnnl_memory_destroy) *memory_destroy;
  __typeof__(dnnl_dilated_convolution_forward_desc_init) *conv_forward_desc_init;
  __typeof__(dnnl_dilated_convolution_backward_data_desc_init) *conv_backward_data_desc_init;
  __typeof__(dnnl_dilated_convolution_backward_weights_desc_init) *conv_backward_weights_desc_init;
  __typeof__(dnnl_reorder_primitive_desc_create) *reorder_primitive_desc_create;
  __typeof__(dnnl_primitive_desc_create) *primitive_desc_create;
  __typeof__(dnnl_primitive_desc_query_md) *primitive_desc_query_md;
  __typeof__(dnnl_primitive_desc_destroy) *primitive_desc_destroy;
  __typeof__(dnnl_primitive_create) *primitive_create;
  __typeof__(dnnl_primitive_execute) *primitive_execute;
  __typeof__(dnnl_primitive_destroy) *primitive_destroy;
  __typeof__(dnnl_stream_wait) *stream_wait;
  __typeof__(dnnl_primitive_attr_create) *primitive_attr_create;
  __typeof__(dnnl_primitive_attr_destroy) *primitive_attr_destroy;
  __typeof__(dnnl_primitive_attr_set_scratchpad_mode) *primitive_attr_set_scratchpad_mode;
} ct_onednn_fns;

/* The library's functions, its CPU engine and a stream on it: valid once
 * ct__onednn_ready() returned true. */
extern ct_onednn_fns ct__dnnl;
dnnl_engine_t ct__onednn_engine(void);
dnnl_stream_t ct__onednn_stream(void);
#endif

/* Whether oneDNN may be used now: not switched off, loaded (on the first
 * call), a 2.x release, its engine made. */
bool ct__onednn_ready(void);

/* Brackets oneDNN calls on the calling thread: they run on that thread alone
 * (OpenMP's thread count set to 1: no team), and the thread's own count is
 * put back after (the program's thread may be running OpenMP code of its
 * own, or a library sharing this OpenMP runtime). */
int ct__onednn_single_thread_begin(void);
void ct__onednn_single_thread_end(int saved);

#endif /* CT_BACKEND_CPU_ONEDNN_H */
