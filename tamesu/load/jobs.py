"""Runs as Ray Jobs: submit a suite folder to a cluster, follow it, fetch its results back.

``RayJobs`` is the one wrapper around Ray's job submission SDK (the dashboard's HTTP API, usually
``http://HEAD:8265``); the suite folder travels as the job's ``working_dir``. On the cluster the job
runs ``python -m tamesu.cluster_job run|load ...``: the usual command against the cluster
(``--address auto``), writing into a fresh directory, which is then packed (tar.gz) and printed to
the job's log between ``[tamesu-artifact]`` markers, followed by ``[tamesu-exit] CODE``. The log is
the one channel every cluster has, so fetching needs no shared storage; ``unpack_artifacts`` turns
it back into run directories on the submitting machine.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shlex
import tarfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "ARTIFACT",
    "EXIT",
    "JOB_MODULE",
    "JobRow",
    "RayJobs",
    "auth_headers",
    "exit_code_of",
    "join_cluster",
    "pack_artifact",
    "unpack_artifacts",
    "visible",
]

JOB_MODULE = "tamesu.cluster_job"
"""What a job runs on the cluster (``python -m``): the command, then its packed results."""
ARTIFACT = "[tamesu-artifact]"
EXIT = "[tamesu-exit]"
_CHUNK = 12_000
"""Base64 characters per log line."""
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def auth_headers(token: str | None = None) -> dict[str, str]:
    """The bearer token for a cluster with token authentication: ``token``, else RAY_AUTH_TOKEN,
    else the file at RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token; nothing when there is none."""
    if token is None:
        token = os.environ.get("RAY_AUTH_TOKEN")
    if token is None:
        path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
        if path.is_file():
            token = path.read_text(encoding="utf-8").strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


@dataclass
class JobRow:
    id: str
    status: str
    kind: str
    suites: str
    started: float | None
    ended: float | None
    message: str

    @property
    def duration(self) -> float | None:
        if self.started is None:
            return None
        return (self.ended or time.time()) - self.started


SUBMIT_PATIENCE = 60.0
"""How long a submission waits for a cluster whose job agent is not ready yet (a head just started)."""


def _not_ready(exc: Exception) -> bool:
    """Ray's job API answers 500 "No available agent to submit job, please try again later" while the
    head's job agent starts: a state to wait out, not a failure of the submission."""
    text = str(exc)
    return "No available agent" in text or "try again later" in text


class RayJobs:
    """The cluster's job API at ``address`` (``http://HEAD:8265``); every Ray job call goes through here."""

    def __init__(self, address: str, *, token: str | None = None) -> None:
        try:
            from ray.job_submission import JobSubmissionClient
        except ImportError:
            from tamesu.errors import MissingExtraError

            raise MissingExtraError(
                "tamesu submit and tamesu jobs need Ray: pip install 'tamesu[ray]'"
            ) from None
        if "://" not in address:
            address = f"http://{address}"
        self.address = address
        try:
            self.client = JobSubmissionClient(address, headers=auth_headers(token))
        except Exception as exc:
            from tamesu.errors import TamesuError

            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "Authentication" in type(exc).__name__ or "401" in text:
                raise TamesuError(
                    f"the cluster at {address} wants its auth token: set RAY_AUTH_TOKEN or --token ({text})"
                ) from None
            raise TamesuError(f"cannot reach the Ray job API at {address}: {text}") from None

    def submit(
        self,
        *,
        kind: str,
        args: Sequence[str],
        working_dir: Path,
        suites: Sequence[str],
        excludes: Sequence[str] = (),
        python: str = "python",
        submission_id: str | None = None,
        num_cpus: float | None = None,
    ) -> str:
        """Start ``tamesu KIND ARGS`` on the cluster with ``working_dir`` uploaded; returns the job id."""
        entrypoint = shlex.join([python, "-m", JOB_MODULE, kind, *args])
        job_id = submission_id or f"tamesu-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        runtime_env: dict[str, Any] = {
            "working_dir": str(working_dir),
            "excludes": [".git", ".venv", "__pycache__", "tamesu-runs", *excludes],
        }
        if os.environ.get("TAMESU_DEBUG"):
            runtime_env["env_vars"] = {"TAMESU_DEBUG": os.environ["TAMESU_DEBUG"]}
        metadata = {"tamesu": kind, "suites": ",".join(suites)[:500], "from": str(working_dir)[:500]}
        deadline = time.monotonic() + SUBMIT_PATIENCE
        pause = 0.25
        while True:
            try:
                return str(
                    self.client.submit_job(
                        entrypoint=entrypoint,
                        submission_id=job_id,
                        runtime_env=runtime_env,
                        metadata=metadata,
                        entrypoint_num_cpus=num_cpus,
                    )
                )
            except RuntimeError as exc:
                if not _not_ready(exc):
                    raise
                if time.monotonic() + pause > deadline:
                    from tamesu.errors import TamesuError

                    raise TamesuError(
                        f"the cluster at {self.address} has no job agent ready after "
                        f"{SUBMIT_PATIENCE:.0f} s (its head node may still be starting): try again later"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 4.0)

    def list(self, *, every: bool = False) -> list[JobRow]:
        """Submitted jobs, newest first; only tamesu's unless ``every``."""
        rows = []
        for job in self.client.list_jobs():
            meta = job.metadata or {}
            if not every and "tamesu" not in meta:
                continue
            rows.append(
                JobRow(
                    id=job.submission_id or job.job_id or "?",
                    status=str(getattr(job.status, "value", job.status)),
                    kind=meta.get("tamesu", "-"),
                    suites=meta.get("suites", "-"),
                    started=job.start_time / 1000 if job.start_time else None,
                    ended=job.end_time / 1000 if job.end_time else None,
                    message=(job.message or "").splitlines()[0] if job.message else "",
                )
            )
        return sorted(rows, key=lambda r: r.started or 0.0, reverse=True)

    def status(self, job_id: str) -> str:
        status = self.client.get_job_status(job_id)
        return str(getattr(status, "value", status))

    def logs(self, job_id: str) -> str:
        return str(self.client.get_job_logs(job_id))

    async def follow(self, job_id: str) -> AsyncIterator[str]:
        """The job's log as it is written, chunk by chunk, until the job ends."""
        async for chunk in self.client.tail_job_logs(job_id):
            yield chunk

    def stop(self, job_id: str) -> bool:
        return bool(self.client.stop_job(job_id))

    def wait(self, job_id: str, timeout: float = 60.0) -> str:
        """The job's status once it is over (or when ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        status = self.status(job_id)
        while status not in TERMINAL and time.monotonic() < deadline:
            time.sleep(0.5)
            status = self.status(job_id)
        return status


def visible(text: str) -> str:
    """A log without the artifact lines (what a person wants to read)."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(ARTIFACT))


