#!/usr/bin/env python3
"""Golden references for tests/cli/golden_vision.c: the `ctensor train` models
`--model resnet` (tools/ctensor/model_resnet.c) and `--model vit`
(tools/ctensor/model_vit.c) as torch modules, trained in train mode.

    vision_golden.py OUTDIR

Tiny configurations that have every part of the program's models, trained STEPS steps
on fixed random batches of 4 images 3x8x8 with the program's optimizer settings:
  resnet  the stem (conv3x3 3->4 + BN + ReLU), an identity-shortcut BasicBlock (4->4,
          stride 1), a downsampling BasicBlock (4->8, stride 2, 1x1 conv + BN shortcut),
          global average pooling, fc (8->10); SGD lr 0.05, momentum 0.9, weight decay 5e-4
  vit     2x2 patches (16 tokens) of width 16, two pre-norm GELU encoder layers of 2
          heads (feed-forward 32), LayerNorm, mean pooling, head (16->10); AdamW lr 1e-3,
          weight decay 0.05
Writes .npy files, per model M:
  M.init.<key>, M.final.<key>  the state_dict (BatchNorm buffers included) before and after
  M.loss (STEPS) f64 (the f32 losses), M.probe_out: the trained model's logits in eval mode
and x (STEPS, 4, 3, 8, 8) f32, y (STEPS, 4) i64, probe_x (8, 3, 8, 8), shared.
"""
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 20
BATCH = 4


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """stages: (width, blocks, stride) each; layer<i> is an nn.Sequential of blocks."""

    def __init__(self, in_channels, stem, stages, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, stem, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        self.nstages = len(stages)
        cin = stem
        for i, (w, n, s) in enumerate(stages):
            setattr(self, f'layer{i + 1}', nn.Sequential(*[
                BasicBlock(cin if j == 0 else w, w, s if j == 0 else 1) for j in range(n)]))
            cin = w
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for i in range(self.nstages):
            x = getattr(self, f'layer{i + 1}')(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class ViT(nn.Module):
    def __init__(self, in_channels, size, patch, dim, depth, heads, mlp, classes=10):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, (size // patch) ** 2, dim) * .02)
        self.patch_embed = nn.Conv2d(in_channels, dim, patch, patch)
        self.blocks = nn.Sequential(*[nn.TransformerEncoderLayer(
            dim, heads, mlp, dropout=0.0, activation='gelu', batch_first=True,
            norm_first=True) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)  # (N, L, dim)
        x = self.norm(self.blocks(x + self.pos_embed))
        return self.head(x.mean(1))


def train(outdir, name, model, opt, x, y, probe_x):
    for k, v in model.state_dict().items():
        np.save(f'{outdir}/{name}.init.{k}.npy', v.numpy())
    model.train()
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x[step]), y[step])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        np.save(f'{outdir}/{name}.probe_out.npy', model(probe_x).numpy())
    for k, v in model.state_dict().items():
        np.save(f'{outdir}/{name}.final.{k}.npy', v.numpy())
    np.save(f'{outdir}/{name}.loss.npy', np.array(losses, dtype=np.float64))
    print(f'{name}: losses {losses[0]:.6f} .. {losses[-1]:.6f}')


def main(outdir):
    torch.manual_seed(1234)
    x = torch.randn(STEPS, BATCH, 3, 8, 8)
    # Learnable labels (a fixed random linear classifier of the inputs).
    proj = torch.randn(3 * 8 * 8, 10)
    y = (x.reshape(STEPS * BATCH, -1) @ proj).argmax(1).reshape(STEPS, BATCH)
    probe_x = torch.randn(8, 3, 8, 8)
    np.save(f'{outdir}/x.npy', x.numpy())
    np.save(f'{outdir}/y.npy', y.numpy())
    np.save(f'{outdir}/probe_x.npy', probe_x.numpy())
    resnet = ResNet(3, 4, [(4, 1, 1), (8, 1, 2)])
    train(outdir, 'resnet', resnet,
          torch.optim.SGD(resnet.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4),
          x, y, probe_x)
    vit = ViT(3, 8, patch=2, dim=16, depth=2, heads=2, mlp=32)
    train(outdir, 'vit', vit, torch.optim.AdamW(vit.parameters(), lr=1e-3, weight_decay=0.05),
          x, y, probe_x)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(f'usage: {sys.argv[0]} OUTDIR')
    torch.set_num_threads(1)
    main(sys.argv[1])
