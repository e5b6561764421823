"""The history database: every invocation of the project, its tests, runs, metrics and costs.

An embedded SQLite file in the project (``.tamesu/history.db`` by default), written once at the
end of each ``tamesu run`` in one transaction, read by ``tamesu history`` and ``tamesu diff``.
Recording is best effort by design: a locked, read-only or corrupt database makes a warning, never
a failed run (``record_invocation`` raises ``HistoryError`` and the caller notes it).

    invocations  one row per tamesu run: when, how long, exit code, suites, git commit and branch
    tests        one row per expanded test: verdict, passes, runs, repeats, threshold, duration
    runs         one row per run's final attempt: outcome, duration, metrics (JSON), cost
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "HistoryDB", "HistoryError", "Invocation", "RunRow", "TestRow"]

SCHEMA_VERSION = 1
_LOCK_WAIT_S = 2.0
"""How long a write waits for another process's lock before giving up with a warning."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS invocations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at REAL NOT NULL,
    duration REAL NOT NULL,
    exit_code INTEGER NOT NULL,
    suites TEXT NOT NULL,
    suite_key TEXT NOT NULL,
    run_dir TEXT,
    git_commit TEXT,
    git_branch TEXT,
    git_dirty INTEGER,
    argv TEXT,
    tamesu_version TEXT,
    counts TEXT NOT NULL,
    cost_usd REAL NOT NULL DEFAULT 0,
    tokens REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS invocations_by_suites ON invocations (suite_key, started_at);
CREATE TABLE IF NOT EXISTS tests (
    invocation_id INTEGER NOT NULL REFERENCES invocations (id) ON DELETE CASCADE,
    suite TEXT NOT NULL,
    test_id TEXT NOT NULL,
    target TEXT,
    verdict TEXT NOT NULL,
    passed INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    repeats INTEGER NOT NULL,
    pass_threshold REAL NOT NULL,
    duration REAL NOT NULL,
    tags TEXT NOT NULL,
    PRIMARY KEY (invocation_id, suite, test_id)
);
CREATE INDEX IF NOT EXISTS tests_by_name ON tests (suite, test_id);
CREATE TABLE IF NOT EXISTS runs (
    invocation_id INTEGER NOT NULL REFERENCES invocations (id) ON DELETE CASCADE,
    suite TEXT NOT NULL,
    test_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    repeat_index INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    duration REAL NOT NULL,
    error_kind TEXT,
    cost_usd REAL NOT NULL DEFAULT 0,
    metrics TEXT NOT NULL,
    PRIMARY KEY (invocation_id, suite, run_id)
);
"""


class HistoryError(Exception):
    """The history could not be read or written (locked, read-only, corrupt, another schema)."""


@dataclass
class RunRow:
    run_id: str
    repeat_index: int
    outcome: str
    duration: float
    metrics: dict[str, float] = field(default_factory=dict)
    attempt: int = 1
    error_kind: str | None = None


@dataclass
class TestRow:
    __test__ = False

    suite: str
    test_id: str
    verdict: str
    passed: int
    runs: int
    repeats: int = 1
    pass_threshold: float = 1.0
    duration: float = 0.0
    target: str = ""
    tags: list[str] = field(default_factory=list)
    run_rows: list[RunRow] = field(default_factory=list)


@dataclass
class Invocation:
    suites: list[str]
    started_at: float
    duration: float
    exit_code: int
    counts: dict[str, int]
    tests: list[TestRow] = field(default_factory=list)
    id: int | None = None
    run_dir: str | None = None
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    argv: list[str] = field(default_factory=list)
    tamesu_version: str | None = None
    cost_usd: float = 0.0
    tokens: float = 0.0

    @property
    def suite_key(self) -> str:
        return suite_key(self.suites)


def suite_key(suites: Sequence[str]) -> str:
    """Invocations of the same suites share this key (order does not matter)."""
    return "\x1f".join(sorted(set(suites)))


class HistoryDB:
    """One history file; every method opens, uses and closes its own connection."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @contextmanager
    def _connect(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        if not write and not self.path.is_file():
            raise HistoryError(f"no history yet at {self.path}: tamesu run records one")
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=_LOCK_WAIT_S)) as db:
                db.execute("PRAGMA foreign_keys = ON")
                if write:
                    db.executescript(_SCHEMA)
                    db.execute(
                        "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                    )
                found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if found is None or int(found[0]) != SCHEMA_VERSION:
                    raise HistoryError(
                        f"{self.path} has history schema {found and found[0]}, not {SCHEMA_VERSION}"
                    )
                yield db
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: {exc}") from None
        except OSError as exc:
            raise HistoryError(f"{self.path}: {exc.strerror or exc}") from None

    def record(self, inv: Invocation) -> int:
        """Store one invocation with its tests and runs in one transaction; returns its id."""
        with self._connect(write=True) as db, db:
            cur = db.execute(
                "INSERT INTO invocations (started_at, duration, exit_code, suites, suite_key, run_dir, git_commit,"
                " git_branch, git_dirty, argv, tamesu_version, counts, cost_usd, tokens)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    inv.started_at, inv.duration, inv.exit_code, json.dumps(inv.suites), inv.suite_key,
                    inv.run_dir, inv.git_commit, inv.git_branch,
                    None if inv.git_dirty is None else int(inv.git_dirty), json.dumps(inv.argv),
                    inv.tamesu_version, json.dumps(inv.counts), inv.cost_usd, inv.tokens,
                ),
            )  # fmt: skip
            inv_id = int(cur.lastrowid or 0)
            db.executemany(
                "INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (inv_id, t.suite, t.test_id, t.target, t.verdict, t.passed, t.runs, t.repeats,
                     t.pass_threshold, t.duration, json.dumps(t.tags))
                    for t in inv.tests
                ],
            )  # fmt: skip
            db.executemany(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (inv_id, t.suite, t.test_id, r.run_id, r.repeat_index, r.attempt, r.outcome, r.duration,
                     r.error_kind, float(r.metrics.get("llm_cost_usd", 0.0) or 0.0), json.dumps(r.metrics))
                    for t in inv.tests
                    for r in t.run_rows
                ],
            )  # fmt: skip
        inv.id = inv_id
        return inv_id

    def invocations(
        self, *, limit: int | None = None, suites: Sequence[str] | None = None
    ) -> list[Invocation]:
        """The newest first, without their tests; ``suites``: only invocations of exactly these."""
        query = "SELECT * FROM invocations"
        args: list[Any] = []
        if suites:
            query += " WHERE suite_key = ?"
            args.append(suite_key(suites))
        query += " ORDER BY started_at DESC, id DESC"
        if limit:
            query += " LIMIT ?"
            args.append(limit)
        with self._connect(write=False) as db:
            db.row_factory = sqlite3.Row
            return [_invocation(row) for row in db.execute(query, args)]

    def invocation(self, inv_id: int, *, with_tests: bool = True) -> Invocation:
        with self._connect(write=False) as db:
            db.row_factory = sqlite3.Row
            row = db.execute("SELECT * FROM invocations WHERE id = ?", (inv_id,)).fetchone()
            if row is None:
                raise HistoryError(f"no invocation {inv_id} in {self.path}")
            inv = _invocation(row)
            if with_tests:
                inv.tests = _tests(db, inv_id)
        return inv

    def verdicts(self, suite: str, test_id: str, *, limit: int) -> list[tuple[int, str, int, int]]:
        """(invocation id, verdict, passed, runs) of one test in its latest ``limit`` invocations."""
        with self._connect(write=False) as db:
            return list(
                db.execute(
                    "SELECT t.invocation_id, t.verdict, t.passed, t.runs FROM tests t JOIN invocations i"
                    " ON i.id = t.invocation_id WHERE t.suite = ? AND t.test_id = ?"
                    " ORDER BY i.started_at DESC, i.id DESC LIMIT ?",
                    (suite, test_id, limit),
                )
            )


