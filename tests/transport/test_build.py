"""The compiled-core build: which modules mypyc compiles, the build backend, `compiled()`.

A compiled wheel is too slow to build in the suite (about a minute on 2 cores); these tests pin
what makes it possible and correct: the module list, that no interpreted class inherits from a
compiled one (that fails at import in a compiled build), the type check mypyc needs, and the
backend's choices. ``.ci/run`` builds the compiled core after the suite and runs the transport's
tests against it; the whole suite passes against a compiled wheel as well (docs/compiled.md).
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


IO_HOT_PATH = {"lagless.io.drive", "lagless.io.driver", "lagless.io.offload"}
"""The io modules every datagram passes through, compiled with the transport (docs/compiled.md)."""


def test_every_compiled_module_exists_and_is_on_the_hot_path() -> None:
    names = _compiled_modules()
    assert "lagless.transport.connection" in names
    assert set(names) >= IO_HOT_PATH
    for name in names:
        assert name.startswith("lagless.transport.") or name in IO_HOT_PATH, name
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


def test_backend_asks_for_mypy_and_the_dependencies_unless_told_not_to_compile(
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
    monkeypatch.delenv("LAGLESS_COMPILE")  # the default: compile if the machine can
    monkeypatch.setattr(backend, "missing_toolchain", lambda: None)
    assert backend.get_requires_for_build_wheel() == wanted
    monkeypatch.setattr(backend, "missing_toolchain", lambda: "no C compiler")
    assert backend.get_requires_for_build_wheel() == own  # it will not compile: no mypy
    monkeypatch.setenv("LAGLESS_COMPILE", "0")
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
    assert backend.os.environ["LAGLESS_COMPILE"] == "1"  # put back for the caller
    assert backend.get_requires_for_build_editable() == []


def _recording_wheel_build(
    backend: ModuleType, monkeypatch: pytest.MonkeyPatch, fail: BaseException | None
) -> list[str | None]:
    """Replace setuptools' ``build_wheel``: record ``LAGLESS_COMPILE`` at each call; the
    compiled attempt (any mode but 0) raises ``fail`` when given."""
    seen: list[str | None] = []

    def build(*args: object) -> str:
        mode = backend.os.environ.get("LAGLESS_COMPILE")
        seen.append(mode)
        if fail is not None and mode != "0":
            raise fail
        return "lagless.whl"

    monkeypatch.setattr(backend._setuptools, "build_wheel", build)
    return seen


def test_backend_compiles_wheels_by_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backend = _backend()
    monkeypatch.delenv("LAGLESS_COMPILE", raising=False)
    monkeypatch.setattr(backend, "missing_toolchain", lambda: None)
    seen = _recording_wheel_build(backend, monkeypatch, fail=None)
    assert backend.build_wheel(str(tmp_path)) == "lagless.whl"
    assert seen == [None]  # setup.py's compile_requested() is True in this mode
    assert backend.compile_requested()


@pytest.mark.parametrize(
    "failure", [SystemExit("error: command 'gcc' failed"), RuntimeError("mypyc broke")]
)
def test_backend_falls_back_to_pure_python_when_the_compiled_build_fails(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    failure: BaseException,
) -> None:
    backend = _backend()
    monkeypatch.delenv("LAGLESS_COMPILE", raising=False)
    monkeypatch.setattr(backend, "missing_toolchain", lambda: None)
    monkeypatch.chdir(tmp_path)
    leftover = tmp_path / "build" / "lib.linux-x86_64-cpython-311"
    leftover.mkdir(parents=True)
    seen = _recording_wheel_build(backend, monkeypatch, fail=failure)
    assert backend.build_wheel(str(tmp_path)) == "lagless.whl"
    assert seen == [None, "0"]
    assert not leftover.exists()  # no half-built extension can reach the pure wheel
    assert "LAGLESS_COMPILE" not in backend.os.environ
    err = capsys.readouterr().err
    assert "pure-Python core" in err
    assert str(failure) in err
    assert "LAGLESS_COMPILE=1 shows the whole failure" in err


def test_backend_builds_pure_python_without_trying_when_the_toolchain_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = _backend()
    monkeypatch.delenv("LAGLESS_COMPILE", raising=False)
    monkeypatch.setenv("CC", "no-such-compiler-here")
    assert "no C compiler" in (backend.missing_toolchain() or "")
    seen = _recording_wheel_build(backend, monkeypatch, fail=SystemExit(1))
    assert backend.build_wheel(str(tmp_path)) == "lagless.whl"
    assert seen == ["0"]
    err = capsys.readouterr().err
    assert "no-such-compiler-here" in err
    assert "install a C compiler" in err


def test_backend_fails_instead_of_falling_back_when_compiling_is_required(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backend = _backend()
    monkeypatch.setenv("LAGLESS_COMPILE", "1")
    seen = _recording_wheel_build(backend, monkeypatch, fail=SystemExit("compiler failed"))
    with pytest.raises(SystemExit, match="compiler failed"):
        backend.build_wheel(str(tmp_path))
    assert seen == ["1"]
    monkeypatch.setenv("LAGLESS_COMPILE", "0")
    assert backend.build_wheel(str(tmp_path)) == "lagless.whl"
    assert seen == ["1", "0"]


def test_backend_reads_the_wheel_metadata_without_compiling(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backend = _backend()
    monkeypatch.delenv("LAGLESS_COMPILE", raising=False)
    seen: list[str | None] = []
    monkeypatch.setattr(
        backend._setuptools,
        "prepare_metadata_for_build_wheel",
        lambda *args: seen.append(backend.os.environ.get("LAGLESS_COMPILE")) or "meta",
    )
    assert backend.prepare_metadata_for_build_wheel(str(tmp_path)) == "meta"
    assert seen == ["0"]
