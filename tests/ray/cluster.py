"""A real multi-node Ray cluster on this machine: ``ray start --head`` plus worker nodes.

Every node is started with ``--block`` in a process group of its own, so stopping the cluster
is a signal to each group: SIGTERM, then SIGKILL for whatever is left. Each node has its own temp
dir (nodes sharing one on a machine delete each other's job working dirs) inside one made for
this cluster, and any process still naming it at the end is killed too, so a failed test
leaves nothing running. Token authentication is on, with a token made here.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
START_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalCluster:
    gcs: str
    dashboard: str
    env: dict[str, str]
    temp: Path
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    lost: list[subprocess.Popen[bytes]] = field(default_factory=list)
    """Nodes killed on purpose (``kill_node``)."""
    size: int = 0
    """How many nodes the cluster was started with."""

    def start_node(self, *, head: bool = False, cpus: int = 1) -> subprocess.Popen[bytes]:
        args = [str(BIN / "ray"), "start", "--block", f"--num-cpus={cpus}", "--node-ip-address=127.0.0.1",
                "--object-store-memory=80000000", "--disable-usage-stats"]  # fmt: skip
        number = len(self.nodes) + len(self.lost)
        args.append(f"--temp-dir={self.temp / f'node{number}'}")
        if head:
            port, dash = self.gcs.split(":")[1], self.dashboard.rsplit(":", 1)[1]
            args += ["--head", f"--port={port}", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
                     f"--dashboard-port={dash}"]  # fmt: skip
        else:
            args += [f"--address={self.gcs}"]
        log = open(self.temp / f"node-{number}.log", "wb")
        proc = subprocess.Popen(
            args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.nodes.append(proc)
        return proc

    def request(self, path: str) -> object:
        req = urllib.request.Request(
            self.dashboard + path, headers={"Authorization": f"Bearer {self.env['RAY_AUTH_TOKEN']}"}
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def node_states(self) -> dict[str, int]:
        """How many nodes Ray has in each state (ALIVE, DEAD)."""
        try:
            data = self.request("/api/v0/nodes?limit=100")
        except (OSError, ValueError):
            return {}
        nodes = data.get("data", {}).get("result", {}).get("result", [])  # type: ignore[union-attr]
        return dict(Counter(str(n.get("state")) for n in nodes))

    def wait_for_nodes(self, count: int, *, dead: int = 0, timeout: float = START_TIMEOUT) -> None:
        """Until ``count`` nodes are alive and ``dead`` have been seen to die."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.node_states()
            if states.get("ALIVE", 0) >= count and states.get("DEAD", 0) >= dead:
                return
            for proc in self.nodes:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Ray node exited early; see {self.temp}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{count} Ray nodes did not come up within {timeout:.0f}s; see {self.temp}"
                )
            time.sleep(0.5)

    def kill_node(self, proc: subprocess.Popen[bytes]) -> None:
        """A node dying: its whole process group killed at once."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        self.nodes.remove(proc)
        self.lost.append(proc)

    def replace_lost(self, *, cpus: int = 1) -> None:
        """A fresh worker node for each one killed, once Ray has seen the killed ones die, so the
        tests after a node loss (in any order) find the cluster whole again."""
        while len(self.nodes) < self.size:
            self.start_node(cpus=cpus)
        self.wait_for_nodes(self.size, dead=len(self.lost))

    def stop(self) -> None:
        for proc in reversed(self.nodes + self.lost):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for proc in self.nodes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self._kill_strays()

    def _kill_strays(self) -> None:
        """Processes still naming this cluster's temp dir (ours by construction)."""
        marker = str(self.temp)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            with contextlib.suppress(OSError):
                cmdline = (
                    Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
                if marker in cmdline:
                    os.kill(int(pid), signal.SIGKILL)


@contextlib.contextmanager
def local_cluster(workers: int = 2, cpus: int = 1) -> Iterator[LocalCluster]:
    """A head and ``workers`` worker nodes of ``cpus`` CPUs each, stopped on exit whatever happens."""
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
        "NO_COLOR": "1",
    }
    env.pop("RAY_ADDRESS", None)
    cluster = LocalCluster(
        gcs=f"127.0.0.1:{free_port()}", dashboard=f"http://127.0.0.1:{free_port()}", env=env, temp=temp
    )
    cluster.size = 1 + workers
    try:
        cluster.start_node(head=True, cpus=cpus)
        cluster.wait_for_nodes(1)
        for n in range(workers):
            cluster.start_node(cpus=cpus)
            cluster.wait_for_nodes(2 + n)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(temp, ignore_errors=True)
