from __future__ import annotations

import asyncio
import dataclasses
import pickle
from collections.abc import AsyncIterator

import pytest

from tamesu.actors.graph import RunGraph, run_graph
from tamesu.actors.services import RunServices
from tamesu.config.suite import Counterpart, Scenario
from tamesu.config.target_base import TalkingTarget
from tamesu.kernel.events import CaptureSkipped, IncompleteTurn
from tamesu.kernel.outcome import GraphOutcome
from tamesu.kernel.transcript import turn_view
from tamesu.runner.grading import GradedRun, run_and_grade
from tamesu.runner.placement import make_placement
from tamesu.runner.placement.local import LocalPlacement

from .agents import BuggyAdapter, Check, HangingAdapter, check, make_spec, register

pytestmark = [pytest.mark.unit, pytest.mark.timing]

register()


@pytest.fixture
async def services() -> AsyncIterator[RunServices]:
    svc = RunServices.create()
    yield svc
    await svc.aclose()


def texts(outcome: GraphOutcome) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in outcome.transcript.turns]


async def test_a_scripted_user_talks_until_the_script_is_done(services: RunServices) -> None:
    spec = make_spec(
        say=["hi", "where is my order", "so {{captured.order}} arrives in {{captured.eta}}?", "tool time"],
        capture=[
            {"name": "order", "regex": r"order is (ORD-\d+)"},
            {"name": "eta", "json_path": "$.eta"},
            {"name": "mood", "extract": "how the agent feels"},
        ],
    )
    out = await run_and_grade(spec, services, encode_boundary=True)
    assert out.error is None
    t = out.transcript
    assert t.end_reason == "done"
    assert texts(out) == [
        ("user", "hi"),
        ("agent", "You said: hi"),
        ("user", "where is my order"),
        ("agent", "You said: where is my order. Your order is ORD-1234"),
        ("user", "so ORD-1234 arrives in 3 days?"),
        ("agent", "You said: so ORD-1234 arrives in 3 days?"),
        ("user", "tool time"),
        ("agent", "You said: tool time"),
    ]
    assert [turn.index for turn in t.turns] == [1, 1, 2, 2, 3, 3, 4, 4]
    assert t.captures == {"order": "ORD-1234", "eta": "3 days"}
    assert [e.name for e in t.events if isinstance(e, CaptureSkipped)] == ["mood"]
    last = t.agent_turns()[-1]
    assert [(c.name, c.args, c.result) for c in last.tool_calls] == [
        ("lookup", {"q": "tool time"}, {"found": True})
    ]
    assert last.status == 200 and last.raw[0]["reply"] == "You said: tool time"
    for turn in t.agent_turns():
        assert turn.sent_at is not None and turn.first_byte_at is not None and turn.end_at is not None
        assert turn.sent_at <= turn.first_byte_at <= turn.end_at
    assert t.session and last.raw[0]["session"] == t.session
    assert t.run_id == "greeting#1" and t.target == "agent"
    assert t.duration >= last.end_at
    assert t.metrics


async def test_a_wait_for_listens_while_the_agent_reads_its_menu_out_in_parts(services: RunServices) -> None:
    """The wanted words straddle two agent turns: the user hears the agent out without speaking
    (no user turn) until they are said, then goes on with the script."""
    spec = make_spec(type="test-menu", script=[{"wait_for": "for billing press 2"}, {"say": "two"}])
    out = await run_graph(spec, services)
    assert out.error is None
    assert texts(out) == [
        ("agent", "Welcome to the shop. For billing,"),
        ("agent", "press 2. For sales, press 3."),
        ("user", "two"),
        ("agent", "You said: two"),
    ]
    assert out.transcript.end_reason == "done"


async def test_a_wait_for_the_agent_never_says_ends_when_the_agent_falls_silent(
    services: RunServices,
) -> None:
    spec = make_spec(type="test-menu", script=[{"wait_for": "press 9"}, {"say": "nine"}])
    out = await run_graph(spec, services)
    assert out.error is None
    assert [role for role, _ in texts(out)] == ["agent", "agent", "agent"]
    assert texts(out)[-1] == ("agent", "")
    assert out.transcript.end_reason == "wait_for_unmet"


