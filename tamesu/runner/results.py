"""The results store: one directory per invocation, written durably as each run finishes.

    tamesu-runs/20250101-120000-support-1a2b3c/
        settings.json     what was asked (command line, suites, options; never a secret value)
        results.jsonl     one RunResult per line, flushed and fsync'd as each attempt ends
        transcripts.jsonl the transcript log: one redacted Transcript per attempt, a line each,
                          found from its result (``transcript_span``: offset and length);
                          records and transcripts carry the results format (``format``)
        summary.json      written at the end (verdicts, counts, exit code)
    tamesu-runs/latest -> 20250101-120000-support-1a2b3c

A crash or a Ctrl-C loses nothing that finished, and ``tamesu run --resume`` reads results.jsonl
to redo only the runs without a final result. What keeps the files whole (a torn last line, two
invocations at once) is in ``durable``.

Transcripts go to one log rather than a file each: a new file costs the kernel 0.03-1 ms on ext4,
more than the rest of a short text run's bookkeeping (benchmarks/conversations.py). A run
directory of formats 1-2 (``transcripts/NAME.json`` a run) is still read and resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import FORMAT, check_format
from tamesu.runner.durable import RunDirLock, append_lines, mend_tail
from tamesu.runner.verdict import final_results, run_key
from tamesu.untrusted import json_bytes, json_text

if TYPE_CHECKING:
    from tamesu.kernel.transcript import Transcript
    from tamesu.secrets import Redactor

__all__ = [
    "DEFAULT_OUTPUT",
    "TRANSCRIPT_LOG",
    "ResultWriter",
    "ResultsStore",
    "TranscriptReader",
    "latest_run_dir",
    "output_dir",
    "read_transcript",
    "redact_result",
]

DEFAULT_OUTPUT = "tamesu-runs"
LATEST = "latest"
TRANSCRIPT_LOG = "transcripts.jsonl"
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
"""A transcript larger than this is not read back (the agent is untrusted; its output is bounded)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RUN_DIR = re.compile(r"^\d{8}-\d{6}-.+-[0-9a-f]{6}$")


def output_dir(output: str | os.PathLike[str] | None, project_dir: Path | None) -> Path:
    """Where run directories go: ``output`` (tamesu.yaml or --output) relative to the project, else cwd."""
    base = project_dir if project_dir is not None else Path.cwd()
    path = Path(output) if output else Path(DEFAULT_OUTPUT)
    return path if path.is_absolute() else base / path


def redact_result(result: RunResult, redactor: Redactor | None) -> RunResult:
    """The result with every secret value replaced, in messages, expected/actual and error text."""
    if not redactor or not redactor.found_in_json(json_bytes(result)):
        return result
    data = redactor.redact_obj(msgspec.to_builtins(result))
    return msgspec.convert(data, RunResult)


