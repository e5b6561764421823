"""The console: a live progress bar while runs go, then a summary a person can act on.

Rich is imported only when a reporter is made, so ``import tamesu`` stays light. On a terminal
there is a progress bar (done/total, passed, failed, errors, elapsed, ETA); anywhere else (CI logs,
pipes) one plain line per finished run. The summary is a table per test, then for each failure
the failing assertion with expected vs seen and the last turns of the conversation, then each
error's message, then the red-team findings by severity, then one line of totals. Every string
printed passes through the redactor, then ``printable``: what an agent said never reaches the
terminal as control sequences. Off a terminal no line of text is wrapped (a log or a test reads
a note, an error or a path whole); only the table is laid out at 120 columns.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tamesu.costs import cost_summary
from tamesu.reports.cost import cost_line, usd
from tamesu.reports.junit import assertion_line
from tamesu.reports.words import VERDICT_WORD
from tamesu.runner.invocation import Reporter
from tamesu.untrusted import printable

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Turn
    from tamesu.runner.invocation import InvocationResult
    from tamesu.runner.verdict import TestVerdict
    from tamesu.secrets import Redactor

__all__ = ["ConsoleReporter", "final_line"]

LAST_TURNS = 3
_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "yellow",
    "quarantined": "magenta",
    "inconclusive": "cyan",
    "not_run": "dim",
}
_MARK = VERDICT_WORD
_CAVEAT_STYLE = "blue"
"""A verdict that holds a skipped or inconclusive check ("PASS, 1 check skipped")."""
_SGR = {"green": "32", "red": "31", "yellow": "33", "magenta": "35", "cyan": "36", "blue": "34", "dim": "2"}
"""The ANSI colours of the progress lines, which are written without rich (see ``_line``)."""


def final_line(result: InvocationResult) -> str:
    """``3 passed, 1 failed, 0 errors (+1 quarantined, 1 inconclusive); 2 checks skipped``."""
    c = result.counts
    text = f"{c['passed']} passed, {c['failed']} failed, {c['error']} error{'s' * (c['error'] != 1)}"
    extra = [f"{c[k]} {k.replace('_', ' ')}" for k in ("quarantined", "inconclusive", "not_run") if c[k]]
    if extra:
        text += f" (+{', '.join(extra)})"
    skipped = sum(len(t.skipped_checks) for t in result.tests)
    if skipped:
        text += f"; {skipped} check{'s' * (skipped != 1)} skipped"
    if result.interrupted:
        text += "; interrupted"
    if result.budget_exceeded:
        text += f"; budget exceeded: {result.budget_exceeded}"
    return text


class ConsoleReporter(Reporter):
    """Progress and summary on a stream (stdout by default).

    ``color``: ``auto`` (a terminal without NO_COLOR), ``always``, ``never``, or a bool.
    ``quiet`` prints only the summary's final lines and the problems; ``failed_only`` leaves
    passed runs and tests out of the progress lines and the table.
    """

    def __init__(
        self,
        *,
        color: str | bool = "auto",
        quiet: bool = False,
        redactor: Redactor | None = None,
        stream: TextIO | None = None,
        width: int | None = None,
        failed_only: bool = False,
    ) -> None:
        from rich.console import Console

        self.stream = stream or sys.stdout
        self.redactor = redactor
        self.quiet = quiet
        self.failed_only = failed_only
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if isinstance(color, bool):
            colored = color
        else:
            colored = color == "always" or (color == "auto" and tty and not os.environ.get("NO_COLOR"))
        self.live = tty and not quiet
        self.colored = colored
        self.console = Console(
            file=self.stream,
            force_terminal=colored or self.live,
            no_color=not colored,
            color_system="auto" if colored else None,
            highlight=False,
            emoji=False,
            width=width or (None if tty else 120),
            soft_wrap=not tty,
        )
        self._progress: Any = None
        self._task: Any = None
        self._tally = {"passed": 0, "failed": 0, "error": 0, "quarantined": 0, "inconclusive": 0}

    def _r(self, text: str) -> str:
        return printable(self.redactor.redact(text) if self.redactor else text)

    def _text(self, text: str, style: str = "") -> Any:
        from rich.text import Text

        return Text(self._r(text), style=style)

    def started(self, total: int) -> None:
        if not self.live or total == 0:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("running"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("runs", total=total, tally=self._tally_text())

    def _tally_text(self) -> str:
        t = self._tally
        text = f"[green]{t['passed']} passed[/] [red]{t['failed']} failed[/] [yellow]{t['error']} errors[/]"
        text += f" [magenta]{t['quarantined']} quarantined[/]" if t["quarantined"] else ""
        return text + (f" [cyan]{t['inconclusive']} inconclusive[/]" if t["inconclusive"] else "")

    def run_finished(self, result: RunResult) -> None:
        if not result.final:
            if not self.quiet and not self.live:
                self._line(f"RETRY {result.run_id}: {result.error or result.outcome}", "yellow")
            return
        self._tally[result.outcome] = self._tally.get(result.outcome, 0) + 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, tally=self._tally_text())
        elif not self.quiet and not (self.failed_only and result.outcome == "passed"):
            line = f"{_MARK.get(result.outcome, result.outcome):<5} {result.suite} / {result.run_id}"
            line += f"  {result.duration:.2f}s"
            skipped = sum(a.skipped for a in result.assertions)
            if skipped:
                line += f"  ({skipped} check{'s' * (skipped != 1)} skipped)"
            self._line(
                line,
                _CAVEAT_STYLE if skipped and result.outcome == "passed" else _STYLE.get(result.outcome, ""),
            )

    def _line(self, text: str, style: str) -> None:
        """A progress line, written straight to the stream: rendering it with rich cost 0.24 ms,
        more than a text run's turn. Its text is redacted and escaped as every line is."""
        text = self._r(text)
        if self.colored and style in _SGR:
            text = f"\x1b[{_SGR[style]}m{text}\x1b[0m"
        self.stream.write(text + "\n")
        self.stream.flush()

    def run_skipped(self, spec: Any) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1)

    def note(self, text: str) -> None:
        self.console.print(self._text(f"note: {text}", "yellow"))

    def close(self) -> None:
        """Take the progress bar down (also when the invocation ended in an exception)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def summary(self, result: InvocationResult) -> None:
        """The table of tests, the failures and errors in detail, and the totals."""
        self.close()
        hidden = sum(t.verdict == "passed" for t in result.tests) if self.failed_only else 0
        if not self.quiet and len(result.tests) > hidden:
            self.stream.write("".join(line + "\n" for line in self._table(result)))
        if hidden and not self.quiet:
            self.console.print(self._text(f"({hidden} passed test{'s' * (hidden != 1)} not shown)", "dim"))
        for t in result.tests:
            if t.verdict == "failed":
                self._failure(t, result.run_dir)
            elif t.verdict == "error":
                self._error(t)
        self._unchecked(result)
        self._findings(result)
        from tamesu.reports.grid_table import causes_line

        causes = causes_line(result.results)
        if causes:
            self.console.print(self._text(causes, "yellow"))
        unchecked = any(t.caveat for t in result.tests)
        style = "red" if result.exit_code else (_CAVEAT_STYLE if unchecked else "green")
        self.console.print(self._text(final_line(result), f"bold {style}"))
        cost = cost_summary(result.attempts or result.results, result.results)
        if cost["total_usd"] > 0:
            self.console.print(self._text(cost_line(cost)))
        if result.run_dir is not None:
            report = f", report {_shown(result.report)}" if result.report is not None else ""
            self.console.print(self._text(f"results in {_shown(result.run_dir)}{report}", "dim"))

    def _table(self, result: InvocationResult) -> list[str]:
        """One row per test, as plain lines (``tamesu.reports.text_table``: rich took 0.8 s for 3,000)."""
        from tamesu.reports.text_table import table_lines

        rates = any(t.rate_text for t in result.tests)
        cost = cost_summary(result.attempts or result.results, result.results)
        spent = {(row["suite"], row["test_id"]): row["cost_usd"] for row in cost["tests"]}
        costs = cost["total_usd"] > 0
        headers = (
            "verdict",
            "test",
            "passes",
            *(("pass rate",) if rates else ()),
            "duration",
            *(("cost",) if costs else ()),
            "target",
        )
        several = len(result.suites) > 1
        rows: list[list[str]] = []
        colours: list[str | None] = []
        for t in result.tests:
            if self.failed_only and t.verdict == "passed":
                continue
            name = f"{t.suite} / {t.test_id}" if several else t.test_id
            mark, style = _MARK[t.verdict], _STYLE[t.verdict]
            if t.caveat:
                mark, style = f"{mark}, {t.caveat}", _CAVEAT_STYLE if t.verdict == "passed" else style
            rows.append(
                [
                    self._r(mark),
                    self._r(name),
                    self._r(t.pass_count),
                    *((self._r(t.rate_text),) if rates else ()),
                    f"{t.duration:.2f}s",
                    *((usd(spent.get((t.suite, t.test_id), 0.0)),) if costs else ()),
                    self._r(t.target),
                ]
            )
            colours.append(_SGR.get(style) if self.colored else None)
        return table_lines(headers, rows, width=self.console.width, sgr=colours)

    def _failure(self, t: TestVerdict, run_dir: Path | None) -> None:
        self.console.print()
        self.console.print(self._text(f"FAIL {t.suite} / {t.test_id} ({t.pass_count})", "bold red"))
        if t.note:
            self.console.print(self._text(f"  note: {t.note}", "yellow"))
        shown = 0
        for r in sorted(t.runs, key=lambda r: r.repeat_index):
            bad = [a for a in r.assertions if a.state in ("failed", "inconclusive")]  # strict: both fail
            if r.outcome not in ("failed", "quarantined") or not bad:
                continue
            prefix = f"  run {r.repeat_index + 1}: " if t.repeats > 1 else "  "
            for a in bad:
                self.console.print(self._text(prefix + assertion_line(a), "red"))
            if shown == 0:
                self._last_turns(r, run_dir)
            shown += 1

    def _unchecked(self, result: InvocationResult) -> None:
        """The checks that were skipped (and why) and those a judge could not tell, per test."""
        for t in result.tests:
            for word, checks, style in (
                ("SKIPPED", t.skipped_checks, _CAVEAT_STYLE),
                ("INCONCLUSIVE", t.inconclusive_checks, "cyan"),
            ):
                for name, why in checks.items():
                    self.console.print(self._text(f"{word} {t.suite} / {t.test_id}: {name}: {why}", style))

    def _last_turns(self, r: RunResult, run_dir: Path | None) -> None:
        turns = _load_turns(r, run_dir)
        if not turns:
            return
        self.console.print(self._text(f"  last {min(LAST_TURNS, len(turns))} turn(s):", "dim"))
        for turn in turns[-LAST_TURNS:]:
            who = "user " if turn.role == "user" else "agent"
            text = " ".join(turn.text.split())
            if len(text) > 300:
                text = text[:297] + "..."
            self.console.print(self._text(f"    {who}: {text}", "dim" if turn.role == "user" else ""))
            if turn.unread:
                self.console.print(self._text(f"      ({turn.unread})", "yellow"))

    def _findings(self, result: InvocationResult) -> None:
        """Red-team findings, most severe first: attack, detector, turn, tactic, evidence."""
        from tamesu.redteam.findings import by_severity, finding_line, severity_counts

        findings = by_severity(f for r in result.results for f in r.findings)
        if not findings:
            return
        counts = ", ".join(f"{n} {sev}" for sev, n in severity_counts(findings).items() if n)
        self.console.print()
        self.console.print(self._text(f"Red-team findings: {counts}", "bold red"))
        for f in findings:
            style = "red" if f.severity in ("critical", "high") else "yellow"
            self.console.print(self._text(f"  {finding_line(f)}", style))

    def _error(self, t: TestVerdict) -> None:
        self.console.print()
        self.console.print(self._text(f"ERROR {t.suite} / {t.test_id} ({t.pass_count})", "bold yellow"))
        seen: set[str] = set()
        for r in sorted(t.runs, key=lambda r: r.repeat_index):
            messages = [r.error] if r.error else [assertion_line(a) for a in r.assertions if a.error]
            for message in messages:
                if message and message not in seen:
                    seen.add(message)
                    self.console.print(self._text(f"  {message}", "yellow"))


def _load_turns(r: RunResult, run_dir: Path | None) -> list[Turn]:
    if run_dir is None:
        return []
    from tamesu.runner.results import read_transcript

    transcript = read_transcript(run_dir, r)
    return transcript.turns if transcript is not None else []


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
