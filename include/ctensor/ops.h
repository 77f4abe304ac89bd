/* ctensor/ops.h: operations on tensors, NumPy/PyTorch style.
 *
 * Conventions (names follow PyTorch):
 *  - ct_op(x, ...)          returns a new tensor (a new reference).
 *  - ct_op_(x, ...)         in place: writes into x and returns x (no new
 *                           reference). The result dtype must be castable to
 *                           x's dtype (no float into an integer tensor).
 *  - ct_op_out(out, x, ...) writes into an existing `out` of the result's shape
 *                           and returns out (no new reference).
 * Under autograd (ctensor/autograd.h), in-place forms are differentiable as in
 * PyTorch: writing a tensor made by recorded ops rewrites its history, a
 * write through a view rewrites its base's, and a leaf that requires grad
 * (or a view of one) can only be written inside ct_no_grad_begin/end. _out
 * forms are not recorded: they refuse (CT_ERR_STATE) an out or an input that
 * requires grad while grad mode is on.
 *  - ct_op_scalar(x, s)     the other operand is a number.
 * Binary operations broadcast as NumPy does and promote dtypes as PyTorch
 * (ct_promote_types). A scalar takes the tensor's dtype, except that a
 * non-integral scalar with an integer/bool tensor gives f32 (1.5 * int -> f32).
 * Operands must be on one device (else CT_ERR_DEVICE); ct_to moves tensors.
 * Math functions of integer tensors (exp, sin, sqrt, ...) return f32.
 *
 *   ct_tensor *c = ct_add(a, b);                  // new tensor
 *   ct_add_(a, b);                                // a += b
 *   ct_mul_scalar_(a, 0.5);                       // a *= 0.5
 *   ct_tensor *s = ct_sum(x, CT_DIMS(1));         // sum over dim 1
 *   ct_tensor *m = ct_mean(x, CT_DIMS_KEEP(0, 1)); // keepdim
 */
#ifndef CTENSOR_OPS_H
#define CTENSOR_OPS_H

#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Elementwise unary ------------------------------------------------- */
/* Each NAME below has ct_NAME(x), ct_NAME_(x) and ct_NAME_out(out, x). */
#define CT__UNARY_DECL(name)                                   \
  ct_tensor *ct_##name(const ct_tensor *x);                    \
  ct_tensor *ct_##name##_(ct_tensor *x);                       \
  ct_tensor *ct_##name##_out(ct_tensor *out, const ct_tensor *x);

CT__UNARY_DECL(neg)        /* -x */
CT__UNARY_DECL(abs)        /* |x| */
CT__UNARY_DECL(exp)        /* e^x */
CT__UNARY_DECL(expm1)      /* e^x - 1, accurate near 0 */
CT__UNARY_DECL(log)        /* natural log; log(0) = -inf, log(<0) = nan */
CT__UNARY_DECL(log1p)      /* log(1 + x), accurate near 0 */
CT__UNARY_DECL(log2)       /* base-2 log */
CT__UNARY_DECL(sqrt)       /* square root */
CT__UNARY_DECL(rsqrt)      /* 1 / sqrt(x) */
CT__UNARY_DECL(sin)
CT__UNARY_DECL(cos)
CT__UNARY_DECL(tan)
CT__UNARY_DECL(tanh)
CT__UNARY_DECL(erf)
CT__UNARY_DECL(sigmoid)    /* 1 / (1 + e^-x), stable for large |x| */
CT__UNARY_DECL(relu)       /* max(x, 0) */
CT__UNARY_DECL(gelu)       /* x * Phi(x), exact (erf) form as torch's default */
CT__UNARY_DECL(gelu_tanh)  /* the tanh approximation (approximate='tanh') */
CT__UNARY_DECL(silu)       /* x * sigmoid(x) */
CT__UNARY_DECL(softplus)   /* log(1 + e^x); x where x > 20 (torch's threshold) */
CT__UNARY_DECL(floor)
CT__UNARY_DECL(ceil)
CT__UNARY_DECL(round)      /* half to even, as torch.round */
CT__UNARY_DECL(trunc)
CT__UNARY_DECL(sign)       /* -1, 0, 1 (0 for 0 and -0; nan stays nan) */
CT__UNARY_DECL(reciprocal) /* 1 / x */
CT__UNARY_DECL(square)     /* x * x */
#undef CT__UNARY_DECL

