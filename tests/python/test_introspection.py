"""Introspection: every public function of ctensor, ctensor.linalg, ctensor.random, ctensor.cuda
and ctensor.io has a signature inspect.signature can read (the extension's functions through
their text signatures) and a docstring; the type stubs (.pyi) shipped in the package hold every
public name of those modules, functions with the runtime's parameter names and kinds, and the
package is marked typed (py.typed)."""

import ast
import importlib
import inspect
import os
import types

import pytest

import ctensor as ct

MODULES = ["ctensor", "ctensor.linalg", "ctensor.random", "ctensor.cuda", "ctensor.io"]
PACKAGE = os.path.dirname(ct.__file__)


def public_functions(module):
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType) or inspect.isclass(obj) or not callable(obj):
            continue
        if isinstance(obj, ct.dtype):
            continue
        yield name, obj


@pytest.mark.parametrize("modname", MODULES)
def test_signature_and_docstring(modname):
    module = importlib.import_module(modname)
    missing_sig, missing_doc, count = [], [], 0
    for name, f in public_functions(module):
        count += 1
        try:
            inspect.signature(f)
        except (ValueError, TypeError) as e:
            missing_sig.append(f"{name} ({e})")
        if not (f.__doc__ or "").strip():
            missing_doc.append(name)
    assert count > 0
    assert not missing_sig, f"{modname}: no signature for {missing_sig}"
    assert not missing_doc, f"{modname}: no docstring for {missing_doc}"


def test_text_signatures_follow_the_calling_convention():
    # a METH_O / METH_VARARGS function takes no keyword: its signature says positional-only
    p = inspect.signature(ct.abs).parameters
    assert list(p) == ["x"] and p["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    with pytest.raises(TypeError):
        ct.abs(x=ct.ones(2))
    # keyword parameters as the array API names them, and callable that way
    p = inspect.signature(ct.sum).parameters
    assert p["axis"].kind is not inspect.Parameter.POSITIONAL_ONLY and p["axis"].default is None
    assert float(ct.sum(ct.ones((2, 3)), axis=None)) == 6.0
    p = inspect.signature(ct.zeros).parameters
    assert p["shape"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert ct.zeros(shape=(2,)).shape == (2,)
    assert list(inspect.signature(ct.einsum).parameters) == ["equation", "operands"]
    assert list(inspect.signature(ct.get_default_device).parameters) == []
    # the docstring after the signature is kept whole
    assert ct.abs.__doc__.startswith("abs(x)")
    assert ct.linalg.solve.__doc__ and inspect.signature(ct.linalg.solve)


def stub_tree(modname):
    rel = "__init__.pyi" if modname == "ctensor" else modname.split(".")[-1] + ".pyi"
    path = os.path.join(PACKAGE, rel)
    assert os.path.exists(path), f"no stub {path}"
    with open(path) as f:
        return ast.parse(f.read(), path)


def stub_names(tree):
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:  # "import X as X" re-exports X; other imports are private (PEP 484)
                if a.asname == a.name:
                    names[a.name] = node
    return names


def stub_params(fn):
    a = fn.args
    out = [(p.arg, "POSITIONAL_ONLY") for p in a.posonlyargs]
    out += [(p.arg, "POSITIONAL_OR_KEYWORD") for p in a.args]
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL"))
    out += [(p.arg, "KEYWORD_ONLY") for p in a.kwonlyargs]
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD"))
    return out


@pytest.mark.parametrize("modname", MODULES)
def test_stubs_match_the_runtime(modname):
    module = importlib.import_module(modname)
    names = stub_names(stub_tree(modname))
    public = [n for n in dir(module) if not n.startswith("_")]
    submodules = ("nn", "optim", "data", "linalg", "cuda", "random", "io") if modname == "ctensor" else ()
    missing = [n for n in public if n not in names and (
        not isinstance(getattr(module, n), types.ModuleType) or n in submodules)]
    regen = " (python/stubgen.py rewrites the stubs)"
    assert not missing, f"{modname}: not in the stubs: {missing}{regen}"
    extra = [n for n in names if not n.startswith("_") and not hasattr(module, n)]
    assert not extra, f"{modname}: in the stubs but not in the module: {extra}{regen}"
    wrong = []
    for name, f in public_functions(module):
        node = names[name]
        if not isinstance(node, ast.FunctionDef):
            wrong.append(f"{name}: not a function in the stub")
            continue
        runtime = [(p.name, p.kind.name) for p in inspect.signature(f).parameters.values()]
        if stub_params(node) != runtime:
            wrong.append(f"{name}: stub {stub_params(node)} != runtime {runtime}")
    assert not wrong, "\n".join(wrong) + regen


def test_package_is_typed():
    assert os.path.exists(os.path.join(PACKAGE, "py.typed"))
