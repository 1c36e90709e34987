"""The compiled-core build: which modules mypyc compiles, the build backend, `compiled()`.

A ``LAGLESS_COMPILE=1`` wheel is too slow to build in the suite (about a minute on 2 cores); these
tests pin what makes it possible and correct: the module list, that no interpreted class
inherits from a compiled one (that fails at import in a compiled build), and the backend's
choices. The suite itself passes against a compiled wheel as well (docs/compiled.md).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

import lagless
from lagless.transport import build, compiled

ROOT = Path(__file__).resolve().parents[2]


def _compiled_modules() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "COMPILED":
            scope: dict[str, object] = {}
            exec(compile(ast.Module([node], []), "setup.py", "exec"), scope)
            paths = scope["COMPILED"]
            assert isinstance(paths, list)
            return [
                str(p).removeprefix("src/").removesuffix(".py").replace("/", ".") for p in paths
            ]
    raise AssertionError("setup.py has no COMPILED list")


def _backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lagless_build", ROOT / "_build/lagless_build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_compiled_module_exists_and_is_in_the_transport() -> None:
    names = _compiled_modules()
    assert "lagless.transport.connection" in names
    for name in names:
        assert name.startswith("lagless.transport."), name
        assert (ROOT / "src" / (name.replace(".", "/") + ".py")).is_file(), name


def _open_to_subclasses(module: str) -> set[str]:
    """Classes of ``module`` marked ``@mypyc_attr(allow_interpreted_subclasses=True)``."""
    tree = ast.parse((ROOT / "src" / (module.replace(".", "/") + ".py")).read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        and getattr(decorator.func, "id", None) == "mypyc_attr"
        and any(
            k.arg == "allow_interpreted_subclasses"
            and isinstance(k.value, ast.Constant)
            and k.value.value is True
            for k in decorator.keywords
        )
    }


def test_server_and_client_are_compiled_and_stay_open_to_application_subclasses() -> None:
    names = _compiled_modules()
    assert "lagless.transport.server" in names
    assert "lagless.transport.client" in names
    assert _open_to_subclasses("lagless.transport.server") == {"Server"}
    assert _open_to_subclasses("lagless.transport.client") == {"Client"}


def test_no_interpreted_class_inherits_from_a_compiled_one() -> None:
    """Except from a class compiled with ``allow_interpreted_subclasses`` (Server, Client)."""
    for info in pkgutil.walk_packages(lagless.__path__, "lagless."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    compiled_names = set(_compiled_modules())
    offenders = []
    for name in compiled_names:
        module = sys.modules[name]
        open_classes = _open_to_subclasses(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == name
                and value.__qualname__ not in open_classes
            ):
                offenders += [
                    f"{sub.__module__}.{sub.__qualname__}({value.__qualname__})"
                    for sub in value.__subclasses__()
                    if sub.__module__ not in compiled_names
                ]
    assert offenders == []


def test_the_compiled_modules_type_check_as_mypyc_needs(tmp_path: Path) -> None:
    """mypyc compiles only what mypy accepts under the project's strict settings: a type error in
    one of these modules breaks the compiled build, which the suite does not build."""
    from mypy import api

    paths = [str(ROOT / "src" / (name.replace(".", "/") + ".py")) for name in _compiled_modules()]
    out, err, status = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path), *paths]
    )
    assert status == 0, out + err


def test_compiled_reports_where_the_core_was_loaded_from() -> None:
    from lagless.transport import connection

    from_source = str(connection.__file__).endswith(".py")
    assert compiled() is (not from_source)
    assert build.core() == ("python" if from_source else "mypyc")


def test_backend_asks_for_mypy_and_the_dependencies_only_when_compiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = _backend()
    own = ["setuptools's own"]  # what setuptools would find by running setup.py
    monkeypatch.setattr(backend._setuptools, "get_requires_for_build_wheel", lambda _: own)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("LAGLESS_COMPILE", "1")
    wanted = backend.get_requires_for_build_wheel()
    assert wanted[0].startswith("mypy")
    assert any(w.startswith("cryptography") for w in wanted)
    monkeypatch.setenv("LAGLESS_COMPILE", "0")
    assert backend.get_requires_for_build_wheel() == own
    monkeypatch.delenv("LAGLESS_COMPILE")
    assert backend.get_requires_for_build_wheel() == own


def test_backend_builds_editable_installs_from_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backend = _backend()
    seen: list[str] = []
    monkeypatch.setattr(backend._setuptools, "get_requires_for_build_editable", lambda _: [])
    monkeypatch.setenv("LAGLESS_COMPILE", "1")
    monkeypatch.setattr(
        backend._setuptools,
        "build_editable",
        lambda *args: seen.append(backend.os.environ["LAGLESS_COMPILE"]) or "x.whl",
    )
    assert backend.build_editable(str(tmp_path)) == "x.whl"
    assert seen == ["0"]
    assert backend.get_requires_for_build_editable() == []
