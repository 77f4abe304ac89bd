"""Data loading (torch.utils.data and torchvision's datasets) in the C library: datasets of tensors,
MNIST / Fashion-MNIST and CIFAR-10 files, and a loader whose worker threads prefetch batches (the
order depends only on (seed, epoch)) and can deliver them on a GPU.

Datasets written in Python (a __getitem__ of your own) are not supported: the loader's workers are
C threads. Build a TensorDataset from your arrays instead."""

import threading

from . import _C


class TensorDataset:
    """Samples are rows of `inputs` and `targets` (kept on the CPU)."""

    def __init__(self, inputs, targets):
        self._c = _C.tensor_dataset(_C.asarray(inputs, device="cpu"), _C.asarray(targets, device="cpu"))

    def __len__(self):
        return len(self._c)

    def __getitem__(self, i):
        return self._c[i]


class MNIST:
    """IDX files (gzip or raw) in root: (1, 28, 28) float32 images in [0, 1] (then the transforms),
    int64 labels. Transforms: mean/std (normalize), random_crop with padding, random_hflip, seed."""

    default_root = "/usr/share/datasets/mnist"

    def __init__(self, root=None, train=True, **transforms):
        self._c = self._open(root or self.default_root, train, **transforms)

    @staticmethod
    def _open(root, train, **transforms):
        return _C.mnist(root, train, **transforms)

    def __len__(self):
        return len(self._c)

    def __getitem__(self, i):
        return self._c[i]


class FashionMNIST(MNIST):
    """Fashion-MNIST, by default from Debian's dataset-fashion-mnist package."""

    default_root = "/usr/share/datasets/fashion-mnist"


class CIFAR10(MNIST):
    """CIFAR-10 binary batches in root: (3, 32, 32) float32 images, int64 labels."""

    default_root = "data/cifar-10-batches-bin"

    @staticmethod
    def _open(root, train, **transforms):
        return _C.cifar10(root, train, **transforms)


class DataLoader:
    """Batches of a dataset: (inputs, targets) stacked along a new first axis. Each iteration is
    one epoch; with shuffle the order is a function of (seed, epoch).

    Every iter() is a pass of its own, as in PyTorch: two iterators alive at once (zip(dl, dl), or
    one per thread) each see a whole epoch (the next epoch numbers, in the order they start), on a
    C loader of their own; a loader no pass uses any more serves the next one."""

    def __init__(self, dataset, batch_size=1, shuffle=False, *, seed=0, drop_last=False, num_workers=0,
                 prefetch=0, pin_memory=False, device=None):
        self.dataset = dataset
        self._args = (dataset._c, batch_size, shuffle, seed, drop_last, num_workers, prefetch, pin_memory,
                      device)
        self._c = _C.dataloader(*self._args)
        self._idle = [self._c]  # C loaders no pass is using
        self._lock = threading.Lock()
        self.epoch = 0

    def __len__(self):
        return len(self._c)

    def _begin(self):
        with self._lock:
            epoch = self.epoch
            self.epoch += 1
            loader = self._idle.pop() if self._idle else None
        return epoch, loader if loader is not None else _C.dataloader(*self._args)

    def __iter__(self):
        epoch, loader = self._begin()
        try:
            loader.start_epoch(epoch)
            while True:
                batch = loader.next()
                if batch is None:
                    return
                yield batch
        finally:
            with self._lock:
                self._idle.append(loader)
