"""PhysicsServer and PhysicsClient as sans-I/O objects over the simulator and real UDP."""

from __future__ import annotations

import random
import time

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.io import PollEndpoint, SimEndpoint
from lagless.netsim import Network, Scheduler
from lagless.physics import (
    CarJoined,
    CarLeft,
    ClientConfig,
    InputEvent,
    InputRecording,
    Keys,
    PhysicsClient,
    PhysicsParams,
    PhysicsServer,
    ServerConfig,
    SnapshotFormat,
    SnapshotTiming,
    Welcomed,
    encode_message,
)
from lagless.testing import check_sans_io
from lagless.transport import (
    RELIABLE,
    UNRELIABLE,
    Client,
    NetcodeClientConfig,
    NetcodeServerConfig,
    Server,
)

PROTOCOL = 0x5004


def make_server(params: PhysicsParams, address: tuple[str, int], start: float) -> PhysicsServer:
    return PhysicsServer(
        transport=Server(
            config=NetcodeServerConfig(protocol_id=PROTOCOL, public_address=address, insecure=True),
            random_bytes=random.Random(1).randbytes,
        ),
        params=params,
        config=ServerConfig(log_rate=50.0),
        rng=random.Random(2),
        start=start,
    )


def make_client(
    params: PhysicsParams, *, predict: bool = False, replay: InputRecording | None = None
) -> PhysicsClient:
    return PhysicsClient(
        transport=Client(config=NetcodeClientConfig(insecure=True)),
        params=params,
        config=ClientConfig(predict=predict, log_rate=50.0),
        rng=random.Random(3),
        replay=replay,
    )


class Sim:
    """A server and clients on the simulator."""

    def __init__(self, params: PhysicsParams) -> None:
        self.scheduler = Scheduler(start=0.0)
        self.network = Network(self.scheduler, seed=7)
        self.network.add_host("server")
        self.server = make_server(params, ("server", 9000), start=0.0)
        self.server_events: list[object] = []
        self.clients = 0
        SimEndpoint(
            self.server, self.network.host("server"), 9000, on_event=self.server_events.append
        )

    def add(self, client: PhysicsClient) -> SimEndpoint[PhysicsClient]:
        self.clients += 1
        endpoint = SimEndpoint(client, self.network.add_host(f"c{id(client)}"))
        client.transport.connect_insecure(
            server_addresses=[("server", 9000)],
            protocol_id=PROTOCOL,
            client_id=self.clients,
            now=self.scheduler.now,
        )
        endpoint.flush()
        return endpoint

    def run(self, until: float) -> None:
        self.scheduler.run(until=until)


L80 = PhysicsParams(network_simulated_latency=0.08, network_simulated_variance=0.04)


def test_one_input_event_per_change_and_20_hz_snapshots() -> None:
    sim = Sim(L80)
    client = make_client(L80)
    endpoint = sim.add(client)
    events: list[object] = []
    sim.run(1.0)
    while (e := client.next_event()) is not None:
        events.append(e)
    assert events == [Welcomed(0)]
    assert sim.server_events == [CarJoined(1, 0)]
    snaps = client.snapshots
    for keys in (Keys.UP, Keys.UP, Keys.UP | Keys.LEFT, Keys.UP | Keys.LEFT, Keys.NONE):
        endpoint.poke(lambda c, k=keys: c.set_keys(k, sim.scheduler.now))
        sim.run(sim.scheduler.now + 0.5)
    sim.run(sim.scheduler.now + 0.5)
    assert sim.server.inputs_applied == 3  # five calls, three changes
    assert sim.server.snapshots_sent == pytest.approx(20 * sim.scheduler.now, abs=1)
    assert client.snapshots - snaps == pytest.approx(20 * 3.0, abs=2)
    assert sim.server.world.state(0).keys == Keys.NONE
    rtt = client.transport.connection_statistics().rtt
    assert 0.14 < rtt < 0.25  # receive delay at both ends, about 2 x 80 ms (no ack hold in it)


