"""The result writer: durable before it returns, several results per fsync, errors come back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.runner import results as results_module
from tamesu.runner.results import ResultsStore, ResultWriter
from tamesu.secrets import Redactor

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


def transcript(text: str) -> Transcript:
    return Transcript(turns=[Turn(role="agent", text=text)])


async def test_each_result_is_on_disk_with_its_transcript_when_write_returns(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    writer = ResultWriter(store)
    first = result("one")
    await writer.write(first, transcript("hello"))
    assert [r.run_id for r in store.results()] == ["one"]
    assert store.results()[0].transcript_file == first.transcript_file
    saved = Transcript.from_json((store.dir / first.transcript_file).read_bytes())  # type: ignore[operator]
    assert saved.turns[0].text == "hello"
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
    assert len(syncs) == 2
    writer.close()


async def test_a_failed_transcript_write_fails_that_write_only(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    writer = ResultWriter(store)
    original = store.write_transcript

    def picky(res: RunResult, t: Transcript, redactor: Redactor | None) -> str:
        if res.run_id == "bad":
            raise OSError("disk full")
        return original(res, t, redactor)

    store.write_transcript = picky  # type: ignore[method-assign,assignment]
    good, bad = writer.write(result("good"), transcript("x")), writer.write(result("bad"), transcript("x"))
    done = await asyncio.gather(good, bad, return_exceptions=True)
    assert done[0] is None and isinstance(done[1], OSError)
    assert [r.run_id for r in store.results()] == ["good"]
    writer.close()


async def test_transcripts_are_redacted_and_a_closed_writer_refuses_work(tmp_path: Path) -> None:
    store = ResultsStore.create(tmp_path, suites=["s"], settings={})
    redactor = Redactor()
    redactor.add("tok-SECRET-42")
    writer = ResultWriter(store, redactor)
    res = result("r")
    await writer.write(res, transcript("your token tok-SECRET-42"))
    text = (store.dir / res.transcript_file).read_text()  # type: ignore[operator]
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
