"""``${VAR}`` environment expansion and the ``{{name}}`` templates of a suite.

One small renderer of our own: a template is a dotted name, nothing more. There is no expression
language and nothing can execute code. A name that is not available where it is rendered is a
``TemplateError``; ``template_names`` lets the validator find such names before anything runs.

Values that came from the agent under test (``AGENT_NAMESPACES``) are untrusted: ``render_command``
never lets one change a shell command's structure (each is offered as an environment variable,
``env_name``, and spliced only when it holds no shell syntax) and ``render_url`` percent-encodes
each into the one path segment or query value it stands in.
"""

from __future__ import annotations

import builtins
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from tamesu.errors import TemplateError

__all__ = [
    "AGENT_NAMESPACES",
    "DYNAMIC_NAMES",
    "NAMESPACES",
    "Scope",
    "agent_env",
    "env_name",
    "expand_env",
    "from_agent",
    "render",
    "render_command",
    "render_known",
    "render_str",
    "render_text",
    "render_url",
    "seed_faker",
    "template_names",
]

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][\w\-]*(?:\.[\w\-]+)*)\s*\}\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

NAMESPACES = (
    "vars", "secrets", "env", "faker", "session", "captured", "args", "sent", "remote", "listen", "sip",
    "livekit",
)  # fmt: skip
"""Names whose members are written ``{{ns.member}}``."""
_NAMESPACES = frozenset(NAMESPACES)
DYNAMIC_NAMES = ("uuid", "now")
"""Names computed at each rendering."""
AGENT_NAMESPACES = ("captured", "session", "sent", "args")
"""Namespaces whose members come from the agent under test: what it said (``captured``), what its
session and message answers held (``session.NAME``, ``sent.NAME``), the arguments of its tool calls
(``args``). The bare ``{{session}}`` is the run's own id."""
_AGENT = frozenset(AGENT_NAMESPACES)


