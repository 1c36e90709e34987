"""``lagless docs``: build the documentation site (API reference and guides) and open it.

The site is built by mkdocs with mkdocstrings from ``mkdocs.yml`` at the root of the repository:
the getting-started guide, one page per layer generated from the docstrings, the protocol
documents and the design notes. mkdocs is the ``[docs]`` extra (also in ``[dev]``).

Decisions:
    * mkdocs runs as a child process (``python -m mkdocs build``) so its warnings reach the
      terminal as mkdocs prints them; a failed build is one ``error:`` line and exit status 2.
    * ``--out`` must be new, empty or an earlier build (it holds ``index.html`` and
      ``search/search_index.json``): mkdocs empties the directory it builds into, so an
      arbitrary directory given by mistake is refused instead of wiped
      (``tests/docs/test_site.py::test_out_refuses_a_directory_that_is_not_a_build``).
    * ``--serve`` serves the built pages with the standard library's HTTP server (no live
      reload: the site is for reading, ``mkdocs serve`` is there for writing it).
    * The first SIGINT or SIGTERM stops a build (and its mkdocs process) or the server, with
      exit status 130 or 143 (``tests/docs/test_site.py::test_serve_stops_on_the_first_signal``,
      ``test_build_stops_on_sigterm_with_its_child``).
    * The configuration is the ``mkdocs.yml`` beside the ``src`` directory these sources are
      in (an editable install or a clone), else the one in the current directory; an installed
      wheel carries no docs sources and says so.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import webbrowser
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Final

import typer

from lagless.cli.common import Interrupted, echo, interruptible
from lagless.errors import ConfigError

CONFIG_NAME: Final = "mkdocs.yml"
BUILD_MARKERS: Final = ("index.html", "search/search_index.json")  # present in every build
DEFAULT_PORT: Final = 8000


def find_config() -> Path:
    """Return the ``mkdocs.yml`` of the repository these sources are in, or of the cwd.

    Raises:
        ConfigError: Neither place has one (lagless was installed from a wheel).
    """
    for candidate in (Path(__file__).resolve().parents[3] / CONFIG_NAME, Path.cwd() / CONFIG_NAME):
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"{CONFIG_NAME} not found beside the lagless sources or in the current directory; "
        "the docs build from a clone of the repository"
    )


def check_out(out: Path) -> None:
    """Refuse an output directory that mkdocs's clean step must not empty.

    Args:
        out: The directory the site is to be built into.

    Raises:
        ConfigError: ``out`` is a file, or a non-empty directory that is not an earlier build.
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out} is not a directory")
    if any(out.iterdir()) and not all((out / marker).is_file() for marker in BUILD_MARKERS):
        raise ConfigError(
            f"--out {out} is not empty and holds no earlier docs build (it would be emptied); "
            "give a new or empty directory"
        )


def build_site(config: Path, out: Path, *, strict: bool = False) -> Path:
    """Build the site with mkdocs and return the path of its ``index.html``.

    Args:
        config: The ``mkdocs.yml`` to build.
        out: The output directory (created; an earlier build there is replaced).
        strict: Fail on any mkdocs or mkdocstrings warning (``mkdocs build --strict``).

    Returns:
        ``out / "index.html"``.

    Raises:
        ConfigError: ``out`` is unusable (`check_out`), mkdocs is not installed, or the build
            failed (mkdocs has printed why on stderr).
        Interrupted: SIGINT or SIGTERM arrived; the mkdocs process has been stopped.
    """
    if importlib.util.find_spec("mkdocs") is None:
        raise ConfigError(
            "mkdocs is not installed; install the docs extra: pip install -e '.[docs]'"
        )
    check_out(out)
    command = [sys.executable, "-m", "mkdocs", "build", "--quiet", "--config-file", str(config)]
    command += ["--site-dir", str(out)]
    if strict:
        command.append("--strict")
    with interruptible(), subprocess.Popen(command) as child:
        try:
            status = child.wait()
        except Interrupted:
            child.terminate()  # a SIGTERM reaches this process only, not its child
            raise
    if status != 0:
        raise ConfigError(f"mkdocs build failed with status {status} (its messages are above)")
    return out / "index.html"


def open_in_browser(url: str) -> None:
    """Open ``url`` in a graphical web browser, or say where to point one.

    Without a display (an SSH session, a container) nothing is launched: Python's
    ``webbrowser`` would otherwise fall back to a text browser that takes over the terminal.
    """
    graphical = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY")
    )
    if not (graphical and webbrowser.open(url)):
        echo(f"open {url} in a web browser")


class _QuietHandler(SimpleHTTPRequestHandler):
    """Serve files without one log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        """Drop the request log line."""


def serve_site(directory: Path, host: str, port: int, *, open_browser: bool) -> int:
    """Serve ``directory`` over HTTP until SIGINT or SIGTERM.

    Args:
        directory: A built site.
        host: Address to listen on, e.g. ``127.0.0.1``.
        port: TCP port, 0 for any free one.
        open_browser: Open the site's URL in the default web browser.

    Returns:
        128 + the number of the signal that stopped the server (130 for SIGINT, 143 for SIGTERM).

    Raises:
        ConfigError: The address cannot be listened on.
    """
    handler = partial(_QuietHandler, directory=str(directory))
    try:
        server = ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    url = f"http://{host}:{server.server_port}/"
    signum = 0
    try:
        with interruptible():
            echo(f"serving {directory} at {url} (Ctrl-C stops)")
            if open_browser:
                open_in_browser(url)
            server.serve_forever(poll_interval=0.2)
    except Interrupted as stop:
        signum = stop.signum
    finally:
        server.server_close()
    echo("stopped")
    return 128 + signum


def docs_command(
    out: Annotated[
        Path | None, typer.Option(help="directory to build into [default: site/ beside mkdocs.yml]")
    ] = None,
    serve: Annotated[bool, typer.Option("--serve", help="serve the site after building")] = False,
    host: Annotated[str, typer.Option(help="address to serve on with --serve")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", "-p", help="TCP port for --serve, 0 for any free one", min=0, max=65535
        ),
    ] = DEFAULT_PORT,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="open the site in a web browser")
    ] = True,
    strict: Annotated[bool, typer.Option("--strict", help="fail on any docs warning")] = False,
) -> None:
    """Build the documentation site (API reference, guides, protocol) and open it."""
    config = find_config()
    site = out if out is not None else config.parent / "site"
    try:
        index = build_site(config, site, strict=strict)
    except Interrupted as stop:
        raise typer.Exit(128 + stop.signum) from None
    if serve:
        raise typer.Exit(serve_site(site, host, port, open_browser=open_browser))
    echo(f"built {index}")
    if open_browser:
        open_in_browser(index.resolve().as_uri())