class ResultsStore:
    """One invocation's directory; ``append`` is safe to call from worker threads."""

    def __init__(self, directory: Path | str) -> None:
        self.dir = Path(directory)
        self._lock = threading.Lock()
        self._prefix = f"{self.dir}{os.sep}"
        """The directory as text, for the writer's paths (a Path join per file costs more)."""
        self.notes: list[str] = []
        """What was found and mended on the way (a torn last line, a ``latest`` left alone): the
        command shows them."""
        self._dir_lock = RunDirLock(self.dir)

    @classmethod
    def create(
        cls,
        output: Path | str,
        *,
        suites: Sequence[str],
        settings: dict[str, Any],
        now: float | None = None,
    ) -> ResultsStore:
        """A fresh run directory named for the time and the suite(s), and ``latest`` pointing at it."""
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
        label = _UNSAFE.sub("_", suites[0] if suites else "run").strip("._")[:40] or "run"
        if len(suites) > 1:
            label += f"+{len(suites) - 1}"
        directory = Path(output) / f"{stamp}-{label}-{uuid.uuid4().hex[:6]}"
        directory.mkdir(parents=True)
        store = cls(directory)
        store.lock()
        store.write_json("settings.json", settings)
        (directory / "results.jsonl").touch()
        (directory / TRANSCRIPT_LOG).touch()
        store.mark_latest()
        return store

    @classmethod
    def open(cls, directory: Path | str) -> ResultsStore:
        """An existing run directory, to read it (``resume`` it to write there again)."""
        path = Path(directory)
        if not (path / "settings.json").is_file():
            raise FileNotFoundError(f"{path} is not a tamesu run directory (no settings.json)")
        return cls(path)

    def resume(self) -> None:
        """Take the directory for this invocation: lock it (a UsageError when another holds it) and
        mend the torn last line a crash may have left in each of its JSON-lines files."""
        self.lock()
        for path in sorted(self.dir.glob("*.jsonl")):
            note = mend_tail(path)
            if note is not None:
                self.notes.append(note)

    def lock(self) -> None:
        """Hold the run directory until ``close`` (or the process ends)."""
        self._dir_lock.acquire()

    def close(self) -> None:
        """Let the directory go: another invocation may resume it now."""
        self._dir_lock.release()

    @property
    def settings(self) -> dict[str, Any]:
        return json.loads((self.dir / "settings.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def append(self, result: RunResult) -> None:
        """Append one result and make it durable before returning (flush + fsync)."""
        self.append_many([result])

    def append_many(self, results: Sequence[RunResult]) -> None:
        """Append several results with one write and one fsync; durable when it returns."""
        if not results:
            return
        self.append_lines("results.jsonl", b"".join(json_bytes(r) + b"\n" for r in results))

    def append_lines(self, name: str, data: bytes) -> None:
        """Append whole JSON lines to a file of the directory, durably, never onto a torn line."""
        with self._lock:
            note = append_lines(self._prefix + name, data)
            if note is not None:
                self.notes.append(note)

    def write_transcript(self, result: RunResult, transcript: Transcript, redactor: Redactor | None) -> None:
        """Append one attempt's transcript (redacted) to the log; ``result`` is told where it is."""
        self.append_transcripts([(result, self.transcript_line(transcript, redactor))])

    @staticmethod
    def transcript_line(transcript: Transcript, redactor: Redactor | None) -> bytes:
        """The transcript as one JSON line of the log, every secret value replaced."""
        data = json_bytes(transcript)
        if redactor and redactor.found_in_json(data):
            data = json_bytes(redactor.redact_obj(msgspec.to_builtins(transcript)))
        return data + b"\n"

    def append_transcripts(self, items: Sequence[tuple[RunResult, bytes]]) -> None:
        """Append transcript lines (``transcript_line``) to the log with one write, durable when it
        returns (so no result on disk points past the log's end); each result gets its place."""
        if not items:
            return
        with self._lock:
            path = self._prefix + TRANSCRIPT_LOG
            note = append_lines(path, b"".join(line for _, line in items))
            if note is not None:
                self.notes.append(note)
            offset = os.stat(path).st_size - sum(len(line) for _, line in items)
        for result, line in items:
            result.transcript_file = TRANSCRIPT_LOG
            result.transcript_span = (offset, len(line) - 1)
            offset += len(line)

    def results(self) -> list[RunResult]:
        """Every attempt recorded so far; a line cut short by a crash is skipped. Records of
        every results format up to this tamesu's are read (format 1 had the same fields)."""
        path = self.dir / "results.jsonl"
        if not path.exists():
            return []
        out: list[RunResult] = []
        decoder = msgspec.json.Decoder(RunResult)
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                out.append(decoder.decode(line))
        check_format(max((r.format for r in out), default=FORMAT), "run directory")
        return out

    def finished(self) -> list[RunResult]:
        """The final result of every run that has one: what ``--resume`` keeps and does not redo."""
        return [r for r in final_results(self.results()) if r.final]

    def finished_keys(self) -> set[str]:
        return {run_key(r.suite, r.run_id) for r in self.finished()}

    def write_json(self, name: str, data: Any) -> None:
        """Write atomically (temp file + rename), so a reader never sees half a file."""
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(json_text(data), encoding="utf-8")
        os.replace(tmp, self.dir / name)

    def mark_latest(self) -> None:
        """Point ``latest`` at this directory: a symlink where possible, else a file naming it.

        The new link is made beside it and renamed over it, so two runs finishing together leave
        one whole ``latest``. A ``latest`` that is a real folder (a copied run, a CI artifact) is
        left as it is, with a note.
        """
        link = self.dir.parent / LATEST
        if link.is_dir() and not link.is_symlink():
            self.notes.append(f"{link} is a folder, not a link: left as it is, so it does not name this run")
            return
        tmp = self.dir.parent / f".{LATEST}-{uuid.uuid4().hex[:8]}"
        try:
            tmp.symlink_to(self.dir.name, target_is_directory=True)
        except OSError:
            tmp.write_text(self.dir.name + "\n", encoding="utf-8")
        try:
            os.replace(tmp, link)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            self.notes.append(f"could not point {link} at this run: {exc.strerror or exc}")


class ResultWriter:
    """Makes finished attempts durable from one worker thread, off the event loop.

    The transcripts of every run waiting at that moment are appended to the log with one write
    and one fsync, then their results likewise, so runs that finish together share the fsyncs. ``write``
    returns only once its result is on disk, so a result counts as done only when it is durable.
    """

    MAX_BATCH = 256
    cpu_seconds: ClassVar[float] = 0.0
    """CPU time the writer threads of this process have spent so far (benchmarks report the
    store's share of a run with it: creating a file costs far more on some filesystems)."""

    def __init__(self, store: ResultsStore, redactor: Redactor | None = None) -> None:
        self.store = store
        self.redactor = redactor
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        """What to write, in order; None (put there by ``close``) ends the thread."""
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    async def write(self, result: RunResult, transcript: Transcript | None) -> None:
        """Write the transcript (setting ``result.transcript_file``) and append the result durably."""
        await self.submit(result, transcript)

    def submit(self, result: RunResult, transcript: Transcript | None) -> asyncio.Future[None]:
        """What ``write`` does, without waiting: the future is done once the result is durable."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this result writer is closed")
            self._jobs.put((result, transcript, loop, done))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="tamesu-results", daemon=True)
                self._thread.start()
        return done

    def close(self) -> None:
        """No more writes; the thread finishes what is queued and ends."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._jobs.put(None)

    def _work(self) -> None:
        while True:
            batch, closed = self._take()
            if batch:
                self._flush(batch)
            if closed:
                return

    def _take(self) -> tuple[list[_Job], bool]:
        """The jobs waiting now (at most ``MAX_BATCH``; the first one waited for), and whether
        ``close`` came after them."""
        job = self._jobs.get()
        batch: list[_Job] = []
        while job is not None:
            batch.append(job)
            if len(batch) >= self.MAX_BATCH:
                return batch, False
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return batch, False
        return batch, True

    def _flush(self, batch: list[_Job]) -> None:
        started = time.thread_time()
        errors: list[BaseException | None] = [None] * len(batch)
        lines: list[tuple[RunResult, bytes]] = []
        written: list[int] = []
        for i, (result, transcript, _, _) in enumerate(batch):
            if transcript is None:
                continue
            try:
                lines.append((result, self.store.transcript_line(transcript, self.redactor)))
                written.append(i)
            except Exception as exc:
                errors[i] = exc
        try:
            self.store.append_transcripts(lines)
        except Exception as exc:
            for i in written:
                errors[i] = exc
        try:
            self.store.append_many([job[0] for job, error in zip(batch, errors) if error is None])
        except Exception as exc:
            errors = [error or exc for error in errors]
        with _CPU_LOCK:
            ResultWriter.cpu_seconds += time.thread_time() - started
        settle: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], BaseException | None]]] = {}
        for (_, _, loop, done), error in zip(batch, errors):
            settle.setdefault(loop, []).append((done, error))
        for loop, items in settle.items():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, items)


