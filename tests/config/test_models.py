"""The suite and tamesu.yaml models: every reference example validates, and every per-object rule holds."""

from __future__ import annotations

import datetime as dt
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

import tamesu.config as config
from tamesu.config import (
    Assertion,
    Behaviors,
    Capture,
    Defaults,
    Delegation,
    Evaluator,
    Fuzz,
    GoldenAssertion,
    HandoffAssertion,
    HandoffSignal,
    Hook,
    Judge,
    MetricAssertion,
    Models,
    Project,
    Push,
    Quarantine,
    RemoteSkill,
    Scenario,
    ScriptFile,
    ScriptStep,
    Similar,
    SipTarget,
    Step,
    Suite,
    Target,
    Test,
    ToolCall,
    Trigger,
    effective_budgets,
    effective_defaults,
    effective_models,
    effective_secrets,
    effective_vars,
    parse_target,
)
from tamesu.config.kinds import assertion_kinds, target_kinds

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent
EXAMPLES = HERE / "reference_examples"
REFERENCE = json.loads((HERE / "reference_keys.json").read_text(encoding="utf-8"))["objects"]
SUITE_FILES = sorted(
    p for p in EXAMPLES.glob("*.yaml") if p.name not in ("key_examples.yaml", "tamesu-project.yaml")
)
KEY_EXAMPLES = yaml.safe_load((EXAMPLES / "key_examples.yaml").read_text(encoding="utf-8"))


def plain(value: Any) -> Any:
    """YAML 1.1 dates back to the strings the loader hands over."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def reference_example(obj: str, key: str) -> Any:
    return plain(yaml.safe_load(REFERENCE[obj][key]["example"])[key])


def minimal_suite(**extra: Any) -> dict[str, Any]:
    suite = {
        "suite": "s",
        "targets": {"api": {"type": "rest", "url": "http://127.0.0.1:9/chat"}},
        "tests": [{"name": "t", "target": "api", "scenario": {"goal": "Ask about returns"}}],
    }
    suite.update(extra)
    return suite


TARGET: TypeAdapter[Any] = TypeAdapter(Target)
"""A suite's target: the union of the registered types, validated as a suite's targets entry is."""


def error_of(model: type[BaseModel] | TypeAdapter[Any], data: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as info:
        if isinstance(model, TypeAdapter):
            model.validate_python(data)
        else:
            model.model_validate(data)
    errors = info.value.errors()
    assert len(errors) == 1, errors
    return dict(errors[0])


# --- every example of the reference -------------------------------------------------------------


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.name)
def test_reference_example_suites_validate(path: Path) -> None:
    suite = Suite.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert suite.tests


def test_project_example_validates() -> None:
    project = Project.model_validate(
        yaml.safe_load((EXAMPLES / "tamesu-project.yaml").read_text(encoding="utf-8"))
    )
    assert project.concurrency == 8
    assert project.sip is not None and project.sip.outbound_trunk_id == "ST_abc123"
    assert project.hooks is not None and project.hooks.after_all[0].timeout == "2m"


def test_key_examples_cover_every_reference_key() -> None:
    covered = {(e["object"], e["key"]) for e in KEY_EXAMPLES}
    expected = {(obj, key) for obj, keys in REFERENCE.items() for key in keys}
    assert covered == expected


@pytest.mark.parametrize("entry", KEY_EXAMPLES, ids=lambda e: f"{e['object']}.{e['key']}")
def test_key_example_validates_and_holds_the_reference_example(entry: dict[str, Any]) -> None:
    at: Any = entry["suite"]
    for part in entry["path"]:
        at = at[part]
    assert at[entry["key"]] == reference_example(entry["object"], entry["key"])
    Suite.model_validate(entry["suite"])


# --- the models carry the reference -------------------------------------------------------------


def all_models() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ in found:
                return
            found[tp.__name__] = tp
            for field in tp.model_fields.values():
                visit(field.annotation)
        for arg in typing.get_args(tp):
            visit(arg)

    visit(Suite)
    visit(Project)
    return found


EXTENSIONS = {
    name: set(keys)
    for name, keys in json.loads((HERE / "reference_extensions.json").read_text(encoding="utf-8"))[
        "objects"
    ].items()
}
OBJECTS = sorted(set(REFERENCE) - {"Target"})
"""The reference's objects that are one model each; its Target is one model per target type."""


