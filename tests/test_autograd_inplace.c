/* Autograd through in-place writes, against PyTorch: history rewriting on
 * tensors that require grad (chains, the old value of the target saved,
 * writes through views rewriting the base's history, views read after their
 * base was rewritten), the errors torch raises (leaves, views of leaves,
 * saved tensors modified afterwards, out= forms), finite-difference checks
 * of in-place chains, and allocation failures during recording and
 * backward. */
#include "autograd/autograd_internal.h"
#include "ct_gradcheck.h"

CT_TEST_DEVICE_GENERIC

static const char *TORCH_SCRIPT =
    "import sys, numpy as np, torch\n"
    "d = sys.argv[1]; torch.manual_seed(0)\n"
    "def save(n, t): np.save(f'{d}/{n}.npy', t.detach().double().numpy())\n"
    "def leaf(n, *shape, lo=-1.0, hi=1.0):\n"
    "    t = torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo; save(n, t); return t\n"
    "x = leaf('x', 3, 4).requires_grad_(); b = leaf('b', 3, 2, lo=0.5, hi=1.5).requires_grad_()\n"
    "z = leaf('z', 3, 2).requires_grad_(); w = leaf('w', 3, 4)\n"
    "idx = torch.tensor([[0, 2], [1, 3], [3, 0]]); save('idx', idx)\n"
    "def run(name, f):\n"
    "    for t in (x, b, z): t.grad = None\n"
    "    L = f(); L.backward(); save(name + '_loss', L)\n"
    "    for t, n in ((x, 'x'), (b, 'b'), (z, 'z')):\n"
    "        save(f'{name}_g{n}', t.grad if t.grad is not None else torch.zeros_like(t))\n"
    "def chain(): y = x * 2; y.add_(1); y.exp_(); return (y * w).sum()\n"
    "def sin_(): y = x * 2; y.sin_(); return (y * w).sum()\n"
    "def binary():\n"
    "    y = x[:, :2] * x[:, :2] + 0.5; y.mul_(b); y.div_(b + 1); y.sub_(z)\n"
    "    y.atan2_(b); y.pow_(b)\n"
    "    return (y * w[:, :2]).sum()\n"
    "def view(): y = x * 1; v = y[:, 1:3]; v.mul_(b); return (y * w).sum()\n"
    "def stale_view(): y = x * 2; v = y[1]; y.mul_(3); return (v * w[1]).sum() + (y * w).sum()\n"
    "def two_views():\n"
    "    y = x * 1; r = y[0]; c = y[:, 0]; r.mul_(2); c.add_(z[:, 0]); return (y * w).sum()\n"
    "def t_exp(): y = x * 1; v = y.t(); v.exp_(); return (y * w).sum()\n"
    "def copy_view(): buf = x * 0; buf[:, 1:3].copy_(z); return (buf * w).sum()\n"
    "def zero_view(): y = x * 3; y[:, :2].zero_(); return (y * w).sum()\n"
    "def masks():\n"
    "    y = x * 1.5; y.clamp_(-0.8, 0.8); y.masked_fill_(x.detach() > 0.5, 0); y.relu_()\n"
    "    return (y * w).sum()\n"
    "def scatter():\n"
    "    y = x * 1; y.scatter_(1, idx, z); y.scatter_add_(1, idx, b); return (y * w).sum()\n"
    "for f in (chain, sin_, binary, view, stale_view, two_views, t_exp, copy_view,\n"
    "          zero_view, masks, scatter):\n"
    "    run(f.__name__, f)\n"
    "y = x * 2; y.retain_grad(); y.add_(1); (y * w).sum().backward()\n"
    "save('retain_grad', y.grad)\n";

static const char *torch_dir;
static bool torch_data(void) {
  static bool tried;
  if (!tried) torch_dir = ct_test_torch_outputs("inplace", TORCH_SCRIPT), tried = true;
  return torch_dir != NULL;
}
static ct_tensor *tload(const char *name) { return ct_test_load_output(torch_dir, name); }

#define check_like(what, got, name) CHECK_LIKE_TORCH(torch_dir, what, got, name, 1e-10, 1e-12)

/* ---- The scenarios, as the script's ---------------------------------------------- */

typedef struct scene {
  ct_tensor *x, *b, *z, *w, *idx;
} scene;

static ct_tensor *loss(ct_tensor *y, const ct_tensor *w) { return ct_sum(ct_mul(y, w), NULL); }