def expand_env(text: str, env: Mapping[str, str] | None = None) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}``; an unset VAR without default is an error."""
    environ = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        value = environ.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                raise TemplateError(f"environment variable {name} is not set (write ${{{name}:-default}})")
            return default
        return value

    return _ENV.sub(sub, text)


Resolver = Callable[[str], Any]


class Scope:
    """The names a template may use at one place of a run, layered parent -> child.

    Values are stored under dotted names (``session``, ``session.token``, ``vars.days``); a namespace
    may instead be served by a resolver (``secrets`` resolves and registers a secret on first use,
    ``faker`` generates a value, ``env`` reads the environment).
    """

    def __init__(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        parent: Scope | None = None,
        resolvers: Mapping[str, Resolver] | None = None,
    ) -> None:
        self._values: dict[str, Any] = {}
        self._resolvers: dict[str, Resolver] = dict(resolvers or {})
        self.parent = parent
        for key, value in (values or {}).items():
            self.set(key, value)

    def child(self, values: Mapping[str, Any] | None = None) -> Scope:
        return Scope(values, parent=self)

    def set(self, name: str, value: Any) -> None:
        """Set ``name``; a mapping value under a namespace name sets each member (``vars`` -> ``vars.x``)."""
        if name in _NAMESPACES and isinstance(value, Mapping):
            for key, member in value.items():
                self._values[f"{name}.{key}"] = member
        else:
            self._values[name] = value

    def add_resolver(self, namespace: str, resolver: Resolver) -> None:
        self._resolvers[namespace] = resolver

    def _find(self, name: str) -> tuple[bool, Any]:
        scope: Scope | None = self
        while scope is not None:
            if name in scope._values:
                return True, scope._values[name]
            ns, dot, member = name.partition(".")
            if dot and ns in scope._resolvers:
                return True, scope._resolvers[ns](member)
            scope = scope.parent
        return False, None

    def lookup(self, name: str) -> Any:
        if name == "uuid":
            return str(uuid.uuid4())
        if name == "now":
            return datetime.now(timezone.utc).isoformat(timespec="seconds")
        found, value = self._find(name)
        if found:
            return value() if callable(value) else value
        ns, dot, member = name.partition(".")
        if ns == "env" and dot:
            if member in os.environ:
                return os.environ[member]
            raise TemplateError(f"{{{{{name}}}}}: environment variable {member} is not set")
        if ns == "faker" and dot:
            return _fake(member)
        raise TemplateError(f"{{{{{name}}}}} is not available here{_suggest(name, self.names())}")

    def has(self, name: str) -> bool:
        return name in DYNAMIC_NAMES or self._find(name)[0]

    def names(self) -> builtins.set[str]:
        out: builtins.set[str] = builtins.set(DYNAMIC_NAMES)
        scope: Scope | None = self
        while scope is not None:
            out.update(scope._values)
            out.update(f"{ns}.*" for ns in scope._resolvers)
            scope = scope.parent
        return out

    def flat(self) -> dict[str, Any]:
        """Every stored value, children winning (for reports and debugging; secrets are not stored)."""
        chain: list[Scope] = []
        scope: Scope | None = self
        while scope is not None:
            chain.append(scope)
            scope = scope.parent
        out: dict[str, Any] = {}
        for s in reversed(chain):
            out.update(s._values)
        return out


def _suggest(name: str, names: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, [n for n in names if not n.endswith("*")], n=1)
    return f"; did you mean {{{{{close[0]}}}}}?" if close else ""


_faker: Any = None


def _fake(member: str) -> str:
    global _faker
    if _faker is None:
        from faker import Faker

        _faker = Faker()
    provider = getattr(_faker, member, None)
    if provider is None or not callable(provider) or member.startswith("_"):
        raise TemplateError(f"{{{{faker.{member}}}}}: faker has no generator named {member}")
    return str(provider())


def seed_faker(seed: int) -> None:
    """Make ``{{faker.*}}`` values repeatable for a seeded run."""
    _fake("name")
    _faker.seed_instance(seed)


@lru_cache(maxsize=4096)
def _parse(text: str) -> str | tuple[str, ...]:
    """A template string taken apart once: the one name it is (a str), or literal text and names
    alternating (a tuple starting and ending with text)."""
    whole = _TEMPLATE.fullmatch(text.strip())
    if whole and text.strip() == text:
        return whole.group(1)
    parts: list[str] = []
    end = 0
    for m in _TEMPLATE.finditer(text):
        parts += [text[end : m.start()], m.group(1)]
        end = m.end()
    parts.append(text[end:])
    return tuple(parts)


def render_str(text: str, scope: Scope) -> Any:
    """Render one string. A string that is exactly one template keeps the value's own type."""
    if "{{" not in text:
        return text
    parsed = _parse(text)
    if isinstance(parsed, str):
        return scope.lookup(parsed)
    if len(parsed) == 1:
        return text
    out = [parsed[0]]
    for i in range(1, len(parsed), 2):
        value = scope.lookup(parsed[i])
        if isinstance(value, (dict, list)):
            import json

            out.append(json.dumps(value))
        else:
            out.append("" if value is None else str(value))
        out.append(parsed[i + 1])
    return "".join(out)


def render(template: Any, scope: Scope) -> Any:
    """Render every string inside ``template`` (a string, or nested dicts and lists)."""
    kind = type(template)
    if kind is str:
        return render_str(template, scope)
    if kind is dict:
        return {k: render(v, scope) for k, v in template.items()}
    if isinstance(template, str):
        return render_str(template, scope)
    if isinstance(template, Mapping):
        return {k: render(v, scope) for k, v in template.items()}
    if isinstance(template, (list, tuple)):
        return [render(v, scope) for v in template]
    return template


def render_text(template: Any, scope: Scope) -> str:
    """Render and always return a string (headers, URLs, commands)."""
    value = render(template, scope)
    return value if isinstance(value, str) else ("" if value is None else str(value))


def render_known(text: str, value: Callable[[str], str | None]) -> str:
    """Replace each ``{{name}}`` for which ``value`` gives a string; leave the others as written."""

    def sub(m: re.Match[str]) -> str:
        found = value(m.group(1))
        return m.group(0) if found is None else found

    return _TEMPLATE.sub(sub, text)


