"""The results store: one directory per invocation, written durably as each run finishes.

    tamesu-runs/20250101-120000-support-1a2b3c/
        settings.json     what was asked (command line, suites, options; never a secret value)
        results.jsonl     one RunResult per line, flushed and fsync'd as each attempt ends
        transcripts/      one redacted Transcript per attempt
        summary.json      written at the end (verdicts, counts, exit code)
    tamesu-runs/latest -> 20250101-120000-support-1a2b3c

A crash or a Ctrl-C loses nothing that finished, and ``tamesu run --resume`` reads results.jsonl
to redo only the runs without a final result.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.runner.spec import RunResult
from tamesu.runner.verdict import final_results, run_key

if TYPE_CHECKING:
    from tamesu.secrets import Redactor
    from tamesu.transcript import Transcript

__all__ = [
    "DEFAULT_OUTPUT",
    "ResultsStore",
    "latest_run_dir",
    "output_dir",
    "redact_result",
    "safe_name",
]

DEFAULT_OUTPUT = "tamesu-runs"
LATEST = "latest"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RUN_DIR = re.compile(r"^\d{8}-\d{6}-.+-[0-9a-f]{6}$")


def output_dir(output: str | os.PathLike[str] | None, project_dir: Path | None) -> Path:
    """Where run directories go: ``output`` (tamesu.yaml or --output) relative to the project, else cwd."""
    base = project_dir if project_dir is not None else Path.cwd()
    path = Path(output) if output else Path(DEFAULT_OUTPUT)
    return path if path.is_absolute() else base / path


def safe_name(text: str, *, key: str | None = None, limit: int = 60) -> str:
    """A file name that keeps the text readable and cannot collide (a short hash of ``key or text``)."""
    slug = _UNSAFE.sub("_", text).strip("._")[:limit] or "run"
    digest = hashlib.sha1((key or text).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


def redact_result(result: RunResult, redactor: Redactor | None) -> RunResult:
    """The result with every secret value replaced, in messages, expected/actual and error text."""
    if not redactor:
        return result
    data = redactor.redact_obj(msgspec.to_builtins(result))
    return msgspec.convert(data, RunResult)


class ResultsStore:
    """One invocation's directory; ``append`` is safe to call from worker threads."""

    def __init__(self, directory: Path | str) -> None:
        self.dir = Path(directory)
        self._lock = threading.Lock()

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
        (directory / "transcripts").mkdir(parents=True)
        store = cls(directory)
        store.write_json("settings.json", settings)
        (directory / "results.jsonl").touch()
        store.mark_latest()
        return store

    @classmethod
    def open(cls, directory: Path | str) -> ResultsStore:
        """An existing run directory, to resume it."""
        path = Path(directory)
        if not (path / "settings.json").is_file():
            raise FileNotFoundError(f"{path} is not a tamesu run directory (no settings.json)")
        (path / "transcripts").mkdir(exist_ok=True)
        return cls(path)

    @property
    def settings(self) -> dict[str, Any]:
        return json.loads((self.dir / "settings.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def append(self, result: RunResult) -> None:
        """Append one result and make it durable before returning (flush + fsync)."""
        line = msgspec.json.encode(result) + b"\n"
        with self._lock, open(self.dir / "results.jsonl", "ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def write_transcript(self, result: RunResult, transcript: Transcript, redactor: Redactor | None) -> str:
        """Write one attempt's transcript (redacted); returns its path relative to the run directory."""
        name = safe_name(result.run_id, key=run_key(result.suite, result.run_id))
        if result.attempt > 1:
            name += f".{result.attempt}"
        rel = f"transcripts/{name}.json"
        data: Any = msgspec.to_builtins(transcript)
        if redactor:
            data = redactor.redact_obj(data)
        (self.dir / rel).write_bytes(msgspec.json.encode(data))
        return rel

    def results(self) -> list[RunResult]:
        """Every attempt recorded so far; a line cut short by a crash is skipped."""
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
        return out

    def finished(self) -> list[RunResult]:
        """The final result of every run that has one: what ``--resume`` keeps and does not redo."""
        return [r for r in final_results(self.results()) if r.final]

    def finished_keys(self) -> set[str]:
        return {run_key(r.suite, r.run_id) for r in self.finished()}

    def write_json(self, name: str, data: Any) -> None:
        """Write atomically (temp file + rename), so a reader never sees half a file."""
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.dir / name)

    def mark_latest(self) -> None:
        """Point ``latest`` at this directory: a symlink where possible, else a file naming it."""
        link = self.dir.parent / LATEST
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        try:
            link.symlink_to(self.dir.name, target_is_directory=True)
        except OSError:
            link.write_text(self.dir.name + "\n", encoding="utf-8")


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
    link = root / LATEST
    if link.is_symlink() or link.is_dir():
        target = link.resolve()
        return target if target.is_dir() else None
    if link.is_file():
        target = root / link.read_text(encoding="utf-8").strip()
        return target if target.is_dir() else None
    return None
