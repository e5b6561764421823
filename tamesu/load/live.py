"""The live view of a load test: active calls, calls/s, pass rate, percentiles, errors, workers.

On a terminal it is a rich table redrawn a few times a second (rich is imported only then);
anywhere else (CI logs, pipes) one plain line every few seconds, so a log shows the trend too.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["LiveView", "progress_line"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _faults(faults: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(faults.items(), key=lambda kv: -kv[1])) or "none"


def _workers(workers: dict[str, Any]) -> str:
    if not workers:
        return "-"
    if workers.get("placement") == "local":
        return "in-process"
    text = f"{workers.get('alive', '?')}/{workers.get('workers', '?')} alive"
    if workers.get("replaced"):
        text += f", {workers['replaced']} replaced"
    return text


def progress_line(snap: dict[str, Any]) -> str:
    """One line of the live numbers, for logs."""
    lat = snap["recent"]["turn_latency_ms"]
    ttfa = snap["recent"]["time_to_first_audio_ms"]
    parts = [
        f"t={snap['elapsed']:.0f}s",
        *([f"step {snap['level']} in flight"] if snap.get("level") is not None else []),
        f"active {snap['active']}",
        f"done {snap['finished']}",
        f"{snap['calls_per_s']:.1f} calls/s",
        f"pass {_pct(snap['pass_rate'])}",
        f"latency p50/p95/p99 {_ms(lat['p50'])}/{_ms(lat['p95'])}/{_ms(lat['p99'])} ms",
    ]
    if ttfa["p95"] is not None:
        parts.append(f"first audio p95 {_ms(ttfa['p95'])} ms")
    parts.append(f"errors: {_faults(snap['faults'])}")
    if snap.get("agent_faults"):
        parts.append(f"agent faults: {_faults(snap['agent_faults'])}")
    if snap["shed"]:
        parts.append(f"shed {snap['shed']}")
    if snap["workers"] and snap["workers"].get("placement") != "local":
        parts.append(f"workers {_workers(snap['workers'])}")
    return "  ".join(parts)


class LiveView:
    """Shows ``snapshot()`` until ``stop()``; ``live`` None picks a table on a terminal, lines elsewhere."""

    def __init__(
        self,
        snapshot: Callable[[], dict[str, Any]],
        *,
        title: str = "tamesu load",
        color: bool = False,
        live: bool | None = None,
        quiet: bool = False,
        stream: TextIO | None = None,
        line_every: float = 5.0,
    ) -> None:
        self.snapshot = snapshot
        self.title = title
        self.color = color
        self.stream = stream or sys.stdout
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) if live is None else live
        self.quiet = quiet
        self.line_every = line_every
        self._task: asyncio.Task[None] | None = None
        self._rich: Any = None

    def start(self) -> None:
        if self.quiet:
            return
        self._task = asyncio.create_task(self._table() if self.live else self._lines())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._rich is not None:
            self._rich.update(self.render(self.snapshot()))
            self._rich.stop()
            self._rich = None

    async def _lines(self) -> None:
        while True:
            await asyncio.sleep(self.line_every)
            self.stream.write(progress_line(self.snapshot()) + "\n")
            self.stream.flush()

    async def _table(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.stream, force_terminal=True, no_color=not self.color)
        self._rich = Live(
            self.render(self.snapshot()), console=console, refresh_per_second=4, transient=False
        )
        self._rich.start()
        while True:
            await asyncio.sleep(0.25)
            self._rich.update(self.render(self.snapshot()))

    def render(self, snap: dict[str, Any]) -> Any:
        """The rich table of one snapshot."""
        from rich.table import Table

        table = Table(title=f"{self.title}  t={snap['elapsed']:.0f}s", show_header=False, expand=False)
        table.add_column("what", style="bold")
        table.add_column("value")
        outcomes = snap["outcomes"]
        if snap.get("level") is not None:
            table.add_row("capacity search step", f"{snap['level']} calls in flight")
        table.add_row("active calls", str(snap["active"]))
        table.add_row("calls/s (10s)", f"{snap['calls_per_s']:.1f}")
        table.add_row(
            "finished",
            f"{snap['finished']}  passed {outcomes.get('passed', 0)}  failed {outcomes.get('failed', 0)}  "
            f"errors {outcomes.get('error', 0)}",
        )
        table.add_row("pass rate", _pct(snap["pass_rate"]))
        for name, label in (
            ("turn_latency_ms", "turn latency ms"),
            ("time_to_first_audio_ms", "first audio ms"),
        ):
            p = snap["recent"][name]
            table.add_row(f"{label} (30s)", f"p50 {_ms(p['p50'])}  p95 {_ms(p['p95'])}  p99 {_ms(p['p99'])}")
        table.add_row("errors by kind", _faults(snap["faults"]))
        table.add_row("agent faults", _faults(snap.get("agent_faults", {})))
        table.add_row("shed / retried", f"{snap['shed']} / {snap['retried']}")
        table.add_row("workers", _workers(snap["workers"]))
        return table
