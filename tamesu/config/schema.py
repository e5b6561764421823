"""The JSON Schema of suites and of tamesu.yaml, generated from the models.

The files in schema/ are this module's output, checked in so editors can point at them; a test
fails when they are stale. Regenerate them with ``tamesu schema > schema/tamesu.schema.json`` and
``tamesu schema --project > schema/tamesu-project.schema.json``. The targets and assertions come
from the registries (``tamesu.config.kinds``), so an installed plugin's target type or assertion
kind is in the schema too. The models' Python-side rules are written into the schema where JSON
Schema can say them (``set_schema``, if/then rules), so editors flag what validate would.
"""

from __future__ import annotations

import json
from typing import Any, Literal

__all__ = ["SCHEMA_BASE_URI", "SCHEMA_FILES", "build_schema", "dump_schema"]

SchemaKind = Literal["suite", "project"]

SCHEMA_BASE_URI = "https://tamesu.dev/schema/"
"""Where the published schema files live; ``$id`` is this plus the file name."""

SCHEMA_FILES: dict[str, str] = {"suite": "tamesu.schema.json", "project": "tamesu-project.schema.json"}
"""Schema kind -> file name under schema/."""

_ABOUT: dict[str, tuple[str, str]] = {
    "suite": (
        "tamesu suite",
        "A tamesu suite: the targets under test, the suite's defaults and its tests. "
        "Strings accept ${VAR} and {{...}} templates; durations are strings such as 30s, 3m or 1h30m.",
    ),
    "project": (
        "tamesu project (tamesu.yaml)",
        "Project-wide tamesu settings: defaults, models, budgets, secrets and vars that every suite "
        "shares, plus where suites are found and where runs are written.",
    ),
}


def build_schema(kind: SchemaKind = "suite") -> dict[str, Any]:
    """A draft 2020-12 JSON Schema of a suite file or of tamesu.yaml."""
    if kind == "suite":
        from tamesu.config.suite import Suite as model
    elif kind == "project":
        from tamesu.config.project import Project as model  # type: ignore[assignment]
    else:
        raise ValueError(f"unknown schema kind {kind!r}; expected suite or project")
    body = model.model_json_schema(by_alias=True, mode="validation")
    title, description = _ABOUT[kind]
    return {
        **body,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_BASE_URI + SCHEMA_FILES[kind],
        "title": title,
        "description": description,
    }


def dump_schema(kind: SchemaKind = "suite") -> str:
    """The schema as the checked-in file holds it: sorted keys, two-space indent, final newline."""
    return json.dumps(build_schema(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
