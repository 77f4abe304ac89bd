"""Files from Python (ctensor/io.py): .npy and .npz against NumPy's own reader and writer (the
oracle), safetensors round trips with metadata, and corrupt, truncated or hostile files, which
must raise the C readers' clear errors (FormatError is a ValueError, FileError an OSError) and
never crash the interpreter."""

import io
import json
import struct
import zipfile

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64", "bool"]


def sample(rng, dtype, shape=(3, 4)):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-100 if dtype.startswith("int") else 0, 100, size=shape).astype(dtype)


# ---- .npy ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_npy_both_ways_with_numpy(tmp_path, rng, dtype):
    a = sample(rng, dtype)
    ct.save(tmp_path / "a.npy", ct.asarray(a))
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), a)
    assert np.load(tmp_path / "a.npy").dtype == a.dtype
    # byte for byte what numpy.save writes
    np.save(tmp_path / "b.npy", a)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    t = ct.load(tmp_path / "b.npy")
    assert str(t.dtype) == dtype and t.shape == a.shape
    np.testing.assert_array_equal(to_numpy(t), a)


def test_npy_layouts_and_names(tmp_path, rng):
    a = rng.standard_normal((5, 3))
    np.save(tmp_path / "f.npy", np.asfortranarray(a))
    np.testing.assert_array_equal(ct.asnumpy(ct.load(tmp_path / "f.npy")), a)
    np.save(tmp_path / "be.npy", a.astype(">f8"))
    np.testing.assert_array_equal(ct.asnumpy(ct.load(str(tmp_path / "be.npy"))), a)
    # a transposed view is saved in C order; ".npy" is appended as NumPy does
    ct.save(str(tmp_path / "t"), ct.asarray(a).T)
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), a.T)
    # 0-d, empty, bfloat16 (saved as float32, exactly), a nested list
    ct.save(tmp_path / "s.npy", ct.asarray(2.5))
    assert np.load(tmp_path / "s.npy").shape == () and np.load(tmp_path / "s.npy") == 2.5
    ct.save(tmp_path / "e.npy", ct.zeros((0, 3)))
    assert np.load(tmp_path / "e.npy").shape == (0, 3)
    ct.save(tmp_path / "bf.npy", ct.asarray([1.5, -2.0], dtype=ct.bfloat16))
    assert np.load(tmp_path / "bf.npy").dtype == np.float32
    ct.save(tmp_path / "l.npy", [[1, 2], [3, 4]])
    np.testing.assert_array_equal(np.load(tmp_path / "l.npy"), [[1, 2], [3, 4]])


def test_npy_file_objects(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    buf = io.BytesIO()
    ct.save(buf, ct.asarray(a))
    buf.seek(0)
    np.testing.assert_array_equal(np.load(buf), a)
    buf.seek(0)
    np.testing.assert_array_equal(ct.asnumpy(ct.load(buf)), a)


def test_load_to_device(tmp_path, device):
    np.save(tmp_path / "a.npy", np.arange(6.0))
    t = ct.load(tmp_path / "a.npy", device=device)
    assert t.device == device
    np.testing.assert_array_equal(to_numpy(t), np.arange(6.0))
    ct.save(tmp_path / "b.npy", t)  # any device
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), np.arange(6.0))


def npy_image(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def npy_with_header(header, data=b""):
    text = header.encode() + b" "
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


@pytest.mark.parametrize("case", ["truncated-data", "truncated-header", "bad-magic", "bad-dtype",
                                  "negative-shape", "huge-shape", "object-dtype", "empty"])
def test_npy_corrupt(tmp_path, case):
    good = npy_image(np.arange(12, dtype=np.float32).reshape(3, 4))
    bad = {
        "truncated-data": good[:-5],
        "truncated-header": good[:20],
        "bad-magic": b"\x93NUMPX" + good[6:],
        "bad-dtype": good.replace(b"'<f4'", b"'<c8'"),
        "negative-shape": npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, -4), }"),
        "huge-shape": npy_with_header("{'descr': '<f4', 'fortran_order': False, "
                                      "'shape': (4611686018427387904, 4), }"),
        "object-dtype": npy_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
                                        b"\x80\x02N."),
        "empty": b"",
    }[case]
    p = tmp_path / "bad.npy"
    p.write_bytes(bad)
    with pytest.raises(ct.FormatError) as e:
        ct.load(p)
    assert isinstance(e.value, ValueError) and "bad.npy" in str(e.value)
    with pytest.raises(ct.FormatError):
        ct.load(io.BytesIO(bad))


