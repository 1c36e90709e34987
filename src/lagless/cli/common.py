"""What every ``lagless`` command shares: one error style, signals, addresses, output.

Decisions (pinned by ``tests/cli/``):

* **One error style.** Every failure the user can cause (a bad option value, an unknown option, a
  library `ConfigError`, an unwritable path) ends as one line ``error: ...`` on stderr and exit
  status 2; nothing prints a traceback or typer's boxed panel (`fail`, and ``app.main``).
* **Signals.** A long-running command stops on the first SIGINT or SIGTERM, prints its summary and
  exits with 128 + the signal number: 130 for SIGINT, 143 for SIGTERM (`run_until_signal`,
  `caught_signals`, `interruptible`, `exit_for`). A server loop records the signal and checks it
  between steps (`caught_signals`), so a signal never cuts a step in half and loses the events
  that step had taken from the protocol object; `interruptible` (raise at once) is for long
  computations that hold nothing worth keeping.
* **Hostnames** are resolved here and in `lagless.io` with the standard library
  (``getaddrinfo``), never in the sans-I/O layers, which see numeric addresses only
  (`bind_address`, `peer_address`).
* **IPv6** addresses are printed in brackets, ``[::1]:40000`` (`show`).
"""

from __future__ import annotations

import asyncio
import math
import re
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final, NoReturn, TypeVar

import typer
from typer._click.exceptions import NoArgsIsHelpError

from lagless._types import Address
from lagless.errors import ConfigError, LaglessError
from lagless.io.udp import format_hostport, parse_hostport, resolve, run

R = TypeVar("R")

USAGE_ERROR: int = 2  # exit status of a bad argument or any other user error
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)
METRICS_OPTION = typer.Option(
    None,
    "--metrics",
    metavar="HOST:PORT",
    help="serve Prometheus metrics over HTTP here (needs lagless[ops]) [default: off]",
)
"""``--metrics HOST:PORT`` of every server command (issue 16, docs/operations.md)."""
LOG_FORMAT_OPTION = typer.Option(
    "text", "--log-format", metavar="text|json", help="json: one JSON object per line"
)
"""``--log-format text|json`` of every server command that logs."""


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by a SIGINT or SIGTERM under `interruptible`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def make_app(help_text: str) -> typer.Typer:
    """Return a typer app in lagless's style: plain help, no completion, no pretty tracebacks."""
    return typer.Typer(
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


def echo(line: str) -> None:
    """Print one line to stdout and flush it, so a pipe sees each line at once."""
    typer.echo(line)
    sys.stdout.flush()


def fail(message: str, status: int = USAGE_ERROR) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``status``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(status)


def show(addr: Address) -> str:
    """Return ``host:port``, with an IPv6 host in brackets (``[::1]:40000``)."""
    return format_hostport(addr)


def exit_for(signum: int | None) -> None:
    """Exit with 128 + ``signum`` when a signal ended the command; return otherwise."""
    if signum is not None:
        raise typer.Exit(128 + signum)


def run_until_signal(
    main: Callable[[asyncio.Event], Awaitable[R]], *, cut: asyncio.Event | None = None
) -> tuple[R, int | None]:
    """Run ``main(stop)`` on a fresh event loop (uvloop when installed) until it returns.

    The first SIGINT or SIGTERM sets ``stop``; ``main`` is expected to wind down and return its
    summary within a fraction of a second. A signal that comes when ``stop`` is set already (a
    second one, or any once ``main`` set ``stop`` itself to begin a graceful shutdown) sets
    ``cut``: the shutdown's wait ends at once.

    Returns:
        What ``main`` returned and the number of the first signal (None if none came).
    """
    caught: list[int] = []

    async def runner() -> R:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if not caught:
                caught.append(signum)
            if stop.is_set() and cut is not None:
                cut.set()
            stop.set()

        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, on_signal, int(sig))
        try:
            return await main(stop)
        finally:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    result = run(runner())
    return result, caught[0] if caught else None


SIGINT_STATUS: Final = 128 + int(signal.SIGINT)  # what typer makes of any KeyboardInterrupt
_signalled: deque[int] = deque(maxlen=1)  # the last signal `interruptible` turned into Interrupted


