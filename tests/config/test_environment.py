"""The suite versus this machine: what cannot run here is a warning that names what to set or install,
reaches exactly the tests it affects, and becomes an error with ``validate --strict``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.config.loader import validate_paths
from tamesu.config.reach import Reach
from tamesu.environment import MACHINE_CHECKS
from tamesu.errors import ConfigErrors, Unrunnable

pytestmark = pytest.mark.unit

SUITE = """\
suite: env
vars: {{ region: "${{TAMESU_T_REGION}}" }}
targets:
  api: {{ type: rest, url: "http://127.0.0.1:9/chat" }}
  secure: {{ type: rest, url: "${{TAMESU_T_SECURE_URL}}/chat", headers: {{ A: "{{{{secrets.TOKEN}}}}" }} }}
{targets}
tests:
  - name: plain
    target: api
    scenario: {{ script: [ {{ say: hi }} ] }}
  - name: secured
    target: secure
    scenario: {{ script: [ {{ say: hi }} ] }}
  - name: regional
    target: api
    scenario: {{ script: [ {{ say: "in {{{{vars.region}}}}" }} ] }}
{tests}
"""


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TAMESU_T_REGION", "TAMESU_T_SECURE_URL", "TAMESU_T_TOKEN", "TAMESU_T_OTHER"):
        monkeypatch.delenv(name, raising=False)


def write(tmp_path: Path, *, targets: str = "", tests: str = "", project: str = "") -> Path:
    (tmp_path / "tamesu.yaml").write_text(project or "secrets: { TOKEN: env:TAMESU_T_TOKEN }\n")
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(targets=targets, tests=tests))
    return path


def warnings(path: Path) -> list[Unrunnable]:
    report = validate_paths([path], checks=MACHINE_CHECKS)
    assert report.errors == [], report.errors
    return report.warnings


def by_path(found: list[Unrunnable]) -> dict[str, Unrunnable]:
    return {w.path: w for w in found}


def test_unset_variables_and_secrets_are_warnings_that_reach_only_the_tests_using_them(
    tmp_path: Path,
) -> None:
    found = by_path(warnings(write(tmp_path)))
    assert set(found) == {"vars.region", "targets.secure.url", "secrets.TOKEN"}
    region, url, token = found["vars.region"], found["targets.secure.url"], found["secrets.TOKEN"]
    assert (region.line, region.message) == (2, "environment variable TAMESU_T_REGION is not set")
    assert "${TAMESU_T_REGION:-value}" in region.hint
    assert region.tests == (2,) and url.tests == (1,) and token.tests == (1,)
    assert Path(token.file).name == "tamesu.yaml" and token.line == 1
    assert token.message == "secret TOKEN: environment variable TAMESU_T_TOKEN is not set"


def test_set_variables_leave_nothing_to_warn_about(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TAMESU_T_REGION", "TAMESU_T_SECURE_URL", "TAMESU_T_TOKEN"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    assert warnings(write(tmp_path)) == []


def test_a_secret_no_test_uses_is_no_warning(tmp_path: Path) -> None:
    project = "secrets: { TOKEN: env:TAMESU_T_TOKEN, UNUSED: env:TAMESU_T_OTHER, GONE: file:nowhere.txt }\n"
    found = warnings(write(tmp_path, project=project))
    assert [w.path for w in found if w.path.startswith("secrets.")] == ["secrets.TOKEN"]


def test_env_templates_and_hooks_reach_every_test(tmp_path: Path) -> None:
    hooks = 'hooks: { before_each: [ { command: "echo {{env.TAMESU_T_OTHER}}" } ] }'
    found = by_path(warnings(_with(tmp_path, hooks)))
    hook = found["hooks.before_each[0].command"]
    assert hook.message == "environment variable TAMESU_T_OTHER is not set ({{env.TAMESU_T_OTHER}})"
    assert hook.tests is None, "a hook runs around every test"


def _with(tmp_path: Path, top: str) -> Path:
    path = write(tmp_path)
    path.write_text(path.read_text().replace("suite: env\n", f"suite: env\n{top}\n"))
    return path


def test_target_types_and_assertion_kinds_without_an_adapter_are_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu.config.kinds import assertion_kinds, target_kinds

    # every built-in has its adapter and evaluator now: take sip's and two evaluators away for the test
    monkeypatch.setattr(target_kinds.get("sip"), "adapter", None)
    monkeypatch.setattr(assertion_kinds.get("call_ended_by"), "evaluator", None)
    monkeypatch.setattr(assertion_kinds.get("transferred_to"), "evaluator", None)
    targets = (
        '  phone: { type: sip, direction: outbound, to: "+15550001" }\n  tools: { type: mcp, command: ./srv }'
    )
    tests = (
        "  - { name: call, target: phone, scenario: { script: [ { say: hi } ] } }\n"
        "  - name: ended\n    target: api\n    scenario: { script: [ { say: hi } ] }\n"
        "    assert: [ { call_ended_by: [agent] }, { transferred_to: { matches: '^sip:' } } ]"
    )
    found = by_path(warnings(write(tmp_path, targets=targets, tests=tests)))
    sip = found["targets.phone.type"]
    assert sip.message == "the sip target type has no adapter in this version of tamesu yet"
    assert sip.tests == (3,) and sip.kind == "adapter" and "rest" in sip.hint
    assert "targets.tools.type" not in found, "no test uses the mcp target: nothing cannot run"
    assert found["tests[4].assert[0].call_ended_by"].tests == (4,)
    assert "no evaluator" in found["tests[4].assert[1].transferred_to"].message


def test_a_value_the_schema_refuses_because_its_variable_is_unset_says_so(tmp_path: Path) -> None:
    path = _with(tmp_path, 'defaults: { timeout: "${TAMESU_T_OTHER}" }')
    report = validate_paths([path], checks=MACHINE_CHECKS)
    (error,) = report.errors
    assert (error.path, error.message) == (
        "defaults.timeout",
        "environment variable TAMESU_T_OTHER is not set",
    )
    with pytest.raises(ConfigErrors):
        from tamesu.config.loader import load_suite

        load_suite(path, checks=MACHINE_CHECKS)


def test_validate_warns_strict_makes_it_an_error_and_json_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["--color", "never", "validate", "s.yaml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out[:-1]] == ["warning"] * 3
    assert out[-1] == "ok: 1 suite, 3 tests; 3 warnings: tamesu run reports the tests they name as errors"
    assert main(["--color", "never", "validate", "--strict", "s.yaml"]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "3 errors in 2 files" and not any(line.startswith("warning") for line in out)
    monkeypatch.setenv("TAMESU_STRICT", "1")
    assert main(["--color", "never", "validate", "--json", "s.yaml"]) == 2
    items = json.loads(capsys.readouterr().out)
    assert {i["severity"] for i in items} == {"error"} and {i["path"] for i in items} >= {"secrets.TOKEN"}
    monkeypatch.delenv("TAMESU_STRICT")
    assert main(["--color", "never", "validate", "--json", "s.yaml"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert {(i["path"], i["severity"], tuple(i["tests"])) for i in items} == {
        ("vars.region", "warning", (2,)),
        ("targets.secure.url", "warning", (1,)),
        ("secrets.TOKEN", "warning", (1,)),
    }


def test_reach_follows_targets_packs_vars_models_and_shared_parts() -> None:
    suite = {
        "vars": {"a": "x"},
        "targets": {"t": {"type": "rest"}, "m": {"type": "model", "model": "openai/gpt-4.1-mini"}},
        "packs": {"mine": [{"contains": "{{secrets.P}}"}]},
        "models": {"credentials": {"openai": "{{secrets.K}}"}},
        "tests": [
            {"name": "0", "target": "t", "assert": [{"pack": "mine"}]},
            {"name": "1", "target": "t", "scenario": {"goal": "{{vars.a}}"}},
            {"name": "2", "target": "m"},
            {"name": "3", "target": "t", "counterpart": {"target": "m"}},
        ],
    }
    reach = Reach(suite, {"hooks": {"after_all": [{"command": "{{secrets.H}}"}]}})
    assert reach.tests_at(("targets", "m", "url")) == (2, 3)
    assert reach.tests_at(("packs", "mine", 0)) == (0,)
    assert reach.tests_at(("vars", "a")) == (1,)
    assert reach.tests_at(("models", "credentials")) == (1, 2), "a goal and a model target need a model"
    assert reach.tests_using("secrets.P") == (0,) and reach.tests_using("secrets.K") == (1, 2)
    assert reach.tests_using("secrets.H") is None
    assert reach.tests_at(("vars", "a"), in_project=True) == (), "the suite's own var wins over tamesu.yaml's"
    assert reach.names_used([3]) == {"secrets.H"}


def test_what_has_no_adapter_or_evaluator_is_read_from_the_registries() -> None:
    from tamesu.config.kinds import assertion_kinds, target_kinds

    assert set(target_kinds.without_adapter()) == set()
    assert set(assertion_kinds.without_evaluator()) == set()


def test_an_mcp_or_grpc_target_without_its_extra_is_a_warning_for_the_tests_that_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from tamesu import extras

    for name in ("mcp", "grpc"):
        monkeypatch.setitem(extras.EXTRAS, name, replace(extras.EXTRAS[name], modules=("tamesu_t_absent",)))
    targets = '  tools: { type: mcp, command: ./srv }\n  rpc: { type: grpc, url: "grpc://127.0.0.1:9" }'
    tests = "  - { name: rpc, target: rpc, scenario: { script: [ { say: hi } ] } }"
    found = by_path(warnings(write(tmp_path, targets=targets, tests=tests)))
    rpc = found["targets.rpc.type"]
    assert rpc.message == "a grpc target needs the grpc extra (tamesu_t_absent not installed)"
    assert rpc.tests == (3,) and rpc.kind == "extra" and rpc.hint == "pip install 'tamesu[grpc]'"
    assert "targets.tools.type" not in found, "no test uses the mcp target"


def test_an_a11y_step_without_axe_core_is_a_warning_for_its_test_alone_naming_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import extras

    monkeypatch.setenv("TAMESU_CHROMIUM", str(tmp_path / "tamesu.yaml"))
    installed: dict[str, Path | None] = {"axe": None}
    monkeypatch.setattr(extras, "axe_file", lambda: installed["axe"])
    suite = write(tmp_path, targets=_WEB, tests=_A11Y_TESTS)
    found = by_path(warnings(suite))
    browser = {path for path, w in found.items() if ("steps" in path or "web" in path) and w.kind != "model"}
    assert browser == {"tests[3].steps[2]"}, found
    goal = found["tests[3].steps[1].goal"]
    assert goal.kind == "model" and goal.message.startswith(
        "a browser goal step needs a model: set models.browser_agent"
    )
    a11y = found["tests[3].steps[2]"]
    assert a11y.message == (
        "axe-core is not installed: pip install 'tamesu[browser]' (axe-playwright-python carries it)"
    )
    assert a11y.tests == (3,) and a11y.kind == "adapter"
    installed["axe"] = tmp_path / "axe.min.js"
    assert [p for p, w in by_path(warnings(suite)).items() if "steps" in p and w.kind != "model"] == []


_WEB = '  web: { type: browser, url: "http://127.0.0.1:9/" }'
_A11Y_TESTS = (
    "  - name: shop\n    target: web\n"
    "    steps: [ { action: { click: '#buy' } }, { goal: Buy shoes }, { action: { a11y: { impact: serious } } } ]\n"
    "  - name: fine\n    target: web\n    steps: [ { action: { assert_text: Shoes } } ]"
)


def test_a_browser_target_without_chromium_is_a_warning_naming_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAMESU_CHROMIUM", str(tmp_path / "no-chromium"))
    targets = '  web: { type: browser, url: "http://127.0.0.1:9/" }'
    tests = "  - name: shop\n    target: web\n    steps: [ { action: { click: '#buy' } } ]"
    found = by_path(warnings(write(tmp_path, targets=targets, tests=tests)))
    assert found["targets.web.type"].message == (
        f"Chromium (TAMESU_CHROMIUM={tmp_path / 'no-chromium'}) is not installed: apt-get install chromium"
    )
    assert found["targets.web.type"].tests == (3,)
