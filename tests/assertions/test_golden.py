from __future__ import annotations

import json
from pathlib import Path

import pytest

from tamesu.assertions.golden import normalise, read_golden, word_overlap

from .builders import convo
from .conftest import Check

pytestmark = pytest.mark.unit

RUN = convo(
    "user: Can I return these?",
    "agent: Our return window is 30 days.",
    "user: Thanks",
    "agent: You're welcome!",
)


def _write(tmp_path: Path, data: object, name: str = "golden/refund.json") -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return name


def test_normalise_and_overlap() -> None:
    assert normalise("  Our RETURN window, is 30-days!  ") == "our return window is 30 days"
    assert word_overlap("a b c d", "d c b a") == 1.0
    assert word_overlap("a b", "c d") == 0.0
    assert word_overlap("the the cat", "the cat") == pytest.approx(0.8)
    assert word_overlap("", "") == 1.0


async def test_exact_folds_case_space_and_punctuation(check: Check, tmp_path: Path) -> None:
    file = _write(tmp_path, ["our return window is 30 days", "YOU'RE   welcome"])
    assert (await check({"golden": {"file": file, "mode": "exact"}}, RUN)).passed


async def test_exact_reports_the_first_differing_turn(check: Check) -> None:
    result = await check(
        {"golden": {"turns": ["Our return window is 30 days.", "Bye"], "mode": "exact"}}, RUN
    )
    assert not result.passed and result.message.startswith("turn 2 differs")


async def test_similar_is_the_default_mode(check: Check, tmp_path: Path) -> None:
    file = _write(tmp_path, ["Our return window is 30 days", "You're very welcome!"])
    result = await check({"golden": {"file": file}}, RUN)
    assert result.passed and "word overlap per turn" in result.message


async def test_similar_below_min_fails(check: Check) -> None:
    spec = {"turns": ["Returns are accepted for 60 days only.", "You're welcome!"], "min": 0.8}
    result = await check({"golden": spec}, RUN)
    assert not result.passed and result.message.startswith("turn 1 overlaps")
    loose = await check({"golden": {**spec, "min": 0.1}}, RUN)
    assert loose.passed


async def test_turn_count_must_match(check: Check) -> None:
    result = await check({"golden": {"turns": ["Our return window is 30 days."]}}, RUN)
    assert not result.passed and "the golden reference has 1" in result.message


async def test_transcript_json_reads_its_agent_turns(check: Check, tmp_path: Path) -> None:
    file = _write(tmp_path, json.loads(RUN.to_json()), "golden/transcript.json")
    assert read_golden(tmp_path / file) == ["Our return window is 30 days.", "You're welcome!"]
    assert (await check({"golden": {"file": file, "mode": "exact"}}, RUN)).passed


async def test_update_golden_writes_the_file(check: Check, tmp_path: Path) -> None:
    _write(tmp_path, ["old"])
    result = await check({"golden": {"file": "golden/refund.json"}}, RUN, update_golden=True)
    assert result.passed and "golden file updated" in result.message
    text = (tmp_path / "golden/refund.json").read_text()
    assert text.endswith("\n") and json.loads(text) == ["Our return window is 30 days.", "You're welcome!"]
    assert text.startswith('[\n  "Our')
    assert (await check({"golden": {"file": "golden/refund.json", "mode": "exact"}}, RUN)).passed


async def test_missing_file_says_how_to_record_it(check: Check) -> None:
    result = await check({"golden": {"file": "golden/none.json"}}, RUN)
    assert result.error and "tamesu run --update-golden" in result.message


async def test_unreadable_file_is_an_error(check: Check, tmp_path: Path) -> None:
    file = _write(tmp_path, {"nothing": 1})
    result = await check({"golden": {"file": file}}, RUN)
    assert result.error and "cannot read golden file" in result.message


async def test_judge_mode_needs_a_model(check: Check) -> None:
    result = await check({"golden": {"turns": ["a", "b"], "mode": "judge"}}, RUN)
    assert result.error and "needs a model" in result.message