def test_logs_pair_at_50_hz_and_dr_follows_the_truth() -> None:
    sim = Sim(L80)
    client = make_client(
        L80, replay=InputRecording(events=((0.0, Keys.UP), (2.0, Keys.UP | Keys.LEFT)))
    )
    sim.add(client)
    sim.run(5.0)
    truth = {round(s.t * 50): s for s in sim.server.path_log.for_car(0)}
    shown = client.path_logs["main"].for_car(0)
    instants = sorted(truth)
    assert instants == list(range(instants[0], instants[-1] + 1))  # every 20 ms, none twice
    assert instants[-1] == 250
    assert len(instants) > 230
    assert len(shown) > 200
    later = [s for s in shown if s.t > 2.0]
    errors = [
        abs(s.x - truth[round(s.t * 50)].x) + abs(s.y - truth[round(s.t * 50)].y) for s in later
    ]
    speed = sim.server.world.state(0).speed
    assert max(errors) < 0.15 * 0.25 * speed + 0.5  # 0.15 x RTT behind, DR bridges the rest
    with pytest.raises(LocalProtocolError, match="replayed"):
        client.set_keys(Keys.DOWN, sim.scheduler.now)


def test_prediction_leads_and_records() -> None:
    params = PhysicsParams(
        network_simulated_latency=0.08,
        network_simulated_variance=0.04,
        user_controls_file="drive.csv",
        write_user_controls=True,
    )
    sim = Sim(params)
    client = make_client(params, predict=True)
    endpoint = sim.add(client)
    sim.run(1.0)
    endpoint.poke(lambda c: c.set_keys(Keys.UP, sim.scheduler.now))
    sim.run(1.05)
    mine = client.predicted(sim.scheduler.now)
    assert mine is not None
    assert mine.vx > 0.2
    assert sim.server.world.state(0).vx == 0.0
    sim.run(3.0)
    assert client.corrections
    assert max(client.corrections) < 2.0
    assert [k for _, k in client.recorded().events] == [Keys.UP]


def test_garbage_is_counted_not_raised() -> None:
    sim = Sim(PhysicsParams())
    client = make_client(PhysicsParams())
    endpoint = sim.add(client)
    sim.run(0.5)
    fmt = SnapshotFormat()
    endpoint.poke(lambda c: c.transport.send(RELIABLE, b"\xff\xff"))
    endpoint.poke(
        lambda c: c.transport.send(
            UNRELIABLE, encode_message(InputEvent(seq=1, keys=Keys.UP, t=0.0), fmt)
        )
    )
    sim.server.receive_datagram(b"\x00garbage", ("c", 1), sim.scheduler.now)
    sim.run(1.0)
    assert sim.server.dropped_messages == 2
    assert sim.server.world.state(0).keys == Keys.NONE


def test_sans_io_contract() -> None:
    check_sans_io(lambda now: make_server(L80, ("server", 9000), start=now), rng=random.Random(5))
    check_sans_io(lambda now: make_client(L80), rng=random.Random(6))


def test_real_udp_on_loopback() -> None:
    start = time.monotonic()
    server = make_server(PhysicsParams(), ("127.0.0.1", 0), start=start)
    client = make_client(PhysicsParams())
    with PollEndpoint(server) as server_ep, PollEndpoint(client) as client_ep:
        client.transport.connect_insecure(
            server_addresses=[server_ep.address],
            protocol_id=PROTOCOL,
            client_id=1,
            now=time.monotonic(),
        )
        client_ep.flush()
        pressed = False
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and client.snapshots < 30:
            server_ep.pump()
            client_ep.pump()
            if client.car_id is not None and not pressed:
                client.set_keys(Keys.UP, time.monotonic())
                client_ep.flush()
                pressed = True
            client_ep.wait(0.002)
        shown = client.display(time.monotonic())
    assert client.snapshots >= 30
    assert server.inputs_applied == 1
    assert shown[0].x > 0.1


