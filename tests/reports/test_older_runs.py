"""A run directory written before results carried a format (results format 1) still reads: the
HTML report draws a call's timeline from its events, ``tamesu show`` and ``tamesu report`` work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.errors import UsageError
from tamesu.kernel.events import CustomEvent, Interrupted, VoiceCall, VoiceTurn
from tamesu.reports.html import render_html
from tamesu.reports.rundir import RunDirectory

from .runs import shop_agent, shop_run, unversioned, voice_run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def phone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same call written now and as an unversioned tamesu wrote it."""
    pytest.importorskip("numpy", reason="the voice run is written with tamesu[voice]")
    now = voice_run(tmp_path_factory.mktemp("phone"))
    old = tmp_path_factory.mktemp("old") / now.name
    shutil.copytree(now, old)
    unversioned(old)
    return now, old


def test_an_unversioned_call_reads_as_typed_events(phone: tuple[Path, Path]) -> None:
    _, old = phone
    assert '"format"' not in (old / "results.jsonl").read_text()
    run = RunDirectory.open(old)
    [result] = run.results
    transcript = run.transcript(result)
    assert transcript is not None
    kinds = [type(e) for e in transcript.events]
    assert kinds == [VoiceCall, VoiceTurn, Interrupted, VoiceTurn, CustomEvent]
    assert transcript.events[-1] == CustomEvent(name="barge_in_attempt", data={"by": "caller"}, at=1.5)


def test_the_report_of_an_unversioned_call_shows_its_recording_and_timeline(phone: tuple[Path, Path]) -> None:
    now, old = phone
    page = render_html(RunDirectory.open(old))
    assert page.count('class="barge-in"') == 1 and "600 ms" in page
    assert "data:audio/wav;base64," in page
    voice = page[page.index('<div class="voice"') :]
    fresh = render_html(RunDirectory.open(now))
    assert (
        voice[: voice.index("</div>")] == fresh[fresh.index('<div class="voice"') :][: voice.index("</div>")]
    )


def test_show_and_report_read_an_unversioned_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with shop_agent() as url:
        result = shop_run(tmp_path, url)
    assert result.run_dir is not None
    unversioned(result.run_dir)
    monkeypatch.chdir(tmp_path)
    assert main(["show", "refund policy#2", "--color", "never"]) == 0
    assert "tool lookup_policy" in capsys.readouterr().out
    assert main(["report", str(result.run_dir)]) == 0
    assert "tamesu report: shop" in (result.run_dir / "report.html").read_text()


def test_a_run_directory_of_a_newer_format_is_refused_by_name(
    phone: tuple[Path, Path], tmp_path: Path
) -> None:
    newer = tmp_path / "newer"
    shutil.copytree(phone[0], newer)
    record = json.loads((newer / "results.jsonl").read_text())
    (newer / "results.jsonl").write_text(json.dumps({**record, "format": 5}) + "\n")
    with pytest.raises(UsageError, match="newer tamesu \\(results format 5\\)"):
        RunDirectory.open(newer)
    assert main(["report", str(newer)]) == 2
