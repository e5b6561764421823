"""What happened in a run besides its turns: the transcript's events, one tagged union.

Each event is a frozen msgspec Struct tagged by ``type`` (``voice_turn``, ``captured``, ...), so a
reader matches on the class and gets typed fields instead of guessing at dictionary keys. Times
are seconds since the run started. An adapter from a plugin records what has no class here as a
``CustomEvent`` (its own name and data); so does a transcript written by an older tamesu whose
event type is no longer known (see ``upgrade_event``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

__all__ = [
    "AgentCleared",
    "AgentDone",
    "AudioDropped",
    "BrowserAction",
    "BrowserBlocked",
    "BrowserDownload",
    "BrowserMocked",
    "BrowserPopup",
    "BrowserRecording",
    "BrowserStep",
    "CallEnded",
    "CallHeld",
    "CallTransferred",
    "CaptureSkipped",
    "Captured",
    "CustomEvent",
    "DetectorSkipped",
    "DtmfSent",
    "DtmfUnsupported",
    "HandoffSignalFailed",
    "IncompleteTurn",
    "Interrupted",
    "RemoteMessage",
    "Resubscribed",
    "RunError",
    "SessionStarted",
    "SipTrace",
    "Tactic",
    "TranscriptEvent",
    "Truncated",
    "VoiceCall",
    "VoiceTurn",
    "upgrade_event",
]


class _Event(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, gc=False):
    at: float = 0.0
    """Seconds since the run started."""


class SessionStarted(_Event, tag="session_start", frozen=True):
    session: str = ""


class RunError(_Event, tag="error", frozen=True):
    """The run ended as an infrastructure error."""

    kind: str = "agent"
    message: str = ""


class IncompleteTurn(_Event, tag="incomplete_turn", frozen=True):
    """The run ended while an agent turn was arriving; the part received is the last turn."""


class DtmfSent(_Event, tag="dtmf", frozen=True):
    """Touch tones sent or received as protocol messages (or heard in the agent's audio)."""

    digits: str
    direction: Literal["sent", "received"] = "sent"


class Interrupted(_Event, tag="interrupt", frozen=True):
    """The caller barged in on the agent."""


class AgentDone(_Event, tag="agent_done", frozen=True):
    """The agent ended the session on this (1-based) agent turn."""

    turn: int


class Captured(_Event, tag="captured", frozen=True):
    name: str
    turn: int


class CaptureSkipped(_Event, tag="capture_skipped", frozen=True):
    name: str
    reason: str


class HandoffSignalFailed(_Event, tag="handoff_signal_failed", frozen=True):
    message: str


class Truncated(_Event, tag="truncated", frozen=True):
    """The transcript stopped keeping ``what`` once it held ``limit`` of it: raw answers (bytes), or
    a turn's ``tool_calls`` (calls; the run then ends as a limit error)."""

    what: str = "raw"
    limit: int = 0


class VoiceCall(_Event, tag="voice_call", frozen=True):
    """A call with audio began: how it is carried, and where its recording is."""

    encoding: str = "pcm16"
    rate: int = 16000
    line: str | None = None
    transcript_source: str = "auto"
    recording: str | None = None
    """The stereo recording, relative to the run directory."""
    channels: list[str] = msgspec.field(default_factory=list)
    recording_starts_at: float | None = None
    """The run-clock time of the recording's first sample."""


class VoiceTurn(_Event, tag="voice_turn", frozen=True):
    """One turn of a call as the caller heard it (run-clock seconds)."""

    turn: int
    caller_start: float | None = None
    caller_end: float | None = None
    first_audio_rx: float | None = None
    first_audio_at: float | None = None
    end_at: float | None = None
    interrupted: bool = False
    text_source: str = "none"
    """agent, stt or none: where the turn's words came from."""
    stt: str | None = None
    agent_transcript: str | None = None
    caller_heard: str | None = None
    """The agent's own transcript of the caller's words this turn (targets that publish one)."""


class AgentCleared(_Event, tag="agent_cleared", frozen=True):
    """The agent dropped the audio it had queued (a Twilio ``clear``, an interruption)."""

    reason: str = "clear"


class AudioDropped(_Event, tag="audio_dropped", frozen=True):
    """The agent's audio was further ahead of real time than ``limits.audio_ahead``: what arrived
    beyond was not played (a flood)."""

    samples: int = 0
    seconds: float = 0.0


class DtmfUnsupported(_Event, tag="dtmf_unsupported", frozen=True):
    """The transport carries no DTMF messages: the digits went down the line as tones."""

    digits: str
    sent_as: str = "tones"


class SipTrace(_Event, tag="sip", frozen=True):
    """One SIP request or response of the call, sent or received (its start line; never a secret)."""

    direction: Literal["sent", "received"]
    line: str
    cseq: str = ""
    detail: str = ""
    """What the message names that matters (a REFER's Refer-To)."""


class CallEnded(_Event, tag="call_ended", frozen=True):
    """Who or what ended a phone call: agent, caller, timeout, error, no_answer or busy."""

    by: str
    detail: str = ""
    """The SIP status or request behind it (``486 Busy Here``, ``BYE``)."""


class CallTransferred(_Event, tag="call_transferred", frozen=True):
    """The agent transferred the call (a SIP REFER) to ``to``."""

    to: str


class CallHeld(_Event, tag="call_held", frozen=True):
    """The agent put the call on hold (``held``) or took it off."""

    held: bool


class RemoteMessage(_Event, tag="a2a_remote", frozen=True):
    """A message the agent under test sent one of the suite's remote agents (``received``), or that
    agent's answer (``replied``); files are named and sized, never kept."""

    agent: str
    direction: Literal["received", "replied"]
    text: str = ""
    data: Any = None
    """The message's data parts, or a truncation mark past ``answer_size``."""
    files: list[dict[str, Any]] = msgspec.field(default_factory=list)
    state: str | None = None
    context: str = ""
    task: str = ""
    truncated: bool = False
    """Only the start of the text was kept: the transcript held ``transcript_size`` already."""


class Resubscribed(_Event, tag="a2a_resubscribe", frozen=True):
    """An A2A stream broke off before the task ended; the target subscribed to the task again."""

    task: str
    reason: str = ""


class BrowserStep(_Event, tag="browser_step", frozen=True):
    """One deterministic step of a browser test (its ``step`` index from 0) and what it found."""

    step: int
    action: str
    passed: bool = True
    message: str = ""
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    """What the step's action reports (an assertion's expected and seen, an a11y check's counts)."""


class BrowserAction(_Event, tag="browser_action", frozen=True):
    """One action the browser agent took while pursuing a goal."""

    action: str
    ok: bool = True
    error: str | None = None
    details: dict[str, str] = msgspec.field(default_factory=dict)
    """The action's arguments as the model gave them (role, name, key, url; typed text as its length)."""


class BrowserRecording(_Event, tag="browser_recording", frozen=True):
    """The browser run's video or GIF (and its trace beside it)."""

    format: str
    path: str


class BrowserBlocked(_Event, tag="browser_blocked", frozen=True):
    """A request, navigation or websocket outside the allowed domains, stopped in the browser; or a
    redirect there (``redirected_from``), which the browser follows on its own: the step failed."""

    url: str
    method: str = "GET"
    redirected_from: str | None = None


class BrowserPopup(_Event, tag="browser_popup", frozen=True):
    """The page opened another window (``window.open``, a link with a target); tamesu closed it."""

    url: str = ""


class BrowserDownload(_Event, tag="browser_download", frozen=True):
    """The page started a download; tamesu does not accept downloads, so nothing was written."""

    url: str = ""
    filename: str = ""


class BrowserMocked(_Event, tag="browser_mocked", frozen=True):
    """A request answered by one of the test's mocks instead of the network."""

    url: str
    method: str = "GET"
    pattern: str = ""


class Tactic(_Event, tag="tactic", frozen=True):
    """A red-team attacker's user turn and the tactic it used."""

    turn: int
    """The 1-based user turn."""
    tactic: str
    source: str = "script"


class DetectorSkipped(_Event, tag="detector_skipped", frozen=True):
    """A red-team detector could not judge this run (no model for it, say)."""

    detector: str
    reason: str = ""


class CustomEvent(_Event, tag="custom", frozen=True):
    """An event with no class of its own: a plugin's, or an older transcript's unknown one."""

    name: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


TranscriptEvent = (
    SessionStarted
    | RunError
    | IncompleteTurn
    | DtmfSent
    | Interrupted
    | AgentDone
    | Captured
    | CaptureSkipped
    | HandoffSignalFailed
    | Truncated
    | VoiceCall
    | VoiceTurn
    | AgentCleared
    | AudioDropped
    | DtmfUnsupported
    | SipTrace
    | CallEnded
    | CallTransferred
    | CallHeld
    | RemoteMessage
    | Resubscribed
    | BrowserStep
    | BrowserAction
    | BrowserRecording
    | BrowserBlocked
    | BrowserPopup
    | BrowserDownload
    | BrowserMocked
    | Tactic
    | DetectorSkipped
    | CustomEvent
)


def upgrade_event(data: Mapping[str, Any]) -> TranscriptEvent:
    """An event of an unversioned transcript (a dict with a ``type``) as its class, its keys the
    class has no field for kept in its ``details`` (when it has them); one that fits no class is
    kept whole as a ``CustomEvent``."""
    try:
        event: TranscriptEvent = msgspec.convert(dict(data), TranscriptEvent, strict=False)  # type: ignore[arg-type]
    except (msgspec.ValidationError, TypeError):
        rest = {k: v for k, v in data.items() if k not in ("type", "at")}
        at = data.get("at")
        return CustomEvent(
            name=str(data.get("type") or "unknown"),
            data=rest,
            at=float(at) if isinstance(at, (int, float)) else 0.0,
        )
    fields = type(event).__struct_fields__
    extra = {k: v for k, v in data.items() if k not in fields and k != "type"}
    if extra and "details" in fields:
        return msgspec.structs.replace(event, details={**extra, **event.details})  # type: ignore[union-attr]
    return event
