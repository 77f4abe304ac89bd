/* Allocation failure: a program that creates tensors, computes, trains a small
 * model two steps (autograd, Adam) and saves a checkpoint runs once to count
 * its host allocations, then once per N with the Nth allocation failing
 * (core/alloc.h's hook, through which every allocation of the library goes):
 *   - "persistent": allocation N and every later one fail. The program must
 *     end in CT_ERR_OOM with a message, never crash or abort.
 *   - "single": only allocation N fails. The program must end in CT_ERR_OOM,
 *     or succeed with the same results as the run without failures (a failure
 *     the library recovers from must not change a value).
 * Leaks on any of these paths are reported by LeakSanitizer in the sanitizer
 * build (scripts/test.sh); crashes and aborts fail the test.
 *
 * Environment: CT_ALLOC_SWEEP_FROM / CT_ALLOC_SWEEP_TO restrict N (to bisect a
 * failure), CT_ALLOC_SWEEP_TRACE=1 prints each N before its run (to name the N
 * of a crash). The sweep is single-threaded so that N means the same
 * allocation in every run. */
#include "ct_test.h"

#include <unistd.h>

#include "core/alloc.h"

typedef struct outcome {
  ct_status status;
  double loss[2];  /* the two training losses */
  double checksum; /* sum of the parameters after training */
  double probe;    /* a value of the first computation */
  double recent;   /* a sum over the recent ops' results and gradients */
} outcome;

static const char *checkpoint_path;
static uint64_t current_n;

/* The recent ops on one leaf, their results summed and backpropagated: *sum
 * gets the sum of the results and of the leaf's gradient. false on failure
 * (the library's error set). */
static bool recent_ops(double *sum) {
  ct_module *lstm = ct_lstm_new(&(ct_rnn_opts){.input_size = 4, .hidden_size = 3}, NULL);
  ct_module *gru = ct_gru_new(&(ct_rnn_opts){.input_size = 4, .hidden_size = 2}, NULL);
  bool ok = lstm && gru;
  ct_scope_begin();
  ct_tensor *x = ok ? ct_requires_grad_(ct_randn(CT_SHAPE(2, 3, 4), NULL), true) : NULL;
  ct_tensor *hn = NULL, *cn = NULL, *idx = NULL;
  ct_tensor *img = ct_reshape(x, CT_SHAPE(1, 2, 3, 4));
  ct_tensor *terms[] = {
      ct_lstm_forward(lstm, x, NULL, NULL, &hn, &cn),
      ct_gru_forward(gru, x, NULL, NULL),
      ct_linalg_lstsq(ct_select(x, 0, 0), ct_select(x, 0, 1)),
      ct_interpolate(img, &(ct_interpolate_opts){.size = {2, 3}, .mode = CT_INTERP_AREA}),
      ct_sort(x, -1, true, &idx),
      ct_topk(x, 2, 1, true, true, NULL),
      ct_cumsum(x, 2),
      ct_scaled_dot_product_attention(x, x, x, NULL, true, 0, 0, NULL),
      ct_conv_transpose2d(img, ct_ones(CT_SHAPE(2, 1, 2, 2), NULL), NULL,
                          &(ct_conv_transpose2d_opts){
                              .stride = {1, 1}, .output_padding = {1, 0}, .dilation = {2, 1}}),
      ct_einsum("bii->bi", (ct_tensor *[]){ct_expand(ct_narrow(x, 2, 0, 1), CT_SHAPE(2, 3, 3))}, 1),
      ct_group_norm(x, 3, NULL, NULL, 1e-5),
      /* 2026-12: the op table's new rows, diff, take_along_axis, cross */
      ct_hypot(x, ct_exp(x)),
      ct_logaddexp(x, ct_neg(x)),
      ct_asinh(ct_copysign(x, ct_sin(x))),
      ct_diff(x, 2, 2, NULL, NULL),
      ct_take_along_axis(x, ct_randint(0, 4, CT_SHAPE(2, 3, 2), NULL), 2),
      ct_linalg_cross(x, ct_exp(x), 1),
      hn,
      cn,
  };
  ct_tensor *total = ct_zeros(NULL, 0, NULL);
  for (size_t i = 0; i < sizeof terms / sizeof *terms; i++)
    total = ct_add(total, ct_sum(terms[i], NULL));
  double g = 0;
  ok = ok && ct_backward(total, NULL, NULL) == CT_OK && ct_item(total, sum) == CT_OK &&
       ct_item(ct_sum(ct_grad(x), NULL), &g) == CT_OK;
  ct_scope_end();
  ct_module_free(lstm);
  ct_module_free(gru);
  *sum += g;
  return ok;
}

