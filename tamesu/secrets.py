"""Secret refs (``env:NAME``, ``file:PATH``, ``exec:COMMAND`` and plugins) and the redactor.

A resolved value is registered with the run's ``Redactor`` the moment it is read, and every
transcript, report, log line and error message passes through that redactor before it is written.
The redactor replaces a value as written, base64-encoded (standard and URL-safe, at any byte
offset, so inside a longer encoded text too) and URL-encoded; and a value an agent streamed in
pieces (``"sk-li"`` in one chunk, ``"ve-0123"`` in the next) in the pieces too.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tamesu.errors import SecretError
from tamesu.registry import Registry

__all__ = ["REDACTED", "Redactor", "SecretStore", "secret_backend", "secret_backends"]

REDACTED = "***"

SecretBackend = Callable[[str, Path], str]
"""(the part of the ref after ``scheme:``, the folder relative paths start from) -> the value."""

secret_backends: Registry[SecretBackend] = Registry("secret backend")


def secret_backend(scheme: str) -> Callable[[SecretBackend], SecretBackend]:
    """Register a ``scheme:`` of secret refs (Vault, cloud secret managers... as optional plugins)."""
    return secret_backends.register(scheme)


@secret_backend("env")
def _env(name: str, base: Path) -> str:
    if name not in os.environ:
        raise SecretError(f"environment variable {name} is not set")
    return os.environ[name]


@secret_backend("file")
def _file(path: str, base: Path) -> str:
    p = Path(path).expanduser()
    p = p if p.is_absolute() else base / p
    try:
        return p.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SecretError(f"cannot read secret file {p}: {exc.strerror}") from None


@secret_backend("exec")
def _exec(command: str, base: Path) -> str:
    try:
        out = subprocess.run(
            ["sh", "-c", command], cwd=base, capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        raise SecretError(f"secret command timed out: {command}") from None
    if out.returncode != 0:
        raise SecretError(f"secret command exited {out.returncode}: {command}")
    lines = out.stdout.splitlines()
    if not lines:
        raise SecretError(f"secret command printed nothing: {command}")
    return lines[0].strip()


_JSON_ESCAPED = frozenset('"\\' + "".join(map(chr, range(32))) + "\x7f")
"""Characters a JSON encoder may write otherwise than as themselves."""
_MIN_ENCODED = 8
"""Shorter base64 forms are not redacted: they would match by chance inside encoded audio."""
_SPLIT_START = 4
"""``found_in_json`` looks for a string ending with at least this many first characters of a value."""
_SPLIT_PREFIX = 32
_SPLIT_GAP = 8
"""Strings that may come between two pieces of a value (the other fields of a stream's events)."""
_SPLIT_OPEN = 16


def encoded_forms(value: str) -> set[str]:
    """How a value may appear encoded: base64 (standard and URL-safe, at each of the three byte
    offsets it can start at inside a longer encoded text) and URL-encoded (either hex case)."""
    from urllib.parse import quote, quote_plus

    forms: set[str] = set()
    data = value.encode("utf-8", "backslashreplace")
    for offset in range(3):
        text = base64.b64encode(b"\0" * offset + data).decode("ascii")
        core = text[-(-8 * offset // 6) : 8 * (offset + len(data)) // 6]
        if len(core) >= _MIN_ENCODED:
            forms.add(core)
            forms.add(core.replace("+", "-").replace("/", "_"))
    for quoted in (quote(value, safe=""), quote(value), quote_plus(value)):
        forms.add(quoted)
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quoted))
    forms.discard(value)
    return forms


class Redactor:
    """Replaces every registered secret value with ``***`` in text and in nested data."""

    MIN_LENGTH = 4
    """Shorter values are not redacted: they would blank out ordinary words."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._forms: set[str] = set()
        """The values and their encoded forms: what ``redact`` replaces."""
        self._pattern: re.Pattern[str] | None = None
        self._found: re.Pattern[str] | None = None
        """``_pattern``, or a string ending with the start of a value (perhaps a split value)."""
        self._escaped = False
        """Some value has a character JSON escapes (then ``found_in_json`` cannot rule it out)."""
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        value = str(value)
        if len(value) < self.MIN_LENGTH or value in self._values:
            return
        with self._lock:
            self._values.add(value)
            self._forms |= {value, *encoded_forms(value)}
            ordered = sorted(self._forms, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
            starts = (_split_start(v) for v in sorted(self._values))
            self._found = re.compile("|".join([self._pattern.pattern, *starts]))
            self._escaped = self._escaped or any(c in _JSON_ESCAPED for c in value)

    def __bool__(self) -> bool:
        return bool(self._values)

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def found_in_json(self, data: bytes) -> bool:
        """Whether a secret value may occur in this JSON text (the encoding of some data).

        A value that JSON writes unchanged is searched for as it is and in its encoded forms, and
        so is a string ending with its first characters (a value split across streamed chunks; the
        reply those chunks make up holds it whole). One with characters JSON escapes (quotes,
        backslashes, control characters) always answers True. A False needs no redacting.
        """
        if self._found is None:
            return False
        if self._escaped:
            return True
        return self._found.search(data.decode("utf-8", "replace")) is not None

    def redact_obj(self, obj: Any) -> Any:
        """Redact strings inside dicts, lists and tuples (keys too), and the pieces of a value
        split across strings that follow one another (the chunks of a stream)."""
        if self._pattern is None:
            return obj
        if isinstance(obj, str):
            return self.redact(obj)
        leaves = list(_leaves(obj))
        pieces = self._pieces(leaves) if len(leaves) > 1 else {}
        return self._rebuild(obj, pieces, iter(range(len(leaves))))

    def _rebuild(self, obj: Any, pieces: dict[int, list[tuple[int, int]]], numbers: Iterator[int]) -> Any:
        """The copy, taking the string leaves in the order ``_leaves`` gives them."""
        if isinstance(obj, str):
            n = next(numbers)
            return self.redact(_masked(obj, pieces[n]) if n in pieces else obj)
        if isinstance(obj, Mapping):
            return {self.redact_obj(k): self._rebuild(v, pieces, numbers) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self._rebuild(v, pieces, numbers) for v in obj]
        return obj

    def _pieces(self, leaves: list[str]) -> dict[int, list[tuple[int, int]]]:
        """The spans of each leaf that hold a piece of a value split across leaves: a leaf ending
        with its start, then leaves that continue it whole, then one starting with its end (other
        leaves may come between, as the other fields of each chunk)."""
        found: dict[int, list[tuple[int, int]]] = {}
        for value in tuple(self._values):  # a copy: another thread may add a value meanwhile
            ends: dict[str, list[int]] = {}
            for a in range(len(value) - 1, 0, -1):
                ends.setdefault(value[a - 1], []).append(a)
            open_: list[tuple[int, list[tuple[int, int, int]], int]] = []
            for i, leaf in enumerate(leaves):
                if not leaf:
                    continue
                following: list[tuple[int, list[tuple[int, int, int]], int]] = []
                for a, taken, last in open_:
                    rest = value[a:]
                    if leaf.startswith(rest):
                        for j, start, end in (*taken, (i, 0, len(rest))):
                            found.setdefault(j, []).append((start, end))
                        continue
                    if rest.startswith(leaf):
                        following.append((a + len(leaf), [*taken, (i, 0, len(leaf))], i))
                    if i - last < _SPLIT_GAP:
                        following.append((a, taken, last))
                for a in ends.get(leaf[-1], ()):
                    if a <= len(leaf) and leaf.endswith(value[:a]):
                        following.append((a, [(i, len(leaf) - a, len(leaf))], i))
                open_ = following[-_SPLIT_OPEN:]
        return found


def _split_start(value: str) -> str:
    """A pattern for a string that ends with the value's first characters (at least
    ``_SPLIT_START`` of them) or holds its first ``_SPLIT_PREFIX`` ones anywhere."""
    head = value[:_SPLIT_PREFIX]
    tail = ""
    for c in reversed(head[_SPLIT_START:-1] if len(head) == len(value) else head[_SPLIT_START:]):
        tail = f"(?:{re.escape(c)}{tail})?"
    return f'{re.escape(head[:_SPLIT_START])}{tail}"|{re.escape(head)}'


def _leaves(obj: Any) -> Iterator[str]:
    """The strings of nested data in order (values, not keys)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _leaves(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _leaves(v)


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with each span (overlapping ones as one) replaced by ``REDACTED``."""
    out, at = [], 0
    for start, end in sorted(spans):
        if start >= at:
            out += [text[at:start], REDACTED]
        at = max(at, end)
    out.append(text[at:])
    return "".join(out)


class SecretStore:
    """The suite's secrets by name: resolved lazily, once, and registered with the redactor."""

    def __init__(
        self,
        refs: Mapping[str, str],
        *,
        redactor: Redactor,
        base_dir: Path | str = ".",
        vars: Mapping[str, str] | None = None,
    ) -> None:
        self.refs = dict(refs)
        self.redactor = redactor
        self.base_dir = Path(base_dir)
        self.vars = dict(vars or {})
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return sorted(self.refs)

    def get(self, name: str) -> str:
        with self._lock:
            if name in self._cache:
                return self._cache[name]
            if name not in self.refs:
                raise SecretError(f"secret {name} is not declared in secrets (suite or tamesu.yaml)")
            value = self._resolve(name, self.refs[name])
            self._cache[name] = value
            self.redactor.add(value)
            return value

    def _resolve(self, name: str, ref: str) -> str:
        ref = self._expand(ref)
        scheme, sep, rest = ref.partition(":")
        if not sep or scheme not in secret_backends:
            known = ", ".join(f"{s}:" for s in secret_backends.names())
            raise SecretError(f"secret {name}: unknown ref {scheme!r} (use one of {known})")
        try:
            return secret_backends.get(scheme)(rest, self.base_dir)
        except SecretError as exc:
            raise SecretError(f"secret {name}: {exc}") from None

    def _expand(self, ref: str) -> str:
        """``${VAR}`` in a ref reads the suite's vars first, then the environment."""

        def sub(m: re.Match[str]) -> str:
            key, default = m.group(1), m.group(2)
            if key in self.vars:
                return self.vars[key]
            if key in os.environ:
                return os.environ[key]
            if default is not None:
                return default
            raise SecretError(f"${{{key}}} in a secret ref is neither a var nor set in the environment")

        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}", sub, ref)
