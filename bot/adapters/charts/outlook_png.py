"""The outlook chart as a PNG: the earliest lead seen each day (days ahead) above, the
lowest and median price per instance-hour below, AWS's price changes marked. matplotlib
is imported inside `render_outlook_png` only, as for the cost chart (png.py); the bot's
jobs draw it in a child process (`render_outlook_apart`)."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from datetime import date

from bot.adapters.charts.png import CHILD_TIMEOUT_S, PNG_MAGIC, ChartFailed, _lock
from bot.domain.outlook import OutlookChart


def render_outlook_png(chart: OutlookChart) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with _lock:
        figure = Figure(figsize=(8, 5.5), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        lead_ax, price_ax = figure.subplots(2, 1, sharex=True)
        figure.suptitle(f"{chart.title}\n({chart.note})", fontsize=10)
        days = [date.fromisoformat(d) for d, _ in chart.lead_days]
        lead_ax.plot(days, [n for _, n in chart.lead_days], "o", color="#d62728", markersize=4)
        lead_ax.set_ylabel("earliest start seen\n(days ahead)")
        lead_ax.set_ylim(bottom=0)
        lead_ax.grid(True, alpha=0.3)
        if not chart.lead_days:
            lead_ax.text(0.5, 0.5, "nothing seen yet", ha="center", transform=lead_ax.transAxes)
        price_days = [date.fromisoformat(d) for d, _, _ in chart.prices]
        price_ax.step(price_days, [lo for _, lo, _ in chart.prices], where="post", label="lowest")
        price_ax.plot(price_days, [m for _, _, m in chart.prices], ":", label="median")
        for changed in chart.changes:
            price_ax.axvline(date.fromisoformat(changed), color="grey", linestyle="--", lw=1)
        price_ax.set_ylabel("$ per instance-hour")
        price_ax.grid(True, alpha=0.3)
        if chart.prices:
            price_ax.legend(fontsize=8, loc="best")
        figure.autofmt_xdate()
        out = io.BytesIO()
        figure.savefig(out, format="png")
    return out.getvalue()


def render_outlook_apart(chart: OutlookChart, timeout: float = CHILD_TIMEOUT_S) -> bytes:
    """`render_outlook_png(chart)` in a child process that exits afterwards."""
    argv = [sys.executable, "-m", "bot.adapters.charts.outlook_png"]
    try:
        # A fixed command line: this interpreter and this module; the chart goes on stdin.
        done = subprocess.run(  # noqa: S603
            argv,
            input=json.dumps(dataclasses.asdict(chart)).encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ChartFailed(f"drawing the chart took over {timeout:g} s") from exc
    if done.returncode != 0 or not done.stdout.startswith(PNG_MAGIC):
        raise ChartFailed(f"the outlook chart process exited {done.returncode}")
    return done.stdout


def main() -> None:
    data = json.loads(sys.stdin.buffer.read())
    chart = OutlookChart(
        title=data["title"],
        lead_days=tuple((d, n) for d, n in data["lead_days"]),
        prices=tuple((d, lo, m) for d, lo, m in data["prices"]),
        changes=tuple(data["changes"]),
        note=data["note"],
    )
    sys.stdout.buffer.write(render_outlook_png(chart))


if __name__ == "__main__":
    main()
