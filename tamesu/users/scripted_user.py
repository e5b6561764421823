"""The user played by the script alone: no model, fully deterministic.

``make_simulator`` (``tamesu.users.simulator``) gives a run this user when its scenario has no goal; the
model-driven user (``tamesu.users.model_user``) plays the script with it before the model takes over.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import ConfigError
from tamesu.kernel.messages import FileRef, UserTurn
from tamesu.spoken import says
from tamesu.templates import Scope, render, render_text

if TYPE_CHECKING:
    from tamesu.config import Scenario, ScriptFile, ScriptStep
    from tamesu.kernel.transcript import Transcript

__all__ = ["DEFAULT_MAX_TURNS", "ScriptedUser"]

DEFAULT_MAX_TURNS = 10


class ScriptedUser:
    """Plays ``scenario.script`` step by step; no model, fully deterministic.

    ``say`` / ``data`` / ``files`` / ``dtmf`` send a user turn (text rendered with the scope and the
    values captured so far); ``wait_for`` sends nothing until the agent, since the user last spoke,
    has said its text (over one turn or several: a menu read out with pauses), as
    ``tamesu.spoken.says`` compares heard words (case, accents, punctuation and the way numbers
    are written aside, in the run's ``language``); until then the user is ``waiting``. The user stops when the script is done, after ``max_turns``
    turns, or when the agent ended the session.
    """

    reads_at_once = True
    """``next_turn`` is done with the transcript before it returns (it awaits nothing), so the run
    may hand it the transcript being recorded rather than a copy."""

    def __init__(
        self,
        scenario: Scenario | None,
        scope: Scope,
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        suite_dir: Path | str = ".",
        language: str | None = None,
    ) -> None:
        self.steps: list[ScriptStep] = list(scenario.script or []) if scenario is not None else []
        self.scope = scope
        self.max_turns = max_turns
        self._suite_dir = suite_dir
        self.language = language
        self.sent = 0
        self.end_reason: str | None = None
        self.waiting = False
        self._pos = 0
        self._seen = 0
        """Agent turns before this position in the transcript were used by a wait_for already."""

    @property
    def suite_dir(self) -> Path:
        """The folder script files are relative to (made a Path only for a script that sends files)."""
        return Path(self._suite_dir)

    @property
    def script_done(self) -> bool:
        return self._pos >= len(self.steps)

    async def next_turn(self, transcript: Transcript) -> UserTurn | None:
        self.waiting = False
        if transcript.end_reason is not None:
            self.end_reason = transcript.end_reason
            return None
        if self.sent >= self.max_turns:
            self.end_reason = "max_turns"
            return None
        while self._pos < len(self.steps):
            step = self.steps[self._pos]
            if step.wait_for is not None:
                if not self._heard(step.wait_for, transcript):
                    self.waiting = True
                    self.end_reason = "wait_for_unmet"
                    return None
                self._pos += 1
                continue
            turn = self._turn(step, transcript)
            self._pos += 1
            self.sent += 1
            self.end_reason = None
            return turn
        self.end_reason = "done"
        return None

    def _heard(self, text: str, transcript: Transcript) -> bool:
        turns = transcript.turns
        start = self._seen
        for i in range(len(turns) - 1, start - 1, -1):
            if turns[i].role == "user":
                start = i + 1
                break
        wanted = render_text(text, self._scope(transcript))
        heard = " ".join(t.text for t in turns[start:] if t.role == "agent")
        if says(heard, wanted, language=self.language):
            self._seen = len(turns)
            return True
        return False

    def _scope(self, transcript: Transcript) -> Scope:
        return (
            self.scope.child({"captured": dict(transcript.captures)}) if transcript.captures else self.scope
        )

    def _turn(self, step: ScriptStep, transcript: Transcript) -> UserTurn:
        """The user turn of a say / data / files / dtmf step."""
        scope = self._scope(transcript)
        data: dict[str, Any] | None = None
        if step.data is not None:
            data = render(step.data, scope)
        if step.dtmf is not None:
            data = {"dtmf": render_text(step.dtmf, scope)}
        return UserTurn(
            text=render_text(step.say, scope) if step.say is not None else "",
            data=data,
            files=[self._file(f) for f in step.files] if step.files else [],
            source="script",
            reasoning=None,
        )

    def _file(self, item: ScriptFile) -> FileRef:
        """A path (resolved against the suite's folder, which must hold it) or a URI."""
        if item.path is not None:
            full = Path(item.path) if Path(item.path).is_absolute() else self.suite_dir / item.path
            if not full.is_file():
                raise ConfigError("script file not found", file=str(full), path="scenario.script.files")
            return FileRef(path=str(full), name=item.name or full.name, mime=item.mime or _mime(full.name))
        uri = item.uri or ""
        base = uri.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or None
        return FileRef(uri=uri, name=item.name or base, mime=item.mime or _mime(base or ""))


def _mime(name: str) -> str | None:
    return mimetypes.guess_type(name)[0]
