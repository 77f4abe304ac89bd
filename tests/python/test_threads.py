"""The concurrency contract from Python (python/README.md, "Threads"): backward on several threads
into shared leaves (exact totals), .grad cleared while other threads accumulate, one module's
inference from several threads under no_grad, and DataLoader passes: every iter() is a pass of its
own (zip(dl, dl), one pass per thread), and one C loader read by several threads delivers each batch
once. Backward and large ops release the GIL, so the threads do run the library at the same time."""

import threading

import numpy as np
import pytest

import ctensor as ct


@pytest.fixture(autouse=True)
def on_the_cpu():
    """The cases are about host memory and threads: on the CPU also where a GPU is the default."""
    saved = ct.get_default_device()
    ct.set_default_device("cpu")
    yield
    ct.set_default_device(saved)


N_THREADS = 3


def run(n, fn):
    errors = []

    def body(i):
        try:
            fn(i)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_backward_from_threads_adds_every_gradient():
    x = ct.zeros(1 << 16, requires_grad=True)
    iters = 200

    def work(i):
        for _ in range(iters):
            ((x * 2.0).sum() + x.sum()).backward()

    run(N_THREADS, work)
    np.testing.assert_array_equal(ct.asnumpy(x.grad), np.full(1 << 16, 3.0 * iters * N_THREADS, np.float32))


def test_grad_cleared_while_others_accumulate():
    x = ct.zeros(8192, requires_grad=True)
    done = threading.Event()

    def work(i):
        if i == 0:
            while not done.is_set():
                x.grad = None
                g = x.grad
                assert g is None or g.shape == (8192,)
        else:
            for _ in range(100):
                ((x * 2.0).sum() + x.sum()).backward()

    def guarded(i):
        try:
            work(i)
        finally:
            if i == 1:
                done.set()

    run(N_THREADS, guarded)
    done.set()
    g = x.grad
    if g is not None:  # what survived is whole accumulations, each into every element at once
        v = ct.asnumpy(g)
        assert np.all(v == v[0]) and v[0] == np.floor(v[0]) and v[0] <= 3 * 100 * (N_THREADS - 1)


def test_one_module_inference_from_threads():
    ct.manual_seed(3)
    net = ct.nn.Sequential(ct.nn.Conv2d(3, 8, 3), ct.nn.BatchNorm2d(8), ct.nn.ReLU(), ct.nn.Flatten(),
                           ct.nn.Linear(8 * 14 * 14, 10))
    net.eval()
    x = ct.randn((4, 3, 16, 16))
    with ct.no_grad():
        want = ct.asnumpy(net(x))

    def work(i):
        with ct.no_grad():
            for _ in range(20):
                np.testing.assert_allclose(ct.asnumpy(net(x)), want, rtol=1e-5, atol=1e-5)
                assert len(list(net.parameters())) == 6

    run(4, work)


def loader(n=50, batch_size=4, **kw):
    ds = ct.data.TensorDataset(ct.arange(n, dtype=ct.float32), ct.zeros(n))
    return ct.data.DataLoader(ds, batch_size=batch_size, **kw)


def samples(batches):
    return sorted(int(v) for xb, _ in batches for v in ct.asnumpy(xb))


@pytest.mark.parametrize("workers", [0, 2])
def test_zip_of_one_loader_gives_each_iterator_a_pass(workers):
    dl = loader(num_workers=workers, shuffle=True, seed=1)
    pairs = list(zip(dl, dl))
    assert len(pairs) == len(dl) == 13
    assert samples(p[0] for p in pairs) == list(range(50))
    assert samples(p[1] for p in pairs) == list(range(50))
    # the two passes are epochs 0 and 1 (different shuffles); the next pass is epoch 2
    first = [int(v) for v in ct.asnumpy(pairs[0][0][0])]
    second = [int(v) for v in ct.asnumpy(pairs[0][1][0])]
    assert first != second
    assert samples(dl) == list(range(50))
    assert dl.epoch == 3


@pytest.mark.parametrize("workers", [0, 2])
def test_one_pass_per_thread(workers):
    dl = loader(num_workers=workers)
    got = {}

    def work(i):
        got[i] = samples(dl)

    run(4, work)
    assert all(got[i] == list(range(50)) for i in range(4))


def test_one_c_loader_read_by_threads_delivers_each_batch_once():
    dl = loader(n=203, num_workers=2)
    c = dl._c
    c.start_epoch(0)
    got = [[] for _ in range(4)]

    def work(i):
        while (b := c.next()) is not None:
            got[i].append(b)

    run(4, work)
    assert samples(b for g in got for b in g) == list(range(203))


def test_a_shared_iterator_is_refused_cleanly():
    dl = loader(n=2000, batch_size=1)
    it = iter(dl)
    errors = []

    def work(i):
        try:
            for _ in it:
                pass
        except ValueError as e:  # "generator already executing": the iterator is one thread's
            errors.append(e)

    run(4, work)
    assert all("already executing" in str(e) for e in errors)
