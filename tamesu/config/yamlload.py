"""YAML with line numbers: composed nodes turned into plain Python values plus a position table.

PyYAML's own constructor follows YAML 1.1, which turns ``2026-12-31`` into a date and ``no`` into
False; suites mean neither. We compose nodes (C loader when available) and build values ourselves
with the YAML 1.2 core schema, recording where every key and value starts so that a validation
error can name ``file:line:col``. ``${VAR}`` environment expansion happens here too, and so does
reading a suite or tamesu.yaml from disk (``read_doc``: bounded in size, every failure located).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tamesu.errors import ConfigError, ConfigErrors, TemplateError
from tamesu.templates import expand_env

__all__ = [
    "MAX_FILE_BYTES",
    "PROJECT_FILE",
    "KeyPath",
    "Positions",
    "YamlDoc",
    "display_path",
    "format_path",
    "parse_yaml",
    "read_doc",
]

KeyPath = tuple[str | int, ...]

_T = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ, _MERGE = _T + "str", _T + "map", _T + "seq", _T + "merge"
_PLAIN = "tamesu:plain"
"""The tag our composer gives an untagged plain scalar: its type is decided by the core schema."""
_CORE_TAGS = {_T + n for n in ("str", "int", "float", "bool", "null", "timestamp")}

_CORE_FIRST = frozenset("0123456789+-.~nNtTfF")
"""First characters of the plain scalars the core schema reads as something other than a string."""
_NULL = {"", "~", "null", "Null", "NULL"}
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT10 = re.compile(r"[-+]?[0-9]+")
_INT8 = re.compile(r"0o[0-7]+")
_INT16 = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF = re.compile(r"([-+]?)\.(inf|Inf|INF)")
_NAN = {".nan", ".NaN", ".NAN"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")

_MAX_NODES = 500_000
"""Values built from one file; aliases can multiply a small file into a huge one."""
_COLLECTION_TAGS = {_MAP, _SEQ}

_NO_ENV_UNDER = ("secrets",)
"""Top-level keys whose strings keep ``${VAR}``: secret refs are expanded later, against vars."""


@dataclass
class Positions:
    """1-based (line, column) of every value and every mapping key, by key path."""

    values: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    keys: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)

    def value(self, path: KeyPath) -> tuple[int, int]:
        """Where the value at ``path`` starts, or its nearest recorded ancestor."""
        p = tuple(path)
        while p not in self.values and p:
            p = p[:-1]
        return self.values.get(p, (1, 1))

    def key(self, path: KeyPath) -> tuple[int, int]:
        """Where the key naming ``path`` is written (for unknown keys); falls back to the value."""
        return self.keys.get(tuple(path)) or self.value(path)


@dataclass
class YamlDoc:
    """One parsed file: its data, where each part of it was written, and its name for messages."""

    data: Any
    positions: Positions
    file: str
    errors: list[ConfigError] = field(default_factory=list)
    """Problems that left the data usable (a duplicate key keeps its first value, an unset
    ``${VAR}`` its text), kept by ``parse_yaml(..., lenient=True)`` so later checks still run."""


class _TagByStyle:
    """The composer's resolver: plain scalars get ``_PLAIN``, quoted and block ones ``str``.

    PyYAML's own resolver applies the YAML 1.1 rules (in Python, for every node); ours only
    records whether a scalar was plain, and explicit tags (``!!str 12``) are kept as written.
    """

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


if hasattr(yaml, "CSafeLoader"):
    from yaml._yaml import CParser

    class _Loader(CParser, _TagByStyle):  # type: ignore[misc]
        """libyaml's parser and composer with our resolver."""

else:  # pragma: no cover - PyYAML built without libyaml

    class _Loader(  # type: ignore[no-redef]
        yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, _TagByStyle
    ):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)


