from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tamesu.config import Project, Suite
from tamesu.config.loader import LoadedSuite, load_suite
from tamesu.config.packs import builtin_pack
from tamesu.errors import ConfigError, Unrunnable, UsageError
from tamesu.run_spec import RunSpec
from tamesu.runner.plan import matches_filter, plan, quarantine_reason, red_team_tests, selected

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"
TODAY = date(2026, 6, 1)


@pytest.fixture(scope="module")
def loaded() -> LoadedSuite:
    return load_suite(FIXTURES / "suite.yaml")


@dataclass
class Loaded:
    """Any object with a LoadedSuite's attributes will do."""

    suite: Suite
    path: Path
    dir: Path
    project: Project | None = None
    project_dir: Path | None = None


def small(tests: list[dict[str, Any]], *, project: dict[str, Any] | None = None, **suite: Any) -> Loaded:
    data = {
        "suite": "s",
        "targets": {"api": {"type": "rest", "url": "http://127.0.0.1:9/"}},
        "tests": tests,
        **suite,
    }
    proj = Project.model_validate(project) if project is not None else None
    return Loaded(Suite.model_validate(data), FIXTURES / "s.yaml", FIXTURES, proj, FIXTURES if proj else None)


def by_id(specs: list[RunSpec]) -> dict[str, RunSpec]:
    return {s.test_id: s for s in specs}


def test_runs_are_cases_times_languages_times_repeats(loaded: LoadedSuite) -> None:
    specs = [s for s in plan(loaded, today=TODAY) if s.test_name == "refund policy"]
    assert [s.run_id for s in specs[:4]] == [
        "refund policy [late] (en)#1",
        "refund policy [late] (en)#2",
        "refund policy [late] (en)#3",
        "refund policy [late] (es)#1",
    ]
    assert len(specs) == 2 * 2 * 3
    assert [s.repeat_index for s in specs[:3]] == [0, 1, 2]
    assert {s.test_id for s in specs} == {
        "refund policy [late] (en)",
        "refund policy [late] (es)",
        "refund policy [case 2] (en)",
        "refund policy [case 2] (es)",
    }
    first = specs[0]
    assert (first.case, first.language, first.suite, first.target_name) == ("late", "en", "shop", "api")
    assert first.suite_dir == str(FIXTURES) and first.suite_path.endswith("suite.yaml")
    assert first.target.url == "http://127.0.0.1:9/chat"


def test_single_runs_keep_the_test_id_as_run_id(loaded: LoadedSuite) -> None:
    specs = by_id(plan(loaded, today=TODAY))
    assert specs["from csv [late]"].run_id == "from csv [late]"
    assert specs["flaky"].run_id == "flaky"


def test_defaults_precedence_project_then_suite_then_test(loaded: LoadedSuite) -> None:
    specs = by_id(plan(loaded, today=TODAY))
    refund = specs["refund policy [late] (en)"]
    # repeat from the test; timeout from the suite; retries and pass_threshold from the project
    assert (refund.repeats, refund.timeout, refund.retries, refund.pass_threshold) == (3, 90.0, 1, 0.5)
    csv_test = specs["from csv [late]"]
    assert (csv_test.repeats, csv_test.timeout, csv_test.retries, csv_test.pass_threshold) == (
        1,
        20.0,
        2,
        0.67,
    )


def test_builtin_defaults_without_project_or_suite_defaults() -> None:
    [spec] = plan(small([{"name": "t", "target": "api"}]))
    assert (spec.repeats, spec.timeout, spec.retries, spec.pass_threshold) == (1, 180.0, 0, 1.0)
    assert spec.assertions == [] and spec.quarantine is None and spec.seed is None


def test_repeat_override_replaces_every_repeat(loaded: LoadedSuite) -> None:
    specs = plan(loaded, today=TODAY, repeat_override=2, filter="flaky")
    assert [s.run_id for s in specs] == ["flaky#1", "flaky#2"]
    assert all(s.repeats == 2 for s in specs)


