#!/usr/bin/python3
"""peers_gpt.py: training steps of `ctensor train --model gpt`'s GPT in PyTorch.

The peer of `ctensor train --model gpt --epochs 1 --limit-train B*STEPS` (docs/benchmarks.md,
"A byte-level GPT on fortunes"):

  data       the fortune files (every file of --data-dir without a '.' in its name, sorted,
             concatenated), the first 90% cut into non-overlapping windows of 129 bytes
             (input 128 bytes, targets the next byte of each), batches of --batch windows in
             the order of a seeded permutation, as ctensor's loader does
  model      wte (256 x 128) and wpe (128 x 128) embeddings, N(0, 0.02); 4
             nn.TransformerEncoderLayer(128, 4, 512, dropout 0, gelu, batch_first,
             norm_first) with a causal mask; LayerNorm; logits h @ wte.weight^T (tied)
  optimizer  AdamW, lr 1e-3, weight decay 0.01
  loop       forward, cross_entropy, zero_grad, backward, step, loss.item()

Prints one JSON line: {"impl": "pytorch", "steps", "seconds", "windows_per_second", "loss"}.
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

T, D, LAYERS, HEADS = 128, 128, 4, 4


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(256, D)
        self.wpe = nn.Embedding(T, D)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.h = nn.ModuleList(
            nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:t]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        for block in self.h:
            x = block(x, src_mask=mask)
        return self.ln_f(x) @ self.wte.weight.T  # (B, t, 256)


def windows(data_dir):
    names = sorted(f for f in os.listdir(data_dir)
                   if "." not in f and os.path.isfile(os.path.join(data_dir, f)))
    corpus = b"".join(open(os.path.join(data_dir, f), "rb").read() for f in names)
    train = np.frombuffer(corpus[:len(corpus) - len(corpus) * 10 // 100], dtype=np.uint8)
    n = (len(train) - 1) // T
    x = torch.from_numpy(train[:n * T].astype(np.int64).reshape(n, T))
    y = torch.from_numpy(train[1:n * T + 1].astype(np.int64).reshape(n, T))
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default="/usr/share/games/fortunes")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    x, y = windows(a.data_dir)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(a.seed))
    t0 = time.perf_counter()
    loss_sum = 0.0
    for s in range(a.steps):
        idx = order[s * a.batch:(s + 1) * a.batch]
        logits = model(x[idx])
        loss = F.cross_entropy(logits.reshape(-1, 256), y[idx].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_sum += loss.item()
    seconds = time.perf_counter() - t0
    print(json.dumps({"impl": "pytorch", "steps": a.steps, "seconds": seconds,
                      "windows_per_second": a.steps * a.batch / seconds,
                      "loss": loss_sum / a.steps}))


if __name__ == "__main__":
    main()
