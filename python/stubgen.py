"""Writes the type stubs of the Python package (python/ctensor/*.pyi) from the runtime's
signatures, with the annotations below by parameter name:

    PYTHONPATH=build/python python3 python/stubgen.py

tests/python/test_introspection.py fails when a public name or a parameter list of the package
and its stubs differ; run this after adding or changing a function."""
import importlib
import inspect
import os
import re
import sys
import types

# the package built (PYTHONPATH), not its sources next to this script
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import ctensor as ct  # noqa: E402

T = "Tensor"
OVERRIDE = {("save_file", "tensors"): "Mapping[str, Tensor]"}
PARAM = {
    "x": "_TensorLike", "x1": "_TensorLike", "x2": "_TensorLike", "a": "_TensorLike", "b": "_TensorLike",
    "tensor": "Tensor", "condition": "_TensorLike", "indices": "_TensorLike", "mask": "_TensorLike",
    "other": "_TensorLike", "src": "_TensorLike", "value": "float",
    "dtype": "_DTypeLike | None", "device": "_DeviceLike | None", "axis": "int | tuple[int, ...] | None",
    "keepdims": "bool", "shape": "int | Sequence[int]", "copy": "bool | None", "requires_grad": "bool",
    "stable": "bool", "descending": "bool", "obj": "Any", "tensors": "Sequence[Tensor]",
    "arrays": "Sequence[Tensor]", "file": "str | os.PathLike[str] | BinaryIO", "arr": "_TensorLike",
    "filename": "str | os.PathLike[str]", "metadata": "Mapping[str, str] | None",
    "pt_path": "str | os.PathLike[str]", "st_path": "str | os.PathLike[str]", "size": "int | Sequence[int] | None",
    "seed": "int", "correction": "float", "ddof": "float | None", "a_min": "_TensorLike | None",
    "a_max": "_TensorLike | None", "n": "int", "k": "int", "mean": "float", "std": "float", "low": "float", "high": "float",
}
RET = {
    "allclose": "bool", "array_equal": "bool", "build_info": "str", "get_default_device": "Device",
    "get_num_threads": "int", "is_grad_enabled": "bool", "are_deterministic_algorithms_enabled": "bool",
    "memory_stats": "dict[str, int]", "promote_types": "dtype", "result_type": "dtype", "can_cast": "bool",
    "isdtype": "bool", "same_storage": "bool", "synchronize": "None", "set_default_device": "None",
    "set_num_threads": "None", "use_deterministic_algorithms": "None", "manual_seed": "None", "backward": "None",
    "save": "None", "savez": "None", "savez_compressed": "None", "save_file": "None", "load_file": "dict[str, Tensor]",
    "load": "Tensor | NpzFile", "load_metadata": "dict[str, str]", "torch_to_safetensors": "None",
    "safetensors_to_torch": "None", "split": "list[Tensor]", "chunk": "list[Tensor]", "nonzero": "tuple[Tensor, ...]",
    "broadcast_arrays": "list[Tensor]", "meshgrid": "list[Tensor]", "unstack": "tuple[Tensor, ...]",
    "asnumpy": "Any", "get_array_module": "Any", "finfo": "Any", "iinfo": "Any", "is_available": "bool",
    "device_count": "int", "unavailable_reason": "str | None", "current_stream": "Any", "seed": "None",
    "unique_all": "Any", "unique_counts": "Any", "unique_inverse": "Any", "slogdet": "Any", "eigh": "Any",
    "qr": "Any", "svd": "Any", "topk": "Any", "kthvalue": "Any", "sort": "Tensor", "einsum": "Tensor",
    "get_rng_state": "Any", "current_stream_handle": "int", "empty_cache": "None", "stream": "Any",
}



def fmt_sig(name, obj):
    try:
        sig = inspect.signature(obj)
    except (ValueError, TypeError):
        return f"def {name}(*args: Any, **kwargs: Any) -> Any: ..."
    parts = []
    kinds_seen_kwonly = False
    prev = None
    params = list(sig.parameters.values())
    for p in params:
        if prev == inspect.Parameter.POSITIONAL_ONLY and p.kind != inspect.Parameter.POSITIONAL_ONLY:
            parts.append("/")
        if p.kind == inspect.Parameter.KEYWORD_ONLY and not kinds_seen_kwonly and not any(
                q.kind == inspect.Parameter.VAR_POSITIONAL for q in params):
            parts.append("*")
            kinds_seen_kwonly = True
        ann = OVERRIDE.get((name, p.name)) or PARAM.get(p.name, "Any")
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            s = f"*{p.name}: {'Tensor' if p.name in ('arrays', 'operands', 'tensors') else 'Any'}"
        elif p.kind == inspect.Parameter.VAR_KEYWORD:
            s = f"**{p.name}: {'_TensorLike' if p.name == 'kwds' else 'Any'}"
        else:
            s = f"{p.name}: {ann}"
            if p.default is not inspect.Parameter.empty:
                d = p.default
                if not (ann.endswith("| None") or ann == "Any") and d is None:
                    s = f"{p.name}: {ann} | None"
                s += " = " + (repr(d) if isinstance(d, (int, float, str, bool, type(None))) else "...")
        parts.append(s)
        prev = p.kind
    if prev == inspect.Parameter.POSITIONAL_ONLY:
        parts.append("/")
    ret = RET.get(name, T)
    return f"def {name}({', '.join(parts)}) -> {ret}: ..."

