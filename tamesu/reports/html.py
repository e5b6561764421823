"""``tamesu report``: one self-contained HTML file a person reads to see what happened in a run.

The page holds the suite summary, the red-team findings by severity, filters (failed only, tag, target, a search), every test with
its verdict, repeats and pass-rate interval, and for every run its assertions (expected, seen,
judge reasons), captures, metrics and transcript (turns, tool calls and their results), with the
call's recording, waveform and turn timeline for voice runs and percentile charts for load tests.

One file, nothing fetched when it is viewed: the CSS and JS are inlined and the recordings
embedded. Everything the agent produced is untrusted, so every value is HTML-escaped, no agent
text ever reaches a script, and a Content-Security-Policy admits only this page's own script and
style (by hash): even a value that escaped escaping could not run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from html import escape
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.metrics import shown_metrics
from tamesu.reports.cost import cost_fact, usd
from tamesu.reports.html_capacity import capacity_section
from tamesu.reports.html_charts import load_section
from tamesu.reports.html_findings import findings_section
from tamesu.reports.html_grid import grid_section
from tamesu.reports.html_replay import replay_block
from tamesu.reports.html_voice import MAX_AUDIO_BYTES, voice_block
from tamesu.reports.rundir import RunDirectory, TestRow
from tamesu.reports.words import CHECK_WORD, VERDICT_WORD
from tamesu.untrusted import printable, storable_text

if TYPE_CHECKING:
    from tamesu.kernel.outcome import AssertionResult, RunResult
    from tamesu.kernel.transcript import ToolCallRecord, Transcript, Turn

__all__ = ["render_html", "write_html"]

MAX_VALUE_CHARS = 20_000
"""One value shown (a tool result, an expected/seen pair) is cut after this many characters."""
_MARK = VERDICT_WORD
_ORDER = tuple(VERDICT_WORD)
_CHECK_CLASS = {"passed": "ok", "failed": "bad", "error": "err", "skipped": "skip", "inconclusive": "unsure"}


_SHORT: dict[str, str] = {}
"""Short texts escaped before (roles, sources, outcomes, check names): a report repeats them per run."""


def h(value: Any) -> str:
    """Any value as escaped HTML text: cut after ``MAX_VALUE_CHARS`` (an agent's turn may be a
    megabyte), its control characters (C0, C1, lone surrogates) as visible escapes, as the JSON
    files keep them."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= 32:
        done = _SHORT.get(text)
        if done is None:
            done = escape(printable(text), quote=True)
            if len(_SHORT) < 4096:
                _SHORT[text] = done
        return done
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + f"\n… ({len(text) - MAX_VALUE_CHARS} more characters)"
    return escape(printable(text), quote=True)