/* Elementwise predicates: bool results. */
ct_tensor *ct_isnan(const ct_tensor *x);
ct_tensor *ct_isinf(const ct_tensor *x);
ct_tensor *ct_isfinite(const ct_tensor *x);
ct_tensor *ct_logical_not(const ct_tensor *x);

/* clamp(x, lo, hi) = min(max(x, lo), hi); pass -INFINITY / INFINITY for no
 * bound. nan stays nan. Also ct_clamp_(x, ...), ct_clamp_out(out, x, ...). */
ct_tensor *ct_clamp(const ct_tensor *x, double lo, double hi);
ct_tensor *ct_clamp_(ct_tensor *x, double lo, double hi);
ct_tensor *ct_clamp_out(ct_tensor *out, const ct_tensor *x, double lo, double hi);
/* x > 0 ? x : slope * x */
ct_tensor *ct_leaky_relu(const ct_tensor *x, double slope);
ct_tensor *ct_leaky_relu_(ct_tensor *x, double slope);

/* ---- Elementwise binary (broadcasting) ---------------------------------- */
/* Each NAME below has ct_NAME(a, b), ct_NAME_(a, b), ct_NAME_out(out, a, b),
 * ct_NAME_scalar(a, s) and ct_NAME_scalar_(a, s). */
#define CT__BINARY_DECL(name)                                               \
  ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b);             \
  ct_tensor *ct_##name##_(ct_tensor *a, const ct_tensor *b);                \
  ct_tensor *ct_##name##_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b); \
  ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s);              \
  ct_tensor *ct_##name##_scalar_(ct_tensor *a, double s);

CT__BINARY_DECL(add)       /* a + b */
CT__BINARY_DECL(sub)       /* a - b */
CT__BINARY_DECL(mul)       /* a * b */
CT__BINARY_DECL(div)       /* true division: integers give f32 */
CT__BINARY_DECL(floor_divide) /* floor(a / b); integers: error on division by zero */
CT__BINARY_DECL(pow)       /* a ^ b */
CT__BINARY_DECL(maximum)   /* propagates nan */
CT__BINARY_DECL(minimum)   /* propagates nan */
CT__BINARY_DECL(fmod)      /* C fmod: sign of the dividend */
CT__BINARY_DECL(remainder) /* Python %: sign of the divisor */
CT__BINARY_DECL(atan2)     /* atan2(a, b) */
#undef CT__BINARY_DECL

/* s - a and s / a. */
ct_tensor *ct_rsub_scalar(const ct_tensor *a, double s);
ct_tensor *ct_rdiv_scalar(const ct_tensor *a, double s);
/* a + alpha * b (torch.add with alpha); the in-place form is an axpy. */
ct_tensor *ct_add_scaled(const ct_tensor *a, const ct_tensor *b, double alpha);
ct_tensor *ct_add_scaled_(ct_tensor *a, const ct_tensor *b, double alpha);

/* ---- Comparisons and logic (bool results) ------------------------------ */
#define CT__COMPARE_DECL(name)                                              \
  ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b);             \
  ct_tensor *ct_##name##_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b); \
  ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s);

CT__COMPARE_DECL(eq)
CT__COMPARE_DECL(ne)
CT__COMPARE_DECL(lt)
CT__COMPARE_DECL(le)
CT__COMPARE_DECL(gt)
CT__COMPARE_DECL(ge)
CT__COMPARE_DECL(logical_and)
CT__COMPARE_DECL(logical_or)
CT__COMPARE_DECL(logical_xor)
#undef CT__COMPARE_DECL

