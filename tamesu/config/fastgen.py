"""Build time: the suite and tamesu.yaml JSON Schemas compiled into a plain Python validator.

``tamesu validate`` decides that a file is valid without importing pydantic's models: it runs the
module this file writes, ``tamesu/config/_fastschema.py``, which holds one function per schema
definition and imports nothing but ``re`` and ``tamesu.config.fastrules``. The schemas come from
``build_schema`` (what ``tamesu schema`` prints), so the models stay the single source; a test
fails when the checked-in module is stale. Regenerate it with::

    python -m tamesu.config.fastgen

Only "valid" must be exact: when the generated validator refuses a file, validate runs the
models themselves and reports their errors. So every Python-side rule of the models is listed in
``RULES`` with how the generated code keeps it (a schema keyword, or a fastrules hook); a rule
listed in ``DEFERRED`` makes the generated code refuse every object of its model, which sends
such files to the models; a rule listed nowhere stops the generation, so every new validator gets
a decision. The compiler (``fastcompile``) knows the keywords our schemas use and refuses any
other, so no constraint is silently dropped.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tamesu.config.fastcompile import Compiler, literal

__all__ = ["DEFERRED", "GENERATED", "RULES", "generate", "prepare", "python_rules"]

GENERATED = Path(__file__).with_name("_fastschema.py")

RULES: dict[str, str] = {
    "config.common.ShortForm._from_short": "schema: anyOf [short form, object form]",
    "config.common._duration": "hook fastrules.duration (parse_duration of the value or its str, a unit required)",
    "config.common._date": "hook fastrules.date (a real day) + schema pattern YYYY-MM-DD",
    "config.common.Hook._one_action": "schema: oneOf required command / http",
    "config.common.RESTResponse._poll_or_listen": "schema: not (poll and listen both non-null)",
    "config.target.HandoffSignal._one_signal": "schema: oneOf required tool / json_path / regex",
    "config.target.Trigger._one_way": "schema: oneOf required http / command",
    "config.target.ToolDef._object_schema": "schema: parameters.type const object",
    "config.target.VoiceAudio._json_frames": "schema: frames json, or send and receive null",
    "config.target.Target._applies": "schema: per type, properties {key: false} for keys of other types",
    "config.target.Target._per_type": "schema: per type, required url and the if/then rules of each type",
    "config.assertion._turn": "schema: on_turn anyOf [integer >= 1, const last]",
    "config.assertion._as_list": "schema: call_ended_by anyOf [reason, list of reasons]",
    "config.assertion.Judge._min_needs_scale": "schema: if min non-null then scale const 1-5",
    "config.assertion.ToolCall._valid_schema": "hook fastrules.json_schema (Draft202012Validator.check_schema)",
    "config.assertion.MetricAssertion._one_bound": "schema: oneOf required lt / lte / gt / gte / eq",
    "config.assertion.IntCompare._some_bound": "schema: minProperties 1 (every key is a bound)",
    "config.assertion.CapturedAssertion._one_check": "schema: not (equals and matches both non-null)",
    "config.assertion.GoldenAssertion._one_source": "schema: oneOf required file / turns",
    "config.assertion.GroundedContext._one_source": "schema: oneOf required tool / json_path / text",
    "config.assertion._AssertionBase._one_kind": "schema: oneOf required, one per assertion kind",
    "config.assertion._AssertionBase._schema_only_when_called": "schema: not tool_not_called.schema non-null",
    "config.suite.Capture._one_source": "schema: oneOf required regex / json_path / extract",
    "config.suite.Step._one_kind": "schema: oneOf required goal / expect / action",
    "config.suite.Step._one_action": "schema: action min/maxProperties 1, propertyNames enum",
    "config.suite.Behaviors._ordered": "hook fastrules.ordered_range + schema: two integers",
    "config.suite.Persona._tactics_need_attacker": "schema: if tactics non-null then adversarial const true",
    "config.suite.ScriptFile._path_or_uri": "schema: oneOf required path / uri (object form)",
    "config.suite.ScriptStep._shape": "schema: anyOf required; wait_for and dtmf with maxProperties 1",
    "config.suite.Scenario._goal_or_script": "schema: anyOf [goal non-null, script with minItems 1]",
    "config.suite.Fuzz._custom_result": "schema: if mode const custom then required result, else not",
    "config.suite.Test._exclusive": "schema: not (cases and cases_file, or persona and counterpart, non-null)",
    "config.suite.RemoteReply._something_to_say": "schema: anyOf [say non-null, data non-null]",
    "config.suite.RemoteAgent._proxy_or_script": "schema: not forward with reply/replies; headers needs forward",
}
"""Every Python-side validator of the models (module.qualname) -> how the generated code keeps it."""

DEFERRED: dict[str, str] = {
    "load.profile.LoadProfile._one_mode": "not stated in the schema yet: tamesu.yaml with load: goes to the models",
    "load.profile.LoadProfile._shape_needs_duration": "not stated in the schema yet: as above",
}
"""Validators whose model the generated code refuses outright, so the models judge those files."""

_FIELD_HOOKS: dict[str, tuple[str, str, str]] = {
    "config.suite.Behaviors._ordered": ("Behaviors", "silence_after_turn_ms", "ordered_range"),
    "config.assertion.ToolCall._valid_schema": ("ToolCall", "schema", "json_schema"),
}
"""Validator -> (definition, property, the fastrules hook that finishes the property's check)."""

_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "$schema", "$id", "$comment"})