/* The program under test. Every call is checked; on the first failure it
 * releases what it holds and returns the library's status. */
static outcome program(void) {
  outcome r = {CT_OK, {0, 0}, 0, 0, 0};
  ct_module *net = NULL;
  ct_optimizer *opt = NULL;
  ct_tensor *x = NULL, *y = NULL;
  ct_tensor *params[8];
  ct_tensor *state[16];
  const char *names[16];
  ct_manual_seed(7);
#define TRY(cond)           \
  do {                      \
    if (!(cond)) goto fail; \
  } while (0)

  /* Tensors and ops, in a scope (which a failed scope_begin still balances). */
  ct_scope_begin();
  ct_tensor *a = ct_arange(0, 12, 1, NULL);
  ct_tensor *m = ct_reshape(a, CT_SHAPE(3, 4));
  ct_tensor *w = ct_randn(CT_SHAPE(4, 5), NULL);
  ct_tensor *p = ct_softmax(ct_matmul(m, w), 1);
  ct_tensor *parts[2] = {p, ct_mul_scalar(p, 2)};
  ct_tensor *c = ct_cat(parts, 2, 0);
  ct_tensor *idx =
      ct_from_data(((int64_t[]){0, 2, 4}), CT_SHAPE(3), &(ct_tensor_opts){.dtype = CT_I64});
  ct_tensor *sel = ct_index_select(c, 0, idx);
  ct_tensor *s = ct_sum(ct_where(ct_gt_scalar(sel, 0.1), sel, ct_zeros_like(sel, NULL)), NULL);
  char *text = ct_to_string(ct_transpose(c, 0, 1));
  bool ok = s && text && ct_item(s, &r.probe) == CT_OK;
  free(text);
  ct_scope_end();
  TRY(ok);

  /* The ops of 2026-11 (recurrent layers, lstsq, area interpolation, sort,
   * topk, cumsum, attention, transposed convolution, einsum, row norms) and
   * of 2026-12 (hypot, logaddexp, copysign, the inverse trigonometric and
   * hyperbolic rows, diff, take_along_axis, linalg_cross), forward and
   * backward. */
  TRY(recent_ops(&r.recent));

  /* A model, an optimizer, two training steps. */
  TRY(x = ct_randn(CT_SHAPE(8, 4), NULL));
  TRY(y = ct_randint(0, 3, CT_SHAPE(8), NULL));
  TRY(net = ct_sequential_new());
  TRY(ct_sequential_add(net, ct_linear_new(4, 8, true, NULL)));
  TRY(ct_sequential_add(net, ct_relu_new()));
  TRY(ct_sequential_add(net, ct_linear_new(8, 3, true, NULL)));
  int n = ct_module_parameters(net, params, NULL, 8);
  TRY(n == 4);
  TRY(opt = ct_adam_new(params, n, &(ct_adam_opts){.lr = 0.01}));
  for (int step = 0; step < 2; step++) {
    ct_scope_begin();
    ct_optimizer_zero_grad(opt);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(net, x), y, NULL);
    ok = loss && ct_backward(loss, NULL, NULL) == CT_OK && ct_item(loss, &r.loss[step]) == CT_OK &&
         ct_optimizer_step(opt) == CT_OK;
    ct_scope_end();
    TRY(ok);
  }
  for (int i = 0; i < n; i++) {
    ct_scope_begin();
    double v = 0;
    ok = ct_item(ct_sum(params[i], NULL), &v) == CT_OK;
    ct_scope_end();
    TRY(ok);
    r.checksum += v;
  }

  /* The checkpoint: the state under its names. */
  int ns = ct_module_state(net, state, names, 16);
  TRY(ns == 4);
  TRY(ct_save_safetensors(checkpoint_path, state, names, ns) == CT_OK);
  goto done;
