"""``tamesu generate``: draft tests with the ``scenario_generator`` model, validated before written.

The model reads what the agent is (``--describe``, a file, or the suite's ``red_team.agent``) and,
with ``probe``, what the agent itself said when asked; it answers JSON test drafts. They become a
suite of their own (the source suite's target, vars, secrets and models, so it runs as it is)
that is validated before it is written: tests the validator rejects are sent back to the model
once with the errors, and those still invalid are dropped; when none is left nothing is written.
An existing file is never overwritten.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import ConfigError, ConfigErrors, ModelError, UsageError

if TYPE_CHECKING:
    from tamesu.config.loader import LoadedSuite
    from tamesu.models.router import ModelRouter
    from tamesu.secrets import Redactor

__all__ = ["DRAFT_SCHEMA", "PROBE_QUESTIONS", "Generated", "generate", "output_path"]

PROBE_QUESTIONS = (
    "Hi! What can you help me with?",
    "What can't you help with, and are there rules you always follow?",
)
PROBE_LIMIT = 2000
"""Characters of each probe answer shown to the model (the agent's text is untrusted)."""

DRAFT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Short, unique, lower-case test name."},
                    "goal": {"type": "string", "description": "What the simulated user wants."},
                    "persona": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "style": {"type": "string"}},
                    },
                    "max_turns": {"type": "integer"},
                    "assert": {
                        "type": "array",
                        "items": {"type": "object"},
                        "description": "tamesu assertions: contains, not_contains, regex, not_regex, judge, "
                        "tool_called, tool_not_called, turns.",
                    },
                },
                "required": ["name", "goal", "assert"],
            },
        }
    },
    "required": ["tests"],
}

_SYSTEM = """You write test scenarios for tamesu, which tests conversational AI agents with a simulated user.
Each test is one conversation: a goal the simulated user pursues, an optional persona, a turn budget,
and assertions on what the agent must (or must not) say or do. Cover the agent's main jobs, its edge
cases and the rules it must keep. Assertions are objects with one key:
contains: TEXT | not_contains: TEXT | regex: PATTERN | not_regex: PATTERN | judge: RUBRIC |
tool_called: NAME | tool_not_called: NAME | turns: {lte: N}.
Prefer deterministic assertions; use judge for what only a reader can tell. Answer JSON only."""


@dataclass
class Generated:
    """What ``generate`` wrote, and what it had to leave out."""

    path: Path
    tests: list[str]
    dropped: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)


def output_path(loaded: LoadedSuite, out: str | Path | None) -> Path:
    """``--out``, else ``<suite>.generated.yaml`` beside the suite; never a file that exists."""
    path = Path(out) if out else loaded.path.with_name(f"{loaded.path.stem}.generated.yaml")
    if path.exists():
        raise UsageError(f"{path} exists: tamesu generate never overwrites a file (choose --out)")
    return path