def _invocation(row: sqlite3.Row) -> Invocation:
    return Invocation(
        id=row["id"],
        suites=json.loads(row["suites"]),
        started_at=row["started_at"],
        duration=row["duration"],
        exit_code=row["exit_code"],
        counts=json.loads(row["counts"]),
        run_dir=row["run_dir"],
        git_commit=row["git_commit"],
        git_branch=row["git_branch"],
        git_dirty=None if row["git_dirty"] is None else bool(row["git_dirty"]),
        argv=json.loads(row["argv"] or "[]"),
        tamesu_version=row["tamesu_version"],
        cost_usd=row["cost_usd"],
        tokens=row["tokens"],
    )


def _tests(db: sqlite3.Connection, inv_id: int) -> list[TestRow]:
    tests: dict[tuple[str, str], TestRow] = {}
    for row in db.execute("SELECT * FROM tests WHERE invocation_id = ? ORDER BY rowid", (inv_id,)):
        tests[(row["suite"], row["test_id"])] = TestRow(
            suite=row["suite"],
            test_id=row["test_id"],
            verdict=row["verdict"],
            passed=row["passed"],
            runs=row["runs"],
            repeats=row["repeats"],
            pass_threshold=row["pass_threshold"],
            duration=row["duration"],
            target=row["target"] or "",
            tags=json.loads(row["tags"]),
        )
    for row in db.execute("SELECT * FROM runs WHERE invocation_id = ? ORDER BY repeat_index", (inv_id,)):
        test = tests.get((row["suite"], row["test_id"]))
        if test is not None:
            test.run_rows.append(
                RunRow(
                    run_id=row["run_id"],
                    repeat_index=row["repeat_index"],
                    outcome=row["outcome"],
                    duration=row["duration"],
                    metrics=json.loads(row["metrics"]),
                    attempt=row["attempt"],
                    error_kind=row["error_kind"],
                )
            )
    return list(tests.values())
