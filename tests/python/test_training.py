"""The reference documents' training loops from Python (their C versions are
examples/linear_regression_autograd.c and examples/mlp_cross_entropy.c), each compared step by
step with PyTorch from identical weights and data; a CNN with Adam; the data loader."""

import os

import numpy as np
import pytest
import torch

import ctensor as ct
from ctensor import nn, optim
from conftest import assert_close


def to_torch(x):
    return torch.from_numpy(np.array(ct.asnumpy(x.detach().to_device("cpu"))))


def test_linear_regression_raw_tensors(device, rng):
    # X = torch.rand(100, 10); y = torch.rand(100, 1); W = torch.rand(10, 1, requires_grad=True)
    X0, y0, W0 = (rng.uniform(size=s).astype(np.float32) for s in ((100, 10), (100, 1), (10, 1)))
    X, y = ct.asarray(X0, device=device), ct.asarray(y0, device=device)
    W = ct.asarray(W0.copy(), device=device)
    W.requires_grad = True
    optimizer = optim.SGD([W], lr=0.01)
    tX, ty = torch.from_numpy(X0), torch.from_numpy(y0)
    tW = torch.from_numpy(W0.copy()).requires_grad_()
    topt = torch.optim.SGD([tW], lr=0.01)
    losses = []
    for epoch in range(300):
        optimizer.zero_grad()
        predictions = X @ W
        error = predictions - y
        loss = ct.mean(error ** 2)
        loss.backward()
        optimizer.step()
        topt.zero_grad()
        tloss = torch.mean((tX.mm(tW) - ty) ** 2)
        tloss.backward()
        topt.step()
        losses.append(loss.item())
        assert abs(loss.item() - tloss.item()) <= 1e-5 * abs(tloss.item()) + 1e-7, epoch
    assert losses[-1] < losses[0] / 10
    assert_close(W, tW.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_linear_regression_module(device, rng):
    # model = nn.Linear(10, 1); criterion = nn.MSELoss(); optimizer = SGD(model.parameters(), lr=0.01)
    X0, y0 = rng.uniform(size=(100, 10)).astype(np.float32), rng.uniform(size=(100, 1)).astype(np.float32)
    model = nn.Linear(10, 1, device=device)
    tmodel = torch.nn.Linear(10, 1)
    tmodel.load_state_dict({k: to_torch(v) for k, v in model.state_dict().items()})
    criterion, tcriterion = nn.MSELoss(), torch.nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.01)
    X, y = ct.asarray(X0, device=device), ct.asarray(y0, device=device)
    for epoch in range(200):
        optimizer.zero_grad()
        loss = criterion(model(X), y)
        loss.backward()
        optimizer.step()
        topt.zero_grad()
        tloss = tcriterion(tmodel(torch.from_numpy(X0)), torch.from_numpy(y0))
        tloss.backward()
        topt.step()
        assert abs(loss.item() - tloss.item()) <= 1e-5 * tloss.item() + 1e-7
    assert_close(model.weight, tmodel.weight.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert_close(model.bias, tmodel.bias.detach().numpy(), rtol=1e-4, atol=1e-6)


class SimpleNN(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.fc1 = nn.Linear(784, 128, device=device)
        self.fc2 = nn.Linear(128, 10, device=device)

    def forward(self, x):
        x = ct.relu(self.fc1(x))
        x = self.fc2(x)
        return x


class TorchSimpleNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_mlp_cross_entropy(device, rng):
    ct.manual_seed(0)
    model = SimpleNN().to(device)
    assert list(model.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(p.device == device for p in model.parameters())
    tmodel = TorchSimpleNN()
    tmodel.load_state_dict({k: to_torch(v) for k, v in model.state_dict().items()})
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.01)
    x0 = rng.normal(size=(64, 784)).astype(np.float32)
    t0 = rng.integers(0, 10, 64)
    input_tensor = ct.asarray(x0).to_device(device)
    target_tensor = ct.asarray(t0).to_device(device)
    first = None
    for step in range(20):
        optimizer.zero_grad()
        output = model(input_tensor)
        loss = criterion(output, target_tensor)
        loss.backward()
        optimizer.step()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x0)), torch.from_numpy(t0))
        tloss.backward()
        topt.step()
        assert abs(loss.item() - tloss.item()) < 1e-5, step
        first = first if first is not None else loss.item()
    assert loss.item() < first
    for (name, p), (tname, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
        assert name == tname
        assert_close(p, tp.detach().numpy(), rtol=1e-4, atol=1e-6)
    with ct.no_grad():
        correct = ct.sum(ct.argmax(model(input_tensor), axis=1) == target_tensor).item()
    assert correct == int((tmodel(torch.from_numpy(x0)).argmax(1) == torch.from_numpy(t0)).sum())


def test_cnn_with_adam_matches_torch(device, rng):
    ct.manual_seed(1)
    # no bias before the batch norm: its gradient is 0 up to rounding, which Adam would amplify
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 10)).to(device)
    tmodel = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
                                 torch.nn.ReLU(),
                                 torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(64, 10))
    state = model.state_dict()
    assert list(state) == list(tmodel.state_dict())
    tmodel.load_state_dict({k: to_torch(v) for k, v in state.items()})
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-2)
    x0 = rng.normal(size=(16, 1, 8, 8)).astype(np.float32)
    t0 = rng.integers(0, 10, 16)
    x, t = ct.asarray(x0, device=device), ct.asarray(t0, device=device)
    for step in range(10):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), t)
        loss.backward()
        optimizer.step()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x0)), torch.from_numpy(t0))
        tloss.backward()
        topt.step()
        assert abs(loss.item() - tloss.item()) < 1e-4, step
    # running statistics too
    for k, v in model.state_dict().items():
        assert_close(v, tmodel.state_dict()[k].numpy(), rtol=1e-3, atol=1e-5)
    model.eval()
    tmodel.eval()
    with ct.no_grad():
        assert_close(model(x), tmodel(torch.from_numpy(x0)).detach().numpy(), rtol=1e-3, atol=1e-4)