def target_fields(key: str) -> list[Any]:
    """The field of ``key`` in every target type's config that takes it."""
    return [
        f
        for e in target_kinds.entries(builtin=True)
        for n, f in e.config.model_fields.items()
        if (f.alias or n) == key
    ]


def test_every_reference_object_has_a_model_named_after_it() -> None:
    models = all_models()
    assert set(OBJECTS) <= set(models)
    for name in OBJECTS:
        assert getattr(config, name) is models[name]
    assert {e.config for e in target_kinds.entries(builtin=True)} <= set(models.values())


@pytest.mark.parametrize("name", OBJECTS)
def test_fields_match_reference_keys_and_examples(name: str) -> None:
    model = getattr(config, name)
    fields = {f.alias or n: f for n, f in model.model_fields.items()}
    assert set(fields) - EXTENSIONS.get(name, set()) == set(REFERENCE[name])
    for key, info in REFERENCE[name].items():
        field = fields[key]
        assert field.is_required() == info["required"], key
        assert field.examples and plain(field.examples[0]) == reference_example(name, key), key


def test_target_types_together_take_the_reference_keys_with_its_examples() -> None:
    keys = {k for e in target_kinds.entries(builtin=True) for k in e.keys}
    assert keys == set(REFERENCE["Target"])
    for entry in target_kinds.entries(builtin=True):
        assert entry.config.model_fields["type"].examples == [entry.name]
    for key in keys - {"type"}:
        examples = [plain(f.examples[0]) for f in target_fields(key) if f.examples]
        assert len(examples) == len(target_fields(key)), key
        assert reference_example("Target", key) in examples, key
    assert all(e.config.model_fields["type"].is_required() for e in target_kinds.entries(builtin=True))


def test_every_field_has_a_description_and_an_example() -> None:
    for name, model in all_models().items():
        for key, field in model.model_fields.items():
            assert field.description, f"{name}.{key}"
            assert field.examples, f"{name}.{key}"


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower().replace("’", "'")).strip()


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_descriptions_are_our_own_words(name: str) -> None:
    for key, info in REFERENCE[name].items():
        if name == "Target":
            descriptions = [f.description or "" for f in target_fields(key)]
        else:
            fields = {f.alias or n: f for n, f in getattr(config, name).model_fields.items()}
            descriptions = [fields[key].description or ""]
        for description in descriptions:
            ours, theirs = _words(description), _words(info["description"])
            assert ours != theirs and not (len(theirs) > 20 and theirs in ours), f"{name}.{key}"
            assert not (len(ours) > 20 and ours in theirs), f"{name}.{key}"


# --- strictness ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "data", "key"),
    [
        (Suite, minimal_suite(test=[]), "test"),
        (TARGET, {"type": "rest", "url": "u", "urls": "x"}, "urls"),
        (Assertion, {"contains": "x", "on_trun": "last"}, "on_trun"),
        (Judge, {"rubric": "r", "scal": "1-5"}, "scal"),
        (Project, {"concurency": 4}, "concurency"),
    ],
)
def test_unknown_keys_are_rejected(model: type[BaseModel] | TypeAdapter[Any], data: Any, key: str) -> None:
    err = error_of(model, data)
    assert err["type"] == "extra_forbidden" and err["loc"][-1] == key


def test_numbers_are_not_strings() -> None:
    err = error_of(Suite, minimal_suite(vars={"days": 40}))
    assert err["type"] == "string_type" and err["loc"] == ("vars", "days")


def test_python_names_and_yaml_keys_both_work() -> None:
    test = Test.model_validate({"name": "t", "target": "api", "assert": [{"contains": "x"}]})
    assert test.assert_[0].kind == "contains"
    assert Test(name="t", target="api", assert_=[{"contains": "x"}]).assert_[0].spec == "x"  # type: ignore[list-item]
    assert parse_target({"type": "sip", "to": "+1", "from": "+2"}).from_ == "+2"  # type: ignore[attr-defined]
    call = ToolCall.model_validate({"name": "book", "schema": {"type": "object"}})
    assert call.schema_ == {"type": "object"}
    assert "assert" in test.model_dump() and "from" in SipTarget(type="sip", to="+1").model_dump()