def test_npy_missing_file(tmp_path):
    with pytest.raises(OSError) as e:
        ct.load(tmp_path / "nowhere.npy")
    assert "nowhere.npy" in str(e.value)
    with pytest.raises(OSError):
        ct.save(tmp_path / "no" / "such" / "dir.npy", ct.ones(2))


# ---- .npz ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("compressed", [False, True])
def test_npz_both_ways_with_numpy(tmp_path, rng, compressed):
    a, b = rng.standard_normal((3, 2)), rng.integers(0, 9, size=7)
    save = ct.savez_compressed if compressed else ct.savez
    save(tmp_path / "x.npz", ct.asarray(a), weights=ct.asarray(b))
    with np.load(tmp_path / "x.npz") as z:
        assert sorted(z.files) == ["arr_0", "weights"]
        np.testing.assert_array_equal(z["arr_0"], a)
        np.testing.assert_array_equal(z["weights"], b)
    with zipfile.ZipFile(tmp_path / "x.npz") as zf:
        kinds = {i.compress_type for i in zf.infolist()}
    assert kinds == {zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED}
    (np.savez_compressed if compressed else np.savez)(tmp_path / "y.npz", a, weights=b)
    with ct.load(tmp_path / "y.npz") as z:
        assert isinstance(z, ct.io.NpzFile)
        assert sorted(z.files) == ["arr_0", "weights"] and len(z) == 2 and "weights" in z
        np.testing.assert_array_equal(to_numpy(z["arr_0"]), a)
        np.testing.assert_array_equal(to_numpy(z["weights.npy"]), b)
        assert dict(z.items()).keys() == {"arr_0", "weights"}
        with pytest.raises(KeyError):
            z["nope"]


def test_npz_file_object_and_names(rng):
    buf = io.BytesIO()
    ct.savez(buf, x=ct.arange(3))
    buf.seek(0)
    z = ct.load(buf)
    np.testing.assert_array_equal(to_numpy(z["x"]), [0, 1, 2])
    with pytest.raises(ValueError):
        ct.savez(io.BytesIO(), ct.ones(1), arr_0=ct.ones(1))