def template_names(template: Any) -> list[str]:
    """Every ``{{name}}`` used inside ``template``, in order, for validate-time checks."""
    out: list[str] = []
    if isinstance(template, str):
        out.extend(m.group(1) for m in _TEMPLATE.finditer(template))
    elif isinstance(template, Mapping):
        for v in template.values():
            out.extend(template_names(v))
    elif isinstance(template, (list, tuple)):
        for v in template:
            out.extend(template_names(v))
    return out


def from_agent(name: str) -> bool:
    """Whether the template name ``name`` stands for a value the agent under test chose."""
    ns, dot, _ = name.partition(".")
    return bool(dot) and ns in _AGENT


_NOT_ENV = re.compile(r"[^A-Z0-9]+")


def env_name(name: str) -> str:
    """The environment variable a command reads ``name`` from: ``captured.order_id`` ->
    ``TAMESU_CAPTURED_ORDER_ID`` (upper case; every run of other characters becomes one ``_``)."""
    return "TAMESU_" + _NOT_ENV.sub("_", name.upper()).strip("_")


def _as_text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def agent_env(scope: Scope, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Every agent value ``scope`` holds (and ``extra``, by template name) as environment variables."""
    values = {k: v for k, v in scope.flat().items() if from_agent(k)}
    values.update(extra or {})
    return {env_name(k): _as_text(v) for k, v in values.items() if not callable(v)}


_SHELL_INERT = re.compile(r"[\w@%+=:,./-]+")
"""Characters no POSIX shell gives a meaning to inside a word, in or out of quotes."""
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


def _shell_syntax(text: str) -> str | None:
    """Why ``text`` cannot stand as it is in a command line (None: it can)."""
    if not text:
        return "is empty, which would drop a word"
    if not _SHELL_INERT.fullmatch(text):
        return "holds shell syntax"
    if _ASSIGNMENT.match(text):
        return "reads as a variable assignment"
    return None


def _pieces(text: str) -> tuple[str, ...]:
    """Literal text and names alternating, as ``_parse`` gives them, for a string of any form."""
    parsed = _parse(text)
    return ("", parsed, "") if isinstance(parsed, str) else parsed


def render_command(template: Any, scope: Scope) -> tuple[str, dict[str, str]]:
    """A shell command line and the environment of agent values it runs with.

    Every agent value of ``scope`` is offered as ``$TAMESU_<NAMESPACE>_<NAME>``. A template of one
    spliced into the line itself is kept only when the value has no shell syntax (``ORD-123``);
    otherwise a TemplateError says to read the variable instead, so an agent's answer can never add
    a command, a redirection or a word to the line.
    """
    env = agent_env(scope)
    text = template if isinstance(template, str) else _as_text(template)
    if "{{" not in text:
        return text, env
    parts = _pieces(text)
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        name = parts[i]
        value = _as_text(scope.lookup(name))
        if from_agent(name):
            env[env_name(name)] = value
            why = _shell_syntax(value)
            if why is not None:
                raise TemplateError(
                    f"{{{{{name}}}}} came from the agent and {why} ({_shown(value)}), so it is not "
                    f'put into the command line: write "${env_name(name)}" in the command instead'
                )
        out += [value, parts[i + 1]]
    return "".join(out), env


def render_url(template: Any, scope: Scope) -> str:
    """A URL with every agent value percent-encoded (``/`` ``?`` ``#`` ``&`` included), so it stays
    the one path segment or query value it stands in; ``.`` and ``..`` are refused."""
    from urllib.parse import quote

    text = template if isinstance(template, str) else _as_text(template)
    if "{{" not in text:
        return text
    parts = _pieces(text)
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        name = parts[i]
        value = _as_text(scope.lookup(name))
        if from_agent(name):
            if value in (".", ".."):
                raise TemplateError(
                    f"{{{{{name}}}}} came from the agent and is {value!r}, which would move up the URL's path"
                )
            value = quote(value, safe="")
        out += [value, parts[i + 1]]
    return "".join(out)


def _shown(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "…")
