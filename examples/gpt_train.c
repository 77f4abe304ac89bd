/* A character-level GPT trained in C: the loop of nanoGPT's train.py, with
 * the GPT-2 of examples/gpt2/gpt2_model.h made small.
 *
 *   text -> characters -> ids; batches of B random windows of T characters,
 *   each target the next character; AdamW (weight decay 0.1, betas 0.9/0.95);
 *   gradients clipped to norm 1; the learning rate warmed up linearly, then
 *   a cosine decay; at the end a few characters sampled from the model.
 *
 * Usage: gpt_train [TEXT_FILE] [--steps N] [--sample N] [--seed S]
 * Without a file it trains on a short text held below. Exits 0 when the loss
 * fell below its starting value, 1 otherwise or on a library error, 2 on bad
 * arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctensor.h>

#include "gpt2/gpt2_model.h"

static const char embedded_text[] =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. "
    "resolved.\n\nFirst Citizen:\nFirst, you know Caius Marcius is chief enemy to the people.\n\n"
    "All:\nWe know't, we know't.\n\nFirst Citizen:\nLet us kill him, and we'll have corn at our "
    "own price.\nIs't a verdict?\n\nAll:\nNo more talking on't; let it be done: away, away!\n";

enum { BATCH = 8, BLOCK = 32, WARMUP = 10 };

static int fail(const char *what) {
  fprintf(stderr, "gpt_train: %s: %s\n", what, ct_last_error_message());
  return 1;
}

/* The whole file in a NUL-terminated buffer (NULL if it cannot be read). */
static char *read_file(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = (char *)malloc((size_t)*len + 1)) && fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[*len] = 0;
  return buf;
}

