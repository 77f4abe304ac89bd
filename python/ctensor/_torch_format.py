"""PyTorch's checkpoint files without PyTorch: a ``torch.save`` state_dict to safetensors and back.

A file of ``torch.save`` (PyTorch 1.6 and later) is a zip archive: ``<archive>/data.pkl``, a
pickle of the object in which each tensor is a call of ``torch._utils._rebuild_tensor_v2`` on a
storage named by a persistent id ``("storage", torch.FloatStorage, key, location, numel)``;
``<archive>/data/<key>``, the raw little-endian bytes of each storage; ``<archive>/version``.

Reading unpickles ``data.pkl`` with an unpickler that resolves only the names a state_dict
needs (``collections.OrderedDict``, the tensor and parameter rebuild functions, the storage
classes) to stand-ins defined here, and refuses every other name: no code of the file's
choosing can run, and torch is never imported. Each tensor (shape, strides and offset into its
storage) is bounds-checked and copied out of its storage in C (``_C._from_storage``).

Writing produces what ``torch.save(state_dict)`` does: the same pickle, written opcode by
opcode (pickle's own Pickler would need the torch functions to be importable), and the
storages stored uncompressed at 64-byte aligned offsets, as PyTorch's writer aligns them.
"""

import collections
import io
import os
import pickle
import struct
import zipfile
import zlib

from . import _C
from .io import load_file, save_file

__all__ = ["torch_to_safetensors", "safetensors_to_torch"]

# PyTorch's storage classes and their dtypes.
_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
}
_DTYPE_STORAGES = {v: k for k, v in _STORAGE_DTYPES.items()}


def _format_error(path, what):
    return _C.FormatError(f"torch_to_safetensors: {path}: {what}")


# ---- Reading ---------------------------------------------------------------------------------------

class _StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


class _Storage:
    def __init__(self, key, dtype, numel):
        self.key, self.dtype, self.numel = key, dtype, numel


