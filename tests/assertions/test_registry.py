from __future__ import annotations

import inspect
import subprocess
import sys
import typing

import pytest

import tamesu.assertions as package
from tamesu.assertions import assertions
from tamesu.config.assertion import Assertion

pytestmark = pytest.mark.unit


def test_importing_the_package_loads_no_evaluator() -> None:
    code = (
        "import sys, tamesu.assertions\n"
        "heavy = [m for m in ('httpx', 'jsonschema', 'aiohttp', 'tamesu.assertions.state', 'tamesu.assertions.text')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_kind_is_a_suite_key_and_its_evaluator_a_typed_function_of_its_spec() -> None:
    builtin = assertions.entries(builtin=True)
    assert {e.name for e in builtin} <= set(Assertion.model_fields)
    for entry in builtin:
        if entry.evaluator is None:
            continue
        evaluator = assertions.evaluator(entry.name)
        assert list(inspect.signature(evaluator).parameters) == ["spec", "ctx"]
        hint = typing.get_type_hints(evaluator)["spec"]
        spec = (
            typing.get_args(entry.spec)[0]
            if typing.get_origin(entry.spec) is typing.Annotated
            else entry.spec
        )
        assert hint is spec, entry.name


def test_an_evaluator_bound_to_another_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="another spec"):
        package.assertion("contains", spec=int)(lambda spec, ctx: True)


def test_public_names() -> None:
    for name in package.__all__:
        assert hasattr(package, name)
    assert {"AssertionResult", "AssertionContext", "assertion", "custom_assertion", "evaluate"} <= set(
        package.__all__
    )
