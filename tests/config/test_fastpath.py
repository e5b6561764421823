"""tamesu validate's fast path: "valid" exactly where the models say so, and the models' errors otherwise."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tamesu.cli import main
from tamesu.config import Project, Suite, fastcompile, fastgen, fastrules
from tamesu.config._fastschema import valid_project, valid_suite
from tamesu.config.checks import check_document
from tamesu.config.fastcheck import FastResult, validate_fast
from tamesu.config.load import load_suite, read_doc
from tamesu.config.target import TARGET_KEY_TYPES, TARGET_TYPES
from tamesu.config.yamlload import parse_yaml
from tamesu.errors import ConfigErrors

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent
EXAMPLES = HERE / "reference_examples"
BROKEN = HERE / "broken"
ENV = {"LIVEKIT_URL": "wss://lk.example.com", "AGENT_STREAM_URL": "wss://agent.example.com/media"}
MODELS: dict[str, Any] = {"suite": Suite, "project": Project}
FAST: dict[str, Callable[[Any], bool]] = {"suite": valid_suite, "project": valid_project}


def parse(text: str) -> Any:
    return parse_yaml(text, env=ENV).data


def slow(kind: str, data: Any) -> bool:
    try:
        MODELS[kind].model_validate(data)
    except ValidationError:
        return False
    return True


def assert_same(kind: str, data: Any) -> bool:
    verdict = slow(kind, data)
    assert FAST[kind](data) is verdict, json.dumps(data, default=repr)[:2000]
    return verdict


def minimal(**test: Any) -> dict[str, Any]:
    return {
        "suite": "s",
        "targets": {"api": {"type": "rest", "url": "http://127.0.0.1:9/chat"}},
        "tests": [{"name": "t", "target": "api", "scenario": {"goal": "Ask"}, **test}],
    }


def target(**keys: Any) -> dict[str, Any]:
    suite = minimal()
    suite["targets"] = {"t": keys}
    return suite


def asserting(*items: Any) -> dict[str, Any]:
    return minimal(**{"assert": list(items)})


# --- the generated module and the table of Python-side rules -----------------------------------


def test_generated_module_is_current() -> None:
    assert fastgen.GENERATED.read_text(encoding="utf-8") == fastgen.generate(), (
        f"{fastgen.GENERATED} is stale: run python -m tamesu.config.fastgen"
    )


def test_every_python_rule_of_the_models_is_accounted_for() -> None:
    found = {key for keys in fastgen.python_rules((Suite, Project)).values() for key in keys}
    listed = set(fastgen.RULES) | set(fastgen.DEFERRED)
    assert found - listed == set(), (
        "add these validators to fastgen.RULES (with their schema rule) or DEFERRED"
    )
    assert listed - found == set(), "these fastgen.RULES entries name validators that no longer exist"


def test_the_compiler_refuses_keywords_it_does_not_know() -> None:
    compiler = fastcompile.Compiler()
    with pytest.raises(ValueError, match="prefixItems"):
        compiler.call({"type": "array", "prefixItems": [{"type": "string"}]}, "x")
    with pytest.raises(ValueError, match=r"only a final \$"):
        compiler.call({"type": "string", "pattern": "^a$|^b$"}, "x")


def test_deferred_models_are_refused_outright() -> None:
    data = {"load": {"concurrency": 5}}
    assert slow("project", data) and not valid_project(data)
    assert assert_same("project", {"load": None})


# --- the corpus ---------------------------------------------------------------------------------


def corpus() -> Iterator[tuple[str, str, Any]]:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        data = parse(path.read_text(encoding="utf-8"))
        if path.name == "key_examples.yaml":
            yield from (("suite", f"{e['object']}.{e['key']}", e["suite"]) for e in data)
        else:
            yield ("project" if "project" in path.name else "suite"), path.name, data
    for path in sorted(BROKEN.glob("*.yaml")):
        try:
            yield "suite", path.name, parse(path.read_text(encoding="utf-8"))
        except ConfigErrors:
            continue


CORPUS = list(corpus())


@pytest.mark.parametrize(("kind", "name", "data"), CORPUS, ids=[c[1] for c in CORPUS])
def test_corpus_fast_verdict_is_the_models_verdict(kind: str, name: str, data: Any) -> None:
    assert_same(kind, data)


def test_the_corpus_has_both_verdicts() -> None:
    verdicts = [slow(kind, data) for kind, _, data in CORPUS]
    assert verdicts.count(True) > 350 and verdicts.count(False) >= 10


# --- every rule on both sides of its edge ------------------------------------------------------

DURATIONS = ["30s", " 1h 30m ", "500ms", "1.5s", 30, 1.5, 0, 10**30, "", "soon", "-3s", "1e5s", "3 m x",
             -1, 1e16, 1e-7, math.inf, math.nan, True, None, [], "٣s"]  # fmt: skip
DATES = ["2026-12-31", "2026-02-30", "2026-2-3", "20261231", 20261231, "2026-12-31\n", "٢٠٢٦-١٢-٣١", None]
NUMBERS = [0, 1, 0.5, 1.5, -0.0, math.nan, math.inf, -math.inf, True, 2**1023, 2**1024, -(2**1030), "1"]

EDGES: list[tuple[str, str, Any]] = [
    *[("suite", f"duration {v!r}", minimal(timeout=v)) for v in DURATIONS],
    *[("suite", f"default duration {v!r}", {**minimal(), "defaults": {"timeout": v}}) for v in DURATIONS],
    *[("suite", f"date {v!r}", minimal(quarantine={"reason": "r", "until": v})) for v in DATES],
    *[("suite", f"threshold {v!r}", minimal(pass_threshold=v)) for v in NUMBERS],
    *[("suite", f"metric bound {v!r}", asserting({"metric": {"name": "m", "lt": v}})) for v in NUMBERS],
    *[("suite", f"repeat {v!r}", minimal(repeat=v)) for v in [1, 0, 1.0, True, 10**40, None]],
    ("suite", "hook both", {**minimal(), "hooks": {"before_all": [{"command": "c", "http": {"url": "u"}}]}}),
    ("suite", "hook null command", {**minimal(), "hooks": {"before_all": [{"command": None}]}}),
    ("suite", "hook timeout only", {**minimal(), "hooks": {"before_all": [{"timeout": "1s"}]}}),
    ("suite", "poll and listen", target(type="rest", url="u", response={"poll": {"url": "p"}, "listen": {}})),
    ("suite", "poll and null listen", target(type="rest", url="u", response={"poll": {"url": "p"}, "listen": None})),
    ("suite", "handoff two signals", target(type="rest", url="u", handoff={"tool": "t", "regex": "r"})),
    ("suite", "handoff no signal", target(type="rest", url="u", handoff={"to": "x"})),
    ("suite", "trigger both", target(type="sip", direction="inbound", trigger={"command": "c", "http": {"url": "u"}})),
    *[("suite", f"tool parameters {p!r}", target(type="model", system="s", tools=[{"name": "n", "parameters": p}]))
      for p in [{"type": "object"}, {}, {"type": "string"}, {"type": ["object"]}, None, []]],
    *[("suite", f"voice audio {a!r}", target(type="voice", url="u", audio=a))
      for a in [{"send": {"a": 1}}, {"frames": "json", "send": {"a": 1}}, {"send": None}, {"frames": "binary", "receive": "$"}]],
    ("suite", "streaming on a model target", target(type="model", system="s", streaming="sse")),
    ("suite", "null url on a model target", target(type="model", system="s", url=None)),
    ("suite", "rest without url", target(type="rest")),
    ("suite", "rest with null url", target(type="rest", url=None)),
    ("suite", "model system and file", target(type="model", system="s", system_file="f")),
    ("suite", "model neither", target(type="model")),
    ("suite", "mcp command and url", target(type="mcp", command="c", url="u")),
    ("suite", "mcp args with url", target(type="mcp", url="u", args=["a"])),
    ("suite", "mcp env with command", target(type="mcp", command="c", env={"A": "b"})),
    ("suite", "sip outbound without to", target(type="sip")),
    ("suite", "sip outbound with trigger", target(type="sip", to="1", trigger={"command": "c"})),
    ("suite", "sip inbound without trigger", target(type="sip", direction="inbound", to="1")),
    ("suite", "sip inbound", target(type="sip", direction="inbound", trigger={"command": "c"})),
    ("suite", "livekit token and key", target(type="livekit", url="u", token="t", api_key="k", api_secret="s")),
    ("suite", "livekit key alone", target(type="livekit", url="u", api_key="k")),
    ("suite", "livekit secret alone", target(type="livekit", url="u", api_secret="s")),
    ("suite", "livekit key and secret", target(type="livekit", url="u", api_key="k", api_secret="s")),
    ("suite", "rest socketio sse", target(type="rest", url="u", protocol="socketio", streaming="sse")),
    ("suite", "rest socketio websocket", target(type="rest", url="u", protocol="socketio", streaming="websocket")),
    ("suite", "rest protocol ga", target(type="rest", url="u", protocol="ga", streaming="websocket")),
    ("suite", "rest protocol null", target(type="rest", url="u", protocol=None)),
    ("suite", "rest open without websocket", target(type="rest", url="u", request={"open": {"a": 1}})),
    ("suite", "rest null open", target(type="rest", url="u", request={"open": None, "handshake": None})),
    ("suite", "rest idle with sse", target(type="rest", url="u", streaming="sse", response={"idle": "2s"})),
    ("suite", "rest idle with websocket", target(type="rest", url="u", streaming="websocket", response={"idle": "2s"})),
    ("suite", "rest capture without poll", target(type="rest", url="u", request={"capture": {"a": "$.a"}})),
    ("suite", "rest capture with poll", target(type="rest", url="u", request={"capture": {}}, response={"poll": {"url": "p"}})),
    ("suite", "rest capture null", target(type="rest", url="u", request={"capture": None})),
    ("suite", "realtime socketio", target(type="realtime", url="u", protocol="socketio")),
    ("suite", "realtime beta", target(type="realtime", url="u", protocol="beta")),
    *[("suite", f"on_turn {v!r}", asserting({"contains": "x", "on_turn": v})) for v in [1, 0, "last", "first", True, 1.0, None]],
    *[("suite", f"call_ended_by {v!r}", asserting({"call_ended_by": v})) for v in ["agent", ["agent", "busy"], "nope", [], None]],
    ("suite", "judge min binary", asserting({"judge": {"rubric": "r", "min": 4}})),
    ("suite", "judge min 1-5", asserting({"judge": {"rubric": "r", "scale": "1-5", "min": 4}})),
    ("suite", "judge null min", asserting({"judge": {"rubric": "r", "min": None}})),
    ("suite", "judge empty rubric", asserting({"judge": ""})),
    ("suite", "tool schema valid", asserting({"tool_called": {"name": "n", "schema": {"type": "object"}}})),
    ("suite", "tool schema invalid", asserting({"tool_called": {"name": "n", "schema": {"type": 5}}})),
    ("suite", "tool_not_called schema", asserting({"tool_not_called": {"name": "n", "schema": {}}})),
    ("suite", "tool_not_called null schema", asserting({"tool_not_called": {"name": "n", "schema": None}})),
    *[("suite", f"short {kind} ''", asserting({kind: ""})) for kind in ("tool_called", "evaluator", "delegated_to")],
    ("suite", "metric two bounds", asserting({"metric": {"name": "m", "lt": 1, "gt": 0}})),
    ("suite", "metric no bound", asserting({"metric": {"name": "m"}})),
    ("suite", "turns empty", asserting({"turns": {}})),
    ("suite", "turns two bounds", asserting({"turns": {"lte": 5, "gt": 1}})),
    ("suite", "captured equals and matches", asserting({"captured": {"name": "n", "equals": "a", "matches": "b"}})),
    ("suite", "captured null equals", asserting({"captured": {"name": "n", "equals": None, "matches": "b"}})),
    ("suite", "golden file and turns", asserting({"golden": {"file": "f", "turns": ["a"]}})),
    ("suite", "golden neither", asserting({"golden": {"mode": "exact"}})),
    ("suite", "golden null file", asserting({"golden": {"file": None}})),
    ("suite", "grounded two sources", asserting({"grounded": {"context": {"tool": "t", "text": ["a"]}}})),
    ("suite", "two kinds", asserting({"contains": "a", "regex": "b"})),
    ("suite", "on_turn alone", asserting({"on_turn": "last"})),
    ("suite", "capture two sources", minimal(capture=[{"name": "n", "regex": "r", "json_path": "$"}])),
    ("suite", "capture no source", minimal(capture=[{"name": "n"}])),
    ("suite", "step two kinds", minimal(steps=[{"goal": "g", "expect": "e"}])),
    ("suite", "step action two keys", minimal(steps=[{"action": {"click": "a", "fill": "b"}}])),
    ("suite", "step action unknown", minimal(steps=[{"action": {"teleport": "a"}}])),
    ("suite", "step null action", minimal(steps=[{"action": None}])),
    *[("suite", f"silence {v!r}", minimal(persona={"behaviors": {"silence_after_turn_ms": v}}))
      for v in [[100, 50], [-1, 5], [0, 0], [1, 2, 3], [1.0, 2], [5, 5], None]],
    ("suite", "tactics without attacker", minimal(persona={"tactics": ["a"]})),
    ("suite", "tactics with attacker", minimal(persona={"tactics": ["a"], "adversarial": True})),
    ("suite", "null tactics", minimal(persona={"tactics": None})),
    *[("suite", f"script file {f!r}", minimal(scenario={"script": [{"files": [f]}]}))
      for f in ["a.pdf", "https://x/y.jpg", "", {"path": "a", "uri": "b"}, {"name": "n"}, {"uri": "u", "mime": "m"}, 3]],
    *[("suite", f"script step {s!r}", minimal(scenario={"script": [s]}))
      for s in [{"wait_for": "w", "say": "s"}, {"say": "s", "data": {}}, {}, {"dtmf": "12#"}, {"dtmf": "9x"}, {"say": None}]],
    *[("suite", f"scenario {s!r}", minimal(scenario=s))
      for s in [{}, {"goal": None}, {"script": []}, {"goal": None, "script": [{"say": "hi"}]}, {"goal": ""}, {"script": None}]],
    *[("suite", f"fuzz {f!r}", minimal(fuzz_tools={"t": f}))
      for f in ["error", "custom", "nope", {"mode": "custom"}, {"mode": "custom", "result": None}, {"mode": "error", "result": 1}]],
    ("suite", "cases and cases_file", minimal(cases=[{"vars": {}}], cases_file="c.csv")),
    ("suite", "null cases with cases_file", minimal(cases=None, cases_file="c.csv")),
    ("suite", "persona and counterpart", minimal(persona={}, counterpart={"target": "api"})),
    ("suite", "null persona and counterpart", minimal(persona=None, counterpart={"target": "api"})),
    *[("suite", f"remote reply {r!r}", {**minimal(), "remote_agents": {"b": {"replies": [r]}}})
      for r in [{}, {"say": None}, {"data": {}}, {"when": "x", "say": "y"}]],
    *[("suite", f"remote agent {a!r}", {**minimal(), "remote_agents": {"b": a}})
      for a in [{"forward": "f", "reply": "r"}, {"headers": {}}, {"headers": None}, {"forward": "f", "headers": {}},
                {"forward": None, "reply": "r"}, {"forward": "f", "replies": None}, {"skills": [""]}, {"skills": ["s"]}]],
    ("project", "empty project", {}),
    ("project", "no suites globs", {"suites": []}),
    ("project", "zero concurrency", {"concurrency": 0}),
    ("project", "empty provider url", {"providers": {"p": {"base_url": ""}}}),
    ("project", "project defaults", {"defaults": {"timeout": "nope"}}),
    ("project", "project hooks each", {"hooks": {"before_each": []}}),
    ("project", "load rate and concurrency", {"load": {"rate": 1, "concurrency": 2}}),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "name", "data"), EDGES, ids=[e[1] for e in EDGES])
def test_rule_edges(kind: str, name: str, data: Any) -> None:
    assert_same(kind, data)


def test_the_edges_have_both_verdicts() -> None:
    verdicts = [slow(kind, data) for kind, _, data in EDGES]
    assert verdicts.count(True) > 60 and verdicts.count(False) > 80


# --- generated mutations of valid suites --------------------------------------------------------


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*path, i))


def _mappings(node: Any) -> list[tuple[Any, ...]]:
    return [(), *(p for p in _paths(node) if isinstance(_get(node, p), dict))]


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


BASES = [data for kind, _, data in CORPUS if kind == "suite" and slow("suite", data)]


def _pairs() -> list[tuple[str, Any]]:
    """(key, value) pairs written somewhere in the valid corpus, to add where they may not belong."""
    out: dict[str, tuple[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                out.setdefault(f"{k}={json.dumps(v, sort_keys=True)[:200]}", (k, v))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for data in BASES:
        walk(data)
    return sorted(out.values(), key=lambda kv: json.dumps(kv, sort_keys=True))


PAIRS = _pairs()
ENUMS = sorted({v for _, v in PAIRS if isinstance(v, str) and len(v) < 20} | set(TARGET_TYPES))
VALUES: list[Any] = [None, True, False, 0, 1, -1, 3, 1.5, -0.5, 1e16, math.inf, math.nan, 2**70, "", "x",
                     "30s", "soon", "-3s", "2026-02-30", "2026-12-31", "last", [], ["x"], [1, 2], [300, 100],
                     {}, {"x": 1}, {"type": "object"}, {"type": 5}]  # fmt: skip


def _typed_keys() -> dict[str, list[Any]]:
    """Property name -> values that test its kind of rule (durations, dates, numbers with bounds)."""
    pools = {"duration": DURATIONS, "date": DATES, "number": [*NUMBERS, -1, 2, 1.0, 10**30]}
    out: dict[str, list[Any]] = {}

    def kind(node: Any) -> str | None:
        if not isinstance(node, dict):
            return None
        if node.get("x-hook") in ("duration", "date"):
            return str(node["x-hook"])
        if node.get("type") in ("number", "integer"):
            return "number"
        return next((k for k in map(kind, node.get("anyOf", [])) if k), None)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                if kind(sub):
                    out.setdefault(key, pools[str(kind(sub))])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(fastgen.prepare("suite"))
    return out


_ASSERTION_KINDS = {"judge", "contains", "not_contains", "regex", "status", "tool_called", "metric", "turns",
                    "captured", "golden", "handoff", "pack", "similar_to", "json_path", "call_ended_by"}  # fmt: skip


TYPED = _typed_keys()
TYPED_BASES = [b for b in BASES if any(p[-1] in TYPED for p in _paths(b))]
_SAME_KEY: dict[Any, list[Any]] = {}
for _key, _value in PAIRS:
    _SAME_KEY.setdefault(_key, []).append(_value)


def _misspell(key: str, rnd: random.Random) -> str:
    i = rnd.randrange(max(len(key) - 1, 1))
    variants = [key[:-1], key + "s", key[:i] + key[i + 1 : i + 2] + key[i] + key[i + 2 :], key.upper()]
    return rnd.choice([v for v in variants if v and v != key] or ["x"])


def mutate(doc: dict[str, Any], rnd: random.Random) -> None:
    """One mistake, of the kinds people make: a value, a key, a key in the wrong place, a second kind."""
    op = rnd.choice(["set", "typed", "drop", "rename", "add", "add", "kind", "target_key", "target_type"])
    paths = list(_paths(doc))
    typed = [p for p in paths if p[-1] in TYPED]
    if op == "typed":
        if typed:
            path = rnd.choice(typed)
            _get(doc, path[:-1])[path[-1]] = copy.deepcopy(rnd.choice(TYPED[path[-1]]))
    elif op in ("set", "drop", "rename") and paths:
        path = rnd.choice(paths)
        parent, last = _get(doc, path[:-1]), path[-1]
        if op == "set":
            pool = rnd.choice([VALUES, ENUMS, DURATIONS, DATES, NUMBERS, _SAME_KEY.get(last, VALUES)])
            parent[last] = copy.deepcopy(rnd.choice(pool))
        elif op == "drop":
            del parent[last]
        elif isinstance(last, str):
            parent[_misspell(last, rnd)] = parent.pop(last)
    elif op == "add":
        key, value = rnd.choice(PAIRS)
        _get(doc, rnd.choice(_mappings(doc)))[key] = copy.deepcopy(value)
    elif op == "kind":
        items = [p for p in _mappings(doc) if len(p) > 1 and p[-2] == "assert"]
        if items:
            key, value = rnd.choice([kv for kv in PAIRS if kv[0] in _ASSERTION_KINDS])
            _get(doc, rnd.choice(items))[key] = copy.deepcopy(value)
    elif op in ("target_key", "target_type") and isinstance(doc.get("targets"), dict) and doc["targets"]:
        name = rnd.choice(sorted(doc["targets"]))
        if isinstance(doc["targets"][name], dict):
            if op == "target_key":
                key, value = rnd.choice([kv for kv in PAIRS if kv[0] in TARGET_KEY_TYPES])
                doc["targets"][name][key] = copy.deepcopy(value)
            else:
                doc["targets"][name]["type"] = rnd.choice(TARGET_TYPES)


@st.composite
def mutated(draw: Any) -> dict[str, Any]:
    """A valid suite of the corpus with one to three mistakes (which may happen to be harmless)."""
    rnd = draw(st.randoms(use_true_random=False))
    if rnd.random() < 0.4:
        doc = copy.deepcopy(rnd.choice(TYPED_BASES))
        path = rnd.choice([p for p in _paths(doc) if p[-1] in TYPED])
        _get(doc, path[:-1])[path[-1]] = copy.deepcopy(rnd.choice(TYPED[path[-1]]))
        return doc
    doc = copy.deepcopy(rnd.choice(BASES))
    for _ in range(rnd.choice([1, 1, 1, 2, 2, 3])):
        mutate(doc, rnd)
    return doc


@settings(
    max_examples=400,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(mutated())
def test_mutations_fast_verdict_is_the_models_verdict(doc: dict[str, Any]) -> None:
    assert_same("suite", doc)


PROJECT_BASES = [
    *(data for kind, _, data in CORPUS if kind == "project"),
    {
        "defaults": {
            "timeout": "2m",
            "assert": [{"pack": "pii_leakage"}],
            "slo": {"turn_latency_ms_p95": 3000},
        },
        "hooks": {"before_all": [{"command": "./seed.sh", "timeout": "30s"}]},
        "models": {"retry": {"attempts": 2, "backoff": "1s"}, "fallback": {"judge": ["openai/gpt-4.1-mini"]}},
        "providers": {"vllm": {"base_url": "http://127.0.0.1:8000/v1"}},
        "suites": ["suites/*.yaml"],
        "concurrency": 3,
    },
]


@st.composite
def mutated_project(draw: Any) -> dict[str, Any]:
    rnd = draw(st.randoms(use_true_random=False))
    doc = copy.deepcopy(rnd.choice(PROJECT_BASES))
    for _ in range(rnd.choice([1, 1, 2, 3])):
        mutate(doc, rnd)
    return doc


@settings(max_examples=150, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(mutated_project())
def test_project_mutations_fast_verdict_is_the_models_verdict(doc: dict[str, Any]) -> None:
    assert_same("project", doc)


def test_mutations_reach_both_verdicts() -> None:
    """The mutation strategy is worth its name: it makes plenty of valid and invalid suites."""
    seen: list[bool] = []

    @settings(max_examples=150, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(mutated())
    def collect(doc: dict[str, Any]) -> None:
        seen.append(slow("suite", doc))

    collect()
    assert seen.count(True) >= 15 and seen.count(False) >= 30


# --- the hooks answer as the validators do ------------------------------------------------------


@pytest.mark.parametrize("value", DURATIONS, ids=repr)
def test_duration_hook_is_the_duration_validator(value: Any) -> None:
    from tamesu.config.common import _duration

    try:
        out = _duration(value)
        accepted = isinstance(out, str)
    except Exception:
        accepted = False
    assert fastrules.duration(value) is accepted


@pytest.mark.parametrize("value", NUMBERS, ids=repr)
def test_number_hook_is_a_strict_float(value: Any) -> None:
    from pydantic import TypeAdapter

    try:
        TypeAdapter(float, config={"strict": True}).validate_python(value)
        accepted = True
    except ValidationError:
        accepted = False
    assert fastrules.number(value) is accepted


# --- the command --------------------------------------------------------------------------------

SUITE = """\
suite: demo
vars: { shop: Mochi }
models: { default: ollama/llama3.2 }
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat", headers: { A: "{{secrets.TOKEN}}" } }
tests:
  - name: greeting
    target: api
    cases: [ { name: one, vars: { x: "1" } } ]
    languages: [en, es]
    scenario: { goal: "Ask {{vars.shop}} {{vars.x}} about returns" }
  - name: second
    target: api
    scenario: { goal: "Ask" }
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_validate(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["--color", "never", "validate", *args])
    return code, capsys.readouterr().out


