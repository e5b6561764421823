"""The ``a11y`` step: axe-core checks the page, and violations at or above an impact fail the run.

axe-core is JavaScript; the browser extra installs it with ``axe-playwright-python`` (pinned),
whose wheel carries ``axe.min.js`` (MPL-2.0), so ``pip install 'tamesu[browser]'`` is all a
step needs. Only that file is read, never the package's code, and only when its sha512 is the one
pinned here: a file that differs (another version, a tampered install) is refused with a config
error. Without the package both ``tamesu validate`` and the run say what to install.

The script is evaluated in every frame of the page (a page's Content-Security-Policy does not apply
to it), then ``axe.run`` checks the page or the ``ref`` element. The result is bounded before it
leaves the page: the rule, its impact and help, how many elements, and the first few selectors.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu import extras
from tamesu.errors import TargetError

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle, Page

__all__ = [
    "AXE_SHA512",
    "AXE_VERSION",
    "IMPACTS",
    "A11y",
    "a11y_spec",
    "axe_script",
    "check_page",
    "describe",
    "severity",
]

AXE_VERSION = "4.12.1"
"""The axe-core that axe-playwright-python 0.1.8 (the browser extra's pin) carries."""
AXE_SHA512 = "b3c14bebe414ee827a275f296a0e38b6330b3c7c43effe1d14ea2260f62467c51235e4d48eeed41759039cfbf45108bb1863a8295a5c16b2291a7f96c869a251"
"""The sha512 of that ``axe.min.js``; any other file is refused."""
IMPACTS = ("minor", "moderate", "serious", "critical")
"""axe-core's impacts, least to most severe."""
CHECK_TIMEOUT = 60.0
"""Seconds one axe run may take (frames that never answer make axe wait)."""
FRAME_WAIT_MS = 5000
MAX_LISTED = 20
"""The most violations a failed step lists (the count covers them all)."""
MAX_TARGETS = 3
"""The most element selectors shown per violation."""
MAX_TEXT = 200

_RUN = """async ([el, names, frameWaitTime, maxTargets, maxText]) => {
  const cut = (s) => String(s ?? "").slice(0, maxText);
  const options = { frameWaitTime, resultTypes: ["violations"] };
  if (names.length) {
    const known = new Set(axe.getRules().flatMap((r) => [r.ruleId, ...r.tags]));
    const unknown = names.filter((n) => !known.has(n));
    if (unknown.length) return { unknown };
    options.runOnly = names;
  }
  const result = await axe.run(el || document, options);
  return { violations: result.violations.map((v) => ({
    rule: cut(v.id), impact: cut(v.impact), help: cut(v.help), url: cut(v.helpUrl),
    elements: v.nodes.length,
    targets: v.nodes.slice(0, maxTargets).map((n) => cut([n.target].flat(Infinity).join(" "))),
  })) };
}"""


@dataclass(frozen=True)
class A11y:
    impact: str = "minor"
    """The least severe impact that fails the step; milder violations are only counted."""
    rules: tuple[str, ...] = ()
    """axe rule ids or tags (``wcag2aa``) to run instead of all rules."""
    ref: str | None = None
    """The element to check instead of the whole page."""


def a11y_spec(arg: Any) -> A11y:
    """The step's argument (nothing, an impact, or ``{impact, rules, ref}``) checked."""
    if arg is None or arg == {}:
        return A11y()
    if isinstance(arg, str):
        arg = {"impact": arg}
    if not isinstance(arg, dict) or set(arg) - {"impact", "rules", "ref"}:
        raise _config("an a11y step takes { impact, rules, ref } (or just an impact)")
    impact = arg.get("impact", "minor")
    if impact not in IMPACTS:
        raise _config(f"a11y.impact is one of {', '.join(IMPACTS)}, not {impact!r}")
    rules = arg.get("rules") or []
    if isinstance(rules, str):
        rules = [rules]
    if not isinstance(rules, list) or not all(isinstance(r, str) and r for r in rules):
        raise _config("a11y.rules is a list of axe rule ids or tags")
    ref = arg.get("ref")
    if ref is not None and (not isinstance(ref, str) or not ref):
        raise _config("a11y.ref is an element selector")
    return A11y(impact, tuple(rules), ref)


async def check_page(page: Page, spec: A11y, element: ElementHandle | None = None) -> list[dict[str, Any]]:
    """The page's (or the element's) violations of the spec's rules, every impact, most severe first."""
    script = axe_script()
    for frame in page.frames:
        try:
            if await frame.evaluate("typeof axe") == "undefined":
                await frame.evaluate(script)
        except Exception:
            continue
    args = [element, list(spec.rules), FRAME_WAIT_MS, MAX_TARGETS, MAX_TEXT]
    found = await asyncio.wait_for(page.evaluate(_RUN, args), CHECK_TIMEOUT)
    if found.get("unknown"):
        raise _config(f"a11y.rules: axe-core {AXE_VERSION} has no rule or tag {', '.join(found['unknown'])}")
    violations: list[dict[str, Any]] = found["violations"]
    return sorted(violations, key=lambda v: -severity(v["impact"]))


def severity(impact: str) -> int:
    """The impact's rank (0 for minor); an impact axe does not name ranks as minor."""
    return IMPACTS.index(impact) if impact in IMPACTS else 0


def describe(violations: list[dict[str, Any]], impact: str) -> str:
    """One line per violation, at most MAX_LISTED of them."""
    head = (
        f"{len(violations)} accessibility violation{'s' if len(violations) != 1 else ''} at or above {impact}"
    )
    lines = [
        f"- {v['rule']} ({v['impact']}, {v['elements']} element{'s' if v['elements'] != 1 else ''}:"
        f" {', '.join(v['targets'])}): {v['help']}"
        for v in violations[:MAX_LISTED]
    ]
    if len(violations) > MAX_LISTED:
        lines.append(f"- and {len(violations) - MAX_LISTED} more")
    return "\n".join([head, *lines])


def axe_script() -> str:
    """axe-core's script, checked against ``AXE_SHA512``; a config error when missing or different."""
    path = extras.axe_file()
    if path is None:
        raise _config(extras.axe_missing() or "axe-core is not installed")
    return _checked(path)


@functools.lru_cache(maxsize=4)
def _checked(path: Path) -> str:
    data = path.read_bytes()
    if hashlib.sha512(data).hexdigest() != AXE_SHA512:
        raise _config(
            f"{path} is not axe-core {AXE_VERSION} as axe-playwright-python 0.1.8 ships it (sha512 differs):"
            " pip install 'tamesu[browser]' again"
        )
    return data.decode("utf-8")


def _config(message: str) -> TargetError:
    return TargetError(message, retryable=False, kind="config")