fail:
  r.status = ct_last_error();
done:
  ct_optimizer_free(opt);
  ct_module_free(net);
  ct_free(x);
  ct_free(y);
  return r;
#undef TRY
}

static bool same_results(const outcome *a, const outcome *b) {
  return a->loss[0] == b->loss[0] && a->loss[1] == b->loss[1] && a->checksum == b->checksum &&
         a->probe == b->probe && a->recent == b->recent;
}

static void on_abort(const char *file, int line, const char *message) {
  fprintf(stderr, "allocation sweep: abort at %s:%d (%s) with allocation %llu failing\n", file,
          line, message, (unsigned long long)current_n);
  abort();
}

static uint64_t env_u64(const char *name, uint64_t def) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 10) : def;
}

/* One run with allocations [n, n + count) failing; checks its outcome. */
static bool run_failing(uint64_t n, uint64_t count, const outcome *ref, const char *mode) {
  current_n = n;
  if (getenv("CT_ALLOC_SWEEP_TRACE")) fprintf(stderr, "%s %llu\n", mode, (unsigned long long)n);
  ct_clear_error();
  ct__alloc_fault_arm(n, count);
  outcome o = program();
  ct__alloc_fault_disarm();
  uint64_t failed = ct__alloc_fault_failures();
  bool good;
  if (o.status == CT_OK) {
    good = same_results(&o, ref);
    CHECK_MSG(good,
              "%s N=%llu: succeeded after %llu failed allocation(s) with other results "
              "(loss %.17g/%.17g, checksum %.17g)",
              mode, (unsigned long long)n, (unsigned long long)failed, o.loss[0], o.loss[1],
              o.checksum);
    /* persistent failures from an N the program reaches can't all be recovered */
    if (good && count == UINT64_MAX && failed > 0) {
      good = false;
      CHECK_MSG(good, "%s N=%llu: succeeded although every allocation from N on failed", mode,
                (unsigned long long)n);
    }
  } else {
    good = o.status == CT_ERR_OOM && *ct_last_error_message() && failed > 0;
    CHECK_MSG(good,
              "%s N=%llu: ended in %s (%s) with %llu failed allocation(s), expected CT_ERR_OOM",
              mode, (unsigned long long)n, ct_status_name(o.status), ct_last_error_message(),
              (unsigned long long)failed);
  }
  ct_clear_error();
  return good;
}

CT_TEST(every_allocation_failure_ends_cleanly) {
  char path[] = "/tmp/ct_alloc_sweep_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  close(fd);
  checkpoint_path = path;
  ct_set_num_threads(1);
  ct_abort_callback prev = ct_set_abort_callback(on_abort);

  /* A first run warms what is allocated once per thread and kept (the scope
   * lists), so that every later run allocates the same sequence. */
  outcome ref = program();
  ct__alloc_fault_arm(0, 0); /* count only */
  ref = program();
  uint64_t total = ct__alloc_fault_disarm();
  CHECK_MSG(ref.status == CT_OK, "the program fails without injected failures: %s",
            ct_last_error_message());
  /* The count must not depend on the run, or N would name other allocations. */
  ct__alloc_fault_arm(0, 0);
  outcome again = program();
  uint64_t total2 = ct__alloc_fault_disarm();
  CHECK_MSG(again.status == CT_OK && same_results(&ref, &again) && total2 == total,
            "two runs differ: %llu and %llu allocations", (unsigned long long)total,
            (unsigned long long)total2);
  CHECK_MSG(total > 100, "only %llu allocations counted", (unsigned long long)total);
  if (ct_test_current_failures) {
    ct_set_abort_callback(prev);
    unlink(path);
    return;
  }

  uint64_t from = env_u64("CT_ALLOC_SWEEP_FROM", 1), to = env_u64("CT_ALLOC_SWEEP_TO", total);
  int bad = 0;
  for (uint64_t n = from; n <= to && bad < 20; n++) {
    bad += !run_failing(n, UINT64_MAX, &ref, "persistent");
    bad += !run_failing(n, 1, &ref, "single");
  }
  printf("allocation sweep: %llu allocations, N = %llu..%llu failed in both modes, %d bad runs\n",
         (unsigned long long)total, (unsigned long long)from, (unsigned long long)to, bad);
  ct_set_abort_callback(prev);
  unlink(path);
}

