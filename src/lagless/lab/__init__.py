"""The lab: registered, seeded experiments that write results.json, CSV, PNG and report.md.

Implements DESIGN.md "Lab" and STYLE §5 "Lab follows the Gymnasium registry". An experiment is an
``ExperimentSpec`` registered by id; ``run(id, seed=..., quick=..., out=...)`` calls its entry point
with an ``ExperimentContext`` (named random streams, progress, recorders) and writes the output
directory described in ``lagless.lab.runner``. Built-in experiments live in
``lagless.lab.experiments`` and register on first lookup.
"""

from __future__ import annotations

from lagless.lab.plots import bar_plot as bar_plot
from lagless.lab.plots import line_plot as line_plot
from lagless.lab.plots import plots_available as plots_available
from lagless.lab.progress import NullProgress as NullProgress
from lagless.lab.progress import Progress as Progress
from lagless.lab.progress import RichProgress as RichProgress
from lagless.lab.registry import ExperimentSpec as ExperimentSpec
from lagless.lab.registry import Registry as Registry
from lagless.lab.registry import default_registry as default_registry
from lagless.lab.registry import make as make
from lagless.lab.registry import register as register
from lagless.lab.registry import registered as registered
from lagless.lab.report import Comparison as Comparison
from lagless.lab.report import compare as compare
from lagless.lab.report import render_report as render_report
from lagless.lab.result import Plot as Plot
from lagless.lab.result import Result as Result
from lagless.lab.runner import ExperimentContext as ExperimentContext
from lagless.lab.runner import output_files as output_files
from lagless.lab.runner import run as run
from lagless.lab.runner import write_outputs as write_outputs

__all__ = [
    "Comparison",
    "ExperimentContext",
    "ExperimentSpec",
    "NullProgress",
    "Plot",
    "Progress",
    "Registry",
    "Result",
    "RichProgress",
    "bar_plot",
    "compare",
    "default_registry",
    "line_plot",
    "make",
    "output_files",
    "plots_available",
    "register",
    "registered",
    "render_report",
    "run",
    "write_outputs",
]
