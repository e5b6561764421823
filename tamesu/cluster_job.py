"""What a Ray job runs on the cluster: ``python -m tamesu.cluster_job run|load [OPTIONS]``.

It is the usual command against the cluster (``--address auto``) writing into a fresh directory,
which is then packed into the job's log (``tamesu.load.jobs``) for ``tamesu submit`` to fetch.
Not a command of its own: ``tamesu submit`` starts it.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["job_main", "report_paths_into"]

_REPORTS = ("--junit", "--json")


def report_paths_into(argv: Sequence[str], runs: Path) -> list[str]:
    """Report files named with a relative path are written among the runs, so they come back too."""
    out: list[str] = []
    take = False
    for arg in argv:
        if take:
            out.append(arg if Path(arg).is_absolute() else str(runs / arg))
            take = False
            continue
        name, eq, value = arg.partition("=")
        if name in _REPORTS and eq:
            out.append(f"{name}={value if Path(value).is_absolute() else runs / value}")
        else:
            out.append(arg)
            take = arg in _REPORTS
    return out


def job_main(argv: Sequence[str], *, stream: TextIO | None = None) -> int:
    """Inside the job: ``tamesu KIND ARGS --address auto`` into a fresh directory, then its artifact."""
    from tamesu.cli import main
    from tamesu.load.jobs import EXIT, join_cluster, pack_artifact

    out = stream or sys.stdout
    if not argv or argv[0] not in ("run", "load"):
        out.write("usage: python -m tamesu.cluster_job run|load [OPTIONS]\n")
        return 2
    runs = Path(tempfile.mkdtemp(prefix="tamesu-job-"))
    args = [*report_paths_into(argv, runs), "--output", str(runs)]
    if "--address" not in args and "--ray" not in args:
        args += ["--address", "auto"]
    join_cluster()
    code = main(args)
    out.flush()
    if any(runs.iterdir()):
        pack_artifact(runs, out)
    out.write(f"{EXIT} {code}\n")
    out.flush()
    return code


if __name__ == "__main__":  # pragma: no cover - the job's entrypoint
    sys.exit(job_main(sys.argv[1:]))
