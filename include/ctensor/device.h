/* ctensor/device.h: devices, the default device, streams, events, threads.
 *
 * A device is a small value: ct_cpu(), ct_cuda(0), ct_device_parse("cuda:1").
 * Device-agnostic code asks for ct_default_device(): the device named by the
 * environment variable CT_DEVICE ("cpu", "cuda", "cuda:1"), else the best one
 * available (cuda:0 when a GPU is present, else the CPU).
 *
 *   ct_device dev = ct_default_device();
 *   ct_tensor *x = ct_zeros(CT_SHAPE(8, 42), &(ct_tensor_opts){.device = dev});
 *
 * Operations on CUDA tensors are queued on the device's current stream and
 * return at once; reading values on the host synchronizes. CPU operations run
 * synchronously. This header includes no CUDA header.
 */
#ifndef CTENSOR_DEVICE_H
#define CTENSOR_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctensor/api.h"
#include "ctensor/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ct_device_type { CT_DEVICE_CPU = 0, CT_DEVICE_CUDA = 1 } ct_device_type;

/* A device: {CT_DEVICE_CPU, 0} (the zero value) or {CT_DEVICE_CUDA, n}. */
typedef struct ct_device {
  int8_t type;  /* ct_device_type */
  int8_t index; /* GPU ordinal among the visible ones; 0 for the CPU */
} ct_device;

#define CT_DEVICE_NAME_MAX 16

CT_API ct_device ct_cpu(void);
CT_API ct_device ct_cuda(int index);
CT_API bool ct_device_equal(ct_device a, ct_device b);
/* "cpu" or "cuda:N". The string is static storage per thread (rotating
 * buffers, so two calls may appear in one printf). */
CT_API const char *ct_device_name(ct_device device);
/* Parses "cpu", "cuda" (the current CUDA device) or "cuda:N". Fails with
 * CT_ERR_DEVICE for a malformed name and CT_ERR_UNAVAILABLE for a CUDA device
 * this machine or build does not have. */
CT_API ct_status ct_device_parse(const char *name, ct_device *out);
/* The default device: the device CT_DEVICE names (when set and not "auto"),
 * else the first usable GPU, else the CPU (ct_cuda_unavailable_reason says
 * why). A CT_DEVICE that cannot be used is an error, never a fallback: its
 * code (CT_ERR_UNAVAILABLE, or CT_ERR_DEVICE for a malformed name) and a
 * message with the reason ("CT_DEVICE=cuda cannot be used: ... the CUDA
 * driver is not installed (...)"); *out is then the CPU. Programs call this
 * and stop on the error. */
CT_API ct_status ct_resolve_default_device(ct_device *out);
/* ct_resolve_default_device for code that cannot stop: on its error, the CPU,
 * after printing the reason once per process on stderr. */
CT_API ct_device ct_default_device(void);
/* Why the default device is the CPU, for a person: "" when a usable GPU is
 * visible (ct_cuda_is_available), else one of: this ctensor was built
 * without CUDA; the CUDA backend (libctensor-cuda.so) was not found (where it
 * was looked for); it could not be loaded (the system loader's message, such
 * as a missing libcudart or libcudnn) or is damaged or from another ctensor
 * version; the CUDA driver is not installed (the loader's message for
 * libcuda.so.1) or is older than the runtime; the driver sees no GPU
 * (CUDA_VISIBLE_DEVICES shown when set); only GPUs this build has no code
 * for. Loads the CUDA backend, as ct_cuda_is_available. The string is the
 * library's, the same for the life of the process. */
CT_API const char *ct_cuda_unavailable_reason(void);

/* Whether the CUDA backend is present (see "Backends" below) and a usable GPU
 * is visible: one of compute capability 8.0 or newer (an older one is counted
 * and described, but ops on it fail with CT_ERR_UNAVAILABLE saying why). */
CT_API bool ct_cuda_is_available(void);
/* Number of visible GPUs, usable or not (0 without the CUDA backend).
 * Honours CUDA_VISIBLE_DEVICES. */
CT_API int ct_cuda_device_count(void);
/* The current CUDA device (where "cuda" without an index goes). */
CT_API ct_status ct_cuda_set_device(int index);
CT_API int ct_cuda_current_device(void);

/* What a GPU is (torch.cuda.get_device_properties). */
typedef struct ct_cuda_device_properties {
  char name[256];           /* "NVIDIA H100 80GB HBM3" */
  char uuid[48];            /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
  size_t total_memory;      /* bytes of device memory */
  int major, minor;         /* compute capability, e.g. 9.0 */
  int multiprocessor_count; /* SMs */
  int max_threads_per_multiprocessor;
  int max_threads_per_block;
  int warp_size;
  size_t shared_memory_per_block; /* bytes usable by one block (opt-in maximum) */
  size_t shared_memory_per_multiprocessor;
  int l2_cache_size;    /* bytes */
  int memory_bus_width; /* bits */
  int pci_domain_id, pci_bus_id, pci_device_id;
  bool is_integrated; /* shares memory with the host */
  bool ecc_enabled;
} ct_cuda_device_properties;

