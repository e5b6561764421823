"""The registries that own a suite's contract: target types and assertion kinds.

A target type registers its config model and names its adapter; an assertion kind registers its
spec model and names its evaluator. The suite's unions, the JSON Schema, which keys apply to which
target type, which targets carry audio, what a script step may send, and the README's tables are
all read from here, so a plugin is validated, documented and run the way a built-in is.

Filling a registry imports config models only: adapters and evaluators are named as
``"module:attr"`` and imported the first time a run needs them, so ``tamesu validate`` never loads
an adapter, the model router or speech code. The built-ins are the ``settings`` module of every wing
of ``tamesu.targets`` (``tamesu.targets.rest.settings``, ...) and every module of
``tamesu.config.assertions``; plugins are the modules named by the
entry point groups ``tamesu.targets`` and ``tamesu.assertions``, imported when a registry is
first read (a plugin module registers its kinds with the same decorators).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

__all__ = [
    "ENTRY_POINT_GROUPS",
    "AssertionKind",
    "AssertionKinds",
    "Audio",
    "Kinds",
    "TargetKind",
    "TargetKinds",
    "assertion_kind",
    "assertion_kinds",
    "load_ref",
    "target_kinds",
    "target_type",
]

Audio = Literal["never", "mode", "always"]
"""Whether a target type's calls carry audio: never, when its ``mode`` (or the test's) is audio, or always."""

ENTRY_POINT_GROUPS = {"target type": "tamesu.targets", "assertion kind": "tamesu.assertions"}
"""Registry -> the entry point group whose modules register plugin kinds into it."""

K = TypeVar("K", "TargetKind", "AssertionKind")


def load_ref(ref: Any) -> Any:
    """The object a ``"module:attr"`` string names (anything else is returned as it is)."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass
class TargetKind:
    """One target type: the config model a suite's ``targets`` entry validates against, and more."""

    name: str
    config: type[Any]
    """The config model; its ``type`` field is ``Literal[name]``."""
    adapter: Any = None
    """The adapter class, or ``"module:Class"`` until first used; None: no adapter in this version."""
    audio: Audio = "never"
    parts: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Mode -> the parts of a script step this type sends (say, data, files, dtmf)."""
    summary: str = ""
    """What it talks to, in one line: the README's targets table."""
    extra: str | None = None
    """The extra its adapter needs (``tamesu.extras``): validate warns when it is missing."""
    needs: str | None = None
    """``"module:function"`` that says what else this machine lacks to run the type (a program such
    as Chromium): it returns a ``MissingExtraError`` (validate warns with its words) or None."""
    project_blocks: tuple[str, ...] = ()
    """The tamesu.yaml blocks its adapter reads (``sip``, ``livekit``): the planner copies them onto
    the run (``RunSpec``'s fields of those names), so the runner names no target type."""

    def carries_audio(self, mode: str | None) -> bool:
        """Whether a call in ``mode`` (the test's, else the target's) carries audio."""
        return self.audio == "always" or (self.audio == "mode" and mode == "audio")

    @property
    def keys(self) -> frozenset[str]:
        """The YAML keys its config model accepts."""
        return frozenset(f.alias or n for n, f in self.config.model_fields.items())


@dataclass
class AssertionKind:
    """One assertion kind: the type of its value in a suite, and its evaluator."""

    name: str
    spec: Any
    """The type its value validates as: a spec model, or a plain type such as ``str``."""
    description: str
    example: Any
    evaluator: Any = None
    """The evaluator, or ``"module:function"`` until first used; None: expanded at load, or not yet."""
    summary: str = ""
    """When it passes, in one line: the README's assertions table."""
    expands: bool = False
    """Replaced by other assertions when the suite loads (``pack``): never evaluated."""
    renders: frozenset[str] = frozenset()
    """The spec's fields its evaluator renders itself (set when the evaluator registers)."""


