/* CPU matrix products: out (B, n, m) = a (B, n, k) @ b (B, k, m) [+ out].
 *
 * f32/f64 go to OpenBLAS (sgemm/dgemm, or sgemv/dgemv when n or m is 1). A
 * matrix operand whose strides are row-major (cs 1, rs >= cols) or
 * column-major (rs 1, cs >= rows) is passed to BLAS as it lies (NoTrans or
 * Trans with that leading dimension); only other layouts (steps, broadcast
 * rows) are packed, one matrix at a time into per-worker scratch. bf16
 * products go to the AVX512-BF16 kernel (gemm_bf16.c) where the CPU has it,
 * reading the operands as they lie; other f16/bf16 operands are converted to
 * f32 in scratch, multiplied by sgemm, and the result converted back. Integer dtypes use a plain loop with wrap-around arithmetic.
 *
 * Parallel decomposition: the BLAS runs single-threaded (blas.c). A large
 * product is split into blocks across ctensor's thread pool, one batch after
 * another (gemm.c). When each product is too small for that (gemm n*m*k <=
 * 64^3; gemv below 9216 elements), batches are split across the pool instead,
 * each worker with its own scratch (concurrent single-threaded calls into
 * OpenBLAS are safe). The integer loop splits the B*n output rows across
 * threads. */
#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_loop.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/bf16_rows.h"
#include "backend/cpu/gemm_bf16.h"
#include "core/parallel.h"

/* Sizes at or below which a product runs on one thread (gemm.c; OpenBLAS
 * 0.3.x's own thresholds): gemm when n*m*k <= 65536 x 4, gemv when
 * rows*cols < 2304 x 4. */
#define CT_BLAS_SMALL_MNK 262144.0
#define CT_BLAS_SMALL_MV 9216.0

/* One matrix as BLAS sees it: row-major storage, optionally transposed. */
typedef struct blas_mat {
  const void *p;
  bool trans; /* stored as the (cols, rows) row-major transpose */
  int ld;
} blas_mat;

/* Whether a (rows, cols) matrix with element strides (rs, cs) can go to BLAS
 * without a copy; fills trans and ld. Strides of size-1 dims don't matter. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                        int64_t *ld) {
  int64_t rmin = rows > 1 ? rows : 1, cmin = cols > 1 ? cols : 1;
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= cmin)) {
    *trans = false;
    *ld = rows <= 1 ? cmin : rs;
  } else if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= rmin)) {
    *trans = true;
    *ld = cols <= 1 ? rmin : cs;
  } else {
    return false;
  }
  return *ld <= INT_MAX;
}

/* One operand of the product: (B, rows, cols) with element strides. */
typedef struct mm_operand {
  const char *data;
  int64_t rows, cols, bs, rs, cs;
  bool direct;     /* BLAS reads it in place (else packed into scratch) */
  bool trans;
  int64_t ld;
} mm_operand;

typedef struct mm_job {
  ct_dtype dtype;      /* storage dtype of a, b, out */
  bool half;           /* f16/bf16: compute in f32 */
  bool bf16_kernel;    /* bf16 on gemm_bf16.c's kernel: scratch holds the f32 result only */
  size_t es;           /* storage element size */
  int64_t batches, n, k, m;
  mm_operand a, b;
  char *c;             /* out, contiguous (B, n, m) */
  bool beta_one;
  size_t scratch_per_worker; /* in compute elements (float or double) */
} mm_job;

/* ---- Packing: one matrix into row-major compute-typed scratch ----------- */

static void pack(const mm_job *j, const mm_operand *o, int64_t batch, void *dst) {
  const char *base = o->data + (size_t)(batch * o->bs) * j->es;
  int64_t r = o->rows, c = o->cols;
  if (j->dtype == CT_F64) {
    double *d = dst;
    for (int64_t i = 0; i < r; i++)
      for (int64_t q = 0; q < c; q++) d[i * c + q] = ((const double *)base)[i * o->rs + q * o->cs];
  } else if (j->dtype == CT_F32) {
    float *d = dst;
    for (int64_t i = 0; i < r; i++)
      for (int64_t q = 0; q < c; q++) d[i * c + q] = ((const float *)base)[i * o->rs + q * o->cs];
  } else { /* f16 / bf16 */
    float *d = dst;
    for (int64_t i = 0; i < r; i++)
      for (int64_t q = 0; q < c; q++)
        d[i * c + q] = ct__half_load(base + (size_t)(i * o->rs + q * o->cs) * 2, j->dtype);
  }
}