/* Fills *out with the properties of visible GPU `index` (an index among the
 * CUDA_VISIBLE_DEVICES ones, as everywhere). Fails with CT_ERR_UNAVAILABLE and
 * a message saying why (no GPU, no driver, index out of range, a build without
 * CUDA), with CT_ERR_ARG for a NULL out; *out is zeroed on failure. */
CT_API ct_status ct_cuda_get_device_properties(int index, ct_cuda_device_properties *out);
/* Versions of the CUDA driver (the newest CUDA version it supports) and of the
 * CUDA runtime this library uses, encoded as CUDA does: 1000 * major +
 * 10 * minor (12040 is 12.4). Fail with CT_ERR_UNAVAILABLE (*version = 0) when
 * no driver is installed (driver), or the build has no CUDA (both). */
CT_API ct_status ct_cuda_driver_version(int *version);
CT_API ct_status ct_cuda_runtime_version(int *version);

/* Whether f32 matrix products on CUDA may use TF32 tensor cores (about 3e-4
 * relative error, several times faster). Off by default: f32 products are
 * exact f32 GEMMs, as torch.backends.cuda.matmul.allow_tf32 = False. A no-op
 * in builds without CUDA. */
CT_API void ct_cuda_set_allow_tf32(bool allow);

/* Deterministic algorithms, as torch.use_deterministic_algorithms: off by
 * default. Process-wide (an atomic; every thread sees the last setting),
 * taking effect at the next operation. CPU operations are deterministic
 * either way. On CUDA, these ops write with atomics by default, so with
 * repeated indices float sums may differ in their last bits from run to run,
 * and a plain write leaves one of the duplicates, unspecified which:
 *   scatter_add (and the backward of gather, index_select, embedding,
 *   masked_select, sort/topk values, repeat, repeat_interleave and
 *   reflect/replicate padding), bincount with weights,
 *   index_put with accumulate (and the backward of ct_index),
 *   scatter and index_put without accumulate (which duplicate wins).
 * With the flag on they sort the destinations (stable, with the source
 * positions) and reduce each run of equal destinations in source order: the
 * result is the same bit for bit run to run, and the CPU's (which adds in
 * source order). This costs a sort (several launches and scratch memory of
 * 16 bytes per source element, rounded up to a power of two). An op that has
 * no deterministic algorithm on the device fails with CT_ERR_UNAVAILABLE
 * naming the op while the flag is on. */
CT_API void ct_use_deterministic_algorithms(bool mode);
CT_API bool ct_are_deterministic_algorithms_enabled(void);

/* Blocks until all queued work on the device is done (no-op on the CPU). */
CT_API ct_status ct_synchronize(ct_device device);

/* Streams: ordered queues of device work. On the CPU a stream is a valid
 * handle whose operations run at once. */
typedef struct ct_stream ct_stream;
CT_API ct_stream *ct_stream_new(ct_device device);
/* NULL is a no-op. A CUDA stream's queued work is waited for first, so the
 * memory the caching allocator keeps for the stream can serve others. */
CT_API void ct_stream_free(ct_stream *stream);
/* The stream new work on its device goes to; NULL restores the default stream. */
CT_API ct_status ct_stream_set_current(ct_device device, ct_stream *stream);
CT_API ct_stream *ct_stream_current(ct_device device);
CT_API ct_status ct_stream_synchronize(ct_stream *stream);

/* Marks t's memory as in use by work queued on `stream` (NULL: the current
 * stream of t's device), as torch's Tensor.record_stream. The caching
 * allocator hands a freed block again only to work on the stream that
 * allocated it; a block also recorded on other streams is reused only once
 * the work queued on them up to the block's release (its storage's last
 * tensor or view freed) has finished: an event per stream, polled without
 * blocking. Without it, a tensor used on a second stream must be synchronized
 * with before its free.
 *
 *   ct_stream_set_current(dev, side);
 *   ct_tensor *y = ct_mul_scalar(x, 2.0);   // x read on `side`
 *   ct_stream_set_current(dev, NULL);
 *   ct_record_stream(x, side);
 *   ct_free(x);                             // safe: not reused until `side` is past it
 *
 * The mark covers the whole storage (every view of it) until its release. CPU
 * tensors: a no-op (CT_OK); pinned CPU tensors take a CUDA stream, for
 * transfers queued there by hand (ct_to with non_blocking records its own).
 * A CUDA tensor with a stream of another device: CT_ERR_DEVICE. */
typedef struct ct_tensor ct_tensor;
CT_API ct_status ct_record_stream(ct_tensor *t, ct_stream *stream);

/* Events: markers in a stream, for ordering and timing. */
typedef struct ct_event ct_event;
CT_API ct_event *ct_event_new(ct_device device, bool enable_timing);
CT_API void ct_event_free(ct_event *event); /* NULL is a no-op */
/* Records the event on a stream (NULL: the device's current stream). */
CT_API ct_status ct_event_record(ct_event *event, ct_stream *stream);
CT_API ct_status ct_event_synchronize(ct_event *event);
/* Makes future work on `stream` (NULL: current) wait for `event`. */
CT_API ct_status ct_stream_wait_event(ct_stream *stream, ct_event *event);
/* Milliseconds between two recorded timing events; synchronizes on `end`. */
CT_API ct_status ct_event_elapsed_ms(ct_event *start, ct_event *end, float *ms);

