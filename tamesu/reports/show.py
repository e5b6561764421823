"""One run as text for a terminal (``tamesu show``): the conversation, tool calls, checks, captures.

Every string that came from the agent (turns, tool arguments and results, captured values,
assertion evidence) passes through ``printable`` before it is printed, so a reply cannot
recolour, move or rewrite what the person reads.
"""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING, Any

from tamesu.metrics import shown_metrics
from tamesu.reports.junit import assertion_line
from tamesu.reports.words import CHECK_WORD
from tamesu.untrusted import paint, printable

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Transcript, Turn

__all__ = ["render_run"]

_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "yellow",
    "quarantined": "blue",
    "inconclusive": "cyan",
}
_CHECK_STYLE = {
    "passed": "green",
    "failed": "red",
    "error": "yellow",
    "skipped": "blue",
    "inconclusive": "cyan",
}
MAX_VALUE_CHARS = 2000


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + f"... ({len(text) - MAX_VALUE_CHARS} more characters)"
    return printable(text)


def render_run(
    r: RunResult, transcript: Transcript | None, *, color: bool = False, width: int | None = 100
) -> str:
    """The run's header, transcript, assertions, captures and metrics; ``width`` None (output that
    is not a terminal) wraps nothing, so a pipe or a log reads every line whole."""
    lines: list[str] = []
    title = f"{printable(r.suite)} / {printable(r.run_id)}"
    facts = [paint(r.outcome.upper(), _STYLE.get(r.outcome, "bold"), color), f"{r.duration:.2f}s"]
    facts.append(f"target {printable(r.target)}")
    if r.attempt > 1:
        facts.append(f"attempt {r.attempt}")
    skipped = sum(a.skipped for a in r.assertions)
    if skipped:
        facts.insert(1, paint(f"{skipped} check{'s' * (skipped != 1)} skipped", "blue", color))
    lines.append(f"{paint(title, 'bold', color)}  {'  '.join(facts)}")
    if r.error:
        lines.append(paint(f"error: {printable(r.error)}", "yellow", color))
    if transcript is not None:
        lines.append("")
        for turn in transcript.turns:
            lines.extend(_turn(turn, color=color, width=width))
        if transcript.end_reason:
            lines.append(paint(f"(ended: {printable(transcript.end_reason)})", "dim", color))
    elif r.transcript_file:
        lines.append(paint(f"(transcript {r.transcript_file} could not be read)", "dim", color))
    if r.assertions:
        lines += ["", paint("assertions", "bold", color)]
        for a in r.assertions:
            mark, style = CHECK_WORD[a.state], _CHECK_STYLE[a.state]
            text = a.name if a.passed and not a.message else assertion_line(a)
            lines.append(f"  {paint(f'{mark:<5}', style, color)} {printable(text)}")
    if transcript is not None and transcript.captures:
        lines += ["", paint("captures", "bold", color)]
        lines += [f"  {printable(k)} = {_value(v)}" for k, v in transcript.captures.items()]
    if r.metrics:
        lines += ["", paint("metrics", "bold", color)]
        shown = [f"{k} {v:g}" for k, v in shown_metrics(r.metrics).items()]
        lines += _wrap("  ·  ".join(shown), width, "  ")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int | None, indent: str) -> list[str]:
    if width is None:
        return [indent + text]
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent) or [indent]


def _turn(turn: Turn, *, color: bool, width: int | None) -> list[str]:
    who = "user " if turn.role == "user" else "agent"
    label = paint(who, "blue" if turn.role == "user" else "bold", color)
    notes = []
    if turn.role == "user" and turn.source:
        notes.append(turn.source)
    if turn.role == "agent" and turn.latency_ms is not None:
        notes.append(f"{turn.latency_ms:.0f} ms")
    if turn.dtmf:
        notes.append(f"dtmf {turn.dtmf}")
    head = f"{label} {paint('(' + ', '.join(notes) + ')', 'dim', color)}" if notes else label
    out = [head]
    body = printable(turn.text) or (
        f"(nothing read: {printable(turn.unread)})" if turn.unread else "(nothing said)"
    )
    inner = None if width is None else width - 4
    for paragraph in body.splitlines() or [""]:
        out += _wrap(paragraph, inner, "    ")
    if turn.reasoning:
        out += _wrap(f"why: {printable(turn.reasoning)}", inner, "    ")
    for call in turn.tool_calls:
        out.append(f"    {paint('tool', 'dim', color)} {printable(call.name)} {_value(call.args)}")
        if call.result is not None:
            out.append(f"      -> {_value(call.result)}")
    return out
