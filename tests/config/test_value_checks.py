"""validate knows what it can know: patterns compile, metric and capture names exist, names render,
and every problem of a file is in one report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.config.loader import load_project, load_suite, validate_paths
from tamesu.errors import ConfigError, ConfigErrors

pytestmark = pytest.mark.unit

HEAD = 'suite: demo\ntargets:\n  api: { type: rest, url: "http://127.0.0.1:9/chat" }\n'


def problems(tmp_path: Path, text: str, project: str | None = None) -> list[ConfigError]:
    """Every error of the suite."""
    if project is not None:
        (tmp_path / "tamesu.yaml").write_text(project, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return validate_paths([path]).errors


def at(errors: list[ConfigError]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in errors]


def test_every_regular_expression_of_a_suite_must_compile(tmp_path: Path) -> None:
    text = HEAD.replace("url:", 'handoff: { regex: "transfer(ring" }, url:') + (
        "remote_agents:\n  billing: { replies: [ { when: '[a-', say: hi } ] }\n"
        "tests:\n  - name: t\n    target: api\n    scenario: { goal: hi }\n"
        "    capture: [ { name: order, regex: '(ORD-' } ]\n"
        "    assert:\n"
        "      - not_regex: '*card'\n"
        "      - captured: { name: order, matches: '^ORD-[' }\n"
        "      - delegated_to: { agent: billing, regex: '(?P<x' }\n"
        "      - regex: 'fine [0-9]+'\n"
        "      - regex: 'one {{vars.size}} (pizza'\n"
    )
    errs = problems(tmp_path, text.replace("tests:", "vars: { size: big }\ntests:"))
    assert [e.path for e in errs] == [
        "targets.api.handoff.regex",
        "remote_agents.billing.replies[0].when",
        "tests[0].capture[0].regex",
        "tests[0].assert[0].not_regex",
        "tests[0].assert[1].captured.matches",
        "tests[0].assert[2].delegated_to.regex",
    ]
    assert errs[0].message.startswith("invalid regular expression 'transfer(ring': missing ), unterminated")
    assert all(e.line and e.column for e in errs)


def test_every_jsonpath_of_a_suite_must_parse(tmp_path: Path) -> None:
    text = HEAD.replace(
        "url:",
        "response: { text: '$.reply[', done: '$.done' }, session: { open: { url: u, capture: { t: '$..[?' } } }, url:",
    ) + (
        "tests:\n  - name: t\n    target: api\n    scenario: { goal: hi }\n"
        "    assert:\n"
        "      - json_path: { path: '$.status]', equals: ok }\n"
        "      - http: { url: 'http://x', json_path: { path: '$.a.b[?(@.c ==' } }\n"
        "      - json_path: { path: \"$[?(@.type=='x')].v\" }\n"
    )
    errs = problems(tmp_path, text)
    assert [e.path for e in errs] == [
        "targets.api.response.text",
        "targets.api.session.open.capture.t",
        "tests[0].assert[0].json_path.path",
        "tests[0].assert[1].http.json_path.path",
    ]
    assert errs[0].message.startswith("invalid JSONPath '$.reply[': ")


def test_metric_names_in_metric_and_slo_must_exist_in_the_suite_and_in_tamesu_yaml(tmp_path: Path) -> None:
    text = HEAD + (
        "defaults: { slo: { turn_latency_p95_ms: 3000, llm_cost: 0.1 } }\n"
        "tests:\n  - name: t\n    target: api\n    scenario: { goal: hi }\n"
        "    assert: [ { metric: { name: turn_latencyms_p95, lt: 3 } } ]\n"
    )
    errs = problems(tmp_path, text)
    assert at(errs) == [
        ("defaults.slo.llm_cost", "unknown metric 'llm_cost'"),
        ("tests[0].assert[0].metric.name", "unknown metric 'turn_latencyms_p95'"),
    ]
    assert errs[0].hint == "did you mean 'llm_cost_usd'?"
    assert errs[0].line == 4 and errs[0].column == 47

    project = "defaults:\n  slo: { responce_ms_p95: 100 }\n  assert: [ { regex: '(' } ]\n"
    errs = problems(tmp_path, HEAD + "tests: [ { name: t, target: api, scenario: { goal: hi } } ]\n", project)
    assert [(e.file.rsplit("/", 1)[-1], e.path) for e in errs] == [
        ("tamesu.yaml", "defaults.slo.responce_ms_p95"),
        ("tamesu.yaml", "defaults.assert[0].regex"),
    ]
    assert errs[0].hint == "did you mean 'response_ms_p95'?"
    with pytest.raises(ConfigErrors):
        load_project(tmp_path)


def test_captured_names_a_capture_of_its_test_or_of_some_test(tmp_path: Path) -> None:
    text = HEAD + (
        "defaults: { assert: [ { captured: { name: ticket } }, { captured: { name: order_id } } ] }\n"
        "tests:\n"
        "  - name: a\n    target: api\n    scenario: { goal: hi }\n"
        "    capture: [ { name: order_id, regex: '(ORD-1)' } ]\n"
        "    assert: [ { captured: { name: order_id } } ]\n"
        "  - name: b\n    target: api\n    scenario: { goal: hi }\n"
        "    assert: [ { captured: { name: order_id, equals: ORD-1 } } ]\n"
    )
    assert at(problems(tmp_path, text)) == [
        ("defaults.assert[0].captured.name", "no capture named 'ticket' in any test"),
        ("tests[1].assert[0].captured.name", "no capture named 'order_id' in test 'b'"),
    ]


def test_only_vars_and_env_render_in_test_and_case_names(tmp_path: Path) -> None:
    text = HEAD + (
        "secrets: { TOKEN: 'env:TOKEN' }\n"
        "vars: { shop: Mochi }\n"
        "tests:\n"
        "  - name: 'order at {{vars.shop}}'\n    target: api\n    scenario: { goal: hi }\n"
        "    cases: [ { name: '{{vars.pizza}}', vars: { pizza: funghi } }, { name: '{{vars.piza}}', vars: {} } ]\n"
        "  - { name: 'leak {{secrets.TOKEN}}', target: api, scenario: { goal: hi } }\n"
        "  - { name: 'when {{env.HOME}} {{uuid}}', target: api, scenario: { goal: hi } }\n"
    )
    errs = problems(tmp_path, text)
    assert at(errs) == [
        ("tests[0].cases[1].name", "unknown var 'piza' in {{vars.piza}}"),
        ("tests[1].name", "{{secrets.TOKEN}} cannot render in a name"),
        ("tests[2].name", "{{uuid}} cannot render in a name"),
    ]
    assert errs[0].hint == "did you mean 'pizza'?"


def test_names_that_render_alike_are_duplicates(tmp_path: Path) -> None:
    text = HEAD + (
        "tests:\n"
        "  - name: order\n    target: api\n    scenario: { goal: hi }\n"
        "    cases: [ { name: '{{vars.p}}', vars: { p: funghi } }, { name: funghi, vars: { p: x } } ]\n"
    )
    assert at(problems(tmp_path, text)) == [("tests[0].cases", "test 'order' has two cases named 'funghi'")]


def test_a_duplicate_key_and_a_schema_error_hide_nothing_else(tmp_path: Path) -> None:
    text = HEAD + (
        "tests:\n"
        "  - name: t\n    name: u\n    target: nowhere\n    scenario: { goal: hi, max_turns: zero }\n"
        "    assert: [ { regex: '(' }, { contians: x } ]\n"
    )
    assert [e.path for e in problems(tmp_path, text)] == [
        "tests[0].name",
        "tests[0].target",
        "tests[0].scenario.max_turns",
        "tests[0].assert[0].regex",
        "tests[0].assert[1].contians",
    ]


def test_a_check_inside_a_part_the_models_refused_is_not_repeated(tmp_path: Path) -> None:
    text = HEAD + (
        "tests:\n  - name: t\n    target: api\n    scenario: { goal: hi }\n"
        "    assert: [ { regex: '(', not_regex: x }, { regex: '(', on_turn: first } ]\n"
    )
    errs = problems(tmp_path, text)
    assert [e.path for e in errs] == [
        "tests[0].assert[0]",
        "tests[0].assert[1].regex",
        "tests[0].assert[1].on_turn",
    ]
    assert errs[0].message.startswith("an assertion takes exactly one kind")
    with pytest.raises(ConfigErrors) as info:
        load_suite(tmp_path / "suite.yaml", project=False)
    assert len(info.value.errors) == 3


def test_validate_prints_every_problem_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(
        HEAD + "tests:\n  - { name: t, target: api, timeout: '5', scenario: { goal: hi }, "
        "assert: [ { not_regex: '[' } ] }\n",
        encoding="utf-8",
    )
    assert main(["--color", "never", "validate", "s.yaml"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("s.yaml:5:38: expected a duration") and out[0].endswith(
        "(a duration needs a unit: write 5s, 5m or 5ms)"
    )
    assert out[1].startswith("s.yaml:5:90: invalid regular expression '['")
    assert out[-1] == "2 errors in 1 file"
