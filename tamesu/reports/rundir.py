"""A finished (or interrupted) run directory read back for people: ``tamesu report`` and ``tamesu show``.

Everything comes from the files a run leaves (settings.json, summary.json, results.jsonl,
transcripts.jsonl, recordings/, load-report.json), so a report can be made later, elsewhere, from a
CI artifact. A run that never wrote summary.json (interrupted, or still going) is read from its
results alone, and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import UsageError
from tamesu.runner.results import ResultsStore, TranscriptReader, latest_run_dir, output_dir
from tamesu.runner.verdict import final_results

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Transcript

__all__ = ["RunDirectory", "TestRow", "resolve_run_dir"]


def resolve_run_dir(arg: str | Path | None, *, cwd: Path | None = None) -> Path:
    """A run directory from a path, a directory name under the project's output folder, or (None)
    the latest run of the project."""
    cwd = cwd or Path.cwd()
    if arg is not None and (Path(arg) / "settings.json").is_file():
        return Path(arg)
    from tamesu.config.loader import load_project

    found = load_project(cwd)
    project, project_dir = found if found else (None, None)
    where = output_dir(getattr(project, "output", None), project_dir)
    if arg is None:
        latest = latest_run_dir(where)
        if latest is None:
            raise UsageError(f"no run directory under {where}: run tamesu run first, or name one")
        return latest
    named = where / str(arg)
    if (named / "settings.json").is_file():
        return named
    raise UsageError(f"{arg} is not a tamesu run directory (no settings.json there or under {where})")


@dataclass
class TestRow:
    """One expanded test of the run with its final runs, as summary.json describes it."""

    __test__ = False

    suite: str
    test_id: str
    verdict: str
    target: str
    info: dict[str, Any] = field(default_factory=dict)
    """summary.json's entry: passed, repeats, pass_count, interval, pass_hat_k, stopped, note..."""
    runs: list[RunResult] = field(default_factory=list)

    @cached_property
    def caveat(self) -> str:
        """``1 check skipped, 1 inconclusive`` from the test's summary (empty when all was checked);
        the page shows it in the summary table and in the test's section."""
        parts = []
        skipped = len(self.info.get("skipped_checks") or {}) or len(
            {a.name for r in self.runs for a in r.assertions if a.skipped}
        )
        if skipped:
            parts.append(f"{skipped} check{'s' * (skipped != 1)} skipped")
        unsure = len({a.name for r in self.runs for a in r.assertions if a.inconclusive})
        if unsure:
            parts.append(f"{unsure} inconclusive")
        return ", ".join(parts)

    @cached_property
    def tags(self) -> list[str]:
        """The runs' tags, in order, each once (read for the page's filters and each test's header)."""
        seen: dict[str, None] = {}
        for r in self.runs:
            seen.update(dict.fromkeys(r.tags))
        return list(seen)


@dataclass
class RunDirectory:
    dir: Path
    settings: dict[str, Any]
    summary: dict[str, Any] | None
    attempts: list[RunResult]
    load_report: dict[str, Any] | None = None

    @classmethod
    def open(cls, path: str | Path) -> RunDirectory:
        try:
            store = ResultsStore.open(path)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        return cls(
            dir=store.dir,
            settings=_json(store.dir / "settings.json") or {},
            summary=_json(store.dir / "summary.json"),
            attempts=store.results(),
            load_report=_json(store.dir / "load-report.json"),
        )

    @property
    def results(self) -> list[RunResult]:
        """The final attempt of every run."""
        return final_results(self.attempts)

    @property
    def complete(self) -> bool:
        return self.summary is not None

    @property
    def suites(self) -> list[str]:
        return list((self.summary or self.settings).get("suites") or [])

    def tests(self) -> list[TestRow]:
        """One row per expanded test, in the order of the summary (else the order runs ended)."""
        runs: dict[tuple[str, str], list[RunResult]] = {}
        for r in self.results:
            runs.setdefault((r.suite, r.test_id), []).append(r)
        rows: list[TestRow] = []
        for info in (self.summary or {}).get("tests") or []:
            key = (info.get("suite", ""), info.get("test_id", ""))
            rows.append(
                TestRow(
                    suite=key[0],
                    test_id=key[1],
                    verdict=str(info.get("verdict", "not_run")),
                    target=str(info.get("target", "")),
                    info=info,
                    runs=sorted(runs.pop(key, []), key=lambda r: r.repeat_index),
                )
            )
        for (suite, test_id), left in runs.items():
            outcomes = {r.outcome for r in left}
            verdict = next(
                (v for v in ("failed", "error", "quarantined", "inconclusive") if v in outcomes), "passed"
            )
            passed = sum(r.outcome == "passed" for r in left)
            rows.append(
                TestRow(
                    suite=suite,
                    test_id=test_id,
                    verdict=verdict,
                    target=left[0].target,
                    info={
                        "passed": passed,
                        "repeats": len(left),
                        "pass_count": f"{passed}/{len(left)} passed",
                    },
                    runs=sorted(left, key=lambda r: r.repeat_index),
                )
            )
        return rows

    @cached_property
    def _reader(self) -> TranscriptReader:
        return TranscriptReader(self.dir)

    def transcript(self, result: RunResult) -> Transcript | None:
        """The run's transcript, or None when it has none or it is missing, unreadable or too big."""
        return self._reader.read(result)

    def inside(self, relative: str) -> Path | None:
        """A path named by a run's files, only when it stays inside the run directory."""
        return self._reader.inside(relative)

    def find(self, run_id: str) -> list[RunResult]:
        """Runs named ``run_id``: exactly, else by test id, else those containing it."""
        results = self.results
        for match in (
            lambda r: r.run_id == run_id,
            lambda r: r.test_id == run_id,
            lambda r: run_id.lower() in r.run_id.lower(),
        ):
            found = [r for r in results if match(r)]
            if found:
                return found
        return []


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