class _TensorRef:
    """A tensor of the file: a strided view of a storage (copied out once every storage is known)."""

    def __init__(self, storage, offset, size, stride):
        if not isinstance(storage, _Storage):
            raise pickle.UnpicklingError("a tensor is rebuilt from something else than a storage")
        for name, v in (("size", size), ("stride", stride)):
            if not isinstance(v, tuple) or not all(isinstance(i, int) and i >= 0 for i in v):
                raise pickle.UnpicklingError(f"a tensor's {name} is not a tuple of non-negative ints: {v!r}")
        if len(size) != len(stride) or not isinstance(offset, int) or offset < 0:
            raise pickle.UnpicklingError(f"a tensor has size {size!r}, stride {stride!r}, offset {offset!r}")
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _TensorRef(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       *metadata):
    return _TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, *rest):
    if not isinstance(data, _TensorRef):
        raise pickle.UnpicklingError("a parameter is rebuilt from something else than a tensor")
    return data


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the names of _ALLOWED and the storage classes; anything else is refused."""

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(
            f"refused {module}.{name}: only tensors in (nested) dicts are read from a PyTorch file")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r:.80}")
        _, stype, key, _location, numel = pid
        if not isinstance(stype, _StorageType) or not isinstance(key, str) or not isinstance(numel, int) \
                or numel < 0:
            raise pickle.UnpicklingError(f"malformed storage id {pid!r:.80}")
        return _Storage(key, stype.dtype, numel)


# The pickle opcodes a state_dict needs (protocols 2 to 4): anything else (protocol 5's
# out-of-band buffers, INST/OBJ/NEWOBJ, EXT codes...) is refused before unpickling, and the scan
# (pickletools.genops, pure Python over the bytes) also finds a length field that runs past the
# end before the unpickler would allocate for it.
_OPCODES = frozenset("""PROTO FRAME GLOBAL STACK_GLOBAL BINPUT LONG_BINPUT MEMOIZE BINGET LONG_BINGET
    MARK STOP EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_DICT DICT EMPTY_LIST LIST APPEND APPENDS
    SETITEM SETITEMS BINUNICODE SHORT_BINUNICODE BINUNICODE8 BININT BININT1 BININT2 LONG1 NEWTRUE
    NEWFALSE NONE BINFLOAT REDUCE BUILD BINPERSID""".split())


def _check_opcodes(data):
    import pickletools
    try:
        for op, _arg, pos in pickletools.genops(data):
            if op.name not in _OPCODES:
                raise pickle.UnpicklingError(f"opcode {op.name} at byte {pos} is not used by a state_dict")
    except ValueError as e:  # genops: truncated or malformed
        raise pickle.UnpicklingError(str(e)) from None


def _archive_prefix(zf, path):
    names = zf.namelist()
    pkl = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
    if len(pkl) != 1:
        raise _format_error(path, "no <archive>/data.pkl: not a file of torch.save")
    return pkl[0][: -len("data.pkl")]


def _flatten(obj, prefix, out, path):
    for key, value in obj.items():
        if not isinstance(key, str):
            raise _format_error(path, f"a key is not a str: {key!r:.80}")
        name = prefix + key
        if isinstance(value, dict):
            _flatten(value, name + ".", out, path)
        elif isinstance(value, _TensorRef):
            out[name] = value
        else:
            raise _format_error(path, f"{name!r} is a {type(value).__name__}, not a tensor "
                                      "(only tensors in (nested) dicts are converted)")


def read_torch(path):
    """The tensors of a ``torch.save`` file holding a state_dict (or nested dicts of tensors,
    whose names are joined with "."), as a dict of CPU Tensors, without torch."""
    name = os.fsdecode(os.fspath(path))
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise _C.FileError(f"torch_to_safetensors: {name}: cannot open: {e.strerror or e}") from None
    if magic != b"PK\x03\x04":
        raise _format_error(name, "not a zip archive; torch.save's legacy format (before PyTorch 1.6, "
                                  "or _use_new_zipfile_serialization=False) is not read")
    try:
        with zipfile.ZipFile(path) as zf:
            return _read_archive(zf, name)
    except _C.Error:
        raise
    except _ZIP_ERRORS as e:  # a damaged archive: zipfile's many ways of saying so
        raise _format_error(name, f"damaged zip archive: {type(e).__name__}: {e}") from None


# What zipfile raises on a damaged archive (a bad header, a name that is not UTF-8, a version or
# compression it does not know, a CRC mismatch, a seek before the start, a broken deflate stream).
_ZIP_ERRORS = (zipfile.BadZipFile, UnicodeDecodeError, NotImplementedError, OSError, EOFError, ValueError,
               struct.error, RuntimeError, zlib.error)


def _read_archive(zf, name):
    prefix = _archive_prefix(zf, name)
    try:
        byteorder = zf.read(prefix + "byteorder").decode("ascii", "replace").strip()
    except KeyError:
        byteorder = "little"
    if byteorder != "little":
        raise _format_error(name, f"byte order {byteorder!r}: only little-endian files are read")
    try:
        data = zf.read(prefix + "data.pkl")
        _check_opcodes(data)
        obj = _RestrictedUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, struct.error, zipfile.BadZipFile, OSError, MemoryError, RecursionError) as e:
        raise _format_error(name, f"data.pkl: {type(e).__name__}: {e}") from None
    if not isinstance(obj, dict):
        raise _format_error(name, f"holds a {type(obj).__name__}, not a state_dict")
    refs = {}
    try:
        _flatten(obj, "", refs, name)
    except RecursionError:  # dicts nested too deep, or one that holds itself (the memo allows it)
        raise _format_error(name, "dicts nested too deep (or holding themselves)") from None
    storages = {}
    out = {}
    for tname, ref in refs.items():
        st = ref.storage
        if st.key not in storages:
            try:
                data = zf.read(f"{prefix}data/{st.key}")
            except KeyError:
                raise _format_error(name, f"storage {st.key!r} of {tname!r} is missing") from None
            except (zipfile.BadZipFile, OSError) as e:
                raise _format_error(name, f"storage {st.key!r} of {tname!r}: {e}") from None
            itemsize = _C._dtypes[st.dtype].itemsize
            if len(data) != st.numel * itemsize:
                raise _format_error(name, f"storage {st.key!r} has {len(data)} bytes, not {st.numel} "
                                          f"elements of {st.dtype}")
            storages[st.key] = data
        try:
            out[tname] = _C._from_storage(storages[st.key], st.dtype, ref.size, ref.stride, ref.offset)
        except _C.FormatError as e:
            raise _format_error(name, f"{tname!r}: {e}") from None
    return out


def torch_to_safetensors(pt_path, st_path, /, *, metadata=None):
    """Converts a PyTorch state_dict file (what ``torch.save(model.state_dict(), pt_path)``
    writes) to a safetensors file, without importing torch. The file's pickle is read by an
    unpickler that accepts only dicts, tensors and storages (anything else is a FormatError, and
    no code from the file runs); nested dicts of tensors are flattened with "." in the names.
    ``metadata``: a dict of str to str for the safetensors header."""
    save_file(read_torch(pt_path), st_path, metadata=metadata)


# ---- Writing ---------------------------------------------------------------------------------------

def _p_int(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -(1 << 31) <= v < (1 << 31):
        return b"J" + struct.pack("<i", v)
    raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def _p_str(s):
    raw = s.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw


def _p_global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _p_tuple(items):
    return b"(" + b"".join(items) + b"t"


def _state_dict_pickle(entries):
    """The pickle (protocol 2) of an OrderedDict of tensors, each entry (name, storage dtype,
    storage key, numel, shape) a contiguous tensor filling its own storage."""
    out = [b"\x80\x02", _p_global("collections", "OrderedDict"), b")R("]
    for name, dtype, key, numel, shape in entries:
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        strides.reverse()
        storage = _p_tuple([_p_str("storage"), _p_global("torch", _DTYPE_STORAGES[dtype]), _p_str(key),
                            _p_str("cpu"), _p_int(numel)]) + b"Q"
        args = _p_tuple([storage, _p_int(0), _p_tuple([_p_int(n) for n in shape]),
                         _p_tuple([_p_int(s) for s in strides]), b"\x89",
                         _p_global("collections", "OrderedDict") + b")R"])
        out += [_p_str(name), _p_global("torch._utils", "_rebuild_tensor_v2"), args, b"R"]
    out.append(b"u.")
    return b"".join(out)


def _write_aligned(zf, name, data):
    # PyTorch's writer starts every record's bytes at a multiple of 64 (its readers may map them):
    # a local extra field ("FB", as PyTorch's) pads the header to that.
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() + 30 + len(name.encode()) + 4
    pad = -start % 64
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    zf.writestr(info, data)


def safetensors_to_torch(st_path, pt_path, /):
    """Converts a safetensors file to a file that ``torch.load`` reads as a state_dict (an
    OrderedDict of CPU tensors, in the file's order), written directly (no torch needed), in
    the zip format of ``torch.save``."""
    tensors = load_file(st_path)
    entries, blobs = [], []
    for i, (name, t) in enumerate(tensors.items()):
        dtype = str(t.dtype)
        shape = tuple(t.shape)
        numel = 1
        for n in shape:
            numel *= n
        entries.append((name, dtype, str(i), numel, shape))
        blobs.append(_C._to_bytes(t))
    archive = "archive/"
    tmp = os.fsdecode(os.fspath(pt_path)) + ".tmp"
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            _write_aligned(zf, archive + "data.pkl", _state_dict_pickle(entries))
            _write_aligned(zf, archive + "byteorder", b"little")
            for (_, _, key, _, _), blob in zip(entries, blobs):
                _write_aligned(zf, archive + "data/" + key, blob)
            _write_aligned(zf, archive + "version", b"3\n")
        os.replace(tmp, pt_path)  # a complete file or none under the name
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