async def test_a_wait_for_on_a_target_that_cannot_listen_ends_at_once(services: RunServices) -> None:
    spec = make_spec(type="test-greeter", script=[{"wait_for": "press 2"}, {"say": "two"}])
    out = await run_graph(spec, services)
    assert texts(out) == [("agent", "Welcome to the shop")]
    assert out.transcript.end_reason == "wait_for_unmet"


async def test_a_finished_run_is_freed_without_the_cycle_collector(services: RunServices) -> None:
    import gc
    import weakref

    run = GradedRun(make_spec(say=["hi", "where is my order"]), services)
    out = await run.run()
    assert out.error is None and len(out.transcript.turns) == 4
    graph = run.graph
    refs = [weakref.ref(run), weakref.ref(graph), weakref.ref(graph.recorder), weakref.ref(graph.scope)]
    gc.disable()
    try:
        del run, graph
        assert [ref() for ref in refs] == [None] * 4, "no reference cycle keeps a run alive"
    finally:
        gc.enable()


async def test_a_secret_the_agent_echoes_is_redacted_in_the_final_outcome(services: RunServices) -> None:
    services.redactor.add("sk-live-0123456789")
    out = await run_graph(make_spec(say=["my key is sk-live-0123456789", "thanks"]), services)
    assert out.error is None
    dumped = out.transcript.to_json().decode()
    assert "sk-live-0123456789" not in dumped and "my key is ***" in dumped
    clean = await run_graph(make_spec(say=["hello"]), services)
    assert [t.text for t in clean.transcript.turns] == ["hello", "You said: hello"]


async def test_the_agent_ending_the_session_stops_the_script(services: RunServices) -> None:
    out = await run_graph(make_spec(say=["hi", "bye now", "are you there?"]), services)
    assert out.transcript.end_reason == "agent"
    assert [t.text for t in out.transcript.user_turns()] == ["hi", "bye now"]


async def test_max_turns_bounds_the_user_turns(services: RunServices) -> None:
    out = await run_graph(make_spec(say=["one", "two", "three", "four"], max_turns=2), services)
    assert out.transcript.end_reason == "max_turns"
    assert len(out.transcript.user_turns()) == 2
    assert len(out.transcript.agent_turns()) == 2


async def test_an_agent_that_speaks_first_is_heard_before_the_user(services: RunServices) -> None:
    out = await run_graph(make_spec(type="test-greeter", say=["hi"]), services)
    assert texts(out) == [("agent", "Welcome to the shop"), ("user", "hi"), ("agent", "You said: hi")]
    assert out.transcript.turns[0].sent_at is not None


async def test_a_handoff_the_adapter_reports_is_recorded_with_its_turn(services: RunServices) -> None:
    out = await run_graph(make_spec(say=["hi", "a human please", "human again"]), services)
    handoff = out.transcript.handoff
    assert handoff is not None
    assert (handoff.turn, handoff.to, handoff.summary) == (2, "billing", "a human please")


async def test_the_targets_handoff_signal_is_applied_when_the_adapter_reports_none(
    services: RunServices,
) -> None:
    spec = make_spec(say=["hi", "use the tool"], handoff={"tool": "lookup", "to": "q"})
    out = await run_graph(spec, services)
    handoff = out.transcript.handoff
    assert handoff is not None and (handoff.turn, handoff.to) == (2, "use the tool")


async def test_the_session_id_renders_its_template(services: RunServices) -> None:
    spec = make_spec(session_id="chat-{{vars.shop}}-1", vars={"shop": "mochi"})
    out = await run_graph(spec, services)
    assert out.transcript.session == "chat-mochi-1"
    assert out.transcript.agent_turns()[0].raw[0]["session"] == "chat-mochi-1"