def _models(roots: tuple[type, ...]) -> Iterator[type]:
    """Every pydantic model reachable from ``roots`` through field annotations."""
    from pydantic import BaseModel

    seen: set[type] = set()
    stack = list(roots)
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        yield model
        for field in model.model_fields.values():  # type: ignore[attr-defined]
            for tp in _types(field.annotation):
                if isinstance(tp, type) and issubclass(tp, BaseModel):
                    stack.append(tp)


def _types(tp: Any) -> Iterator[Any]:
    yield tp
    for arg in typing.get_args(tp):
        yield from _types(arg)


def _key(func: Any) -> str:
    func = getattr(func, "__func__", func)
    return f"{func.__module__.removeprefix('tamesu.')}.{func.__qualname__}"


def python_rules(roots: tuple[type, ...]) -> dict[str, list[str]]:
    """Model name -> the keys (module.qualname) of the Python validators that run on its objects.

    Decorated validators (inherited ones included), validators inside field annotations
    (``Annotated[..., BeforeValidator(f)]``, at any depth of the field's type) and types that
    bring their own pydantic core schema.
    """
    from pydantic import BaseModel

    out: dict[str, list[str]] = {}
    for model in _models(roots):
        keys: list[str] = []
        decorators = model.__pydantic_decorators__  # type: ignore[attr-defined]
        for group in (decorators.validators, decorators.field_validators, decorators.root_validators):
            keys.extend(_key(d.func) for d in group.values())
        keys.extend(_key(d.func) for d in decorators.model_validators.values())
        for field in model.model_fields.values():  # type: ignore[attr-defined]
            metadata = list(field.metadata)
            for tp in _types(field.annotation):
                metadata.extend(getattr(tp, "__metadata__", ()))
            keys.extend(_key(m.func) for m in metadata if hasattr(m, "func"))
            keys.extend(
                f"{tp.__module__.removeprefix('tamesu.')}.{tp.__qualname__}"
                for tp in _types(field.annotation)
                if isinstance(tp, type)
                and hasattr(tp, "__get_pydantic_core_schema__")
                and not issubclass(tp, BaseModel)
            )
        out[model.__name__] = sorted(set(keys))
    return out


