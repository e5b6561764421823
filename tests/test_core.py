from __future__ import annotations

import pytest

from tamesu.durations import format_duration, parse_duration
from tamesu.kernel.transcript import ToolCallRecord, Transcript, Turn
from tamesu.registry import Registry

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("3m", 180), ("1h30m", 5400), ("500ms", 0.5), ("1.5s", 1.5), ("90", 90), (2, 2)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "3x", "m3", "1h 30", "-1s", "s", True])
def test_parse_duration_rejects(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)  # type: ignore[arg-type]


def test_format_duration_writes_what_parse_duration_reads() -> None:
    assert [format_duration(s) for s in (0.25, 12.34, 75, 3725)] == ["250ms", "12.34s", "1m15s", "1h2m5s"]
    assert [format_duration(s) for s in (180, 90, 0.5, 3600, 60)] == ["3m", "1m30s", "500ms", "1h", "1m"]
    for seconds in (0.0005, 0.25, 1.5, 59.999, 75, 3725, 86400):
        assert parse_duration(format_duration(seconds)) == pytest.approx(
            seconds if seconds < 60 else round(seconds)
        )


def test_registry_lazy_entry_and_unknown() -> None:
    reg: Registry[object] = Registry("thing")
    reg.add("dumps", "json:dumps")
    import json

    assert reg.get("dumps") is json.dumps
    assert "dumps" in reg and reg.names() == ["dumps"]
    with pytest.raises(KeyError, match="unknown thing 'nope'; known: dumps"):
        reg.get("nope")


def test_transcript_round_trip_and_views() -> None:
    t = Transcript(
        test="t",
        turns=[
            Turn(role="user", text="hi", index=1, sent_at=1.0),
            Turn(role="agent", text="hello", index=1, sent_at=1.0, first_byte_at=1.25, end_at=1.5,
                 tool_calls=[ToolCallRecord(name="lookup", args={"id": 1})]),
        ],
    )  # fmt: skip
    back = Transcript.from_json(t.to_json())
    assert back == t
    assert [x.text for x in back.agent_turns()] == ["hello"]
    assert back.tool_calls()[0].name == "lookup"
    assert back.agent_turns()[0].latency_ms == pytest.approx(250.0)