static ct_tensor *chain(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 2);
  ct_add_scalar_(y, 1);
  ct_exp_(y);
  CHECK(ct_grad_fn_name(y) && strcmp(ct_grad_fn_name(y), "ExpBackward") == 0);
  return loss(y, s->w);
}
static ct_tensor *sin_(const scene *s) { /* sin_ saves the old value of y */
  ct_tensor *y = ct_mul_scalar(s->x, 2);
  return loss(ct_sin_(y), s->w);
}
static ct_tensor *binary(const scene *s) {
  ct_tensor *x2 = ct_narrow(s->x, 1, 0, 2), *w2 = ct_narrow(s->w, 1, 0, 2);
  ct_tensor *y = ct_add_scalar(ct_mul(x2, x2), 0.5);
  ct_mul_(y, s->b);
  ct_div_(y, ct_add_scalar(s->b, 1));
  ct_sub_(y, s->z);
  ct_atan2_(y, s->b);
  ct_pow_(y, s->b); /* saves its output: the last write */
  return loss(y, w2);
}
static ct_tensor *view(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 1);
  ct_mul_(ct_narrow(y, 1, 1, 2), s->b);
  CHECK(ct_grad_fn_name(y) && strcmp(ct_grad_fn_name(y), "CopySlices") == 0);
  return loss(y, s->w);
}
static ct_tensor *stale_view(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 2);
  ct_tensor *v = ct_select(y, 0, 1);
  ct_mul_scalar_(y, 3);
  return ct_add(loss(v, ct_select(s->w, 0, 1)), loss(y, s->w));
}
static ct_tensor *two_views(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 1);
  ct_tensor *r = ct_select(y, 0, 0), *c = ct_select(y, 1, 0);
  ct_mul_scalar_(r, 2);
  ct_add_(c, ct_select(s->z, 1, 0));
  return loss(y, s->w);
}
static ct_tensor *t_exp(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 1);
  ct_exp_(ct_t(y));
  return loss(y, s->w);
}
static ct_tensor *copy_view(const scene *s) {
  ct_tensor *buf = ct_mul_scalar(s->x, 0);
  ct_copy_(ct_narrow(buf, 1, 1, 2), s->z);
  return loss(buf, s->w);
}
static ct_tensor *zero_view(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 3);
  ct_zero_(ct_narrow(y, 1, 0, 2));
  return loss(y, s->w);
}
static ct_tensor *masks(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 1.5);
  ct_clamp_(y, -0.8, 0.8);
  ct_masked_fill_(y, ct_gt_scalar(ct_detach(s->x), 0.5), 0);
  ct_relu_(y);
  return loss(y, s->w);
}
static ct_tensor *scatter(const scene *s) {
  ct_tensor *y = ct_mul_scalar(s->x, 1);
  ct_scatter_(y, 1, s->idx, s->z);
  ct_scatter_add_(y, 1, s->idx, s->b);
  return loss(y, s->w);
}

CT_TEST(inplace_history_matches_pytorch) {
  if (!torch_data()) {
    ct_test_skip("python3 with torch and numpy not available");
    return;
  }
  scene s = {ct_requires_grad_(tload("x"), true), ct_requires_grad_(tload("b"), true),
             ct_requires_grad_(tload("z"), true), tload("w"), ct_cast(tload("idx"), CT_I64)};
  static const struct {
    const char *name;
    ct_tensor *(*f)(const scene *);
  } cases[] = {{"chain", chain},           {"sin_", sin_},
               {"binary", binary},         {"view", view},
               {"stale_view", stale_view}, {"two_views", two_views},
               {"t_exp", t_exp},           {"copy_view", copy_view},
               {"zero_view", zero_view},   {"masks", masks},
               {"scatter", scatter}};
  ct_tensor *leaves[3] = {s.x, s.b, s.z};
  const char *leaf_names[3] = {"x", "b", "z"};
  char what[64], name[64];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (int i = 0; i < 3; i++) ct_set_grad(leaves[i], NULL);
    ct_tensor *L = cases[k].f(&s);
    snprintf(name, sizeof name, "%s_loss", cases[k].name);
    check_like(name, L, name);
    WITH_CONTEXT(CHECK_STATUS_OK(ct_backward(L, NULL, NULL)), "%s", cases[k].name);
    for (int i = 0; i < 3; i++) {
      snprintf(name, sizeof name, "%s_g%s", cases[k].name, leaf_names[i]);
      snprintf(what, sizeof what, "%s: grad of %s", cases[k].name, leaf_names[i]);
      ct_tensor *g = ct_grad(leaves[i]) ? ct_grad(leaves[i]) : ct_zeros_like(leaves[i], NULL);
      check_like(what, g, name);
    }
  }
  /* retain_grad follows the tensor to its new history */
  ct_tensor *y = ct_mul_scalar(s.x, 2);
  CHECK_STATUS_OK(ct_retain_grad(y));
  ct_add_scalar_(y, 1);
  CHECK_STATUS_OK(ct_backward(loss(y, s.w), NULL, NULL));
  check_like("retain_grad after add_", ct_grad(y), "retain_grad");
}