@contextmanager
def _stop_signals(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """Run the block with ``handler`` installed for SIGINT and SIGTERM; restore the old ones."""
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def caught_signals() -> Iterator[list[int]]:
    """Record SIGINT and SIGTERM, in order, in the yielded list instead of raising.

    A synchronous loop checks the list between its steps; a blocking wait inside a step resumes
    after the handler (PEP 475), so a step's wait should be short (tens of ms).
    """
    caught: list[int] = []
    with _stop_signals(lambda signum, _frame: caught.append(signum)):
        yield caught


@contextmanager
def interruptible() -> Iterator[None]:
    """Make SIGTERM behave like SIGINT in synchronous code: both raise `Interrupted`."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        _signalled.append(signum)
        raise Interrupted(signum)

    with _stop_signals(handler):
        yield


def _port(port: int, field: str) -> int:
    if not 0 <= port <= 65535:
        raise ConfigError(f"{field} must be in [0, 65535], got {port}")
    return port


def seconds(value: float | None, flag: str, *, zero: bool = False) -> float | None:
    """Return ``value`` (seconds) after checking it is finite and > 0 (>= 0 with ``zero``).

    Raises:
        ConfigError: naming ``flag``, when the value is out of range.
    """
    if value is None:
        return None
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        bound = ">= 0" if zero else "> 0"
        raise ConfigError(f"{flag} must be a number of seconds {bound}, got {value:g}")
    return value


def in_range(value: int, flag: str, low: int, high: int) -> int:
    """Return ``value`` after checking ``low <= value <= high``.

    Raises:
        ConfigError: naming ``flag``, when the value is out of range.
    """
    if not low <= value <= high:
        raise ConfigError(f"{flag} must be in [{low}, {high}], got {value}")
    return value


def bind_address(host: str, port: int, *, field: str = "--host") -> Address:
    """Resolve ``--host`` (a name or an IP literal) and ``--port`` to a numeric address to bind.

    Raises:
        ConfigError: the port is out of range or the host does not resolve.
    """
    _family, numeric = resolve((host.strip("[]"), _port(port, "--port")), field=field)
    return numeric


def peer_address(text: str, *, field: str) -> Address:
    """Resolve ``HOST:PORT`` text (a name, an IPv4 or a bracketed IPv6 host) to a numeric address.

    Raises:
        ConfigError: the text is not HOST:PORT or the host does not resolve.
    """
    _family, numeric = resolve(parse_hostport(text, field=field), field=field)
    return numeric


def _plain(message: str) -> str:
    """Reword typer's value errors ("Input should be a valid integer, unable to parse ...")."""
    message = re.sub(
        r"Input should be a valid \w+, unable to parse string as (an? \w+)", r"expected \1", message
    )
    return message.replace("Input should be ", "expected a value ")


def run_app(command: typer.Typer, args: list[str] | None = None) -> int:
    """Run a typer app in the one error style and return its exit status.

    Args:
        command: the app to run (the root app, or a sub-app run alone).
        args: command-line arguments; ``None`` reads ``sys.argv``.

    Returns:
        0 on success, 2 on a user error, 128 + N when signal N stopped the command, or the status
        the command chose.
    """
    _signalled.clear()
    try:
        with interruptible():
            status = command(args=args, prog_name="lagless", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        return 0
    except typer.TyperException as exc:
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        text = _plain(" ".join(message.split()))
        typer.echo(f"error: {text[:1].lower()}{text[1:]}{hint}", err=True)
        return int(getattr(exc, "exit_code", USAGE_ERROR))
    except typer.Abort:
        # click turns a KeyboardInterrupt (our Interrupted, SIGTERM included) into Abort
        return _signal_status()
    except LaglessError as exc:
        typer.echo(f"error: {exc}", err=True)
        return USAGE_ERROR
    except Interrupted as exc:
        return 128 + exc.signum
    except KeyboardInterrupt:
        return _signal_status()
    if not isinstance(status, int):
        return 0
    if status == SIGINT_STATUS and _signalled:
        # typer 0.16 and later turn a KeyboardInterrupt (our Interrupted, SIGTERM included)
        # into Exit(130), which click hands back as the status: say which signal it was
        return _signal_status()
    return status


def _signal_status() -> int:
    """128 + the last signal `interruptible` caught (SIGINT when none was: a plain Ctrl-C)."""
    return 128 + (_signalled[-1] if _signalled else int(signal.SIGINT))
