"""``tamesu show`` and ``tamesu report`` on a real run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.kernel.transcript import FORMAT

from .runs import shop_agent, shop_run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    with shop_agent() as url:
        shop_run(root, url)
    return root


def test_show_prints_a_transcript_without_the_agents_terminal_sequences(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["show", "hostile reply", "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert out.splitlines()[0].startswith("shop / hostile reply  FAILED")
    assert '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">\\x1b[31mred' in out
    assert "FAIL  contains: expected 'thanks'" in out


def test_show_json_prints_the_stored_transcript_in_ascii_with_the_agents_bytes_escaped(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["show", "hostile reply", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.isascii() and "\x1b" not in out and out.count("\n") == 1
    transcript = json.loads(out)
    assert transcript["run_id"] == "hostile reply" and transcript["format"] == FORMAT
    agent = [t["text"] for t in transcript["turns"] if t["role"] == "agent"]
    assert any("\x1b[31mred" in text for text in agent)


def test_show_names_the_candidates_when_several_runs_match(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["show", "refund"]) == 2
    err = capsys.readouterr().err
    assert "4 runs match 'refund'" in err and "refund policy#3" in err
    assert main(["show", "refund policy#2"]) == 0
    out = capsys.readouterr().out
    assert "tool lookup_policy" in out and "60 days" in out
    assert main(["show", "nothing like it"]) == 2


def test_report_writes_the_latest_run_and_a_named_file(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["report"]) == 0
    [latest] = [p for p in (project / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    assert "report written to" in capsys.readouterr().out
    assert "tamesu report: shop" in (latest / "report.html").read_text()
    assert main(["report", str(latest), "--out", str(project / "out" / "r.html")]) == 0
    assert (project / "out" / "r.html").is_file()
    assert main(["report", "no-such-run"]) == 2


def test_show_lists_one_value_for_the_statistics_of_a_one_turn_run(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["show", "greets"]) == 0
    [metrics] = capsys.readouterr().out.split("\nmetrics\n")[1:]
    assert "turn_latency_ms " in metrics and "turn_latency_ms_p" not in metrics and "_mean" not in metrics
    assert len(metrics.strip().splitlines()) == 1  # not a terminal: one line, never wrapped