/* ---- One product in the compute type (f32 or f64) ------------------------ */

/* C (n, m, row-major, ldc = m) = A @ B (+ C if beta_one). */
static void blas_product(bool f64, int64_t n, int64_t m, int64_t k, const blas_mat *A,
                         int64_t a_inc, const blas_mat *B, int64_t b_inc, void *C, bool beta_one) {
  size_t cs = f64 ? sizeof(double) : sizeof(float);
  if (k == 0) {
    if (!beta_one) memset(C, 0, (size_t)(n * m) * cs);
    return;
  }
  /* Matrix-vector products: BLAS gemm is slower than gemv there. The vector's
   * increment is its stride along k; a zero increment (broadcast) is not valid
   * BLAS, so those take gemm. gemv runs with beta 1 on a zeroed y so garbage
   * in a fresh output can't leak through (BLAS scal by 0 may keep NaN). */
  if ((m == 1 && b_inc > 0 && b_inc <= INT_MAX) || (n == 1 && a_inc > 0 && a_inc <= INT_MAX)) {
    if (!beta_one) memset(C, 0, (size_t)(n * m) * cs);
    const blas_mat *M;
    const void *x;
    int inc, rows, cols;
    enum CBLAS_TRANSPOSE t;
    if (m == 1 && b_inc > 0 && b_inc <= INT_MAX) { /* y (n) = A (n, k) x (k) */
      M = A, x = B->p, inc = (int)b_inc;
      t = A->trans ? CblasTrans : CblasNoTrans;
      rows = A->trans ? (int)k : (int)n, cols = A->trans ? (int)n : (int)k;
    } else { /* y (m) = B^T (m, k) a (k) */
      M = B, x = A->p, inc = (int)a_inc;
      t = B->trans ? CblasNoTrans : CblasTrans;
      rows = B->trans ? (int)m : (int)k, cols = B->trans ? (int)k : (int)m;
    }
    ct__gemv_acc(f64, t == CblasTrans, rows, cols, M->p, M->ld, x, inc, C);
    return;
  }
  ct__gemm(f64, A->trans, B->trans, n, m, k, A->p, A->ld, B->p, B->ld, beta_one ? 1.0 : 0.0, C, m);
}

/* Where an operand's matrix `batch` lies for BLAS: in place, or packed into
 * `buf` (packed once when the batch stride is 0). *inc: stride along k. */
static blas_mat operand_for(const mm_job *j, const mm_operand *o, int64_t batch, void *buf,
                            int64_t *packed_batch, bool k_is_cols, int64_t *inc) {
  blas_mat bm;
  if (o->direct) {
    bm.p = o->data + (size_t)(batch * o->bs) * j->es;
    bm.trans = o->trans;
    bm.ld = (int)o->ld;
    *inc = k_is_cols ? o->cs : o->rs;
    if ((k_is_cols ? o->cols : o->rows) <= 1) *inc = 1;
    return bm;
  }
  int64_t key = o->bs == 0 ? 0 : batch;
  if (*packed_batch != key) {
    pack(j, o, batch, buf);
    *packed_batch = key;
  }
  bm.p = buf;
  bm.trans = false;
  bm.ld = (int)(o->cols > 1 ? o->cols : 1);
  *inc = k_is_cols ? 1 : o->cols;
  return bm;
}

/* Batches [b0, b1) of a bf16 product on the bf16 kernel, through an f32
 * result in scratch. */