/* A scope that cannot be opened (its stack can't grow) still balances: its
 * tensors go to the enclosing scope, ct_keep leaves them there, and both ends
 * close what they should. */
CT_TEST(scope_begin_out_of_memory_is_balanced) {
  int opened = 0;
  ct_status st = CT_OK;
  ct__alloc_fault_arm(1, 1); /* the stack's growth is the first allocation */
  while (opened < 200 && (st = ct_scope_begin()) == CT_OK) opened++;
  ct__alloc_fault_disarm();
  CHECK_MSG(st == CT_ERR_OOM, "no scope_begin failed after %d levels", opened);
  CHECK(ct_last_error() == CT_ERR_OOM && strstr(ct_last_error_message(), "scope_begin"));
  ct_clear_error();
  ct_tensor *t = ct_zeros(CT_SHAPE(2), NULL);
  CHECK_OK(t);
  CHECK(ct_scope_begin() == CT_ERR_OOM); /* nested in the one that failed */
  ct_clear_error();
  CHECK(ct_keep(t) == t);
  ct_scope_end();                  /* the nested one */
  ct_tensor *extra = ct_retain(t); /* watch t through a reference of our own */
  ct_scope_end();                  /* the failed one: t stays, in the real scope */
  CHECK(ct_numel(t) == 2);
  ct_scope_end(); /* the innermost real scope releases its reference to t */
  opened--;
  /* only ours is left: the tensor is still usable, then released */
  CHECK(ct_numel(extra) == 2);
  ct_free(extra);
  while (opened-- > 0) ct_scope_end();
}

/* Listing a module's names under allocation failure: -1 with CT_ERR_OOM and
 * nothing written, or the whole list. */
CT_TEST(module_listing_under_allocation_failure) {
  ct_module *net = ct_sequential_new();
  ct_module *inner = ct_sequential_new();
  CHECK_OK(ct_sequential_add(inner, ct_linear_new(2, 3, true, NULL)));
  CHECK_OK(ct_sequential_add(net, inner));
  CHECK_OK(ct_sequential_add(net, ct_linear_new(3, 1, false, NULL)));
  CHECK(ct_module_parameters(net, NULL, NULL, 0) == 3);
  static const char *const want[3] = {"0.0.weight", "0.0.bias", "1.weight"};
  bool completed = false;
  for (uint64_t n = 1; n < 100 && !completed; n++) {
    ct_tensor *params[3];
    const char *names[3] = {"unset", "unset", "unset"};
    ct__alloc_fault_arm(n, UINT64_MAX);
    int k = ct_module_parameters(net, params, names, 3);
    ct__alloc_fault_disarm();
    if (k < 0) {
      CHECK(ct_last_error() == CT_ERR_OOM);
      for (int i = 0; i < 3; i++) CHECK(strcmp(names[i], "unset") == 0);
    } else {
      completed = true;
      CHECK(k == 3);
      for (int i = 0; i < 3 && k == 3; i++) CHECK(strcmp(names[i], want[i]) == 0);
    }
    ct_clear_error();
  }
  CHECK(completed);
  ct_module_free(net);
}
