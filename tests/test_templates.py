from __future__ import annotations

import re

import pytest

from tamesu.errors import TemplateError
from tamesu.templates import (
    Scope,
    env_name,
    expand_env,
    render,
    render_command,
    render_text,
    render_url,
    seed_faker,
    template_names,
)

pytestmark = pytest.mark.unit


def test_render_nested_and_keeps_type_of_whole_template() -> None:
    scope = Scope({"vars": {"days": "40"}, "session": "s-1", "args.n": 3})
    out = render({"a": ["{{vars.days}} days", {"b": "{{session}}"}], "n": "{{args.n}}", "k": 7}, scope)
    assert out == {"a": ["40 days", {"b": "s-1"}], "n": 3, "k": 7}


def test_unknown_name_is_an_error_with_suggestion() -> None:
    scope = Scope({"vars": {"days": "40"}})
    with pytest.raises(TemplateError, match=r"vars\.dayz.*did you mean \{\{vars\.days\}\}"):
        render("{{vars.dayz}}", scope)


def test_child_scope_overrides_parent_and_sees_parent() -> None:
    parent = Scope({"vars": {"a": "1", "b": "2"}})
    child = parent.child({"vars": {"b": "3"}, "message": "hi"})
    assert render_text("{{vars.a}}{{vars.b}} {{message}}", child) == "13 hi"
    assert not parent.has("message")


def test_dynamic_names_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAMESU_T", "x")
    scope = Scope()
    a, b = render_text("{{uuid}}", scope), render_text("{{uuid}}", scope)
    assert a != b and re.fullmatch(r"[0-9a-f-]{36}", a)
    assert re.match(r"\d{4}-\d\d-\d\dT", render_text("{{now}}", scope))
    assert render_text("{{env.TAMESU_T}}", scope) == "x"
    with pytest.raises(TemplateError, match="not set"):
        render_text("{{env.TAMESU_MISSING_VAR}}", scope)


def test_faker_is_seedable_and_rejects_unknown() -> None:
    scope = Scope()
    seed_faker(7)
    first = render_text("{{faker.email}}", scope)
    seed_faker(7)
    assert render_text("{{faker.email}}", scope) == first and "@" in first
    with pytest.raises(TemplateError, match="no generator"):
        render_text("{{faker.no_such_thing}}", scope)


def test_resolver_namespace_is_called_lazily() -> None:
    calls: list[str] = []

    def resolve(name: str) -> str:
        calls.append(name)
        return name.lower()

    scope = Scope(resolvers={"secrets": resolve})
    assert calls == []
    assert render_text("Bearer {{secrets.TOKEN}}", scope) == "Bearer token"
    assert calls == ["TOKEN"]


def test_no_code_execution() -> None:
    scope = Scope({"vars": {"a": "1"}})
    text = "{{ __import__('os').system('true') }} {{vars.a + 1}}"
    assert render_text(text, scope) == text  # not template names: left as written


def test_template_names() -> None:
    assert template_names({"x": ["{{vars.a}} {{ session.id }}"], "y": "{{message}}"}) == [
        "vars.a",
        "session.id",
        "message",
    ]


def test_expand_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_URL", "http://a")
    monkeypatch.delenv("NOPE_VAR", raising=False)
    assert expand_env("${AGENT_URL}/chat") == "http://a/chat"
    assert expand_env("${NOPE_VAR:-http://b}") == "http://b"
    with pytest.raises(TemplateError, match="NOPE_VAR"):
        expand_env("${NOPE_VAR}")


def test_env_name_is_the_namespace_and_name_in_upper_case() -> None:
    assert env_name("captured.order_id") == "TAMESU_CAPTURED_ORDER_ID"
    assert env_name("session.user-id") == "TAMESU_SESSION_USER_ID"
    assert env_name("args.customer.email") == "TAMESU_ARGS_CUSTOMER_EMAIL"


def test_render_command_splices_only_inert_agent_values_and_offers_all_in_the_env() -> None:
    scope = Scope({"vars": {"flag": "-v; ls"}, "captured": {"id": "ORD-7", "note": "a b"}, "session": "s-1"})
    line, env = render_command("check {{vars.flag}} {{captured.id}} {{session}}", scope)
    assert line == "check -v; ls ORD-7 s-1"  # the suite's own values are the suite's business
    assert env == {"TAMESU_CAPTURED_ID": "ORD-7", "TAMESU_CAPTURED_NOTE": "a b"}
    for value, why in [("a b", "shell syntax"), ("", "is empty"), ("LD_PRELOAD=x.so", "assignment")]:
        bad = Scope({"captured": {"id": value}})
        with pytest.raises(TemplateError, match=why):
            render_command("check {{captured.id}}", bad)


def test_render_url_encodes_agent_values_only() -> None:
    scope = Scope({"vars": {"base": "http://h/a?x=1"}, "captured": {"id": "1/2?3&4=5#6"}})
    assert render_url("{{vars.base}}&id={{captured.id}}", scope) == "http://h/a?x=1&id=1%2F2%3F3%264%3D5%236"