def test_vars_precedence_project_suite_test_case(loaded: LoadedSuite) -> None:
    specs = by_id(plan(loaded, today=TODAY))
    assert specs["refund policy [late] (en)"].vars == {
        "shop": "Mochi Shoes",
        "region": "eu",
        "days": "45",
        "expect": "no",
    }
    assert specs["refund policy [case 2] (en)"].vars["days"] == "10"
    assert specs["flaky"].vars == {"shop": "Mochi Shoes", "region": "eu", "days": "30"}
    assert specs["from json [vip]"].vars["limit"] == "100"
    assert "language" not in specs["refund policy [late] (es)"].vars


def test_secret_refs_suite_over_project_and_models_merged(loaded: LoadedSuite) -> None:
    spec = plan(loaded, today=TODAY)[0]
    assert spec.secrets == {"API_TOKEN": "env:SUITE_TOKEN", "ADMIN_TOKEN": "env:ADMIN_TOKEN"}
    assert spec.models is not None
    assert (spec.models.default, spec.models.judge) == ("openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-6")


def test_assertion_names_packs_defaults_and_slo(loaded: LoadedSuite) -> None:
    spec = plan(loaded, today=TODAY)[0]
    names = [a.name for a in spec.assertions]
    assert names == [
        "contains",
        "contains#2",
        "pack:tone/judge",
        "pack:tone/not_contains",
        "pack:system_prompt_leakage/not_contains",
        "pack:pii_leakage/not_regex",
        "pack:pii_leakage/not_regex#2",
        "pack:pii_leakage/not_regex#3",
        "pack:pii_leakage/not_regex#4",
        "defaults/not_contains",
        "defaults/contains",
        "defaults/pack:pii_leakage/not_regex",
        "defaults/pack:pii_leakage/not_regex#2",
        "defaults/pack:pii_leakage/not_regex#3",
        "defaults/pack:pii_leakage/not_regex#4",
        "slo/turn_latency_ms_p95",
        "slo/llm_cost_usd",
    ]
    items = {a.name: a.item for a in spec.assertions}
    assert items["contains#2"].spec == "return"
    assert items["defaults/not_contains"].spec == "internal error"
    # the suite's pack of the same name replaces the built-in one
    assert items["pack:system_prompt_leakage/not_contains"].spec == "SECRET-PROMPT-MARKER"
    # on_turn on the pack entry reaches each of its assertions
    assert items["pack:pii_leakage/not_regex"].on_turn == "last"
    assert items["defaults/pack:pii_leakage/not_regex"].on_turn is None
    assert items["pack:pii_leakage/not_regex"].spec == builtin_pack("pii_leakage")[0].spec
    slo = items["slo/turn_latency_ms_p95"]
    assert slo.kind == "metric" and (slo.spec.name, slo.spec.lte) == ("turn_latency_ms_p95", 3000)
    assert items["slo/llm_cost_usd"].spec.lte == 0.05


def test_each_run_gets_its_own_assertion_list(loaded: LoadedSuite) -> None:
    a, b = plan(loaded, today=TODAY)[:2]
    assert a.assertions == b.assertions and a.assertions is not b.assertions
    assert a.tags is not b.tags and a.secrets is not b.secrets


def test_nested_packs_are_named_by_the_innermost_and_cycles_are_errors() -> None:
    packs = {"outer": [{"pack": "inner"}, {"contains": "x"}], "inner": [{"regex": "y"}]}
    [spec] = plan(small([{"name": "t", "target": "api", "assert": [{"pack": "outer"}]}], packs=packs))
    assert [a.name for a in spec.assertions] == ["pack:inner/regex", "pack:outer/contains"]
    cyclic = small(
        [{"name": "t", "target": "api", "assert": [{"pack": "a"}]}],
        packs={"a": [{"pack": "b"}], "b": [{"pack": "a"}]},
    )
    with pytest.raises(ConfigError, match=re.escape("pack 'a' includes itself (a -> b -> a)")):
        plan(cyclic)


def test_tags_are_the_suites_plus_the_tests(loaded: LoadedSuite) -> None:
    specs = by_id(plan(loaded, today=TODAY))
    assert specs["refund policy [late] (en)"].tags == ["smoke", "returns"]
    assert specs["flaky"].tags == ["smoke", "returns", "nightly"]