/* cond ? a : b, broadcasting all three; cond is bool (else nonzero = true). */
ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_where_scalar(const ct_tensor *cond, const ct_tensor *a, double b);

/* Whole-tensor checks on values (false with an error for mismatched shapes). */
bool ct_allclose(const ct_tensor *a, const ct_tensor *b, double rtol, double atol);
bool ct_equal(const ct_tensor *a, const ct_tensor *b);

/* Fills. Return t. */
ct_tensor *ct_fill_(ct_tensor *t, double value);
ct_tensor *ct_zero_(ct_tensor *t);

/* ---- Reductions --------------------------------------------------------- */
/* Which dims to reduce: ndims == 0 (or a NULL pointer) means all dims. */
typedef struct ct_reduce_opts {
  int dims[CT_MAX_DIMS]; /* negative dims count from the end */
  int ndims;
  bool keepdim;          /* keep reduced dims with size 1 */
} ct_reduce_opts;
#define CT_DIMS(...) (&(ct_reduce_opts){.dims = {__VA_ARGS__}, .ndims = CT__NARGS(__VA_ARGS__)})
#define CT_DIMS_KEEP(...) \
  (&(ct_reduce_opts){.dims = {__VA_ARGS__}, .ndims = CT__NARGS(__VA_ARGS__), .keepdim = true})

/* sum and prod of integers/bool give i64; mean, var, std, norm, logsumexp need
 * floating input. f32 sums are accurate for long inputs (blocked pairwise
 * summation). Each has a ct_NAME_out(out, x, r) form.
 * Gradients where the derivative is undefined are PyTorch's: prod at a zero
 * gets the product of the other elements (0 with two zeros in the slice);
 * max/min split the gradient evenly among tied elements; std at zero spread
 * and norm at zero give 0 (var and std with N - correction <= 0 give nan). */
