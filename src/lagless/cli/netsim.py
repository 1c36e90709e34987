"""``lagless netsim``: list the simulator's network profiles and measure one in a demo run.

Thin commands over ``lagless.netsim`` (STYLE §5 "CLI"): they parse, call ``PROFILES`` or
``run_demo`` and print. Milliseconds and Mbit/s appear only here, at the edge (DESIGN.md "Units").
A bad profile name prints one ``error: ...`` line on stderr and exits with status 2, the same as
the root app does for any ``LaglessError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Literal

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from lagless.cli.common import fail, make_app
from lagless.errors import ConfigError
from lagless.netsim import PROFILES, LinkConfig, Profile, run_demo

app = make_app(
    "Deterministic network simulator: list link profiles, measure one in simulated time."
)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000.0:.4g}"


def _jitter(config: LinkConfig) -> str:
    jitter = config.jitter
    if jitter.kind == "none":
        return "-"
    text = f"{jitter.kind[0].upper()} {_ms(jitter.amount)}"
    return text + " fifo" if jitter.preserve_order else text


def _percent(fraction: float) -> str:
    return f"{fraction * 100.0:.3g} %"


def _rate(config: LinkConfig) -> str:
    return "-" if config.bandwidth is None else f"{config.bandwidth * 8.0 / 1e6:g}"


def _pair(profile: Profile, fmt: Callable[[LinkConfig], str]) -> str:
    up, down = fmt(profile.up), fmt(profile.down)
    return up if up == down else f"{up} / {down}"


@app.command("profiles")
def profiles() -> None:
    """List every built-in profile: delays in ms, rates in Mbit/s, "up / down" if they differ."""
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        title="lagless netsim profiles",
        caption="up / down where they differ; jitter U = uniform width, "
        "N = half-normal sigma, P = Pareto mean",
    )
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("RTT ms\nmin/mean", justify="right", no_wrap=True)
    table.add_column("1-way\nms", justify="right", no_wrap=True)
    table.add_column("jitter\nms", justify="right", no_wrap=True)
    table.add_column("loss", justify="right", no_wrap=True)
    table.add_column("burst", justify="right", no_wrap=True)
    table.add_column("Mbit/s", justify="right", no_wrap=True)
    table.add_column("src", justify="right", no_wrap=True)
    sources: list[str] = []
    for profile in PROFILES.values():
        if profile.source not in sources:
            sources.append(profile.source)
        table.add_row(
            profile.name,
            f"{_ms(profile.rtt)}/{_ms(profile.rtt_mean)}",
            _pair(profile, lambda c: _ms(c.latency)),
            _pair(profile, _jitter),
            _pair(profile, lambda c: _percent(c.expected_loss)),
            _pair(profile, lambda c: "-" if c.burst is None else f"{c.burst.mean_burst:g}"),
            _pair(profile, _rate),
            f"[{sources.index(profile.source) + 1}]",
        )
    console = Console()
    console.print(table)
    for number, source in enumerate(sources, start=1):
        console.print(f"[{number}] {source}", markup=False, highlight=False)


@app.command("demo")
def demo(
    profile: Annotated[str, typer.Option("--profile", help="profile name, see 'profiles'")],
    packets: Annotated[int, typer.Option("--count", "-n", help="datagrams to send", min=1)] = 1000,
    seed: Annotated[int, typer.Option(help="root seed of the simulated network", min=0)] = 0,
    size: Annotated[int, typer.Option(help="payload bytes per datagram", min=4)] = 100,
    rate: Annotated[float, typer.Option(help="datagrams per second", min=0.001)] = 50.0,
    direction: Annotated[str, typer.Option(help="'down' (server to client) or 'up'")] = "down",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Send a paced stream across one profile's link and print measured beside configured values."""
    try:
        if direction not in ("up", "down"):
            raise ConfigError(f"--direction must be 'up' or 'down', got {direction!r}")
        chosen: Literal["up", "down"] = "up" if direction == "up" else "down"
        result = run_demo(
            profile, packets=packets, seed=seed, size=size, rate=rate, direction=chosen
        )
    except ConfigError as exc:
        fail(str(exc))
    values = result.as_dict()
    if as_json:
        typer.echo(json.dumps(values, sort_keys=True))
        return
    table = Table(
        title=f"netsim demo: {result.profile} ({result.direction}), {result.packets_sent} "
        f"datagrams of {size} bytes at {rate:g}/s, seed {result.seed}"
    )
    table.add_column("metric")
    table.add_column("measured", justify="right", no_wrap=True)
    table.add_column("configured", justify="right", no_wrap=True)

    def fmt(value: object) -> str:
        return "-" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)

    table.add_row("loss", fmt(result.loss), fmt(result.configured_loss))
    table.add_row("burst mean", fmt(result.burst_mean), "")
    table.add_row(
        "latency ms min", fmt(result.latency_ms_min), fmt(result.configured_latency_ms_min)
    )
    table.add_row(
        "latency ms mean", fmt(result.latency_ms_mean), fmt(result.configured_latency_ms_mean)
    )
    table.add_row("latency ms p50", fmt(result.latency_ms_p50), "")
    table.add_row("latency ms p99", fmt(result.latency_ms_p99), "")
    table.add_row("latency ms max", fmt(result.latency_ms_max), "")
    table.add_row("throughput kB/s", fmt(result.throughput_kBps), "")
    table.add_row("bandwidth kB/s", "", fmt(result.configured_bandwidth_kBps))
    table.add_row("received", fmt(result.packets_received), fmt(result.packets_sent))
    table.add_row("duplicates", fmt(result.duplicates), "")
    table.add_row("reordered", fmt(result.reordered), "")
    Console().print(table)
