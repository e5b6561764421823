"""pydantic's ValidationError turned into ConfigErrors a person can act on.

pydantic reports where it was inside its own schema (union members, validator wrappers, tagged
union tags); users need where they are in their file. We walk each error's ``loc`` against the
data that was validated, so whatever is not a real key or index falls away by itself, keep only
the most relevant member of each union, and write the message in plain words with a hint.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Iterable
from typing import Any, Union

from tamesu.config.yamlload import KeyPath, YamlDoc, format_path
from tamesu.errors import ConfigError

__all__ = ["accepted_keys", "did_you_mean", "model_at", "validation_errors"]

_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "none_required": "nothing (null)",
}
_BOUNDS = {
    "greater_than": "greater than {gt}",
    "greater_than_equal": "at least {ge}",
    "less_than": "less than {lt}",
    "less_than_equal": "at most {le}",
    "multiple_of": "a multiple of {multiple_of}",
}


def validation_errors(exc: Any, doc: YamlDoc, model: type | None = None) -> list[ConfigError]:
    """Every error of a pydantic ``ValidationError`` on ``doc.data`` as located ConfigErrors, sorted."""
    raw = [_Raw(e, doc.data) for e in exc.errors(include_url=False)]
    out: dict[tuple[Any, ...], ConfigError] = {}
    for item in _select(raw):
        err = _to_config_error(item, doc, model)
        out.setdefault((err.line, err.column, err.path, err.message), err)
    return sorted(out.values(), key=lambda e: (e.line or 0, e.column or 0, e.path))


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``did you mean 'contains'?`` for a close option, else an empty string."""
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


class _Raw:
    """One pydantic error with its loc split into the data path and pydantic's internal parts."""

    def __init__(self, err: dict[str, Any], data: Any) -> None:
        self.type: str = err["type"]
        self.msg: str = err["msg"]
        self.ctx: dict[str, Any] = err.get("ctx") or {}
        self.input: Any = err.get("input")
        self.loc: tuple[Any, ...] = tuple(err["loc"])
        self.internal: list[int] = []
        self.missing: str | None = None
        self.path: KeyPath = ()
        self.value: Any = data
        self._walk(data)

    def _walk(self, data: Any) -> None:
        cur: Any = data
        path: list[str | int] = []
        last = len(self.loc) - 1
        for i, part in enumerate(self.loc):
            if isinstance(cur, dict) and isinstance(part, str) and part in cur and part != "[key]":
                path.append(part)
                cur = cur[part]
            elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
                path.append(part)
                cur = cur[part]
            elif i == last and self.type == "missing" and isinstance(part, str):
                self.missing = part
            else:
                self.internal.append(i)
        self.path, self.value = tuple(path), cur

    def strip_first_internal(self) -> None:
        if self.internal:
            del self.internal[0]

    @property
    def union_point(self) -> tuple[Any, ...] | None:
        """The raw loc before the first internal part: where pydantic branched into members."""
        return self.loc[: self.internal[0]] if self.internal else None

    @property
    def member(self) -> Any:
        return self.loc[self.internal[0]]

    @property
    def mismatch_at_union(self) -> bool:
        """A wrong kind of value at the union point itself: the member does not fit at all."""
        return self.type in _TYPE_WORDS and len(self.path) == self.internal[0]


def _select(errors: list[_Raw]) -> list[_Raw]:
    """At each union point keep the errors of the one member that fits the data best."""
    plain = [e for e in errors if not e.internal]
    groups: dict[tuple[Any, ...], list[_Raw]] = {}
    for e in errors:
        if e.internal:
            groups.setdefault(e.union_point or (), []).append(e)
    for group in groups.values():
        members: dict[Any, list[_Raw]] = {}
        for e in group:
            members.setdefault(e.member, []).append(e)
        chosen = _best_member(list(members.values()))
        for e in chosen:
            e.strip_first_internal()
        plain.extend(_select(chosen))
    return plain