static void run_batches_bf16(const mm_job *j, int64_t b0, int64_t b1, float *cbuf) {
  int64_t nm = j->n * j->m;
  for (int64_t bt = b0; bt < b1; bt++) {
    const uint16_t *A = (const uint16_t *)j->a.data + bt * j->a.bs;
    const uint16_t *B = (const uint16_t *)j->b.data + bt * j->b.bs;
    char *c = j->c + (size_t)(bt * nm) * j->es;
    if (j->beta_one) ct__bf16_to_f32_row(cbuf, (const uint16_t *)c, nm);
    ct__gemm_bf16(j->n, j->m, j->k, A, j->a.rs, j->a.cs, B, j->b.rs, j->b.cs, cbuf, j->m,
                  j->beta_one);
    ct__bf16_from_f32_row((uint16_t *)c, cbuf, nm);
  }
}

/* Batches [b0, b1) with this worker's scratch. */
static void run_batches(const mm_job *j, int64_t b0, int64_t b1, void *scratch) {
  if (j->bf16_kernel) {
    run_batches_bf16(j, b0, b1, scratch);
    return;
  }
  bool f64 = j->dtype == CT_F64;
  size_t cs = f64 ? sizeof(double) : sizeof(float);
  char *s = scratch;
  void *abuf = s;
  s += j->a.direct ? 0 : (size_t)(j->n * j->k) * cs;
  void *bbuf = s;
  s += j->b.direct ? 0 : (size_t)(j->k * j->m) * cs;
  float *cbuf = (float *)s; /* half only */
  int64_t a_packed = -1, b_packed = -1;
  int64_t nm = j->n * j->m;
  for (int64_t bt = b0; bt < b1; bt++) {
    int64_t ainc, binc;
    blas_mat A = operand_for(j, &j->a, bt, abuf, &a_packed, true, &ainc);
    blas_mat B = operand_for(j, &j->b, bt, bbuf, &b_packed, false, &binc);
    char *c = j->c + (size_t)(bt * nm) * j->es;
    if (!j->half) {
      blas_product(f64, j->n, j->m, j->k, &A, ainc, &B, binc, c, j->beta_one);
      continue;
    }
    if (j->beta_one)
      for (int64_t i = 0; i < nm; i++) cbuf[i] = ct__half_load(c + 2 * i, j->dtype);
    blas_product(false, j->n, j->m, j->k, &A, ainc, &B, binc, cbuf, j->beta_one);
    for (int64_t i = 0; i < nm; i++) ct__half_store(c + 2 * i, j->dtype, cbuf[i]);
  }
}

static void init_operand(mm_operand *o, const ct_tensor *t, bool half) {
  o->data = ct__data(t);
  o->rows = t->shape[1], o->cols = t->shape[2];
  o->bs = t->shape[0] > 1 ? t->strides[0] : 0;
  o->rs = t->strides[1], o->cs = t->strides[2];
  o->direct = !half && blas_layout(o->rows, o->cols, o->rs, o->cs, &o->trans, &o->ld);
}

/* Worker w of `workers`: its share of the batches, with its scratch. */
typedef struct batch_workers {
  const mm_job *j;
  int workers;
  char *scratch;
  size_t scratch_bytes; /* per worker */
} batch_workers;
static void batch_worker(int64_t w, void *vk) {
  const batch_workers *k = vk;
  int64_t B = k->j->batches;
  run_batches(k->j, B * w / k->workers, B * (w + 1) / k->workers,
              k->scratch ? k->scratch + k->scratch_bytes * (size_t)w : NULL);
}