def _value(value: Any) -> str:
    """A JSON-able value as escaped, pretty, bounded text."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return h(text)


def _asset(name: str) -> str:
    return resources.files("tamesu").joinpath("data", "report", name).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def render_html(run: RunDirectory, *, max_audio_bytes: int = MAX_AUDIO_BYTES) -> str:
    """The whole page for one run directory."""
    css, js = _asset("report.css"), _asset("report.js")
    rows = run.tests()
    policy = (
        f"default-src 'none'; style-src '{_digest(css)}'; script-src '{_digest(js)}'; "
        "img-src data:; media-src data:"
    )
    title = "tamesu report: " + (", ".join(run.suites) or run.dir.name)
    body = [
        _header(run, rows, title),
        _toolbar(rows),
        "<main>",
        _summary_table(rows),
        findings_section(
            (f for r in run.results for f in r.findings),
            {(row.suite, row.test_id): n for n, row in enumerate(rows)},
        ),
        load_section(run.load_report) if run.load_report else "",
        _capacity(run.load_report),
        grid_section(run.results, run.settings),
        '<h2 id="tests">Tests</h2>',
        *(_test(run, row, n, max_audio_bytes) for n, row in enumerate(rows)),
        "</main>",
        f"<footer>Made by tamesu from {h(run.dir.name)}.</footer>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{h(policy)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title)}</title><style>{css}</style></head><body>"
        + "".join(body)
        + f"<script>{js}</script></body></html>\n"
    )


def _capacity(load_report: dict[str, Any] | None) -> str:
    found = load_report.get("capacity") if load_report else None
    return capacity_section(found) if isinstance(found, dict) else ""


def write_html(run: RunDirectory, out: str | os.PathLike[str], **kw: Any) -> Path:
    """Write the page atomically; returns its path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(storable_text(render_html(run, **kw)), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _header(run: RunDirectory, rows: list[TestRow], title: str) -> str:
    summary = run.summary or {}
    counts = {v: sum(1 for r in rows if r.verdict == v) for v in _ORDER}
    chips = "".join(
        f'<span class="chip {v}">{counts[v]} {h(v.replace("_", " "))}</span>' for v in _ORDER if counts[v]
    )
    skipped = sum(len(r.info.get("skipped_checks") or {}) for r in rows)
    if skipped:
        chips += f'<span class="chip skipped">{skipped} check{"s" * (skipped != 1)} skipped</span>'
    cwd = str(run.settings.get("cwd") or "").rstrip("/") + "/"
    argv = " ".join(
        str(a).removeprefix(cwd) if cwd != "/" else str(a) for a in run.settings.get("argv") or []
    )
    started = summary.get("started_at") or run.settings.get("started_at") or ""
    facts = [f"started {h(started)}"] if started else []
    if "duration" in summary:
        facts.append(f"took {float(summary['duration']):.1f}s")
    if "exit_code" in summary:
        facts.append(f"exit code {h(summary['exit_code'])}")
    if run.settings.get("tamesu_version"):
        facts.append(f"tamesu {h(run.settings['tamesu_version'])}")
    if cost_fact(summary.get("cost")):
        facts.append(h(cost_fact(summary.get("cost"))))
    banner = ""
    if not run.complete:
        banner = (
            '<div class="banner">This invocation did not finish (no summary.json): verdicts are '
            "read from the runs that ended.</div>"
        )
    return (
        f'<header class="page"><h1>{h(title)}</h1><p class="meta">{" · ".join(facts)}</p>'
        + (f'<p class="meta"><code>{h(argv)}</code></p>' if argv else "")
        + f'<div class="chips">{chips}</div></header>{banner}'
    )


def _toolbar(rows: list[TestRow]) -> str:
    tags = sorted({t for r in rows for t in r.tags})
    targets = sorted({r.target for r in rows if r.target})
    tag_options = "".join(f'<option value="{h(t)}">{h(t)}</option>' for t in tags)
    target_options = "".join(f'<option value="{h(t)}">{h(t)}</option>' for t in targets)
    return (
        '<nav class="toolbar"><label><input type="checkbox" id="f-failed"> failed only</label>'
        f'<label>tag <select id="f-tag"><option value="">all</option>{tag_options}</select></label>'
        f'<label>target <select id="f-target"><option value="">all</option>{target_options}</select></label>'
        '<label>search <input type="search" id="f-search" placeholder="test name"></label>'
        f'<span id="f-count">{len(rows)} tests</span></nav>'
    )


def _data(row: TestRow) -> str:
    """The attributes the filters read (escaped: tags and names come from the suite)."""
    return (
        f'data-test data-verdict="{h(row.verdict)}" data-target="{h(row.target)}" '
        f'data-tags="{h(json.dumps(row.tags))}" data-name="{h(row.suite + " / " + row.test_id)}"'
    )


def _rate(info: dict[str, Any]) -> str:
    interval, spent = info.get("interval"), info.get("spent") or 0
    if not interval or spent < 2:
        return ""
    conf = float(info.get("confidence") or 0.95)
    text = f"{float(info.get('pass_rate') or 0):.0%} ({conf:.0%} CI {interval[0]:.0%}–{interval[1]:.0%})"
    for k, v in (info.get("pass_hat_k") or {}).items():
        text += f", pass^{h(k)} {float(v):.2f}"
    return text


def _mark(row: TestRow) -> str:
    """The verdict's word, with what was left unchecked (``PASS, 1 check skipped``)."""
    mark = h(_MARK.get(row.verdict, row.verdict))
    caveat = row.caveat
    return f'{mark}<span class="caveat">, {h(caveat)}</span>' if caveat else mark


def _summary_table(rows: list[TestRow]) -> str:
    several = len({r.suite for r in rows}) > 1
    priced = any(r.info.get("cost_usd") for r in rows)
    body = []
    for n, row in enumerate(rows):
        name = f"{row.suite} / {row.test_id}" if several else row.test_id
        info = row.info
        body.append(
            f'<tr {_data(row)}><td class="verdict v-{h(row.verdict)}">{_mark(row)}</td>'
            f'<td><a href="#test-{n}">{h(name)}</a></td><td>{h(info.get("pass_count", ""))}</td>'
            f'<td class="num">{_rate(info)}</td><td class="num">{float(info.get("duration") or 0):.2f}s</td>'
            + (f'<td class="num">{h(usd(info.get("cost_usd")))}</td>' if priced else "")
            + f"<td>{h(row.target)}</td></tr>"
        )
    cost_head = "<th>cost</th>" if priced else ""
    return (
        '<h2>Summary</h2><table class="summary"><thead><tr><th>verdict</th><th>test</th><th>passes</th>'
        f"<th>pass rate</th><th>duration</th>{cost_head}<th>target</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _test(run: RunDirectory, row: TestRow, n: int, max_audio_bytes: int) -> str:
    info = row.info
    stats = [h(info.get("pass_count", ""))]
    if _rate(info):
        stats.append(_rate(info))
    parts = [
        f'<article class="test v-{h(row.verdict)}" id="test-{n}" {_data(row)}>',
        f'<h3><span class="verdict v-{h(row.verdict)}">{_mark(row)}</span>'
        f"{h(row.suite)} / {h(row.test_id)}</h3>",
        f'<p class="stats">{" · ".join(stats)} · target {h(row.target)}</p>',
    ]
    if row.tags:
        parts.append('<p class="tags">' + "".join(f"<span>{h(t)}</span>" for t in row.tags) + "</p>")
    if info.get("note"):
        parts.append(f'<p class="note">{h(info["note"])}</p>')
    if info.get("quarantine"):
        parts.append(f'<p class="note">quarantined: {h(info["quarantine"])}</p>')
    problem = row.verdict != "passed" or bool(row.caveat)
    for r in row.runs:
        unchecked = any(a.skipped or a.inconclusive for a in r.assertions)
        open_ = problem and (r.outcome != "passed" or unchecked)
        parts.append(_run(run, r, open_=open_, max_audio_bytes=max_audio_bytes))
    parts.append("</article>")
    return "".join(parts)


def _run(run: RunDirectory, r: RunResult, *, open_: bool, max_audio_bytes: int) -> str:
    label = f"run {r.repeat_index + 1}" + (f" (attempt {r.attempt})" if r.attempt > 1 else "")
    skipped = sum(a.skipped for a in r.assertions)
    mark = h(_MARK.get(r.outcome, r.outcome))
    if skipped:
        mark += f'<span class="caveat">, {skipped} check{"s" * (skipped != 1)} skipped</span>'
    head = (
        f'<summary><span class="verdict v-{h(r.outcome)}">{mark}</span> {h(label)} · '
        f"{r.duration:.2f}s · {r.turns} agent turn(s)</summary>"
    )
    parts = [f'<details class="run"{" open" if open_ else ""}>{head}']
    if r.error:
        parts.append(f'<p class="errortext">{h(r.error)}</p>')
    if r.assertions:
        parts.append(_checks(r.assertions))
    transcript = run.transcript(r)
    if transcript is not None:
        if transcript.captures:
            parts.append("<h4>Captures</h4>" + _kv(transcript.captures))
        parts.append(replay_block(r, transcript, max_audio_bytes=max_audio_bytes))
        parts.append(voice_block(run, transcript, max_audio_bytes=max_audio_bytes))
        parts.append(_transcript(transcript))
    elif r.transcript_file:
        parts.append(f'<p class="note">transcript {h(r.transcript_file)} could not be read</p>')
    if r.metrics:
        cells = "".join(
            f"<div><span>{h(k)}</span> <b>{_number(v)}</b></div>" for k, v in shown_metrics(r.metrics).items()
        )
        parts.append(f'<h4>Metrics</h4><div class="metrics">{cells}</div>')
    parts.append("</details>")
    return "".join(parts)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _checks(results: list[AssertionResult]) -> str:
    """The assertions' table; a column no check fills (passing checks show no ``seen``) is left out."""
    columns = [
        ("expected", any(a.expected is not None for a in results)),
        ("seen", any(a.actual is not None for a in results)),
        ("why", any(a.message for a in results)),
    ]
    rows = []
    for a in results:
        mark, cls = CHECK_WORD[a.state], _CHECK_CLASS[a.state]
        where = f" (turn {h(a.on_turn)})" if a.on_turn is not None else ""
        cells = {
            "expected": f"<td><pre>{_value(a.expected) if a.expected is not None else ''}</pre></td>",
            "seen": f"<td><pre>{_value(a.actual) if a.actual is not None else ''}</pre></td>",
            "why": f'<td class="value">{h(a.message)}</td>',
        }
        shown = "".join(cells[name] for name, used in columns if used)
        rows.append(f'<tr><td class="{cls}">{mark}</td><td>{h(a.name)}{where}</td>{shown}</tr>')
    heads = "".join(f"<th>{name}</th>" for name, used in columns if used)
    return (
        '<h4>Assertions</h4><table class="checks"><thead><tr><th></th><th>check</th>'
        f"{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _kv(values: dict[str, Any]) -> str:
    items = "".join(f"<dt>{h(k)}</dt><dd>{_value(v)}</dd>" for k, v in values.items())
    return f'<dl class="kv">{items}</dl>'


def _transcript(t: Transcript) -> str:
    turns = "".join(_turn(turn) for turn in t.turns)
    end = f'<p class="meta">ended: {h(t.end_reason)}</p>' if t.end_reason else ""
    if t.handoff is not None:
        end += f'<p class="meta">handed off on turn {t.handoff.turn} to {h(t.handoff.to or "?")}</p>'
    return f'<h4>Transcript</h4><div class="turns">{turns}</div>{end}'


def _turn(turn: Turn) -> str:
    sub = []
    if turn.role == "user" and turn.source:
        sub.append(h(turn.source))
    if turn.role == "agent" and turn.latency_ms is not None:
        sub.append(f"latency {turn.latency_ms:.0f} ms")
    if turn.status is not None:
        sub.append(f"HTTP {h(turn.status)}")
    if turn.dtmf:
        sub.append(f"DTMF {h(turn.dtmf)}")
    body = [f'<div class="text">{h(turn.text)}</div>']
    if turn.unread:
        body.append(f'<div class="sub note">nothing read: {h(turn.unread)}</div>')
    if sub:
        body.append(f'<div class="sub">{" · ".join(sub)}</div>')
    if turn.reasoning:
        body.append(f'<div class="sub">simulated user\'s reasoning: {h(turn.reasoning)}</div>')
    if turn.data:
        body.append(f'<div class="tool">data <pre>{_value(turn.data)}</pre></div>')
    body.extend(_tool(call) for call in turn.tool_calls)
    return f'<div class="turn {h(turn.role)}"><div class="who">{h(turn.role)}</div><div>{"".join(body)}</div></div>'


def _tool(call: ToolCallRecord) -> str:
    result = f"<div>result</div><pre>{_value(call.result)}</pre>" if call.result is not None else ""
    return f'<div class="tool">tool call <b>{h(call.name)}</b><pre>{_value(call.args)}</pre>{result}</div>'
