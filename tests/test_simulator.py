from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tamesu.config import Scenario, Suite
from tamesu.errors import ConfigError, ModelError
from tamesu.kernel.messages import FileRef, UserTurn
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.runner.plan import plan
from tamesu.spoken import says
from tamesu.templates import Scope
from tamesu.users.scripted_user import ScriptedUser
from tamesu.users.simulator import UserSimulator, make_simulator

pytestmark = pytest.mark.unit


def scenario(*steps: dict[str, Any], **keys: Any) -> Scenario:
    return Scenario.model_validate({"script": list(steps), **keys})


class Conversation:
    """A transcript the way the recorder fills it: each user turn, then the agent's answer."""

    def __init__(self) -> None:
        self.transcript = Transcript()

    def agent(self, text: str) -> None:
        n = len(self.transcript.agent_turns()) + 1
        self.transcript.turns.append(Turn(role="agent", text=text, index=n))

    def user(self, turn: UserTurn) -> None:
        n = len(self.transcript.user_turns()) + 1
        self.transcript.turns.append(
            Turn(role="user", text=turn.text, index=n, source=turn.source, data=turn.data)
        )

    async def step(self, user: ScriptedUser, reply: str | None = None) -> UserTurn | None:
        turn = await user.next_turn(self.transcript)
        if turn is not None:
            self.user(turn)
            if reply is not None:
                self.agent(reply)
        return turn


async def test_say_steps_render_vars_and_captured_values() -> None:
    scope = Scope({"vars": {"shop": "Mochi"}})
    user = ScriptedUser(
        scenario({"say": "Hi {{vars.shop}}"}, {"say": "Where is {{captured.order_id}}?"}), scope, max_turns=10
    )
    assert isinstance(user, UserSimulator)
    talk = Conversation()
    first = await talk.step(user, "Your order is ORD-1001")
    assert first is not None
    assert (first.text, first.source, first.reasoning, first.data, first.files) == (
        "Hi Mochi",
        "script",
        None,
        None,
        [],
    )
    talk.transcript.captures["order_id"] = "ORD-1001"
    second = await talk.step(user, "It ships today")
    assert second is not None and second.text == "Where is ORD-1001?"
    assert await talk.step(user) is None
    assert user.end_reason == "done" and user.script_done and not user.waiting


async def test_data_dtmf_and_files(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "invoice.pdf").write_bytes(b"%PDF-1.4")
    user = ScriptedUser(
        scenario(
            {
                "say": "See attached",
                "data": {"order": "{{vars.order}}", "n": 2},
                "files": [
                    "fixtures/invoice.pdf",
                    "https://cdn.example.com/img/photo.jpg",
                    {"uri": "s3://bucket/x", "name": "x.bin", "mime": "application/octet-stream"},
                ],
            },
            {"dtmf": "2#"},
        ),
        Scope({"vars": {"order": "ORD-7"}}),
        max_turns=5,
        suite_dir=tmp_path,
    )
    talk = Conversation()
    first = await talk.step(user, "ok")
    assert first is not None and first.data == {"order": "ORD-7", "n": 2}
    assert first.files == [
        FileRef(path=str(tmp_path / "fixtures" / "invoice.pdf"), name="invoice.pdf", mime="application/pdf"),
        FileRef(uri="https://cdn.example.com/img/photo.jpg", name="photo.jpg", mime="image/jpeg"),
        FileRef(uri="s3://bucket/x", name="x.bin", mime="application/octet-stream"),
    ]
    second = await talk.step(user, "billing")
    assert second is not None and (second.text, second.data) == ("", {"dtmf": "2#"})


async def test_missing_script_file_is_a_config_error(tmp_path: Path) -> None:
    user = ScriptedUser(scenario({"files": ["nope.pdf"]}), Scope(), suite_dir=tmp_path)
    with pytest.raises(ConfigError) as info:
        await user.next_turn(Transcript())
    assert info.value.file == str(tmp_path / "nope.pdf")


async def test_wait_for_sends_nothing_until_the_agent_says_it() -> None:
    user = ScriptedUser(
        scenario(
            {"say": "billing please"}, {"wait_for": "Press 2 for billing"}, {"dtmf": "2"}, {"say": "thanks"}
        ),
        Scope(),
        max_turns=10,
    )
    talk = Conversation()
    await talk.step(user, "Hello! Press 1 for sales.")
    assert await talk.step(user) is None
    assert (user.end_reason, user.waiting) == ("wait_for_unmet", True)
    # a voice agent keeps talking: the wait is met by a later agent turn
    talk.agent("...and PRESS 2, for billing!")
    turn = await talk.step(user, "Billing here")
    assert turn is not None and turn.data == {"dtmf": "2"}
    assert (user.end_reason, user.waiting) == (None, False)
    turn = await talk.step(user, "bye")
    assert turn is not None and turn.text == "thanks"


async def test_wait_for_first_with_an_agent_that_speaks_first() -> None:
    user = ScriptedUser(scenario({"wait_for": "how can I help"}, {"say": "Refund please"}), Scope())
    talk = Conversation()
    talk.agent("Welcome to Mochi, how can I help you?")
    turn = await talk.step(user)
    assert turn is not None and turn.text == "Refund please"


async def test_wait_for_ignores_agent_turns_before_the_last_user_turn() -> None:
    user = ScriptedUser(scenario({"say": "hi"}, {"wait_for": "anything else"}, {"say": "no"}), Scope())
    talk = Conversation()
    talk.agent("Anything else before we start?")
    await talk.step(user, "Sure, what do you need?")
    assert await talk.step(user) is None and user.end_reason == "wait_for_unmet"


