"""The layering of DESIGN.md, checked on the import graph with ``ast``.

A module may import only from its own layer or layers below it, and nothing outside ``io``, ``cli``,
``demo`` and ``examples`` may touch sockets, asyncio, clocks or the global random generator.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "lagless"

# Lowest first, as in DESIGN.md "Layers". Modules of the same rank may import each other.
LAYERS: dict[str, int] = {
    "_types": 0,
    "_version": 0,
    "_validate": 0,
    "_lazy": 0,
    "errors": 0,
    "wire": 1,
    "netsim": 2,
    "io": 3,
    "transport": 4,
    "world": 5,
    "gossip": 6,
    "sync": 7,
    "smoothing": 8,
    "interest": 9,
    "replication": 10,
    "rooms": 11,
    "physics": 11,
    "game": 11,
    "demo": 12,
    "apps": 12,
    "web": 12,
    "cluster": 12,
    "lab": 13,
    "testing": 14,
    "examples": 14,
    "cli": 15,
    "__init__": 16,
    "__main__": 16,
}
IO_ALLOWED = {"io", "apps", "cli", "demo", "examples", "web"}
BANNED_MODULES = {"socket", "asyncio", "selectors", "uvloop", "time"}
RANDOM_ALLOWED_ATTRS = {"Random", "SystemRandom"}


def _layer_of(module_path: Path) -> str:
    rel = module_path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _module_or_init(name: str) -> str:
    """``from lagless import X``: X is a layer if it is a module, else it comes from __init__."""
    if (SRC / name).is_dir() or (SRC / f"{name}.py").is_file():
        return name
    return "__init__"


def _imported_lagless_layers(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "lagless":
                names = [f"lagless.{_module_or_init(alias.name)}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "lagless" and len(parts) > 1:
                found.add(parts[1])
    return found


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    layer = _layer_of(path)
    assert layer in LAYERS, f"{layer} is not a known layer; add it to LAYERS and DESIGN.md"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for imported in _imported_lagless_layers(tree):
        assert imported in LAYERS, f"{path}: imports unknown layer {imported}"
        assert LAYERS[imported] <= LAYERS[layer], (
            f"{path.relative_to(SRC)} ({layer}) imports higher layer {imported}"
        )


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_io_above_io_layer(path: Path) -> None:
    layer = _layer_of(path)
    if layer in IO_ALLOWED:
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                assert root not in BANNED_MODULES, f"{path}: import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            assert root not in BANNED_MODULES, f"{path}: from {node.module} import ..."
            if root == "random":
                for alias in node.names:
                    allowed = alias.name in RANDOM_ALLOWED_ATTRS
                    assert allowed, f"{path}: from random import {alias.name}"
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "random"
        ):
            allowed = node.attr in RANDOM_ALLOWED_ATTRS
            assert allowed, f"{path}: random.{node.attr} (global generator)"


def test_checker_catches_a_violation(tmp_path: Path) -> None:
    """The import walker must see both import forms, or the tests above could never fail."""
    source = (
        "from lagless.cli import app\nimport lagless.lab.registry\nfrom lagless import io\n"
        "from lagless import ConfigError\n"
    )
    tree = ast.parse(source)
    assert _imported_lagless_layers(tree) == {"cli", "lab", "io", "__init__"}