/* CPU threads used by large operations: a pool of ctensor's own (the calling
 * thread is one of them), whose idle threads sleep after a few microseconds,
 * so a program's own threads (its data loader) and other processes get the
 * CPU back. Defaults to the CPUs the process may run on, or CT_NUM_THREADS /
 * OMP_NUM_THREADS when set. Small operations run on the calling thread; an
 * operation called while the pool is busy (from another thread) runs on its
 * own thread. The BLAS runs single-threaded under it (OPENBLAS_NUM_THREADS
 * has no effect). ct_set_num_threads takes effect at the next operation. */
CT_API void ct_set_num_threads(int n);
CT_API int ct_get_num_threads(void);

/* Statistics of a device's caching allocator (for the CPU: the host cache).
 *
 * A CUDA device's memory comes from the driver in segments (one cudaMalloc
 * each) that the allocator cuts into blocks (docs/design-notes.md, "CUDA
 * caching allocator"): `reserved` is the segments' bytes, `allocated` the
 * live tensors' blocks (their sizes rounded up to 512 B), `requested` what
 * the tensors asked for. reserved - allocated is cached: of it,
 * `inactive_split` lies in holes between live blocks, usable only by requests
 * that fit there (fragmentation), and `largest_free_block` bounds the
 * largest request the cache can serve without the driver. The CPU reports
 * requested = allocated and 0 for the fragmentation fields (its cache keeps
 * whole blocks by size class). */
typedef struct ct_memory_stats {
  size_t allocated;        /* bytes in live tensors (their blocks) */
  size_t reserved;         /* bytes held: live plus cached */
  size_t peak_allocated;   /* high-water mark of `allocated` */
  uint64_t num_allocs;     /* allocation requests served */
  uint64_t num_cache_hits; /* requests served from the cache */
  /* bytes the live tensors asked for (allocated - requested: rounding) */
  size_t requested;
  /* free bytes in segments that also hold live blocks */
  size_t inactive_split;
  /* the largest free block in the cache */
  size_t largest_free_block;
  /* segments held: driver allocations not yet returned */
  uint64_t num_segments;
  /* segments ever asked of the driver (cudaMalloc calls that succeeded) */
  uint64_t num_driver_allocs;
  /* out-of-memory retries that returned the cache to the driver */
  uint64_t num_cache_flushes;
} ct_memory_stats;
CT_API ct_status ct_memory_stats_get(ct_device device, ct_memory_stats *out);
/* Returns cached, unused blocks to the system (host cache or GPU cache). */
CT_API ct_status ct_empty_cache(ct_device device);
CT_API ct_status ct_cuda_empty_cache(void);

/* ---- Backends -------------------------------------------------------------
 * The CPU backend is part of libctensor. The CUDA backend, the NCCL engine
 * and the MPI engine (ctensor/dist.h) are shared objects of their own next to
 * it (libctensor-cuda.so, libctensor-nccl.so, libctensor-mpi.so), loaded on
 * first use: the first CUDA device asked for (ct_cuda_is_available,
 * ct_device_parse("cuda:0"), CT_DEVICE), the first ct_dist_* call. So a
 * program built against ctensor runs on a machine without CUDA, MPI or NCCL,
 * and maps their libraries only when it uses them. A backend is looked for in
 * the directories of the environment variable CT_BACKEND_PATH (':'-separated),
 * then next to libctensor, then on the system's library path; the first file
 * found is used. When it is missing, or a library it needs is (libcudart,
 * libcudnn, libnccl, libmpi), the backend is unavailable and the errors of
 * the calls that need it give the loader's reason. A static libctensor.a has
 * the backends it was built with linked in. */
typedef struct ct_backend_info {
  const char *name;      /* "cpu", "cuda", "nccl", "mpi" */
  bool available;        /* present and loaded (not whether a GPU is visible) */
  bool builtin;          /* part of the library itself (no shared object) */
  const char *file;      /* the shared object it was loaded from; "" if built in or absent */
  const char *version;   /* the ctensor version it was built from; "" if absent */
  const char *libraries; /* the libraries it runs on and their versions, e.g.
                          * "CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.13.0"; "" if absent */
  const char *error;     /* why it is not available (the loader's message); "" if it is */
} ct_backend_info;
/* Number of backends and engines ctensor knows (cpu, cuda, nccl, mpi). */
CT_API int ct_backend_count(void);
/* What backend `index` (0 <= index < ct_backend_count()) is, loading it if it
 * was not yet: the strings are static storage. CT_ERR_ARG for a bad index or
 * a NULL out. */
CT_API ct_status ct_backend_get_info(int index, ct_backend_info *out);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_DEVICE_H */
