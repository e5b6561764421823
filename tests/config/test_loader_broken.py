"""The corpus in broken/: suites with exactly one mistake each, and the one line that must name it.

Each file's header says what ``tamesu validate`` must print::

    # expect-path: tests[0].assert[0].contians     (empty: no key path, such as a syntax error)
    # expect-line: 16
    # expect-message: unknown key 'contians'        (a part of the message)
    # expect-hint: did you mean 'contains'?         (optional)
    # expect-count: 2                               (optional; one error by default)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tamesu.cli import main

pytestmark = pytest.mark.unit

BROKEN = Path(__file__).parent / "broken"
CASES = sorted(BROKEN.glob("*.yaml"))
_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<rest>.*)$")


def expectations(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#\s*expect-(\w+):\s?(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def test_the_corpus_covers_every_kind_of_mistake() -> None:
    names = {p.stem for p in CASES}
    assert {
        "unknown_key",
        "misspelt_enum",
        "missing_required",
        "wrong_type",
        "bad_duration",
        "bad_date",
        "duplicate_key",
        "syntax_error",
        "unknown_target",
        "duplicate_names",
        "unknown_pack",
        "unknown_var",
        "missing_file",
        "two_kinds",
    } <= names


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_broken_suite(
    case: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAMESU_BROKEN_UNSET_URL", raising=False)
    monkeypatch.chdir(BROKEN)
    want = expectations(case)
    assert {"path", "line", "message"} <= set(want), f"{case.name} lacks its expect- header"

    assert main(["--color", "never", "validate", case.name]) == 2
    out = capsys.readouterr().out
    errors = [m for m in map(_LINE.match, out.splitlines()) if m]
    assert len(errors) == int(want.get("count", "1")), out
    assert all(m.group("file") == case.name for m in errors)

    matching = [m for m in errors if int(m.group("line")) == int(want["line"])]
    assert matching, f"no error on line {want['line']}:\n{out}"
    rest = matching[0].group("rest")
    assert want["message"] in rest
    if want["path"]:
        assert re.search(rf" at {re.escape(want['path'])}(?: \(|$)", rest), rest
    else:
        assert " at " not in rest.split(" (")[0], rest
    if want.get("hint"):
        assert rest.endswith(f"({want['hint']})"), rest
