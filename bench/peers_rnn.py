#!/usr/bin/python3
"""peers_rnn.py: the workload of bench_rnn.c in PyTorch (CPU).

Same sizes, optimizer, method (peers_util.py) and JSON lines as bench_rnn.c: one
training step (zero_grad, forward, MSE loss, backward, SGD step) of a 2-layer
torch.nn.LSTM(128, 256) on x (64, 32, 128) f32 ("torch"), and of the same LSTM
written step by step with torch ops on ctensor's schedule (the input's
projection 8 steps at a time, addmm and the gates per step: "torch_ops").
Run with Debian's interpreter: /usr/bin/python3 bench/peers_rnn.py --threads N
"""
import json
import math
import sys

from peers_util import emit, init, scaled, want

ARGS = init(__doc__.splitlines()[0])
import torch  # noqa: E402  (after init: it sets the thread variables)

torch.set_num_threads(ARGS.threads)
L, N, I, H = 64, 32, 128, 256


def main():
    print(json.dumps({"meta": "peers", "threads": ARGS.threads, "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads(),
                      "python": sys.version.split()[0]}), flush=True)
    name = "lstm2_step_L64_N32_I128_H256_f32"
    if not want(name):
        return
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(I, H, num_layers=2)
    opt = torch.optim.SGD(lstm.parameters(), lr=0.01, momentum=0.9)
    x, target = torch.randn(L, N, I), torch.randn(L, N, H)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(lstm(x)[0], target)
        loss.backward()
        opt.step()
        return loss.item()

    def ops_forward():
        ys = []
        inp = x
        for k in range(2):
            w_ih, w_hh = getattr(lstm, f"weight_ih_l{k}"), getattr(lstm, f"weight_hh_l{k}")
            b_ih, b_hh = getattr(lstm, f"bias_ih_l{k}"), getattr(lstm, f"bias_hh_l{k}")
            h = c = torch.zeros(N, H)
            ys = []
            for t in range(L):
                if t % 8 == 0:
                    gi_blk = torch.nn.functional.linear(inp[t:t + 8], w_ih, b_ih)
                i, f, g, o = (gi_blk[t % 8] + torch.addmm(b_hh, h, w_hh.t())).chunk(4, 1)
                c = f.sigmoid() * c + i.sigmoid() * g.tanh()
                h = o.sigmoid() * c.tanh()
                ys.append(h)
            inp = torch.stack(ys)
        return inp

    def ops_step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ops_forward(), target)
        loss.backward()
        opt.step()
        return loss.item()

    with torch.no_grad():
        assert torch.allclose(ops_forward(), lstm(x)[0], atol=1e-5), "the ops differ from nn.LSTM"
    for impl, fn in (("torch", step), ("torch_ops", ops_step)):
        first = fn()
        fn()
        last = fn()
        assert math.isfinite(last) and last < first, "the loss does not fall"
        emit(name, impl, fn, "ms", scaled(1e3))


if __name__ == "__main__":
    main()
