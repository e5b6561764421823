"""The JSON Schema: valid draft 2020-12, complete against the reference, in step with the models."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tamesu.config import build_schema, dump_schema
from tamesu.config.schema import SCHEMA_FILES

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
EXAMPLES = HERE / "reference_examples"
REFERENCE_KEYS = json.loads((HERE / "reference_keys.json").read_text(encoding="utf-8"))
REFERENCE = REFERENCE_KEYS["objects"]
EXTENSIONS = json.loads((HERE / "reference_extensions.json").read_text(encoding="utf-8"))["objects"]
REFERENCE_TEXT = Path("/work/shared/spec/suite-reference.txt")
SUITE_FILES = sorted(
    p for p in EXAMPLES.glob("*.yaml") if p.name not in ("key_examples.yaml", "tamesu-project.yaml")
)
KEY_EXAMPLES = yaml.safe_load((EXAMPLES / "key_examples.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    return {kind: build_schema(kind) for kind in ("suite", "project")}  # type: ignore[misc]


@pytest.fixture(scope="module")
def suite_schema(schemas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return schemas["suite"]


@pytest.fixture(scope="module")
def validator(suite_schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(suite_schema)


def object_form(schema: dict[str, Any]) -> dict[str, Any]:
    """The object branch of a model's schema (short-form models are anyOf [scalar, object])."""
    for branch in schema.get("anyOf", []):
        if branch.get("type") == "object":
            return branch
    return schema


def properties(schema: dict[str, Any], name: str) -> dict[str, Any]:
    node = schema if name == "Suite" else schema["$defs"][name]
    return object_form(node)["properties"]


def errors(validator: Draft202012Validator, data: Any) -> list[str]:
    return [e.message for e in validator.iter_errors(data)]


def minimal_suite(**extra: Any) -> dict[str, Any]:
    suite = {
        "suite": "s",
        "targets": {"api": {"type": "rest", "url": "http://127.0.0.1:9/chat"}},
        "tests": [{"name": "t", "target": "api", "scenario": {"goal": "Ask about returns"}}],
    }
    suite.update(extra)
    return suite


def with_assert(*items: Any) -> dict[str, Any]:
    suite = minimal_suite()
    suite["tests"][0]["assert"] = list(items)
    return suite


# --- the schema itself --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["suite", "project"])
def test_schema_is_valid_draft_2020_12(schemas: dict[str, dict[str, Any]], kind: str) -> None:
    schema = schemas[kind]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(SCHEMA_FILES[kind])
    assert schema["title"] and schema["description"]


@pytest.mark.parametrize("kind", ["suite", "project"])
def test_checked_in_schema_is_current(kind: str) -> None:
    path = ROOT / "schema" / SCHEMA_FILES[kind]
    assert path.read_text(encoding="utf-8") == dump_schema(kind), (  # type: ignore[arg-type]
        f"{path} is stale: regenerate it from tamesu.config.schema.dump_schema({kind!r})"
    )


def test_dump_is_deterministic(suite_schema: dict[str, Any]) -> None:
    again = json.dumps(suite_schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert dump_schema("suite") == again


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="suite or project"):
        build_schema("target")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(set(REFERENCE) - {"Target"}))
def test_schema_has_every_reference_key(suite_schema: dict[str, Any], name: str) -> None:
    assert set(properties(suite_schema, name)) - set(EXTENSIONS.get(name, ())) == set(REFERENCE[name])


def test_the_target_types_of_the_schema_take_the_reference_target_keys(suite_schema: dict[str, Any]) -> None:
    from tamesu.config.kinds import target_kinds

    configs = {e.name: e.config.__name__ for e in target_kinds.entries(builtin=True)}
    union = suite_schema["properties"]["targets"]["additionalProperties"]
    assert union["discriminator"]["mapping"] == {t: f"#/$defs/{c}" for t, c in configs.items()}
    keys = {k for c in configs.values() for k in properties(suite_schema, c)}
    assert keys == set(REFERENCE["Target"])
    for kind, name in configs.items():
        assert properties(suite_schema, name)["type"]["const"] == kind


def walk_properties(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, node in [("Suite", schema), *schema["$defs"].items()]:
        for key, prop in object_form(node).get("properties", {}).items():
            yield f"{name}.{key}", prop


@pytest.mark.parametrize("kind", ["suite", "project"])
def test_every_property_carries_a_description_and_an_example(
    schemas: dict[str, dict[str, Any]], kind: str
) -> None:
    for where, prop in walk_properties(schemas[kind]):
        assert prop.get("description"), where
        assert prop.get("examples"), where


# --- the schema accepts what the models accept ---------------------------------------------------


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.name)
def test_schema_accepts_reference_example_suites(validator: Draft202012Validator, path: Path) -> None:
    assert errors(validator, yaml.safe_load(path.read_text(encoding="utf-8"))) == []


def test_schema_accepts_every_key_example(validator: Draft202012Validator) -> None:
    failed = {f"{e['object']}.{e['key']}": errors(validator, e["suite"]) for e in KEY_EXAMPLES}
    assert {k: v for k, v in failed.items() if v} == {}


def test_project_schema_accepts_the_project_example(schemas: dict[str, dict[str, Any]]) -> None:
    data = yaml.safe_load((EXAMPLES / "tamesu-project.yaml").read_text(encoding="utf-8"))
    assert errors(Draft202012Validator(schemas["project"]), data) == []
    assert errors(Draft202012Validator(schemas["project"]), {"hooks": {"before_each": []}})


