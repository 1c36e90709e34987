"""The documentation site builds in strict mode, has a page per layer, and stands alone.

One strict build (about 10 s) is shared by the tests of this module; ``lagless docs`` builds the
same way (`lagless.cli.docs.build_site`).
"""

from __future__ import annotations

import ast
import contextlib
import html
import importlib
import inspect
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lagless.cli.docs import build_site, check_out, find_config
from lagless.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LAYERS = (
    "wire",
    "netsim",
    "io",
    "transport",
    "world",
    "smoothing",
    "interest",
    "gossip",
    "replication",
    "physics",
    "game",
    "demo",
    "lab",
    "testing",
)
# (layer, exported name): the first line of each one's docstring must be on the layer's page
KNOWN = (
    ("wire", "BitWriter"),
    ("wire", "quantize"),
    ("netsim", "run_demo"),
    ("io", "open_endpoint"),
    ("transport", "Server"),
    ("transport", "generate_connect_token"),
    ("world", "simulate"),
    ("smoothing", "create_display_model"),
    ("interest", "VfcPolicy"),
    ("gossip", "GossipPeer"),
    ("replication", "SnapshotEngine"),
    ("physics", "PhysicsServer"),
    ("game", "GameServer"),
    ("demo", "SimMatch"),
    ("lab", "ExperimentSpec"),
    ("testing", "check_sans_io"),
)
OTHER_PAGES = (
    "getting-started",
    "protocol/STANDARD",
    "protocol/wire",
    "protocol/silac",
    "design",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    index = build_site(find_config(), out, strict=True)  # mkdocs build --strict
    assert index == out / "index.html"
    assert index.is_file()
    return out


def _text(page: Path) -> str:
    """The page's visible text without tags and whitespace (markup moves spaces around)."""
    raw = page.read_text(encoding="utf-8")
    return "".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def _plain(docline: str) -> str:
    """A docstring line as `_text` shows it: no backticks, no whitespace."""
    return "".join(docline.replace("`", "").split())


@pytest.mark.parametrize("layer", LAYERS)
def test_every_layer_has_a_page_with_its_reference(site: Path, layer: str) -> None:
    page = site / "api" / f"{layer}.html"
    assert page.is_file(), f"no page for lagless.{layer}"
    anchors = set(re.findall(r'id="lagless\.[\w.]*?\.(\w+)"', page.read_text(encoding="utf-8")))
    module = importlib.import_module(f"lagless.{layer}")
    assert module.__all__, f"lagless.{layer} exports nothing"
    names = {name for name in module.__all__ if not inspect.ismodule(getattr(module, name))}
    missing = sorted(names - anchors)
    assert not missing, f"lagless.{layer} names without an entry on its page: {missing}"


def _source_docstring(obj: object) -> str:
    """The docstring of a class or function as its source has it.

    A compiled build (docs/compiled.md) keeps no docstrings at run time, while the site is
    built from the sources.
    """
    module = importlib.import_module(obj.__module__)  # type: ignore[attr-defined]
    source = Path(str(module.__file__)).parent / (module.__name__.rpartition(".")[2] + ".py")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == obj.__name__:  # type: ignore[attr-defined]
            return ast.get_docstring(node) or ""
    return ""


@pytest.mark.parametrize(("layer", "name"), KNOWN)
def test_known_docstrings_appear(site: Path, layer: str, name: str) -> None:
    obj = getattr(importlib.import_module(f"lagless.{layer}"), name)
    first = (inspect.getdoc(obj) or _source_docstring(obj) or "\n").splitlines()[0]
    assert first, f"lagless.{layer}.{name} has no docstring"
    assert _plain(first) in _text(site / "api" / f"{layer}.html")


@pytest.mark.parametrize("page", OTHER_PAGES)
def test_guides_and_protocol_documents_are_built(site: Path, page: str) -> None:
    assert (site / f"{page}.html").is_file()


def test_docs_send_no_reader_outside_the_repository() -> None:
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert "shared/" not in text, f"{page.relative_to(ROOT)} points into shared/"
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if re.match(r"[a-z]+://", target):
                continue
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(DOCS), f"{page.relative_to(ROOT)} links to {target}"
            assert resolved.exists(), f"{page.relative_to(ROOT)} links to missing {target}"


def _python_blocks(page: Path) -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S))


PAGES_WITH_CODE = sorted(
    (p for p in DOCS.rglob("*.md") if _python_blocks(p)), key=lambda p: str(p.relative_to(DOCS))
)


def test_the_guides_have_code() -> None:
    names = {str(p.relative_to(DOCS)) for p in PAGES_WITH_CODE}
    assert {"getting-started.md", "api/wire.md", "api/smoothing.md", "api/lab.md"} <= names


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(DOCS)))
def test_python_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    script = tmp_path / "page.py"
    script.write_text(_python_blocks(page), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "a docs example should print what it shows"


def test_out_refuses_a_directory_that_is_not_a_build(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="not empty and holds no earlier docs build"):
        check_out(tmp_path)
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
    with pytest.raises(ConfigError, match="is not a directory"):
        check_out(tmp_path / "notes.txt")
    check_out(tmp_path / "new")  # a new directory is fine
    earlier = tmp_path / "earlier"
    (earlier / "search").mkdir(parents=True)
    (earlier / "index.html").write_text("", encoding="utf-8")
    (earlier / "search" / "search_index.json").write_text("{}", encoding="utf-8")
    check_out(earlier)  # an earlier build is replaced


SERVE = """
import sys
import time
from pathlib import Path
from lagless.cli.docs import serve_site
sys.exit(serve_site(Path(sys.argv[1]), "127.0.0.1", 0, open_browser=False))
"""


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_serve_stops_on_the_first_signal(tmp_path: Path, signum: int, status: int) -> None:
    (tmp_path / "index.html").write_text("<p>lagless docs</p>", encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = re.search(r"http://\S+/", line)
        assert url, line
        with urllib.request.urlopen(url.group(0), timeout=5) as response:
            assert b"lagless docs" in response.read()
        server.send_signal(signum)
        assert server.wait(timeout=2) == status
        assert "stopped" in server.stdout.read()
    finally:
        server.kill()
        server.wait()


def _mkdocs_started(pid: int) -> bool:
    """Whether process ``pid`` has a child running mkdocs (Linux ``/proc``)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in children:
        with contextlib.suppress(OSError):
            if b"mkdocs" in Path(f"/proc/{child}/cmdline").read_bytes():
                return True
    return False


def test_build_stops_on_sigterm_with_its_child(tmp_path: Path) -> None:
    build = subprocess.Popen(
        [sys.executable, "-m", "lagless", "docs", "--out", str(tmp_path / "site"), "--no-open"],
        start_new_session=True,  # its own process group: the mkdocs child is found through it
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60.0
        while not _mkdocs_started(build.pid):  # imports may run other short-lived children
            assert time.monotonic() < deadline, "lagless docs started no mkdocs process"
            assert build.poll() is None, build.stderr.read() if build.stderr else ""
            time.sleep(0.05)
        build.send_signal(signal.SIGTERM)
        assert build.wait(timeout=2) == 143
        time.sleep(0.5)  # the child's exit is being reaped
        with pytest.raises(ProcessLookupError):
            os.killpg(build.pid, 0)  # no process of the group (the mkdocs child) is left
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(build.pid, signal.SIGKILL)
        build.wait()
