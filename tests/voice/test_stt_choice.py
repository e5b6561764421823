"""``--stt-engine`` (``stt_engine=``): one STT engine hears every call's agent, chosen for the run,
not by the line; the hosted ``openai`` engine through its real wire format on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu import run_async
from tamesu.errors import UsageError
from tamesu.runner.invocation import check_stt_engine

from ..audio.test_stt import TranscriptionServer, stt_server
from .peers import AgentScript, Calls, calls

__all__ = ["calls", "stt_server"]

pytestmark = pytest.mark.integration

SUITE = """
suite: heard
vars: {{ url: "{url}" }}
targets:
  phone:
    type: voice
    url: "{{{{vars.url}}}}/voice"
    idle: 400ms
    transcript_source: stt
tests:
  - name: the agent is heard
    target: phone
    persona: {{ voice: "test-vowel:plain" }}
    scenario: {{ script: [ {{ say: "one two three" }} ] }}
    assert:
      - contains: "{words}"
"""


async def test_the_chosen_engine_hears_every_turn_of_the_call(calls: Calls, tmp_path: Path) -> None:
    _, url = await calls.agent(AgentScript(greeting=0.4, delay=0.3, reply=0.5, transcripts=False))
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=url, words="heard"))
    result = await run_async(suite, output=tmp_path / "out", stt_engine="test-stt")
    [run] = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])


async def test_the_hosted_engine_hears_the_calls_over_its_wire_format(
    calls: Calls, stt_server: tuple[TranscriptionServer, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, base = stt_server
    monkeypatch.setenv("OPENAI_BASE_URL", base)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stt-test-key")
    _, url = await calls.agent(AgentScript(greeting=0.4, delay=0.3, reply=0.5, transcripts=False))
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(url=url, words="How are you"))
    result = await run_async(suite, output=tmp_path / "out", stt_engine="openai")
    [run] = result.results
    assert run.outcome == "passed", (run.error, [a.message for a in run.assertions])
    assert server.forms and all(f["auth"] == "Bearer sk-stt-test-key" for f in server.forms)
    assert result.run_dir is not None
    for written in result.run_dir.rglob("*.json*"):
        assert b"sk-stt-test-key" not in written.read_bytes(), written


@pytest.mark.unit
def test_the_hosted_engine_without_a_key_or_server_is_refused_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match="the hosted engine needs OPENAI_API_KEY"):
        check_stt_engine("openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    check_stt_engine("openai")


@pytest.mark.unit
def test_an_unknown_engine_is_refused_with_the_known_ones() -> None:
    from tamesu.audio.stt import stt_engines

    check_stt_engine(None)
    check_stt_engine("whisper-base")
    with pytest.raises(UsageError) as caught:
        check_stt_engine("whispr")
    known = ", ".join(stt_engines.names())  # the shipped ones, and any a test or plugin registered
    assert {"openai", "whisper", "whisper-base"} <= set(stt_engines.names())
    assert (
        str(caught.value)
        == f"--stt-engine: unknown STT engine 'whispr' (known: {known}); did you mean 'whisper'?"
    )
