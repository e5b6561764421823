from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from tamesu.errors import UsageError
from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import FORMAT, Transcript, Turn
from tamesu.runner.results import ResultsStore, latest_run_dir, output_dir, read_transcript
from tamesu.runner.verdict import TestVerdict, exit_code, final_results
from tamesu.secrets import Redactor
from tamesu.untrusted import safe_name


def result(
    run_id: str, outcome: str = "passed", *, attempt: int = 1, final: bool = True, suite: str = "s"
) -> RunResult:
    return RunResult(
        run_id=run_id,
        test_id=run_id.split("#")[0],
        test_name=run_id,
        suite=suite,
        target="api",
        outcome=outcome,  # type: ignore[arg-type]
        attempt=attempt,
        final=final,
    )


def make_store(root: Path, suite_paths: list[str] | None = None, now: float | None = None) -> ResultsStore:
    settings = {"argv": ["tamesu", "run"], "suite_paths": suite_paths or ["/x/support.yaml"]}
    return ResultsStore.create(root, suites=["support"], settings=settings, now=now)


@pytest.mark.unit
def test_run_directory_layout_and_latest_pointer(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.dir.parent == tmp_path
    assert store.dir.name.startswith(store.dir.name[:15])
    assert "-support-" in store.dir.name
    assert (store.dir / "transcripts.jsonl").read_text() == ""
    assert (store.dir / "results.jsonl").read_text() == ""
    assert store.settings["argv"] == ["tamesu", "run"]
    assert (tmp_path / "latest").resolve() == store.dir.resolve()
    assert latest_run_dir(tmp_path) == store.dir.resolve()


@pytest.mark.unit
def test_append_is_one_line_per_attempt_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.append(result("a", "error", final=False))
    store.append(result("a", "passed", attempt=2))
    store.append(result("b", "failed"))
    with open(store.dir / "results.jsonl", "ab") as f:
        f.write(b'{"run_id": "c", "outcome": "pas')
    assert [(r.run_id, r.attempt) for r in store.results()] == [("a", 1), ("a", 2), ("b", 1)]
    assert json.loads((store.dir / "results.jsonl").read_text().splitlines()[0])["final"] is False


@pytest.mark.unit
def test_a_record_is_never_glued_onto_a_torn_last_line(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.append(result("a"))
    with open(store.dir / "results.jsonl", "ab") as f:
        f.write(b'{"run_id": "b", "outcome": "pas')  # a crash mid-write
    store.append(result("c"))
    assert [r.run_id for r in store.results()] == ["a", "c"]
    assert (store.dir / "results.jsonl").read_bytes().count(b"\n") == 2
    assert store.notes and "cut a torn last line (31 bytes" in store.notes[0]


@pytest.mark.unit
def test_resume_mends_the_tail_keeping_a_last_record_that_only_lacks_its_line_end(tmp_path: Path) -> None:
    first = make_store(tmp_path)
    first.append(result("a"))
    first.close()
    path = first.dir / "results.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    store = ResultsStore.open(first.dir)
    store.resume()
    assert path.read_bytes().endswith(b"}\n")
    assert "it was whole and is kept" in store.notes[0]
    store.append(result("b"))
    assert [r.run_id for r in store.results()] == ["a", "b"]


@pytest.mark.integration
def test_a_write_the_disk_refuses_half_way_is_undone(tmp_path: Path) -> None:
    """A file size limit (RLIMIT_FSIZE) makes the kernel take part of a write and refuse the rest,
    as a full disk does; the next record must still land on a line of its own."""
    script = textwrap.dedent(
        f"""
        import errno, os, resource, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_results import make_store, result
        store = make_store({str(tmp_path)!r})
        store.append(result("a"))
        path = store.dir / "results.jsonl"
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 100, hard))
        big = result("b")
        big.error = "x" * 10_000
        try:
            store.append(big)
        except OSError as exc:
            assert exc.errno == errno.EFBIG, exc
        else:
            raise SystemExit("the write went through")
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        store.append(result("c"))
        print([r.run_id for r in store.results()])
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['a', 'c']"


@pytest.mark.unit
def test_a_run_directory_is_written_by_one_invocation_at_a_time(tmp_path: Path) -> None:
    running = make_store(tmp_path)
    second = ResultsStore.open(running.dir)
    with pytest.raises(UsageError, match=r"is in use by another tamesu \(pid \d+\)"):
        second.resume()
    assert second.settings["argv"] == ["tamesu", "run"], "reading it is still fine"
    running.close()
    second.resume()
    second.close()


@pytest.mark.unit
def test_a_latest_that_is_a_real_folder_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "latest").mkdir()
    (tmp_path / "latest" / "kept.txt").write_text("a copied run")
    store = make_store(tmp_path)
    assert (tmp_path / "latest" / "kept.txt").read_text() == "a copied run"
    assert "is a folder, not a link" in store.notes[0]
    assert latest_run_dir(tmp_path) == store.dir


@pytest.mark.unit
def test_finished_runs_are_those_with_a_final_result(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.append(result("done", "passed"))
    store.append(result("flaky", "error", final=False))
    store.append(result("given-up", "error", attempt=1, final=False))
    store.append(result("given-up", "error", attempt=2, final=True))
    store.append(result("done", "passed", suite="other"))
    reopened = ResultsStore.open(store.dir)
    assert sorted((r.suite, r.run_id) for r in reopened.finished()) == [
        ("other", "done"),
        ("s", "done"),
        ("s", "given-up"),
    ]


@pytest.mark.unit
def test_final_results_keeps_the_last_attempt() -> None:
    rs = [result("a", "error", final=False), result("b"), result("a", "passed", attempt=2)]
    assert [(r.run_id, r.attempt) for r in final_results(rs)] == [("b", 1), ("a", 2)]


@pytest.mark.unit
def test_transcripts_are_redacted_and_each_attempt_has_its_own_line_in_the_log(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    redactor = Redactor()
    redactor.add("tok-SECRET-42")
    t = Transcript(run_id="refund [late] (es)#2", turns=[Turn(role="agent", text="your token tok-SECRET-42")])
    first, second = result("refund [late] (es)#2"), result("refund [late] (es)#2", attempt=2)
    store.write_transcript(first, t, redactor)
    store.write_transcript(second, t, redactor)
    assert first.transcript_file == second.transcript_file == "transcripts.jsonl"
    assert first.transcript_span is not None and second.transcript_span is not None
    assert second.transcript_span[0] == first.transcript_span[0] + first.transcript_span[1] + 1
    lines = (store.dir / "transcripts.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all("tok-SECRET-42" not in line and "your token ***" in line for line in lines)
    for attempt in (first, second):
        read = read_transcript(store.dir, attempt)
        assert read is not None and read.turns[0].text == "your token ***"


@pytest.mark.unit
def test_a_transcript_is_read_only_where_its_result_says_and_only_if_it_is_that_run(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    a, b = result("a"), result("b")
    store.write_transcript(a, Transcript(run_id="a"), None)
    store.write_transcript(b, Transcript(run_id="b"), None)
    assert a.transcript_span is not None and b.transcript_span is not None
    wrong = msgspec.structs.replace(a, transcript_span=b.transcript_span)
    torn = msgspec.structs.replace(a, transcript_span=(a.transcript_span[0] + 3, a.transcript_span[1]))
    past = msgspec.structs.replace(a, transcript_span=(10**9, 10))
    huge = msgspec.structs.replace(a, transcript_span=(0, 1 << 40))
    outside = msgspec.structs.replace(a, transcript_file="../../etc/passwd", transcript_span=None)
    for bad in (wrong, torn, past, huge, outside):
        assert read_transcript(store.dir, bad) is None
    assert read_transcript(store.dir, a) is not None


@pytest.mark.unit
def test_safe_names_do_not_collide() -> None:
    assert safe_name("a/b") != safe_name("a_b")
    assert "/" not in safe_name("../../etc/passwd")


@pytest.mark.unit
def test_latest_of_the_same_suite(tmp_path: Path) -> None:
    older = make_store(tmp_path, ["/x/support.yaml"], now=1_700_000_000)
    make_store(tmp_path, ["/x/billing.yaml"], now=1_700_000_100)
    assert latest_run_dir(tmp_path, suite_paths=["/x/support.yaml"]) == older.dir
    assert latest_run_dir(tmp_path, suite_paths=["/x/nothing.yaml"]) is None
    assert latest_run_dir(tmp_path / "missing") is None


@pytest.mark.unit
def test_latest_file_when_symlinks_are_unavailable(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").write_text(store.dir.name + "\n")
    assert latest_run_dir(tmp_path) == store.dir


@pytest.mark.unit
def test_open_refuses_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a tamesu run directory"):
        ResultsStore.open(tmp_path)


@pytest.mark.unit
def test_output_dir_is_relative_to_the_project(tmp_path: Path) -> None:
    assert output_dir(None, tmp_path) == tmp_path / "tamesu-runs"
    assert output_dir("out/runs", tmp_path) == tmp_path / "out/runs"
    assert output_dir("/abs", tmp_path) == Path("/abs")
    assert output_dir(None, None) == Path.cwd() / "tamesu-runs"


@pytest.mark.unit
def test_exit_code_priorities() -> None:
    def tv(verdict: str) -> TestVerdict:
        return TestVerdict("s", "t", "t", "api", verdict, 0, 1, 1.0)  # type: ignore[arg-type]

    assert exit_code([tv("passed"), tv("quarantined")]) == 0
    assert exit_code([tv("error"), tv("failed")]) == 1
    assert exit_code([tv("error"), tv("passed")]) == 3
    assert exit_code([tv("failed")], budget_exceeded=True) == 4
    assert exit_code([tv("failed")], interrupted=True) == 130


RESUME_SUITE = """
suite: resumable
targets:
  api: {{ type: rest, url: "{url}/chat", request: {{ body: {{ message: "{{{{message}}}}" }} }}, response: {{ text: $.reply }} }}
tests:
  - name: first
    target: api
    scenario: {{ max_turns: 1, script: [ {{ say: "one" }} ] }}
    assert: [ {{ contains: "echo: one" }} ]
  - name: second
    target: api
    scenario: {{ max_turns: 1, script: [ {{ say: "two" }} ] }}
    assert: [ {{ contains: "echo: two" }} ]
"""


@pytest.mark.integration
async def test_resume_redoes_only_runs_without_a_final_result(tmp_path: Path) -> None:
    from tamesu import run_async
    from tamesu.testing import EchoAgent, serve_echo_agent

    agent = EchoAgent()
    async with serve_echo_agent(agent) as url:
        suite = tmp_path / "suite.yaml"
        suite.write_text(RESUME_SUITE.format(url=url))
        first = await run_async([suite], output=tmp_path / "runs")
        assert first.exit_code == 0 and len(agent.requests) == 2
        store = ResultsStore.open(first.run_dir)  # type: ignore[arg-type]
        lines = (store.dir / "results.jsonl").read_text().splitlines()
        kept = [line for line in lines if json.loads(line)["test_id"] == "first"]
        (store.dir / "results.jsonl").write_text("\n".join(kept) + "\n")

        agent.requests.clear()
        again = await run_async([], resume=True, output=tmp_path / "runs")
        assert [r.body["message"] for r in agent.requests] == ["two"]
        assert again.run_dir == first.run_dir
        assert again.resumed == 1
        assert again.exit_code == 0
        assert sorted(t.test_id for t in again.tests if t.verdict == "passed") == ["first", "second"]
        assert [
            json.loads(line)["test_id"] for line in (store.dir / "results.jsonl").read_text().splitlines()
        ] == [
            "first",
            "second",
        ]
        assert json.loads((store.dir / "summary.json").read_text())["resumed"] == 1


@pytest.mark.integration
async def test_resume_continues_a_run_directory_written_before_results_had_a_format(tmp_path: Path) -> None:
    from tamesu import run_async
    from tamesu.testing import EchoAgent, serve_echo_agent

    agent = EchoAgent()
    async with serve_echo_agent(agent) as url:
        suite = tmp_path / "suite.yaml"
        suite.write_text(RESUME_SUITE.format(url=url))
        first = await run_async([suite], output=tmp_path / "runs")
        assert first.run_dir is not None
        results = first.run_dir / "results.jsonl"
        # as an older tamesu left it: no format, the transcript in a file of its own
        (first.run_dir / "transcripts").mkdir()
        kept = []
        for line in results.read_text().splitlines():
            record = json.loads(line)
            if record["test_id"] != "first":
                continue
            offset, length = record.pop("transcript_span")
            with open(first.run_dir / record["transcript_file"], "rb") as log:
                log.seek(offset)
                (first.run_dir / "transcripts" / "first.json").write_bytes(log.read(length))
            record["transcript_file"] = "transcripts/first.json"
            kept.append({k: v for k, v in record.items() if k != "format"})
        results.write_text("".join(json.dumps(r) + "\n" for r in kept))
        (first.run_dir / "transcripts.jsonl").unlink()

        agent.requests.clear()
        again = await run_async([], resume=True, output=tmp_path / "runs")
        assert [r.body["message"] for r in agent.requests] == ["two"]
        assert again.exit_code == 0 and again.resumed == 1
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        assert [(r["test_id"], r.get("format")) for r in lines] == [("first", None), ("second", FORMAT)]
        store = ResultsStore.open(first.run_dir)
        read = [read_transcript(store.dir, r) for r in store.results()]
        assert [t.run_id if t else None for t in read] == ["first", "second"]
        assert [t.turns[0].text if t else None for t in read] == ["one", "two"]


@pytest.mark.unit
def test_results_of_a_newer_format_are_refused_by_name(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.append(result("a"))
    line = json.loads((store.dir / "results.jsonl").read_text())
    assert line["format"] == FORMAT == 4
    (store.dir / "results.jsonl").write_text(json.dumps({**line, "format": 5}) + "\n")
    with pytest.raises(
        UsageError, match="newer tamesu \\(results format 5\\); this one reads formats up to 4"
    ):
        store.results()


@pytest.mark.unit
def test_a_torn_transcript_log_is_mended_on_resume_and_every_kept_transcript_still_reads(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    kept = [result("a"), result("b")]
    for r in kept:
        store.write_transcript(
            r, Transcript(run_id=r.run_id, turns=[Turn(role="agent", text=r.run_id)]), None
        )
    store.append_many(kept)
    store.close()
    with open(store.dir / "transcripts.jsonl", "ab") as log:
        log.write(b'{"run_id": "c", "turns": [{"role": "ag')  # a crash mid-write: c got no result
    again = ResultsStore.open(store.dir)
    again.resume()
    assert any("transcripts.jsonl: cut a torn last line" in note for note in again.notes)
    late = result("d")
    again.write_transcript(late, Transcript(run_id="d", turns=[Turn(role="agent", text="d")]), None)
    again.append(late)
    read = [read_transcript(again.dir, r) for r in again.results()]
    assert [t.turns[0].text if t else None for t in read] == ["a", "b", "d"]
