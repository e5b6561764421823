"""The screen recording of a browser run, made from Chromium's screencast frames.

Chromium sends a JPEG frame whenever the page changes (DevTools ``Page.startScreencast``); the
frames are kept (at most ``MAX_FRAMES``) and, when the run stops, encoded by ffmpeg into
``recording.webm`` or ``recording.gif``, each frame shown until the next one came. Without ffmpeg
a GIF is written with Pillow when it is installed. ffmpeg runs as a program with arguments, never
through a shell, and reads only the frames tamesu wrote.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, CDPSession, Page

__all__ = ["MAX_FRAMES", "Recorder", "recording_format"]

MAX_FRAMES = 900
"""The most frames one recording keeps (later ones are dropped)."""
ENCODE_TIMEOUT = 60.0


def recording_format(setting: str) -> str | None:
    """The file format ``recording:`` asks for here: webm, gif, or None (off, or nothing can write it)."""
    if setting == "off":
        return None
    has_ffmpeg = shutil.which("ffmpeg") is not None
    if setting == "webm":
        return "webm" if has_ffmpeg else None
    if setting == "gif" or not has_ffmpeg:
        if has_ffmpeg:
            return "gif"
        try:
            import PIL  # noqa: F401
        except ImportError:
            return None
        return "gif"
    return "webm"


class Recorder:
    """Collects one page's screencast frames and writes them as one file."""

    def __init__(self, fmt: str, path: Path) -> None:
        self.fmt = fmt
        self.path = path
        self.frames: list[tuple[float, bytes]] = []
        self.cdp: CDPSession | None = None
        self._acks: set[asyncio.Task[None]] = set()

    async def start(self, context: BrowserContext, page: Page) -> None:
        self.cdp = await context.new_cdp_session(page)
        self.cdp.on("Page.screencastFrame", self._frame)
        await self.cdp.send("Page.startScreencast", {"format": "jpeg", "quality": 70})

    def _frame(self, params: dict[str, Any]) -> None:
        if len(self.frames) < MAX_FRAMES:
            stamp = float(params.get("metadata", {}).get("timestamp") or 0.0)
            self.frames.append((stamp, base64.b64decode(params["data"])))
        if self.cdp is not None:
            task = asyncio.ensure_future(self._ack(params["sessionId"]))
            self._acks.add(task)
            task.add_done_callback(self._acks.discard)

    async def _ack(self, session_id: int) -> None:
        try:
            assert self.cdp is not None
            await self.cdp.send("Page.screencastFrameAck", {"sessionId": session_id})
        except Exception:
            return

    async def finish(self) -> Path | None:
        """Write the recording; None when no frame came or encoding failed (a recording never
        fails a run)."""
        cdp, self.cdp = self.cdp, None
        if cdp is not None:
            try:
                await cdp.send("Page.stopScreencast")
                await cdp.detach()
            except Exception:
                pass
        if not self.frames:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if shutil.which("ffmpeg"):
                await self._ffmpeg()
            else:
                await asyncio.to_thread(self._pillow)
        except Exception:
            return None
        return self.path if self.path.is_file() else None

    def _durations(self) -> list[float]:
        stamps = [t for t, _ in self.frames]
        gaps = [max(0.04, b - a) for a, b in itertools.pairwise(stamps)]
        return [*gaps, 1.0]

    async def _ffmpeg(self) -> None:
        with tempfile.TemporaryDirectory(prefix="tamesu-rec-") as tmp:
            lines = []
            for i, ((_, jpeg), seconds) in enumerate(zip(self.frames, self._durations())):
                frame = Path(tmp) / f"{i:05d}.jpg"
                frame.write_bytes(jpeg)
                lines += [f"file '{frame.name}'", f"duration {seconds:.3f}"]
            lines.append(f"file '{len(self.frames) - 1:05d}.jpg'")
            (Path(tmp) / "frames.txt").write_text("\n".join(lines) + "\n")
            codec = (
                ["-c:v", "libvpx", "-b:v", "1M", "-deadline", "realtime", "-cpu-used", "8"]
                if self.fmt == "webm"
                else []
            )
            args = ["-hide_banner", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0"]
            args += ["-i", "frames.txt", "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2", "-vsync", "vfr"]
            proc = await asyncio.create_subprocess_exec(
                "ffmpeg", *args, *codec, str(self.path.resolve()),
                cwd=tmp, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await asyncio.wait_for(proc.wait(), ENCODE_TIMEOUT)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()

    def _pillow(self) -> None:
        import io

        from PIL import Image

        images = [Image.open(io.BytesIO(jpeg)).convert("P") for _, jpeg in self.frames]
        durations = [int(s * 1000) for s in self._durations()]
        images[0].save(self.path, save_all=True, append_images=images[1:], duration=durations, loop=0)
