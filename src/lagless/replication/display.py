"""Remote objects shown through `lagless.smoothing` display models (issue 13 item 6).

A `Display` keeps one smoothing `Receiver` per replica (proxy role; owned objects are drawn from
their own state) of the classes it smooths, and turns every snapshot that updated a replica into
that model's update payload: the replicated position (the class's ``position_field``), and the
velocity and heading when the class has fields of the configured names, stamped with the
snapshot's server time. Each render frame asks `state` for where to draw the object.

Decisions: the smoothing payloads are the models' own codecs (spec 000 Abb. 3.13), built with the
public layouts (``INTERPOLATION_LAYOUT``, ``HERMITE_LAYOUT``, ``PHB_LAYOUT``, ``X4_LAYOUT``,
``dis_layout``), so a receiver sees exactly what it would see from its own sender, including the
codec's quantisation. The snapshot header's server time is milliseconds modulo 2^32, so
`Display.update` reduces the client's server-time estimate the same way (a 49.7-day period).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from lagless.errors import LocalProtocolError
from lagless.replication.fields import NumericField
from lagless.replication.objects import NetworkObject, Role
from lagless.replication.session import SnapshotReceived
from lagless.smoothing import (
    HERMITE_LAYOUT,
    INTERPOLATION_LAYOUT,
    PHB_LAYOUT,
    DisConfig,
    DisplayModel,
    DisplayState,
    KinematicState,
    Receiver,
    UpdateLayout,
    dis_layout,
)
from lagless.smoothing.x4 import X4_LAYOUT

__all__ = ["Display"]

TIME_PERIOD: Final = 2**32 / 1000.0  # seconds: the snapshot header's server time wraps here


def _layout(model: DisplayModel) -> UpdateLayout:
    fixed = {
        "interpolation": INTERPOLATION_LAYOUT,
        "hermite": HERMITE_LAYOUT,
        "phb": PHB_LAYOUT,
        "x4": X4_LAYOUT,
    }
    if model.name in fixed:
        return fixed[model.name]
    if isinstance(model.config, DisConfig):
        return dis_layout(model.config.order, time_compensation=model.config.time_compensation)
    raise LocalProtocolError(f"no replication layout for display model {model.name!r}")


class Display:
    """Smoothing display models for the replicas of a client world.

    Args:
        models: The display model of each class to smooth (e.g.
            ``{Ship: create_display_model("interpolation")}``); classes need a
            ``position_field``.
        velocity: Name of the velocity field, used when a class has it (m/s).
        heading: Name of the heading field, used when a class has it (rad).

    Raises:
        LocalProtocolError: a class without a position field, or a model without a layout.
    """

    def __init__(
        self,
        models: Mapping[type[NetworkObject], DisplayModel],
        *,
        velocity: str = "vel",
        heading: str = "heading",
    ) -> None:
        self._models = dict(models)
        self._layouts = {cls: _layout(model) for cls, model in self._models.items()}
        for cls in self._models:
            if cls.position_field is None:
                raise LocalProtocolError(f"{cls.__name__} has no position_field to display")
        self._velocity = velocity
        self._heading = heading
        self._receivers: dict[int, Receiver] = {}

    def update(self, event: SnapshotReceived, now: float, server_time_now: float) -> None:
        """Feed the replicas a snapshot updated to their receivers.

        Args:
            event: The snapshot event of the `ReplicationClient`.
            now: Local time of receipt (s).
            server_time_now: The client's estimate of the server's clock at ``now`` (s).
        """
        server_now = server_time_now % TIME_PERIOD
        for obj in event.updated:
            layout = self._layouts.get(type(obj))
            if layout is None or obj.role is not Role.PROXY or not obj.alive:
                continue
            receiver = self._receivers.get(obj.id)
            if receiver is None:
                receiver = self._receivers[obj.id] = self._models[type(obj)].create_receiver()
            receiver.process_update(
                layout.encode(0, self._kinematic(obj, event.server_time)), now, server_now
            )

    def state(self, obj: NetworkObject, now: float) -> DisplayState | None:
        """Where to draw ``obj`` in the frame at local ``now`` (None: not smoothed or no data)."""
        receiver = self._receivers.get(obj.id)
        return receiver.display(now) if receiver is not None else None

    def forget(self, ident: int) -> None:
        """Drop a destroyed replica's receiver."""
        self._receivers.pop(ident, None)

    def _kinematic(self, obj: NetworkObject, t: float) -> KinematicState:
        schema = obj.schema
        assert obj.position_field is not None
        x, y = getattr(obj, obj.position_field)[:2]
        vx = vy = heading = 0.0
        vel = schema.by_name.get(self._velocity)
        if isinstance(vel, NumericField) and vel.dims >= 2:
            vx, vy = getattr(obj, self._velocity)[:2]
        if isinstance(schema.by_name.get(self._heading), NumericField):
            heading = float(getattr(obj, self._heading))
        return KinematicState(t=t, x=x, y=y, vx=vx, vy=vy, heading=heading)