_CPU_LOCK = threading.Lock()
_Job = tuple[RunResult, "Transcript | None", asyncio.AbstractEventLoop, "asyncio.Future[None]"]


def _settle(items: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for done, error in items:
        if done.done():
            continue
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


def read_transcript(run_dir: Path | str, result: RunResult) -> Transcript | None:
    """The attempt's transcript, or None when it has none, or its file is missing, unreadable, too
    big, outside the run directory, or (in the log) not this run's."""
    return TranscriptReader(run_dir).read(result)


class TranscriptReader:
    """Reads the transcripts of one run directory: the directory resolved once and the log opened
    once, so a report of 3,000 runs does not resolve two paths and open the log for each."""

    def __init__(self, run_dir: Path | str) -> None:
        self.base = Path(run_dir).resolve()
        self._logs: dict[str, int | None] = {}
        weakref.finalize(self, _close_all, self._logs)

    def read(self, result: RunResult) -> Transcript | None:
        """``read_transcript`` of one result."""
        if not result.transcript_file:
            return None
        from tamesu.kernel.transcript import Transcript

        span = result.transcript_span
        try:
            if span is None:
                path = self.inside(result.transcript_file)
                if path is None or path.stat().st_size > MAX_TRANSCRIPT_BYTES:
                    return None
                transcript = Transcript.from_json(path.read_bytes())
            else:
                offset, length = span
                if not 0 <= length <= MAX_TRANSCRIPT_BYTES or offset < 0:
                    return None
                fd = self._log(result.transcript_file)
                if fd is None:
                    return None
                transcript = Transcript.from_json(os.pread(fd, length, offset))
        except (OSError, ValueError):
            return None
        return transcript if transcript.run_id == result.run_id else None

    def inside(self, relative: str) -> Path | None:
        """``relative`` in the run directory, only when it stays inside it."""
        path = (self.base / relative).resolve()
        return path if path.is_relative_to(self.base) else None

    def _log(self, relative: str) -> int | None:
        if relative not in self._logs:
            path = self.inside(relative)
            try:
                self._logs[relative] = os.open(path, os.O_RDONLY) if path is not None else None
            except OSError:
                self._logs[relative] = None
        return self._logs[relative]


def _close_all(logs: dict[str, int | None]) -> None:
    for fd in logs.values():
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def latest_run_dir(output: Path | str, *, suite_paths: Iterable[str] | None = None) -> Path | None:
    """The newest run directory under ``output``; with ``suite_paths``, the newest one of those suites."""
    root = Path(output)
    if not root.is_dir():
        return None
    wanted = sorted(str(Path(p).resolve()) for p in suite_paths) if suite_paths is not None else None
    if wanted is None:
        pointed = _read_latest(root)
        if pointed is not None:
            return pointed
    candidates = sorted(
        (p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and _RUN_DIR.match(p.name)),
        key=lambda p: p.name,
        reverse=True,
    )
    for path in candidates:
        if wanted is None:
            return path
        try:
            settings = json.loads((path / "settings.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if sorted(settings.get("suite_paths", [])) == wanted:
            return path
    return None


def _read_latest(root: Path) -> Path | None:
    """Where ``latest`` points; a real folder by that name points nowhere (the newest run is looked
    for instead)."""
    link = root / LATEST
    if link.is_symlink():
        target = link.resolve()
        return target if target.is_dir() else None
    if link.is_file():
        target = root / link.read_text(encoding="utf-8").strip()
        return target if target.is_dir() else None
    return None
