"""The level interface: Tiled JSON maps (spec 000 §5.2.2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lagless.errors import ConfigError
from lagless.game import builtin_map, load_tiled


def _map(**changes: Any) -> dict[str, Any]:
    tiles = [0] * 12
    tiles[0:3] = [1, 1, 0]  # a run of two solid tiles in row 0
    tiles[7] = 5 | 0x80000000  # a flipped tile in row 1 is solid too
    data: dict[str, Any] = {
        "width": 4,
        "height": 3,
        "tilewidth": 16,
        "tileheight": 16,
        "orientation": "orthogonal",
        "properties": [{"name": "metres_per_tile", "type": "float", "value": 2.0}],
        "layers": [
            {"type": "tilelayer", "name": "walls", "data": tiles},
            {"type": "tilelayer", "name": "floor", "data": [1] * 12},
            {
                "type": "objectgroup",
                "name": "things",
                "objects": [
                    {"id": 1, "type": "spawn", "x": 8, "y": 8, "point": True},
                    {"id": 2, "class": "Spawn", "x": 32, "y": 16, "width": 16, "height": 16},
                    {
                        "id": 3,
                        "type": "wall",
                        "x": 16,
                        "y": 32,
                        "polygon": [{"x": 0, "y": 0}, {"x": 16, "y": 0}, {"x": 0, "y": 8}],
                    },
                ],
            },
        ],
    }
    data.update(changes)
    return data


def test_tiles_objects_and_scale() -> None:
    level = load_tiled(_map(), name="tiny")
    assert (level.width, level.height) == (8.0, 6.0)  # 4 x 3 tiles of 2 m
    assert level.spawns == ((1.0, 1.0), (5.0, 3.0))  # a point, a rectangle's centre (m)
    boxes = sorted(tuple(w.box.tolist()) for w in level.walls)
    assert boxes == [
        (0.0, 0.0, 4.0, 2.0),  # the merged run of two tiles
        (2.0, 4.0, 4.0, 5.0),  # the polygon object, 16 px = 2 m wide
        (6.0, 2.0, 8.0, 4.0),  # the flipped tile
    ]
    assert level.first_wall_hit((7.0, 7.0), (0.0, -1.0), 10.0) == pytest.approx(3.0)


def test_shipped_arena() -> None:
    level = builtin_map("arena")
    assert (level.width, level.height) == (24.0, 16.0)
    assert len(level.spawns) == 8
    for x, y in level.spawns:
        for wall in level.walls:
            x0, y0, x1, y1 = wall.box
            assert not (x0 < x < x1 and y0 < y < y1)


def test_map_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(_map()), encoding="utf-8")
    assert builtin_map(str(path)).name == "mine"
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        builtin_map(str(bad))
    with pytest.raises(ConfigError, match="not found"):
        builtin_map("no-such-map")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda m: m.update(infinite=True), "finite orthogonal"),
        (lambda m: m.update(width=0), "map.width"),
        (lambda m: m.update(tilewidth="16"), "map.tilewidth"),
        (lambda m: m["layers"][0].update(data=[1, 2]), "12 tile ids"),
        (lambda m: m["layers"][0].update(data="eJzz"), "12 tile ids"),
        (lambda m: m.update(layers={}), "map.layers"),
        (lambda m: m["layers"][2]["objects"][0].update(x="a"), "object 1.x"),
        (
            lambda m: m["layers"][2]["objects"][2].update(
                polygon=[{"x": 0, "y": 0}, {"x": 8, "y": 2}, {"x": 16, "y": 0}, {"x": 8, "y": 16}]
            ),
            "object 3",
        ),
        (lambda m: m["layers"][2]["objects"][2].update(rotation=45), "rotation"),
        (lambda m: m.update(properties=[{"name": "metres_per_tile", "value": -1}]), "metres"),
    ],
)
def test_bad_maps_name_the_field(mutate: Any, message: str) -> None:
    data = copy.deepcopy(_map())
    mutate(data)
    with pytest.raises(ConfigError, match=message):
        load_tiled(data)
