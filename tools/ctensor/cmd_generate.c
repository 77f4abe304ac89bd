/* cmd_generate.c: `ctensor generate`: samples bytes from a checkpoint of
 * `ctensor train --model gpt` and prints them.
 *
 * Each new byte is drawn from the model's distribution for the next byte
 * given the last GPT_CONTEXT bytes (the prompt, then what was drawn): the
 * logits divided by --temperature, restricted to the --top-k largest, a
 * softmax in f64 on the host, and one uniform draw of a Philox generator
 * seeded by --seed. So the bytes depend only on the checkpoint, the options
 * and the seed (on the CPU; a GPU's logits may differ in the last bits). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct gen_opts {
  const char *checkpoint, *prompt, *device;
  int64_t tokens, top_k;
  double temperature;
  uint64_t seed;
  int threads;
} gen_opts;

/* With no --prompt the model starts a fortune: it sees the separator line
 * that precedes every fortune of the corpus (not printed). */
static const char default_context[] = "%\n";

static void usage(FILE *f) {
  fprintf(f,
          "usage: ctensor generate --checkpoint PATH [--prompt TEXT] [--tokens N] "
          "[--temperature T]\n"
          "                        [--top-k K] [--seed S] [--device D] [--threads N]\n"
          "  samples N bytes (default 256) from a `train --model gpt` checkpoint after TEXT\n"
          "  (default: the start of a new fortune), at temperature T (default 1), from the K\n"
          "  likeliest bytes (default 0: all); the same seed (default 1) gives the same bytes\n");
}

static int bad(const char *fmt, const char *arg) {
  fprintf(stderr, "ctensor generate: ");
  fprintf(stderr, fmt, cli_shown(arg));
  fprintf(stderr, "\n\n");
  usage(stderr);
  return CLI_USAGE;
}

/* CLI_OK, CLI_USAGE after the message, or -1 after --help. */
static int parse(int argc, char **argv, gen_opts *o) {
  enum { CKPT = 256, PROMPT, TOKENS, TEMP, TOPK, SEED, DEVICE, THREADS };
  static const struct option longs[] = {{"checkpoint", required_argument, NULL, CKPT},
                                        {"prompt", required_argument, NULL, PROMPT},
                                        {"tokens", required_argument, NULL, TOKENS},
                                        {"temperature", required_argument, NULL, TEMP},
                                        {"top-k", required_argument, NULL, TOPK},
                                        {"seed", required_argument, NULL, SEED},
                                        {"device", required_argument, NULL, DEVICE},
                                        {"threads", required_argument, NULL, THREADS},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  *o = (gen_opts){.device = "auto", .tokens = 256, .temperature = 1, .seed = 1};
  optind = 0;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
    int64_t i64;
    switch (c) {
      case 'h':
        usage(stdout);
        return -1;
      case ':':
        return bad("option '%s' needs a value", argv[optind - 1]);
      case '?':
        return bad("unknown option '%s'", argv[optind - 1]);
      case CKPT:
        o->checkpoint = optarg;
        break;
      case PROMPT:
        o->prompt = optarg;
        break;
      case DEVICE:
        o->device = optarg;
        break;
      case TOKENS:
        if (!cli_parse_i64(optarg, 0, 1 << 24, &o->tokens))
          return bad("--tokens: expected an integer from 0 to 16777216, got '%s'", optarg);
        break;
      case TEMP:
        if (!cli_parse_f64(optarg, 0, 1e6, &o->temperature) || o->temperature <= 0)
          return bad("--temperature: expected a positive number, got '%s'", optarg);
        break;
      case TOPK:
        if (!cli_parse_i64(optarg, 0, 256, &o->top_k))
          return bad("--top-k: expected an integer from 0 (all) to 256, got '%s'", optarg);
        break;
      case SEED:
        if (!cli_parse_u64(optarg, &o->seed))
          return bad("--seed: expected a non-negative integer, got '%s'", optarg);
        break;
      case THREADS:
        if (!cli_parse_i64(optarg, 1, 1024, &i64))
          return bad("--threads: expected an integer from 1 to 1024, got '%s'", optarg);
        o->threads = (int)i64;
        break;
    }
  }
  if (optind < argc) return bad("unexpected argument '%s'", argv[optind]);
  if (!o->checkpoint || !*o->checkpoint) return bad("--checkpoint PATH is required%s", "");
  return CLI_OK;
}

/* The index drawn from softmax(logits / temperature) over the top_k largest
 * (0: all 256), with u uniform in [0, 1); -1 when that distribution is not
 * finite (a nan or +inf logit, as from a checkpoint of nan weights). */
static int sample(const double *logits, double temperature, int64_t top_k, double u) {
  for (int c = 0; c < 256; c++)
    if (isnan(logits[c]) || logits[c] == INFINITY) return -1;
  double cut = -INFINITY;
  if (top_k > 0 && top_k < 256) {
    /* The k-th largest logit: those below it are left out. */
    double sorted[256];
    memcpy(sorted, logits, sizeof sorted);
    for (int64_t i = 0; i < top_k; i++)
      for (int j = (int)i + 1; j < 256; j++)
        if (sorted[j] > sorted[i]) {
          double t = sorted[i];
          sorted[i] = sorted[j], sorted[j] = t;
        }
    cut = sorted[top_k - 1];
  }
  double max = -INFINITY, p[256], sum = 0;
  for (int c = 0; c < 256; c++)
    if (logits[c] >= cut && logits[c] > max) max = logits[c];
  for (int c = 0; c < 256; c++)
    sum += p[c] = logits[c] >= cut ? exp((logits[c] - max) / temperature) : 0;
  if (!(sum > 0) || !isfinite(sum)) return -1; /* every logit -inf */
  double target = u * sum, acc = 0;
  int last = 0;
  for (int c = 0; c < 256; c++) {
    if (p[c] == 0) continue;
    last = c;
    if ((acc += p[c]) > target) return c;
  }
  return last; /* u * sum rounded up to the total */
}

