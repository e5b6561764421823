"""The checks that need the whole suite: references, unique names, templates in context, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.loader import load_suite
from tamesu.config.model_needs import model_needs
from tamesu.errors import ConfigError, ConfigErrors, ModelUnavailable

pytestmark = pytest.mark.unit

TARGET = '  api: { type: rest, url: "http://127.0.0.1:9/chat" }\n'


def check(
    tmp_path: Path, text: str, files: dict[str, str] | None = None, project: str | None = None
) -> list[ConfigError]:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    if project is not None:
        (tmp_path / "tamesu.yaml").write_text(project, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_suite(path, project=None if project is not None else False)
    except ConfigErrors as exc:
        # Whether a model is configured is tests/config/test_model_needs.py's subject, not these.
        return [e for e in exc.errors if not isinstance(e, ModelUnavailable)]
    return []


def suite(tests: str, *, targets: str = TARGET, extra: str = "") -> str:
    return f"suite: demo\n{extra}targets:\n{targets}tests:\n{tests}"


def paths(errors: list[ConfigError]) -> list[str]:
    return [e.path for e in errors]


# --- references --------------------------------------------------------------------------------


def test_target_references(tmp_path: Path) -> None:
    tests = (
        "  - { name: a, target: api }\n"
        "  - { name: b, target: apy }\n"
        "  - { name: c, target: api, counterpart: { target: bot } }\n"
    )
    errs = check(tmp_path, suite(tests, extra="red_team: { target: nope, agent: x }\n"))
    assert paths(errs) == ["red_team.target", "tests[1].target", "tests[2].counterpart.target"]
    assert errs[1].hint == "did you mean 'api'?"
    assert errs[2].hint == "targets: api"


def test_delegated_to_names_a_remote_agent(tmp_path: Path) -> None:
    extra = "remote_agents: { billing: { reply: ok } }\n"
    tests = (
        "  - name: a\n    target: api\n    assert:\n"
        "      - delegated_to: billing\n"
        "      - delegated_to: { agent: billing, contains: refund }\n"
        "      - delegated_to: shipping\n"
    )
    errs = check(tmp_path, suite(tests, extra=extra))
    assert paths(errs) == ["tests[0].assert[2].delegated_to"]
    assert errs[0].message == "unknown remote agent 'shipping'"


def test_packs_builtin_or_from_the_suite(tmp_path: Path) -> None:
    extra = "packs: { tone: [ { contains: please } ] }\ndefaults: { assert: [ { pack: tonne } ] }\n"
    tests = "  - name: a\n    target: api\n    assert: [ { pack: pii_leakage }, { pack: tone }, { pack: nope } ]\n"
    errs = check(tmp_path, suite(tests, extra=extra))
    assert paths(errs) == ["defaults.assert[0].pack", "tests[0].assert[2].pack"]
    assert errs[0].hint == "did you mean 'tone'?"


# --- unique names ------------------------------------------------------------------------------


def test_names_unique_after_cases_and_languages(tmp_path: Path) -> None:
    tests = (
        "  - { name: a, target: api, cases: [ { name: x, vars: {} } ], languages: [en] }\n"
        "  - { name: 'a [x] (en)', target: api }\n"
        "  - { name: a, target: api }\n"
    )
    errs = check(tmp_path, suite(tests))
    assert paths(errs) == ["tests[1].name"]
    assert errs[0].message.startswith("duplicate test name 'a [x] (en)' (tests[0] at line")


def test_plain_duplicate_names(tmp_path: Path) -> None:
    errs = check(tmp_path, suite("  - { name: a, target: api }\n  - { name: a, target: api }\n"))
    assert paths(errs) == ["tests[1].name"] and errs[0].line == 6


def test_cases_file_rows_become_tests(tmp_path: Path) -> None:
    tests = "  - { name: a, target: api, cases_file: cases.csv }\n  - { name: 'a [late]', target: api }\n"
    errs = check(tmp_path, suite(tests), files={"cases.csv": "name,days\nlate,40\nearly,10\n"})
    assert paths(errs) == ["tests[1].name"]


def test_malformed_cases_file_keeps_its_own_position(tmp_path: Path) -> None:
    tests = "  - { name: a, target: api, cases_file: cases.csv }\n"
    (err,) = check(tmp_path, suite(tests), files={"cases.csv": "name,days\nlate\n"})
    assert err.file.endswith("cases.csv") and err.line == 2


# --- vars and secrets --------------------------------------------------------------------------


def test_vars_from_suite_test_cases_cases_file_and_project(tmp_path: Path) -> None:
    tests = (
        "  - name: a\n    target: api\n    vars: { t: '1' }\n"
        "    cases: [ { name: one, vars: { c: '1' } } ]\n"
        "    scenario: { goal: '{{vars.s}} {{vars.t}} {{vars.c}} {{vars.p}}' }\n"
        "  - name: b\n    target: api\n    cases_file: cases.json\n"
        "    scenario: { goal: '{{vars.f}} {{vars.t}}' }\n"
    )
    errs = check(
        tmp_path,
        suite(tests, extra="vars: { s: '1' }\n"),
        files={"cases.json": '[{"name": "x", "f": 1}]'},
        project="vars: { p: '1' }\n",
    )
    assert paths(errs) == ["tests[1].scenario.goal"]
    assert errs[0].message == "unknown var 't' in {{vars.t}}"


def test_target_may_use_any_test_var(tmp_path: Path) -> None:
    targets = '  api: { type: rest, url: "http://x/{{vars.t}}/{{vars.nope}}" }\n'
    tests = "  - { name: a, target: api, vars: { t: '1' } }\n"
    errs = check(tmp_path, suite(tests, targets=targets))
    assert [e.message for e in errs] == ["unknown var 'nope' in {{vars.nope}}"]


def test_secrets_declared_in_suite_or_project(tmp_path: Path) -> None:
    targets = '  api: { type: rest, url: "http://x", headers: { A: "{{secrets.S}}", B: "{{secrets.P}}", C: "{{secrets.Q}}" } }\n'
    errs = check(
        tmp_path,
        suite("  - { name: a, target: api }\n", targets=targets, extra="secrets: { S: env:S }\n"),
        project="secrets: { P: env:P }\n",
    )
    assert paths(errs) == ["targets.api.headers.C"]
    assert errs[0].message == "secret 'Q' is not declared"


# --- templates in context ----------------------------------------------------------------------


def test_message_only_in_request_bodies(tmp_path: Path) -> None:
    targets = (
        "  api:\n    type: rest\n    url: 'http://x/{{session}}'\n"
        "    request: { body: { m: '{{message}}', s: '{{session}}' } }\n"
        "    headers: { X: '{{message}}' }\n"
    )
    tests = "  - { name: a, target: api, scenario: { goal: '{{message}} {{session}}' } }\n"
    errs = check(tmp_path, suite(tests, targets=targets))
    assert [(e.path, e.message) for e in errs] == [
        ("targets.api.headers.X", "{{message}} is not available in target 'api'"),
        ("tests[0].scenario.goal", "{{message}} is not available in test 'a'"),
    ]
    errs = check(
        tmp_path,
        suite(
            "  - { name: a, target: api }\n",
            extra="hooks: { before_all: [ { command: 'x {{session}}' } ] }\n",
        ),
    )
    assert [(e.path, e.message) for e in errs] == [
        ("hooks.before_all[0].command", "{{session}} is not available here")
    ]


def test_args_only_in_tool_results(tmp_path: Path) -> None:
    targets = (
        "  m:\n    type: model\n    system: 'hi {{args.x}}'\n"
        "    tools: [ { name: t, description: '{{args.y}}', result: { id: '{{args.id}}' } } ]\n"
        "  rt:\n    type: realtime\n    url: ws://x\n    tool_results: { t: { id: '{{args.id}}' } }\n"
    )
    tests = "  - { name: a, target: m, fuzz_tools: { t: { mode: custom, result: '{{args.z}}' } } }\n"
    errs = check(tmp_path, suite(tests, targets=targets))
    assert paths(errs) == ["targets.m.system", "targets.m.tools[0].description"]
    assert "only in tool results" in errs[0].hint


def test_captured_only_for_names_the_test_captures(tmp_path: Path) -> None:
    tests = (
        "  - name: a\n    target: api\n    capture: [ { name: order_id, regex: 'x' } ]\n"
        "    scenario: { goal: '{{captured.order_id}}' }\n"
        "  - name: b\n    target: api\n    scenario: { goal: '{{captured.order_id}}' }\n"
    )
    errs = check(tmp_path, suite(tests))
    assert paths(errs) == ["tests[1].scenario.goal"]
    assert errs[0].message == "no capture named 'order_id' in test 'b'"


def test_cursor_and_sent_only_in_poll(tmp_path: Path) -> None:
    targets = (
        "  api:\n    type: rest\n    url: 'http://x?c={{cursor}}'\n"
        "    request: { capture: { ts: $.ts } }\n"
        "    response:\n      text: $.reply\n"
        "      poll: { url: 'http://x/{{cursor}}/{{sent.ts}}/{{sent.tx}}' }\n"
    )
    errs = check(tmp_path, suite("  - { name: a, target: api }\n", targets=targets))
    assert [(e.path, e.message) for e in errs] == [
        ("targets.api.url", "{{cursor}} is not available in target 'api'"),
        ("targets.api.response.poll.url", "no request.capture named 'tx'"),
    ]


def test_listen_url_only_in_a_target_that_listens(tmp_path: Path) -> None:
    targets = (
        "  bot:\n    type: rest\n    url: 'http://x'\n"
        "    request: { body: { hook: '{{listen.url}}' } }\n"
        "    response: { listen: { path: 'POST /send' }, text: $.text }\n"
        "  api: { type: rest, url: 'http://x/{{listen.url}}' }\n"
    )
    errs = check(tmp_path, suite("  - { name: a, target: api }\n", targets=targets))
    assert paths(errs) == ["targets.api.url"]


def test_session_names_come_from_open_and_handshake_captures(tmp_path: Path) -> None:
    targets = (
        "  api:\n    type: rest\n    url: 'http://x/{{session.id}}/{{session.key}}'\n"
        "    streaming: websocket\n"
        "    session: { open: { url: 'http://x', capture: { id: $.id } } }\n"
        "    request:\n      handshake: [ { send: {}, capture: { key: $.k } } ]\n"
        "      body: { t: '{{session.token}}' }\n"
    )
    tests = "  - { name: a, target: api, assert: [ { http: { url: 'http://x/{{session.id}}' } } ] }\n"
    errs = check(tmp_path, suite(tests, targets=targets))
    assert paths(errs) == ["targets.api.request.body.t"]
    assert errs[0].message == "no session value named 'token' in target 'api'"


def test_remote_agent_urls(tmp_path: Path) -> None:
    extra = "remote_agents: { billing: { reply: ok } }\n"
    targets = "  api: { type: a2a, url: 'http://x', metadata: { a: '{{remote.billing.url}}', b: '{{remote.nope.url}}' } }\n"
    errs = check(tmp_path, suite("  - { name: a, target: api }\n", targets=targets, extra=extra))
    assert [e.message for e in errs] == ["unknown remote agent 'nope'"]


def test_unknown_names_and_namespaces(tmp_path: Path) -> None:
    tests = "  - { name: a, target: api, scenario: { goal: '{{uuid}} {{now}} {{env.HOME}} {{faker.email}} {{nope}} {{foo.bar}}' } }\n"
    errs = check(tmp_path, suite(tests))
    assert [e.message for e in errs] == [
        "unknown template name {{nope}}",
        "unknown template name {{foo.bar}}",
    ]


def test_secret_refs_are_not_templates(tmp_path: Path) -> None:
    extra = "secrets: { A: 'exec:echo {{x}}' }\n"
    assert check(tmp_path, suite("  - { name: a, target: api }\n", extra=extra)) == []


# --- files and dates ---------------------------------------------------------------------------


def test_referenced_files_exist_next_to_the_suite(tmp_path: Path) -> None:
    targets = (
        "  m: { type: model, system_file: prompts/missing.md }\n"
        "  web: { type: browser, url: 'http://x', auth: { storage_state: auth/state.json } }\n"
        "  peer: { type: a2a, url: 'http://x' }\n"
    )
    tests = (
        "  - name: a\n    target: peer\n"
        "    persona: { behaviors: { background_noise: noise/cafe.wav } }\n"
        "    scenario:\n      script:\n"
        "        - { say: hi, files: [ present.pdf, missing.pdf, 'https://cdn/x.jpg', { path: gone.pdf }, { uri: 's3://b/k' } ] }\n"
        "    assert: [ { golden: { file: golden/a.json } }, { golden: { turns: [hi] } } ]\n"
    )
    errs = check(
        tmp_path, suite(tests, targets=targets), files={"present.pdf": "%PDF", "auth/state.json": "{}"}
    )
    assert paths(errs) == [
        "targets.m.system_file",
        "tests[0].persona.behaviors.background_noise",
        "tests[0].scenario.script[0].files[1]",
        "tests[0].scenario.script[0].files[3].path",
        "tests[0].assert[0].golden.file",
    ]
    assert errs[0].message == "system_file not found: prompts/missing.md"


def test_a_golden_file_outside_the_suite_folder_is_refused(tmp_path: Path) -> None:
    tests = "  - { name: a, target: api, assert: [ { golden: { file: ../golden/a.json } } ] }\n"
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "a.json").write_text("[]")
    (tmp_path / "suite").mkdir()
    errs = check(tmp_path / "suite", suite(tests))
    assert paths(errs) == ["tests[0].assert[0].golden.file"]
    assert "no '..'" in errs[0].message


def test_noise_presets_are_not_files(tmp_path: Path) -> None:
    tests = "  - { name: a, target: api, persona: { behaviors: { background_noise: cafe } } }\n"
    assert check(tmp_path, suite(tests)) == []


def test_quarantine_until_must_be_a_real_day(tmp_path: Path) -> None:
    tests = (
        "  - { name: a, target: api, quarantine: { reason: r, until: 2026-12-31 } }\n"
        "  - { name: b, target: api, quarantine: { reason: r, until: 2026-02-29 } }\n"
    )
    errs = check(tmp_path, suite(tests))
    assert paths(errs) == ["tests[1].quarantine.until"]


# --- model needs (not errors yet) ------------------------------------------------------------


def test_model_needs_lists_what_needs_a_model_without_failing(tmp_path: Path) -> None:
    tests = (
        "  - name: a\n    target: api\n"
        "    capture: [ { name: x, extract: the order } ]\n"
        "    scenario: { goal: g, stop_when: done }\n"
        "    assert:\n"
        "      - judge: polite\n      - similar_to: hi\n      - contains: x\n"
        "      - golden: { turns: [a], mode: judge }\n      - handoff: { summary: names the order }\n"
    )
    text = suite(tests)
    assert check(tmp_path, text) == []
    import yaml

    needs = model_needs(yaml.safe_load(text))
    assert [(n.role, n.why) for n in needs] == [
        ("simulator", "a scenario goal"),
        ("judge", "a stop_when condition"),
        ("judge", "an extract capture"),
        ("judge", "a judge assertion"),
        ("embedder", "a similar_to assertion"),
        ("judge", "a golden assertion in judge mode"),
        ("judge", "a handoff summary rubric"),
    ]