HEADER = '''"""{doc}"""
# Type stubs of {mod} (PEP 561; the package ships py.typed). tests/python/test_introspection.py
# checks that every public name of the module is here with the runtime's parameter names.
import os
from typing import Any, BinaryIO, Mapping, Sequence

'''


def gen_class(name, cls):
    bases = ["Mapping[str, Tensor]" if b.__name__ == "Mapping" else b.__name__
             for b in cls.__bases__ if b is not object]
    lines = [f"class {name}({', '.join(bases)}):" if bases else f"class {name}:"]
    body = []
    if not issubclass(cls, BaseException):
        for attr in sorted(vars(cls)):
            if attr.startswith("_") and attr not in OPS and attr not in DUNDERS:
                continue
            v = vars(cls)[attr]
            if isinstance(v, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
                body.append(f"    @property\n    def {attr}(self) -> Any: ...")
            elif callable(v) or isinstance(v, (classmethod, staticmethod)):
                if attr in OPS and name == "Tensor":
                    body.append(f"    def {attr}(self, other: Any) -> Tensor: ...")
                else:  # methods of C types carry no signature: any arguments
                    body.append(f"    def {attr}(self, *args: Any, **kwargs: Any) -> Any: ...")
    return "\n".join(lines + (body or ["    ..."]))


DUNDERS = {"__init__", "__enter__", "__exit__", "__call__", "__iter__", "__len__", "__dlpack__",
           "__dlpack_device__", "__array_namespace__", "__float__", "__int__", "__bool__", "__index__",
           "__neg__", "__abs__", "__invert__", "__setitem__", "__contains__"}
OPS = {"__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__", "__matmul__",
       "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rpow__", "__rmatmul__", "__lt__", "__le__",
       "__gt__", "__ge__", "__and__", "__or__", "__xor__", "__getitem__"}


def gen(modname, extra_imports=""):
    mod = importlib.import_module(modname)
    out = [HEADER.format(doc=f"Type stubs of {modname}.", mod=modname)]
    out.append(extra_imports)
    for name in sorted(n for n in dir(mod) if not n.startswith("_")):
        obj = getattr(mod, name)
        if isinstance(obj, types.ModuleType):
            continue
        if obj is None:
            out.append(f"{name}: None")
            continue
        if inspect.isclass(obj):
            if obj.__name__ != name and hasattr(mod, obj.__name__):
                out.append(f"{name} = {obj.__name__}")
            elif obj.__module__.startswith("ctensor") or issubclass(obj, BaseException):
                out.append(gen_class(name, obj))
            continue
        if callable(obj) and not isinstance(obj, ct.dtype):
            out.append(fmt_sig(name, obj))
        elif isinstance(obj, ct.dtype):
            out.append(f"{name}: dtype")
        elif isinstance(obj, float):
            out.append(f"{name}: float")
        elif isinstance(obj, str):
            out.append(f"{name}: str")
        else:
            out.append(f"{name}: Any")
    text = "\n".join(out) + "\n"
    text = re.sub(r"(?<=[:>] )bool\b|(?<=\| )bool\b", "_bool", text)
    return text.replace("from typing import Any", "import builtins\nfrom typing import Any") \
        .replace("\n\n\n", "\n\n_bool = builtins.bool\n", 1)


TOP = """from . import nn as nn, optim as optim, data as data, linalg as linalg, cuda as cuda, random as random, io as io
from .io import NpzFile

_TensorLike = Tensor | float | int | _bool | Sequence[Any]
_DTypeLike = dtype | str | type
_DeviceLike = Device | str
"""
SUB = "from . import Tensor, Device, dtype, _TensorLike, _DTypeLike, _DeviceLike\n"
FILES = {"ctensor": ("__init__.pyi", TOP), "ctensor.linalg": ("linalg.pyi", SUB),
         "ctensor.random": ("random.pyi", SUB), "ctensor.io": ("io.pyi", SUB),
         "ctensor.cuda": ("cuda.pyi", SUB.replace(" Device,", ""))}

if __name__ == "__main__":
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctensor")
    for modname, (filename, imports) in FILES.items():
        with open(os.path.join(folder, filename), "w") as f:
            f.write(gen(modname, imports))
        print("wrote", os.path.join(folder, filename))
