"""Tool-result fuzzing: each mode's answer, seeded replays, delays on an injected sleep."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tamesu.config.suite import Fuzz
from tamesu.fuzz import (
    DEFAULT_DELAY,
    HOSTILE_PAYLOADS,
    HUGE_BYTES,
    ToolFuzzer,
    apply_fuzz,
    as_fuzz,
    fuzz_rng,
    render_tool_result,
    result_text,
)
from tamesu.templates import Scope

pytestmark = pytest.mark.unit

ORDER = {"id": "ORD-1", "total": 42.5, "items": ["boot", "lace"], "paid": True, "note": None, "count": 2}


class Sleeps:
    """An injected sleep that records what it was asked to wait, and waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def fuzz(mode: Any, normal: Any = ORDER, *, seed: int = 1, sleep: Sleeps | None = None) -> Any:
    return await apply_fuzz(
        as_fuzz(mode), "lookup_order", lambda: normal, rng=fuzz_rng(seed, "run"), sleep=sleep or Sleeps()
    )


async def test_error_null_and_custom_do_not_compute_the_normal_result() -> None:
    def boom() -> Any:
        raise AssertionError("normal result computed")

    for mode, expected in [
        ("error", {"error": "internal server error", "code": 500, "tool": "lookup_order"}),
        ("null", None),
        (
            {"mode": "custom", "result": {"ok": False, "reason": "insufficient funds"}},
            {"ok": False, "reason": "insufficient funds"},
        ),
    ]:
        got = await apply_fuzz(as_fuzz(mode), "lookup_order", boom, rng=fuzz_rng(1, "r"), sleep=Sleeps())
        assert got == expected


@pytest.mark.parametrize(("normal", "expected"), [(ORDER, {}), ([1, 2], []), ("text", ""), (7, "")])
async def test_empty_keeps_the_shape(normal: Any, expected: Any) -> None:
    got = await fuzz("empty", normal)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("normal", [ORDER, [1, 2, 3, 4], None, "plain text", {"a": 1}])
async def test_malformed_never_parses(normal: Any) -> None:
    for seed in range(20):
        text = await fuzz("malformed", normal, seed=seed)
        assert isinstance(text, str) and text[0] in "{["
        with pytest.raises(ValueError):
            json.loads(text)


async def test_malformed_is_a_prefix_of_the_normal_json() -> None:
    text = await fuzz("malformed")
    assert json.dumps(ORDER).startswith(text) and len(text) < len(json.dumps(ORDER))


async def test_hostile_carries_an_injection_inside_a_plausible_result() -> None:
    got = await fuzz("hostile")
    assert {k: got[k] for k in ORDER if k != "note"} == {k: v for k, v in ORDER.items() if k != "note"}
    assert got["note"] in HOSTILE_PAYLOADS and "Ignore all previous instructions" in got["note"]
    text = await fuzz("hostile", "Order shipped.")
    assert text.startswith("Order shipped.\n\nNOTE: ") and text.split("NOTE: ", 1)[1] in HOSTILE_PAYLOADS


@pytest.mark.parametrize("normal", [ORDER, [ORDER], "shipped", 3])
async def test_huge_pads_the_normal_result_past_100kb(normal: Any) -> None:
    got = await fuzz("huge", normal)
    assert HUGE_BYTES <= len(result_text(got).encode()) < HUGE_BYTES * 1.2
    if isinstance(normal, dict):
        assert {k: got[k] for k in normal} == normal and got["records"][0]["sku"].startswith("MS-")
    elif isinstance(normal, list):
        assert got[0] == ORDER
    elif isinstance(normal, str):
        assert got.startswith("shipped\n")
    else:
        assert got["result"] == 3


async def test_wrong_type_changes_every_scalar_type() -> None:
    got = await fuzz("wrong_type")
    assert got == {
        "id": 5,
        "total": "42.5",
        "items": {"0": 4, "1": 4},
        "paid": "true",
        "note": "null",
        "count": "2",
    }
    assert await fuzz("wrong_type", ["12", "1.5"]) == {"0": 12, "1": 1.5}


async def test_delay_holds_any_mode_and_defaults_for_delay_mode() -> None:
    sleeps = Sleeps()
    assert await fuzz({"mode": "delay", "delay": "8s"}, sleep=sleeps) == ORDER
    assert await fuzz({"mode": "error", "delay": "250ms"}, sleep=sleeps) == {
        "error": "internal server error",
        "code": 500,
        "tool": "lookup_order",
    }
    assert await fuzz("delay", sleep=sleeps) == ORDER
    assert await fuzz("null", sleep=sleeps) is None
    assert sleeps.waits == [8.0, 0.25, DEFAULT_DELAY]


@pytest.mark.parametrize("mode", ["malformed", "hostile", "huge"])
async def test_same_seed_replays_exactly_and_another_seed_differs(mode: str) -> None:
    first = [await fuzz(mode, seed=seed) for seed in range(1, 6)]
    again = [await fuzz(mode, seed=seed) for seed in range(1, 6)]
    assert first == again
    assert len({json.dumps(o) for o in first}) > 1


async def test_async_normal_result_is_awaited() -> None:
    async def normal() -> Any:
        return {"n": 1}

    got = await apply_fuzz(as_fuzz("wrong_type"), "t", normal, rng=fuzz_rng(0, "r"), sleep=Sleeps())
    assert got == {"n": "1"}


def test_as_fuzz_accepts_every_form() -> None:
    assert as_fuzz("error").mode == "error"
    assert as_fuzz({"mode": "delay", "delay": "2s"}).delay == "2s"
    f = Fuzz.model_validate("null")
    assert as_fuzz(f) is f


async def test_tool_fuzzer_fuzzes_only_named_tools_and_replays_per_run() -> None:
    def make(seed: int) -> ToolFuzzer:
        return ToolFuzzer({"lookup_order": "hostile"}, seed=seed, key="run-1", sleep=Sleeps())

    a, b = make(7), make(7)
    assert a.mode("lookup_order") == "hostile" and a.mode("other") is None
    assert await a.answer("other", lambda: {"x": 1}) == {"x": 1}
    first = [await a.answer("lookup_order", lambda: {"x": 1}) for _ in range(5)]
    assert first == [await b.answer("lookup_order", lambda: {"x": 1}) for _ in range(5)]


def test_render_tool_result_uses_call_args_and_the_scope() -> None:
    scope = Scope({"vars": {"shop": "Mochi"}})
    template = {"topic": "{{args.topic}}", "city": "{{args.address.city}}", "shop": "{{vars.shop}}", "n": 3}
    args = {"topic": "returns", "address": {"city": "Lisbon"}}
    assert render_tool_result(template, args, scope) == {
        "topic": "returns",
        "city": "Lisbon",
        "shop": "Mochi",
        "n": 3,
    }
    missing = render_tool_result({"topic": "{{args.topic}}"}, {}, scope)
    assert missing["error"].startswith("bad arguments:") and "args.topic" in missing["error"]


def test_result_text() -> None:
    assert result_text("as is") == "as is"
    assert result_text(None) == "null"
    assert json.loads(result_text({"a": "é"})) == {"a": "é"}
