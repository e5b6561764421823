"""What travels in a job's log: the packed run directory, the exit code, and what a person sees."""

from __future__ import annotations

import base64
import io
import tarfile
from pathlib import Path

import pytest

from tamesu.cluster_job import report_paths_into
from tamesu.load.jobs import (
    ARTIFACT,
    EXIT,
    auth_headers,
    exit_code_of,
    pack_artifact,
    unpack_artifacts,
    visible,
)

pytestmark = pytest.mark.unit


def make_runs(root: Path) -> Path:
    run = root / "20250101-120000-support-1a2b3c"
    (run / "transcripts").mkdir(parents=True)
    (run / "results.jsonl").write_text('{"run_id": "a"}\n')
    (run / "transcripts" / "a.json").write_bytes(b"\x00\x01" * 40000)
    (root / "latest").symlink_to(run.name)
    return run


def test_a_run_directory_goes_through_the_log_and_comes_back_whole(tmp_path: Path) -> None:
    make_runs(tmp_path / "remote")
    log = io.StringIO()
    log.write("PASS support / refunds\n")
    size = pack_artifact(tmp_path / "remote", log)
    log.write(f"{EXIT} 1\n")
    text = log.getvalue()
    assert size > 0 and max(len(line) for line in text.splitlines()) < 13_000
    assert visible(text) == f"PASS support / refunds\n{EXIT} 1\n"
    assert exit_code_of(text) == 1
    [top] = unpack_artifacts(text, tmp_path / "local")
    assert top.name == "20250101-120000-support-1a2b3c"
    assert (top / "results.jsonl").read_text() == '{"run_id": "a"}\n'
    assert (top / "transcripts" / "a.json").read_bytes() == b"\x00\x01" * 40000
    assert not (tmp_path / "local" / "latest").exists()


def test_a_damaged_or_cut_artifact_is_refused(tmp_path: Path) -> None:
    make_runs(tmp_path / "remote")
    log = io.StringIO()
    pack_artifact(tmp_path / "remote", log)
    lines = log.getvalue().splitlines()
    with pytest.raises(ValueError, match="cut short"):
        unpack_artifacts("\n".join(lines[:-1]), tmp_path / "a")
    lines[1] = lines[1][:-4] + ("AAAA" if not lines[1].endswith("AAAA") else "BBBB")
    with pytest.raises(ValueError, match="damaged"):
        unpack_artifacts("\n".join(lines), tmp_path / "b")


def test_members_that_would_escape_the_destination_are_refused(tmp_path: Path) -> None:
    import hashlib

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../evil.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    data = buffer.getvalue()
    log = f"{ARTIFACT} begin runs {len(data)} {hashlib.sha256(data).hexdigest()}\n{ARTIFACT} {base64.b64encode(data).decode()}\n{ARTIFACT} end runs\n"
    with pytest.raises(ValueError, match="refusing"):
        unpack_artifacts(log, tmp_path / "dest")
    assert not (tmp_path / "evil.txt").exists()


def test_no_exit_line_means_the_job_never_finished_its_run() -> None:
    assert exit_code_of("Traceback ...\n") is None


def test_relative_report_paths_are_written_among_the_runs(tmp_path: Path) -> None:
    argv = ["suites/", "--junit", "out.xml", "--json=report.json", "--tags", "x", "--junit", "/abs/j.xml"]
    assert report_paths_into(argv, tmp_path) == [
        "suites/",
        "--junit",
        str(tmp_path / "out.xml"),
        f"--json={tmp_path / 'report.json'}",
        "--tags",
        "x",
        "--junit",
        "/abs/j.xml",
    ]


def test_the_auth_token_comes_from_the_option_the_environment_or_the_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "missing"))
    assert auth_headers() == {}
    (tmp_path / "token").write_text("abc\n")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "token"))
    assert auth_headers() == {"Authorization": "Bearer abc"}
    monkeypatch.setenv("RAY_AUTH_TOKEN", "env")
    assert auth_headers() == {"Authorization": "Bearer env"}
    assert auth_headers("given") == {"Authorization": "Bearer given"}
