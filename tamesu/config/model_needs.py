"""Which parts of a suite need a model, read from its plain data, and the walks over its tests and
assertion lists that the checks of a suite share.

The checks (``checks``), the value checks (``valuechecks``) and the environment warnings
(``environment``) all read the same lists; they live here, below all three, so none of them
imports another for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tamesu.config.yamlload import KeyPath

__all__ = ["MODEL_PACKS", "ModelNeed", "assertion_items", "assertion_lists", "model_needs", "tests_of"]


def tests_of(data: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every test of a suite's plain data that is a mapping, with its index."""
    for i, test in enumerate(data.get("tests") or []):
        if isinstance(test, dict):
            yield i, test


def assertion_lists(data: dict[str, Any]) -> Iterator[tuple[KeyPath, list[Any]]]:
    """Every list of assertions in a suite with its key path (tests, defaults, packs, red_team)."""
    for i, test in tests_of(data):
        if isinstance(test.get("assert"), list):
            yield ("tests", i, "assert"), test["assert"]
    defaults = data.get("defaults")
    if isinstance(defaults, dict) and isinstance(defaults.get("assert"), list):
        yield ("defaults", "assert"), defaults["assert"]
    packs = data.get("packs")
    for name, items in packs.items() if isinstance(packs, dict) else ():
        if isinstance(items, list):
            yield ("packs", name), items
    red_team = data.get("red_team")
    if isinstance(red_team, dict) and isinstance(red_team.get("assert"), list):
        yield ("red_team", "assert"), red_team["assert"]


def assertion_items(data: dict[str, Any]) -> Iterator[tuple[KeyPath, str, Any]]:
    """Every assertion of a suite as (key path, kind, spec), ``on_turn`` left out."""
    for path, items in assertion_lists(data):
        for j, item in enumerate(items):
            if isinstance(item, dict):
                for kind, spec in item.items():
                    if kind != "on_turn":
                        yield (*path, j, kind), kind, spec


MODEL_PACKS = frozenset(
    {
        "prompt_injection",
        "stays_in_scope",
        "discloses_ai",
        "harmful_content",
        "excessive_agency",
        "policy_consistency",
    }
)
"""Built-in packs that grade with a judge (tamesu.config.packs marks them needs_model; a test keeps both in step)."""


@dataclass
class ModelNeed:
    """A part of a suite that cannot run without a model of this role."""

    path: KeyPath
    role: str
    why: str
    optional: bool = False
    """It runs without a model too (the red team's attacker plays its scripted openings): only a
    model that is configured but cannot be called is a problem."""


def model_needs(data: dict[str, Any]) -> list[ModelNeed]:
    """Which parts of a suite need which model role (judge, simulator, embedder, default)."""
    needs: list[ModelNeed] = []
    for i, test in tests_of(data):
        scenario = test.get("scenario")
        if isinstance(scenario, dict) and scenario.get("goal") and not test.get("counterpart"):
            # with a counterpart, the other agent answers the goal: no model plays the user
            needs.append(ModelNeed(("tests", i, "scenario", "goal"), "simulator", "a scenario goal"))
        if isinstance(scenario, dict) and scenario.get("stop_when"):
            needs.append(ModelNeed(("tests", i, "scenario", "stop_when"), "judge", "a stop_when condition"))
        for j, cap in enumerate(test.get("capture") or []):
            if isinstance(cap, dict) and cap.get("extract"):
                needs.append(ModelNeed(("tests", i, "capture", j, "extract"), "judge", "an extract capture"))
        for j, step in enumerate(test.get("steps") or []):
            if isinstance(step, dict) and step.get("goal"):
                needs.append(
                    ModelNeed(("tests", i, "steps", j, "goal"), "browser_agent", "a browser goal step")
                )
            elif isinstance(step, dict) and step.get("expect"):
                needs.append(ModelNeed(("tests", i, "steps", j, "expect"), "judge", "a browser expect step"))
    if isinstance(data.get("red_team"), dict):
        needs.append(ModelNeed(("red_team",), "simulator", "the red team's attacker", optional=True))
    targets = data.get("targets") if isinstance(data.get("targets"), dict) else {}
    for i, test in tests_of(data):
        target = targets.get(test.get("target")) if isinstance(targets, dict) else None
        if isinstance(target, dict) and target.get("type") == "model" and not target.get("model"):
            needs.append(ModelNeed(("tests", i, "target"), "default", "a model target without its own model"))
    roles = {"judge": "judge", "similar_to": "embedder", "grounded": "judge", "evaluator": "judge"}
    suite_packs = data.get("packs") if isinstance(data.get("packs"), dict) else {}
    for path, kind, spec in assertion_items(data):
        if kind == "pack" and isinstance(spec, str):
            items = suite_packs.get(spec) if isinstance(suite_packs, dict) else None
            kinds = {k for item in items or [] if isinstance(item, dict) for k in item}
            if (items is None and spec in MODEL_PACKS) or kinds & {*roles, "golden", "handoff"}:
                needs.append(ModelNeed(path, "judge", f"the {spec} pack"))
        elif kind in roles:
            needs.append(ModelNeed(path, roles[kind], f"a {kind} assertion"))
        elif kind == "golden" and isinstance(spec, dict) and spec.get("mode") == "judge":
            needs.append(ModelNeed(path, "judge", "a golden assertion in judge mode"))
        elif kind == "handoff" and isinstance(spec, dict) and spec.get("summary"):
            needs.append(ModelNeed((*path, "summary"), "judge", "a handoff summary rubric"))
    return needs