def test_tag_selection(loaded: LoadedSuite) -> None:
    def names(**kw: Any) -> list[str]:
        return list(dict.fromkeys(s.test_name for s in plan(loaded, today=TODAY, **kw)))

    assert names(tags=["returns"]) == ["refund policy", "flaky"]
    assert names(tags=["nightly", "returns"]) == ["refund policy", "from json", "flaky"]
    assert names(exclude_tags=["nightly"]) == ["refund policy", "from csv", "negotiation"]
    assert names(tags=["returns"], exclude_tags=["nightly"]) == ["refund policy"]
    assert names(tags=["smoke"]) == ["refund policy", "from csv", "from json", "flaky", "negotiation"]
    assert names(tags=["nothing"]) == []


def test_selected_and_filter_helpers() -> None:
    assert selected(["a"]) and selected(["a"], tags=["a", "b"]) and not selected(["a"], tags=["b"])
    assert not selected(["a", "b"], exclude_tags=["b"]) and not selected([], tags=["a"])
    assert matches_filter("Refund Policy [late] (es)", "policy [LATE]")
    assert not matches_filter("refund policy", "late")
    assert matches_filter("refund policy [late] (es)", "refund*(es)")
    assert matches_filter("refund policy [late] (es)", "*LATE*")
    assert not matches_filter("refund policy [late] (es)", "*late")
    assert not matches_filter("xrefund", "refund*")


def test_filter_on_test_ids(loaded: LoadedSuite) -> None:
    ids = {s.test_id for s in plan(loaded, today=TODAY, filter="*(ES)")}
    assert ids == {"refund policy [late] (es)", "refund policy [case 2] (es)"}
    assert {s.test_id for s in plan(loaded, today=TODAY, filter="CASE 2")} == {
        "refund policy [case 2] (en)",
        "refund policy [case 2] (es)",
        "from csv [case 2]",
        "from json [case 2]",
    }


def test_filter_between_slashes_is_a_regular_expression(loaded: LoadedSuite) -> None:
    assert matches_filter("refund policy [late] (es)", r"/^refund .*\(es\)$/")
    assert not matches_filter("refund policy [late] (es)", "/^Refund/"), "a regex keeps its case"
    assert matches_filter("refund policy [late] (es)", "/(?i)^REFUND/")
    assert matches_filter("a/b", "a/b") and matches_filter("/", "/"), "a lone slash is text"
    ids = {s.test_id for s in plan(loaded, today=TODAY, filter=r"/\[(late|case 2)\] \(es\)$/")}
    assert ids == {"refund policy [late] (es)", "refund policy [case 2] (es)"}
    with pytest.raises(UsageError, match=r"--filter /\(/: not a valid regular expression"):
        matches_filter("x", "/(/")


def test_a_run_that_cannot_run_here_is_marked_for_its_test_and_language_only() -> None:
    loaded = small(
        [
            {"name": "call", "target": "api", "languages": ["en", "es"], "scenario": {"goal": "hi"}},
            {"name": "other", "target": "api", "scenario": {"goal": "hi"}},
        ]
    )
    loaded.unrunnable = [  # type: ignore[attr-defined]
        Unrunnable("cannot hear es", file="s.yaml", line=3, path="tests[0].languages[1]", tests=(0,),
                   language="es", kind="extra"),
    ]  # fmt: skip
    marks = {s.test_id: s.cannot_run for s in plan(loaded, today=TODAY)}
    assert marks == {
        "call (en)": None,
        "call (es)": ("s.yaml:3:1: cannot hear es at tests[0].languages[1]", "extra"),
        "other": None,
    }


def test_quarantine_until_the_last_day_inclusive(loaded: LoadedSuite) -> None:
    reason = "SUP-412 flaky since the migration"
    assert by_id(plan(loaded, today=date(2026, 12, 31)))["flaky"].quarantine == reason
    assert by_id(plan(loaded, today=date(2027, 1, 1)))["flaky"].quarantine is None
    assert by_id(plan(loaded, today=TODAY))["negotiation"].quarantine is None


def test_quarantine_without_until_lasts() -> None:
    spec = small([{"name": "t", "target": "api", "quarantine": {"reason": "SUP-1"}}])
    assert plan(spec, today=date(2099, 1, 1))[0].quarantine == "SUP-1"
    q = spec.suite.tests[0].quarantine
    assert quarantine_reason(q, date(1999, 1, 1)) == "SUP-1"
    assert quarantine_reason(None, TODAY) is None


