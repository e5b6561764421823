"""What a run directory holds, read back the way a person with ``jq`` would: the tests' view of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tamesu.kernel.outcome import RunResult
from tamesu.runner.results import TRANSCRIPT_LOG

__all__ = ["stored_lines", "stored_transcript", "stored_transcripts"]


def stored_lines(run_dir: Path | str) -> list[bytes]:
    """The transcript log's lines as written (redacted JSON, one attempt each)."""
    return Path(run_dir, TRANSCRIPT_LOG).read_bytes().splitlines()


def stored_transcripts(run_dir: Path | str) -> list[dict[str, Any]]:
    """Every transcript of the run directory, in the order they were written."""
    return [json.loads(line) for line in stored_lines(run_dir)]


def stored_transcript(run_dir: Path | str, result: RunResult) -> dict[str, Any]:
    """The attempt's transcript, found where its result says it is."""
    assert result.transcript_file == TRANSCRIPT_LOG and result.transcript_span is not None
    offset, length = result.transcript_span
    with open(Path(run_dir, result.transcript_file), "rb") as log:
        log.seek(offset)
        data = log.read(length)
    found = json.loads(data)
    assert found["run_id"] == result.run_id
    return found  # type: ignore[no-any-return]
