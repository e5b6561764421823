"""Secret refs (``env:NAME``, ``file:PATH``, ``exec:COMMAND`` and plugins) and the redactor.

A resolved value is registered with the run's ``Redactor`` the moment it is read, and every
transcript, report, log line and error message passes through that redactor before it is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable, Mapping
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


class Redactor:
    """Replaces every registered secret value with ``***`` in text and in nested data."""

    MIN_LENGTH = 4
    """Shorter values are not redacted: they would blank out ordinary words."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._escaped = False
        """Some value has a character JSON escapes (then ``found_in_json`` cannot rule it out)."""
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        value = str(value)
        if len(value) < self.MIN_LENGTH or value in self._values:
            return
        with self._lock:
            self._values.add(value)
            ordered = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
            self._escaped = self._escaped or any(c in _JSON_ESCAPED for c in value)

    def __bool__(self) -> bool:
        return bool(self._values)

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def found_in_json(self, data: bytes) -> bool:
        """Whether a secret value may occur in this JSON text (the encoding of some data).

        A value that JSON writes unchanged is searched for as it is; one with characters JSON
        escapes (quotes, backslashes, control characters) always answers True, so a False is
        certain and the data needs no redacting.
        """
        if self._pattern is None:
            return False
        if self._escaped:
            return True
        return self._pattern.search(data.decode("utf-8", "replace")) is not None

    def redact_obj(self, obj: Any) -> Any:
        """Redact strings inside dicts, lists and tuples (keys too)."""
        if self._pattern is None:
            return obj
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, bytes):
            return obj
        if isinstance(obj, Mapping):
            return {self.redact_obj(k): self.redact_obj(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.redact_obj(v) for v in obj]
        return obj


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