/* ---- Errors -------------------------------------------------------------------------- */

CT_TEST(inplace_errors_as_pytorch) {
  ct_tensor_opts o = ct_test_opts(CT_F32);
  ct_tensor *w = ct_requires_grad_(ct_ones(CT_SHAPE(3), &o), true);
  ct_tensor *one = ct_ones(CT_SHAPE(3), &o);
  CHECK_ERR_MSG(ct_add_(w, one), CT_ERR_STATE,
                "add_: a leaf tensor that requires grad is being used in an in-place operation");
  CHECK_ERR_MSG(ct_mul_scalar_(ct_narrow(w, 0, 0, 2), 2), CT_ERR_STATE,
                "mul_scalar_: a view of a leaf tensor that requires grad is being used in an "
                "in-place operation");
  CHECK_ERR_MSG(ct_exp_(ct_reshape(w, CT_SHAPE(3, 1))), CT_ERR_STATE, "a view of a leaf");
  /* a target whose memory other tensors share, written with an operand that requires grad */
  ct_tensor *buf = ct_zeros(CT_SHAPE(3), &o);
  CHECK_ERR_MSG(ct_copy_(ct_narrow(buf, 0, 0, 2), ct_narrow(w, 0, 0, 2)), CT_ERR_STATE,
                "shares its memory");
  /* out= forms don't record */
  CHECK_ERR_MSG(ct_add_out(ct_zeros(CT_SHAPE(3), &o), w, one), CT_ERR_STATE, "out=");
  CHECK_ERR_MSG(ct_exp_out(ct_mul_scalar(w, 1), one), CT_ERR_STATE, "out");
  /* allowed: a fresh accumulator, and anything under no_grad */
  ct_tensor *acc = ct_zeros(CT_SHAPE(3), &o);
  CHECK_OK(ct_add_(acc, w) == acc);
  CHECK(ct_requires_grad(acc) && !ct_is_leaf(acc));
  ct_no_grad_begin();
  CHECK_OK(ct_add_(w, one) == w);
  CHECK_OK(ct_mul_scalar_(ct_narrow(w, 0, 0, 2), 2));
  ct_no_grad_end();
  CHECK(ct_is_leaf(w));
}

CT_TEST(modified_saved_tensors_are_caught) {
  ct_tensor_opts o = ct_test_opts(CT_F64);
  ct_tensor *x = ct_requires_grad_(ct_full(CT_SHAPE(2), 0.5, &o), true);
  /* a constant saved by mul */
  ct_tensor *a = ct_full(CT_SHAPE(2), 3.0, &o);
  ct_tensor *z = ct_sum(ct_mul(x, a), NULL);
  ct_add_scalar_(a, 1);
  CHECK_ERR_MSG(ct_backward(z, NULL, NULL) == CT_OK, CT_ERR_STATE,
                "one of the variables needed for gradient computation has been modified by an "
                "inplace operation: [f64 (2,)] is at version 1; expected version 0 instead");
  /* an intermediate saved by mul, then rewritten by add_ */
  ct_tensor *y = ct_mul_scalar(x, 2);
  z = ct_sum(ct_mul(y, x), NULL);
  ct_add_scalar_(y, 1);
  CHECK_ERR_MSG(
      ct_backward(z, NULL, NULL) == CT_OK, CT_ERR_STATE,
      "[f64 (2,)], which is output 0 of MulBackward, is at version 1; expected version 0");
  /* an output saved by sigmoid_, then modified */
  y = ct_mul_scalar(x, 2);
  ct_sigmoid_(y);
  ct_mul_scalar_(y, 2);
  CHECK_ERR_MSG(ct_backward(ct_sum(y, NULL), NULL, NULL) == CT_OK, CT_ERR_STATE,
                "which is output 0 of SigmoidBackward, is at version 2; expected version 1");
  /* y's new history passes through the node that saved y: saved tensors are
   * aliases, so this is no reference cycle (the sanitizer build checks leaks) */
  y = ct_mul_scalar(x, 2);
  ct_add_(y, ct_mul(y, x));
  CHECK_ERR_MSG(ct_backward(ct_sum(y, NULL), NULL, NULL) == CT_OK, CT_ERR_STATE,
                "which is output 0 of MulBackward, is at version 1; expected version 0");
  /* y.mul_(y): the old value for self, y itself as the operand (torch) */
  y = ct_mul_scalar(x, 1);
  ct_mul_(y, y);
  CHECK_ERR_MSG(ct_backward(ct_sum(y, NULL), NULL, NULL) == CT_OK, CT_ERR_STATE,
                "which is output 0 of MulBackward, is at version 1; expected version 0");
  /* exp saves its output only: its input may change */
  y = ct_mul_scalar(x, 2);
  z = ct_sum(ct_exp(y), NULL);
  ct_add_scalar_(y, 1);
  CHECK_STATUS_OK(ct_backward(z, NULL, NULL));
  /* random fills on a tensor that requires grad: zero gradient to the old value */
  ct_set_grad(x, NULL);
  y = ct_mul_scalar(x, 2);
  CHECK_OK(ct_uniform_(y, 0, 1, NULL));
  CHECK_STATUS_OK(ct_backward(ct_sum(y, NULL), NULL, NULL));
  CHECK_CLOSE(ct_grad(x), ((double[]){0, 0}), 0, 0);
}

