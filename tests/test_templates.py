from __future__ import annotations

import re

import pytest

from tamesu.errors import TemplateError
from tamesu.templates import Scope, expand_env, render, render_text, seed_faker, template_names

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