def test_valid_suites_take_the_fast_path_and_print_what_the_models_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "tamesu.yaml", "secrets: { TOKEN: env:TOKEN }\nsuites: ['**/*.suite.yaml']\n")
    write(tmp_path / "a.suite.yaml", SUITE)
    write(tmp_path / "sub" / "b.suite.yaml", SUITE.replace("demo", "other"))
    write(tmp_path / "ignored.yaml", "suite: not matched by the globs\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKEN", "t0ken")
    assert validate_fast(["."]) == FastResult(suites=2, tests=4)
    fast = run_validate([], capsys)
    monkeypatch.setattr("tamesu.config.fastcheck.validate_fast", lambda paths: None)
    assert run_validate([], capsys) == fast == (0, "ok: 2 suites, 4 tests\n")
    assert run_validate(["--json"], capsys) == (0, "[]\n")


@pytest.mark.parametrize("case", sorted(BROKEN.glob("*.yaml")), ids=lambda p: p.stem)
def test_invalid_suites_get_exactly_the_models_output(
    case: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAMESU_BROKEN_UNSET_URL", raising=False)
    monkeypatch.chdir(BROKEN)
    assert validate_fast([case.name]) is None
    for args in ([case.name], ["--json", case.name]):
        with_fast = run_validate(args, capsys)
        with monkeypatch.context() as m:
            m.setattr("tamesu.config.fastcheck.validate_fast", lambda paths: None)
            assert run_validate(args, capsys) == with_fast
        assert with_fast[0] == 2


@pytest.mark.parametrize(
    ("project", "fast"),
    [
        ("vars: { shop: Mochi }\nsecrets: { TOKEN: env:TOKEN }\n", True),
        ("concurrency: 0\n", False),
        ("load: { concurrency: 5 }\n", False),
        ("secrets: [TOKEN]\n", False),
    ],
    ids=["valid", "invalid", "deferred-load", "wrong-type"],
)
def test_the_project_file_goes_through_the_fast_path_too(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    project: str,
    fast: bool,
) -> None:
    write(tmp_path / "tamesu.yaml", project)
    suite = write(tmp_path / "s.yaml", SUITE.replace("cases: [ { name: one, vars: { x: \"1\" } } ]", "")
                  .replace(" {{vars.x}}", ""))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert (validate_fast([suite]) is not None) is fast
    with_fast = run_validate([str(suite)], capsys)
    monkeypatch.setattr("tamesu.config.fastcheck.validate_fast", lambda paths: None)
    assert run_validate([str(suite)], capsys) == with_fast


def test_semantic_problems_send_the_file_to_the_models(tmp_path: Path) -> None:
    bad = write(tmp_path / "s.yaml", SUITE.replace("{{vars.shop}}", "{{vars.shoop}}"))
    assert validate_fast([bad]) is None
    ok = write(tmp_path / "t.yaml", SUITE.replace("{{secrets.TOKEN}}", "x"))
    assert validate_fast([ok]) == FastResult(suites=1, tests=2)


def test_checks_on_plain_data_are_the_checks_after_the_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check_document with tamesu.yaml's plain mapping finds what load_suite finds with the model."""
    monkeypatch.setenv("KEY", "k3y")
    project = "vars: { shop: Mochi }\nsecrets: { KEY: env:KEY }\n"
    write(tmp_path / "tamesu.yaml", project)
    text = SUITE.replace("{{secrets.TOKEN}}", "{{secrets.KEY}} {{secrets.NOPE}}").replace(
        "second", "greeting [one] (en)"
    )
    path = write(tmp_path / "s.yaml", text + "  - { name: third, target: apx, cases_file: missing.csv }\n")
    with pytest.raises(ConfigErrors) as slow_errors:
        load_suite(path)
    doc = read_doc(path, str(path))
    fast_errors = check_document(doc, tmp_path.resolve(), project=parse(project))
    assert [str(e) for e in fast_errors] == [str(e) for e in slow_errors.value.errors]
    assert len(fast_errors) == 4


def test_python_field_names_are_left_to_the_models() -> None:
    """populate_by_name lets the models read assert_ for assert; the fast path refuses, the models decide."""
    data = minimal(assert_=[{"contains": "x"}])
    assert slow("suite", data) and not valid_suite(data)
