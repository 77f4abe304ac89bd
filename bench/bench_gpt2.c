/* bench_gpt2: training steps of GPT-2 124M (examples/gpt2/gpt2_model.h) on the
 * weights and the batch bench/peers_gpt2.py wrote, so that PyTorch and llm.c
 * train the very same model in the same run (bench/gpt2.sh drives all three).
 *
 *   bench_gpt2 DIR [--threads N] [--steps S] [--B 4] [--T 64] [--amp bf16]
 *       one JSON line per step: {"bench":"gpt2_124M_train_step","impl":"ctensor",
 *       "step":k,"loss":...,"step_s":...}; DIR holds gpt2_124M.safetensors and
 *       batch.safetensors ("tokens": B*T+1 ids; inputs tokens[:-1], targets
 *       tokens[1:], viewed (B, T)).
 *   bench_gpt2 DIR --memory [--unfused] [--B 1] [--T 1024]
 *       one training step on B*T+1 seeded random tokens, then the process's peak resident memory
 * (VmHWM) and its resident memory once the model was loaded: {"bench":"gpt2_124M_peak_memory",
 *       "impl":"fused"|"unfused",...}. --unfused replaces the fused attention by
 *       matmul, mask, softmax, matmul.
 * --amp bf16 runs the forward pass and the loss under bf16 autocast (impl
 * "ctensor_bf16"; f32 weights and optimizer, as torch.autocast).
 * AdamW as llm.c's train_gpt2.c: lr 1e-4, betas (0.9, 0.999), eps 1e-8, no
 * weight decay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

#include "../examples/gpt2/gpt2_model.h"
#include "bench_util.h"

static const gpt2_config gpt2_124m = {
    .vocab_size = 50257, .block_size = 1024, .n_layer = 12, .n_head = 12, .n_embd = 768};

/* A field of /proc/self/status ("VmHWM:"), in MB; -1 if absent. */
static double proc_status_mb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double kb = -1;
  size_t n = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, n)) kb = atof(line + n);
  if (f) fclose(f);
  return kb < 0 ? -1 : kb / 1024.0;
}

static int fail(const char *what) {
  fprintf(stderr, "bench_gpt2: %s: %s\n", what, ct_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr,
            "usage: %s DIR [--threads N] [--steps S] [--B B] [--T T] [--memory [--unfused]]\n",
            argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  int threads = 2, steps = 5;
  int64_t B = 4, T = 64;
  bool memory = false, bf16 = false;
  gpt2_config cfg = gpt2_124m;
  for (int i = 2; i < argc; i++) {
    bool has_value = i + 1 < argc;
    if (!strcmp(argv[i], "--threads") && has_value)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && has_value)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--B") && has_value)
      B = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--T") && has_value)
      T = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--memory"))
      memory = true;
    else if (!strcmp(argv[i], "--amp") && has_value && !strcmp(argv[i + 1], "bf16"))
      bf16 = true, i++;
    else if (!strcmp(argv[i], "--unfused"))
      cfg.unfused_attention = true;
    else {
      fprintf(stderr, "bench_gpt2: unknown or incomplete argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || steps < 1 || B < 1 || T < 1 || T > cfg.block_size) {
    fprintf(stderr, "bench_gpt2: need threads, steps, B >= 1 and 1 <= T <= %lld\n",
            (long long)cfg.block_size);
    return 2;
  }
  ct_set_num_threads(threads);
  if (memory) steps = 1;

  char path[4096];
  ct_module *gpt = gpt2_new(&cfg, NULL);
  if (!gpt) return fail("building GPT-2 124M");
  snprintf(path, sizeof path, "%s/gpt2_124M.safetensors", dir);
  if (ct_module_load(gpt, path, true, NULL) != CT_OK) return fail(path);
  double model_mb = proc_status_mb("VmRSS:");

  /* The batch: a stream of tokens, rows of T consecutive ones, targets shifted by one. */
  ct_tensor **ts = NULL;
  char **names = NULL;
  int n = 0;
  snprintf(path, sizeof path, "%s/batch.safetensors", dir);
  if (ct_load_safetensors(path, &ts, &names, &n) != CT_OK || n < 1) return fail(path);
  ct_tensor *stream = ts[0];
  if (memory) { /* any tokens will do: seeded random ones, as many as B and T need */
    ct_manual_seed(1);
    stream = ct_randint(0, cfg.vocab_size, CT_SHAPE(B * T + 1), &(ct_tensor_opts){.dtype = CT_I64});
    if (!stream) return fail("drawing tokens");
  }
  if (ct_numel(stream) < B * T + 1) {
    fprintf(stderr, "bench_gpt2: %s holds %lld tokens, B*T+1 = %lld needed\n", path,
            (long long)ct_numel(stream), (long long)(B * T + 1));
    return 2;
  }
  ct_tensor *x = ct_reshape(ct_narrow(stream, 0, 0, B * T), CT_SHAPE(B, T));
  ct_tensor *y = ct_reshape(ct_narrow(stream, 0, 1, B * T), CT_SHAPE(B, T));
  if (!x || !y) return fail("viewing the batch");

  ct_tensor *params[256];
  int np = ct_module_parameters(gpt, params, NULL, 256);
  ct_adam_opts adam = ct_adamw_defaults();
  adam.lr = 1e-4;
  adam.weight_decay = 0.0;
  ct_optimizer *opt = ct_adamw_new(params, np, &adam);
  if (!opt) return fail("AdamW");

  for (int step = 0; step < steps; step++) {
    double t0 = bench_now_s(), loss_value = 0;
    ct_scope_begin();
    ct_optimizer_zero_grad(opt);
    bool region = bf16 && ct_autocast_begin(CT_DEVICE_CPU, CT_BF16, true) == CT_OK;
    ct_tensor *loss = gpt2_loss(gpt, x, y);
    if (region) ct_autocast_end();
    bool ok = (!bf16 || region) && loss && ct_backward(loss, NULL, NULL) == CT_OK && ct_optimizer_step(opt) == CT_OK &&
              ct_item(loss, &loss_value) == CT_OK;
    ct_scope_end();
    if (!ok) return fail("training step");
    double dt = bench_now_s() - t0;
    if (!memory)
      printf(
          "{\"bench\":\"gpt2_124M_train_step\",\"impl\":\"ctensor%s\",\"threads\":%d,\"step\":%d,"
          "\"loss\":%.9g,\"step_s\":%.6f}\n",
          bf16 ? "_bf16" : "", threads, step, loss_value, dt);
    fflush(stdout);
  }
  if (memory)
    printf(
        "{\"bench\":\"gpt2_124M_peak_memory\",\"impl\":\"%s\",\"threads\":%d,\"B\":%lld,\"T\":%lld,"
        "\"peak_rss_mb\":%.1f,\"model_rss_mb\":%.1f}\n",
        cfg.unfused_attention ? "unfused" : "fused", threads, (long long)B, (long long)T,
        proc_status_mb("VmHWM:"), model_mb);

  ct_free(x);
  ct_free(y);
  if (stream != ts[0]) ct_free(stream);
  ct_safetensors_free(ts, names, n);
  ct_optimizer_free(opt);
  ct_module_free(gpt);
  return 0;
}
