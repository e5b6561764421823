"""The history database: every invocation of the project, its tests, runs, metrics and costs.

An embedded SQLite file in the project (``.tamesu/history.db`` by default), or a PostgreSQL server
a team shares (``history.url``, or ``--db postgresql://...``), with the same schema: written once at
the end of each ``tamesu run`` and ``tamesu load`` in one transaction, read by ``tamesu history``
and ``tamesu diff``. Recording is best effort by design: a locked, read-only, unreachable or
corrupt database makes a warning, never a failed run (``record_invocation`` raises
``HistoryError`` and the caller notes it).

    invocations  one row per invocation: kind (run or load), when, how long, exit code, suites,
                 git commit and branch, a load test's summary (JSON)
    tests        one row per expanded test: verdict, passes, runs, repeats, threshold, duration
    runs         one row per run's final attempt (a load test's call): outcome, duration,
                 metrics (JSON), cost
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tamesu.costs import metrics_cost
from tamesu.history.databases import (
    Db,
    HistoryError,
    connect_postgres,
    connect_sqlite,
    display_name,
    is_server_url,
    schema_sql,
)
from tamesu.untrusted import storable_text

__all__ = ["SCHEMA_VERSION", "HistoryDB", "HistoryError", "Invocation", "RunRow", "TestRow"]

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS invocations (
    id {id},
    started_at {real} NOT NULL,
    duration {real} NOT NULL,
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
    cost_usd {real} NOT NULL DEFAULT 0,
    tokens {real} NOT NULL DEFAULT 0,
    kind TEXT NOT NULL DEFAULT 'run',
    summary TEXT
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
    pass_threshold {real} NOT NULL,
    duration {real} NOT NULL,
    tags TEXT NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0,
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
    duration {real} NOT NULL,
    error_kind TEXT,
    cost_usd {real} NOT NULL DEFAULT 0,
    metrics TEXT NOT NULL,
    PRIMARY KEY (invocation_id, suite, run_id)
)
"""

_FROM_V1 = (
    "ALTER TABLE invocations ADD COLUMN kind TEXT NOT NULL DEFAULT 'run'",
    "ALTER TABLE invocations ADD COLUMN summary TEXT",
    "ALTER TABLE tests ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",
    "UPDATE tests SET seq = rowid",
)
"""A version 1 file (SQLite only: the server schema began at 2) gains the load columns and test order."""


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
    kind: str = "run"
    """``run`` (tamesu run) or ``load`` (tamesu load: every call is a run of its test)."""
    summary: dict[str, Any] = field(default_factory=dict)
    """A load test's figures: calls, pass and error rates, latency percentiles, gates; for any
    invocation, ``selection`` (the options that chose its tests, when some did) and
    ``checks_skipped`` (checks not evaluated, when any were)."""

    @property
    def selection(self) -> dict[str, Any]:
        """The options that chose this invocation's tests (``{"tags": ["smoke"]}``); empty: all."""
        chosen = self.summary.get("selection")
        return chosen if isinstance(chosen, dict) else {}

    @property
    def suite_key(self) -> str:
        return suite_key(self.suites)


def suite_key(suites: Sequence[str]) -> str:
    """Invocations of the same suites share this key (order does not matter)."""
    return "\x1f".join(sorted(set(suites)))