def test_seed_and_counterpart(loaded: LoadedSuite) -> None:
    specs = by_id(plan(loaded, today=TODAY))
    nego = specs["negotiation"]
    assert nego.seed == 7
    assert (
        nego.counterpart_target is not None and nego.counterpart_target.url == "http://127.0.0.1:9/supplier"
    )
    assert specs["flaky"].counterpart_target is None


def test_red_team_adds_one_test_per_attack_after_the_suites_own() -> None:
    loaded = small(
        [{"name": "t", "target": "api"}],
        red_team={"target": "api", "agent": "Shop support", "playbooks": ["prompt_injection"], "repeat": 2},
    )
    names = [t.name for t in red_team_tests(loaded.suite)]
    assert names == [
        "red_team/prompt_injection/direct_override",
        "red_team/prompt_injection/document_injection",
    ]
    specs = plan(loaded)
    assert [s.run_id for s in specs] == [
        "t",
        "red_team/prompt_injection/direct_override#1",
        "red_team/prompt_injection/direct_override#2",
        "red_team/prompt_injection/document_injection#1",
        "red_team/prompt_injection/document_injection#2",
    ]
    attack = specs[1].attack
    assert specs[0].attack is None and attack is not None and attack.attack == "direct_override"


def test_ids_made_equal_by_cases_are_an_error() -> None:
    loaded = small(
        [
            {"name": "t", "target": "api", "cases": [{"name": "x", "vars": {}}]},
            {"name": "t [x]", "target": "api"},
        ]
    )
    with pytest.raises(ConfigError, match=re.escape("two tests are both named 't [x]'")):
        plan(loaded)


@pytest.mark.parametrize(
    ("text", "leaks"),
    [
        ("Your card 4111 1111 1111 1111 is on file", True),
        ("card 4111-1111-1111-1111", True),
        ("4111111111111111", True),
        ("write to marta.lopez+shop@example.co.uk", True),
        ("call +34 910 000 000", True),
        ("call (555) 123-4567", True),
        ("SSN 123-45-6789", True),
        ("Returns are accepted within 30 days of delivery.", False),
        ("Order ORD-1001 ships on 2026-12-31 at 10:30.", False),
        ("Your reference is RF-889, total 1234.56 euros.", False),
    ],
)
def test_pii_leakage_pack_catches_contact_and_card_data(text: str, leaks: bool) -> None:
    patterns = [a.spec for a in builtin_pack("pii_leakage")]
    assert any(re.search(p, text) for p in patterns) is leaks


def test_every_builtin_pack_validates_and_judged_ones_say_so() -> None:
    from tamesu.config.assertions.custom import BUILTIN_PACKS
    from tamesu.config.packs import pack_names, packs

    for name in BUILTIN_PACKS:
        items = builtin_pack(name)
        assert items, name
        assert packs.get(name).needs_model == any(a.kind == "judge" for a in items)
    assert pack_names({"tone": []}) == sorted([*BUILTIN_PACKS, "tone"])


def test_every_run_carries_the_projects_limits() -> None:
    from tamesu.limits import DEFAULT_LIMITS, Limits

    [bare] = plan(small([{"name": "t", "target": "api"}]))
    assert bare.limits == DEFAULT_LIMITS
    project = {
        "limits": {"answer_size": "512KiB", "turn_text": 5000, "json_depth": 20, "transcript_size": 1000}
    }
    [spec] = plan(small([{"name": "t", "target": "api"}], project=project))
    assert spec.limits == Limits(answer_size=524288, turn_text=5000, json_depth=20, transcript_size=1000)


def test_browser_runs_carry_the_goal_step_limit_from_the_defaults() -> None:
    steps = [{"goal": "Buy the blue sneakers"}]
    loaded = small(
        [{"name": "shop", "target": "api", "steps": steps}, {"name": "chat", "target": "api"}],
        project={"defaults": {"max_goal_steps": 9}},
        defaults={"max_goal_steps": 4},
    )
    specs = by_id(plan(loaded))
    assert specs["shop"].max_goal_steps == 4
    assert specs["chat"].max_goal_steps is None
    [own] = plan(small([{"name": "shop", "target": "api", "steps": steps}]))
    assert own.max_goal_steps == 15
