"""The public surface (STYLE §6.10): every exported name is documented, typed and public."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import lagless


def _subpackages() -> list[str]:
    names = ["lagless"]
    for info in pkgutil.iter_modules(lagless.__path__):
        if info.ispkg and info.name not in {"cli", "examples"}:
            names.append(f"lagless.{info.name}")
    return names


def _exports() -> list[tuple[str, str]]:
    pairs = []
    for package in _subpackages():
        module = importlib.import_module(package)
        pairs.extend((package, name) for name in getattr(module, "__all__", []))
    return pairs


def _doc(obj: object) -> str | None:
    """The object's docstring; for a class or function of a mypyc-compiled module, which keeps no
    docstrings (docs/compiled.md), the one in the module's source file beside it."""
    doc = inspect.getdoc(obj)
    path = Path(str(getattr(sys.modules[getattr(obj, "__module__", "")], "__file__", "")))
    if doc or path.suffix == ".py":
        return doc
    source = path.with_name(path.name.split(".")[0] + ".py")
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == obj.__name__:  # type: ignore[attr-defined]
            return ast.get_docstring(node)
    return None


@pytest.mark.parametrize("package", _subpackages())
def test_subpackage_declares_all(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__, f"{package} has no module docstring"
    assert isinstance(getattr(module, "__all__", None), list), f"{package} has no __all__ list"
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names missing {name}"


@pytest.mark.parametrize(("package", "name"), _exports())
def test_export_is_documented_and_typed(package: str, name: str) -> None:
    assert not name.startswith("_") or name == "__version__", f"{package} exports private {name}"
    obj = getattr(importlib.import_module(package), name)
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return
    assert _doc(obj), f"{package}.{name} has no docstring"
    functions: list[Callable[..., object]] = []
    if inspect.isfunction(obj):
        functions.append(obj)
    else:
        for attr, member in vars(obj).items():
            public = not attr.startswith("_") or attr == "__init__"
            own = getattr(member, "__qualname__", "").startswith(f"{obj.__qualname__}.")
            if inspect.isfunction(member) and public and own:
                functions.append(member)
    for fn in functions:
        signature = inspect.signature(fn)
        for param in signature.parameters.values():
            if param.name in {"self", "cls"}:
                continue
            assert param.annotation is not inspect.Parameter.empty, (
                f"{package}.{name}: {fn.__qualname__}({param.name}) has no annotation"
            )
        assert signature.return_annotation is not inspect.Signature.empty, (
            f"{package}.{name}: {fn.__qualname__} has no return annotation"
        )
