#!/usr/bin/python3
"""peers_epoch.py: one Fashion-MNIST training epoch of `ctensor train`'s CNN in PyTorch.

The peer of `ctensor train --epochs 1` (bench/epoch_fmnist.sh runs both):

  model      conv1 (1 -> 32, 3x3), relu, maxpool 2, conv2 (32 -> 64, 3x3), relu,
             maxpool 2, flatten, fc1 (1600 -> 128), relu, fc2 (128 -> 10)
             (--model mlp: flatten, fc1 (784 -> 128), relu, fc2 (128 -> 10))
  optimizer  Adam, lr 1e-3 (mlp: 2e-3), the defaults of `ctensor train`; the first
             epoch runs at the cosine schedule's first lr, the full lr
  data       the IDX .gz files of /usr/share/datasets/fashion-mnist, decoded once
             with numpy into one f32 tensor normalized as (x/255 - 0.2860) / 0.3530;
             each epoch a permutation from a seeded torch.Generator, batches of 64
             sliced from it (the last one partial, as ctensor's loader), and with
             --augment hflip (ctensor's default for the cnn) each image flipped
             left-right with probability 1/2
  loop       forward, cross_entropy, zero_grad, backward, step, loss.item()
  eval       the 10000 test images in batches of 500, no_grad, eval mode

No torchvision (Debian's python3-torch does not ship it) and no DataLoader: the
batches come from the main thread, and the time spent building them is reported
as data_seconds (ctensor's loader builds them on --workers threads and reports
the time the training loop waited for them).

--device cuda[:N] trains on the GPU as a PyTorch user does it: the model and the
optimizer's state on the GPU, each batch built on the CPU as above, then
x.pin_memory().to(device, non_blocking=True) (what DataLoader(pin_memory=True)
plus the usual non-blocking copy do; the pinning counts in data_seconds), and
loss.item() every step as a typical eager loop does (it waits for the GPU each
step). The epoch's time runs between torch.cuda.synchronize() calls. The test
batches go to the GPU the same way. The CUDA context, cuBLAS and cuDNN start
lazily in the first steps, so the first epoch includes them (as ctensor's
does); cudnn.benchmark stays at its default (off). TF32 is off for f32 products
and convolutions (as in ctensor, whose default it is), so both do the same
arithmetic; the records name the setting.

Prints one JSON line per epoch, in the style of bench/bench_util.c:

  {"bench":"fmnist_cnn_epoch","impl":"pytorch","device":"cpu","threads":2,"epoch":1,
   "seconds":...,"images_per_second":...,"data_seconds":...,"eval_seconds":...,
   "test_accuracy":...}

--epochs N trains N epochs with the cosine schedule over N (as `ctensor train
--epochs N`) and --target A adds "time_to_target_s" (training seconds, without
evaluation, until the test accuracy first reaches A), if reached.

Runs with PyTorch 1.13 and NumPy 1.24 (Debian's /usr/bin/python3) as with
PyTorch 2.x and NumPy 2.x:
  /usr/bin/python3 bench/peers_epoch.py --threads N
  python3 bench/peers_epoch.py --device cuda:0 --epochs 5 --target 0.91
"""
import argparse
import gzip
import json
import os
import sys
import time

MEAN, STD = 0.2860, 0.3530


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int,
                   default=int(os.environ.get("CT_NUM_THREADS", 0)) or os.cpu_count())
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=None, help="default 1e-3 (cnn), 2e-3 (mlp): ctensor's")
    p.add_argument("--augment", choices=["none", "hflip"], default="hflip")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training images")
    p.add_argument("--limit-test", type=int, default=0, help="use only the first N test images")
    p.add_argument("--target", type=float, default=0, help="report the time to this test accuracy")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    a = p.parse_args()
    kind, _, index = a.device.partition(":")
    if kind not in ("cpu", "cuda") or (index and (kind == "cpu" or not index.isdigit())):
        p.error(f"--device {a.device}: expected cpu, cuda or cuda:N")
    return a


ARGS = parse_args()
# Thread counts before torch (and its OpenBLAS/OpenMP) load.
os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see peers_util.py
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_util import torch_exact_f32, torch_precision  # noqa: E402

torch.set_num_threads(ARGS.threads)
DEVICE = torch.device(ARGS.device)
CUDA = DEVICE.type == "cuda"
if CUDA:
    torch_exact_f32(torch)


def to_device(t):
    """A CPU batch on DEVICE: pinned, then copied without blocking the host."""
    return t.pin_memory().to(DEVICE, non_blocking=True) if CUDA else t


def sync():
    """Waits for the GPU's queued work (a clock read must not precede it)."""
    if CUDA:
        torch.cuda.synchronize(DEVICE)


