"""A profile-guided build of the compiled core: compile, run a workload, compile again with GCC.

``setup.py`` uses `ProfiledBuildExt` as its ``build_ext``. When it has extensions to build (a
compiled build) and the compiler is GCC, it builds them twice:

1. with ``-fprofile-generate``: the extensions count how often each branch and function runs;
2. it runs ``pgo_training.py`` (about a second: a `Server` and a `Client` in memory exchanging
   60 Hz pings, bulk transfers, unreliable and fragmented messages) against that build;
3. with ``-fprofile-use``: GCC lays the functions and branches the workload ran together, apart
   from the rest, and optimises them for speed.

The modules, and what they compute, are the same either way; only the machine code differs. On
a 60 Hz round trip the process wakes from 16 ms of sleep with cold caches, and the core's code
touched on fewer pages took the in-memory round trip from 204-221 to 179 µs when cold
(docs/compiled.md, "A profile-guided build").

``LAGLESS_PGO=0`` builds once, without a profile. A compiler other than GCC (clang's profiles
take a separate merge tool) builds once too. If the instrumented build or the workload fails,
the note on stderr says why and the build goes on without a profile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lagless_build import NOTE_LIMIT, c_compiler, note  # beside this file, on setup.py's path
from setuptools.command.build_ext import build_ext

TRAINING = Path(__file__).resolve().parent / "pgo_training.py"
TRAINING_TIMEOUT = 600.0  # s; the workload takes about a second


def pgo_unavailable() -> str | None:
    """Why this build will not be profile-guided (``LAGLESS_PGO=0``, not GCC), or None."""
    if os.environ.get("LAGLESS_PGO", "") == "0":
        return "LAGLESS_PGO=0"
    compiler = c_compiler()
    try:
        version = subprocess.run(
            [*compiler, "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{compiler[0]} --version failed ({exc})"
    if "Free Software Foundation" not in version:  # GCC's banner; clang's has no such line
        return f"{compiler[0]} is not GCC"
    return None


class ProfiledBuildExt(build_ext):
    """``build_ext`` that builds a profile-guided core where it can (module docstring)."""

    def run(self) -> None:
        if not self.extensions or self.inplace:
            super().run()
            return
        why = pgo_unavailable()
        if why is not None:
            note(f"lagless: building the compiled core without a profile: {why}.")
            super().run()
            return
        profiles = Path(self.build_temp).resolve() / "pgo-profiles"
        shutil.rmtree(profiles, ignore_errors=True)
        flags = [
            (ext, list(ext.extra_compile_args), list(ext.extra_link_args))
            for ext in self.extensions
        ]
        use: list[str] = []
        try:
            self._build_with([f"-fprofile-generate={profiles}"], ["-fprofile-generate"], flags)
            self._train()
            use = [
                f"-fprofile-use={profiles}",
                "-fprofile-partial-training",
                "-Wno-missing-profile",
            ]
        except (Exception, SystemExit) as exc:  # a failed compiler run exits setup()
            note(
                "lagless: building the compiled core without a profile: the profiling run "
                f"failed ({str(exc)[:NOTE_LIMIT]})."
            )
        self._build_with(use, [], flags)

    def _build_with(
        self,
        compile_args: list[str],
        link_args: list[str],
        flags: list[tuple[Any, list[str], list[str]]],
    ) -> None:
        """Build every extension anew with these flags added to each one's own."""
        for ext, compile_base, link_base in flags:
            ext.extra_compile_args = [*compile_base, *compile_args]
            ext.extra_link_args = [*link_base, *link_args]
        self.force = True  # the objects of the other pass are up to date by their timestamps
        compiler = self.compiler  # the compiler's name: run() replaces it with the object
        try:
            super().run()
        finally:
            self.compiler = compiler

    def _train(self) -> None:
        """Run the workload against the instrumented build in ``build_lib``."""
        path = [str(Path(self.build_lib).resolve())]
        if os.environ.get("PYTHONPATH"):
            path.append(os.environ["PYTHONPATH"])
        result = subprocess.run(
            [sys.executable, str(TRAINING)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
            capture_output=True,
            text=True,
            timeout=TRAINING_TIMEOUT,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{TRAINING.name} exited {result.returncode}: {result.stderr.strip()[-NOTE_LIMIT:]}"
            )
