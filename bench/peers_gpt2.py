#!/usr/bin/env python3
"""The GPT-2 124M training-step benchmark's Python side (bench/gpt2.sh runs it).

    peers_gpt2.py init DIR [--B 4] [--T 64] [--seed 1337]
        writes the shared inputs: DIR/gpt2_124M.safetensors (nanoGPT's seeded
        initialization, state_dict names), DIR/batch.safetensors ("tokens": a stream of
        B*T+1 token ids; inputs are tokens[:-1] and targets tokens[1:], viewed (B, T),
        as llm.c's data loader makes them), and the same in llm.c's formats:
        DIR/llmc/gpt2_124M.bin (header magic 20240326 version 3, vocabulary padded to
        50304 with zero rows) and DIR/llmc/dev/data/tinyshakespeare/tiny_shakespeare_
        {train,val}.bin (header magic 20240520 version 1, uint16 tokens).
    peers_gpt2.py torch DIR --threads N --steps S
        trains PyTorch (CPU, N threads) S AdamW steps on that batch; one JSON line per
        step: {"impl": "pytorch", "step": k, "loss": ..., "step_s": ...}
    peers_gpt2.py report FILE.jsonl
        the step-time ratios (medians of the steps after the first) and the losses of
        every implementation against ctensor's.

The optimizer is llm.c's train_gpt2.c's: AdamW lr 1e-4, betas (0.9, 0.999), eps 1e-8,
weight decay 0; every step trains on the same batch (llm.c's loader over a file of one
batch), so the losses fall as the batch is memorized.
"""
import json
import os
import statistics
import struct
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'golden'))
from make_golden import Gpt, save, load  # noqa: E402  (one torch GPT for the test and the bench)

V, VP, MAXT, L, H, E = 50257, 50304, 1024, 12, 12, 768
ADAMW = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)


def arg(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def write_llmc(d, state, tokens):
    """llm.c's checkpoint: 256 int32 header, then its 16 tensors, each layer-stacked."""
    os.makedirs(f'{d}/llmc/dev/data/tinyshakespeare', exist_ok=True)
    header = [0] * 256
    header[:8] = [20240326, 3, MAXT, V, L, H, E, VP]
    wte = torch.zeros(VP, E)
    wte[:V] = state['transformer.wte.weight']
    layer = lambda k: torch.stack([state[f'transformer.h.{i}.{k}'] for i in range(L)])
    order = [wte, state['transformer.wpe.weight'], layer('ln_1.weight'), layer('ln_1.bias'),
             layer('attn.c_attn.weight'), layer('attn.c_attn.bias'), layer('attn.c_proj.weight'),
             layer('attn.c_proj.bias'), layer('ln_2.weight'), layer('ln_2.bias'),
             layer('mlp.c_fc.weight'), layer('mlp.c_fc.bias'), layer('mlp.c_proj.weight'),
             layer('mlp.c_proj.bias'), state['transformer.ln_f.weight'], state['transformer.ln_f.bias']]
    with open(f'{d}/llmc/gpt2_124M.bin', 'wb') as f:
        f.write(struct.pack('<256i', *header))
        for t in order:
            f.write(t.detach().float().contiguous().numpy().tobytes())
    data = struct.pack('<256i', 20240520, 1, tokens.numel(), *([0] * 253))
    data += tokens.to(torch.int32).numpy().astype('<u2').tobytes()
    for split in ('train', 'val'):
        with open(f'{d}/llmc/dev/data/tinyshakespeare/tiny_shakespeare_{split}.bin', 'wb') as f:
            f.write(data)


def init(d):
    B, T, seed = arg('--B', 4), arg('--T', 64), arg('--seed', 1337)
    torch.manual_seed(seed)
    state = Gpt(V=V, T=MAXT, L=L, H=H, E=E).state_dict()
    save(f'{d}/gpt2_124M.safetensors', state)
    tokens = torch.randint(V, (B * T + 1,), dtype=torch.int64)
    save(f'{d}/batch.safetensors', {'tokens': tokens})
    write_llmc(d, state, tokens)


def train_torch(d):
    threads, steps = arg('--threads', 2), arg('--steps', 5)
    torch.set_num_threads(threads)
    model = Gpt(V=V, T=MAXT, L=L, H=H, E=E)
    model.load_state_dict(load(f'{d}/gpt2_124M.safetensors'))
    tokens = load(f'{d}/batch.safetensors')['tokens']
    B = arg('--B', 4)
    x, y = tokens[:-1].view(B, -1), tokens[1:].view(B, -1)
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    # --amp bf16: forward and loss under bf16 autocast (impl pytorch_bf16); --tag
    # SUFFIX names the interpreter's torch (impl pytorch@SUFFIX)
    bf16 = arg('--amp', '') == 'bf16'
    impl = 'pytorch' + ('_bf16' if bf16 else '') + ('@' + arg('--tag', '') if '--tag' in sys.argv else '')
    for step in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        print(json.dumps({'bench': 'gpt2_124M_train_step', 'impl': impl, 'threads': torch.get_num_threads(),
                          'step': step, 'loss': loss.item(), 'step_s': dt}), flush=True)


def report(path):
    rows = [json.loads(line) for line in open(path) if line.startswith('{')]
    steps = {}
    for r in rows:
        if r.get('bench') == 'gpt2_124M_train_step':
            steps.setdefault(r['impl'], []).append(r)
    med = {k: statistics.median(r['step_s'] for r in v[1:] or v) for k, v in steps.items()}
    ct = steps.get('ctensor', [])
    print('GPT-2 124M, B=4 T=64, AdamW: median step time of the steps after the first')
    for impl, t in med.items():
        ratio = f'  {impl}/ctensor {t / med["ctensor"]:.2f}x' if 'ctensor' in med and impl != 'ctensor' else ''
        print(f'  {impl:8s} {t:8.3f} s/step ({len(steps[impl])} steps){ratio}')
    for impl, v in steps.items():
        if impl == 'ctensor' or not ct:
            continue
        diffs = [abs(a['loss'] - b['loss']) / abs(b['loss']) for a, b in zip(v, ct)]
        print(f'  losses {impl} vs ctensor: max rel. diff {max(diffs):.2e} over {len(diffs)} steps; '
              + ' '.join(f'{a["loss"]:.6f}/{b["loss"]:.6f}' for a, b in zip(v, ct)))
    mem = {r['impl']: r for r in rows if r.get('bench') == 'gpt2_124M_peak_memory'}
    if 'fused' in mem and 'unfused' in mem:
        f, u = mem['fused'], mem['unfused']
        print(f'Peak RSS of one training step at B={f["B"]} T={f["T"]}: fused attention '
              f'{f["peak_rss_mb"]:.0f} MB, unfused {u["peak_rss_mb"]:.0f} MB '
              f'(fused/unfused {f["peak_rss_mb"] / u["peak_rss_mb"]:.2f}); above the loaded model: '
              f'{f["peak_rss_mb"] - f["model_rss_mb"]:.0f} MB vs {u["peak_rss_mb"] - u["model_rss_mb"]:.0f} MB '
              f'({(f["peak_rss_mb"] - f["model_rss_mb"]) / (u["peak_rss_mb"] - u["model_rss_mb"]):.2f})')


if __name__ == '__main__':
    if len(sys.argv) < 3 or sys.argv[1] not in ('init', 'torch', 'report'):
        sys.exit(__doc__)
    {'init': init, 'torch': train_torch, 'report': report}[sys.argv[1]](sys.argv[2])