# --- one-of forms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "short", "field", "value"),
    [
        (Judge, "The agent is polite", "rubric", "The agent is polite"),
        (ToolCall, "lookup_order", "name", "lookup_order"),
        (Similar, "Returns take 30 days", "text", "Returns take 30 days"),
        (Push, True, "enabled", True),
        (Push, False, "enabled", False),
        (HandoffAssertion, False, "expected", False),
        (Fuzz, "error", "mode", "error"),
        (ScriptFile, "fixtures/invoice.pdf", "path", "fixtures/invoice.pdf"),
        (ScriptFile, "https://cdn.example.com/a.jpg", "uri", "https://cdn.example.com/a.jpg"),
        (RemoteSkill, "refund", "id", "refund"),
        (Delegation, "billing", "agent", "billing"),
        (Evaluator, "genkitEval/faithfulness", "name", "genkitEval/faithfulness"),
    ],
)
def test_short_forms_read_as_objects(model: type[BaseModel], short: Any, field: str, value: Any) -> None:
    assert getattr(model.model_validate(short), field) == value


def test_short_form_defaults_apply() -> None:
    judge = Judge.model_validate("polite")
    assert (judge.scale, judge.min, judge.model) == ("binary", None, None)
    assert Similar.model_validate("x").min == 0.8
    assert HandoffAssertion.model_validate({}).expected is True


def test_short_forms_of_the_wrong_type_are_rejected() -> None:
    assert error_of(Push, "yes")["type"] == "model_type"
    assert error_of(Fuzz, "explode")["type"] == "literal_error"
    assert error_of(Judge, 3)["type"] == "model_type"


def test_on_turn_is_a_number_or_last() -> None:
    assert Assertion.model_validate({"contains": "x", "on_turn": "last"}).on_turn == "last"
    assert Assertion.model_validate({"contains": "x", "on_turn": 3}).on_turn == 3
    for bad in (0, "first", True):
        assert error_of(Assertion, {"contains": "x", "on_turn": bad})["type"] == "on_turn"


def test_string_list_is_always_a_list() -> None:
    assert Assertion.model_validate({"call_ended_by": "agent"}).spec == ["agent"]
    assert Assertion.model_validate({"call_ended_by": ["agent", "busy"]}).spec == ["agent", "busy"]
    assert error_of(Assertion, {"call_ended_by": "hung_up"})["type"] == "literal_error"


# --- exactly one --------------------------------------------------------------------------------


def test_assertion_kinds_come_from_the_registry() -> None:
    kinds = set(Assertion.model_fields) - {"on_turn"}
    assert (
        kinds
        == {e.name for e in assertion_kinds.entries(builtin=True)}
        == set(REFERENCE["Assertion"]) - {"on_turn"}
    )
    judged = Assertion.model_validate({"judge": "polite", "on_turn": "last"})
    assert judged.kind == "judge" and isinstance(judged.spec, Judge) and judged.spec.rubric == "polite"


def test_assertion_holds_exactly_one_kind() -> None:
    err = error_of(Assertion, {"contains": "a", "regex": "b"})
    assert err["type"] == "more_than_one_of"
    assert "judge, metric" in err["msg"] and "found contains, regex" in err["msg"]
    assert error_of(Assertion, {"on_turn": 1})["type"] == "missing_one_of"
    assert error_of(Assertion, {"contains": None})["type"] == "string_type"


@pytest.mark.parametrize(
    ("model", "data", "names"),
    [
        (Step, {"goal": "g", "expect": "e"}, "goal, expect, action"),
        (Step, {}, "goal, expect, action"),
        (Capture, {"name": "n", "regex": "r", "json_path": "$.a"}, "regex, json_path, extract"),
        (Capture, {"name": "n"}, "regex, json_path, extract"),
        (Hook, {"command": "c", "http": {"url": "u"}}, "command, http"),
        (Hook, {"timeout": "1s"}, "command, http"),
        (Trigger, {}, "http, command"),
        (HandoffSignal, {"tool": "t", "regex": "r"}, "tool, json_path, regex"),
        (GoldenAssertion, {"file": "f", "turns": ["a"]}, "file, turns"),
        (MetricAssertion, {"name": "m", "lt": 1, "gt": 0}, "lt, lte, gt, gte, eq"),
        (ScriptStep, {}, "say, wait_for, dtmf, data, files"),
        (ScriptFile, {"name": "a.pdf"}, "path, uri"),
    ],
)
def test_exactly_one_alternative(model: type[BaseModel], data: Any, names: str) -> None:
    err = error_of(model, data)
    assert err["type"] in ("missing_one_of", "more_than_one_of")
    assert names in err["msg"]