def format_path(path: KeyPath) -> str:
    """``("tests", 2, "assert", 0, "judge")`` -> ``tests[2].assert[0].judge``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def parse_yaml(
    text: str, *, file: str = "<suite>", env: Mapping[str, str] | None = None, lenient: bool = False
) -> YamlDoc:
    """Parse one YAML document; every problem (syntax, duplicate key, tag) is a ConfigError.

    A syntax error, or a document too large to build, is raised at once. The other problems are
    raised together, or with ``lenient`` kept in ``YamlDoc.errors`` beside the data built anyway.
    ``${VAR}`` is expanded; a string naming an unset VAR without a default stays as written: the
    suite is still valid, and ``tamesu.environment`` says which tests cannot run here.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise ConfigErrors([_syntax_error(exc, file, text)]) from None
    except yaml.YAMLError as exc:
        raise ConfigErrors([ConfigError(f"not valid YAML: {exc}", file=file)]) from None
    finally:
        loader.dispose()
    builder = _Builder(file, env)
    data = builder.build(node, ()) if node is not None else None
    errors = sorted(builder.errors, key=lambda e: (e.line or 0, e.column or 0))
    if errors and (builder.too_large or not lenient):
        raise ConfigErrors(errors)
    return YamlDoc(data, builder.positions, file, errors)


def _syntax_error(exc: yaml.MarkedYAMLError, file: str, text: str) -> ConfigError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "invalid YAML"
    hint = ""
    if exc.context and exc.context_mark is not None:
        hint = f"{exc.context} at line {exc.context_mark.line + 1}"
    if mark is not None and "\t" in (text.splitlines()[mark.line : mark.line + 1] or [""])[0]:
        hint = "indent with spaces; YAML does not allow tabs"
    return ConfigError(
        f"YAML syntax error: {problem}",
        file=file,
        line=mark.line + 1 if mark else None,
        column=mark.column + 1 if mark else None,
        hint=hint,
    )


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """Turns composed nodes into dicts, lists and scalars while filling the position table."""

    def __init__(self, file: str, env: Mapping[str, str] | None) -> None:
        self.file = file
        self.env = env
        self.positions = Positions()
        self.errors: list[ConfigError] = []
        self._stack: set[int] = set()
        self._count = 0
        self.too_large = False
        self._expanded: dict[int, Any] = {}
        """``${VAR}`` expansions by scalar node: an aliased string is expanded once and shared, as
        a string without ``${`` is, so aliases cannot multiply the memory of an expansion."""

    def error(self, message: str, node: yaml.Node, path: KeyPath, hint: str = "") -> None:
        line, col = _pos(node)
        self.errors.append(
            ConfigError(message, file=self.file, line=line, column=col, path=format_path(path), hint=hint)
        )

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self._count += 1
        if self._count > _MAX_NODES:
            if self._count == _MAX_NODES + 1:
                self.too_large = True
                self.error(
                    f"the document is too large: more than {_MAX_NODES:,} values (an alias counts the "
                    "values it repeats each time it is used)",
                    node,
                    path,
                )
            return None
        self.positions.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if node.tag not in _COLLECTION_TAGS:
            self.error(f"unsupported YAML tag {node.tag}", node, path)
            return None
        if id(node) in self._stack:
            self.error("an alias refers to itself (a recursive structure)", node, path)
            return None
        self._stack.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, path)
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        finally:
            self._stack.discard(id(node))

    def mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if _is_merge(key_node):
                self.merge(merged, value_node, path)
        self.positions.values[path] = _pos(node)
        out: dict[str, Any] = {}
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if _is_merge(key_node):
                continue
            key = self.key(key_node, path)
            if key is None:
                continue
            if key in seen:
                self.error(
                    f"duplicate key '{key}' (first at line {seen[key]})", key_node, (*path, key),
                    hint="a mapping may name each key once",
                )  # fmt: skip
                continue
            at = self.positions.keys[(*path, key)] = _pos(key_node)
            seen[key] = at[0]
            out[key] = self.build(value_node, (*path, key))
        return {**merged, **out} if merged else out

    def merge(self, merged: dict[str, Any], source: yaml.Node, path: KeyPath) -> None:
        """``<<: *base`` or ``<<: [*a, *b]``: keys the mapping does not set itself, earlier sources winning.

        Merged values are built first so that the mapping's own keys record the final positions.
        """
        sources = source.value if isinstance(source, yaml.SequenceNode) else [source]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                self.error("a merge key (<<) takes a mapping or a list of mappings", src, path)
                continue
            for key, value in (self.build(src, path) or {}).items():
                merged.setdefault(key, value)

    def key(self, node: yaml.Node, path: KeyPath) -> str | None:
        if not isinstance(node, yaml.ScalarNode):
            self.error("a mapping key must be a plain value, not a list or mapping", node, path)
            return None
        return node.value

    def scalar(self, node: yaml.ScalarNode, path: KeyPath) -> Any:
        text, tag = node.value, node.tag
        if tag == _PLAIN:
            value: Any = _core_scalar(text) if not text or text[0] in _CORE_FIRST else text
        elif tag == _STR or tag == _T + "timestamp":
            value = text
        elif tag in _CORE_TAGS:
            value = _core_scalar(text)
        else:
            self.error(f"unsupported YAML tag {tag}", node, path)
            return text
        if isinstance(value, str) and "${" in value and (not path or path[0] not in _NO_ENV_UNDER):
            if id(node) in self._expanded:
                return self._expanded[id(node)]
            with contextlib.suppress(TemplateError):  # unset: kept as written for the environment check
                value = expand_env(value, self.env)
            self._expanded[id(node)] = value
        return value


