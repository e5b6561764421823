"""The models' Python-side rules that no JSON Schema keyword can state, as plain functions.

The generated validator (``tamesu.config._fastschema``) calls these where the models run the
matching pydantic validator, on the same plain values, so ``tamesu validate`` can decide a suite is
valid without importing pydantic's models. Each function answers exactly as its validator does:
True where the model accepts the value, False where it raises. They see values that the schema's
other keywords have already checked, except where noted.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from tamesu.durations import parse_duration

__all__ = ["date", "duration", "json_schema", "number", "ordered_range"]

_FLOAT_SAFE = 2**1023
"""Integers below this in magnitude always convert to a float; above it, ``number`` tries."""


def number(value: Any) -> bool:
    """A float field's input in strict mode: a float, or an int that converts to one (not a bool)."""
    kind = type(value)
    if kind is float:
        return True
    if kind is not int:
        return False
    if -_FLOAT_SAFE < value < _FLOAT_SAFE:
        return True
    try:
        float(value)
    except OverflowError:
        return False
    return True


def duration(value: Any) -> bool:
    """``Duration`` (common._duration): a number is read as its ``str``, then parse_duration decides
    (a unit required).

    Anything but a string or a number fails, as the strict ``str`` after the validator does.
    """
    kind = type(value)
    if kind is int or kind is float:
        value = str(value)
    elif kind is not str:
        return False
    try:
        parse_duration(value, unit_required=True)
    except ValueError:
        return False
    return True


def date(value: Any) -> bool:
    """``DateStr`` (common._date): a string must name a real day; the schema's pattern fixes the form."""
    if type(value) is not str:
        return True
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def ordered_range(value: Any) -> bool:
    """``Behaviors._ordered``: a [min, max] pair with 0 <= min <= max (the schema checks the pair)."""
    if type(value) is not list or len(value) != 2:
        return True
    return bool(0 <= value[0] <= value[1])


def json_schema(value: Any) -> bool:
    """``ToolCall._valid_schema``: a mapping that is itself a valid draft 2020-12 JSON Schema.

    jsonschema is imported only when a suite has such a schema, as the model does.
    """
    if type(value) is not dict:
        return True
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(value)
    except SchemaError:
        return False
    return True
