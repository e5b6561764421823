"""JSON Schema -> plain Python functions that say whether a value is valid: the fast validator's compiler.

It knows the keywords the suite and tamesu.yaml schemas use, with the models' strict-mode meaning
(an integer is an ``int`` and never a bool or a float, a number converts to a float, NaN fails
every bound), plus ``x-hook``: a function of ``tamesu.config.fastrules`` that finishes a check no
keyword can state. Any other keyword is an error, so no constraint is ever dropped on the way.
Identical subschemas share one function; the output is formatted as ruff formats it.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["Compiler", "literal"]

_OBJECT = (
    "properties",
    "additionalProperties",
    "required",
    "minProperties",
    "maxProperties",
    "propertyNames",
)
_ARRAY = ("items", "minItems", "maxItems")
_STRING = ("minLength", "maxLength", "pattern")
_NUMBER = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COMBINE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
_KNOWN = frozenset(
    ("type", "enum", "const", "$ref", "x-hook", *_OBJECT, *_ARRAY, *_STRING, *_NUMBER, *_COMBINE)
)
_TYPE_TEST = {
    "object": "type({v}) is dict",
    "array": "type({v}) is list",
    "string": "type({v}) is str",
    "integer": "type({v}) is int",
    "number": "_rules.number({v})",
    "boolean": "type({v}) is bool",
    "null": "{v} is None",
}
_BOUND = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
_WIDTH = 110


def literal(value: Any) -> str:
    """A Python literal for a JSON value, in the quotes ruff format keeps."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    raise TypeError(f"no literal for {value!r}")


def _not(expr: str) -> str:
    """``not expr`` as ruff writes it: ``type(v) is not T`` and ``v is not None`` for the simple tests."""
    match = re.fullmatch(r"(type\(.+\)|\S+) is (\w+)", expr)
    return f"{match.group(1)} is not {match.group(2)}" if match else f"not {expr}"


