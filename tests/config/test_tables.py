"""The README's tables of target types and assertion kinds are the registries' own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.kinds import assertion_kinds, target_kinds
from tamesu.config.tables import assertions_table, targets_table

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_holds_the_tables_written_from_the_registries() -> None:
    text = README.read_text(encoding="utf-8")
    assert targets_table() in text, "regenerate with python -m tamesu.config.tables"
    assert assertions_table() in text, "regenerate with python -m tamesu.config.tables"


def test_every_built_in_kind_has_a_row_and_says_whether_it_runs() -> None:
    rows = targets_table().splitlines()[2:]
    assert [r.split("`")[1] for r in rows] == [e.name for e in target_kinds.entries(builtin=True)]
    assert all(("no adapter yet" in r) == (r.split("`")[1] in target_kinds.without_adapter()) for r in rows)
    kinds = assertions_table().splitlines()[2:]
    assert len(kinds) == len(assertion_kinds.entries(builtin=True))
    assert all(r.split("|")[2].strip() for r in kinds), "every kind has a summary"
