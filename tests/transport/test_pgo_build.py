"""The profile-guided ``build_ext`` of a compiled build (``_build/lagless_pgo.py``).

Each test builds a real extension (the small C cipher, ``_aead.c``) with GCC in a temporary
directory, so the two passes, the workload between them and the fallbacks run as in
``pip install .``; the workload is replaced by a short script that calls the extension.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "lagless" / "transport" / "_aead.c"


def _pgo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lagless_pgo", ROOT / "_build/lagless_pgo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "_build"))  # it imports lagless_build, as setup.py lets it
    try:
        with warnings.catch_warnings():  # Cython's build_ext, when installed, imports distutils
            warnings.simplefilter("ignore", DeprecationWarning)
            spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "_build"))
    return module


def _build(pgo: ModuleType, tmp: Path) -> Path:
    """Build ``_aead`` with `ProfiledBuildExt` into ``tmp/lib``; return its build_temp."""
    from setuptools import Distribution, Extension

    ext = Extension("_aead", sources=[str(SOURCE)], extra_compile_args=["-O2"])
    dist = Distribution({"name": "pgo-test", "ext_modules": [ext]})
    dist.cmdclass["build_ext"] = pgo.ProfiledBuildExt
    with warnings.catch_warnings():  # Cython's build_ext, when installed, imports distutils
        warnings.simplefilter("ignore", DeprecationWarning)
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib = str(tmp / "lib")
        cmd.build_temp = str(tmp / "temp")
        cmd.ensure_finalized()
        cmd.run()
    assert ext.extra_compile_args[0] == "-O2"  # the extension's own flags come first
    assert list(ext.extra_link_args) == []
    built = list((tmp / "lib").glob("_aead*.so"))
    assert len(built) == 1
    return tmp / "temp"


def _workload(tmp: Path, body: str) -> Path:
    script = tmp / "workload.py"
    script.write_text(body)
    return script


@pytest.fixture
def gcc_pgo(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The module, on this machine's default compiler, which must be GCC (.ci/run installs it)."""
    pgo = _pgo()
    monkeypatch.delenv("LAGLESS_PGO", raising=False)
    monkeypatch.delenv("CC", raising=False)
    assert pgo.pgo_unavailable() is None, "needs GCC as the C compiler (.ci/run installs it)"
    return pgo


def test_the_extension_is_built_twice_with_the_workload_profiled_between(
    gcc_pgo: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pgo = gcc_pgo
    monkeypatch.setattr(
        pgo,
        "TRAINING",
        _workload(
            tmp_path, "import _aead\nassert len(_aead.seal(bytes(32), 1, b'x', None)) == 17\n"
        ),
    )
    temp = _build(pgo, tmp_path)
    profiles = list((temp / "pgo-profiles").rglob("*.gcda"))
    assert profiles, "the instrumented build wrote no profile"
    assert "without a profile" not in capsys.readouterr().err


def test_a_failed_workload_builds_without_a_profile_and_says_why(
    gcc_pgo: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pgo = gcc_pgo
    monkeypatch.setattr(pgo, "TRAINING", _workload(tmp_path, "raise SystemExit('no luck')\n"))
    _build(pgo, tmp_path)
    err = capsys.readouterr().err
    assert "building the compiled core without a profile" in err
    assert "no luck" in err


def test_the_real_workload_refuses_a_pure_python_core() -> None:
    """Against the source tree (a pure core) the workload fails rather than profile nothing."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "_build" / "pgo_training.py")],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "not compiled" in result.stderr


def test_lagless_pgo_0_builds_once_without_a_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pgo = _pgo()
    monkeypatch.setenv("LAGLESS_PGO", "0")
    monkeypatch.setattr(pgo, "TRAINING", _workload(tmp_path, "raise SystemExit('must not run')\n"))
    temp = _build(pgo, tmp_path)
    assert not (temp / "pgo-profiles").exists()
    err = capsys.readouterr().err
    assert "without a profile: LAGLESS_PGO=0" in err
    assert "must not run" not in err


def test_a_compiler_other_than_gcc_is_not_asked_for_a_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "clang"
    fake.write_text("#!/bin/sh\necho 'clang version 18.1.0'\n")
    fake.chmod(0o755)
    pgo = _pgo()
    monkeypatch.delenv("LAGLESS_PGO", raising=False)
    monkeypatch.setenv("CC", str(fake))
    assert pgo.pgo_unavailable() == f"{fake} is not GCC"
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert "--version failed" in pgo.pgo_unavailable()
