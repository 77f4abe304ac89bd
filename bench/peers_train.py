#!/usr/bin/python3
"""peers_train.py: the training steps of bench_train.c in PyTorch.

Same models, batches, losses and optimizers, same method (peers_util.py) and
same JSON lines as bench_train.c. torch.set_num_threads(N).

Run with Debian's interpreter: /usr/bin/python3 bench/peers_train.py --threads N
"""
import json

from peers_util import emit, init, scaled, want

ARGS = init(__doc__.splitlines()[0])
import torch  # noqa: E402  (after init: it sets the thread variables)
from torch import nn  # noqa: E402

torch.set_num_threads(ARGS.threads)


def bench_linreg():
    """1000 epochs of mse_loss, backward, SGD(lr=0.01) on X (100, 10), W (10, 1)."""
    torch.manual_seed(0)
    X, y = torch.rand(100, 10), torch.rand(100, 1)
    W = torch.rand(10, 1, requires_grad=True)
    opt = torch.optim.SGD([W], lr=0.01)

    def run():
        for _ in range(1000):
            opt.zero_grad()
            loss = nn.functional.mse_loss(X @ W, y)
            loss.backward()
            opt.step()

    emit("train_linreg_1000", "torch", run, "ms_per_1000", scaled(1e3))


def bench_step(name, net, shape):
    """One step: zero_grad, forward, cross_entropy, backward, SGD(0.01, momentum 0.9)."""
    x = torch.randn(*shape)
    labels = torch.randint(0, 10, (shape[0],))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def run():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), labels)
        loss.backward()
        opt.step()

    emit(name, "torch", run, "ms_per_step", scaled(1e3))


def mlp():
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # (B, 16, 16, 16)
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (B, 32, 8, 8)
        nn.Flatten(), nn.Linear(32 * 8 * 8, 10))


def main():
    print(json.dumps({"meta": "peers_train", "threads": ARGS.threads,
                      "torch": torch.__version__, "torch_threads": torch.get_num_threads()}),
          flush=True)
    torch.manual_seed(0)
    if want("train_linreg_1000"):
        bench_linreg()
    if want("train_mlp_step"):
        bench_step("train_mlp_step", mlp(), (64, 784))
    if want("train_cnn_step"):
        bench_step("train_cnn_step", cnn(), (32, 3, 32, 32))


if __name__ == "__main__":
    main()
