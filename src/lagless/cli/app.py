"""The root typer app: composes the sub-command modules and sets the one error style.

Every user error ends as one ``error: ...`` line on stderr with exit status 2 (see
``lagless.cli.common``): typer's parse errors (``--port abc``, an unknown option, a missing
argument) are caught here and printed in that style instead of typer's boxed panel, as are the
library's `LaglessError`s. Help is plain text (no rich boxes, no type label on flags).
"""

from __future__ import annotations

import sys

import typer

from lagless._version import __version__
from lagless.cli import (
    bench,
    cluster,
    demo,
    docs,
    game,
    gossip,
    lab,
    netsim,
    proxy,
    sync,
    transport,
    vfc,
    web,
)
from lagless.cli.common import make_app, run_app


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


app = make_app(
    "Real-time multiplayer networking: transport, latency hiding, interest management, lab."
)


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    """Real-time multiplayer networking: transport, latency hiding, interest management, lab."""


app.add_typer(netsim.app, name="netsim")
app.add_typer(lab.app, name="lab")
app.add_typer(gossip.app, name="gossip")
app.add_typer(vfc.app, name="vfc")
app.add_typer(game.app, name="game")
app.add_typer(sync.app, name="sync")
app.command("proxy")(proxy.proxy)
app.command("bench", context_settings=bench.bench_settings)(bench.bench)
app.command("serve")(transport.serve_command)
app.command("connect")(transport.connect_command)
app.command("token")(transport.token_command)
app.command("docs")(docs.docs_command)
app.command("demo")(demo.demo)
app.command("cluster")(cluster.cluster)
app.command("web")(web.web)


@app.command()
def version() -> None:
    """Print the lagless version."""
    typer.echo(__version__)


def main() -> None:
    """Run the ``lagless`` command line and exit with its status."""
    sys.exit(run_app(app))