class HistoryDB:
    """One history (a SQLite file or a server URL); every method opens, uses and closes its own
    connection, in one transaction."""

    def __init__(self, location: str | Path) -> None:
        self.location: str | Path = location if is_server_url(location) else Path(location)
        self.name = display_name(location)
        """What messages call it (a URL without its password)."""
        self.skipped: list[str] = []
        """Rows tamesu did not write (unreadable), named and left out of what was read."""

    def exists(self) -> bool:
        """Whether there is anything to read (a server is assumed to be there)."""
        return isinstance(self.location, str) or self.location.is_file()

    @contextmanager
    def _connect(self, *, write: bool) -> Iterator[Db]:
        if isinstance(self.location, str):
            with connect_postgres(self.location) as db:
                self._schema(db, create=True)
                yield db
            return
        with connect_sqlite(self.location, write=write) as db:
            self._schema(db, create=write)
            yield db

    def _schema(self, db: Db, *, create: bool) -> None:
        """Create the tables when asked (a server: under a lock, as several runs may start at once),
        bring a version 1 file up to date, and refuse another version."""
        if db.dialect == "postgresql":
            db.run("SELECT pg_advisory_xact_lock(7361657375)")
        if create:
            for statement in schema_sql(db.dialect, _SCHEMA):
                if "ADD COLUMN" not in statement:
                    db.run(statement)
            db.run(
                "INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING",
                (str(SCHEMA_VERSION),),
            )
        found = db.rows("SELECT value FROM meta WHERE key = 'schema_version'")
        version = int(found[0]["value"]) if found else None
        if version == 1 and db.dialect == "sqlite":
            for statement in _FROM_V1:
                db.run(statement)
            db.run("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            version = SCHEMA_VERSION
        if version != SCHEMA_VERSION:
            raise HistoryError(f"{self.name} has history schema {version}, not {SCHEMA_VERSION}")

    def record(self, inv: Invocation) -> int:
        """Store one invocation with its tests and runs in one transaction; returns its id."""
        with self._connect(write=True) as db:
            (row,) = db.rows(
                "INSERT INTO invocations (started_at, duration, exit_code, suites, suite_key, run_dir, git_commit,"
                " git_branch, git_dirty, argv, tamesu_version, counts, cost_usd, tokens, kind, summary)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    inv.started_at, inv.duration, inv.exit_code, json.dumps(inv.suites), _text(inv.suite_key),
                    _text(inv.run_dir), inv.git_commit, _text(inv.git_branch),
                    None if inv.git_dirty is None else int(inv.git_dirty), json.dumps(inv.argv),
                    inv.tamesu_version, json.dumps(inv.counts), inv.cost_usd, inv.tokens, inv.kind,
                    json.dumps(inv.summary) if inv.summary else None,
                ),
            )  # fmt: skip
            inv_id = int(row["id"])
            db.run_many(
                "INSERT INTO tests (invocation_id, suite, test_id, target, verdict, passed, runs, repeats,"
                " pass_threshold, duration, tags, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (inv_id, _text(t.suite), _text(t.test_id), _text(t.target), t.verdict, t.passed, t.runs, t.repeats,
                     t.pass_threshold, t.duration, json.dumps(t.tags), seq)
                    for seq, t in enumerate(inv.tests)
                ],
            )  # fmt: skip
            runs = {
                (t.suite, r.run_id): (
                    inv_id, _text(t.suite), _text(t.test_id), _text(r.run_id), r.repeat_index, r.attempt,
                    r.outcome, r.duration, _text(r.error_kind), metrics_cost(r.metrics), json.dumps(r.metrics),
                )
                for t in inv.tests
                for r in t.run_rows
            }  # fmt: skip
            db.run_many(
                "INSERT INTO runs (invocation_id, suite, test_id, run_id, repeat_index, attempt, outcome,"
                " duration, error_kind, cost_usd, metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                list(runs.values()),
            )
        inv.id = inv_id
        return inv_id

    def invocations(
        self, *, limit: int | None = None, suites: Sequence[str] | None = None, kind: str | None = None
    ) -> list[Invocation]:
        """The newest first, without their tests; ``suites``: only invocations of exactly these;
        ``kind``: only runs or only load tests."""
        query = "SELECT * FROM invocations"
        where: list[str] = []
        args: list[Any] = []
        if suites:
            where.append("suite_key = ?")
            args.append(suite_key(suites))
        if kind:
            where.append("kind = ?")
            args.append(kind)
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY started_at DESC, id DESC"
        if limit:
            query += " LIMIT ?"
            args.append(limit)
        with self._connect(write=False) as db:
            return self._readable(db.rows(query, args), _invocation, "invocations")

    def invocation(self, inv_id: int, *, with_tests: bool = True) -> Invocation:
        with self._connect(write=False) as db:
            found = db.rows("SELECT * FROM invocations WHERE id = ?", (inv_id,))
            if not found:
                raise HistoryError(f"no invocation {inv_id} in {self.name}")
            [inv] = self._readable(found, _invocation, "invocations") or [None]
            if inv is None:
                raise HistoryError(f"{self.name}: {self.skipped[-1]}")
            if with_tests:
                inv.tests = self._tests(db, inv_id)
        return inv

    def _readable(self, rows: list[dict[str, Any]], read: Any, table: str) -> list[Any]:
        """``read(row)`` of each row; one that tamesu did not write (a NULL, text that is not JSON)
        is named in ``skipped`` instead of ending the command."""
        out = []
        for row in rows:
            try:
                out.append(read(row))
            except (TypeError, ValueError, KeyError) as exc:
                key = ", ".join(
                    f"{k}={row[k]!r}"[:80] for k in ("id", "invocation_id", "test_id", "run_id") if k in row
                )
                self.skipped.append(
                    f"skipped a row of {table} tamesu did not write ({key}): {type(exc).__name__}: {exc}"[
                        :300
                    ]
                )
        return out

    def _tests(self, db: Db, inv_id: int) -> list[TestRow]:
        rows = db.rows("SELECT * FROM tests WHERE invocation_id = ? ORDER BY seq", (inv_id,))
        tests = {(t.suite, t.test_id): t for t in self._readable(rows, _test, "tests")}
        query = "SELECT * FROM runs WHERE invocation_id = ? ORDER BY repeat_index, run_id"
        for row in db.rows(query, (inv_id,)):
            test = tests.get((row["suite"], row["test_id"]))
            if test is not None:
                test.run_rows.extend(self._readable([row], _run, "runs"))
        return list(tests.values())

    def verdicts(self, suite: str, test_id: str, *, limit: int) -> list[tuple[int, str, int, int]]:
        """(invocation id, verdict, passed, runs) of one test in its latest ``limit`` invocations."""
        with self._connect(write=False) as db:
            rows = db.rows(
                "SELECT t.invocation_id, t.verdict, t.passed, t.runs FROM tests t JOIN invocations i"
                " ON i.id = t.invocation_id WHERE t.suite = ? AND t.test_id = ?"
                " ORDER BY i.started_at DESC, i.id DESC LIMIT ?",
                (suite, test_id, limit),
            )
        return [(int(r["invocation_id"]), r["verdict"], int(r["passed"]), int(r["runs"])) for r in rows]