async def test_the_session_made_by_the_scheduler_wins(services: RunServices) -> None:
    spec = make_spec(session_id="chat-{{uuid}}").evolve(session="made-for-hooks")
    out = await run_graph(spec, services)
    assert out.transcript.session == "made-for-hooks"


async def test_a_counterpart_agent_plays_the_user(services: RunServices) -> None:
    spec = make_spec(type="test-echo", run_id="duet#1")
    spec.test = spec.test.model_copy(
        update={
            "counterpart": Counterpart(target="supplier", opening="We offer 500 units"),
            "scenario": Scenario(goal="Agree on a price", max_turns=2),
        }
    )
    spec.counterpart_target = TalkingTarget.model_construct(type="test-echo")
    out = await run_graph(spec, services)
    assert out.error is None
    assert texts(out) == [
        ("user", "We offer 500 units"),
        ("agent", "You said: We offer 500 units"),
        ("user", "You said: You said: We offer 500 units"),
        ("agent", "You said: You said: You said: We offer 500 units"),
    ]
    assert {t.source for t in out.transcript.user_turns()} == {"counterpart"}
    assert out.transcript.end_reason == "max_turns"


def test_services_share_one_router_per_models_configuration() -> None:
    from tamesu.config import Models

    svc = RunServices(http=None)  # type: ignore[arg-type]
    a = svc.router_for(Models(default="openai/gpt-4.1-mini"))
    assert a is svc.router_for(Models(default="openai/gpt-4.1-mini"))
    assert a is not svc.router_for(Models(default="openai/gpt-4.1"))
    assert svc.router_for(None) is None
    shared = RunServices(http=None, models=a)  # type: ignore[arg-type]
    assert shared.router_for(Models(default="openai/gpt-4.1")) is a


def test_the_runs_of_one_models_object_ask_the_router_factory_once() -> None:
    from tamesu.config import Models

    asked: list[object] = []

    def factory(models: object) -> object:
        asked.append(models)
        return f"router {len(asked)}"

    svc = RunServices(http=None, router_factory=factory)  # type: ignore[arg-type]
    planned = Models(default="openai/gpt-4.1-mini")
    assert [svc.router_for(planned) for _ in range(3)] == ["router 1"] * 3
    assert svc.router_for(Models(default="openai/gpt-4.1-mini")) == "router 2"
    assert asked == [planned, planned]


async def test_assertions_grade_the_run_and_on_turn_narrows_them(services: RunServices) -> None:
    spec = make_spec(
        say=["hi", "my order please"],
        checks=[
            ("contains", check({"contains": "ORD-1234"})),
            ("contains#2", check({"contains": "refund"})),
            ("first", Check("test-last-reply", "You said: hi", on_turn=1)),
            ("last", Check("test-last-reply", "You said: hi", on_turn="last")),
            ("missing", Check("test-last-reply", "x", on_turn=5)),
        ],
    )
    out = await run_and_grade(spec, services)
    by_name = {r.name: r for r in out.results}
    assert list(by_name) == ["contains", "contains#2", "first", "last", "missing"]
    assert by_name["contains"].passed and not by_name["contains#2"].passed
    assert not by_name["contains#2"].error
    assert by_name["first"].passed and by_name["first"].on_turn == 1
    assert (
        not by_name["last"].passed
        and by_name["last"].actual == "You said: my order please. Your order is ORD-1234"
    )
    assert not by_name["missing"].passed and "2 agent turn" in by_name["missing"].message
    assert out.transcript.metrics
    ungraded = await run_graph(spec, services)
    assert ungraded.error is None and ungraded.results == [] and ungraded.transcript.metrics == {}


def test_turn_view_keeps_one_agent_turn_and_the_user_turn_before_it() -> None:
    from tamesu.kernel.transcript import Transcript, Turn

    t = Transcript(
        turns=[
            Turn(role="agent", text="welcome", index=1),
            Turn(role="user", text="hi", index=1),
            Turn(role="agent", text="hello", index=2),
        ]
    )
    assert [x.text for x in turn_view(t, 1).turns] == ["welcome"]  # type: ignore[union-attr]
    assert [x.text for x in turn_view(t, "last").turns] == ["hi", "hello"]  # type: ignore[union-attr]
    assert turn_view(t, 3) is None
    assert len(t.turns) == 3