def test_schedules_and_param_groups():
    w = nn.Parameter(ct.zeros(2, device="cpu"))
    opt = optim.SGD([w], lr=1.0, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(opt.lr)
        sched.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt.param_groups[0]["lr"] = 0.1
    assert opt.lr == 0.1
    with pytest.raises(ValueError):
        optim.SGD([w], lr=-1)


def test_data_loader(rng):
    X = rng.normal(size=(50, 3)).astype(np.float32)
    y = np.arange(50)
    ds = ct.data.TensorDataset(X, y)
    assert len(ds) == 50
    xi, yi = ds[7]
    assert_close(xi, X[7]) and yi.item() == 7
    loader = ct.data.DataLoader(ds, batch_size=8, shuffle=True, seed=3, num_workers=2)
    assert len(loader) == 7
    seen = []
    for inputs, targets in loader:
        assert inputs.shape[1:] == (3,) and inputs.shape[0] == targets.shape[0]
        assert_close(inputs, X[targets.get()])
        seen += targets.tolist()
    assert sorted(seen) == list(range(50)) and seen != list(range(50))
    second = [t for _, ts in loader for t in ts.tolist()]
    assert sorted(second) == list(range(50)) and second != seen  # another epoch, another order
    again = ct.data.DataLoader(ds, batch_size=8, shuffle=True, seed=3)
    assert [t for _, ts in again for t in ts.tolist()] == seen  # the order depends on (seed, epoch) only
    dropped = ct.data.DataLoader(ds, batch_size=8, drop_last=True)
    assert len(dropped) == 6 and sum(b[0].shape[0] for b in dropped) == 48


def write_idx(folder, prefix, images, labels):
    """MNIST's IDX files (gzip), as ctensor.data.MNIST reads them."""
    import gzip
    import struct
    n, rows, cols = images.shape
    with gzip.open(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">iiii", 0x803, n, rows, cols) + images.astype(np.uint8).tobytes())
    with gzip.open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">ii", 0x801, n) + labels.astype(np.uint8).tobytes())


def test_mnist_files_loaded_on_worker_threads_and_trained(device, rng, tmp_path):
    # two classes a small model can tell apart: bright top half or bright bottom half
    labels = rng.integers(0, 2, 512)
    images = rng.integers(0, 60, (512, 28, 28))
    for i, c in enumerate(labels):
        images[i, 14 * c:14 * c + 14] += 180
    write_idx(tmp_path, "train", images, labels)
    write_idx(tmp_path, "t10k", images[:64], labels[:64])
    ds = ct.data.MNIST(str(tmp_path), train=True, mean=[0.5], std=[0.25])
    assert len(ds) == 512
    img, label = ds[3]
    assert img.shape == (1, 28, 28) and label.dtype == ct.int64 and label.item() == labels[3]
    assert_close(img[0], (images[3] / 255.0 - 0.5) / 0.25, rtol=1e-5, atol=1e-5)
    loader = ct.data.DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, device=device)
    ct.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for epoch in range(3):
        for x, t in loader:
            assert x.device == device and x.shape[1:] == (1, 28, 28)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), t)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert np.mean(losses[-4:]) < 0.5 * losses[0]
    test = ct.data.MNIST(str(tmp_path), train=False, mean=[0.5], std=[0.25])
    x, t = next(iter(ct.data.DataLoader(test, batch_size=64, device=device)))
    model.eval()
    with ct.no_grad():
        accuracy = ct.mean(ct.astype(ct.argmax(model(x), axis=1) == t, ct.float32)).item()
    assert accuracy > 0.9
    with pytest.raises(OSError):
        ct.data.MNIST(str(tmp_path / "nowhere"))