ct_tensor *ct_sum(const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_mean(const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_prod(const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_max(const ct_tensor *x, const ct_reduce_opts *r);  /* torch.amax; nan propagates */
ct_tensor *ct_min(const ct_tensor *x, const ct_reduce_opts *r);  /* torch.amin */
ct_tensor *ct_logsumexp(const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_all(const ct_tensor *x, const ct_reduce_opts *r);  /* bool */
ct_tensor *ct_any(const ct_tensor *x, const ct_reduce_opts *r);  /* bool */
/* Variance / standard deviation dividing by N - correction (1: unbiased). */
ct_tensor *ct_var(const ct_tensor *x, const ct_reduce_opts *r, double correction);
ct_tensor *ct_std(const ct_tensor *x, const ct_reduce_opts *r, double correction);
/* p-norm: (sum |x|^p)^(1/p); p = INFINITY is max |x|, p = 0 counts nonzeros. */
ct_tensor *ct_norm(const ct_tensor *x, double p, const ct_reduce_opts *r);

ct_tensor *ct_sum_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_mean_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_prod_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_max_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_min_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);
ct_tensor *ct_logsumexp_out(ct_tensor *out, const ct_tensor *x, const ct_reduce_opts *r);

/* The dim argument CT_DIM_ALL asks for the index into the flattened tensor. */
#define CT_DIM_ALL (-1000)
/* i64 indices of the first maximum / minimum along dim (nan counts as max). */
ct_tensor *ct_argmax(const ct_tensor *x, int dim, bool keepdim);
ct_tensor *ct_argmin(const ct_tensor *x, int dim, bool keepdim);
/* Values and (if indices != NULL) i64 indices along one dim, as torch.max(x, dim). */
ct_tensor *ct_max_dim(const ct_tensor *x, int dim, bool keepdim, ct_tensor **indices);
ct_tensor *ct_min_dim(const ct_tensor *x, int dim, bool keepdim, ct_tensor **indices);

/* Numerically stable softmax / log_softmax along dim. */
ct_tensor *ct_softmax(const ct_tensor *x, int dim);
ct_tensor *ct_log_softmax(const ct_tensor *x, int dim);
ct_tensor *ct_softmax_out(ct_tensor *out, const ct_tensor *x, int dim);
ct_tensor *ct_log_softmax_out(ct_tensor *out, const ct_tensor *x, int dim);

/* ---- Linear algebra ----------------------------------------------------- */
/* torch.matmul: 1-d x 1-d dot; 2-d x 2-d matrix product; 1-d operands are
 * promoted to a matrix and the added dim removed; batched (>2-d) operands
 * broadcast their batch dims. Transposed views go to BLAS without a copy. */
ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b);
ct_tensor *ct_matmul_out(ct_tensor *out, const ct_tensor *a, const ct_tensor *b);
/* 2-d x 2-d only. */
ct_tensor *ct_mm(const ct_tensor *a, const ct_tensor *b);
/* (B, n, k) x (B, k, m) only. */
ct_tensor *ct_bmm(const ct_tensor *a, const ct_tensor *b);
/* 1-d dot product. */
ct_tensor *ct_dot(const ct_tensor *a, const ct_tensor *b);
/* x @ w^T + bias, as torch.nn.functional.linear (bias may be NULL). With 0
 * input features the result is the bias (zeros without one), and x and w
 * get empty gradients. */
ct_tensor *ct_linear(const ct_tensor *x, const ct_tensor *w, const ct_tensor *bias);

/* ---- Indexing, joining, splitting -------------------------------------- */
/* Entries of x along dim at positions index (1-d integer tensor). */
ct_tensor *ct_index_select(const ct_tensor *x, int dim, const ct_tensor *index);
/* out[i][j] = x[index[i][j]][j] (dim 0), etc.; index has x's ndim. */
ct_tensor *ct_gather(const ct_tensor *x, int dim, const ct_tensor *index);
/* x with x[index[i][j]][j] = src[i][j] (dim 0); the in-place form writes x. */
ct_tensor *ct_scatter(const ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src);
ct_tensor *ct_scatter_(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src);
/* As scatter, but adds into x (repeated indices accumulate). */
ct_tensor *ct_scatter_add(const ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src);
ct_tensor *ct_scatter_add_(ct_tensor *x, int dim, const ct_tensor *index, const ct_tensor *src);
/* 1-d tensor of the elements where mask (bool, broadcast to x) is true. */
ct_tensor *ct_masked_select(const ct_tensor *x, const ct_tensor *mask);
/* x with value where mask is true. */
ct_tensor *ct_masked_fill(const ct_tensor *x, const ct_tensor *mask, double value);
ct_tensor *ct_masked_fill_(ct_tensor *x, const ct_tensor *mask, double value);
/* Joins n tensors along an existing dim (cat) or a new one (stack). */
ct_tensor *ct_cat(ct_tensor *const *tensors, int n, int dim);
ct_tensor *ct_stack(ct_tensor *const *tensors, int n, int dim);
/* Views of pieces of `split_size` along dim (the last may be smaller). Writes
 * at most max_out pieces to out and returns how many there are (-1 on error). */
int ct_split(const ct_tensor *x, int64_t split_size, int dim, ct_tensor **out, int max_out);
/* `chunks` nearly equal views along dim, as torch.chunk; returns the count. */
int ct_chunk(const ct_tensor *x, int chunks, int dim, ct_tensor **out, int max_out);
/* i64 one-hot of integer class indices: shape (..., num_classes); num_classes
 * < 0 means max(index) + 1. */
ct_tensor *ct_one_hot(const ct_tensor *index, int64_t num_classes);
/* Lower / upper triangle of the last two dims (diagonal offset k); others zero. */
ct_tensor *ct_tril(const ct_tensor *x, int64_t k);
ct_tensor *ct_triu(const ct_tensor *x, int64_t k);
ct_tensor *ct_tril_(ct_tensor *x, int64_t k);
ct_tensor *ct_triu_(ct_tensor *x, int64_t k);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_OPS_H */
