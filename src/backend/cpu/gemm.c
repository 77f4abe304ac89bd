/* Matrix products split across ctensor's thread pool (blas.h, gemm.h).
 *
 * The BLAS runs single-threaded (blas.c), so a product large enough to pay
 * for threads is cut here into blocks of C, each one single-threaded BLAS
 * call on the pool: whole rows of C when C has at least as many rows as
 * columns, else whole columns. Each call packs what it reads (OpenBLAS
 * copies both operands into its panels), so a cut repeats the packing of
 * the operand it does not cut: all of op(B) (K x N) per block of rows, all
 * of op(A) (M x K) per block of columns; cutting the longer side of C
 * repeats the smaller operand. (A rule that cut rows whenever M >= 64 packed
 * a GPT-2 head's 154 MB weight once per block: its forward product, M = 256
 * tokens by N = 50257, ran at 175 against 245 GFLOP/s cut by columns on 2
 * threads, and a GPT-2 124M training step took 0.94 s against 0.87 s.) Blocks are about
 * twice as many as threads, so that a thread the system does not schedule in
 * time delays only its block (core/parallel.h). Called from inside a pool
 * task, the blocks run in turn on that thread. */
#include "backend/cpu/gemm.h"

#include "core/parallel.h"

/* Multiply-adds below which a product runs on the calling thread (OpenBLAS's
 * own threshold for threading a GEMM, and for GEMV). */
#define CT_GEMM_MIN_MNK 262144.0
#define CT_GEMV_MIN_MN 9216.0

typedef struct gemm_job {
  bool f64, ta, tb, by_rows;
  int64_t M, N, K, lda, ldb, ldc, pieces;
  const char *A, *B;
  char *C;
  double beta;
} gemm_job;

static void gemm_call(const gemm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  size_t es = j->f64 ? sizeof(double) : sizeof(float);
  /* rows r of op(A): row r of A, or column r of the stored transpose */
  const char *A = j->A + (size_t)(j->ta ? r0 : r0 * j->lda) * es;
  /* columns c of op(B): column c of B, or row c of the stored transpose */
  const char *B = j->B + (size_t)(j->tb ? c0 * j->ldb : c0) * es;
  char *C = j->C + (size_t)(r0 * j->ldc + c0) * es;
  enum CBLAS_TRANSPOSE TA = j->ta ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE TB = j->tb ? CblasTrans : CblasNoTrans;
  int m = (int)(r1 - r0), n = (int)(c1 - c0);
  if (j->f64)
    ct__blas_dgemm(CblasRowMajor, TA, TB, m, n, (int)j->K, 1.0, (const double *)A, (int)j->lda,
                   (const double *)B, (int)j->ldb, j->beta, (double *)C, (int)j->ldc);
  else
    ct__blas_sgemm(CblasRowMajor, TA, TB, m, n, (int)j->K, 1.0f, (const float *)A, (int)j->lda,
                   (const float *)B, (int)j->ldb, (float)j->beta, (float *)C, (int)j->ldc);
}

/* Block b's range of [0, n), boundaries on multiples of `align`. */
static void block(int64_t n, int64_t pieces, int64_t b, int64_t align, int64_t *lo, int64_t *hi) {
  *lo = b == 0 ? 0 : (n * b / pieces) / align * align;
  *hi = b == pieces - 1 ? n : (n * (b + 1) / pieces) / align * align;
}

static void gemm_piece(int64_t b, void *vj) {
  const gemm_job *j = vj;
  int64_t lo, hi;
  if (j->by_rows) {
    block(j->M, j->pieces, b, 8, &lo, &hi);
    if (hi > lo) gemm_call(j, lo, hi, 0, j->N);
  } else {
    block(j->N, j->pieces, b, 16, &lo, &hi);
    if (hi > lo) gemm_call(j, 0, j->M, lo, hi);
  }
}

/* Blocks for a product of `work` multiply-adds over `extent` rows or columns
 * (at least `min_extent` each): 1 when small, else up to twice the threads
 * the BLAS may be called from at once. */
static int64_t pieces_for(double work, double min_work, int64_t extent, int64_t min_extent) {
  int nt = ct__num_threads(), bt = ct__blas_max_threads();
  if (bt < nt) nt = bt;
  if (nt <= 1 || work < min_work) return 1;
  int64_t p = 2 * (int64_t)nt;
  double by_work = work / (min_work / 4);
  if ((double)p > by_work) p = (int64_t)by_work;
  if (p > extent / min_extent) p = extent / min_extent;
  return p > 1 ? p : 1;
}

void ct__gemm(bool f64, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A,
              int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  gemm_job j = {.f64 = f64,
                .ta = ta,
                .tb = tb,
                .M = M,
                .N = N,
                .K = K,
                .lda = lda,
                .ldb = ldb,
                .ldc = ldc,
                .A = A,
                .B = B,
                .C = C,
                .beta = beta};
  double work = (double)M * (double)N * (double)K;
  j.by_rows = M >= N;
  j.pieces = pieces_for(work, CT_GEMM_MIN_MNK, j.by_rows ? M : N, j.by_rows ? 8 : 16);
  if (j.pieces <= 1) {
    gemm_call(&j, 0, M, 0, N);
    return;
  }
  ct__parallel_run(j.pieces, gemm_piece, &j);
}

typedef struct gemv_job {
  bool f64, trans;
  int64_t rows, cols, lda, incx, pieces;
  const char *A, *x;
  char *y;
} gemv_job;

/* Block b of y: rows of op(A). */
static void gemv_piece(int64_t b, void *vj) {
  const gemv_job *j = vj;
  size_t es = j->f64 ? sizeof(double) : sizeof(float);
  int64_t ny = j->trans ? j->cols : j->rows, lo, hi;
  block(ny, j->pieces, b, 16, &lo, &hi);
  if (hi <= lo) return;
  /* y[lo, hi) = rows [lo, hi) of A @ x, or columns [lo, hi) of A^T @ x */
  const char *A = j->A + (size_t)(j->trans ? lo : lo * j->lda) * es;
  int r = j->trans ? (int)j->rows : (int)(hi - lo), c = j->trans ? (int)(hi - lo) : (int)j->cols;
  enum CBLAS_TRANSPOSE T = j->trans ? CblasTrans : CblasNoTrans;
  if (j->f64)
    ct__blas_dgemv(CblasRowMajor, T, r, c, 1.0, (const double *)A, (int)j->lda,
                   (const double *)j->x, (int)j->incx, 1.0, (double *)j->y + lo, 1);
  else
    ct__blas_sgemv(CblasRowMajor, T, r, c, 1.0f, (const float *)A, (int)j->lda, (const float *)j->x,
                   (int)j->incx, 1.0f, (float *)j->y + lo, 1);
}

void ct__gemv_acc(bool f64, bool trans, int64_t rows, int64_t cols, const void *A, int64_t lda,
                  const void *x, int64_t incx, void *y) {
  gemv_job j = {.f64 = f64,
                .trans = trans,
                .rows = rows,
                .cols = cols,
                .lda = lda,
                .incx = incx,
                .A = A,
                .x = x,
                .y = y};
  int64_t ny = trans ? cols : rows;
  j.pieces = pieces_for((double)rows * (double)cols, CT_GEMV_MIN_MN, ny, 16);
  if (j.pieces <= 1) {
    j.pieces = 1;
    gemv_piece(0, &j);
    return;
  }
  ct__parallel_run(j.pieces, gemv_piece, &j);
}
