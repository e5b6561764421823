"""The ``a11y`` step: axe-core checks the page, and violations at or above an impact fail the run.

axe-core is JavaScript from the npm registry. It is not kept in the repository: a build step
(``python -m tamesu.targets.browser_a11y``) packs a pinned version with npm, checks the tarball
against the registry's published integrity, and puts its ``axe.min.js`` (and licence) in the
package's git-ignored ``data/vendor`` folder. Without that file the step cannot run, and both
``tamesu validate`` and the run say which command fetches it.

The script is evaluated in every frame of the page (a page's Content-Security-Policy does not apply
to it), then ``axe.run`` checks the page or the ``ref`` element. The result is bounded before it
leaves the page: the rule, its impact and help, how many elements, and the first few selectors.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.extras import AXE_FILE

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle, Page

__all__ = [
    "AXE_INTEGRITY",
    "AXE_VERSION",
    "IMPACTS",
    "A11y",
    "a11y_spec",
    "check_page",
    "describe",
    "extract_axe",
    "fetch_axe",
    "severity",
]

AXE_VERSION = "4.14.1"
AXE_INTEGRITY = (
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
)
"""The npm registry's integrity of the axe-core tarball; a tarball that differs is refused."""
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
    script = AXE_FILE.read_text(encoding="utf-8")
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


def extract_axe(tarball: Path, dest: Path = AXE_FILE, *, integrity: str = AXE_INTEGRITY) -> Path:
    """Check the npm tarball against ``integrity`` and write its axe.min.js (and LICENSE) to dest."""
    import tarfile

    data = tarball.read_bytes()
    algo, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if actual != expected:
        raise TargetError(
            f"{tarball.name} is not axe-core {AXE_VERSION} as published ({algo} differs)",
            retryable=False,
            kind="config",
        )
    wanted = {"package/axe.min.js": dest, "package/LICENSE": dest.with_name("axe-core.LICENSE")}
    found: dict[Path, bytes] = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            source = tar.extractfile(member) if member.name in wanted and member.isfile() else None
            if source is not None:
                found[wanted[member.name]] = source.read()
    missing = [name for name, target in wanted.items() if target not in found]
    if missing:
        raise TargetError(f"{tarball.name} has no {', '.join(missing)}", retryable=False, kind="config")
    dest.parent.mkdir(parents=True, exist_ok=True)
    for target, data in found.items():
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        partial.replace(target)
    return dest


def fetch_axe(dest: Path = AXE_FILE) -> Path:
    """``npm pack`` the pinned axe-core into a temporary folder and extract it to dest."""
    import shutil
    import subprocess
    import tempfile

    npm = shutil.which("npm")
    if npm is None:
        raise TargetError("npm is not installed (apt-get install npm)", retryable=False, kind="config")
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [npm, "pack", f"axe-core@{AXE_VERSION}", "--silent", "--pack-destination", tmp],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        tarball = Path(tmp) / f"axe-core-{AXE_VERSION}.tgz"
        if done.returncode != 0 or not tarball.is_file():
            tail = (done.stderr or done.stdout).strip()[-500:]
            raise TargetError(f"npm pack axe-core@{AXE_VERSION} failed: {tail}", retryable=False)
        return extract_axe(tarball, dest)


def _config(message: str) -> TargetError:
    return TargetError(message, retryable=False, kind="config")


def main() -> int:
    try:
        path = fetch_axe()
    except TargetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"axe-core {AXE_VERSION} written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
