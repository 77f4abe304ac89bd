/* ctensor/random.h: random tensors from one counter-based generator.
 *
 * All random numbers come from Philox 4x32-10 keyed by a seed. Element i of a
 * random tensor depends only on (seed, the generator's offset, i), so the CPU
 * and the CUDA backend produce bit-identical rand/randn/randint for the same
 * seed, whatever the number of threads. (The exact layout is documented in
 * src/core/philox.h.) A generator's state is (seed, offset): the offset counts
 * 128-bit Philox blocks; a fill of n elements consumes ceil(n / 4) blocks (or
 * ceil(n / 2) for f64 uniform/normal and for randint ranges over 2^32), so
 * consecutive draws never overlap. Generators are thread-safe. Values do not
 * match PyTorch's (different streams), only its distributions.
 *
 *   ct_manual_seed(42);
 *   ct_tensor *x = ct_randn(CT_SHAPE(3, 4), NULL);
 */
#ifndef CTENSOR_RANDOM_H
#define CTENSOR_RANDOM_H

#include "ctensor/api.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Seeds the default generator and resets its offset. Until called, the seed
 * is 67280421310721 (PyTorch's default). */
CT_API void ct_manual_seed(uint64_t seed);
/* The default generator (process-wide; its offset advances atomically; not to
 * be freed: ct_generator_free ignores it). */
CT_API ct_generator *ct_default_generator(void);

/* An independent generator (for data loaders, per-run determinism). */
CT_API ct_generator *ct_generator_new(uint64_t seed);
CT_API void ct_generator_free(ct_generator *g); /* NULL is a no-op */
CT_API void ct_generator_set_state(ct_generator *g, uint64_t seed, uint64_t offset);
CT_API void ct_generator_get_state(const ct_generator *g, uint64_t *seed, uint64_t *offset);
/* One uniform 64-bit draw (advances the generator), for host-side choices. */
CT_API uint64_t ct_generator_next_u64(ct_generator *g);

/* Uniform [0, 1). Floating dtypes only (else CT_ERR_DTYPE); f16/bf16 values
 * carry 11/8 random bits so that they stay below 1. */
CT_API ct_tensor *ct_rand(const int64_t *shape, int ndim, const ct_tensor_opts *opts);
/* Standard normal (Box-Muller). Floating dtypes only. */
CT_API ct_tensor *ct_randn(const int64_t *shape, int ndim, const ct_tensor_opts *opts);
/* Integers uniform in [low, high), in opts->dtype on opts->device. The
 * default dtype is i64, as torch.randint's: NULL opts and the zero value of
 * opts->dtype (CT_F32) both give i64, so options that only name a device
 * still give integers (cast the result for f32 values); other dtypes,
 * floating ones included, are taken as given. CT_ERR_ARG unless low < high
 * and every value of the range is exact in the dtype. */
CT_API ct_tensor *ct_randint(int64_t low, int64_t high, const int64_t *shape, int ndim,
                             const ct_tensor_opts *opts);
/* Normal with mean and std (finite, std >= 0). */
CT_API ct_tensor *ct_normal(double mean, double std, const int64_t *shape, int ndim,
                            const ct_tensor_opts *opts);
/* Uniform [low, high) (finite, low <= high). */
CT_API ct_tensor *ct_uniform(double low, double high, const int64_t *shape, int ndim,
                             const ct_tensor_opts *opts);
/* 1 with probability p[i], else 0; same shape/dtype/device as p (g: NULL =
 * default). p must be floating with every value in [0, 1] (checked on the
 * host: a GPU p is synchronized), else CT_ERR_DTYPE / CT_ERR_ARG. */
CT_API ct_tensor *ct_bernoulli(const ct_tensor *p, ct_generator *g);
/* 1 with probability p, else 0, of shape/dtype/device of t. */
CT_API ct_tensor *ct_bernoulli_scalar(const ct_tensor *t, double p, ct_generator *g);
/* In-place fills: uniform [low, high), normal(mean, std). Return t. Floating
 * tensors of any layout (filled in row-major order, as the creators); a leaf
 * requiring grad only inside ct_no_grad_begin/end, as in PyTorch. */
CT_API ct_tensor *ct_uniform_(ct_tensor *t, double low, double high, ct_generator *g);
CT_API ct_tensor *ct_normal_(ct_tensor *t, double mean, double std, ct_generator *g);
/* A random permutation of 0..n-1: always i64 (opts->dtype is ignored), on
 * opts->device (the CPU by default); shuffled on the host from the generator. */
CT_API ct_tensor *ct_randperm(int64_t n, const ct_tensor_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_RANDOM_H */