async def test_consecutive_waits_need_separate_agent_turns() -> None:
    user = ScriptedUser(scenario({"wait_for": "menu"}, {"wait_for": "menu"}, {"say": "2"}), Scope())
    talk = Conversation()
    talk.agent("Here is the menu")
    assert await talk.step(user) is None and user.end_reason == "wait_for_unmet"
    talk.agent("Once more, the menu")
    turn = await talk.step(user)
    assert turn is not None and turn.text == "2"


async def test_max_turns_stops_the_user() -> None:
    user = ScriptedUser(scenario({"say": "a"}, {"say": "b"}, {"say": "c"}), Scope(), max_turns=2)
    talk = Conversation()
    assert [await talk.step(user, "ok") for _ in range(2)] != [None, None]
    assert await talk.step(user) is None and user.end_reason == "max_turns"


async def test_the_agent_ending_the_session_stops_the_user() -> None:
    user = ScriptedUser(scenario({"say": "a"}, {"say": "b"}), Scope())
    talk = Conversation()
    await talk.step(user, "Goodbye")
    talk.transcript.end_reason = "agent"
    assert await talk.step(user) is None and user.end_reason == "agent"


async def test_no_scenario_means_nothing_to_say() -> None:
    user = ScriptedUser(None, Scope())
    assert await user.next_turn(Transcript()) is None and user.end_reason == "done"


@pytest.mark.parametrize(
    ("heard", "wanted", "ok"),
    [
        ("Press 2, for BILLING.", "press 2 for billing", True),
        ("press   2\nfor billing", "Press 2 for billing!", True),
        ("please enter your order number, followed by the pound, key", "pound key", True),
        ("Returns are accepted within thirty days.", "30 days", True),
        ("press two for billing", "press 2 for billing", True),
        ("for order one zero zero one", "order 1001", True),
        ("order 1,001 has shipped", "order one thousand and one", True),
        ("press 1, 2 or 3", "press 1", True),
        ("Your refund of forty nine dollars is on its way", "refund of $49", True),
        ("I can offer you a 20% discount", "twenty percent discount", True),
        ("For billing, you press 2", "press 2 for billing", False),  # every word, another order
        ("press two for billing", "press 2 for billing now", False),  # a word missing
        ("please enter your order follow my pound key", "order number", False),
        ("press 24 for billing", "press 2", False),
        ("anything", "", True),
        ("", "hello", False),
    ],
)
def test_wait_for_hears_what_a_person_would_and_nothing_fuzzier(heard: str, wanted: str, ok: bool) -> None:
    assert says(heard, wanted) is ok


@pytest.mark.parametrize(
    ("heard", "wanted", "language"),
    [
        ("Su pedido llegará en treinta días.", "30 dias", "es-ES"),
        ("Ihre Bestellung kommt in dreißig Tagen an.", "in 30 Tagen", "de"),
        ("Votre commande arrivera dans trente jours.", "trente jours", "fr"),
    ],
)
def test_numbers_are_read_in_the_runs_language(heard: str, wanted: str, language: str) -> None:
    assert says(heard, wanted, language=language)


async def test_a_wait_for_in_spanish_matches_the_agents_digits() -> None:
    user = ScriptedUser(
        scenario({"wait_for": "pulse dos para facturación"}, {"dtmf": "2"}), Scope(), language="es"
    )
    talk = Conversation()
    talk.agent("Pulse 2 para facturacion.")
    turn = await talk.step(user)
    assert turn is not None and turn.data == {"dtmf": "2"}


def _spec(scenario: dict[str, Any] | None, models: dict[str, Any] | None = None) -> Any:
    test: dict[str, Any] = {"name": "t", "target": "api"}
    if scenario is not None:
        test["scenario"] = scenario
    data = {"suite": "s", "targets": {"api": {"type": "rest", "url": "http://127.0.0.1:9/"}}, "tests": [test]}
    if models:
        data["models"] = models
    loaded = type(
        "L",
        (),
        {
            "suite": Suite.model_validate(data),
            "path": Path("s.yaml"),
            "dir": Path("."),
            "project": None,
            "project_dir": None,
        },
    )()
    return plan(loaded)[0]


def test_make_simulator_scripted_without_goal() -> None:
    sim = make_simulator(_spec({"script": [{"say": "hi"}], "max_turns": 3}), Scope())
    assert isinstance(sim, ScriptedUser) and sim.max_turns == 3
    assert isinstance(make_simulator(_spec(None), Scope()), ScriptedUser)


def test_make_simulator_with_a_goal_needs_a_model() -> None:
    spec = _spec({"goal": "Ask about returns"})
    with pytest.raises(
        ModelError, match=r"scenario.goal needs a model to play the user: set models.simulator"
    ):
        make_simulator(spec, Scope())


def test_make_simulator_hands_goals_to_the_model_user() -> None:
    from types import SimpleNamespace

    from tamesu.models import ModelRouter
    from tamesu.users.model_user import ModelUser

    spec = _spec({"goal": "Ask about returns"})
    router = ModelRouter(
        SimpleNamespace(default=None, simulator="openai/gpt-4.1-mini", fallback=None, retry=None)
    )
    user = make_simulator(spec, Scope(), router=router)
    assert isinstance(user, ModelUser) and user.router is router