def test_script_step_rules() -> None:
    assert ScriptStep.model_validate({"say": "hi", "data": {"a": 1}, "files": ["a.pdf"]}).files
    assert error_of(ScriptStep, {"wait_for": "press 2", "say": "hi"})["type"] == "script_step_alone"
    assert error_of(ScriptStep, {"dtmf": "2", "data": {}})["type"] == "script_step_alone"
    assert error_of(ScriptStep, {"dtmf": "two"})["type"] == "string_pattern_mismatch"
    assert ScriptStep.model_validate({"dtmf": "12#{{vars.pin}}"}).dtmf == "12#{{vars.pin}}"


def test_step_action_names_one_known_action() -> None:
    assert Step.model_validate({"action": {"click": "#buy"}}).action == {"click": "#buy"}
    assert error_of(Step, {"action": {"tap": "#buy"}})["type"] == "browser_action"
    assert error_of(Step, {"action": {"click": "#a", "fill": {}}})["type"] == "browser_action"


def test_other_per_object_rules() -> None:
    assert error_of(Scenario, {"max_turns": 3})["type"] == "scenario_empty"
    assert Scenario.model_validate({"script": [{"say": "hi"}]}).goal is None
    assert error_of(Fuzz, {"mode": "custom"})["type"] == "fuzz_result"
    assert error_of(Fuzz, {"mode": "error", "result": 1})["type"] == "fuzz_result"
    assert (
        error_of(Test, {"name": "t", "target": "a", "cases": [{"vars": {}}], "cases_file": "c.csv"})["type"]
        == "test_cases"
    )
    assert error_of(Test, {"name": "t", "target": "a", "persona": {}, "counterpart": {"target": "b"}})[
        "type"
    ] == ("test_counterpart")
    assert error_of(Assertion, {"tool_not_called": {"name": "x", "schema": {}}})["type"] == "tool_schema"
    assert error_of(Assertion, {"tool_called": {"name": "x", "schema": {"type": 5}}})["type"] == "json_schema"
    assert (
        error_of(Assertion, {"captured": {"name": "x", "equals": "a", "matches": "b"}})["type"]
        == "captured_check"
    )
    assert error_of(Capture, {"name": "order id", "regex": "x"})["type"] == "string_pattern_mismatch"


# --- ranges, durations, dates -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "data", "error"),
    [
        (Defaults, {"pass_threshold": 0}, "greater_than"),
        (Defaults, {"pass_threshold": 1.01}, "less_than_equal"),
        (Test, {"name": "t", "target": "a", "pass_threshold": 0}, "greater_than"),
        (Test, {"name": "t", "target": "a", "repeat": 0}, "greater_than_equal"),
        (Test, {"name": "t", "target": "a", "retries": -1}, "greater_than_equal"),
        (Scenario, {"goal": "g", "max_turns": 0}, "greater_than_equal"),
        (Behaviors, {"interrupt_probability": 1.5}, "less_than_equal"),
        (Behaviors, {"background_noise_snr_db": 61}, "less_than_equal"),
        (Behaviors, {"background_noise_snr_db": -11}, "greater_than_equal"),
        (Behaviors, {"silence_after_turn_ms": [900, 300]}, "silence_range"),
        (Behaviors, {"silence_after_turn_ms": [300]}, "too_short"),
        (Judge, {"rubric": "r", "scale": "1-5", "min": 6}, "less_than_equal"),
        (Judge, {"rubric": "r", "min": 4}, "judge_min"),
        (Judge, {"rubric": "r", "scale": "1-10"}, "literal_error"),
        (Similar, {"text": "t", "min": 1.2}, "less_than_equal"),
        (Evaluator, {"name": "n", "min": -0.1}, "greater_than_equal"),
        (Hook, {"command": "c", "timeout": "soon"}, "duration"),
        (Quarantine, {"reason": "r", "until": "2026-02-30"}, "date"),
        (Quarantine, {"reason": "r", "until": "31/12/2026"}, "date"),
        (Project, {"concurrency": 0}, "greater_than_equal"),
    ],
)
def test_ranges(model: type[BaseModel], data: Any, error: str) -> None:
    assert error_of(model, data)["type"] == error


