"""A simulated datagram network: hosts, ports, per-direction links, traffic accounting.

Implements STYLE §5 "netsim" (hosts and addresses, a replaceable ``route_packet`` hook in the
manner of trio's ``FakeNet``, named random streams per link) on top of ``Scheduler`` and ``Link``,
so spec 000 §3.7, spec 003 §6.3 and spec 004 §5.3.3 network conditions run in virtual time.

Decisions:
    * Links are per direction and keyed by host names. A pair without ``set_link`` uses the
      network's default link. Each pair's generator is ``stream(seed, "netsim.link.<src>-><dst>")``,
      created once and kept when the pair is reconfigured, so adding or reconfiguring one link
      never shifts another's draws (``test_network.py::test_links_do_not_shift_each_other``).
    * ``set_profile(a, b, profile)`` treats ``a`` as the client: ``profile.up`` carries a → b and
      ``profile.down`` carries b → a (``test_network.py::test_set_profile_directions``).
    * Reconfiguring a pair (``set_link``, ``set_default_link``) replaces its ``Link``: the queue and
      burst state restart; datagrams already in flight keep their arrival times.
    * A datagram to an unknown host or an unbound port travels its link, then is counted as
      undeliverable on arrival (``HostStats.undeliverable``, ``Network.unroutable``), like UDP
      without ICMP (``test_network.py::test_unbound_port_counts_undeliverable``).
    * Traffic counts payload bytes and, separately, on-wire bytes with the 28 IPv4+UDP header bytes
      (DESIGN.md "Units and numbers"), whatever the link's ``count_headers``. Sent counts are taken
      when a datagram is handed to the network, received counts when a copy is delivered
      (duplicates count twice) (``test_network.py::test_stats_count_headers``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.netsim.link import UDP_IPV4_HEADER, Fate, Link, LinkConfig
from lagless.netsim.scheduler import Scheduler
from lagless.netsim.seeds import stream
from lagless.netsim.trace import PacketRecord, TraceSink

if TYPE_CHECKING:
    from lagless.netsim.profiles import Profile

__all__ = ["EPHEMERAL_PORTS", "Datagram", "Host", "HostStats", "LinkStats", "Network", "Receiver"]

Receiver = Callable[[bytes, Address, float], None]
"""Called as ``receiver(data, src, now)`` when a datagram arrives at a bound port."""

EPHEMERAL_PORTS = range(49152, 65536)
"""Ports ``bind(0)`` picks from, lowest free first (IANA dynamic range, RFC 6335)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Datagram:
    """One datagram handed to the network."""

    seq: int
    """Network-wide send counter, from 0."""
    data: bytes
    """The UDP payload."""
    src: Address
    """Sender address."""
    dst: Address
    """Destination address."""
    sent_at: float
    """Virtual send time (s)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Traffic:
    datagrams_sent: int = 0
    """Datagrams sent."""
    payload_bytes_sent: int = 0
    """UDP payload bytes sent (bytes)."""
    wire_bytes_sent: int = 0
    """Bytes sent including 28 IPv4+UDP header bytes per datagram (bytes)."""
    datagrams_received: int = 0
    """Datagrams (copies) received."""
    payload_bytes_received: int = 0
    """UDP payload bytes received (bytes)."""
    wire_bytes_received: int = 0
    """Bytes received including 28 IPv4+UDP header bytes per datagram (bytes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostStats(_Traffic):
    """Traffic of one host (a frozen snapshot)."""

    undeliverable: int = 0
    """Datagrams that reached this host at a port nobody had bound."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkStats(_Traffic):
    """Traffic of one direction of one host pair, with drops by fate (a frozen snapshot)."""

    lost: int = 0
    """Datagrams dropped by Bernoulli loss."""
    burst_lost: int = 0
    """Datagrams dropped by Gilbert-Elliott burst loss."""
    queue_dropped: int = 0
    """Datagrams tail-dropped by the bandwidth queue."""
    mtu_dropped: int = 0
    """Datagrams over the MTU."""
    duplicated: int = 0
    """Datagrams that arrived twice."""


_FATE_FIELDS = {
    Fate.LOST: "lost",
    Fate.BURST_LOST: "burst_lost",
    Fate.QUEUE_DROPPED: "queue_dropped",
    Fate.MTU_DROPPED: "mtu_dropped",
}


class _Counters:
    """Per-host or per-link counters; the traffic fields are plain ints (one add per datagram)."""

    __slots__ = (
        "datagrams_received",
        "datagrams_sent",
        "extra",
        "payload_bytes_received",
        "payload_bytes_sent",
    )

    def __init__(self) -> None:
        self.datagrams_sent = 0
        self.payload_bytes_sent = 0
        self.datagrams_received = 0
        self.payload_bytes_received = 0
        self.extra: dict[str, int] = {}

    def add(self, name: str, amount: int = 1) -> None:
        self.extra[name] = self.extra.get(name, 0) + amount

    def sent(self, size: int) -> None:
        self.datagrams_sent += 1
        self.payload_bytes_sent += size

    def received(self, size: int) -> None:
        self.datagrams_received += 1
        self.payload_bytes_received += size

    @property
    def values(self) -> dict[str, int]:
        """The counters as ``HostStats``/``LinkStats`` fields; wire bytes add 28 per datagram."""
        out = {
            "datagrams_sent": self.datagrams_sent,
            "payload_bytes_sent": self.payload_bytes_sent,
            "wire_bytes_sent": self.payload_bytes_sent + UDP_IPV4_HEADER * self.datagrams_sent,
            "datagrams_received": self.datagrams_received,
            "payload_bytes_received": self.payload_bytes_received,
            "wire_bytes_received": self.payload_bytes_received
            + UDP_IPV4_HEADER * self.datagrams_received,
        }
        out.update(self.extra)
        return out


def _port(port: int) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise LocalProtocolError(f"port must be an int in [0, 65535], got {port!r}")
    return port


def _address(name: str, addr: Address) -> Address:
    if not (isinstance(addr, tuple) and len(addr) == 2 and isinstance(addr[0], str)):
        raise LocalProtocolError(f"{name} must be a (host, port) tuple, got {addr!r}")
    return (addr[0], _port(addr[1]))


class Host:
    """A named machine on a ``Network``; its addresses are ``(name, port)``.

    Create hosts with ``Network.add_host``.
    """

    def __init__(self, network: Network, name: str) -> None:
        """Attach a host called ``name`` to ``network`` (use ``Network.add_host``)."""
        self._network = network
        self._name = name
        self._receivers: dict[int, Receiver] = {}

    @property
    def name(self) -> str:
        """The host's name: the first element of its addresses."""
        return self._name

    @property
    def network(self) -> Network:
        """The network the host belongs to."""
        return self._network

    def bind(self, port: int, receiver: Receiver) -> Address:
        """Deliver datagrams that arrive at ``port`` to ``receiver(data, src, now)``.

        Args:
            port: Port in [1, 65535], or 0 for the lowest free port in ``EPHEMERAL_PORTS``.
            receiver: Called with the payload, the sender address and the virtual time (s).

        Returns:
            The bound address ``(name, port)``.

        Raises:
            LocalProtocolError: the port is out of range or already bound.
        """
        port = _port(port)
        if port == 0:
            port = next((p for p in EPHEMERAL_PORTS if p not in self._receivers), 0)
            if port == 0:
                raise LocalProtocolError(f"no free ephemeral port on host {self._name!r}")
        if port in self._receivers:
            raise LocalProtocolError(f"port {port} on host {self._name!r} is already bound")
        self._receivers[port] = receiver
        return (self._name, port)

    def unbind(self, port: int) -> None:
        """Stop delivering datagrams for ``port``; later arrivals count as undeliverable.

        Raises:
            LocalProtocolError: the port is not bound.
        """
        if self._receivers.pop(_port(port), None) is None:
            raise LocalProtocolError(f"port {port} on host {self._name!r} is not bound")

    def receiver(self, port: int) -> Receiver | None:
        """Return the receiver bound to ``port``, or ``None``."""
        return self._receivers.get(port)

    def send(self, data: bytes, src: Address, dst: Address) -> None:
        """Send ``data`` from this host's ``src`` address to ``dst`` (see ``Network.send``).

        Raises:
            LocalProtocolError: ``src`` is not an address of this host, or an address is malformed.
        """
        if not (isinstance(src, tuple) and src and src[0] == self._name):
            raise LocalProtocolError(f"src must be an address of host {self._name!r}, got {src!r}")
        self._network.send(data, src, dst)

    def __repr__(self) -> str:
        """Show the name and bound ports."""
        return f"<Host {self._name!r} ports={sorted(self._receivers)}>"


class Network:
    """Hosts joined by per-direction links, all running on one ``Scheduler``.

    Args:
        scheduler: The virtual clock and event queue.
        seed: Root seed of every link's named random stream.
        default_link: Impairments of every pair without ``set_link``.
        trace: Optional sink that receives a ``PacketRecord`` per datagram copy.

    Attributes:
        route_packet: Called with every ``Datagram`` handed to the network. It defaults to
            ``transmit`` (through the pair's link). Replace it to drop, delay or rewrite datagrams;
            call ``transmit(datagram)`` or ``deliver_at(datagram, when)`` to let one through.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        seed: int,
        default_link: LinkConfig | None = None,
        trace: TraceSink | None = None,
    ) -> None:
        """Create an empty network."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"seed must be a non-negative int, got {seed!r}")
        self._scheduler = scheduler
        self._seed = seed
        self._default = LinkConfig() if default_link is None else default_link
        if not isinstance(self._default, LinkConfig):
            raise ConfigError(f"default_link must be a LinkConfig, got {default_link!r}")
        self._trace = trace
        self._hosts: dict[str, Host] = {}
        self._configs: dict[tuple[str, str], LinkConfig] = {}
        self._links: dict[tuple[str, str], Link] = {}
        self._rngs: dict[tuple[str, str], np.random.Generator] = {}
        self._host_counters: dict[str, _Counters] = {}
        self._link_counters: dict[tuple[str, str], _Counters] = {}
        self._seq = 0
        self._unroutable = 0
        self.route_packet: Callable[[Datagram], None] = self.transmit

    @property
    def scheduler(self) -> Scheduler:
        """The scheduler the network runs on."""
        return self._scheduler

    @property
    def seed(self) -> int:
        """Root seed of the link streams."""
        return self._seed

    @property
    def default_link(self) -> LinkConfig:
        """Impairments of pairs without ``set_link``."""
        return self._default

    @property
    def unroutable(self) -> int:
        """Datagrams that arrived for a host name that does not exist."""
        return self._unroutable

    def add_host(self, name: str) -> Host:
        """Create a host called ``name``.

        Raises:
            LocalProtocolError: the name is empty, contains ``->`` or a comma, or is taken.
        """
        if not isinstance(name, str) or not name or "->" in name or "," in name:
            raise LocalProtocolError(
                f"host name must be a non-empty str without '->' or ',', got {name!r}"
            )
        if name in self._hosts:
            raise LocalProtocolError(f"host name {name!r} is already taken")
        host = Host(self, name)
        self._hosts[name] = host
        self._host_counters[name] = _Counters()
        return host

    def host(self, name: str) -> Host:
        """Return the host called ``name``.

        Raises:
            LocalProtocolError: no such host.
        """
        try:
            return self._hosts[name]
        except KeyError:
            raise LocalProtocolError(
                f"unknown host {name!r}; hosts: {', '.join(sorted(self._hosts)) or '(none)'}"
            ) from None

    def _name(self, host: Host | str) -> str:
        name = host.name if isinstance(host, Host) else host
        return self.host(name).name

    def set_link(self, src: Host | str, dst: Host | str, config: LinkConfig) -> None:
        """Set the impairments of the ``src`` → ``dst`` direction.

        Raises:
            LocalProtocolError: an unknown host.
            ConfigError: ``config`` is not a ``LinkConfig``.
        """
        if not isinstance(config, LinkConfig):
            raise ConfigError(f"config must be a LinkConfig, got {config!r}")
        key = (self._name(src), self._name(dst))
        self._configs[key] = config
        self._links.pop(key, None)

    def set_profile(self, a: Host | str, b: Host | str, profile: Profile) -> None:
        """Apply a named profile: ``profile.up`` for a → b, ``profile.down`` for b → a."""
        self.set_link(a, b, profile.up)
        self.set_link(b, a, profile.down)

    def set_default_link(self, config: LinkConfig) -> None:
        """Change the impairments of every pair without ``set_link``.

        Raises:
            ConfigError: ``config`` is not a ``LinkConfig``.
        """
        if not isinstance(config, LinkConfig):
            raise ConfigError(f"config must be a LinkConfig, got {config!r}")
        self._default = config
        for key in [k for k in self._links if k not in self._configs]:
            del self._links[key]

    def link_config(self, src: Host | str, dst: Host | str) -> LinkConfig:
        """Return the impairments of the ``src`` → ``dst`` direction."""
        return self._configs.get((self._name(src), self._name(dst)), self._default)

    def _link(self, key: tuple[str, str]) -> Link:
        link = self._links.get(key)
        if link is None:
            rng = self._rngs.get(key)
            if rng is None:
                rng = stream(self._seed, f"netsim.link.{key[0]}->{key[1]}")
                self._rngs[key] = rng
            link = Link(self._configs.get(key, self._default), rng=rng)
            self._links[key] = link
        return link

    def send(self, data: bytes, src: Address, dst: Address) -> None:
        """Hand a datagram from ``src`` to the network at the scheduler's ``now``.

        Args:
            data: The UDP payload.
            src: Sender address; its host must exist.
            dst: Destination address; an unknown host or port is counted on arrival.

        Raises:
            LocalProtocolError: an address is malformed or the sender host does not exist.
        """
        src = _address("src", src)
        dst = _address("dst", dst)
        self.host(src[0])
        payload = bytes(data)
        datagram = Datagram(
            seq=self._seq, data=payload, src=src, dst=dst, sent_at=self._scheduler.now
        )
        self._seq += 1
        self._host_counters[src[0]].sent(len(payload))
        self.route_packet(datagram)

    def transmit(self, datagram: Datagram) -> None:
        """Carry ``datagram`` through its pair's link (the default ``route_packet``)."""
        key = (datagram.src[0], datagram.dst[0])
        counters = self._link_counters.setdefault(key, _Counters())
        size = len(datagram.data)
        counters.sent(size)
        outcome = self._link(key).send(size, self._scheduler.now)
        if outcome.fate is not Fate.DELIVERED:
            counters.add(_FATE_FIELDS[outcome.fate])
            self._record(datagram, outcome.fate, None, duplicate=False)
            return
        if len(outcome.arrivals) > 1:
            counters.add("duplicated")
        for index, when in enumerate(outcome.arrivals):
            self._record(datagram, Fate.DELIVERED, when, duplicate=index > 0)
            self._scheduler.call_at(when, self._arrive, datagram, key)

    def deliver_at(self, datagram: Datagram, when: float) -> None:
        """Deliver ``datagram`` at virtual time ``when`` (s), bypassing every link.

        Raises:
            LocalProtocolError: ``when`` is before the scheduler's ``now``.
        """
        self._scheduler.call_at(when, self._arrive, datagram, None)

    def _record(
        self, datagram: Datagram, fate: Fate, arrived_at: float | None, *, duplicate: bool
    ) -> None:
        if self._trace is not None:
            self._trace.record(
                PacketRecord(
                    seq=datagram.seq,
                    src=datagram.src,
                    dst=datagram.dst,
                    size=len(datagram.data),
                    sent_at=datagram.sent_at,
                    fate=fate,
                    arrived_at=arrived_at,
                    duplicate=duplicate,
                )
            )

    def _arrive(self, datagram: Datagram, key: tuple[str, str] | None) -> None:
        size = len(datagram.data)
        if key is not None:
            self._link_counters[key].received(size)
        host = self._hosts.get(datagram.dst[0])
        if host is None:
            self._unroutable += 1
            return
        counters = self._host_counters[host.name]
        counters.received(size)
        receiver = host.receiver(datagram.dst[1])
        if receiver is None:
            counters.add("undeliverable")
            return
        receiver(datagram.data, datagram.src, self._scheduler.now)

    def stats(self, host: Host | str) -> HostStats:
        """Return a snapshot of ``host``'s traffic.

        Raises:
            LocalProtocolError: an unknown host.
        """
        return HostStats(**self._host_counters[self._name(host)].values)

    def link_stats(self, src: Host | str, dst: Host | str) -> LinkStats:
        """Return a snapshot of the ``src`` → ``dst`` link's traffic and drops.

        Raises:
            LocalProtocolError: an unknown host.
        """
        counters = self._link_counters.get((self._name(src), self._name(dst)), _Counters())
        return LinkStats(**counters.values)
