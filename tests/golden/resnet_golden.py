#!/usr/bin/env python3
"""Golden reference for tests/cli/golden_resnet.c: the `ctensor train --model resnet`
network (tools/ctensor/model_resnet.c) as torch modules, trained in train mode.

    resnet_golden.py OUTDIR

A tiny configuration that has every part of the program's ResNet: the stem
(conv3x3 3->4 + BN + ReLU), an identity-shortcut BasicBlock (4->4, stride 1),
a downsampling BasicBlock (4->8, stride 2, 1x1 conv + BN shortcut), global average
pooling and fc (8->10). STEPS SGD steps (lr 0.05, momentum 0.9, weight decay 5e-4,
the program's defaults) on fixed random batches of 4 images 3x8x8. Writes .npy files:
  init.<key>, final.<key>  the state_dict (BatchNorm buffers included) before and after
  x (STEPS, 4, 3, 8, 8) f32, y (STEPS, 4) i64, loss (STEPS) f64 (the f32 losses)
  probe_x (8, 3, 8, 8), probe_out: the trained model's logits in eval mode (running stats)
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


def main(outdir):
    torch.manual_seed(1234)
    model = ResNet(3, 4, [(4, 1, 1), (8, 1, 2)])
    for k, v in model.state_dict().items():
        np.save(f'{outdir}/init.{k}.npy', v.numpy())
    x = torch.randn(STEPS, BATCH, 3, 8, 8)
    # Learnable labels (a fixed random linear classifier of the inputs).
    proj = torch.randn(3 * 8 * 8, 10)
    y = (x.reshape(STEPS * BATCH, -1) @ proj).argmax(1).reshape(STEPS, BATCH)
    probe_x = torch.randn(8, 3, 8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
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
        np.save(f'{outdir}/probe_out.npy', model(probe_x).numpy())
    for k, v in model.state_dict().items():
        np.save(f'{outdir}/final.{k}.npy', v.numpy())
    np.save(f'{outdir}/x.npy', x.numpy())
    np.save(f'{outdir}/y.npy', y.numpy())
    np.save(f'{outdir}/loss.npy', np.array(losses, dtype=np.float64))
    np.save(f'{outdir}/probe_x.npy', probe_x.numpy())
    print(f'resnet: losses {losses[0]:.6f} .. {losses[-1]:.6f}')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(f'usage: {sys.argv[0]} OUTDIR')
    torch.set_num_threads(1)
    main(sys.argv[1])