def read_idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load_split(prefix):
    """(N, 1, 28, 28) normalized f32 images and (N,) i64 labels."""
    d = ARGS.data_dir
    x = read_idx(os.path.join(d, f"{prefix}-images-idx3-ubyte.gz"), 16).reshape(-1, 1, 28, 28)
    y = read_idx(os.path.join(d, f"{prefix}-labels-idx1-ubyte.gz"), 8)
    if x.shape[0] != y.shape[0]:
        sys.exit(f"peers_epoch.py: {prefix}: {x.shape[0]} images but {y.shape[0]} labels")
    x = torch.from_numpy(x.astype(np.float32) / 255.0)
    return (x - MEAN) / STD, torch.from_numpy(y.astype(np.int64))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(64 * 5 * 5, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        f = nn.functional
        x = f.max_pool2d(f.relu(self.conv1(x)), 2)
        x = f.max_pool2d(f.relu(self.conv2(x)), 2)
        x = f.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(nn.functional.relu(self.fc1(torch.flatten(x, 1))))


def evaluate(model, x, y):
    model.eval()
    correct, t0 = 0, time.perf_counter()
    with torch.no_grad():
        for i in range(0, x.shape[0], 500):
            xb, yb = to_device(x[i:i + 500]), to_device(y[i:i + 500])
            correct += (model(xb).argmax(1) == yb).sum().item()
    sync()
    model.train()
    return correct / x.shape[0], time.perf_counter() - t0


def main():
    if CUDA and not torch.cuda.is_available():
        sys.exit(f"peers_epoch.py: --device {ARGS.device}: torch {torch.__version__} sees no CUDA GPU")
    xtr, ytr = load_split("train")
    xte, yte = load_split("t10k")
    if ARGS.limit_train > 0:
        xtr, ytr = xtr[:ARGS.limit_train], ytr[:ARGS.limit_train]
    if ARGS.limit_test > 0:
        xte, yte = xte[:ARGS.limit_test], yte[:ARGS.limit_test]
    n, bs = xtr.shape[0], ARGS.batch_size
    torch.manual_seed(ARGS.seed)
    # Initialized on the CPU (the same weights as --device cpu), then moved;
    # the optimizer is made after, so its state lives on the device too.
    model = (CNN() if ARGS.model == "cnn" else MLP()).to(DEVICE)
    lr = ARGS.lr if ARGS.lr is not None else (1e-3 if ARGS.model == "cnn" else 2e-3)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=ARGS.epochs)
    gen = torch.Generator()
    train_s = 0.0
    reached = None
    model.train()
    for epoch in range(ARGS.epochs):
        gen.manual_seed(ARGS.seed * 1000003 + epoch)
        lr = opt.param_groups[0]["lr"]
        data_s, loss_sum = 0.0, 0.0
        sync()
        t0 = time.perf_counter()
        perm = torch.randperm(n, generator=gen)
        flips = torch.rand(n, generator=gen) < 0.5 if ARGS.augment == "hflip" else None
        for i in range(0, n, bs):
            d0 = time.perf_counter()
            idx = perm[i:i + bs]
            x, y = xtr.index_select(0, idx), ytr.index_select(0, idx)
            if flips is not None:
                f = flips[i:i + bs]
                x[f] = x[f].flip(-1)
            if CUDA:
                x, y = x.pin_memory(), y.pin_memory()
            data_s += time.perf_counter() - d0
            x, y = x.to(DEVICE, non_blocking=True), y.to(DEVICE, non_blocking=True)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item() * y.shape[0]
        sync()
        seconds = time.perf_counter() - t0
        sched.step()
        train_s += seconds
        acc, eval_s = evaluate(model, xte, yte)
        rec = {"bench": f"fmnist_{ARGS.model}_epoch", "impl": "pytorch", "device": ARGS.device,
               "threads": ARGS.threads, "epoch": epoch + 1, "batch_size": bs, "augment": ARGS.augment, "lr": lr,
               "train_samples": n, "seconds": round(seconds, 4),
               "images_per_second": round(n / seconds, 1), "data_seconds": round(data_s, 4),
               "data_fraction": round(data_s / seconds, 5), "loss": round(loss_sum / n, 6),
               "eval_seconds": round(eval_s, 4), "eval_images_per_second": round(xte.shape[0] / eval_s, 1),
               "test_accuracy": acc, "version": torch.__version__}
        if CUDA:
            rec["gpu"] = torch.cuda.get_device_name(DEVICE)
            rec.update(torch_precision(torch))
        if ARGS.target > 0 and reached is None and acc >= ARGS.target:
            reached = train_s
            rec["time_to_target_s"] = round(reached, 3)
        print(json.dumps(rec, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
