"""Tensors in files: NumPy's .npy and .npz, and safetensors.

NumPy's names and behaviour for the first two (``save``, ``load``, ``savez``,
``savez_compressed``; ``load`` of a .npz returns a dict-like ``NpzFile``), the
``safetensors`` package's for the third (``save_file``, ``load_file``)::

    ct.save("w.npy", w);                  w = ct.load("w.npy")
    ct.savez("ckpt.npz", w=w, b=b);       ct.load("ckpt.npz")["w"]
    ct.save_file({"w": w}, "m.safetensors", metadata={"step": "10"})
    ct.load_file("m.safetensors", device="cuda")["w"]

Every .npy image and every safetensors file is read and written by the C
library (ctensor/io.h), so that a malformed, truncated or hostile file fails
with its checks and messages: ``ctensor.FormatError`` (a ``ValueError``) for a
bad file, ``ctensor.FileError`` (an ``OSError``) for one that cannot be opened
or read. The .npz container is a zip file (Python's zipfile; deflate by zlib
for ``savez_compressed``); a broken zip is a ``FormatError`` too.
"""

import json
import os
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Mapping as _Mapping

from . import _C

__all__ = ["save", "load", "savez", "savez_compressed", "NpzFile", "save_file", "load_file", "load_metadata"]

_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"


def _tensor(arr, what):
    if isinstance(arr, _C.Tensor):
        return arr
    try:
        return _C.asarray(arr, device="cpu")
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: cannot make a tensor of {type(arr).__name__}: {e}") from None


def _to_device(t, device):
    return t if device is None else t.to_device(device)


def _is_path(file):
    return isinstance(file, (str, bytes, os.PathLike))


def save(file, arr, /):
    """Writes ``arr`` (a Tensor or anything ``asarray`` takes) to a .npy file, byte for byte what
    ``numpy.save`` writes (bfloat16 is written as float32, exactly).

    ``file``: a path (".npy" is appended when missing, as NumPy does) or a binary file object."""
    t = _tensor(arr, "save")
    if _is_path(file):
        path = os.fspath(file)
        suffix = b".npy" if isinstance(path, bytes) else ".npy"
        if not path.endswith(suffix):
            path += suffix
        _C._save_npy(path, t)
    else:
        file.write(_npy_bytes(t))


def _npy_bytes(t):
    # The C writer writes files: the image goes through a private temporary file.
    with tempfile.TemporaryDirectory(prefix="ctensor-") as tmp:
        path = os.path.join(tmp, "a.npy")
        _C._save_npy(path, t)
        with open(path, "rb") as f:
            return f.read()


def load(file, /, *, device=None):
    """Reads a .npy file as a Tensor, or a .npz file as an ``NpzFile`` (a read-only mapping from
    the array names to Tensors, read when asked for; close it or use it in a ``with`` block).

    ``file``: a path or a binary file object (read from its current position). ``device``: where
    the tensors go (the CPU when None). A malformed or truncated file is a ``FormatError`` (a
    ``ValueError``) naming what is wrong; a missing or unreadable one a ``FileError`` (an
    ``OSError``)."""
    if _is_path(file):
        try:
            with open(file, "rb") as f:
                magic = f.read(4)
        except OSError as e:
            raise _C.FileError(f"load: {os.fsdecode(os.fspath(file))}: cannot open: {e.strerror}") from None
        if magic in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
            return NpzFile(file, device=device)
        return _to_device(_C._load_npy(file), device)
    data = file.read()
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"load: the file object must be opened in binary mode, read() gave {type(data).__name__}")
    if data[:4] in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
        import io
        return NpzFile(io.BytesIO(data), device=device)
    return _to_device(_C._load_npy_buffer(data), device)


def _savez(file, args, kwds, compression, what):
    arrays = {}
    for i, a in enumerate(args):
        arrays[f"arr_{i}"] = a
    for name, a in kwds.items():
        if name in arrays:
            raise ValueError(f"{what}: cannot use un-named variables and keyword {name}")
        arrays[name] = a
    if _is_path(file):
        file = os.fspath(file)
        suffix = b".npz" if isinstance(file, bytes) else ".npz"
        if not file.endswith(suffix):
            file += suffix
    tensors = {name: _tensor(a, what) for name, a in arrays.items()}
    with zipfile.ZipFile(file, mode="w", compression=compression, allowZip64=True) as zf:
        for name, t in tensors.items():
            zf.writestr(name + ".npy", _npy_bytes(t))


def savez(file, /, *args, **kwds):
    """Writes several arrays into one uncompressed .npz file (a zip of .npy files), as
    ``numpy.savez``: positional arrays are named ``arr_0``, ``arr_1``...; keyword arrays by their
    keyword. ``file``: a path (".npz" appended when missing) or a binary file object."""
    _savez(file, args, kwds, zipfile.ZIP_STORED, "savez")


