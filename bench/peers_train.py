#!/usr/bin/python3
"""peers_train.py: the training steps of bench_train.c in PyTorch.

Same models, batches, losses and optimizers, same method (peers_util.py) and
same JSON lines as bench_train.c. torch.set_num_threads(N).

--device cpu|cuda|cuda:N (default cpu), as bench_train --device: the models and
data go to that device and each timed call ends with torch.cuda.synchronize(),
so its time includes the GPU work (PyTorch eager); a {"meta":"device",...} line
follows the first meta line. TF32 is off for f32 products and convolutions
(peers_util.torch_exact_f32), as in ctensor, so both do the same arithmetic.
Without CUDA: a message on stderr, exit 0, no rows.
The *_bf16 steps run the forward pass and the loss under
torch.autocast(device, torch.bfloat16), as bench_train's. With --compile
(PyTorch 2.x), each step is also timed with the model under torch.compile
(impl "torch_compile"; its compilation happens in the warm-up, untimed).

Run with Debian's interpreter: /usr/bin/python3 bench/peers_train.py --threads N
"""
import json
import sys


def take_device(argv):
    """Takes --device NAME (or --device=NAME) out of argv (peers_util parses the rest)."""
    name, rest, i = "cpu", [argv[0]], 1
    while i < len(argv):
        if argv[i] == "--device" and i + 1 < len(argv):
            name, i = argv[i + 1], i + 2
            continue
        if argv[i].startswith("--device="):
            name = argv[i][len("--device="):]
        else:
            rest.append(argv[i])
        i += 1
    argv[:] = rest
    return name


DEVICE_NAME = take_device(sys.argv)
COMPILE = "--compile" in sys.argv
if COMPILE:
    sys.argv.remove("--compile")

from peers_util import emit, init, scaled, torch_exact_f32, torch_precision, want  # noqa: E402

ARGS = init(__doc__.splitlines()[0])
import torch  # noqa: E402  (after init: it sets the thread variables)
from torch import nn  # noqa: E402

torch.set_num_threads(ARGS.threads)
try:
    DEV = torch.device(DEVICE_NAME)
except (RuntimeError, ValueError) as e:
    sys.exit(f"peers_train: --device {DEVICE_NAME}: {e}")
CUDA = DEV.type == "cuda"
if CUDA and not torch.cuda.is_available():
    print(f"peers_train: --device {DEVICE_NAME}: no CUDA device visible to PyTorch "
          f"{torch.__version__}: skipping the PyTorch rows", file=sys.stderr, flush=True)
    sys.exit(0)
if CUDA and DEV.index is not None and DEV.index >= torch.cuda.device_count():
    sys.exit(f"peers_train: --device {DEVICE_NAME}: only {torch.cuda.device_count()} "
             "CUDA device(s) visible")
if CUDA:
    torch_exact_f32(torch)


def sync():
    """Ends a timed call: waits for the queued GPU work (nothing on the CPU)."""
    if CUDA:
        torch.cuda.synchronize(DEV)


def bench_linreg():
    """1000 epochs of mse_loss, backward, SGD(lr=0.01) on X (100, 10), W (10, 1)."""
    torch.manual_seed(0)
    X, y = torch.rand(100, 10, device=DEV), torch.rand(100, 1, device=DEV)
    W = torch.rand(10, 1, device=DEV, requires_grad=True)
    opt = torch.optim.SGD([W], lr=0.01)

    def run():
        for _ in range(1000):
            opt.zero_grad()
            loss = nn.functional.mse_loss(X @ W, y)
            loss.backward()
            opt.step()
        sync()

    emit("train_linreg_1000", "torch", run, "ms_per_1000", scaled(1e3))