def test_a_client_leaving_never_stops_the_others() -> None:
    sim = Sim(PhysicsParams())
    stay, leave = make_client(PhysicsParams()), make_client(PhysicsParams())
    sim.add(stay)
    sim.run(0.3)
    leaving = sim.add(leave)
    sim.run(1.0)
    assert sim.server.cars == {1: 0, 2: 1}
    assert set(stay.display(sim.scheduler.now)) == {0, 1}
    leaving.poke(lambda c: c.transport.disconnect())
    leaving.close()
    before = stay.snapshots
    sim.run(2.0)
    assert sim.server.cars == {1: 0}
    assert sim.server_events[-1] == CarLeft(2, 1)
    assert sim.server.world.car_ids == [0]
    assert stay.snapshots - before == pytest.approx(20, abs=1)  # the match goes on at 20 Hz
    assert set(stay.display(sim.scheduler.now)) == {0}  # the gone car is no longer shown


def test_client_config_validation() -> None:
    with pytest.raises(ConfigError, match="tick_rate"):
        ClientConfig(tick_rate=0.0)
    with pytest.raises(ConfigError, match="log_rate"):
        ServerConfig(log_rate=-1.0)
    with pytest.raises(ConfigError, match="snapshot_rate must be <= tick_rate"):
        ServerConfig(tick_rate=10.0, snapshot_rate=20.0)


def test_no_log_by_default() -> None:
    server = PhysicsServer(
        transport=Server(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL, public_address=("server", 9000), insecure=True
            ),
            random_bytes=random.Random(1).randbytes,
        ),
        params=PhysicsParams(),
        config=ServerConfig(),
        rng=random.Random(2),
        start=0.0,
    )
    sim = Sim(PhysicsParams())
    sim.server = server
    network = Network(Scheduler(start=0.0), seed=1)
    SimEndpoint(server, network.add_host("s"), 9000)
    network.scheduler.run(until=1.0)
    assert server.world.time == pytest.approx(1.0)
    assert server.path_log.samples == []
    assert ClientConfig().log_rate == 0.0


def test_input_delay_is_the_uplink_latency() -> None:
    sim = Sim(L80)
    recording = InputRecording(events=tuple((0.2 * k, Keys(1 + k % 2)) for k in range(20)))
    client = make_client(L80, replay=recording)
    sim.add(client)
    sim.run(6.0)
    assert sim.server.inputs_applied == 20
    assert sim.server.inputs_timed == 20  # the replay waited for the clock: every stamp is valid
    delay = sim.server.input_delay_mean
    assert delay is not None
    assert 0.06 <= delay <= 0.11  # receive delay uniform in [60, 100] ms, plus a tick at most
    assert sim.server.input_delay_max <= 0.12


def test_snapshot_timing_sums_the_age_and_the_rtts() -> None:
    """``PhysicsClient.timing``: snapshots counted once the clock is synchronised; their mean
    age on arrival is the downlink receive delay (L80: uniform in [60, 100] ms) plus the clock
    error, and the mean RTTs are those the views read for ``k x RTT``."""
    sim = Sim(L80)
    client = make_client(L80)
    sim.add(client)
    sim.run(4.0)
    timing = client.timing
    assert 40 <= timing.count <= client.snapshots
    age = timing.mean(timing.age_total)
    rtt, rtt_min = timing.mean(timing.rtt_total), timing.mean(timing.rtt_min_total)
    assert age is not None
    assert rtt is not None
    assert rtt_min is not None
    assert 0.07 <= age <= 0.095
    assert 0.12 <= rtt_min <= rtt <= 0.2


def test_snapshot_timing_mean() -> None:
    timing = SnapshotTiming()
    assert timing.mean(timing.age_total) is None
    timing.add(0.08, 0.16, 0.12)
    timing.add(0.1, 0.2, 0.14)
    assert timing.count == 2
    assert timing.mean(timing.age_total) == pytest.approx(0.09)
    assert timing.mean(timing.rtt_min_total) == pytest.approx(0.13)