def _best_member(members: list[list[_Raw]]) -> list[_Raw]:
    if len(members) == 1:
        return members[0]
    fitting = [m for m in members if not (len(m) == 1 and m[0].mismatch_at_union)]
    if not fitting:
        return [_merged_mismatch(members)]

    def score(m: list[_Raw]) -> tuple[int, int]:
        return (len(m), -max(len(e.path) for e in m))

    return min(fitting, key=score)


def _merged_mismatch(members: list[list[_Raw]]) -> _Raw:
    """``judge: 5`` against str | Judge: one error that lists every accepted form."""
    first = members[0][0]
    words: list[str] = []
    for m in members:
        w = _TYPE_WORDS.get(m[0].type, "")
        if w and w not in words:
            words.append(w)
    first.type = "union_mismatch"
    first.ctx = {"expected": " or ".join(words) or "another kind of value"}
    first.internal = []
    return first


def _got(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _choices(expected: str) -> list[str]:
    return re.findall(r"'([^']*)'", expected) or [expected]


def _to_config_error(e: _Raw, doc: YamlDoc, model: type | None) -> ConfigError:
    pos = doc.positions
    path: KeyPath = e.path
    hint = ""
    line_col = pos.value(path)
    t = e.type
    if t == "missing":
        message = f"required key '{e.missing}' is missing"
        path = (*e.path, e.missing) if e.missing else e.path
    elif t == "extra_forbidden":
        key = path[-1] if path else "?"
        message = f"unknown key '{key}'"
        line_col = pos.key(path)
        keys = accepted_keys(model, path[:-1], doc.data) if model else []
        hint = did_you_mean(str(key), keys) or (
            f"accepted keys: {', '.join(keys)}" if 0 < len(keys) <= 12 else ""
        )
    elif t in ("literal_error", "enum"):
        options = _choices(str(e.ctx.get("expected", "")))
        message = f"expected one of {', '.join(options)}, got {_got(e.input)}"
        hint = did_you_mean(str(e.input), options)
    elif t in ("union_tag_invalid", "union_tag_not_found"):
        options = _choices(str(e.ctx.get("expected_tags", "")))
        field = str(e.ctx.get("discriminator", "type")).strip("'")
        if t == "union_tag_not_found":
            message = f"required key '{field}' is missing (one of {', '.join(options)})"
            path = (*path, field)
        else:
            message = f"expected one of {', '.join(options)}, got {_got(e.ctx.get('tag'))}"
            path = (*path, field)
            line_col = pos.value(path)
            hint = did_you_mean(str(e.ctx.get("tag")), options)
    elif t == "duration":
        message = f"expected a duration such as 30s, 3m or 1h30m, got {_got(e.input)}"
        bare = str(e.input).strip() if isinstance(e.input, (str, int, float)) else ""
        if "needs a unit" in str(e.ctx.get("error", "")) and bare:
            hint = f"a duration needs a unit: write {bare}s, {bare}m or {bare}ms"
    elif t == "date":
        message = f"expected a real date written YYYY-MM-DD, got {_got(e.input)}"
    elif t == "union_mismatch":
        message = f"expected {e.ctx['expected']}, got {_got(e.input)}"
    elif t in _TYPE_WORDS:
        expected = _TYPE_WORDS[t]
        if t in ("model_type", "dict_type", "model_attributes_type") and model is not None:
            at = model_at(model, path, doc.data)
            expected = _short_forms(at) + expected
            hint = _as_mapping_hint(at, path, e.input)
        message = f"expected {expected}, got {_got(e.input)}"
        if t == "string_type" and isinstance(e.input, (int, float)):
            hint = f'quote it: "{e.input}"'
        if "[key]" in e.loc:
            message = f"keys here must be strings, got {_got(e.input)}"
    elif t in _BOUNDS:
        message = f"must be {_BOUNDS[t].format(**e.ctx)}, got {_got(e.input)}"
    elif t == "string_pattern_mismatch":
        message = f"{_got(e.input)} does not have the expected form ({e.ctx.get('pattern', '')})"
    elif t in ("string_too_short", "too_short") and e.ctx.get("min_length") == 1:
        message = "must not be empty"
    elif t == "more_than_one_of" and len(str(e.ctx.get("names", "")).split(",")) > 6:
        message = f"{e.ctx.get('what', 'this')} takes exactly one kind, found {e.ctx.get('found', '')}"
        hint = "write each as its own list item"
    elif t in ("value_error", "assertion_error"):
        message = re.sub(r"^(Value|Assertion) error, ", "", e.msg)
    else:
        message = e.msg[:1].lower() + e.msg[1:]
    line, col = line_col
    return ConfigError(message, file=doc.file, line=line, column=col, path=format_path(path), hint=hint)


_PY_WORDS = {str: "a string", bool: "true/false", int: "an integer", float: "a number", list: "a list"}


def _short_forms(model: type | None) -> str:
    """``a string or `` for a model that may also be written as one scalar (``tool_called: name``)."""
    if model is None or not getattr(model, "__short_field__", ""):
        return ""
    words = [_PY_WORDS.get(t, t.__name__) for t in getattr(model, "__short_types__", (str,))]
    return "".join(f"{w} or " for w in dict.fromkeys(words))


def _as_mapping_hint(model: type | None, path: KeyPath, value: Any) -> str:
    """``did you mean dtmf_received: { equals: "42#" }?`` for a scalar where a one-key mapping goes."""
    if model is None or not isinstance(value, (str, int, float)) or not path:
        return ""
    fields = _fields_by_key(model)
    required = [key for key, f in fields.items() if f.is_required()]
    keys = required if required else list(fields)
    if len(keys) != 1 or not isinstance(path[-1], str):
        return ""
    shown = json.dumps(value) if isinstance(value, str) else str(value)
    return f"did you mean {path[-1]}: {{ {keys[0]}: {shown} }}?"


def _unwrap(tp: Any) -> list[Any]:
    """The concrete types behind Optional / Union / Annotated."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        out: list[Any] = []
        for arg in typing.get_args(tp):
            out.extend(_unwrap(arg))
        return out
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_fields")


def _fields_by_key(model: Any) -> dict[str, Any]:
    return {(f.alias or name): f for name, f in model.model_fields.items()}


def _pick(options: list[Any], data: Any) -> Any:
    """The member of a union that the data most likely meant."""
    if isinstance(data, dict):
        models = [o for o in options if _is_model(o)]
        tagged = [m for m in models if _tag(m) is not None and _tag(m) == data.get("type")]
        if tagged:
            return tagged[0]
        if models:
            return max(models, key=lambda m: len(set(data) & set(_fields_by_key(m))))
    if isinstance(data, list):
        for o in options:
            if typing.get_origin(o) in (list, tuple, set):
                return o
    for o in options:
        if o is not type(None):
            return o
    return None


def _tag(model: Any) -> Any:
    """The one value a model's ``type`` field takes (a target type's config), else None."""
    field = model.model_fields.get("type")
    if field is None or typing.get_origin(field.annotation) is not typing.Literal:
        return None
    args = typing.get_args(field.annotation)
    return args[0] if len(args) == 1 else None


def model_at(root: type, path: KeyPath, data: Any) -> type | None:
    """The config model class that describes the mapping at ``path`` (None when not a model)."""
    tp: Any = root
    cur = data
    for part in path:
        tp = _pick(_unwrap(tp), cur)
        if tp is None:
            return None
        if _is_model(tp) and isinstance(part, str):
            field = _fields_by_key(tp).get(part)
            if field is None:
                return None
            tp = field.annotation
        else:
            args = typing.get_args(tp)
            origin = typing.get_origin(tp)
            if origin in (list, tuple, set) and args:
                tp = args[0]
            elif origin is dict and len(args) == 2:
                tp = args[1]
            else:
                return None
        cur = _child(cur, part)
    found = _pick(_unwrap(tp), cur)
    return found if _is_model(found) else None


def _child(container: Any, part: str | int) -> Any:
    if isinstance(container, dict):
        return container.get(part)
    if isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container):
        return container[part]
    return None


def accepted_keys(root: type, path: KeyPath, data: Any) -> list[str]:
    """The YAML keys the object at ``path`` accepts, for did-you-mean hints."""
    model = model_at(root, path, data)
    return sorted(_fields_by_key(model)) if model is not None else []
