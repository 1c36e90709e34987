"""The level interface of the game server: Tiled JSON maps as walls and spawn points (metres).

Implements spec 000 §5.2.2 (a server that knows the level, loaded from a common map editor's
format, so it can collide entities with geometry, block shots and evaluate hits). The format is
Tiled's JSON map (``.tmj`` / ``.json``, orthogonal, not infinite):

* **tile layers**: every non-empty tile of a layer named ``walls`` or with the boolean custom
  property ``solid`` is a wall; horizontal runs of solid tiles are merged into one rectangle;
* **object layers**: an object whose ``type`` (Tiled < 1.9) or ``class`` (Tiled ≥ 1.9) is
  ``wall``, or any object of a layer named ``walls``, is a wall (rectangle or convex polygon,
  rotation 0); one whose type is ``spawn`` is a spawn point (a point object, or a rectangle's
  centre).

Decisions: world coordinates follow Tiled's axes (x right, y down) scaled by the map's float
property ``metres_per_tile`` (default 1 m per tile), so a pixel is ``metres_per_tile /
tilewidth`` metres. A malformed map raises `ConfigError` naming the field (a concave polygon
names its object id); tile flip flags are ignored (any non-zero gid is solid). A map without a
spawn object spawns at the centre of the map.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.game.geometry import ConvexPolygon, ray_cast

__all__ = ["MAX_MAP_TILES", "Level", "builtin_map", "load_tiled"]

MAX_MAP_TILES: Final = 4096  # tiles per side at most
_GID_MASK: Final = 0x0FFFFFFF  # Tiled's gid without the flip flags


class Level:
    """Walls and spawn points of one map, in metres.

    Args:
        width: Map width (m).
        height: Map height (m).
        walls: Static convex obstacles.
        spawns: Spawn points (m); empty means the map's centre.
        name: The map's name.
    """

    def __init__(
        self,
        width: float,
        height: float,
        walls: Sequence[ConvexPolygon] = (),
        spawns: Sequence[tuple[float, float]] = (),
        *,
        name: str = "level",
    ) -> None:
        if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
            raise ConfigError(f"level size must be finite and > 0 m, got {width} x {height}")
        self.width = float(width)
        self.height = float(height)
        self.walls: tuple[ConvexPolygon, ...] = tuple(walls)
        self.spawns: tuple[tuple[float, float], ...] = tuple(spawns) or ((width / 2, height / 2),)
        self.name = name
        self.wall_boxes: npt.NDArray[np.float64] = (
            np.array([w.box for w in self.walls]) if self.walls else np.zeros((0, 4))
        )

    def first_wall_hit(
        self, origin: tuple[float, float], direction: tuple[float, float], max_distance: float
    ) -> float | None:
        """Distance (m) along a ray to the first wall within ``max_distance``, or None."""
        return ray_cast(self.walls, origin, direction, max_distance)


def _number(data: Mapping[str, Any], key: str, where: str) -> float:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}.{key} must be a finite number, got {value!r}")
    return float(value)


def _properties(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    raw = data.get("properties", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{where}.properties must be a list, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    for prop in raw:
        if not isinstance(prop, Mapping) or not isinstance(prop.get("name"), str):
            raise ConfigError(f"{where}.properties entries need a 'name', got {prop!r}")
        out[prop["name"]] = prop.get("value")
    return out


def _tile_walls(
    layer: Mapping[str, Any], columns: int, rows: int, tw: float, th: float
) -> list[ConvexPolygon]:
    where = f"layer {layer.get('name')!r}"
    data = layer.get("data")
    if not isinstance(data, list) or len(data) != columns * rows:
        raise ConfigError(f"{where}.data must be a list of {columns * rows} tile ids")
    if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in data):
        raise ConfigError(f"{where}.data must hold non-negative integer tile ids (no base64)")
    solid = (np.array(data, dtype=np.int64) & _GID_MASK).reshape(rows, columns) != 0
    walls = []
    for row in range(rows):
        line = solid[row]
        col = 0
        while col < columns:
            if not line[col]:
                col += 1
                continue
            start = col
            while col < columns and line[col]:
                col += 1
            walls.append(ConvexPolygon.rectangle(start * tw, row * th, (col - start) * tw, th))
    return walls


def _object_wall(obj: Mapping[str, Any], scale: float, where: str) -> ConvexPolygon:
    x, y = _number(obj, "x", where) * scale, _number(obj, "y", where) * scale
    if _number(obj, "rotation", where) != 0.0:
        raise ConfigError(f"{where}.rotation must be 0 for a wall")
    points = obj.get("polygon")
    try:
        if points is not None:
            if not isinstance(points, list):
                raise ConfigError(f"{where}.polygon must be a list of points")
            vertices = [
                (x + _number(p, "x", where) * scale, y + _number(p, "y", where) * scale)
                for p in points
                if isinstance(p, Mapping)
            ]
            return ConvexPolygon(vertices)
        width, height = _number(obj, "width", where), _number(obj, "height", where)
        return ConvexPolygon.rectangle(x, y, width * scale, height * scale)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _kind(obj: Mapping[str, Any]) -> str:
    kind = obj.get("class") or obj.get("type") or ""
    return kind.lower() if isinstance(kind, str) else ""


def load_tiled(data: Mapping[str, Any], *, name: str = "map") -> Level:
    """Build a `Level` from a parsed Tiled JSON map (see the module docstring for the rules).

    Raises:
        ConfigError: the map is not an orthogonal, finite Tiled map with valid layers.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"a Tiled map must be a JSON object, got {type(data).__name__}")
    if data.get("orientation", "orthogonal") != "orthogonal" or data.get("infinite", False):
        raise ConfigError("only finite orthogonal Tiled maps are supported")
    sizes = {k: data.get(k) for k in ("width", "height", "tilewidth", "tileheight")}
    for key, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_MAP_TILES:
            raise ConfigError(
                f"map.{key} must be an integer in [1, {MAX_MAP_TILES}], got {value!r}"
            )
    columns, rows = int(data["width"]), int(data["height"])
    metres_per_tile = _properties(data, "map").get("metres_per_tile", 1.0)
    if not isinstance(metres_per_tile, int | float) or not 0 < metres_per_tile < 1e4:
        raise ConfigError(f"map property metres_per_tile must be > 0, got {metres_per_tile!r}")
    scale = float(metres_per_tile) / int(data["tilewidth"])  # metres per pixel
    tw = float(metres_per_tile)
    th = int(data["tileheight"]) * scale
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise ConfigError("map.layers must be a list")
    walls: list[ConvexPolygon] = []
    spawns: list[tuple[float, float]] = []
    for layer in layers:
        if not isinstance(layer, Mapping):
            raise ConfigError(f"map.layers entries must be objects, got {layer!r}")
        layer_name = str(layer.get("name", ""))
        where = f"layer {layer_name!r}"
        kind = layer.get("type")
        if kind == "tilelayer":
            if layer_name.lower() == "walls" or _properties(layer, where).get("solid") is True:
                walls.extend(_tile_walls(layer, columns, rows, tw, th))
        elif kind == "objectgroup":
            objects = layer.get("objects", [])
            if not isinstance(objects, list):
                raise ConfigError(f"{where}.objects must be a list")
            for obj in objects:
                if not isinstance(obj, Mapping):
                    raise ConfigError(f"{where}.objects entries must be objects")
                where_obj = f"{where} object {obj.get('id')}"
                if _kind(obj) == "spawn":
                    x, y = _number(obj, "x", where_obj), _number(obj, "y", where_obj)
                    w, h = _number(obj, "width", where_obj), _number(obj, "height", where_obj)
                    spawns.append(((x + w / 2) * scale, (y + h / 2) * scale))
                elif _kind(obj) == "wall" or layer_name.lower() == "walls":
                    walls.append(_object_wall(obj, scale, where_obj))
    return Level(columns * tw, rows * th, walls, spawns, name=name)


def builtin_map(name: str = "arena") -> Level:
    """Load a map shipped with lagless (``lagless/game/maps/<name>.json``) or a file path.

    Raises:
        ConfigError: no such map, unreadable JSON, or an invalid map.
    """
    path = Path(name)
    try:
        if path.suffix == ".json" and path.exists():
            text = path.read_text(encoding="utf-8")
        else:
            text = resources.files("lagless.game").joinpath(f"maps/{name}.json").read_text("utf-8")
    except (OSError, ValueError):
        raise ConfigError(f"map {name!r} not found (shipped maps: arena)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"map {name!r} is not valid JSON: {exc}") from None
    return load_tiled(data, name=path.stem)