def test_edges_of_ranges_pass() -> None:
    assert Defaults.model_validate({"pass_threshold": 1}).pass_threshold == 1
    assert Behaviors.model_validate({"interrupt_probability": 0, "silence_after_turn_ms": [0, 0]})
    assert Judge.model_validate({"rubric": "r", "scale": "1-5", "min": 1}).min == 1


def test_durations_stay_strings() -> None:
    assert Hook.model_validate({"command": "c", "timeout": "1h30m"}).timeout == "1h30m"
    assert Hook.model_validate({"command": "c", "timeout": 0}).timeout == "0"
    assert Hook.model_validate({"command": "c"}).timeout == "60s"


@pytest.mark.parametrize("bare", [90, 1.5, "5", " 30 "])
def test_a_duration_without_a_unit_is_refused(bare: object) -> None:
    error = error_of(Hook, {"command": "c", "timeout": bare})
    assert error["type"] == "duration" and "needs a unit" in error["msg"]


def test_dates_stay_strings() -> None:
    assert Quarantine.model_validate({"reason": "r", "until": "2026-12-31"}).until == "2026-12-31"
    assert Quarantine.model_validate({"reason": "r", "until": dt.date(2026, 12, 31)}).until == "2026-12-31"
    assert error_of(Quarantine, {"reason": "r", "until": "20261231"})["type"] in (
        "date",
        "string_pattern_mismatch",
    )


def test_recording_off_is_the_string_off() -> None:
    target = {"type": "browser", "url": "u", "browser": {"recording": "off"}}
    assert parse_target(target).browser.recording == "off"  # type: ignore[attr-defined]
    target["browser"] = {"recording": False}
    assert error_of(TARGET, target)["type"] == "literal_error"


# --- targets ------------------------------------------------------------------------------------


def test_each_target_type_takes_its_own_keys() -> None:
    model, rest = target_kinds.get("model"), target_kinds.get("rest")
    assert model.keys >= {"system", "tools", "session", "type"}
    assert "streaming" in rest.keys and "streaming" not in model.keys
    assert target_kinds.types_with_key("from") == ["sip", "twilio"]
    for entry in target_kinds.entries(builtin=True):
        assert typing.get_args(entry.config.model_fields["type"].annotation) == (entry.name,)


def test_misplaced_target_key_names_the_types_that_take_it() -> None:
    err = error_of(TARGET, {"type": "model", "system": "s", "streaming": "sse"})
    assert err["msg"] == "`streaming` applies to type rest, not model"
    assert err["loc"][-1] == "streaming" and err["ctx"]["key"] == "streaming"
    err = error_of(TARGET, {"type": "model", "system": "s", "from": "+1"})
    assert err["msg"] == "`from` applies to types sip, twilio, not model"


def test_a_misplaced_key_hides_no_other_error_of_the_target() -> None:
    with pytest.raises(ValidationError) as info:
        TARGET.validate_python({"type": "rest", "url": 5, "system": "s", "urls": "x"})
    found = {(e["loc"][-1], e["type"]) for e in info.value.errors()}
    assert found == {("system", "target_key"), ("url", "string_type"), ("urls", "extra_forbidden")}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"type": "rest"}, "Field required"),
        ({"type": "model"}, "exactly one of system, system_file"),
        ({"type": "model", "system": "a", "system_file": "b"}, "exactly one of system, system_file"),
        ({"type": "mcp"}, "exactly one of command, url"),
        ({"type": "mcp", "url": "u", "args": ["-v"]}, "args and env apply to an mcp target with command"),
        ({"type": "sip"}, "needs to"),
        ({"type": "sip", "direction": "inbound"}, "needs trigger"),
        ({"type": "livekit", "token": "t", "api_key": "k", "api_secret": "s"}, "token or api_key"),
        ({"type": "livekit", "api_key": "k"}, "go together"),
        ({"type": "rest", "url": "u", "protocol": "socketio"}, "streaming: websocket"),
        (
            {"type": "rest", "url": "u", "request": {"open": {}}},
            "request.open apply with streaming: websocket",
        ),
        ({"type": "rest", "url": "u", "request": {"capture": {"ts": "$.ts"}}}, "response.poll"),
        ({"type": "realtime", "protocol": "socketio"}, "'ga' or 'beta'"),
    ],
)
def test_target_type_rules(data: dict[str, Any], error: str) -> None:
    assert error in error_of(TARGET, data)["msg"]


