"""A test that needs a model no configuration provides: validate says which key to set, run skips it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config.loader import validate_paths
from tamesu.config.model_needs import MODEL_PACKS
from tamesu.environment import MACHINE_CHECKS
from tamesu.errors import ModelUnavailable

pytestmark = pytest.mark.unit

SUITE = """
suite: needs
{models}
targets:
  api: {{ type: rest, url: "http://127.0.0.1:9/chat" }}
tests:
  - name: judged
    target: api
    scenario: {{ script: [ {{ say: hi }} ] }}
    assert: [ {{ {kind} }} ]
  - name: plain
    target: api
    scenario: {{ script: [ {{ say: hi }} ] }}
    assert: [ {{ contains: x }} ]
"""


def errors(tmp_path: Path, kind: str, models: str = "", project: str = "") -> list[str]:
    (tmp_path / "s.yaml").write_text(SUITE.format(kind=kind, models=models))
    if project:
        (tmp_path / "tamesu.yaml").write_text(project)
    report = validate_paths([tmp_path / "s.yaml"], checks=MACHINE_CHECKS)
    assert report.errors == [] and all(isinstance(e, ModelUnavailable) for e in report.warnings)
    assert len(report.suites) == 1, "the suite still loads: its other tests can run"
    return [f"{e.line}:{e.column} {e.message} at {e.path}" for e in report.warnings]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_no_model_names_the_keys(tmp_path: Path) -> None:
    assert errors(tmp_path, 'judge: "polite"') == [
        "10:24 a judge assertion needs a model: set models.judge or models.default in the suite or tamesu.yaml"
        " at tests[0].assert[0].judge"
    ]


def test_a_model_without_its_key_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (msg,) = errors(tmp_path, 'judge: "polite"', models="models: { default: anthropic/claude-sonnet-4-6 }")
    assert "set ANTHROPIC_API_KEY or models.credentials.anthropic" in msg
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert (
        errors(tmp_path, 'judge: "polite"', models="models: { default: anthropic/claude-sonnet-4-6 }") == []
    )


def test_credentials_providers_and_offline_embedder_satisfy_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K", "k3y")
    creds = 'models: { judge: openai/gpt-4.1-mini, credentials: { openai: "{{secrets.K}}" } }\nsecrets: { K: env:K }'
    assert errors(tmp_path, 'judge: "polite"', models=creds) == []
    project = (
        "providers: { vllm: { base_url: 'http://127.0.0.1:8000/v1' } }\nmodels: { default: vllm/qwen }\n"
    )
    assert errors(tmp_path / "", 'judge: "polite"', project=project) == []
    assert errors(tmp_path, 'similar_to: "thirty days"', models="models: { embedder: local/minilm }") == []


def test_packs_and_embedders(tmp_path: Path) -> None:
    (msg,) = errors(tmp_path, "pack: stays_in_scope")
    assert "the stays_in_scope pack needs a model" in msg
    assert errors(tmp_path, "pack: pii_leakage") == []
    (msg,) = errors(tmp_path, 'similar_to: "x"')
    assert "models.embedder (local/minilm works offline)" in msg


def test_model_packs_match_the_pack_registry() -> None:
    from tamesu.config.packs import packs

    assert {name for name in packs.names() if packs.get(name).needs_model} == MODEL_PACKS


def test_validate_warns_and_run_skips_only_that_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import run
    from tamesu.cli import main

    (tmp_path / "s.yaml").write_text(SUITE.format(kind='judge: "polite"', models=""))
    monkeypatch.chdir(tmp_path)
    assert main(["--color", "never", "validate", "s.yaml"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("warning: s.yaml:10:24: a judge assertion needs a model")
    assert out[-1] == "ok: 1 suite, 2 tests; 1 warning: tamesu run reports the tests they name as errors"
    result = run(["s.yaml"], output=tmp_path / "runs")
    judged, plain = sorted(result.results, key=lambda r: r.test_id)
    assert (
        judged.outcome == "error" and judged.error_kind == "model" and "models.judge" in (judged.error or "")
    )
    assert judged.turns == 0, "a test that cannot run never talks to the agent"
    assert plain.outcome == "error" and "connection refused" in (plain.error or ""), "the other test ran"


def test_a_goal_answered_by_a_counterpart_needs_no_model(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        """
suite: talk
targets:
  buyer: { type: rest, url: "http://127.0.0.1:9/chat" }
  seller: { type: rest, url: "http://127.0.0.1:9/chat" }
tests:
  - name: two agents
    target: buyer
    counterpart: { target: seller }
    scenario: { goal: "Agree on a price" }
"""
    )
    assert validate_paths([tmp_path / "s.yaml"], checks=MACHINE_CHECKS).warnings == []