def test_schema_accepts_short_forms(validator: Draft202012Validator) -> None:
    suite = with_assert(
        {"judge": "polite"}, {"tool_called": "lookup"}, {"handoff": False}, {"call_ended_by": "agent"}
    )
    suite["targets"]["a2a"] = {"type": "a2a", "url": "http://127.0.0.1:9", "push": True}
    suite["tests"][0]["fuzz_tools"] = {"lookup": "error"}
    assert errors(validator, suite) == []


# --- and flags what the models refuse -----------------------------------------------------------


@pytest.mark.parametrize(
    ("suite", "where"),
    [
        (minimal_suite(test=[]), []),
        (
            minimal_suite(targets={"m": {"type": "model", "system": "s", "streaming": "sse"}}),
            ["targets", "m"],
        ),
        (minimal_suite(targets={"r": {"type": "rest"}}), ["targets", "r"]),
        (minimal_suite(targets={"r": {"type": "telepathy", "url": "u"}}), ["targets", "r"]),
        (minimal_suite(targets={"m": {"type": "model"}}), ["targets", "m"]),
        (minimal_suite(targets={"m": {"type": "mcp", "command": "c", "url": "u"}}), ["targets", "m"]),
        (minimal_suite(targets={"p": {"type": "sip", "direction": "inbound"}}), ["targets", "p"]),
        (minimal_suite(targets={"p": {"type": "sip"}}), ["targets", "p"]),
        (with_assert({"contains": "a", "regex": "b"}), ["tests", 0, "assert", 0]),
        (with_assert({"on_turn": "last"}), ["tests", 0, "assert", 0]),
        (with_assert({"contains": "a", "on_turn": 0}), ["tests", 0, "assert", 0, "on_turn"]),
        (
            with_assert({"judge": {"rubric": "r", "scale": "1-5", "min": 9}}),
            ["tests", 0, "assert", 0, "judge"],
        ),
        (with_assert({"metric": {"name": "m", "lt": 1, "gt": 0}}), ["tests", 0, "assert", 0, "metric"]),
        (minimal_suite(defaults={"timeout": "soon"}), ["defaults"]),
        (minimal_suite(defaults={"pass_threshold": 0}), ["defaults"]),
    ],
    ids=[
        "unknown-key",
        "misplaced-target-key",
        "rest-without-url",
        "unknown-target-type",
        "model-without-system",
        "mcp-command-and-url",
        "inbound-sip-without-trigger",
        "outbound-sip-without-to",
        "two-assertion-kinds",
        "no-assertion-kind",
        "turn-zero",
        "judge-min-out-of-range",
        "two-metric-bounds",
        "bad-duration",
        "zero-threshold",
    ],
)
def test_schema_flags_invalid_suites(
    validator: Draft202012Validator, suite: dict[str, Any], where: list[Any]
) -> None:
    assert [list(e.absolute_path) for e in validator.iter_errors(suite)] == [where]


def test_schema_accepts_target_alternatives(validator: Draft202012Validator) -> None:
    targets = {
        "m": {"type": "model", "system_file": "prompts/support.md"},
        "c": {"type": "mcp", "url": "http://127.0.0.1:9/mcp"},
        "i": {"type": "sip", "direction": "inbound", "trigger": {"command": "./call.sh"}},
        "o": {"type": "sip", "to": "+15550001"},
    }
    assert errors(validator, minimal_suite(targets=targets)) == []


@pytest.mark.parametrize(
    ("step", "ok"),
    [({"say": "hi", "data": {"a": 1}}, True), ({"wait_for": "press 2", "say": "hi"}, False), ({}, False)],
)
def test_schema_script_step_rules(validator: Draft202012Validator, step: dict[str, Any], ok: bool) -> None:
    suite = minimal_suite()
    suite["tests"][0]["scenario"] = {"script": [step]}
    assert (errors(validator, suite) == []) is ok


def test_schema_quarantine_date(validator: Draft202012Validator) -> None:
    suite = minimal_suite()
    suite["tests"][0]["quarantine"] = {"reason": "r", "until": "31/12/2026"}
    assert errors(validator, suite)
    suite["tests"][0]["quarantine"]["until"] = "2026-12-31"
    assert errors(validator, suite) == []


# --- the key list is the reference's --------------------------------------------------------------


def parse_reference(text: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Key tables of the reference; in optional rows the description sits one cell to the left."""
    lines = text.splitlines()
    objects: dict[str, dict[str, dict[str, Any]]] = {}
    current: str | None = None
    for i, line in enumerate(lines):
        if line.startswith("| Key | Type |"):
            j = i - 1
            while not re.fullmatch(r"[A-Za-z]+", lines[j].strip()):
                j -= 1
            current = lines[j].strip()
            objects[current] = {}
        elif current and line.startswith("|---"):
            continue
        elif current and " | " in line:
            cells = [c.strip() for c in line.rstrip().rstrip("|").split(" | ")]
            required = cells[2] == "yes"
            type_, description = cells[1], cells[3 if required else 2]
            objects[current][cells[0]] = {"type": type_, "required": required, "description": description}
        else:
            current = None
    return objects


@pytest.mark.skipif(not REFERENCE_TEXT.exists(), reason="the suite reference text is not on this machine")
def test_reference_keys_json_matches_the_reference() -> None:
    parsed = parse_reference(REFERENCE_TEXT.read_text(encoding="utf-8"))
    stored = {
        obj: {key: {k: v for k, v in info.items() if k != "example"} for key, info in keys.items()}
        for obj, keys in REFERENCE.items()
    }
    assert parsed == stored