def bench_step(name, net, shape, bf16=False):
    """One step: zero_grad, forward, cross_entropy, backward, SGD(0.01, momentum 0.9);
    with bf16, forward and loss under bf16 autocast. With --compile, again with
    the model compiled."""
    net = net.to(DEV)
    x = torch.randn(*shape, device=DEV)
    labels = torch.randint(0, 10, (shape[0],), device=DEV)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def runner(model):
        def run():
            opt.zero_grad()
            with torch.autocast(DEV.type, dtype=torch.bfloat16, enabled=bf16):
                loss = nn.functional.cross_entropy(model(x), labels)
            loss.backward()
            opt.step()
            sync()
        return run

    emit(name, "torch", runner(net), "ms_per_step", scaled(1e3))
    if COMPILE and hasattr(torch, "compile"):
        emit(name, "torch_compile", runner(torch.compile(net)), "ms_per_step", scaled(1e3))


def program_models():
    """The program's resnet and vit as torch modules (tests/golden/vision_golden.py, the
    definitions the golden tests hold tools/ctensor/model_resnet.c and model_vit.c to)."""
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "golden"))
    import vision_golden
    return vision_golden


def resnet():
    """`ctensor train --model resnet` on (1, 28, 28): ResNet-14, 16-32-64 channels."""
    return program_models().ResNet(1, 16, [(16, 2, 1), (32, 2, 2), (64, 2, 2)])


def vit():
    """`ctensor train --model vit` on (1, 28, 28): 4x4 patches, width 96, 4 layers."""
    return program_models().ViT(1, 28, patch=4, dim=96, depth=4, heads=4, mlp=192)


def mlp():
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    """PyTorch's CIFAR-10 tutorial Net, as nn.Sequential."""
    return nn.Sequential(
        nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2),    # (B, 6, 14, 14)
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),   # (B, 16, 5, 5)
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def fashion_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),   # (B, 32, 13, 13)
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),  # (B, 64, 5, 5)
        nn.Flatten(), nn.Linear(64 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))


EPOCH_N, EPOCH_B = 60000, 64


def bench_epoch():
    """938 steps over batches sliced from a random (60000, 1, 28, 28) data set."""
    net = fashion_cnn().to(DEV)
    data = torch.randn(EPOCH_N, 1, 28, 28, device=DEV)
    targets = torch.randint(0, 10, (EPOCH_N,), device=DEV)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def run():
        for i in range(0, EPOCH_N, EPOCH_B):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(data[i:i + EPOCH_B]), targets[i:i + EPOCH_B])
            loss.backward()
            opt.step()
        sync()

    emit("train_fashion_cnn_epoch", "torch", run, "s_per_epoch", scaled(1.0))


def main():
    print(json.dumps({"meta": "peers_train", "threads": ARGS.threads,
                      "torch": torch.__version__, "torch_threads": torch.get_num_threads()}),
          flush=True)
    if CUDA:
        print(json.dumps({"meta": "device", "device": str(DEV),
                          "name": torch.cuda.get_device_name(DEV), **torch_precision(torch)}),
              flush=True)
    torch.manual_seed(0)
    if want("train_linreg_1000"):
        bench_linreg()
    if want("train_mlp_step"):
        bench_step("train_mlp_step", mlp(), (64, 784))
    if want("train_cnn_step"):
        bench_step("train_cnn_step", cnn(), (64, 3, 32, 32))
    if want("train_fashion_cnn_step"):
        bench_step("train_fashion_cnn_step", fashion_cnn(), (64, 1, 28, 28))
    if want("train_resnet_step"):
        bench_step("train_resnet_step", resnet(), (64, 1, 28, 28))
    if want("train_vit_step"):
        bench_step("train_vit_step", vit(), (64, 1, 28, 28))
    if want("train_mlp_step_bf16"):
        bench_step("train_mlp_step_bf16", mlp(), (64, 784), bf16=True)
    if want("train_cnn_step_bf16"):
        bench_step("train_cnn_step_bf16", cnn(), (64, 3, 32, 32), bf16=True)
    if want("train_fashion_cnn_step_bf16"):
        bench_step("train_fashion_cnn_step_bf16", fashion_cnn(), (64, 1, 28, 28), bf16=True)
    if ARGS.only is not None and want("train_fashion_cnn_epoch"):  # seconds per call
        bench_epoch()


if __name__ == "__main__":
    main()
