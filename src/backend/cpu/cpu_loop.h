/* The CPU's strided loop: runs an inner kernel over rows of up to four
 * tensors of one shape (out first), after merging dims that are contiguous in
 * every operand, so that most calls see one long row. Large loops are split
 * across ctensor's thread pool (core/parallel.h); small ones run on the
 * calling thread.
 *
 * An inner kernel gets the row's base pointers, the byte stride of each operand
 * along the row (0 for a broadcast operand) and the row length. Kernels test
 * for the contiguous case (stride == element size) so the compiler vectorizes
 * it, and fall back to strided access otherwise. */
#ifndef CT_CPU_LOOP_H
#define CT_CPU_LOOP_H

#include "core/half_dtype.h"
#include "core/internal.h"

#define CT_LOOP_MAX_ARGS 4

/* The loops of the CPU's template headers (*_t.h) take their formula or
 * their variant as an argument and are always inlined into one kernel per
 * formula, where the argument is a constant: the formula is inlined and the
 * loop vectorized as if written out. */
#define CT_ALWAYS_INLINE inline __attribute__((always_inline))

typedef void (*ct_loop_fn)(char **data, const int64_t *strides, int64_t n, void *ctx);

typedef struct ct_loop {
  int nargs;
  int ndim;                                       /* >= 1 after coalescing */
  int64_t shape[CT_MAX_DIMS];                     /* dim ndim-1 is the row */
  int64_t strides[CT_LOOP_MAX_ARGS][CT_MAX_DIMS]; /* in BYTES */
  char *data[CT_LOOP_MAX_ARGS];
  int64_t numel;
} ct_loop;

/* ts[0] is the output; all have the same shape (broadcast beforehand). */
void ct__loop_init(ct_loop *L, int nargs, const ct_tensor *const *ts);
/* Calls fn on every row; splits across threads when numel >= grain
 * (grain <= 0: CT_PARALLEL_GRAIN). */
void ct__loop_run(const ct_loop *L, ct_loop_fn fn, void *ctx, int64_t grain);

/* Convenience: init + run. */
static inline void ct__loop(int nargs, const ct_tensor *const *ts, ct_loop_fn fn, void *ctx) {
  ct_loop L;
  ct__loop_init(&L, nargs, ts);
  ct__loop_run(&L, fn, ctx, 0);
}

/* Runs body(begin, end) over [0, n) split across threads when n >= grain. */
typedef void (*ct_range_fn)(int64_t begin, int64_t end, void *ctx);
void ct__parallel_for(int64_t n, int64_t grain, ct_range_fn fn, void *ctx);


/* X-macro over the dtypes with a native C type: X(CT_ENUM, ctype). f16 and
 * bf16 are handled by converting rows to f32 (see ct__half_rows). */
#define CT_FOR_NATIVE_DTYPES(X) \
  X(CT_F32, float)              \
  X(CT_F64, double)             \
  X(CT_I8, int8_t)              \
  X(CT_U8, uint8_t)             \
  X(CT_I16, int16_t)            \
  X(CT_I32, int32_t)            \
  X(CT_I64, int64_t)            \
  X(CT_BOOL, bool)

/* Rows of f16/bf16 operands are converted to f32 in blocks of this many
 * elements, computed by the f32 kernel, and the output converted back. */
#define CT_HALF_BLOCK 256

/* Runs an f32 row kernel `f32_fn` over operands whose dtypes are given in
 * dtypes[] (CT_F16, CT_BF16 or CT_F32 each; other operand dtypes are passed
 * through untouched, e.g. a bool output). Use as the ct_loop_fn with
 * ctx = ct_half_ctx. */
typedef struct ct_half_ctx {
  ct_loop_fn f32_fn;
  void *f32_ctx;
  int nargs;
  ct_dtype dtypes[CT_LOOP_MAX_ARGS];
  bool out_is_written; /* operand 0 is an output to convert back */
} ct_half_ctx;
void ct__half_rows(char **data, const int64_t *strides, int64_t n, void *ctx);

static inline bool ct__is_half(ct_dtype d) { return d == CT_F16 || d == CT_BF16; }
/* ct__half_load / ct__half_store (one f16 or bf16 element): core/half_dtype.h. */

#endif /* CT_CPU_LOOP_H */