/* ---- Finite differences through in-place chains ------------------------------------ */

static ct_tensor *f_inplace(ct_tensor *const *in, void *ctx) {
  ct_tensor *x = in[0], *b = in[1]; /* (3, 4), (3, 2) */
  ct_tensor *y = ct_mul_scalar(x, 0.5);
  ct_sin_(y);                          /* saves y's old value */
  ct_mul_(ct_narrow(y, 1, 1, 2), b);   /* through a view: the base's history */
  ct_tensor *col = ct_select(y, 1, 3); /* read after the next write: regenerated */
  ct_add_(ct_select(y, 0, 2), ct_select(b, 1, 0));
  ct_div_(y, ct_add_scalar(ct_unsqueeze(col, 1), 2));
  ct_sigmoid_(ct_t(y)); /* saves its output: the last write to y */
  return ct_add(y, ct_unsqueeze(col, 1));
}

CT_TEST(inplace_gradcheck) {
  ct_tensor *in[2] = {ct_gradcheck_input(CT_SHAPE(3, 4), -1, 1, 31),
                      ct_gradcheck_input(CT_SHAPE(3, 2), 0.5, 1.5, 32)};
  CHECK_GRADIENTS("in-place chain", f_inplace, NULL, in, 2);
}

/* ---- Allocation failures: every autograd allocation, one at a time --------------- */

static ct_status train_step(ct_tensor *x, ct_tensor *w) {
  ct_scope_begin();
  ct_tensor *h = ct_matmul(x, w);
  bool ok = h && ct_relu_(ct_narrow(h, 1, 0, 2));
  ct_tensor *y = ok ? ct_add_scalar(h, 0.5) : NULL;
  ok = y && ct_mul_scalar_(y, 2);
  ct_tensor *l = ok ? ct_sum(ct_mul(ct_tanh(y), ct_prod(h, CT_DIMS_KEEP(1))), NULL) : NULL;
  ct_status st = l ? ct_backward(l, NULL, NULL) : ct_last_error();
  ct_scope_end();
  return st;
}

CT_TEST(allocation_failures_return_oom) {
  ct_tensor *x = ct_gradcheck_input(CT_SHAPE(4, 3), -1, 1, 41);
  ct_tensor *w = ct_gradcheck_input(CT_SHAPE(3, 3), -1, 1, 42);
  int failures = 0, n;
  for (n = 0; n < 1000; n++) {
    ct_set_grad(x, NULL), ct_set_grad(w, NULL);
    ct__ag_fail_alloc_after(n);
    ct_status st = train_step(x, w);
    if (ct__ag_fail_alloc_after(-1) >= 0) break; /* n allocations were all the step needed */
    failures++;
    CHECK_MSG(st == CT_ERR_OOM, "allocation %d failed: got %s (%s)", n, ct_status_name(st),
              ct_last_error_message());
  }
  CHECK_MSG(failures >= 15 && n < 1000, "%d allocations failed, %d tried", failures, n);
  /* and everything works afterwards */
  ct_set_grad(x, NULL), ct_set_grad(w, NULL);
  CHECK_STATUS_OK(train_step(x, w));
  CHECK(ct_grad(x) && ct_grad(w));
}