def _invocation(row: dict[str, Any]) -> Invocation:
    return Invocation(
        id=int(row["id"]),
        suites=[str(x) for x in json.loads(row["suites"])],
        started_at=float(row["started_at"]),
        duration=float(row["duration"]),
        exit_code=int(row["exit_code"]),
        counts=dict(json.loads(row["counts"])),
        run_dir=row["run_dir"],
        git_commit=row["git_commit"],
        git_branch=row["git_branch"],
        git_dirty=None if row["git_dirty"] is None else bool(row["git_dirty"]),
        argv=json.loads(row["argv"] or "[]"),
        tamesu_version=row["tamesu_version"],
        cost_usd=row["cost_usd"],
        tokens=row["tokens"],
        kind=row["kind"],
        summary=json.loads(row["summary"]) if row["summary"] else {},
    )


def _text(value: str | None) -> str | None:
    """Text as both databases can hold it: PostgreSQL takes no NUL, and UTF-8 no lone surrogate
    (a test named by an agent's case file may hold either); written as visible escapes."""
    if value is None:
        return None
    return storable_text(value).replace("\x00", "\\x00")


def _test(row: dict[str, Any]) -> TestRow:
    return TestRow(
        suite=str(row["suite"]),
        test_id=str(row["test_id"]),
        verdict=str(row["verdict"]),
        passed=int(row["passed"]),
        runs=int(row["runs"]),
        repeats=int(row["repeats"]),
        pass_threshold=float(row["pass_threshold"]),
        duration=float(row["duration"]),
        target=row["target"] or "",
        tags=list(json.loads(row["tags"])),
    )


def _run(row: dict[str, Any]) -> RunRow:
    return RunRow(
        run_id=str(row["run_id"]),
        repeat_index=int(row["repeat_index"]),
        outcome=str(row["outcome"]),
        duration=float(row["duration"]),
        metrics=dict(json.loads(row["metrics"])),
        attempt=int(row["attempt"]),
        error_kind=row["error_kind"],
    )