def _raw_suite(loaded: LoadedSuite) -> dict[str, Any]:
    """The source file as written (``${VAR}`` and templates untouched)."""
    import yaml

    data = yaml.safe_load(loaded.path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _skeleton(loaded: LoadedSuite, target: str) -> dict[str, Any]:
    raw = _raw_suite(loaded)
    out: dict[str, Any] = {"suite": f"{loaded.suite.suite}-generated"}
    for key in ("vars", "secrets", "models"):
        if raw.get(key):
            out[key] = raw[key]
    out["targets"] = {target: (raw.get("targets") or {})[target]}
    return out


def _router(loaded: LoadedSuite, redactor: Redactor) -> ModelRouter:
    from tamesu.config import effective_models, effective_secrets, effective_vars
    from tamesu.errors import SecretError
    from tamesu.models.setup import RouterFactory
    from tamesu.secrets import SecretStore

    suite, project = loaded.suite, loaded.project
    variables = {k: str(v) for k, v in effective_vars(project, suite).items()}
    store = SecretStore(
        effective_secrets(project, suite), redactor=redactor, base_dir=loaded.dir, vars=variables
    )
    secrets: dict[str, str] = {}
    for name in store.names():
        try:
            secrets[name] = store.get(name)
        except SecretError:
            continue  # only a provider that names it needs it, and says so
    base_dirs = [str(loaded.dir)] + ([str(loaded.project_dir)] if loaded.project_dir else [])
    factory = RouterFactory.for_project(project, secrets=secrets, base_dirs=base_dirs)
    router = factory(effective_models(project, suite))
    if router is None or not router.model_for("scenario_generator"):
        raise UsageError("tamesu generate needs a model: set models.scenario_generator or models.default")
    return router


async def probe(
    loaded: LoadedSuite, target: str, *, redactor: Redactor, timeout: float = 120.0
) -> list[tuple[str, str]]:
    """Ask the target the probe questions through its real adapter; (question, answer) pairs."""
    from dataclasses import replace

    from tamesu.actors.graph import run_graph
    from tamesu.actors.services import RunServices
    from tamesu.config import Test
    from tamesu.runner.plan import plan
    from tamesu.untrusted import printable

    test = Test.model_validate(
        {"name": "probe", "target": target, "scenario": {"script": [{"say": q} for q in PROBE_QUESTIONS]}}
    )
    suite = loaded.suite.model_copy(update={"tests": [test], "red_team": None})
    (spec,) = plan(replace(loaded, suite=suite))
    services = RunServices.create(redactor=redactor, router_factory=lambda models: _router(loaded, redactor))
    try:
        outcome = await run_graph(spec, services, timeout=timeout)
    finally:
        await services.aclose()
    if outcome.error:
        raise UsageError(f"--probe: the target did not answer: {outcome.error}")
    answers = [printable(redactor.redact(t.text[:PROBE_LIMIT])) for t in outcome.transcript.agent_turns()]
    return list(zip(PROBE_QUESTIONS, answers))


def _prompt(description: str, count: int, answers: Sequence[tuple[str, str]], avoid: Sequence[str]) -> str:
    lines = [f"The agent under test: {description}", ""]
    if answers:
        lines.append("What the agent said when asked about itself:")
        lines += [f"Q: {q}\nA: {a}" for q, a in answers]
        lines.append("")
    if avoid:
        lines.append(f"Tests that exist already (do not repeat them): {', '.join(avoid)}")
    lines.append(f"Write {count} tests.")
    return "\n".join(lines)


async def _ask(router: ModelRouter, prompt: str, *, seed: int | None) -> list[dict[str, Any]]:
    from tamesu.models.router import ChatMessage

    answer = await router.complete(
        "scenario_generator",
        [ChatMessage("system", _SYSTEM), ChatMessage("user", prompt)],
        output_schema=DRAFT_SCHEMA,
        seed=seed,
        temperature=0.0,
    )
    data = answer.data if isinstance(answer.data, dict) else None
    if data is None and answer.text:
        try:
            data = json.loads(answer.text)
        except ValueError:
            data = None
    drafts = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(drafts, list):
        raise ModelError("the scenario_generator model answered no tests (expected {tests: [...]})")
    return [d for d in drafts if isinstance(d, dict)]


def _test(draft: dict[str, Any], target: str, tags: Sequence[str]) -> dict[str, Any]:
    """A draft as a suite test; whatever the model added beyond the draft's keys is left for validation."""
    scenario: dict[str, Any] = {"goal": draft.get("goal")}
    if draft.get("max_turns") is not None:
        scenario["max_turns"] = draft["max_turns"]
    test: dict[str, Any] = {"name": str(draft.get("name") or "generated test").strip(), "target": target}
    test["tags"] = list(dict.fromkeys(["generated", *tags]))
    if isinstance(draft.get("persona"), dict) and draft["persona"]:
        test["persona"] = {k: v for k, v in draft["persona"].items() if v not in (None, "")}
    test["scenario"] = scenario
    test["assert"] = draft.get("assert") or []
    return test


def _unique_names(tests: list[dict[str, Any]]) -> None:
    seen: dict[str, int] = {}
    for test in tests:
        name = test["name"]
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            test["name"] = f"{name} ({seen[name]})"


def _problems(doc: dict[str, Any], folder: Path) -> list[ConfigError]:
    """Validate the suite as the file it will be (in its folder, so relative files resolve)."""
    import tempfile

    import yaml

    from tamesu.config.loader import load_suite
    from tamesu.environment import MACHINE_CHECKS

    with tempfile.NamedTemporaryFile(
        "w", suffix=".yaml", prefix=".tamesu-generate-", dir=folder, delete=False, encoding="utf-8"
    ) as f:
        yaml.safe_dump(doc, f, sort_keys=False, allow_unicode=True)
    try:
        load_suite(f.name, checks=MACHINE_CHECKS)
    except ConfigErrors as exc:
        return list(exc.errors)
    except ConfigError as exc:
        return [exc]
    finally:
        os.unlink(f.name)
    return []


def _bad_tests(errors: Sequence[ConfigError]) -> dict[int, list[str]]:
    import re

    out: dict[int, list[str]] = {}
    for e in errors:
        m = re.match(r"tests\[(\d+)\]", e.path or "")
        out.setdefault(int(m.group(1)) if m else -1, []).append(f"{e.path}: {e.message}")
    return out


async def generate(
    loaded: LoadedSuite,
    *,
    describe: str | None = None,
    target: str | None = None,
    count: int = 5,
    tags: Sequence[str] = (),
    out: str | Path | None = None,
    probe_target: bool = False,
    seed: int | None = 0,
) -> Generated:
    """Draft ``count`` tests, validate them, write the valid ones to a new suite file."""
    import yaml

    from tamesu.secrets import Redactor

    red = loaded.suite.red_team
    description = describe or (red.agent if red is not None else None)
    if not description:
        raise UsageError(
            "nothing describes the agent: give --describe or --describe-file, or a suite red_team.agent"
        )
    target = target or (red.target if red is not None else None) or _only_target(loaded)
    if target not in loaded.suite.targets:
        raise UsageError(
            f"no target named {target!r} in {loaded.file} (targets: {', '.join(loaded.suite.targets)})"
        )
    path = output_path(loaded, out)
    redactor = Redactor()
    router = _router(loaded, redactor)
    answers = await probe(loaded, target, redactor=redactor) if probe_target else []
    avoid = [t.name for t in loaded.suite.tests]
    drafts = (await _ask(router, _prompt(description, count, answers, avoid), seed=seed))[:count]
    tests = [_test(d, target, tags) for d in drafts]
    _unique_names(tests)
    doc = {**_skeleton(loaded, target), "tests": tests}
    result = Generated(path=path, tests=[])
    bad = _bad_tests(_problems(doc, path.parent))
    if -1 in bad:
        raise UsageError("the generated suite is invalid outside its tests: " + "; ".join(bad[-1]))
    if bad:
        fixed = await _repair(router, tests, bad, target, tags, seed=seed)
        for i, test in fixed.items():
            tests[i] = test
        _unique_names(tests)
        still = _bad_tests(_problems(doc, path.parent))
        result.repaired = [tests[i]["name"] for i in fixed if i not in still]
        result.dropped = [
            f"{tests[i]['name']}: {'; '.join(why)}" for i, why in sorted(still.items()) if i >= 0
        ]
        doc["tests"] = tests = [t for i, t in enumerate(tests) if i not in still]
    if not tests:
        raise UsageError("no generated test validates, so nothing was written: " + "; ".join(result.dropped))
    result.tests = [t["name"] for t in tests]
    text = "# Drafted by tamesu generate; review before you rely on it.\n" + yaml.safe_dump(
        doc, sort_keys=False, allow_unicode=True
    )
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)
    return result


async def _repair(
    router: ModelRouter,
    tests: list[dict[str, Any]],
    bad: dict[int, list[str]],
    target: str,
    tags: Sequence[str],
    *,
    seed: int | None,
) -> dict[int, dict[str, Any]]:
    """One round: each invalid test and its errors go back to the model; answers replace them in order."""
    lines = ["These tests do not validate. Answer the corrected tests, in the same order, as {tests: [...]}."]
    order = sorted(i for i in bad if i >= 0)
    for i in order:
        lines.append(json.dumps({"test": tests[i], "errors": bad[i]}, ensure_ascii=False))
    try:
        drafts = await _ask(router, "\n".join(lines), seed=seed)
    except ModelError:
        return {}
    return {i: _test(d, target, tags) for i, d in zip(order, drafts)}


def _only_target(loaded: LoadedSuite) -> str:
    names = list(loaded.suite.targets)
    if len(names) != 1:
        raise UsageError(f"{loaded.file} has {len(names)} targets: choose one with --target")
    return names[0]
