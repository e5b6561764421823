"""A replayed call in the report: the recorded call and the new one side by side, turn by turn.

The replay check of the run (``tamesu.users.replay_user.replay_result``) carries what was recorded: the
caller's turns, the recorded agent's answers and the recording. The recording is embedded with its
own player above the table (the new call's recording follows, in the run's voice block), and the
table puts each recorded answer beside the new agent's turn that answers the same caller turn.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Transcript

__all__ = ["replay_block"]


def _h(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _recording(path: str | None, max_audio_bytes: int) -> str:
    if not path:
        return ""
    file = Path(path)
    if not file.is_file():
        return f'<p class="note">the recorded call {_h(file.name)} is not on this machine</p>'
    size = file.stat().st_size
    with file.open("rb") as f:
        head = f.read(12)
    if file.suffix.lower() != ".wav" or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return f'<p class="note">the recorded call {_h(file.name)} is not a WAV file</p>'
    if size > max_audio_bytes:
        return f'<p class="note">the recorded call {_h(file.name)} is too large to embed ({size // 1024} KiB)</p>'
    data = base64.b64encode(file.read_bytes()).decode("ascii")
    return (
        f'<div class="voice"><p class="legend">Recorded call ({_h(file.name)}): '
        '<span class="c">caller</span> left, <span class="a">agent</span> right</p>'
        f'<audio controls preload="none" src="data:audio/wav;base64,{data}"></audio></div>'
    )


def replay_block(r: RunResult, transcript: Transcript | None, *, max_audio_bytes: int) -> str:
    """The side-by-side table of a replayed run ("" for any other run)."""
    check = next((a for a in r.assertions if a.kind == "replay"), None)
    expected = check.expected if check is not None and isinstance(check.expected, dict) else None
    if expected is None or not isinstance(expected.get("recorded"), list):
        return ""
    agent = [t.text for t in transcript.agent_turns()] if transcript is not None else []
    users = transcript.user_turns() if transcript is not None else []
    first = 1 if transcript is not None and transcript.turns and transcript.turns[0].role == "agent" else 0
    rows = []
    opening = expected.get("opening")
    if opening or first:
        rows.append(
            f"<tr><td>greeting</td><td></td><td>{_h(opening or '')}</td><td>{_h(agent[0] if first else '')}</td></tr>"
        )
    for k, turn in enumerate(expected["recorded"]):
        said = _h(turn.get("say") or "")
        new = agent[first + k] if first + k < len(agent) and k < len(users) else None
        cell = "<em>not reached</em>" if new is None else _h(new)
        rows.append(
            f"<tr><td>{k + 1}</td><td>{said}</td><td>{_h(turn.get('agent') or '')}</td><td>{cell}</td></tr>"
        )
    return (
        "<h4>Recorded and new agent</h4>"
        + _recording(expected.get("recording"), max_audio_bytes)
        + '<table class="replay"><thead><tr><th>turn</th><th>caller (recorded)</th>'
        "<th>recorded agent</th><th>new agent</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
