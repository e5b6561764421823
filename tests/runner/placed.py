"""What the tests of the placements that run graphs in other processes (Ray, worker processes)
send there, and how they compare an outcome with the local placement's."""

from __future__ import annotations

from tamesu.kernel.outcome import GraphOutcome
from tamesu.run_spec import RunSpec
from tests.actors.agents import Check, check, make_spec


def specs() -> list[RunSpec]:
    """A story with captures and three kinds of checks, a greeter's tool call, an agent that fails."""
    return [
        make_spec(
            run_id="story#1",
            say=["hi", "where is my order", "so {{captured.order}} then", "bye"],
            capture=[{"name": "order", "regex": r"(ORD-\d+)"}, {"name": "eta", "json_path": "$.eta"}],
            checks=[
                ("contains", check({"contains": "ORD-1234"})),
                ("turns", check({"turns": {"lte": 3}})),
                ("last", Check("test-last-reply", "You said: bye", on_turn="last")),
            ],
        ),
        make_spec(run_id="greet#1", type="test-greeter", say=["hello", "tool please"], max_turns=1),
        make_spec(run_id="fail#1", type="test-failing", say=["hi", "fail"]),
    ]


def summary(out: GraphOutcome) -> tuple:
    """What must be the same wherever the run ran."""
    t = out.transcript
    return (
        [(turn.role, turn.text) for turn in t.turns],
        len(t.agent_turns()),
        t.end_reason,
        t.captures,
        [(r.name, r.passed, r.error, r.actual) for r in out.results],
        out.error,
        out.error_kind,
        out.retryable,
    )
