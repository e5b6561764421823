"""The result writer: durable before it returns, several results per fsync, errors come back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.runner import results as results_module
from tamesu.runner.results import ResultsStore, ResultWriter, read_transcript
from tamesu.secrets import Redactor

from ..stored import stored_lines, stored_transcripts

pytestmark = pytest.mark.unit


def result(run_id: str, attempt: int = 1) -> RunResult:
    return RunResult(
        run_id=run_id,
        test_id=run_id,
        test_name=run_id,
        suite="s",
        target="api",
        outcome="passed",
        attempt=attempt,
    )


def transcript(text: str, run_id: str = "") -> Transcript:
    return Transcript(run_id=run_id, turns=[Turn(role="agent", text=text)])


async def test_each_result_is_on_disk_with_its_transcript_when_write_returns(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    writer = ResultWriter(store)
    first = result("one")
    await writer.write(first, transcript("hello", "one"))
    assert [r.run_id for r in store.results()] == ["one"]
    assert store.results()[0].transcript_span == first.transcript_span is not None
    saved = read_transcript(store.dir, store.results()[0])
    assert saved is not None and saved.turns[0].text == "hello"
    await writer.write(result("two"), None)
    assert [(r.run_id, r.transcript_file) for r in store.results()][1] == ("two", None)
    writer.close()


async def test_results_that_finish_together_share_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    syncs: list[int] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        syncs.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(results_module.os, "fsync", counting)
    writer = ResultWriter(store)
    store._lock.acquire()  # the writer thread will wait at its first append
    try:
        first = asyncio.create_task(writer.write(result("r0"), transcript("x")))
        while writer._thread is None or not writer._jobs.empty():
            await asyncio.sleep(0.001)
        rest = [asyncio.create_task(writer.write(result(f"r{i}"), transcript("x"))) for i in range(1, 6)]
        while writer._jobs.qsize() < 5:
            await asyncio.sleep(0.001)
    finally:
        store._lock.release()
    await asyncio.wait_for(asyncio.gather(first, *rest), 5)
    assert sorted(r.run_id for r in store.results()) == [f"r{i}" for i in range(6)]
    assert len(syncs) == 4  # two batches: each syncs the transcript log, then the results
    writer.close()


async def test_a_failed_transcript_write_fails_that_write_only(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    writer = ResultWriter(store)
    original = store.transcript_line

    def picky(t: Transcript, redactor: Redactor | None) -> bytes:
        if t.run_id == "bad":
            raise ValueError("cannot be encoded")
        return original(t, redactor)

    store.transcript_line = picky  # type: ignore[method-assign]
    good = writer.write(result("good"), transcript("x", "good"))
    bad = writer.write(result("bad"), transcript("x", "bad"))
    done = await asyncio.gather(good, bad, return_exceptions=True)
    assert done[0] is None and isinstance(done[1], ValueError)
    assert [r.run_id for r in store.results()] == ["good"]
    assert [t["run_id"] for t in stored_transcripts(store.dir)] == ["good"]


async def test_a_failed_log_write_fails_the_writes_it_held_and_no_result_points_into_it(
    tmp_path: Path,
) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    writer = ResultWriter(store)

    def full(items: object) -> None:
        raise OSError(28, "No space left on device")

    store.append_transcripts = full  # type: ignore[method-assign,assignment]
    spoken = writer.write(result("spoken"), transcript("x", "spoken"))
    silent = writer.write(result("silent"), None)
    done = await asyncio.gather(spoken, silent, return_exceptions=True)
    assert isinstance(done[0], OSError) and done[1] is None
    assert [r.run_id for r in store.results()] == ["silent"]
    writer.close()


async def test_transcripts_are_redacted_and_a_closed_writer_refuses_work(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    redactor = Redactor()
    redactor.add("tok-SECRET-42")
    writer = ResultWriter(store, redactor)
    res = result("r")
    await writer.write(res, transcript("your token tok-SECRET-42", "r"))
    text = stored_lines(store.dir)[0].decode()
    assert "tok-SECRET-42" not in text and "your token ***" in text
    writer.close()
    with pytest.raises(RuntimeError):
        await writer.write(result("late"), None)


def test_append_many_is_one_line_per_result(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    store.append_many([result("a"), result("b", attempt=2)])
    store.append_many([])
    assert [(r.run_id, r.attempt) for r in store.results()] == [("a", 1), ("b", 2)]
    assert len((store.dir / "results.jsonl").read_bytes().splitlines()) == 2
