"""The cost chart as a PNG, drawn with matplotlib's Agg backend.

matplotlib is imported here, inside `render_png`, and nowhere else: it costs tens of
megabytes and a fraction of a second to import, which the listeners (and the serve
process's memory target) must not pay. Only the job that draws a chart, and
`gpu-bot quote --chart`, ever load it. The object API (Figure + FigureCanvasAgg) is used,
not pyplot: no global figure state shared between the worker's threads.

The bot's jobs draw with `render_png_apart`: the same drawing in a child process
(`python -m bot.adapters.charts.png`, the chart as JSON on stdin, the PNG on stdout), so that
no long-lived process (serve with its in-process worker, a worker) keeps matplotlib's
~45 MB after drawing one chart. A chart is drawn once per submitted request: the child's
start (about 3 s, most of it importing matplotlib) is paid in a job, never in an ack.
"""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
import textwrap
import threading
from typing import TYPE_CHECKING, Any

from bot.domain.comparison import OptionKind
from bot.domain.cost_chart import BreakEven, CostChart, CostLine

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# One colour per option, the same in every chart.
COLOURS = {
    OptionKind.ON_DEMAND: "#1f77b4",
    OptionKind.SPOT: "#2ca02c",
    OptionKind.CAPACITY_BLOCK: "#d62728",
    OptionKind.TRAINING_PLAN: "#9467bd",
    OptionKind.ON_DEMAND_RESERVATION: "#8c564b",
}
CHILD_TIMEOUT_S = 60.0  # well inside a job's lease (bot/worker.py)


class ChartFailed(Exception):
    """The child process drew no PNG."""


# matplotlib's font cache and text layout are not documented as thread-safe.
_lock = threading.Lock()


def render_png(chart: CostChart) -> bytes:
    """`chart` drawn as PNG bytes (about 800x450 pixels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with _lock:
        figure = Figure(figsize=(8, 4.5), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.add_subplot()
        _axes(ax, chart)
        _lines(ax, chart)
        _marks(ax, chart)
        _labels(ax, chart)
        if chart.lines:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=8)
        out = io.BytesIO()
        figure.savefig(out, format="png")
    return out.getvalue()


def _axes(ax: Axes, chart: CostChart) -> None:
    """Title, axes in % utilisation and dollars, the grid."""
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    ax.set_title("\n".join(textwrap.wrap(chart.title, 90)), fontsize=10)
    ax.set_xlim(0, 100)
    ax.set_xlabel("expected utilisation")
    ax.set_ylabel("total cost")
    ax.xaxis.set_major_formatter(PercentFormatter(100))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"${v:,.0f}"))
    ax.grid(True, alpha=0.3)
    if chart.empty:
        ax.text(50, 0.5, "no option is possible for this request", ha="center")


def _lines(ax: Axes, chart: CostChart) -> None:
    """One line per option, the recommended one thicker, a reference one dotted grey."""
    for line in chart.lines:
        label = line.label + (" (recommended)" if line.recommended else "")
        if line.reference:
            label += " (a training plan's comparison)"
        ax.plot(
            [0, 100],
            [line.at_zero, line.at_full],
            label=label,
            color="grey" if line.reference else COLOURS.get(line.kind),
            linestyle=":" if line.reference else "-",
            linewidth=3.0 if line.recommended else 1.6,
        )
    ax.set_ylim(0, chart.top_usd)  # room above the dearest line for the labels


def _marks(ax: Axes, chart: CostChart) -> None:
    """The break-even points, and each option's cost at the expected utilisation."""
    for point in chart.break_evens:
        x = point.utilization * 100
        ax.plot([x], [point.usd], marker="o", color="black", markersize=5, zorder=5)
    expected = chart.expected_utilization * 100
    ax.axvline(expected, color="grey", linestyle="--", linewidth=1.2)
    for line, usd in chart.costs_at_expected():
        ax.plot([expected], [usd], marker="s", color=COLOURS.get(line.kind), markersize=5, zorder=6)


def _labels(ax: Axes, chart: CostChart) -> None:
    """The labels, placed by the chart so that none covers another (in axes fractions)."""
    for text in chart.labels():
        ax.text(
            text.x,
            text.y,
            text.text,
            transform=ax.transAxes,
            ha="left",
            va="bottom",
            fontsize=8,
            color="dimgrey"
            if text.muted
            else COLOURS.get(text.of, "black")
            if text.of
            else "black",
        )


def charts_installed() -> bool:
    """Whether matplotlib (the `charts` extra) is there to draw with."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def render_png_apart(chart: CostChart, timeout: float = CHILD_TIMEOUT_S) -> bytes:
    """`render_png(chart)`, drawn in a child process that exits afterwards."""
    argv = [sys.executable, "-m", "bot.adapters.charts.png"]
    try:
        # A fixed command line: this interpreter and this module; the chart goes on stdin.
        done = subprocess.run(  # noqa: S603
            argv,
            input=json.dumps(chart_json(chart)).encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ChartFailed(f"drawing the chart took over {timeout:g} s") from exc
    if done.returncode != 0 or not done.stdout.startswith(PNG_MAGIC):
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise ChartFailed(f"the chart process exited {done.returncode}: {lines[-1:]}")
    return done.stdout


def chart_json(chart: CostChart) -> dict[str, Any]:
    return dataclasses.asdict(chart)


def chart_from_json(data: dict[str, Any]) -> CostChart:
    lines = tuple(CostLine(**(x | {"kind": OptionKind(x["kind"])})) for x in data["lines"])
    points = tuple(
        BreakEven(
            **(b | {"reserved": OptionKind(b["reserved"]), "against": OptionKind(b["against"])})
        )
        for b in data["break_evens"]
    )
    return CostChart(data["title"], lines, points, data["expected_utilization"])


def main() -> None:
    chart = chart_from_json(json.loads(sys.stdin.buffer.read()))
    sys.stdout.buffer.write(render_png(chart))


if __name__ == "__main__":
    main()
