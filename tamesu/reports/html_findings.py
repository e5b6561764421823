"""The red-team findings of the HTML report: counted by severity, then listed most severe first
with the attack (linked to its test), the detector that saw it, the agent turn, the tactic and the
evidence. Evidence is the agent's own words: escaped here, redacted when the run was written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import TYPE_CHECKING

from tamesu.redteam.findings import by_severity, severity_counts

if TYPE_CHECKING:
    from tamesu.kernel.outcome import Finding

__all__ = ["findings_section"]


def _h(value: object) -> str:
    return escape(value if isinstance(value, str) else str(value), quote=True)


def findings_section(findings: Iterable[Finding], anchors: Mapping[tuple[str, str], int]) -> str:
    """The section, or "" for a run without findings; ``anchors``: (suite, test id) -> its article number."""
    ordered = by_severity(findings)
    if not ordered:
        return ""

    def link(f: Finding) -> str:
        n = anchors.get((f.suite, f.test_id))
        return _h(f.run_id) if n is None else f'<a href="#test-{n}">{_h(f.run_id)}</a>'

    chips = "".join(
        f'<span class="chip sev-{_h(sev)}">{n} {_h(sev)}</span>'
        for sev, n in severity_counts(ordered).items()
        if n
    )
    rows = "".join(
        f'<tr class="finding sev-{_h(f.severity)}" data-severity="{_h(f.severity)}">'
        f'<td class="severity">{_h(f.severity.upper())}</td><td>{link(f)}<br><small>{_h(f.rule)}</small></td>'
        f'<td>{_h(f.detector)}</td><td class="num">{"" if f.turn is None else _h(f.turn)}</td>'
        f"<td>{_h(f.tactic or '')}</td><td><pre>{_h(f.evidence)}</pre></td></tr>"
        for f in ordered
    )
    return (
        f'<section id="findings"><h2>Red-team findings</h2><p class="chips">{chips}</p>'
        '<table class="findings"><thead><tr><th>severity</th><th>attack</th><th>detector</th>'
        f"<th>turn</th><th>tactic</th><th>evidence</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )
