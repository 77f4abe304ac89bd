/* ctensor's CPU threads (include/ctensor/device.h): the default is the CPUs
 * the process may run on; ct_set_num_threads sizes the pool that runs large
 * operations, and the BLAS follows it: products are split across that pool,
 * with the BLAS itself single-threaded (no second pool of its own), whatever
 * the count. Results do not depend on the count. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>

#include "ct_test.h"

/* Threads of this process (/proc/self/task), or -1. */
static int process_threads(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* a @ b against a float64 loop over the same values. */
static double matmul_error(int64_t n, int64_t k, int64_t m) {
  ct_tensor *a = ct_randn(CT_SHAPE(n, k), NULL), *b = ct_randn(CT_SHAPE(k, m), NULL);
  ct_tensor *c = ct_matmul(a, b);
  CHECK_OK(c);
  if (!c) return INFINITY;
  const float *A = ct_data_ptr(a), *B = ct_data_ptr(b), *C = ct_data_ptr(c);
  double worst = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double s = 0;
      for (int64_t q = 0; q < k; q++) s += (double)A[i * k + q] * B[q * m + j];
      double e = fabs(s - C[i * m + j]);
      if (e > worst) worst = e;
    }
  return worst;
}

CT_TEST(default_is_the_cpus_available) {
  if (getenv("CT_NUM_THREADS") || getenv("OMP_NUM_THREADS")) return; /* set by the caller */
  cpu_set_t set;
  CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK_MSG(ct_get_num_threads() == CPU_COUNT(&set), "threads %d, CPUs %d", ct_get_num_threads(),
            CPU_COUNT(&set));
}

CT_TEST(blas_follows_the_thread_count) {
  int saved = ct_get_num_threads();
  ct_manual_seed(7);
  /* 3, 2, then 1 thread: the pool holds count - 1 workers beside this thread
   * after a product large enough to be split (256^3 multiply-adds), and the
   * BLAS adds none of its own. */
  const int counts[] = {3, 2, 1};
  for (int t = 0; t < 3; t++) {
    int before = process_threads();
    ct_set_num_threads(counts[t]);
    CHECK(ct_get_num_threads() == counts[t]);
    double err = matmul_error(256, 256, 256);
    CHECK_MSG(err < 1e-3, "%d threads: error %g", counts[t], err);
    /* with one thread the pool is not used, and its workers stay as they were */
    int want = counts[t] > 1 ? counts[t] : before;
    CHECK_MSG(process_threads() == want, "%d threads set: the process runs %d", counts[t],
              process_threads());
  }
  /* a thin product (gemv) and a batched one of small products */
  ct_set_num_threads(2);
  CHECK(matmul_error(4096, 64, 1) < 1e-3);
  CHECK(matmul_error(1, 4096, 64) < 1e-3);

  /* The BLAS loaded is told to run on the calling thread only. */
  void *blas = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  CHECK_MSG(blas, "OpenBLAS is not loaded after a matmul");
  if (blas) {
    int (*get_threads)(void) = (int (*)(void))dlsym(blas, "openblas_get_num_threads");
    CHECK(get_threads && get_threads() == 1);
    dlclose(blas);
  }
  ct_backend_info cpu;
  CHECK_STATUS_OK(ct_backend_get_info(0, &cpu));
  CHECK_MSG(strstr(cpu.libraries, "single-threaded"), "cpu libraries: %s", cpu.libraries);
  ct_set_num_threads(saved);
}

CT_TEST(non_positive_count_means_one) {
  int saved = ct_get_num_threads();
  ct_set_num_threads(0);
  CHECK(ct_get_num_threads() == 1);
  ct_set_num_threads(-4);
  CHECK(ct_get_num_threads() == 1);
  ct_set_num_threads(saved);
}
