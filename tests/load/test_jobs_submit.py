"""Submitting to a cluster whose job agent is still starting: the submission waits, within a bound.

The cluster's job API is a loopback HTTP server answering as Ray's dashboard does; Ray's own
``JobSubmissionClient`` talks to it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("ray.job_submission")

from tamesu.errors import TamesuError
from tamesu.load import jobs
from tamesu.load.jobs import RayJobs

pytestmark = pytest.mark.integration

NOT_READY = b"No available agent to submit job, please try again later."


class JobApi(BaseHTTPRequestHandler):
    """Ray's job API as a head node answers while its job agent starts: ``refusals`` 500s, then jobs."""

    refusals = 0
    posts: list[dict[str, object]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/api/version":
            self._answer(
                200, json.dumps({"version": "4", "ray_version": "2.40.0", "ray_commit": "x"}).encode()
            )
        else:
            self._answer(404, b"not found", "text/plain")

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(200, b"{}")

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).posts.append(request)
        if len(type(self).posts) <= type(self).refusals:
            self._answer(500, NOT_READY, "text/plain")
        else:
            self._answer(
                200, json.dumps({"submission_id": request["submission_id"], "job_id": None}).encode()
            )


@pytest.fixture
def job_api() -> Iterator[tuple[str, type[JobApi]]]:
    handler = type("Api", (JobApi,), {"refusals": 0, "posts": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def submit(address: str, folder: Path) -> str:
    (folder / "suite.yaml").write_text("suite: s\n")
    return RayJobs(address).submit(
        kind="run", args=["suite.yaml"], working_dir=folder, suites=["suite.yaml"], submission_id="job-1"
    )


def test_a_submission_waits_for_a_job_agent_that_is_still_starting(
    job_api: tuple[str, type[JobApi]], tmp_path: Path
) -> None:
    address, api = job_api
    api.refusals = 2
    assert submit(address, tmp_path) == "job-1"
    assert len(api.posts) == 3


def test_a_job_agent_that_never_comes_is_a_clear_error_within_the_bound(
    job_api: tuple[str, type[JobApi]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, api = job_api
    api.refusals = 10**6
    monkeypatch.setattr(jobs, "SUBMIT_PATIENCE", 1.0)
    with pytest.raises(TamesuError, match="no job agent ready after 1 s"):
        submit(address, tmp_path)
    assert 2 <= len(api.posts) < 10
