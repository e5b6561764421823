"""What a playbook is: attacks, the moves that open them, and the detectors that recognise success.

These are plain frozen dataclasses so that a plugin writes a playbook as data, the registry checks
it once when it is added, and an attack's plan travels to a Ray worker as it is (pickle).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "SEVERITIES",
    "Attack",
    "AttackPlan",
    "Canary",
    "Decoded",
    "Detector",
    "Move",
    "PackCheck",
    "Pattern",
    "Playbook",
    "Rubric",
    "Severity",
    "ToolUse",
    "detector_name",
]

Severity = Literal["critical", "high", "medium", "low"]
SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low")
"""Most severe first: the order findings are listed in."""

Requirement = Literal["audio", "tools"]
"""What a target must have for an attack to apply: a call (audio), or tools whose results tamesu gives."""


@dataclass(frozen=True)
class Canary:
    """The attack asks the agent to say a token it would only say by complying (case-insensitive).

    The token is never written in the attack itself (it is spelled backwards or assembled), so an
    agent that quotes the attack while refusing does not trip it. ``{{vars.x}}`` renders at run time.
    """

    text: str
    label: str = "canary"


@dataclass(frozen=True)
class Pattern:
    """Forbidden text: a regular expression searched in each agent turn."""

    regex: str
    label: str

    def __post_init__(self) -> None:
        re.compile(self.regex)


@dataclass(frozen=True)
class ToolUse:
    """A tool call that must not happen: a tool whose name matches the regular expression."""

    name: str
    label: str = "forbidden tool call"

    def __post_init__(self) -> None:
        re.compile(self.name)


@dataclass(frozen=True)
class Decoded:
    """Encoded output: base64 or hex in an agent turn, decoded, then checked by the inner detectors.

    With ``any_text`` the encoded reply is a finding on its own (an agent that answers in an
    encoding slips past every filter that reads its output).
    """

    inner: tuple[Canary | Pattern, ...] = ()
    any_text: bool = False
    label: str = "encoded reply"


@dataclass(frozen=True)
class PackCheck:
    """A built-in pack's assertions (a suite pack of the same name replaces them)."""

    pack: str

    @property
    def label(self) -> str:
        return f"pack:{self.pack}"


@dataclass(frozen=True)
class Rubric:
    """Only a model can tell: the judge grades the conversation (skipped without a judge model)."""

    rubric: str
    label: str = "judge"


Detector = Canary | Pattern | ToolUse | Decoded | PackCheck | Rubric


def detector_name(detector: Detector) -> str:
    """What reports call it: ``canary``, ``pack:pii_leakage``, ``forbidden tool call``."""
    return detector.label


@dataclass(frozen=True)
class Move:
    """One scripted attacker turn: what is said, the tactic it uses, and optional keypad digits.

    ``speech_level_db``: on a call, how far from normal speech the caller says it (-20: a whisper).
    """

    say: str
    tactic: str
    dtmf: str | None = None
    speech_level_db: float = 0.0


@dataclass(frozen=True)
class Attack:
    """One attack: a goal written against the agent's description, a scripted opening, detectors.

    ``goal`` may say ``{agent}``: the suite's ``red_team.agent`` goes there. ``behaviors`` are the
    caller's audio habits during the attack (a voice tactic such as talking over the agent).
    """

    name: str
    description: str
    goal: str
    opening: tuple[Move, ...]
    severity: Severity = "high"
    detectors: tuple[Detector, ...] = ()
    requires: Requirement | None = None
    behaviors: dict[str, Any] | None = None
    tool_result: str | None = None
    """Tools attacks: the text every tool of the target answers with (an injection in the data)."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"attack name {self.name!r}: use lower-case letters, digits and _")
        if not self.opening:
            raise ValueError(f"attack {self.name!r} needs a scripted opening (one move at least)")
        if self.requires == "tools" and not self.tool_result:
            raise ValueError(f"attack {self.name!r} requires tools: give its tool_result")


@dataclass(frozen=True)
class Playbook:
    """A named set of attacks with the tactics an adaptive attacker may use and shared detectors."""

    name: str
    description: str
    attacks: tuple[Attack, ...]
    tactics: tuple[str, ...]
    detectors: tuple[Detector, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"playbook name {self.name!r}: use lower-case letters, digits and _")
        if not self.attacks:
            raise ValueError(f"playbook {self.name!r} has no attacks")
        names = [a.name for a in self.attacks]
        if len(set(names)) != len(names):
            raise ValueError(f"playbook {self.name!r} names an attack twice")
        if not self.tactics:
            raise ValueError(f"playbook {self.name!r} lists no tactics")

    def rule(self, attack: Attack) -> str:
        """The attack kind reports group findings by (a SARIF rule id)."""
        return f"{self.name}/{attack.name}"

    def detectors_of(self, attack: Attack) -> tuple[Detector, ...]:
        """The attack's own detectors, then the playbook's."""
        return (*attack.detectors, *self.detectors)

    @property
    def requires(self) -> Requirement | None:
        """What every attack of the playbook needs (audio playbooks), else None."""
        needs = {a.requires for a in self.attacks}
        return needs.pop() if len(needs) == 1 else None


@dataclass(frozen=True)
class AttackPlan:
    """One attack as a run carries it (``RunSpec.attack``): all a run needs, no lookup."""

    playbook: str
    attack: str
    rule: str
    severity: Severity
    goal: str
    opening: tuple[Move, ...]
    tactics: tuple[str, ...]
    detectors: tuple[Detector, ...]
    pack_items: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Pack name -> its assertions (config models), resolved when the suite loads."""
    file: str = ""
    line: int = 0
    column: int = 0
    """Where the suite asks for the attack (its playbooks entry, else red_team)."""
