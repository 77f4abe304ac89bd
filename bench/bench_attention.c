/* bench_attention: scaled dot-product attention, forward + backward, f32 on the
 * CPU: ctensor's fused kernel (ct_scaled_dot_product_attention) next to the
 * unfused composition softmax(q k^T * scale) v written with ctensor's own
 * matmul and softmax. bench/peers_attention.py times torch on the same
 * shapes with the same method (bench_util.h).
 *
 * Shapes: q, k, v (B, H, T, E), H = 12, E = 64, no mask; T and B from
 * --sizes T1xB1,T2xB2,... (default 1024x1,1024x4,4096x1).
 *
 * Peak memory: before any timing, each (variant, shape) runs one forward +
 * backward in a child process, which reports the growth of its peak resident
 * set (getrusage's ru_maxrss minus the resident set before the call) as
 * {"meta":"peak_memory",...}. A child is a fresh process, so neither
 * variant sees memory the other left cached. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctensor.h>

#include "bench_util.h"

enum { HEADS = 12, HEAD_DIM = 64 };

typedef struct attn_case {
  int64_t T, B;
  bool fused;
  ct_tensor *q, *k, *v, *go;
} attn_case;

static ct_tensor *unfused(const ct_tensor *q, const ct_tensor *k, const ct_tensor *v) {
  ct_tensor *s = ct_mul_scalar(ct_matmul(q, ct_transpose(k, -2, -1)), 1.0 / sqrt((double)HEAD_DIM));
  return ct_matmul(ct_softmax(s, -1), v);
}

/* One forward + backward; gradients cleared first, as zero_grad(set_to_none). */
static void step(void *vc) {
  attn_case *c = vc;
  ct_scope_begin();
  ct_set_grad(c->q, NULL), ct_set_grad(c->k, NULL), ct_set_grad(c->v, NULL);
  ct_tensor *o = c->fused
                     ? ct_scaled_dot_product_attention(c->q, c->k, c->v, NULL, false, 0, 0, NULL)
                     : unfused(c->q, c->k, c->v);
  if (!o || ct_backward(o, c->go, NULL) != CT_OK) {
    fprintf(stderr, "bench_attention: %s\n", ct_last_error_message());
    exit(1);
  }
  ct_scope_end();
}

static void make_inputs(attn_case *c) {
  ct_tensor_opts o = {.dtype = CT_F32};
  int64_t shape[4] = {c->B, HEADS, c->T, HEAD_DIM};
  c->q = ct_requires_grad_(ct_randn(shape, 4, &o), true);
  c->k = ct_requires_grad_(ct_randn(shape, 4, &o), true);
  c->v = ct_requires_grad_(ct_randn(shape, 4, &o), true);
  c->go = ct_randn(shape, 4, &o);
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The peak memory of one step, measured in a child process. */
static void peak_memory(const char *bench, attn_case c) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    make_inputs(&c);
    long before = rss_kib();
    step(&c);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"meta\":\"peak_memory\",\"bench\":\"%s\",\"impl\":\"%s\",\"peak_extra_mib\":%.1f}\n",
           bench, c.fused ? "ctensor" : "ctensor_unfused",
           (double)(ru.ru_maxrss - before) / 1024.0);
    fflush(stdout);
    _exit(0);
  }
  int status;
  if (pid > 0) waitpid(pid, &status, 0);
}

int main(int argc, char **argv) {
  const char *sizes = "1024x1,1024x4,4096x1";
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--sizes")) {
      sizes = argv[i + 1];
      memmove(argv + i, argv + i + 2, sizeof(char *) * (size_t)(argc - i - 1));
      argc -= 2;
      break;
    }
  const char *only;
  if (bench_init(argc, argv, "bench_attention", &only) != 0) return 2;
  attn_case cases[16];
  int n = 0;
  for (const char *s = sizes; *s && n < 16;) {
    long long T, B;
    if (sscanf(s, "%lldx%lld", &T, &B) != 2 || T < 1 || B < 1) {
      fprintf(stderr, "bench_attention: --sizes wants TxB[,TxB...], got %s\n", sizes);
      return 2;
    }
    cases[n++] = (attn_case){.T = T, .B = B};
    s = strchr(s, ',');
    if (!s) break;
    s++;
  }
  char name[64];
  /* memory first: the children fork before this process starts its thread pool */
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "sdpa_fwd_bwd_T%lld_B%lld", (long long)cases[i].T,
             (long long)cases[i].B);
    if (!bench_want(only, name)) continue;
    for (int f = 1; f >= 0; f--) {
      attn_case c = cases[i];
      c.fused = f;
      peak_memory(name, c);
    }
  }
  ct_manual_seed(0);
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "sdpa_fwd_bwd_T%lld_B%lld", (long long)cases[i].T,
             (long long)cases[i].B);
    if (!bench_want(only, name)) continue;
    ct_scope_begin();
    attn_case c = cases[i];
    make_inputs(&c);
    /* forward multiply-adds 2 B H T^2 E, backward 2.5x that (torch's count) */
    double flop = 2.0 * 2 * (double)c.B * HEADS * (double)c.T * (double)c.T * HEAD_DIM * 3.5;
    for (int f = 1; f >= 0; f--) {
      c.fused = f;
      emit(name, f ? "ctensor" : "ctensor_unfused", time_it(step, &c), "gflops", RATE, flop / 1e9);
    }
    ct_scope_end();
  }
  return 0;
}