def _is_merge(node: yaml.Node) -> bool:
    return node.tag == _MERGE or (node.tag == _PLAIN and node.value == "<<")


def _core_scalar(text: str) -> Any:
    """A plain scalar by the YAML 1.2 core schema: dates, yes/no/on/off and 1_000 stay strings."""
    if text in _NULL:
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT10.fullmatch(text):
        return int(text)
    if _INT8.fullmatch(text):
        return int(text[2:], 8)
    if _INT16.fullmatch(text):
        return int(text[2:], 16)
    if _FLOAT.fullmatch(text):
        return float(text)
    m = _INF.fullmatch(text)
    if m:
        return -math.inf if m.group(1) == "-" else math.inf
    if text in _NAN:
        return math.nan
    return text


PROJECT_FILE = "tamesu.yaml"
MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest suite or tamesu.yaml read: a bigger one is refused by its size, before it is read."""


def display_path(path: Path) -> str:
    """A path as users want to see it in messages: relative to the working directory when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_doc(path: Path, file: str) -> YamlDoc:
    """One YAML file parsed with positions; a file that cannot be read is a ConfigErrors naming it."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(MAX_FILE_BYTES + 1) if size <= MAX_FILE_BYTES else b""
        if size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
            raise ConfigErrors([_too_large(file, max(size, len(data)))])
        text = data.decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigErrors([ConfigError("file not found", file=file)]) from None
    except IsADirectoryError:
        raise ConfigErrors([ConfigError("is a folder, not a YAML file", file=file)]) from None
    except OSError as exc:
        raise ConfigErrors([ConfigError(f"cannot read the file: {exc.strerror or exc}", file=file)]) from None
    except UnicodeDecodeError as exc:
        raise ConfigErrors([ConfigError(f"the file is not UTF-8 text ({exc.reason})", file=file)]) from None
    return parse_yaml(text, file=file, lenient=True)


def _too_large(file: str, size: int) -> ConfigError:
    limit = f"{MAX_FILE_BYTES // 1024 // 1024} MB"
    shown = f"{size / 1024 / 1024:.1f} MB" if size > MAX_FILE_BYTES else f"over {limit}"
    return ConfigError(
        f"the file is too large to load ({shown}; a suite or tamesu.yaml may be at most {limit})",
        file=file,
        hint="split the tests into several suite files in one folder, or keep test data in a cases_file",
    )