static ct_status float_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b,
                              bool beta_one) {
  ct_status loaded = ct__blas_load("matmul");
  if (loaded != CT_OK) return loaded;
  mm_job j = {.dtype = out->dtype, .half = ct__is_half(out->dtype), .es = ct__elsize(out->dtype),
              .batches = out->shape[0], .n = out->shape[1], .k = a->shape[2], .m = out->shape[2],
              .c = ct__data(out), .beta_one = beta_one};
  if (j.n > INT_MAX || j.m > INT_MAX || j.k > INT_MAX)
    return ct__fail_status(CT_ERR_ARG, "matmul: dims (%lld, %lld, %lld) exceed BLAS's int range",
                           (long long)j.n, (long long)j.k, (long long)j.m);
  init_operand(&j.a, a, j.half);
  init_operand(&j.b, b, j.half);
  /* The kernel's tiles are 8 x 32: thinner products (vectors) stay on sgemv. */
  j.bf16_kernel = j.dtype == CT_BF16 && j.n >= 8 && j.m >= 16 && ct__gemm_bf16_available();
  j.scratch_per_worker = j.bf16_kernel ? (size_t)(j.n * j.m)
                                       : (j.a.direct ? 0 : (size_t)(j.n * j.k)) +
                                             (j.b.direct ? 0 : (size_t)(j.k * j.m)) +
                                             (j.half ? (size_t)(j.n * j.m) : 0);

  double mnk = (double)j.n * (double)j.m * (double)j.k;
  bool single = (j.n == 1 || j.m == 1) ? mnk < CT_BLAS_SMALL_MV : mnk <= CT_BLAS_SMALL_MNK;
  int workers = 1;
  int nt = ct__num_threads();
  if (ct__blas_max_threads() < nt) nt = ct__blas_max_threads();
  if (j.batches > 1 && nt > 1 && single && mnk * (double)j.batches >= 65536.0)
    workers = j.batches < nt ? (int)j.batches : nt;

  size_t csize = j.dtype == CT_F64 ? sizeof(double) : sizeof(float);
  void *scratch = NULL;
  if (j.scratch_per_worker) {
    scratch = ct__malloc(j.scratch_per_worker * csize * (size_t)workers);
    if (!scratch)
      return ct__fail_status(CT_ERR_OOM, "matmul: out of memory for %zu bytes of scratch",
                             j.scratch_per_worker * csize * (size_t)workers);
  }
  if (workers == 1) {
    run_batches(&j, 0, j.batches, scratch);
  } else {
    batch_workers k = {&j, workers, scratch, j.scratch_per_worker * csize};
    ct__parallel_run(workers, batch_worker, &k);
  }
  free(scratch);
  return CT_OK;
}

/* ---- Integers: wrap-around arithmetic, as torch's CPU integer matmul ----- */

typedef struct int_job {
  const ct_tensor *out, *a, *b;
  bool beta_one;
} int_job;

/* int_rows_<S>, S = i8 ... i64, accumulating in unsigned types (defined
 * wrap-around): matmul_int_t.h. */
#define CT_TEMPLATE "backend/cpu/matmul_int_t.h"
#include "core/for_int_types.h"
#undef CT_TEMPLATE

static ct_status int_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b,
                            bool beta_one) {
  int_job j = {out, a, b, beta_one};
  int64_t rows = out->shape[0] * out->shape[1];
  int64_t per_row = out->shape[2] * (a->shape[2] > 0 ? a->shape[2] : 1);
  int64_t grain = CT_PARALLEL_GRAIN / (per_row > 0 ? per_row : 1);
  if (grain < 1) grain = 1;
  switch (out->dtype) {
#define CASE(E, S)                                   \
  case CT_##E:                                       \
    ct__parallel_for(rows, grain, int_rows_##S, &j); \
    return CT_OK;
    CASE(I8, i8)
    CASE(U8, u8) CASE(I16, i16) CASE(I32, i32) CASE(I64, i64)
#undef CASE
        default : return ct__fail_status(CT_ERR_DTYPE, "matmul: no CPU kernel for %s",
                                         ct_dtype_name(out->dtype));
  }
}

ct_status ct__cpu_matmul(ct_tensor *out, const ct_tensor *a, const ct_tensor *b, bool beta_one) {
  if (out->numel == 0) return CT_OK;
  switch (out->dtype) {
  case CT_F32:
  case CT_F64:
  case CT_F16:
  case CT_BF16:
    return float_matmul(out, a, b, beta_one);
  default:
    return int_matmul(out, a, b, beta_one);
  }
}
