/* model_resnet.c: the `resnet` model of `ctensor train`, a small ResNet for
 * 28x28 and 32x32 images (He et al. 2016, the CIFAR variant), as user
 * modules whose children carry the names of this torch definition (so a
 * checkpoint is its state_dict, BatchNorm buffers included):
 *
 *   class BasicBlock(nn.Module):
 *       def __init__(self, cin, cout, stride):
 *           super().__init__()
 *           self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
 *           self.bn1 = nn.BatchNorm2d(cout)
 *           self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
 *           self.bn2 = nn.BatchNorm2d(cout)
 *           self.shortcut = nn.Sequential()   # identity: no state
 *           if stride != 1 or cin != cout:
 *               self.shortcut = nn.Sequential(
 *                   nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
 *       def forward(self, x):
 *           out = F.relu(self.bn1(self.conv1(x)))
 *           return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))
 *
 *   class ResNet(nn.Module):   # stages: (width, blocks, stride) each
 *       def __init__(self, in_channels, stem, stages, classes=10):
 *           super().__init__()
 *           self.conv1 = nn.Conv2d(in_channels, stem, 3, 1, 1, bias=False)
 *           self.bn1 = nn.BatchNorm2d(stem)
 *           cin = stem
 *           for i, (w, n, s) in enumerate(stages):
 *               setattr(self, f'layer{i + 1}', nn.Sequential(*[
 *                   BasicBlock(cin if j == 0 else w, w, s if j == 0 else 1) for j in range(n)]))
 *               cin = w
 *           self.fc = nn.Linear(cin, classes)
 *       def forward(self, x):
 *           x = F.relu(self.bn1(self.conv1(x)))
 *           for i in range(len(self.stages)): x = getattr(self, f'layer{i + 1}')(x)
 *           return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
 *
 * (tests/golden/vision_golden.py holds it as Python.) BatchNorm takes
 * torch's defaults (eps 1e-5, momentum 0.1); the program switches train and
 * eval mode, so evaluations use the running statistics. */
#include <stdlib.h>

#include "cli.h"

/* ---- BasicBlock ------------------------------------------------------------- */

typedef struct basic_block {
  ct_module *conv1, *bn1, *conv2, *bn2;
  ct_module *shortcut; /* conv 1x1 + BN when the shape changes; NULL: identity */
} basic_block;

/* x (N, cin, H, W) -> (N, cout, H / stride, W / stride). */
static ct_tensor *block_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  basic_block *b = self;
  ct_tensor *h = ct_relu(ct_module_forward(b->bn1, ct_module_forward(b->conv1, x)));
  h = ct_module_forward(b->bn2, ct_module_forward(b->conv2, h));
  ct_tensor *skip = b->shortcut ? ct_module_forward(b->shortcut, x) : (ct_tensor *)x;
  return ct_relu(ct_add(h, skip));
}

static const ct_module_vtable block_vt = {"BasicBlock", block_forward, free};

/* A conv3x3 (or 1x1 for k == 1) without bias, padding k / 2. */
static ct_module *conv_nobias(int64_t cin, int64_t cout, int64_t k, int64_t stride) {
  ct_conv2d_opts c = {.stride = {stride, stride}, .padding = {k / 2, k / 2}};
  return ct_conv2d_new(cin, cout, k, &c, false, NULL);
}

static ct_module *bn(int64_t c) { return ct_batch_norm2d_new(c, 1e-5, 0.1, NULL); }

static ct_module *block_new(int64_t cin, int64_t cout, int64_t stride) {
  basic_block *b = calloc(1, sizeof *b);
  ct_module *m = b ? ct_module_new(&block_vt, b) : NULL;
  if (!m) return free(b), NULL;
  bool ok = (b->conv1 = ct_module_register_module(m, "conv1", conv_nobias(cin, cout, 3, stride))) &&
            (b->bn1 = ct_module_register_module(m, "bn1", bn(cout))) &&
            (b->conv2 = ct_module_register_module(m, "conv2", conv_nobias(cout, cout, 3, 1))) &&
            (b->bn2 = ct_module_register_module(m, "bn2", bn(cout)));
  if (ok && (stride != 1 || cin != cout)) {
    ct_module *s = ct_sequential_new();
    ok = s && ct_sequential_add(s, conv_nobias(cin, cout, 1, stride)) &&
         ct_sequential_add(s, bn(cout)) &&
         (b->shortcut = ct_module_register_module(m, "shortcut", s));
    if (!ok && !b->shortcut) ct_module_free(s);
  }
  if (!ok) return ct_module_free(m), NULL;
  return m;
}

/* ---- ResNet ----------------------------------------------------------------- */

typedef struct resnet {
  ct_module *conv1, *bn1, *stages[CLI_RESNET_MAX_STAGES], *fc;
  int nstages;
} resnet;

/* x (N, C, H, W) -> logits (N, classes). */
static ct_tensor *resnet_forward(ct_module *m, void *self, const ct_tensor *x) {
  (void)m;
  resnet *r = self;
  ct_tensor *h = ct_relu(ct_module_forward(r->bn1, ct_module_forward(r->conv1, x)));
  for (int i = 0; i < r->nstages; i++) h = ct_module_forward(r->stages[i], h);
  h = ct_flatten(ct_adaptive_avg_pool2d(h, (int64_t[2]){1, 1}), 1, -1); /* (N, width) */
  return ct_module_forward(r->fc, h);
}

static const ct_module_vtable resnet_vt = {"ResNet", resnet_forward, free};

ct_module *cli_resnet_new(const cli_resnet_spec *s) {
  resnet *r = calloc(1, sizeof *r);
  ct_module *m = r ? ct_module_new(&resnet_vt, r) : NULL;
  if (!m) return free(r), NULL;
  r->nstages = s->nstages;
  bool ok = (r->conv1 = ct_module_register_module(m, "conv1",
                                                  conv_nobias(s->in_channels, s->stem, 3, 1))) &&
            (r->bn1 = ct_module_register_module(m, "bn1", bn(s->stem)));
  int64_t cin = s->stem;
  for (int i = 0; ok && i < s->nstages; i++) {
    char name[16];
    snprintf(name, sizeof name, "layer%d", i + 1);
    ct_module *seq = ct_sequential_new();
    ok = seq && (r->stages[i] = ct_module_register_module(m, name, seq));
    for (int64_t j = 0; ok && j < s->blocks[i]; j++) {
      ok = ct_sequential_add(
               seq, block_new(j ? s->widths[i] : cin, s->widths[i], j ? 1 : s->strides[i])) != NULL;
    }
    cin = s->widths[i];
  }
  ok = ok &&
       (r->fc = ct_module_register_module(m, "fc", ct_linear_new(cin, s->classes, true, NULL)));
  if (!ok) return ct_module_free(m), NULL;
  return m;
}

/* The program's resnet: 16-32-64 channels, two blocks per stage (ResNet-14),
 * stride 2 between stages: 28x28 -> 28, 14, 7 (32x32 -> 32, 16, 8). */
ct_module *cli_resnet_default(int64_t channels) { return cli_resnet_for(channels, 10); }

ct_module *cli_resnet_for(int64_t channels, int64_t classes) {
  cli_resnet_spec s = {.in_channels = channels,
                       .stem = 16,
                       .nstages = 3,
                       .widths = {16, 32, 64},
                       .blocks = {2, 2, 2},
                       .strides = {1, 2, 2},
                       .classes = classes};
  return cli_resnet_new(&s);
}