def exit_code_of(log: str) -> int | None:
    """The exit code the job's tamesu reported, or None when it never got that far."""
    for line in reversed(log.splitlines()):
        if line.startswith(EXIT):
            try:
                return int(line[len(EXIT) :].strip())
            except ValueError:
                return None
    return None


def pack_artifact(directory: Path, stream: TextIO, *, name: str = "runs") -> int:
    """Write ``directory`` (tar.gz, base64) to ``stream`` between artifact markers; returns its size."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(directory.iterdir()):
            if not path.is_symlink():
                tar.add(path, arcname=path.name)
    data = buffer.getvalue()
    text = base64.b64encode(data).decode("ascii")
    stream.write(f"{ARTIFACT} begin {name} {len(data)} {hashlib.sha256(data).hexdigest()}\n")
    for start in range(0, len(text), _CHUNK):
        stream.write(f"{ARTIFACT} {text[start : start + _CHUNK]}\n")
    stream.write(f"{ARTIFACT} end {name}\n")
    stream.flush()
    return len(data)


def unpack_artifacts(log: str, dest: Path) -> list[Path]:
    """Extract every artifact in ``log`` under ``dest``; returns the top-level paths it wrote.

    A damaged artifact (a cut log, a checksum mismatch) raises ``ValueError``; members that would
    land outside ``dest`` are refused.
    """
    written: list[Path] = []
    parts: list[str] | None = None
    expected = ""
    for line in log.splitlines():
        if not line.startswith(ARTIFACT):
            continue
        body = line[len(ARTIFACT) :].strip()
        if body.startswith("begin "):
            parts, expected = [], body.split()[-1]
        elif body.startswith("end "):
            if parts is None:
                continue
            data = base64.b64decode("".join(parts))
            if hashlib.sha256(data).hexdigest() != expected:
                raise ValueError("the results in the job's log are damaged (checksum mismatch)")
            written.extend(_extract(data, dest))
            parts = None
        elif parts is not None:
            parts.append(body)
    if parts is not None:
        raise ValueError("the results in the job's log are cut short")
    return written


def _extract(data: bytes, dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    tops: set[Path] = set()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            target = (root / m.name).resolve()
            if root not in target.parents or m.issym() or m.islnk() or m.isdev():
                raise ValueError(f"refusing to extract {m.name!r} from the job's results")
            tops.add(root / Path(m.name).parts[0])
        tar.extractall(root, members=members)
    return sorted(tops)


def join_cluster() -> None:
    """Connect this job's driver to the cluster now, so the run's placement leaves the connection
    open: Ray deletes a job's working_dir (this process's cwd) once its driver disconnects."""
    import logging

    import ray

    if not ray.is_initialized():
        ray.init(address="auto", logging_level=logging.WARNING, log_to_driver=False)