def test_npz_corrupt(tmp_path, rng):
    np.savez_compressed(tmp_path / "ok.npz", a=rng.standard_normal(1000))
    good = (tmp_path / "ok.npz").read_bytes()
    # a truncated archive: its central directory is gone
    (tmp_path / "cut.npz").write_bytes(good[: len(good) // 2])
    with pytest.raises(ct.FormatError, match="cut.npz"):
        ct.load(tmp_path / "cut.npz")
    # a flipped byte inside the deflated member: zlib or the CRC check catches it
    start = good.index(b"a.npy") + 5 + 40
    broken = bytearray(good)
    for i in range(start, start + 16):
        broken[i] ^= 0x5A
    (tmp_path / "flip.npz").write_bytes(bytes(broken))
    with pytest.raises(ct.FormatError, match="a.npy"):
        ct.load(tmp_path / "flip.npz")["a"]
    # a member that is not a .npy image: the C reader's message, with the member's name
    with zipfile.ZipFile(tmp_path / "junk.npz", "w") as zf:
        zf.writestr("j.npy", b"\x93NUMPY\x01\x00" + b"x" * 40)
    with pytest.raises(ct.FormatError, match="j.npy"):
        ct.load(tmp_path / "junk.npz")["j"]


# ---- safetensors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + ["bfloat16"])
def test_safetensors_round_trip(tmp_path, rng, dtype):
    a = sample(rng, "float32" if dtype == "bfloat16" else dtype)
    t = ct.asarray(a).astype(getattr(ct, dtype)) if dtype == "bfloat16" else ct.asarray(a)
    ct.save_file({"w": t, "scalar": ct.asarray(3)}, tmp_path / "m.safetensors")
    d = ct.load_file(tmp_path / "m.safetensors")
    assert list(d) == ["w", "scalar"]
    assert d["w"].dtype == t.dtype and d["w"].shape == t.shape
    np.testing.assert_array_equal(to_numpy(d["w"]), to_numpy(t))
    assert int(d["scalar"]) == 3


def test_safetensors_metadata_and_device(tmp_path, device):
    t = ct.arange(10, dtype=ct.float32, device=device).reshape((2, 5)).T  # a view on any device
    ct.save_file({"t": t}, tmp_path / "m.safetensors", metadata={"step": "10", "name": "tiny"})
    raw = (tmp_path / "m.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"step": "10", "name": "tiny"} and n % 8 == 0
    assert ct.io.load_metadata(tmp_path / "m.safetensors") == {"step": "10", "name": "tiny"}
    d = ct.load_file(tmp_path / "m.safetensors", device=device)
    assert d["t"].device == device
    np.testing.assert_array_equal(to_numpy(d["t"]), np.arange(10.0).reshape(2, 5).T)
    with pytest.raises(TypeError, match="metadata"):
        ct.save_file({"t": t}, tmp_path / "x.safetensors", metadata={"step": 10})
    with pytest.raises(TypeError):
        ct.save_file([t], tmp_path / "x.safetensors")


def st_image(header, data):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("case", ["truncated", "offsets-overlap", "bad-dtype", "header-too-long",
                                  "not-json", "size-mismatch", "bad-bool", "empty"])
def test_safetensors_corrupt(tmp_path, case):
    f4 = struct.pack("<4f", 1, 2, 3, 4)
    good = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
    bad = {
        "truncated": st_image(good, f4)[:-3],
        "offsets-overlap": st_image({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, f4),
        "bad-dtype": st_image({"a": {"dtype": "C64", "shape": [2, 2], "data_offsets": [0, 16]}}, f4),
        "header-too-long": struct.pack("<Q", 1 << 40) + b"{}",
        "not-json": struct.pack("<Q", 6) + b"{a:1}," + f4,
        "size-mismatch": st_image({"a": {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 16]}}, f4),
        "bad-bool": st_image({"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x07"),
        "empty": b"",
    }[case]
    p = tmp_path / "bad.safetensors"
    p.write_bytes(bad)
    with pytest.raises(ct.FormatError) as e:
        ct.load_file(p)
    assert isinstance(e.value, ValueError) and "bad.safetensors" in str(e.value)


def test_safetensors_missing_and_bad_names(tmp_path):
    with pytest.raises(OSError, match="nowhere"):
        ct.load_file(tmp_path / "nowhere.safetensors")
    with pytest.raises(ValueError):
        ct.save_file({"": ct.ones(1)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="not a Tensor"):
        ct._C._save_safetensors(str(tmp_path / "x.safetensors"), ["a"], [[1.0]])
    # as the safetensors package, save_file wants tensors
    with pytest.raises(TypeError):
        ct.save_file({"a": [1.0]}, tmp_path / "x.safetensors")


@pytest.mark.parametrize("kind", ["npy", "npz", "safetensors"])
def test_damaged_files_raise_only_ctensor_errors(tmp_path, kind):
    # Flipped bytes and truncations: each load either succeeds or raises ctensor's FormatError
    # (a ValueError); no other exception escapes, and the interpreter survives.
    import random
    rng = random.Random({"npy": 1, "npz": 2, "safetensors": 3}[kind])
    buf = io.BytesIO()
    if kind == "npy":
        ct.save(buf, ct.arange(40.0).reshape((5, 8)))
    elif kind == "npz":
        ct.savez_compressed(buf, a=ct.arange(50.0), b=ct.ones((3, 3), dtype=ct.int32))
    else:
        ct.save_file({"a": ct.arange(50.0), "b": ct.ones((3, 3), dtype=ct.bool)}, tmp_path / "ok.st")
        buf.write((tmp_path / "ok.st").read_bytes())
    raw = buf.getvalue()
    refused = 0
    for i in range(400):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        if i % 5 == 0:
            b = b[: rng.randrange(len(b))]
        p = tmp_path / f"bad.{kind}"
        p.write_bytes(bytes(b))
        try:
            if kind == "safetensors":
                ct.load_file(p)
            else:
                z = ct.load(p)
                if isinstance(z, ct.io.NpzFile):
                    with z:
                        for name in z.files:
                            z[name]
        except ct.FormatError:
            refused += 1
    assert refused > 50