class Compiler:
    """JSON Schema nodes -> ``def _f(x) -> bool`` functions, identical nodes sharing one function."""

    def __init__(self) -> None:
        self.functions: dict[str, str] = {}
        self.bodies: list[str] = []
        self.constants: dict[str, str] = {}
        self.defs: dict[str, dict[str, Any]] = {}

    def constant(self, prefix: str, source: str) -> str:
        if source not in self.constants:
            self.constants[source] = f"_{prefix}{len(self.constants)}"
        return self.constants[source]

    def keys(self, keys: list[str]) -> str:
        items = sorted(keys)
        one_line = f"frozenset(({', '.join(map(literal, items))}{',' if len(items) == 1 else ''}))"
        if len(one_line) + 10 <= _WIDTH:
            return self.constant("K", one_line)
        inner = "".join(f"        {literal(k)},\n" for k in items)
        return self.constant("K", f"frozenset(\n    (\n{inner}    )\n)")

    def pattern(self, pattern: str) -> str:
        if "$" in pattern[:-1] or not pattern.endswith("$"):
            raise ValueError(f"pattern {pattern!r}: only a final $ is supported")
        return self.constant("P", f"re.compile({literal(pattern[:-1] + chr(92) + 'Z')})")

    def ref(self, node: dict[str, Any]) -> str:
        target = node["$ref"]
        if not target.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {target!r}")
        name = target.removeprefix("#/$defs/")
        canonical = json.dumps({"$def": name, "schema": self.defs[name]}, sort_keys=True)
        if canonical not in self.functions:
            taken = set(self.functions.values())
            fname = f"_d_{name}"
            while fname in taken:
                fname += "_"
            self.functions[canonical] = fname
            self.emit(fname, self.defs[name])
        return self.functions[canonical]

    def call(self, node: Any, var: str) -> str:
        """A boolean expression: ``node`` holds for ``var``."""
        if node is True or node == {}:
            return "True"
        if node is False:
            return "False"
        if set(node) == {"type"} and isinstance(node["type"], str):
            return _TYPE_TEST[node["type"]].format(v=var)
        if set(node) == {"$ref"}:
            return f"{self.ref(node)}({var})"
        if set(node) == {"anyOf"}:
            return f"{self.any_of(node['anyOf'])}({var})"
        if set(node) == {"oneOf"}:
            return f"{self.one_of(node['oneOf'])}({var})"
        canonical = json.dumps(node, sort_keys=True)
        if canonical not in self.functions:
            fname = f"_n{len(self.functions)}"
            self.functions[canonical] = fname
            self.emit(fname, node)
        return f"{self.functions[canonical]}({var})"

    def emit(self, fname: str, node: Any) -> None:
        lines = self.body(node) if isinstance(node, dict) else ([] if node else ["return False"])
        if not lines or lines[-1] != "return False":
            lines.append("return True")
        text = "\n".join(f"    {line}" for line in lines)
        self.bodies.append(f"def {fname}(x: Any) -> bool:\n{text}\n")

    def body(self, node: dict[str, Any]) -> list[str]:
        unknown = set(node) - _KNOWN
        if unknown:
            raise ValueError(f"keywords the fast validator does not know: {sorted(unknown)}")
        out: list[str] = []
        fail = ["    return False"]
        kind = node.get("type")
        kinds = [kind] if isinstance(kind, str) else list(kind or [])
        if kinds:
            tests = [_TYPE_TEST[k].format(v="x") for k in kinds]
            out += [f"if {_not(tests[0])}:" if len(tests) == 1 else f"if not ({' or '.join(tests)}):", *fail]
        if "$ref" in node:
            out += [f"if not {self.ref(node)}(x):", *fail]
        if "enum" in node:
            values = node["enum"]
            if all(isinstance(v, str) for v in values):
                out += [f"if type(x) is not str or x not in {self.keys(values)}:", *fail]
            else:
                raise ValueError(f"enum of other than strings: {values!r}")
        if "const" in node:
            value = node["const"]
            if value is None or isinstance(value, bool):
                out += [f"if x is not {value!r}:", *fail]
            else:
                out += [f"if not (type(x) is {type(value).__name__} and x == {literal(value)}):", *fail]
        out += self.family(kinds, "object", _OBJECT, node, self.object_rules)
        out += self.family(kinds, "array", _ARRAY, node, self.array_rules)
        out += self.family(kinds, "string", _STRING, node, self.string_rules)
        out += self.family(kinds, "number", _NUMBER, node, self.number_rules)
        for sub in node.get("allOf", []):
            out += [f"if {_not(self.call(sub, 'x'))}:", *fail]
        if "anyOf" in node:
            out += [f"if not {self.any_of(node['anyOf'])}(x):", *fail]
        if "oneOf" in node:
            out += [f"if not {self.one_of(node['oneOf'])}(x):", *fail]
        if "not" in node:
            out += [f"if {self.call(node['not'], 'x')}:", *fail]
        if "if" in node and ("then" in node or "else" in node):
            out.append(f"if {self.call(node['if'], 'x')}:")
            if "then" in node:
                out += [f"    if {_not(self.call(node['then'], 'x'))}:", "        return False"]
            else:
                out.append("    pass")
            if "else" in node:
                out += [f"elif {_not(self.call(node['else'], 'x'))}:", *fail]
        if "x-hook" in node:
            out += [f"if not _rules.{node['x-hook']}(x):", *fail]
        return out

    def family(
        self, kinds: list[str], name: str, keywords: tuple[str, ...], node: dict[str, Any], rules: Any
    ) -> list[str]:
        """The keywords of one instance type; guarded by a type test unless the node is of that type."""
        if not any(k in node for k in keywords):
            return []
        lines: list[str] = rules(node)
        if kinds == [name] or (name == "number" and kinds == ["integer"]):
            return lines
        test = {"number": "type(x) is int or type(x) is float"}.get(name) or _TYPE_TEST[name].format(v="x")
        return [f"if {test}:", *(f"    {line}" for line in lines)]

    def object_rules(self, node: dict[str, Any]) -> list[str]:
        out: list[str] = []
        fail = ["    return False"]
        props: dict[str, Any] = node.get("properties", {})
        required = node.get("required", [])
        if len(required) == 1:
            out += [f"if {literal(required[0])} not in x:", *fail]
        elif required:
            out += [f"if not x.keys() >= {self.keys(required)}:", *fail]
        extra = node.get("additionalProperties", True)
        if extra is False:
            out += [f"if not x.keys() <= {self.keys(list(props))}:", *fail]
        elif extra is not True and extra != {}:
            check = self.call(extra, "v")
            if props:
                out += [
                    "for k, v in x.items():",
                    f"    if k not in {self.keys(list(props))} and {_not(check)}:",
                ]
            else:
                out += ["for v in x.values():", f"    if {_not(check)}:"]
            out.append("        return False")
        for word, op in (("minProperties", "<"), ("maxProperties", ">")):
            if word in node:
                out += [f"if len(x) {op} {node[word]}:", *fail]
        if "propertyNames" in node:
            out += [
                "for k in x:",
                f"    if {_not(self.call(node['propertyNames'], 'k'))}:",
                "        return False",
            ]
        forbidden = [key for key, sub in props.items() if sub is False]
        if forbidden:
            out += [f"if not x.keys().isdisjoint({self.keys(forbidden)}):", *fail]
        for key in sorted(props):
            sub = props[key]
            if sub is not True and sub is not False and sub != {}:
                out += [f"if {literal(key)} in x and {_not(self.call(sub, f'x[{literal(key)}]'))}:", *fail]
        return out

    def array_rules(self, node: dict[str, Any]) -> list[str]:
        out: list[str] = []
        for word, op in (("minItems", "<"), ("maxItems", ">")):
            if word in node:
                out += [f"if len(x) {op} {node[word]}:", "    return False"]
        if "items" in node:
            out += ["for v in x:", f"    if {_not(self.call(node['items'], 'v'))}:", "        return False"]
        return out

    def string_rules(self, node: dict[str, Any]) -> list[str]:
        out: list[str] = []
        for word, op in (("minLength", "<"), ("maxLength", ">")):
            if word in node:
                out += [f"if len(x) {op} {node[word]}:", "    return False"]
        if "pattern" in node:
            out += [f"if {self.pattern(node['pattern'])}.search(x) is None:", "    return False"]
        return out

    def number_rules(self, node: dict[str, Any]) -> list[str]:
        """``not (x >= m)``: NaN fails every bound, as it does in the models."""
        out: list[str] = []
        for word, op in _BOUND.items():
            if word in node:
                out += [f"if not (x {op} {literal(node[word])}):", "    return False"]
        return out

    def any_of(self, branches: list[Any]) -> str:
        lines = [line for b in branches for line in (f"if {self.call(b, 'x')}:", "    return True")]
        return self.helper("anyOf", branches, [*lines, "return False"])

    def one_of(self, branches: list[Any]) -> str:
        lines = ["n = 0"]
        lines += [line for b in branches for line in (f"if {self.call(b, 'x')}:", "    n += 1")]
        return self.helper("oneOf", branches, [*lines, "return n == 1"])

    def helper(self, word: str, branches: list[Any], lines: list[str]) -> str:
        canonical = json.dumps({"$helper": word, "branches": branches}, sort_keys=True)
        if canonical not in self.functions:
            fname = f"_n{len(self.functions)}"
            self.functions[canonical] = fname
            text = "\n".join(f"    {line}" for line in lines)
            self.bodies.append(f"def {fname}(x: Any) -> bool:\n{text}\n")
        return self.functions[canonical]
