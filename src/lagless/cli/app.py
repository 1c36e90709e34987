"""The root typer app: composes the sub-command modules and turns library errors into one line."""

from __future__ import annotations

import sys

import typer

from lagless._version import __version__
from lagless.cli import bench, gossip, lab, netsim, proxy, transport, vfc
from lagless.errors import LaglessError

app = typer.Typer(
    name="lagless",
    help="Real-time multiplayer networking: transport, latency hiding, interest management, lab.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(netsim.app, name="netsim")
app.add_typer(lab.app, name="lab")
app.add_typer(gossip.app, name="gossip")
app.add_typer(vfc.app, name="vfc")
app.command("proxy")(proxy.proxy)
app.command("bench", context_settings=bench.bench_settings)(bench.bench)
app.command("serve")(transport.serve_command)
app.command("connect")(transport.connect_command)
app.command("token")(transport.token_command)


@app.command()
def version() -> None:
    """Print the lagless version."""
    typer.echo(__version__)


def main() -> None:
    """Run the CLI; a library error becomes one line on stderr and exit status 2."""
    try:
        app()
    except LaglessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