def test_target_keys_that_apply_are_accepted() -> None:
    ws = parse_target(
        {
            "type": "rest",
            "url": "u",
            "streaming": "websocket",
            "protocol": "socketio",
            "request": {"open": {}},
        }
    )
    assert ws.protocol == "socketio"  # type: ignore[attr-defined]
    assert parse_target({"type": "mcp", "command": "srv", "args": ["-v"]}).args == ["-v"]  # type: ignore[attr-defined]
    assert parse_target({"type": "realtime"}).url is None  # type: ignore[attr-defined]


# --- project and precedence ---------------------------------------------------------------------


def layered() -> tuple[Project, Suite, Test]:
    project = Project.model_validate(
        {
            "defaults": {
                "timeout": "3m",
                "repeat": 2,
                "retries": 1,
                "assert": [{"pack": "pii_leakage"}],
                "slo": {"a": 1, "b": 2},
            },
            "models": {
                "default": "p/default",
                "judge": "p/judge",
                "retry": {"attempts": 5},
                "credentials": {"x": "1"},
            },
            "budgets": {"max_cost_usd": 9, "max_tokens": 100},
            "secrets": {"A": "env:A", "B": "env:B"},
            "vars": {"x": "project", "y": "project"},
        }
    )
    suite = Suite.model_validate(
        minimal_suite(
            defaults={"timeout": "2m", "assert": [{"contains": "thanks"}], "slo": {"b": 3}},
            models={"judge": "s/judge", "retry": {"backoff": "1s"}, "credentials": {"y": "2"}},
            budgets={"max_cost_usd": 2},
            secrets={"B": "env:SUITE_B"},
            vars={"y": "suite"},
        )
    )
    test = Test.model_validate({"name": "t", "target": "api", "timeout": "1m", "vars": {"z": "test"}})
    return project, suite, test


def test_effective_defaults_precedence() -> None:
    project, suite, test = layered()
    merged = effective_defaults(project, suite)
    assert (merged.timeout, merged.repeat, merged.retries, merged.pass_threshold) == ("2m", 2, 1, 1.0)
    assert [a.kind for a in merged.assert_] == ["pack", "contains"]
    assert merged.slo == {"a": 1, "b": 3}
    assert effective_defaults(project, suite, test).timeout == "1m"
    alone = effective_defaults(None, Suite.model_validate(minimal_suite()))
    assert (alone.timeout, alone.repeat, alone.assert_) == ("3m", 1, [])


def test_effective_maps_and_models() -> None:
    project, suite, test = layered()
    assert effective_secrets(project, suite) == {"A": "env:A", "B": "env:SUITE_B"}
    assert effective_vars(project, suite, test) == {"x": "project", "y": "suite", "z": "test"}
    models = effective_models(project, suite)
    assert isinstance(models, Models)
    assert (models.default, models.judge) == ("p/default", "s/judge")
    assert models.retry is not None and (models.retry.attempts, models.retry.backoff) == (5, "1s")
    assert models.credentials == {"x": "1", "y": "2"}
    budgets = effective_budgets(project, suite)
    assert (budgets.max_cost_usd, budgets.max_tokens) == (2, 100)
    assert effective_budgets(None, Suite.model_validate(minimal_suite())).max_tokens == 2_000_000


def test_project_defaults() -> None:
    project = Project.model_validate({})
    assert project.output == "tamesu-runs"
    assert project.suites == ["**/*.tamesu.yaml", "suites/**/*.yaml"]
    assert project.concurrency >= 1 and project.sip is None and project.hooks is None
    assert error_of(Project, {"hooks": {"before_each": []}})["type"] == "extra_forbidden"
