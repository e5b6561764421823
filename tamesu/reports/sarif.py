"""``--sarif PATH``: red-team findings as SARIF 2.1.0, the format code scanning tools read.

One rule per attack kind (``playbook/attack``) that ran, with its severity as ``level`` and as the
``security-severity`` GitHub ranks alerts by; one result per finding, located at the suite's
``red_team`` entry that asked for the attack, with the redacted conversation as that location's
context. Transcripts are read from the run directory (stored redacted) and redacted once more.
A detector that did not run (no judge model) or that a judge could not tell is no finding and no
all-clear either: it is a ``toolExecutionNotifications`` warning of the invocation, with its reason.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.kernel.events import Tactic
from tamesu.redteam.findings import Finding, by_severity

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.runner.invocation import InvocationResult
    from tamesu.secrets import Redactor

__all__ = ["SARIF_SCHEMA", "sarif_log", "write_sarif"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}
CONVERSATION_LIMIT = 6000
"""Characters of conversation kept as a finding's context (the agent's turns are untrusted)."""


def _rule_ids(results: list[RunResult]) -> list[str]:
    ids = [f.rule for r in results for f in r.findings]
    for r in results:
        parts = r.test_id.split("/")
        if len(parts) == 3 and parts[0] == "red_team":
            ids.append(f"{parts[1]}/{parts[2]}")
    return sorted(set(ids))


def _rule(rule_id: str, severity: str | None) -> dict[str, Any]:
    from tamesu.playbooks.catalogue import get_playbook

    playbook, _, attack_name = rule_id.partition("/")
    description, goal, sev = rule_id, rule_id, severity or "high"
    try:
        book = get_playbook(playbook)
        attack = next(a for a in book.attacks if a.name == attack_name)
    except (KeyError, StopIteration):
        pass
    else:
        description, goal = f"{book.description} ({attack.description})", attack.goal
        sev = severity or attack.severity
    return {
        "id": rule_id,
        "name": "".join(part.title() for part in rule_id.replace("/", "_").split("_")),
        "shortDescription": {"text": description},
        "fullDescription": {"text": f"Red-team attack: {goal.replace('({agent})', '').strip()}"},
        "help": {"text": "Run `tamesu playbooks` to see the attack's opening, tactics and detectors."},
        "defaultConfiguration": {"level": LEVEL[sev]},
        "properties": {
            "security-severity": SECURITY_SEVERITY[sev],
            "tags": ["security", "red-team", f"playbook:{playbook}"],
            "precision": "high",
        },
    }


def _conversation(result: RunResult, run_dir: Path | None, redactor: Redactor | None) -> str:
    from tamesu.runner.results import read_transcript
    from tamesu.untrusted import printable

    if run_dir is None or not result.transcript_file:
        return "(no transcript)"
    transcript = read_transcript(run_dir, result)
    if transcript is None:
        return "(transcript unreadable)"
    tactics = {e.turn: e.tactic for e in transcript.events if isinstance(e, Tactic)}
    lines = []
    for turn in transcript.turns:
        label = "user" if turn.role == "user" else "agent"
        tactic = tactics.get(turn.index) if turn.role == "user" else None
        head = f"{label} {turn.index}" + (f" [{tactic}]" if tactic else "")
        calls = "".join(f" <tool {c.name}({json.dumps(c.args, default=str)})>" for c in turn.tool_calls)
        lines.append(f"{head}: {turn.text}{calls}")
    text = printable("\n".join(lines))
    text = redactor.redact(text) if redactor else text
    return text if len(text) <= CONVERSATION_LIMIT else text[: CONVERSATION_LIMIT - 1] + "…"


def _location(f: Finding, conversation: str, base: Path) -> dict[str, Any]:
    path = Path(f.file) if f.file else None
    artifact: dict[str, Any]
    if path is None:
        artifact = {"uri": "tamesu.yaml"}
    else:
        full = path if path.is_absolute() else (Path.cwd() / path)
        try:
            artifact = {"uri": full.resolve().relative_to(base).as_posix(), "uriBaseId": "%SRCROOT%"}
        except ValueError:
            artifact = {"uri": full.resolve().as_uri()}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if f.line > 0:
        physical["region"] = {"startLine": f.line, "startColumn": max(f.column, 1)}
        physical["contextRegion"] = {"startLine": f.line, "snippet": {"text": conversation}}
    return {"physicalLocation": physical, "message": {"text": f"the red_team entry that ran {f.rule}"}}


def _message(f: Finding) -> str:
    """The result's text, an agent's evidence in it with its control characters (a NUL, an
    escape) as visible escapes: code scanning shows it as it is."""
    from tamesu.untrusted import printable

    where = f"at agent turn {f.turn}" if f.turn is not None else "in the conversation"
    tactic = f" using the tactic '{f.tactic}'" if f.tactic else ""
    return printable(f"The {f.rule} attack succeeded {where}{tactic}: {f.detector}. Evidence: {f.evidence}")


def sarif_log(
    result: InvocationResult, *, redactor: Redactor | None = None, base: Path | None = None
) -> dict[str, Any]:
    """The invocation's findings as one SARIF 2.1.0 log (a dict ready for ``json.dump``)."""
    from tamesu.untrusted import printable
    from tamesu.version import __version__

    base = (base or Path.cwd()).resolve()
    results = result.results
    findings = by_severity(f for r in results for f in r.findings)
    severity = {f.rule: f.severity for f in reversed(findings)}
    rule_ids = _rule_ids(results)
    rules = [_rule(rule_id, severity.get(rule_id)) for rule_id in rule_ids]
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    by_run = {(r.suite, r.run_id): r for r in results}
    sarif_results = []
    for f in findings:
        run = by_run.get((f.suite, f.run_id))
        conversation = _conversation(run, result.run_dir, redactor) if run else "(no transcript)"
        key = f"{f.suite}|{f.rule}|{f.test_id}|{f.detector}"
        sarif_results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": LEVEL[f.severity],
                "message": {"text": redactor.redact(_message(f)) if redactor else _message(f)},
                "locations": [_location(f, conversation, base)],
                "partialFingerprints": {"tamesuFinding/v1": hashlib.sha256(key.encode()).hexdigest()},
                "properties": {
                    "playbook": f.playbook,
                    "attack": f.attack,
                    "detector": printable(f.detector),
                    "turn": f.turn,
                    "tactic": printable(f.tactic) if f.tactic else f.tactic,
                    "severity": f.severity,
                    "test": printable(f.test_id),
                    "run": printable(f.run_id),
                },
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tamesu",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri() + "/"}},
                "invocations": [
                    {
                        "executionSuccessful": result.exit_code in (0, 1),
                        "toolExecutionNotifications": _unchecked(results, redactor),
                    }
                ],
                "results": sarif_results,
            }
        ],
    }


def _unchecked(results: list[RunResult], redactor: Redactor | None) -> list[dict[str, Any]]:
    """A warning per red-team check that was skipped or inconclusive: the attack was not judged."""
    out = []
    for r in results:
        for a in r.assertions:
            if a.state not in ("skipped", "inconclusive") or not (
                a.kind == "detector" or a.name.startswith("red_team/")
            ):
                continue
            text = f"{r.suite} / {r.run_id}: {a.name} {a.state}: {a.message}"
            out.append(
                {
                    "level": "warning",
                    "message": {"text": redactor.redact(text) if redactor else text},
                    "descriptor": {"id": f"tamesu/{a.state}"},
                    "properties": {"test": r.test_id, "run": r.run_id, "check": a.name, "state": a.state},
                }
            )
    return out


def write_sarif(
    result: InvocationResult, path: str | os.PathLike[str], *, redactor: Redactor | None = None
) -> Path:
    """Write the SARIF log (parent folders are made); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(sarif_log(result, redactor=redactor), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    return out
