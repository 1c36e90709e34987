"""Names exported lazily (`lagless._lazy`): the real-socket stack does not import numpy."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from lagless._lazy import lazy_exports


def _run_fresh(code: str) -> None:
    """Run ``code`` in a new interpreter (nothing imported yet); fail with its stderr."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_transport_and_io_do_not_import_numpy() -> None:
    """`lagless.wire` and `lagless.io` import their numpy-backed names only when read."""
    code = (
        "import sys, lagless.transport, lagless.io\n"
        "assert 'numpy' not in sys.modules, 'numpy imported'\n"
        "from lagless.io import Proxy\n"
        "assert 'numpy' in sys.modules\n"
    )
    _run_fresh(code)


@pytest.mark.parametrize("package", ["lagless.wire", "lagless.io"])
def test_every_lazy_name_is_its_submodules_object(package: str) -> None:
    module = importlib.import_module(package)
    homes = module._HOMES
    assert homes, package
    for name, home in homes.items():
        assert name in module.__all__
        assert name in dir(module)
        assert getattr(module, name) is getattr(importlib.import_module(f"{package}.{home}"), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import lagless.wire

    with pytest.raises(AttributeError, match=r"'lagless\.wire' has no attribute 'nope'"):
        lagless.wire.nope  # noqa: B018
    getattr_, dir_ = lazy_exports("lagless.wire", {"Buffer": "buffer"})
    assert getattr_("Buffer") is importlib.import_module("lagless.wire.buffer").Buffer
    assert "Buffer" in dir_()


def test_an_export_named_like_its_submodule_stays_the_export() -> None:
    """``lagless.wire.quantize`` is the function even when the submodule is imported first."""
    code = (
        "import lagless.wire.bitstream\n"  # imports lagless.wire.quantize on the way
        "import lagless.wire as wire\n"
        "from lagless.wire.quantize import quantize\n"
        "assert wire.quantize is quantize, wire.quantize\n"
        "from lagless.wire import quantize as again\n"
        "assert again is quantize\n"
    )
    _run_fresh(code)