def savez_compressed(file, /, *args, **kwds):
    """``savez`` with each member deflated (zlib), as ``numpy.savez_compressed``."""
    _savez(file, args, kwds, zipfile.ZIP_DEFLATED, "savez_compressed")


# What zipfile raises on a damaged archive (a bad header, a name that is not UTF-8, a version,
# compression or encryption it cannot read, a CRC mismatch, a seek before the start, a broken
# deflate stream). The file was opened already: an OSError here is the archive's, not the path's.
_ZIP_ERRORS = (zipfile.BadZipFile, UnicodeDecodeError, NotImplementedError, OSError, EOFError, ValueError,
               struct.error, RuntimeError, zlib.error)


class NpzFile(_Mapping):
    """The arrays of a .npz file, as ``numpy.load`` gives them: ``files`` (the names),
    ``npz[name]`` (with or without ".npy"; read and checked on each access), ``keys()``,
    ``items()``, ``close()``, and the ``with`` statement. A broken archive or member is a
    ``FormatError`` naming the member."""

    def __init__(self, file, *, device=None):
        self.zip = None
        self._device = device
        self._name = os.fsdecode(os.fspath(file)) if _is_path(file) else "<file object>"
        try:
            self.zip = zipfile.ZipFile(file, mode="r")
        except _ZIP_ERRORS as e:
            raise _C.FormatError(f"load: {self._name}: not a valid .npz (zip) file: {e}") from None
        self._members = self.zip.namelist()
        self.files = [m[:-4] if m.endswith(".npy") else m for m in self._members]

    def __getitem__(self, key):
        if key in self._members:
            member = key
        elif key + ".npy" in self._members:
            member = key + ".npy"
        else:
            raise KeyError(f"{key} is not a file in the archive")
        if self.zip is None:
            raise ValueError(f"load: {self._name} is closed")
        try:
            data = self.zip.read(member)
        except _ZIP_ERRORS as e:
            raise _C.FormatError(f"load: {self._name}: member {member!r} is corrupt: {e}") from None
        try:
            t = _C._load_npy_buffer(data)
        except _C.FormatError as e:
            raise _C.FormatError(f"load: {self._name}: member {member!r}: {e}") from None
        return _to_device(t, self._device)

    def __iter__(self):
        return iter(self.files)

    def __len__(self):
        return len(self.files)

    def __contains__(self, key):
        return key in self.files or key in self._members

    def close(self):
        """Closes the archive (the tensors already read stay valid)."""
        if self.zip is not None:
            self.zip.close()
            self.zip = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"NpzFile({self._name!r}, files={self.files!r})"


def save_file(tensors, filename, metadata=None):
    """Writes a dict of named tensors to a safetensors file, as ``safetensors.torch.save_file``:
    any device, layout and dtype; C-order little-endian; written atomically (a temporary file
    renamed into place). ``metadata``: a dict of str to str, stored in the header's
    ``__metadata__``."""
    if not isinstance(tensors, _Mapping):
        raise TypeError(f"save_file: expected a dict of name -> tensor, got {type(tensors).__name__}")
    names = list(tensors)
    values = [tensors[n] for n in names]
    if metadata is not None:
        if not isinstance(metadata, _Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("save_file: metadata must be a dict of str to str")
    if "__metadata__" in names:
        raise ValueError("save_file: '__metadata__' is reserved for the metadata, not a tensor name")
    _C._save_safetensors(filename, names, values)
    if metadata:
        _add_metadata(os.fspath(filename), dict(metadata))


def _add_metadata(path, metadata):
    # The C writer writes no metadata: the header is rewritten with it, the data left as it is
    # (its offsets count from the end of the header), into a temporary renamed into place.
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data_start = 8 + n
        header = {"__metadata__": metadata, **header}
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        text += b" " * (-len(text) % 8)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(struct.pack("<Q", len(text)))
                out.write(text)
                f.seek(data_start)
                while True:
                    chunk = f.read(1 << 24)
                    if not chunk:
                        break
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def load_file(filename, device="cpu"):
    """Reads every tensor of a safetensors file into a dict (in the file's order), as
    ``safetensors.torch.load_file``; ``device``: where they go. The header and every offset are
    validated before anything is allocated: a malformed, truncated or hostile file is a
    ``FormatError`` (a ``ValueError``) naming the field at fault; a missing or unreadable one a
    ``FileError`` (an ``OSError``)."""
    return {name: _to_device(t, device) for name, t in _C._load_safetensors(filename)}


def load_metadata(filename):
    """The ``__metadata__`` of a safetensors file (a dict of str to str; empty when there is
    none). The whole file is validated first, as ``load_file`` does."""
    _C._load_safetensors(filename)
    with open(filename, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return dict(json.loads(f.read(n)).get("__metadata__", {}))
