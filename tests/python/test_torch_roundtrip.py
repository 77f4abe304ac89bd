"""The PyTorch round trip (ctensor/_torch_format.py): a real nn.Module state_dict saved by
torch.save, converted to safetensors without torch, read by ctensor and compared; and back, a
file torch.load reads. PyTorch is the oracle (skipped, saying so, when it is not installed). The
reader's refusals (a pickle naming any other function, a tensor reaching outside its storage,
a truncated archive) need no torch: the files are made by hand."""

import io
import os
import pickle
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import ctensor as ct
from ctensor import _torch_format
from conftest import to_numpy

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (python3-torch): "
                                                      "the round trip's oracle is missing")


def model():
    """A small real module: convolution, batch norm with running statistics (after one training
    step's forward pass), linear, layer norm, embedding."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 10), torch.nn.LayerNorm(10))
    net.add_module("embed", torch.nn.Embedding(7, 5))
    net[:6](torch.randn(2, 3, 8, 8))
    return net


def reference(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


@needs_torch
def test_torch_to_safetensors(tmp_path):
    sd = model().state_dict()
    sd["half"] = torch.randn(3, 2).half()
    sd["bf16"] = torch.randn(4).bfloat16()
    sd["view_t"] = torch.arange(12.0).reshape(3, 4).t()       # strided view
    sd["view_slice"] = torch.arange(20, dtype=torch.int32)[3:11:2]  # offset + step
    sd["shared"] = sd["view_t"][1]                            # storage shared with view_t
    sd["flags"] = torch.tensor([True, False, True])
    sd["empty"] = torch.zeros(0, 3)
    torch.save(sd, tmp_path / "m.pt")
    ct.torch_to_safetensors(tmp_path / "m.pt", tmp_path / "m.safetensors", metadata={"from": "torch"})
    got = ct.load_file(tmp_path / "m.safetensors")
    assert list(got) == list(sd)
    for name, ref in sd.items():
        t = got[name]
        assert str(t.dtype) == str(ref.dtype).replace("torch.", ""), name
        assert t.shape == tuple(ref.shape), name
        np.testing.assert_array_equal(to_numpy(t), reference(ref), err_msg=name)
    assert ct.io.load_metadata(tmp_path / "m.safetensors") == {"from": "torch"}


@needs_torch
def test_safetensors_to_torch_loads_into_the_module(tmp_path):
    net = model()
    # values from ctensor, not from torch: the file is ctensor's
    rng = np.random.default_rng(5)
    tensors = {k: ct.asarray(rng.standard_normal(tuple(v.shape)).astype(np.float32))
               if v.is_floating_point() else ct.asarray(v.numpy())
               for k, v in net.state_dict().items()}
    tensors["extra_bf16"] = ct.asarray([1.5, -2.25, 3.0]).astype(ct.bfloat16)
    tensors["extra_bool"] = ct.asarray([True, False])
    tensors["scalar"] = ct.asarray(7)
    ct.save_file(tensors, tmp_path / "m.safetensors")
    ct.safetensors_to_torch(tmp_path / "m.safetensors", tmp_path / "m.pt")
    sd = torch.load(tmp_path / "m.pt")
    assert list(sd) == list(tensors)
    for name, t in tensors.items():
        assert str(sd[name].dtype) == "torch." + str(t.dtype), name
        np.testing.assert_array_equal(reference(sd[name]), to_numpy(t), err_msg=name)
    extras = {"extra_bf16", "extra_bool", "scalar"}
    net.load_state_dict({k: v for k, v in sd.items() if k not in extras})
    np.testing.assert_array_equal(net[4].weight.detach().numpy(), to_numpy(tensors["4.weight"]))


@needs_torch
def test_round_trip_is_exact(tmp_path):
    sd = model().state_dict()
    torch.save(sd, tmp_path / "a.pt")
    ct.torch_to_safetensors(tmp_path / "a.pt", tmp_path / "a.safetensors")
    ct.safetensors_to_torch(tmp_path / "a.safetensors", tmp_path / "b.pt")
    back = torch.load(tmp_path / "b.pt")
    assert list(back) == list(sd)
    for k in sd:
        assert back[k].dtype == sd[k].dtype and torch.equal(back[k], sd[k]), k
    # the storages start at 64-byte aligned offsets, as torch.save's do
    raw = (tmp_path / "b.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "b.pt") as zf:
        for info in zf.infolist():
            (local_extra,) = struct.unpack_from("<H", raw, info.header_offset + 28)
            start = info.header_offset + 30 + len(info.filename.encode()) + local_extra
            assert start % 64 == 0, info.filename


def test_reading_never_imports_torch(tmp_path):
    # a file written by ctensor, read back in a fresh interpreter: torch stays out of sys.modules
    ct.save_file({"w": ct.arange(6.0).reshape((2, 3))}, tmp_path / "w.safetensors")
    ct.safetensors_to_torch(tmp_path / "w.safetensors", tmp_path / "w.pt")
    code = ("import sys, ctensor as ct; ct.torch_to_safetensors(sys.argv[1], sys.argv[2]); "
            "print('torch' in sys.modules, ct.load_file(sys.argv[2])['w'].tolist())")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "w.pt"), str(tmp_path / "x.st")],
                         capture_output=True, text=True, env=os.environ, check=True).stdout
    assert out.strip() == "False [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"


def pt_file(path, pickled, records=None, prefix="archive/"):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(prefix + "data.pkl", pickled)
        for key, data in (records or {}).items():
            zf.writestr(prefix + "data/" + key, data)
        zf.writestr(prefix + "version", b"3\n")


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_refuses_other_globals(tmp_path):
    pt_file(tmp_path / "evil.pt", pickle.dumps({"w": Evil()}, protocol=2))
    with pytest.raises(ct.FormatError, match="refused (posix|os).system"):
        ct.torch_to_safetensors(tmp_path / "evil.pt", tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()
    pt_file(tmp_path / "list.pt", pickle.dumps([1, 2], protocol=2))
    with pytest.raises(ct.FormatError, match="not a state_dict"):
        ct.torch_to_safetensors(tmp_path / "list.pt", tmp_path / "x.safetensors")
    pt_file(tmp_path / "int.pt", pickle.dumps({"epoch": 3}, protocol=2))
    with pytest.raises(ct.FormatError, match="'epoch' is a int, not a tensor"):
        ct.torch_to_safetensors(tmp_path / "int.pt", tmp_path / "x.safetensors")


def one_tensor_pickle(shape, strides, offset, numel, storage="FloatStorage"):
    p = _torch_format
    storage = p._p_tuple([p._p_str("storage"), p._p_global("torch", storage), p._p_str("0"),
                          p._p_str("cpu"), p._p_int(numel)]) + b"Q"
    args = p._p_tuple([storage, p._p_int(offset), p._p_tuple([p._p_int(n) for n in shape]),
                       p._p_tuple([p._p_int(s) for s in strides]), b"\x89",
                       p._p_global("collections", "OrderedDict") + b")R"])
    return (b"\x80\x02" + p._p_global("collections", "OrderedDict") + b")R(" + p._p_str("w")
            + p._p_global("torch._utils", "_rebuild_tensor_v2") + args + b"Ru.")


def test_bounds_and_sizes_are_checked(tmp_path):
    data = struct.pack("<6f", *range(6))
    pt_file(tmp_path / "ok.pt", one_tensor_pickle((3, 2), (1, 3), 0, 6), {"0": data})
    ct.torch_to_safetensors(tmp_path / "ok.pt", tmp_path / "ok.safetensors")
    np.testing.assert_array_equal(to_numpy(ct.load_file(tmp_path / "ok.safetensors")["w"]),
                                  np.arange(6.0).reshape(2, 3).T)
    cases = {
        "outside": (one_tensor_pickle((3, 2), (2, 1), 1, 6), {"0": data}, "outside its storage"),
        "huge stride": (one_tensor_pickle((2, 2), (1 << 62, 1), 0, 6), {"0": data}, "outside its storage"),
        "short storage": (one_tensor_pickle((3, 2), (2, 1), 0, 6), {"0": data[:-4]}, "has 20 bytes"),
        "missing storage": (one_tensor_pickle((3, 2), (2, 1), 0, 6), {}, "missing"),
        "unknown storage": (one_tensor_pickle((3, 2), (2, 1), 0, 6, "ComplexFloatStorage"), {"0": data},
                            "refused torch.ComplexFloatStorage"),
        "truncated pickle": (one_tensor_pickle((3, 2), (2, 1), 0, 6)[:-9], {"0": data}, "data.pkl"),
    }
    for name, (pickled, records, message) in cases.items():
        pt_file(tmp_path / "bad.pt", pickled, records)
        with pytest.raises(ct.FormatError, match=message):
            ct.torch_to_safetensors(tmp_path / "bad.pt", tmp_path / "bad.safetensors")


def test_not_a_torch_zip(tmp_path):
    (tmp_path / "legacy.pt").write_bytes(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.")
    with pytest.raises(ct.FormatError, match="legacy format"):
        ct.torch_to_safetensors(tmp_path / "legacy.pt", tmp_path / "x.safetensors")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", b"hello")
    (tmp_path / "other.zip").write_bytes(buf.getvalue())
    with pytest.raises(ct.FormatError, match="data.pkl"):
        ct.torch_to_safetensors(tmp_path / "other.zip", tmp_path / "x.safetensors")
    (tmp_path / "cut.pt").write_bytes(buf.getvalue()[:30])
    with pytest.raises(ct.FormatError):
        ct.torch_to_safetensors(tmp_path / "cut.pt", tmp_path / "x.safetensors")
    with pytest.raises(OSError, match="nowhere"):
        ct.torch_to_safetensors(tmp_path / "nowhere.pt", tmp_path / "x.safetensors")


def test_damaged_files_raise_only_ctensor_errors(tmp_path):
    # Bytes flipped in the pickle (inside a valid archive) and in the whole file, and truncations:
    # each conversion either succeeds or raises ctensor's FormatError; nothing else escapes.
    import random
    ct.save_file({"w": ct.arange(6.0).reshape((2, 3)), "b": ct.asarray([1, 2])}, tmp_path / "ok.st")
    ct.safetensors_to_torch(tmp_path / "ok.st", tmp_path / "ok.pt")
    raw = (tmp_path / "ok.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "ok.pt") as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    rng = random.Random(7)
    refused = 0
    for i in range(600):
        if i % 2:
            pkl = bytearray(members["archive/data.pkl"])
            for _ in range(rng.randint(1, 4)):
                pkl[rng.randrange(len(pkl))] = rng.randrange(256)
            pt_file(tmp_path / "bad.pt", bytes(pkl), {k[len("archive/data/"):]: v for k, v in members.items()
                                                     if k.startswith("archive/data/")})
        else:
            b = bytearray(raw)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            (tmp_path / "bad.pt").write_bytes(bytes(b[: rng.randrange(len(b))] if i % 10 == 0 else b))
        try:
            ct.torch_to_safetensors(tmp_path / "bad.pt", tmp_path / "bad.st")
        except ct.FormatError:
            refused += 1
    assert refused > 300  # most damage is seen (a flipped padding byte or CRC-less field may not be)
    # a dict that holds itself (the pickle memo allows it)
    d = {}
    d["x"] = d
    pt_file(tmp_path / "self.pt", pickle.dumps(d, protocol=2))
    with pytest.raises(ct.FormatError, match="nested too deep"):
        ct.torch_to_safetensors(tmp_path / "self.pt", tmp_path / "x.st")
    # protocol 5's out-of-band buffers are no part of a state_dict
    pt_file(tmp_path / "p5.pt", pickle.dumps({"w": bytearray(b"abc")}, protocol=5))
    with pytest.raises(ct.FormatError, match="opcode"):
        ct.torch_to_safetensors(tmp_path / "p5.pt", tmp_path / "x.st")
