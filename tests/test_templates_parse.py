"""Template strings are taken apart once and rendered exactly as a regular-expression pass would."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tamesu.errors import TemplateError
from tamesu.templates import Scope, render, render_str

pytestmark = pytest.mark.unit

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)\s*\}\}")


def reference(text: str, scope: Scope) -> Any:
    """The renderer as it was written first: one regular-expression pass per rendering."""
    if "{{" not in text:
        return text
    whole = _TEMPLATE.fullmatch(text.strip())
    if whole and text.strip() == text:
        return scope.lookup(whole.group(1))

    def sub(m: re.Match[str]) -> str:
        value = scope.lookup(m.group(1))
        if isinstance(value, (dict, list)):
            return json.dumps(value)
        return "" if value is None else str(value)

    return _TEMPLATE.sub(sub, text)


TEXTS = [
    "{{message}}",
    "{{ message }}",
    " {{message}} ",
    "hi {{message}}, session {{session}}!",
    "{{message}}{{session}}",
    "{{vars.n}}",
    "n={{vars.n}} obj={{vars.obj}} none={{vars.none}}",
    "{{ not a template }}",
    "{{",
    "}}{{message}}{{",
    "no templates at all",
]


@pytest.mark.parametrize("text", TEXTS)
def test_rendering_matches_a_regular_expression_pass(text: str) -> None:
    scope = Scope({"message": "hello", "session": "s-1", "vars": {"n": 7, "obj": {"a": [1]}, "none": None}})
    got, want = render_str(text, scope), reference(text, scope)
    assert got == want and type(got) is type(want)


def test_unknown_names_still_fail_and_nested_bodies_render() -> None:
    scope = Scope({"message": "hi"})
    with pytest.raises(TemplateError, match="not available"):
        render_str("x {{nope}}", scope)
    body = {"a": ["{{message}}", {"b": "<{{message}}>"}], "n": 1}
    assert render(body, scope) == {"a": ["hi", {"b": "<hi>"}], "n": 1}