class Kinds(Generic[K]):
    """Name -> entry; the built-ins and the plugins are loaded on first read."""

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self._items: dict[str, K] = {}
        self._loaded = False
        self._builtins: frozenset[str] = frozenset()
        self._lock = threading.RLock()

    def add(self, entry: K) -> K:
        """Register an entry; a name registered twice must be the same kind again."""
        old = self._items.get(entry.name)
        if old is not None and _origin(old) != _origin(entry):
            raise ValueError(f"{self.kind} {entry.name!r} is registered twice")
        self._items[entry.name] = entry
        return entry

    def get(self, name: str) -> K:
        self.load()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(self.names())
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        self.load()
        return sorted(self._items)

    def entries(self, *, builtin: bool = False) -> list[K]:
        """Every entry by name; only tamesu's own with ``builtin`` (no plugin, none added at run time)."""
        self.load()
        return [self._items[n] for n in sorted(self._items) if not builtin or n in self._builtins]

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def load(self) -> None:
        """Import the built-in kinds' modules and the plugins' entry points, once."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            import pkgutil

            for name in self._builtin_modules(pkgutil):
                importlib.import_module(name)
            self._builtins = frozenset(self._items)
            _load_plugins(ENTRY_POINT_GROUPS[self.kind])

    def _builtin_modules(self, pkgutil: Any) -> list[str]:
        """The modules that register the built-ins: every module of ``package``."""
        package = importlib.import_module(self.package)
        return [
            f"{self.package}.{m.name}"
            for m in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
        ]


def _origin(entry: Any) -> Any:
    return entry.config if isinstance(entry, TargetKind) else entry.spec


def _load_plugins(group: str) -> None:
    """Import every module an installed package names under ``group`` (``tamesu.plugins``: a
    plugin that fails to import is a configuration error naming it, never a traceback)."""
    from tamesu.plugins import load_group

    load_group(group)


class TargetKinds(Kinds[TargetKind]):
    """The target types, with what the rest of tamesu asks of them."""

    def _builtin_modules(self, pkgutil: Any) -> list[str]:
        """The ``settings`` module of every wing of ``package`` (``tamesu.targets.<wing>.settings``):
        found on disk, so neither an adapter nor a wing's other modules are imported."""
        package = importlib.import_module(self.package)
        wings = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.ispkg)
        return [
            f"{self.package}.{w}.settings"
            for w in wings
            if any(m.name == "settings" for m in pkgutil.iter_modules([f"{package.__path__[0]}/{w}"]))
        ]

    def adapter(self, name: str) -> Any:
        """The adapter class of ``name`` (imported on first use); KeyError when it has none."""
        entry = self.get(name)
        if entry.adapter is None:
            raise KeyError(f"the {name} target type has no adapter in this version of tamesu")
        entry.adapter = load_ref(entry.adapter)
        return entry.adapter

    def with_adapter(self) -> list[str]:
        return [e.name for e in self.entries() if e.adapter is not None]

    def without_adapter(self) -> list[str]:
        return [e.name for e in self.entries() if e.adapter is None]

    def carries_audio(self, name: Any, mode: Any = None) -> bool:
        """Whether a call to a target of type ``name`` in ``mode`` carries audio (False for unknown types)."""
        return isinstance(name, str) and name in self and self.get(name).carries_audio(mode)

    def types_with_key(self, key: str) -> list[str]:
        """The target types whose config accepts ``key``."""
        return [e.name for e in self.entries() if key in e.keys]


class AssertionKinds(Kinds[AssertionKind]):
    """The assertion kinds, with their evaluators."""

    def evaluator(self, name: str) -> Callable[..., Any]:
        """The evaluator of ``name`` (imported on first use); KeyError when it has none."""
        entry = self.get(name)
        if entry.evaluator is None:
            raise KeyError(f"the {name} assertion has no evaluator in this version of tamesu")
        entry.evaluator = load_ref(entry.evaluator)
        return entry.evaluator  # type: ignore[no-any-return]

    def without_evaluator(self) -> list[str]:
        return [e.name for e in self.entries() if e.evaluator is None and not e.expands]


target_kinds = TargetKinds("target type", "tamesu.targets")
assertion_kinds = AssertionKinds("assertion kind", "tamesu.config.assertions")


def target_type(
    name: str,
    *,
    adapter: Any = None,
    audio: Audio = "never",
    parts: Mapping[str, frozenset[str]] | None = None,
    summary: str = "",
    extra: str | None = None,
    needs: str | None = None,
    project_blocks: tuple[str, ...] = (),
) -> Callable[[type[Any]], type[Any]]:
    """Class decorator for a target type's config model: register it under ``type: name``.

    ``adapter`` is the adapter class or its ``"module:Class"`` (None: none yet); ``audio`` says when
    its calls carry audio; ``parts`` what a script step may send per mode; ``extra`` the extra
    the adapter needs; ``needs`` what else it needs of this machine (``TargetKind.needs``);
    ``project_blocks`` the tamesu.yaml blocks the adapter reads.
    """

    def deco(config: type[Any]) -> type[Any]:
        target_kinds.add(
            TargetKind(
                name,
                config,
                adapter=adapter,
                audio=audio,
                parts=dict(parts or {}),
                summary=summary,
                extra=extra,
                needs=needs,
                project_blocks=project_blocks,
            )
        )
        return config

    return deco


def assertion_kind(
    name: str,
    *,
    spec: Any,
    description: str,
    example: Any,
    evaluator: Any = None,
    summary: str = "",
    expands: bool = False,
) -> AssertionKind:
    """Register the assertion key ``name``: its value validates as ``spec``, and ``evaluator`` (a
    function or its ``"module:function"``) grades it."""
    return assertion_kinds.add(
        AssertionKind(name, spec, description, example, evaluator=evaluator, summary=summary, expands=expands)
    )