/* The next-byte logits for ctx[0, t) as 256 doubles; false with the library's error. */
static bool next_logits(ct_module *model, const int64_t *ctx, int64_t t, ct_device dev,
                        double *out) {
  ct_scope_begin();
  ct_tensor *x = ct_to(ct_from_data(ctx, CT_SHAPE(1, t), NULL), dev, NULL);
  ct_tensor *last = ct_select(ct_module_forward(model, x), 2, t - 1); /* (1, 256) */
  ct_tensor *host = ct_contiguous(ct_cast(ct_to(last, ct_cpu(), NULL), CT_F64));
  bool ok = host != NULL;
  if (ok) memcpy(out, ct_data_ptr(host), 256 * sizeof *out);
  ct_scope_end();
  return ok;
}

/* Appends a byte to the context ctx[0, *t), dropping its oldest byte when
 * it holds GPT_CONTEXT already (the model sees at most that many). */
static void push_byte(int64_t *ctx, int64_t *t, int byte) {
  if (*t == GPT_CONTEXT) {
    memmove(ctx, ctx + 1, (GPT_CONTEXT - 1) * sizeof *ctx);
    --*t;
  }
  ctx[(*t)++] = byte;
}

/* Prints o->tokens bytes after the prompt. CLI_OK or CLI_FAIL. */
static int generate(ct_module *model, const gen_opts *o, ct_device dev) {
  const char *start = o->prompt && *o->prompt ? o->prompt : default_context;
  int64_t ctx[GPT_CONTEXT], t = 0;
  for (const unsigned char *p = (const unsigned char *)start; *p; p++) push_byte(ctx, &t, *p);
  if (o->prompt) fputs(o->prompt, stdout);
  ct_generator *g = ct_generator_new(o->seed);
  if (!g) {
    cli_error("creating the generator");
    return CLI_FAIL;
  }
  int rc = CLI_OK;
  ct_no_grad_begin();
  for (int64_t i = 0; i < o->tokens; i++) {
    double logits[256];
    if (!next_logits(model, ctx, t, dev, logits)) {
      cli_error("generating");
      rc = CLI_FAIL;
      break;
    }
    double u = (double)(ct_generator_next_u64(g) >> 11) * 0x1p-53; /* [0, 1) */
    int byte = sample(logits, o->temperature, o->top_k, u);
    if (byte < 0) {
      int c = 0;
      while (c < 255 && isfinite(logits[c])) c++;
      fprintf(stderr,
              "ctensor generate: the sampled distribution is not finite at byte %lld "
              "(logit %d is %g): the checkpoint's weights are not finite\n",
              (long long)i + 1, c, logits[c]);
      rc = CLI_FAIL;
      break;
    }
    putchar(byte);
    push_byte(ctx, &t, byte);
  }
  ct_no_grad_end();
  ct_generator_free(g);
  if (rc == CLI_OK) putchar('\n');
  return rc;
}

int cmd_generate(int argc, char **argv) {
  gen_opts o;
  int rc = parse(argc, argv, &o);
  if (rc == -1) return CLI_OK;
  if (rc != CLI_OK) return rc;
  if (o.threads > 0) ct_set_num_threads(o.threads);
  ct_device dev;
  cli_opts dev_opts = {.device = o.device};
  if ((rc = cli_resolve_device(&dev_opts, &dev)) != CLI_OK) return rc;
  if (access(o.checkpoint, F_OK) != 0) {
    fprintf(stderr, "ctensor generate: no checkpoint at %s\n", cli_shown(o.checkpoint));
    return CLI_FAIL;
  }
  char err[1024];
  cli_ckpt ck;
  if (!cli_checkpoint_load(o.checkpoint, &ck, err, sizeof err)) {
    fprintf(stderr, "ctensor generate: cannot read checkpoint %s: %s\n", cli_shown(o.checkpoint),
            err);
    return CLI_FAIL;
  }
  ct_module *model = NULL;
  rc = CLI_FAIL;
  if (ck.meta.model != MODEL_GPT) {
    fprintf(stderr,
            "ctensor generate: checkpoint %s holds model %s, which does not generate text; "
            "train one with `ctensor train --model gpt`\n",
            cli_shown(o.checkpoint), cli_model_name((int)ck.meta.model));
    goto done;
  }
  if (!(model = cli_gpt_new()) || ct_module_to(model, dev) != CT_OK) {
    cli_error("building the model");
    goto done;
  }
  if (!cli_checkpoint_restore_model(&ck, model, err, sizeof err)) {
    fprintf(stderr, "ctensor generate: checkpoint %s does not fit model gpt: %s\n",
            cli_shown(o.checkpoint), err);
    goto done;
  }
  ct_module_train(model, false);
  cli_print_run_line(&dev_opts, dev, "model gpt \u00b7 %lld bytes from %s \u00b7 precision f32",
                     (long long)o.tokens, cli_shown(o.checkpoint));
  rc = generate(model, &o, dev);
done:
  ct_module_free(model);
  cli_checkpoint_free(&ck);
  return rc;
}
