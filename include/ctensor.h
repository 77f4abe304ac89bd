/* ctensor.h: tensors and neural-network training in C, on CPUs and NVIDIA GPUs.
 *
 * Include this one header. The layers:
 *   ctensor/error.h   status codes, the thread-local last error
 *   ctensor/dtype.h   element types and promotion
 *   ctensor/device.h  devices, streams, events, threads, memory statistics
 *   ctensor/tensor.h  the tensor handle: creation, views, lifetime, transfers
 *   ctensor/random.h  the Philox generator and random tensors
 *   ctensor/ops.h     elementwise ops, reductions, matmul, softmax, indexing
 *   ctensor/io.h      .npy files
 *   ctensor/autograd.h  gradients: requires_grad, backward, no_grad
 *   ctensor/nn.h      layers, losses, modules
 *   ctensor/rnn.h     recurrent layers: LSTM, GRU
 *   ctensor/norm_layers.h  BatchNorm1d, GroupNorm, InstanceNorm2d, RMSNorm
 *   ctensor/conv_layers.h  Conv1d, ConvTranspose2d
 *   ctensor/pool_layers.h  adaptive average and max pooling
 *   ctensor/module_containers.h  Identity, ModuleList, weight tying
 *   ctensor/sort_scan.h  cumsum/cumprod, flip, roll, stepped slicing, sort, topk,
 *                     kthvalue, repeat, repeat_interleave, pad
 *   ctensor/indexing.h  advanced indexing, index_put_, nonzero, bincount,
 *                     searchsorted, unique
 *   ctensor/products.h  addmm, baddbmm, outer, einsum
 *   ctensor/attention.h  fused scaled dot-product attention
 *   ctensor/transformer.h  MultiheadAttention, TransformerEncoderLayer
 *   ctensor/linalg.h  solve, inv, det, slogdet, cholesky, eigh, svd, qr, lstsq,
 *                     matrix norms (LAPACK, cuSOLVER)
 *   ctensor/optim.h   SGD, Adam, AdamW, RMSprop, Adagrad, parameter groups,
 *                     learning-rate schedules
 *   ctensor/amp.h     mixed precision: autocast regions, the gradient scaler
 *   ctensor/data.h    datasets (MNIST, CIFAR-10), transforms, the data loader
 *   ctensor/dist.h    distributed data parallel over MPI and NCCL (mpirun)
 *   ctensor/api.h     CT_API: every public function is declared with it, one
 *                     explicit declaration each (it is what the shared library
 *                     exports; a function declared without it is not)
 * Included on its own (it needs DLPack's header, Debian libdlpack-dev):
 *   ctensor/dlpack.h  zero-copy exchange with NumPy, PyTorch, CuPy...; ct_from_blob
 *
 *   #include <ctensor.h>
 *   int main(void) {
 *     ct_tensor *x = ct_rand(CT_SHAPE(1000), NULL);
 *     ct_tensor *y = ct_rand(CT_SHAPE(1000), NULL);
 *     ct_tensor *z = ct_add(x, y);
 *     double s;
 *     if (!z || ct_item(ct_sum(z, NULL), &s) != CT_OK)   // (leaks the sum; see scopes)
 *       return fprintf(stderr, "%s\n", ct_last_error_message()), 1;
 *     printf("%f\n", s);
 *   }
 *
 * Threads. Any number of threads may call ctensor at once, under these rules
 * (held by tests/test_threads_contract.c and tests/test_threads_stress.c
 * under ThreadSanitizer):
 *   Shared freely: tensors that no thread writes (reading, and ops that read
 *     them); a module for inference (ct_module_forward inside ct_no_grad, in
 *     eval mode: training-mode batch norm writes its running statistics), and
 *     listing its parameters; the default and ct_generator_new generators (a
 *     draw reserves its own range of the stream under the generator's lock:
 *     values never repeat across threads, but which thread gets which range
 *     follows timing: seed one generator per thread for reproducible runs).
 *   Locked: a tensor's .grad. Backward calls on several threads whose graphs
 *     share only leaves (e.g. the parameters of one module) add into each
 *     leaf's gradient under its lock, and ct_set_grad / zero_grad take the
 *     same lock, so no sum is lost and nothing is freed under an add. The
 *     handle ct_grad returns is borrowed: valid until the gradient is replaced
 *     or cleared, so a thread reading it must not race a thread clearing it.
 *     One graph is backed through by one thread at a time.
 *   A data loader (ct_dataloader_next, ct_dataloader_start_epoch) may be read
 *     by several threads: each batch goes once, in order, to whichever thread
 *     asks next.
 *   Per thread: the last error (error.h), the scope stack (tensor.h; the
 *     scope ct_module_forward opens for a forward is the calling thread's, so
 *     threads sharing a module share none of each other's intermediates),
 *     ct_no_grad regions, autocast regions (amp.h), the current stream and
 *     CUDA device (device.h). A random stream is per thread when each thread
 *     has its own generator (ct_generator_new, passed in ct_tensor_opts and
 *     ct_module_opts): its draws then depend on its seed alone.
 *   Independent: separate trainings, each with its own module, optimizer,
 *     data loader and generator, run side by side with no lock of the
 *     caller's, and each ends where it ends alone (the library's thread
 *     pool and allocator are shared and synchronized).
 *   Not synchronized (the caller orders them): writes to a tensor (in-place
 *     ops, optimizer steps, copies into it) against any other use of it;
 *     changing a module (registering, ct_module_to, train/eval, loading a
 *     state) while another thread uses it; ct_requires_grad_ on a shared
 *     tensor; ct_set_num_threads, ct_manual_seed and other process settings.
 */
#ifndef CTENSOR_H
#define CTENSOR_H

#define CTENSOR_VERSION_MAJOR 0
#define CTENSOR_VERSION_MINOR 1
#define CTENSOR_VERSION_PATCH 0

#include "ctensor/amp.h"
#include "ctensor/autograd.h"
#include "ctensor/data.h"
#include "ctensor/device.h"
#include "ctensor/dist.h"
#include "ctensor/dtype.h"
#include "ctensor/error.h"
#include "ctensor/io.h"
#include "ctensor/nn.h"
#include "ctensor/optim.h"
#include "ctensor/ops.h"
#include "ctensor/random.h"
#include "ctensor/tensor.h"
/* recurrent layers */
#include "ctensor/rnn.h"
/* layers */
#include "ctensor/norm_layers.h"
#include "ctensor/conv_layers.h"
#include "ctensor/module_containers.h"
#include "ctensor/pool_layers.h"
#include "ctensor/upsample.h"
/* sort-scan family */
#include "ctensor/sort_scan.h"
/* products; indexing and set ops */
#include "ctensor/indexing.h"
#include "ctensor/products.h"
/* attention */
#include "ctensor/attention.h"
#include "ctensor/transformer.h"
/* linear algebra (LAPACK / cuSOLVER) */
#include "ctensor/linalg.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The library version: "0.1.0". */
CT_API const char *ct_library_version(void);
/* Build options as text: "blas=openblas-pthread threads=pool cuda=OFF ...". */
CT_API const char *ct_build_info(void);
#ifdef __cplusplus
}
#endif

#endif /* CTENSOR_H */
