/* models.c: the models `ctensor train` knows, as user modules whose children
 * carry the names of the PyTorch originals (conv1, conv2, fc1, ...), so a
 * checkpoint's keys are the torch state_dict keys.
 *
 *   mlp        flatten, fc1 (C*H*W -> 128), relu, fc2 (128 -> 10)
 *   cnn        conv1 (C -> 32, 3x3), relu, maxpool 2, conv2 (32 -> 64, 3x3), relu,
 *              maxpool 2, flatten, fc1 (64*s*s -> 128), relu, fc2 (128 -> 10)
 *              (s = 5 for 28x28 inputs, 6 for 32x32)
 *   simplecnn  the CIFAR-10 tutorial Net: conv1 (C -> 6, 5x5), pool, conv2 (6 -> 16, 5x5),
 *              pool, fc1 (400 -> 120), fc2 (120 -> 84), fc3 (84 -> 10); for 28x28
 *              inputs conv1 pads by 2 so that the flatten size stays 16*5*5.
 *   resnet     (model_resnet.c) stem conv3x3 C -> 16 + BN + relu, three stages of two
 *              BasicBlocks (16, 32, 64 channels, stride 2 into stages 2 and 3, 1x1 conv +
 *              BN shortcuts where the shape changes), global average pool, fc (64 -> 10):
 *              ResNet-14, 0.17M parameters; BN running stats are checkpoint buffers
 *   vit        (model_vit.c) 4x4 patches embedded by a conv (C -> 96, stride 4), learned
 *              position embeddings, four pre-norm GELU encoder layers (4 heads, 192
 *              feed-forward), LayerNorm, mean over the patches, head (96 -> 10)
 *   gpt        the byte-level transformer of model_gpt.c */
#include <stdlib.h>

#include "cli.h"

typedef struct net {
  cli_model kind;
  ct_module *conv1, *conv2, *fc1, *fc2, *fc3;
} net;

static const ct_pool2d_opts pool2 = {.kernel = {2, 2}};

/* x (N, C, H, W) -> logits (N, 10). */
static ct_tensor *net_forward(ct_module *m, void *self, const ct_tensor *x) {
  net *n = self;
  ct_tensor *h;
  switch (n->kind) {
    case MODEL_MLP:
      h = ct_relu(ct_module_forward(n->fc1, ct_flatten(x, 1, -1)));
      return ct_module_forward(n->fc2, h);
    case MODEL_CNN:
      h = ct_max_pool2d(ct_relu(ct_module_forward(n->conv1, x)), &pool2);
      h = ct_max_pool2d(ct_relu(ct_module_forward(n->conv2, h)), &pool2);
      h = ct_relu(ct_module_forward(n->fc1, ct_flatten(h, 1, -1)));
      return ct_module_forward(n->fc2, h);
    case MODEL_SIMPLECNN:
      h = ct_max_pool2d(ct_relu(ct_module_forward(n->conv1, x)), &pool2);
      h = ct_max_pool2d(ct_relu(ct_module_forward(n->conv2, h)), &pool2);
      h = ct_relu(ct_module_forward(n->fc1, ct_flatten(h, 1, -1)));
      h = ct_relu(ct_module_forward(n->fc2, h));
      return ct_module_forward(n->fc3, h);
    case MODEL_RESNET: /* modules of their own (model_resnet.c, model_vit.c, model_gpt.c) */
    case MODEL_VIT:
    case MODEL_GPT:
      break;
  }
  return NULL;
}

static const ct_module_vtable mlp_vt = {"MLP", net_forward, free};
static const ct_module_vtable cnn_vt = {"CNN", net_forward, free};
static const ct_module_vtable simplecnn_vt = {"Net", net_forward, free};

cli_optim cli_model_default_optim(cli_model kind) {
  /* BatchNorm ResNets train best with SGD and momentum; transformers with AdamW. */
  return kind == MODEL_RESNET                     ? OPTIM_SGD
         : kind == MODEL_VIT || kind == MODEL_GPT ? OPTIM_ADAMW
                                                  : OPTIM_ADAM;
}

ct_module *cli_model_new(cli_model kind, int64_t c, int64_t size) {
  return cli_model_new_for(kind, c, size, size, 10);
}

ct_module *cli_model_new_for(cli_model kind, int64_t c, int64_t size, int64_t width,
                             int64_t classes) {
  if (kind == MODEL_GPT) return cli_gpt_new(); /* bytes, not images: model_gpt.c */
  if (kind == MODEL_RESNET) return cli_resnet_for(c, classes);
  if (kind == MODEL_VIT) return cli_vit_for(c, size, classes);
  net *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->kind = kind;
  const ct_module_vtable *vt = kind == MODEL_MLP   ? &mlp_vt
                               : kind == MODEL_CNN ? &cnn_vt
                                                   : &simplecnn_vt;
  ct_module *m = ct_module_new(vt, n);
  if (!m) {
    free(n);
    return NULL;
  }
  bool ok = true;
  /* Children are registered in forward order: state_dict order as in torch. */
  switch (kind) {
    case MODEL_MLP:
      ok = (n->fc1 = ct_module_register_module(m, "fc1",
                                               ct_linear_new(c * size * width, 128, true, NULL))) &&
           (n->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(128, classes, true, NULL)));
      break;
    case MODEL_CNN: {
      /* two (3x3 valid conv, 2x2 pool) stages */
      int64_t s = ((size - 2) / 2 - 2) / 2, sw = ((width - 2) / 2 - 2) / 2;
      ok = (n->conv1 =
                ct_module_register_module(m, "conv1", ct_conv2d_new(c, 32, 3, NULL, true, NULL))) &&
           (n->conv2 = ct_module_register_module(m, "conv2",
                                                 ct_conv2d_new(32, 64, 3, NULL, true, NULL))) &&
           (n->fc1 =
                ct_module_register_module(m, "fc1", ct_linear_new(64 * s * sw, 128, true, NULL))) &&
           (n->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(128, classes, true, NULL)));
      break;
    }
    case MODEL_SIMPLECNN: {
      /* 32x32: 5x5 valid conv -> 28, pool -> 14, conv -> 10, pool -> 5. 28x28
       * inputs get padding 2 in conv1 to follow the same sizes. */
      int64_t pad = (32 - size) / 2;
      ct_conv2d_opts c1 = {.padding = {pad, pad}};
      ok = (n->conv1 =
                ct_module_register_module(m, "conv1", ct_conv2d_new(c, 6, 5, &c1, true, NULL))) &&
           (n->conv2 =
                ct_module_register_module(m, "conv2", ct_conv2d_new(6, 16, 5, NULL, true, NULL))) &&
           (n->fc1 =
                ct_module_register_module(m, "fc1", ct_linear_new(16 * 5 * 5, 120, true, NULL))) &&
           (n->fc2 = ct_module_register_module(m, "fc2", ct_linear_new(120, 84, true, NULL))) &&
           (n->fc3 = ct_module_register_module(m, "fc3", ct_linear_new(84, classes, true, NULL)));
      break;
    }
    default:
      ok = false;
  }
  if (!ok) {
    ct_module_free(m);
    return NULL;
  }
  return m;
}