async def test_a_target_error_ends_the_run_as_a_redacted_infrastructure_error(services: RunServices) -> None:
    spec = make_spec(
        type="test-failing", say=["hi", "now fail", "never sent"], checks=[("c", check({"contains": "hi"}))]
    )
    out = await run_and_grade(spec, services, secrets={"AGENT_TOKEN": "tok-9f8e7d6c"})
    assert out.error == "503 from agent (Authorization: Bearer ***)"
    assert (out.error_kind, out.retryable) == ("agent", True)
    assert out.results == []
    assert out.transcript.end_reason == "error"
    assert texts(out) == [("user", "hi"), ("agent", "You said: hi"), ("user", "now fail")]
    assert "tok-9f8e7d6c" not in out.transcript.to_json().decode()


async def test_secret_refs_resolve_in_process_and_are_redacted(
    services: RunServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAMESU_TEST_AGENT_TOKEN", "envtoken-123456")
    spec = make_spec(
        type="test-failing",
        say=["envtoken-123456", "fail"],
        secrets={"AGENT_TOKEN": "env:TAMESU_TEST_AGENT_TOKEN"},
    )
    out = await run_graph(spec, services)
    assert out.error == "503 from agent (Authorization: Bearer ***)"
    assert out.transcript.turns[0].text == "***"


async def test_an_adapter_bug_becomes_an_error_outcome_and_the_adapter_is_stopped(
    services: RunServices,
) -> None:
    spec = make_spec(type="test-buggy", run_id="buggy#1")
    out = await run_graph(spec, services)
    assert out.error == "ValueError: cannot parse the greeting"
    assert (out.error_kind, out.retryable) == ("internal", False)
    assert "buggy#1" in BuggyAdapter.stopped


async def test_an_unknown_target_type_is_a_config_error(services: RunServices) -> None:
    out = await run_graph(make_spec(type="test-nowhere"), services)
    assert out.error_kind == "config" and "test-nowhere" in (out.error or "")
    assert out.retryable is False


async def test_a_goal_without_a_model_is_a_model_error(services: RunServices) -> None:
    spec = make_spec()
    spec.test = spec.test.model_copy(update={"scenario": Scenario(goal="Ask about returns")})
    out = await run_graph(spec, services)
    assert out.error_kind == "model" and "model" in (out.error or "")


async def test_a_hanging_agent_times_out_with_its_partial_transcript(services: RunServices) -> None:
    spec = make_spec(type="test-hanging", say=["hi", "and then?"], run_id="hang-timeout")
    out = await run_graph(spec, services, timeout=0.2)
    adapter = HangingAdapter.live["hang-timeout"]
    assert adapter.stopped
    assert (out.error_kind, out.retryable) == ("timeout", True)
    assert "200ms" in (out.error or "")
    t = out.transcript
    assert t.end_reason == "timeout"
    assert texts(out) == [
        ("user", "hi"),
        ("agent", "You said: hi"),
        ("user", "and then?"),
        ("agent", "Let me check that for y"),
    ]
    cut = t.agent_turns()[-1]
    assert cut.end_at is None and cut.sent_at == t.user_turns()[-1].sent_at
    assert cut.first_byte_at is not None and cut.first_byte_at >= cut.sent_at
    assert any(isinstance(e, IncompleteTurn) for e in t.events)


async def test_a_cancelled_run_stops_the_adapter_and_hands_the_partial_outcome_to_the_sink(
    services: RunServices,
) -> None:
    spec = make_spec(type="test-hanging", say=["hi", "and then?"], run_id="hang-cancel")
    received: list[GraphOutcome] = []
    task = asyncio.create_task(run_and_grade(spec, services, sink=received.append))
    while "hang-cancel" not in HangingAdapter.live:
        await asyncio.sleep(0)
    await asyncio.wait_for(HangingAdapter.live["hang-cancel"].hanging.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert HangingAdapter.live["hang-cancel"].stopped
    [partial] = received
    assert partial.error_kind == "cancelled"
    assert [t.text for t in partial.transcript.user_turns()] == ["hi", "and then?"]


async def test_outcome_is_readable_mid_run(services: RunServices) -> None:
    spec = make_spec(type="test-hanging", say=["hi", "more"], run_id="hang-peek")
    graph = RunGraph(spec, services)
    task = asyncio.create_task(graph.run())
    while "hang-peek" not in HangingAdapter.live:
        await asyncio.sleep(0)
    await asyncio.wait_for(HangingAdapter.live["hang-peek"].hanging.wait(), 5)
    peek = graph.outcome()
    assert [t.text for t in peek.transcript.agent_turns()] == ["You said: hi"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_local_placement_gives_the_same_outcome_with_or_without_encoding(
    services: RunServices,
) -> None:
    spec = make_spec(say=["hi", "my order", "bye"], capture=[{"name": "order", "regex": r"(ORD-\d+)"}])
    plain = await LocalPlacement(services).run(spec)
    encoded_placement = LocalPlacement(services, encode_boundary=True)
    encoded = await encoded_placement.run(spec)
    assert texts(plain) == texts(encoded)
    assert plain.transcript.captures == encoded.transcript.captures == {"order": "ORD-1234"}
    assert encoded_placement.active == {}


async def test_make_placement_local_owns_the_services_it_makes() -> None:
    placement = make_placement("local", encode_boundary=True)
    assert isinstance(placement, LocalPlacement)
    out = await placement.run(make_spec(say=["hi"]))
    assert texts(out) == [("user", "hi"), ("agent", "You said: hi")]
    await placement.aclose()
    assert placement.services.http.is_closed


def test_a_run_spec_survives_pickling() -> None:
    spec = make_spec(
        say=["hi"],
        capture=[{"name": "order", "regex": r"(ORD-\d+)"}],
        checks=[("contains", check({"contains": "hi", "on_turn": "last"}))],
    )
    back = pickle.loads(pickle.dumps(spec))
    assert dataclasses.asdict(back) == dataclasses.asdict(spec)
    assert back.assertions[0].item.kind == "contains" and back.assertions[0].item.on_turn == "last"


def test_an_outcome_survives_pickling() -> None:
    from tamesu.kernel.outcome import AssertionResult
    from tamesu.kernel.transcript import Transcript, Turn

    out = GraphOutcome(
        transcript=Transcript(turns=[Turn(role="agent", text="x", raw=[{"a": 1}])]),
        results=[AssertionResult(name="c", kind="contains", passed=True)],
        error=None,
    )
    assert pickle.loads(pickle.dumps(out)) == out


async def test_a_run_worker_runs_and_cancels_graphs_without_ray() -> None:
    pytest.importorskip("ray")
    from tamesu.runner.placement.ray import RunWorker

    worker = RunWorker(setup=register, encode_boundary=True)
    done = await worker.run(make_spec(say=["hi"]), None, None, "k1")
    assert texts(done) == [("user", "hi"), ("agent", "You said: hi")]
    spec = make_spec(type="test-hanging", say=["hi", "more"], run_id="worker-cancel")
    running = asyncio.create_task(worker.run(spec, {"AGENT_TOKEN": "abcd-1234"}, None, "k2"))
    while "worker-cancel" not in HangingAdapter.live:
        await asyncio.sleep(0)
    await asyncio.wait_for(HangingAdapter.live["worker-cancel"].hanging.wait(), 5)
    assert worker.active() == 1
    partial = await worker.cancel("k2")
    assert partial is not None and partial.error_kind == "cancelled"
    assert [t.text for t in partial.transcript.user_turns()] == ["hi", "more"]
    assert HangingAdapter.live["worker-cancel"].stopped
    with pytest.raises(asyncio.CancelledError):
        await running
    assert worker.active() == 0 and await worker.cancel("k2") is None
    await worker.aclose()