/* A small seeded generator for the batches and the sampling (xorshift64*). */
static uint64_t rng_state = 88172645463325252ull;
static double uniform(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* Inputs (BATCH, BLOCK) and targets (the next ids) from random windows of ids. */
static void make_batch(const int64_t *ids, long n, int64_t *x, int64_t *y) {
  for (int b = 0; b < BATCH; b++) {
    long start = (long)(uniform() * (double)(n - BLOCK - 1));
    memcpy(x + b * BLOCK, ids + start, BLOCK * sizeof *x);
    memcpy(y + b * BLOCK, ids + start + 1, BLOCK * sizeof *y);
  }
}

/* Extends context (its last BLOCK ids) by one id drawn from the model's
 * next-character distribution; -1 on error. */
static int64_t sample_next(ct_module *gpt, const int64_t *context, int64_t len) {
  int64_t t = len < BLOCK ? len : (int64_t)BLOCK;
  ct_scope_begin();
  ct_no_grad_begin();
  ct_tensor *idx = ct_from_data(context + len - t, CT_SHAPE(1, t), NULL);
  ct_tensor *logits = ct_select(ct_select(ct_module_forward(gpt, idx), 0, 0), 0, t - 1); /* (V) */
  ct_tensor *probs = ct_contiguous(ct_softmax(logits, 0));
  ct_no_grad_end();
  int64_t next = -1;
  if (probs) {
    const float *p = (const float *)ct_data_ptr(probs);
    double coin = uniform(), cdf = 0;
    int64_t v = ct_numel(probs);
    for (next = 0; next < v - 1 && (cdf += p[next]) <= coin; next++) {
    }
  }
  ct_scope_end();
  return next;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  int steps = 60, sample = 80;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample") && i + 1 < argc)
      sample = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      rng_state = strtoull(argv[++i], NULL, 10) | 1;
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else {
      fprintf(stderr, "usage: %s [TEXT_FILE] [--steps N] [--sample N] [--seed S]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1 || sample < 0) return fprintf(stderr, "gpt_train: steps >= 1, sample >= 0\n"), 2;

  /* The text and its alphabet: the characters that occur, in byte order. */
  long n = (long)strlen(embedded_text);
  char *text = path ? read_file(path, &n) : NULL;
  if (path && !text) return fprintf(stderr, "gpt_train: cannot read %s\n", path), 1;
  const unsigned char *src = (const unsigned char *)(text ? text : embedded_text);
  if (n < BLOCK + 2)
    return fprintf(stderr, "gpt_train: the text needs %d characters\n", BLOCK + 2), 2;
  int id_of[256], vocab = 0;
  unsigned char char_of[256];
  memset(id_of, -1, sizeof id_of);
  for (long i = 0; i < n; i++) id_of[src[i]] = 0;
  for (int c = 0; c < 256; c++)
    if (id_of[c] == 0) char_of[vocab] = (unsigned char)c, id_of[c] = vocab++;
  int64_t *ids = (int64_t *)malloc((size_t)n * sizeof *ids);
  if (!ids) return fprintf(stderr, "gpt_train: out of memory\n"), 1;
  for (long i = 0; i < n; i++) ids[i] = id_of[src[i]];
  printf("%ld characters, %d distinct\n", n, vocab);

  /* The model: GPT-2's architecture, small. */
  ct_manual_seed(1337);
  gpt2_config cfg = {.vocab_size = vocab, .block_size = BLOCK, .n_layer = 2, .n_head = 4, .n_embd = 64};
  ct_module *gpt = gpt2_new(&cfg, NULL);
  if (!gpt) return fail("building the model");
  printf("GPT: %lld parameters\n", (long long)ct_module_num_parameters(gpt, true));

  /* AdamW, and the schedule: linear warmup over WARMUP steps, then a cosine to lr / 10. */
  ct_tensor *params[64];
  int np = ct_module_parameters(gpt, params, NULL, 64);
  ct_adam_opts adam = ct_adamw_defaults();
  adam.lr = 3e-3;
  adam.beta2 = 0.95;
  adam.weight_decay = 0.1;
  ct_optimizer *opt = ct_adamw_new(params, np, &adam);
  int warmup = steps > 2 * WARMUP ? WARMUP : 1;
  ct_lr_scheduler *warm = opt ? ct_linear_lr_new(opt, 0.1, 1.0, warmup) : NULL;
  ct_lr_scheduler *decay = warm ? ct_cosine_lr_new(opt, steps - warmup, adam.lr / 10) : NULL;
  ct_lr_scheduler *phases[] = {warm, decay};
  int64_t milestones[] = {warmup};
  ct_lr_scheduler *schedule = decay ? ct_sequential_lr_new(opt, phases, 2, milestones) : NULL;
  if (!schedule) return fail("the optimizer and its schedule");

  int64_t x[BATCH * BLOCK], y[BATCH * BLOCK];
  double first = 0, last = 0;
  for (int step = 0; step < steps; step++) {
    ct_scope_begin();
    make_batch(ids, n, x, y);
    ct_tensor *loss = gpt2_loss(gpt, ct_from_data(x, CT_SHAPE(BATCH, BLOCK), NULL),
                                ct_from_data(y, CT_SHAPE(BATCH, BLOCK), NULL));
    ct_optimizer_zero_grad(opt);
    bool ok = loss && ct_backward(loss, NULL, NULL) == CT_OK &&
              ct_clip_grad_norm_(params, np, 1.0, 2.0, false) && ct_optimizer_step(opt) == CT_OK &&
              ct_lr_scheduler_step(schedule) == CT_OK && ct_item(loss, &last) == CT_OK;
    ct_scope_end();
    if (!ok) return fail("training step");
    if (step == 0) first = last;
    if (step % 10 == 0 || step == steps - 1)
      printf("step %4d  loss %.4f  lr %.2e\n", step, last, ct_optimizer_get_lr(opt));
  }

  /* Sampling: start from the text's first character, draw one at a time. */
  int64_t *context = (int64_t *)malloc((size_t)(sample + 1) * sizeof *context);
  if (!context) return fprintf(stderr, "gpt_train: out of memory\n"), 1;
  context[0] = ids[0];
  printf("sample: %c", char_of[context[0]]);
  for (int i = 1; i <= sample; i++) {
    if ((context[i] = sample_next(gpt, context, i)) < 0) return fail("sampling");
    putchar(char_of[context[i]]);
  }
  printf("\n");

  free(context);
  free(ids);
  free(text);
  ct_lr_scheduler_free(schedule);
  ct_optimizer_free(opt);
  ct_module_free(gpt);
  printf("loss %.4f -> %.4f\n", first, last);
  return last < first ? 0 : 1;
}
