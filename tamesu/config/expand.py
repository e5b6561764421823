"""One test of a suite -> the tests it stands for: one per case and per language.

A parameterised test becomes several tests with names of their own (``refund [late] (es)``), so
reports, ``--filter`` and run history treat each case and language as a test in its own right.
``{{vars.x}}`` and ``{{env.X}}`` render in the test's and the cases' names with each case's vars,
so ``order [{{vars.pizza}}]`` reads ``order [margherita]``.
csv and json are imported when a cases file is read: ``tamesu validate`` loads this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import ConfigError

if TYPE_CHECKING:
    from tamesu.config import Test

__all__ = ["CaseRow", "ExpandedTest", "expand_test", "expanded_id", "expanded_ids", "read_cases_file"]


@dataclass
class ExpandedTest:
    test_id: str
    """``name``, ``name [case]``, ``name (lang)`` or ``name [case] (lang)``; unique in the suite."""
    test: Test
    case: str | None = None
    language: str | None = None
    vars: dict[str, str] = field(default_factory=dict)
    """The base vars overridden by the test's, then by the case's."""


@dataclass
class CaseRow:
    name: str | None
    vars: dict[str, str]


def expanded_id(name: str, case: str | None = None, language: str | None = None) -> str:
    """The test id reports and ``--filter`` use."""
    out = name
    if case is not None:
        out += f" [{case}]"
    if language is not None:
        out += f" ({language})"
    return out


def expand_test(
    test: Test, suite_dir: Path | str, *, base_vars: Mapping[str, str] | None = None
) -> list[ExpandedTest]:
    """Every case x language of ``test``; the test itself when it has neither.

    ``base_vars`` (the project's and the suite's) render in names under the test's and case's own.
    """
    test_vars = {**(base_vars or {}), **{k: str(v) for k, v in (test.vars or {}).items()}}
    rows = [CaseRow(c.name, {k: str(v) for k, v in (c.vars or {}).items()}) for c in test.cases or []]
    return [
        ExpandedTest(
            test_id=test_id,
            test=test,
            case=case,
            language=language,
            vars=case_vars,
        )
        for test_id, case, case_vars, language in _variants(
            test.name, rows, test.cases_file, test.languages, suite_dir, test_vars
        )
    ]


def expanded_ids(
    test: Mapping[str, Any], suite_dir: Path | str, *, base_vars: Mapping[str, str] | None = None
) -> list[str]:
    """The test ids ``expand_test`` gives a test written as plain data (a validated suite's mapping).

    ``tamesu validate`` checks names on the file's data without building the models.
    """
    cases = [c for c in test.get("cases") or [] if isinstance(c, dict)]
    rows = [CaseRow(c.get("name"), {k: str(v) for k, v in (c.get("vars") or {}).items()}) for c in cases]
    test_vars = {**(base_vars or {}), **{k: str(v) for k, v in (test.get("vars") or {}).items()}}
    variants = _variants(
        test["name"], rows, test.get("cases_file"), test.get("languages"), suite_dir, test_vars
    )
    return [test_id for test_id, _, _, _ in variants]


def _variants(
    name: str,
    rows: list[CaseRow],
    cases_file: str | None,
    languages: Sequence[str] | None,
    suite_dir: Path | str,
    test_vars: Mapping[str, str],
) -> list[tuple[str, str | None, dict[str, str], str | None]]:
    """(test id, case, vars, language) of every test a test stands for; names checked for duplicates.

    The vars are ``test_vars`` overridden by the case's; the names are rendered with them.
    """
    if cases_file:
        rows = [*rows, *read_cases_file(Path(suite_dir) / cases_file)]
    cases: list[tuple[str, str | None, dict[str, str]]] = [
        (render_name(name, test_vars), None, dict(test_vars))
    ]
    if rows:
        cases = []
        for i, row in enumerate(rows, start=1):
            variables = {**test_vars, **row.vars}
            case = render_name(row.name, variables) if row.name else f"case {i}"
            cases.append((render_name(name, variables), case, variables))
        _no_duplicates([c[1] or "" for c in cases], "case", name)
    langs: list[str | None] = list(languages or []) or [None]
    _no_duplicates([lang or "" for lang in langs], "language", name)
    return [
        (expanded_id(test_name, case, language), case, variables, language)
        for test_name, case, variables in cases
        for language in langs
    ]


def render_name(name: str, variables: Mapping[str, str]) -> str:
    """A test or case name with its ``{{vars.x}}`` and ``{{env.X}}`` rendered.

    Only those two render in a name (a name is shown everywhere: never a secret, never a value
    that changes from run to run); anything else, or a var that is not defined, stays as written
    (``tamesu validate`` reports it).
    """
    if "{{" not in name:
        return name
    import os

    from tamesu.templates import render_known

    def value(ref: str) -> str | None:
        ns, _, member = ref.partition(".")
        if ns == "vars":
            return variables.get(member)
        return os.environ.get(member) if ns == "env" else None

    return render_known(name, value)


def _no_duplicates(names: list[str], what: str, test: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(
                f"test {test!r} has two {what}s named {name!r}",
                path=f"tests.{test}",
                hint=f"give every {what} a different name",
            )
        seen.add(name)


_parsed: dict[tuple[str, bytes], tuple[CaseRow, ...]] = {}
"""Cases files parsed in this process, by suffix and content: validation, its checks and the plan
each ask for a test's cases, and parsing a file of 3,000 rows cost each of them 20 ms."""
_PARSED_KEPT = 16


def read_cases_file(path: Path) -> list[CaseRow]:
    """Cases from a CSV (header row; a ``name`` column names the case) or a JSON array of objects.

    The file is read each time; content parsed before is not parsed again (each caller gets rows
    of its own).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read cases_file: {exc.strerror or exc}", file=str(path)) from None
    suffix = path.suffix.lower()
    key = (suffix, data)
    parsed = _parsed.get(key)
    if parsed is not None:
        return [CaseRow(row.name, dict(row.vars)) for row in parsed]
    # Bytes that are not UTF-8 (an export from a spreadsheet, a binary column) become visible
    # escapes such as ``\\xff`` in the values: the cases still run, and the bytes are kept in view.
    text = data.decode("utf-8-sig", errors="backslashreplace")
    if suffix == ".csv":
        rows = _read_csv(text, path)
    elif suffix == ".json":
        rows = _read_json(text, path)
    else:
        raise ConfigError("cases_file must be a .csv or a .json file", file=str(path))
    while len(_parsed) >= _PARSED_KEPT:
        _parsed.pop(next(iter(_parsed), key), None)
    _parsed[key] = tuple(CaseRow(row.name, dict(row.vars)) for row in rows)
    return rows


def _read_csv(text: str, path: Path) -> list[CaseRow]:
    import csv
    import io

    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((reader.line_num, row))
    except csv.Error as exc:
        raise ConfigError(f"malformed CSV: {exc}", file=str(path), line=reader.line_num) from None
    if not rows:
        raise ConfigError("the CSV has no header row", file=str(path))
    header_line, header_row = rows[0]
    header = [h.strip() for h in header_row]
    if any(not h for h in header):
        raise ConfigError("the CSV header has an empty column name", file=str(path), line=header_line)
    if len(set(header)) != len(header):
        raise ConfigError("the CSV header names a column twice", file=str(path), line=header_line)
    out: list[CaseRow] = []
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise ConfigError(
                f"the row has {len(row)} cells and the header {len(header)}", file=str(path), line=line
            )
        values = dict(zip(header, row))
        name = values.pop("name", "").strip()
        out.append(CaseRow(name or None, values))
    return out


def _read_json(text: str, path: Path) -> list[CaseRow]:
    import json

    from tamesu.untrusted import loads_json

    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"malformed JSON: {exc.msg}", file=str(path), line=exc.lineno, column=exc.colno
        ) from None
    if not isinstance(data, list):
        raise ConfigError("a JSON cases_file must be an array of objects", file=str(path))
    out: list[CaseRow] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ConfigError("every case must be an object", file=str(path), path=f"[{i}]")
        values = {str(k): _stringify(v) for k, v in item.items()}
        name = values.pop("name", None)
        out.append(CaseRow(name or None, values))
    return out


def _stringify(value: Any) -> str:
    """Vars are strings: JSON scalars as a suite would write them, structures as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    import json

    return json.dumps(value, ensure_ascii=False)
