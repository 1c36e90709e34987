"""The ``lagless`` command line: thin typer commands over library functions.

When this package is imported by the ``lagless`` program itself (``lagless ...`` or
``python -m lagless ...``), a SIGINT or SIGTERM that arrives while the commands are still being
imported ends the program at once with status 128 + the signal number and no traceback; once a
command runs, ``lagless.cli.common.run_app`` and the command take over the signals
(``tests/cli/test_signals.py::test_a_signal_during_start_up_exits_quietly``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType


def _exit_quietly(signum: int, _frame: FrameType | None) -> None:
    # os._exit, not SystemExit: raised inside a C extension's import (numpy, pymunk, pygame),
    # an exception can be cleared by the extension and the signal lost; nothing needs cleaning
    # up before a command runs
    os._exit(128 + signum)


def _started_as_the_program() -> bool:
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return program.name == "lagless" or program.parts[-2:] == ("lagless", "__main__.py")


if _started_as_the_program() and threading.current_thread() is threading.main_thread():
    for _signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signal, _exit_quietly)
