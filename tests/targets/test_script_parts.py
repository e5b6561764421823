"""A script step's parts reach the agent or fail loudly: never dropped, never an empty message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tamesu.config.loader import validate_paths
from tamesu.errors import TargetError
from tamesu.kernel.messages import FileRef, UserTurn
from tests.targets.test_rest import json_app

HEAD = """suite: s
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
  rt: { type: realtime, url: "ws://127.0.0.1:9/rt" }
  voice_rt: { type: realtime, url: "ws://127.0.0.1:9/rt", mode: audio }
  llm: { type: model, system: "You help." }
  peer: { type: a2a, url: "http://127.0.0.1:9/a2a" }
tests:
"""


def script_errors(tmp_path: Path, tests: str) -> list[tuple[str, str]]:
    (tmp_path / "f.pdf").write_bytes(b"%PDF")
    (tmp_path / "s.yaml").write_text(HEAD + tests, encoding="utf-8")
    return [(e.path, e.message) for e in validate_paths([tmp_path / "s.yaml"]).errors]


def step_test(name: str, target: str, step: str) -> str:
    return f"  - {{ name: {name}, target: {target}, scenario: {{ script: [ {{ say: hi }}, {step} ] }} }}\n"


@pytest.mark.unit
def test_validate_names_the_target_type_that_cannot_send_a_step_part(tmp_path: Path) -> None:
    tests = (
        step_test("rest data", "api", "{ say: order, data: { id: 1 } }")
        + step_test("rest files", "api", "{ files: [ f.pdf ] }")
        + step_test("rest dtmf", "api", "{ dtmf: '2' }")
        + step_test("realtime text dtmf", "rt", "{ dtmf: '2' }")
        + step_test("realtime audio dtmf", "voice_rt", "{ dtmf: '2' }")
        + step_test("realtime audio data", "voice_rt", "{ data: { id: 1 } }")
        + step_test("model data", "llm", "{ say: order, data: { id: 1 } }")
        + step_test("model files", "llm", "{ files: [ f.pdf ] }")
        + step_test("a2a files", "peer", "{ say: see, data: { id: 1 }, files: [ f.pdf ] }")
    )
    errs = script_errors(tmp_path, tests)
    assert errs == [
        ("tests[0].scenario.script[1].data", "target 'api' is a rest target, which cannot send structured data in a script step"),
        ("tests[1].scenario.script[1].files", "target 'api' is a rest target, which cannot send files in a script step"),
        ("tests[2].scenario.script[1].dtmf", "target 'api' is a rest target, which cannot send keypad digits (dtmf) in a script step"),
        ("tests[3].scenario.script[1].dtmf", "target 'rt' is a realtime target in text mode, which cannot send keypad digits (dtmf) in a script step"),
        ("tests[5].scenario.script[1].data", "target 'voice_rt' is a realtime target in audio mode, which cannot send structured data in a script step"),
        ("tests[7].scenario.script[1].files", "target 'llm' is a model target, which cannot send files in a script step"),
    ]  # fmt: skip
    hint = validate_paths([tmp_path / "s.yaml"]).errors[1].hint
    assert hint == "files is sent by a2a targets"


@pytest.mark.integration
async def test_a_rest_turn_with_a_part_it_cannot_send_fails_instead_of_sending_nothing(
    serve: Any, harness: Any
) -> None:
    seen: list[dict[str, Any]] = []
    url = await serve(json_app({"reply": "ok"}, seen=seen))
    t = await harness.target({"url": url, "response": {"text": "$.reply"}})
    for turn in (UserTurn(data={"id": 1}), UserTurn(text="see", files=[FileRef(uri="https://x/a.pdf")])):
        with pytest.raises(TargetError) as info:
            [m async for m in t.turn(turn)]
        assert info.value.kind == "config" and not info.value.retryable
        assert "a rest target cannot send" in str(info.value)
    assert seen == []