def _strip(node: Any) -> Any:
    """The schema without annotations (titles, descriptions, examples, defaults)."""
    if isinstance(node, list):
        return [_strip(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in _ANNOTATIONS:
            continue
        if key in ("properties", "$defs"):
            out[key] = {k: _strip(v) for k, v in value.items()}
        else:
            out[key] = _strip(value)
    return out


def _mark_hooks(node: Any) -> Any:
    """Durations and dates become fastrules hooks: their Python validators are the rule, not the pattern."""
    from tamesu.config.common import DATE_PATTERN, DURATION_NUMBER, DURATION_PATTERN

    duration = [{"type": "string", "pattern": DURATION_PATTERN}, DURATION_NUMBER]
    if isinstance(node, list):
        return [_mark_hooks(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    branches = node.get("anyOf")
    if isinstance(branches, list) and all(b in branches for b in duration):
        rest = [b for b in branches if b not in duration]
        if rest:
            node["anyOf"] = [{"x-hook": "duration"}, *rest]
        else:
            del node["anyOf"]
            node["x-hook"] = "duration"
    for key, value in node.items():
        if key == "properties":
            node[key] = {p: _mark_hooks(s) for p, s in value.items()}
        elif isinstance(value, (dict, list)):
            node[key] = _mark_hooks(value)
    if node.get("pattern") == DATE_PATTERN:
        node["x-hook"] = "date"
    if node.get("pattern") == DURATION_PATTERN:
        raise ValueError("a duration pattern outside a Duration's anyOf: the fast validator cannot read it")
    return node


def _object_form(node: dict[str, Any]) -> dict[str, Any]:
    for branch in node.get("anyOf", []):
        if branch.get("type") == "object":
            return branch  # type: ignore[no-any-return]
    return node


def prepare(kind: str) -> dict[str, Any]:
    """The schema of ``kind`` as the compiler reads it: stripped, hooks marked, deferred models refused."""
    from tamesu.config.project import Project
    from tamesu.config.schema import build_schema
    from tamesu.config.suite import Suite

    root_model = Suite if kind == "suite" else Project
    schema = _mark_hooks(_strip(build_schema(kind)))  # type: ignore[arg-type]
    defs: dict[str, Any] = schema.pop("$defs", {})
    for model, keys in python_rules((root_model,)).items():
        if model != root_model.__name__ and model not in defs:
            raise ValueError(f"model {model} has no definition of its name in the {kind} schema")
        unknown = [k for k in keys if k not in RULES and k not in DEFERRED]
        if unknown:
            raise ValueError(f"{model}: validators {unknown} are neither in fastgen.RULES nor DEFERRED")
        for key in keys:
            if key in _FIELD_HOOKS:
                name, prop, hook = _FIELD_HOOKS[key]
                _object_form(defs[name])["properties"][prop]["x-hook"] = hook
        if any(k in DEFERRED for k in keys):
            if model == root_model.__name__:
                schema = False
            else:
                defs[model] = False
    return {"root": schema, "defs": defs}


_HEADER = '''\
"""Generated by tamesu.config.fastgen from the suite and tamesu.yaml JSON Schemas: do not edit.

Regenerate with ``python -m tamesu.config.fastgen``. ``valid_suite`` and ``valid_project`` say
True only where the pydantic models accept the mapping; the other constants are the models' own.
"""

from __future__ import annotations

import re
from typing import Any

from tamesu.config import fastrules as _rules

__all__ = ["BUILTIN_PACKS", "DEFAULT_SUITE_GLOBS", "valid_project", "valid_suite"]

'''


def generate() -> str:
    """The source of ``tamesu/config/_fastschema.py``."""
    from tamesu.config.assertion import BUILTIN_PACKS
    from tamesu.config.project import DEFAULT_SUITE_GLOBS

    compiler = Compiler()
    roots = {}
    for kind in ("suite", "project"):
        prepared = prepare(kind)
        compiler.defs = prepared["defs"]
        roots[kind] = compiler.call(prepared["root"], "data")
    out = _HEADER
    out += "BUILTIN_PACKS = (\n" + "".join(f"    {literal(p)},\n" for p in BUILTIN_PACKS) + ")\n"
    out += f"DEFAULT_SUITE_GLOBS = ({', '.join(map(literal, DEFAULT_SUITE_GLOBS))})\n"
    out += "".join(f"{name} = {source}\n" for source, name in compiler.constants.items())
    out += "\n\n" + "\n\n".join(compiler.bodies)
    out += "\n\ndef valid_suite(data: Any) -> bool:\n"
    out += '    """True when the suite models accept ``data`` (the mapping a suite file holds)."""\n'
    out += f"    return {roots['suite']}\n"
    out += "\n\ndef valid_project(data: Any) -> bool:\n"
    out += '    """True when the tamesu.yaml model accepts ``data``."""\n'
    out += f"    return {roots['project']}\n"
    return out


def main(argv: list[str] | None = None) -> int:
    """Write the generated module, or with ``--check`` say whether the checked-in one is current."""
    args = sys.argv[1:] if argv is None else argv
    source = generate()
    if "--check" in args:
        current = GENERATED.read_text(encoding="utf-8") if GENERATED.exists() else ""
        if current != source:
            print(f"{GENERATED} is stale: run python -m tamesu.config.fastgen", file=sys.stderr)
            return 1
        return 0
    GENERATED.write_text(source, encoding="utf-8")
    print(f"wrote {GENERATED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
