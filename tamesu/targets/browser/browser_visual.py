"""The ``visual`` step: the page compared with a baseline screenshot kept next to the suite.

A baseline is ``visual/NAME.png`` beside the suite file; ``tamesu run --update-golden`` writes it
from the current page. The comparison counts the pixels that differ by more than a small amount
in any channel (anti-aliasing and JPEG-free rendering noise stay under it); the step fails when
their share of the image exceeds ``tolerance``. Elements named in ``mask`` (a clock, a date) are
painted over before the screenshot, in the baseline as in every later run. On a failure the
actual screenshot and a difference image are written next to the run's other files.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import MissingExtraError, TargetError

if TYPE_CHECKING:
    from playwright.async_api import Page

__all__ = ["CHANNEL_NOISE", "DEFAULT_TOLERANCE", "Visual", "compare", "visual_spec"]

DEFAULT_TOLERANCE = 0.0
"""The share of pixels that may differ when the step names no tolerance."""
CHANNEL_NOISE = 24
"""A pixel differs when one of its channels moved by more than this (of 255)."""


@dataclass(frozen=True)
class Visual:
    name: str
    mask: tuple[str, ...] = ()
    tolerance: float = DEFAULT_TOLERANCE
    full_page: bool = False


def visual_spec(arg: Any) -> Visual:
    """The step's argument (a name, or ``{name, mask, tolerance, full_page}``) checked."""
    if isinstance(arg, str):
        arg = {"name": arg}
    if not isinstance(arg, dict) or not isinstance(arg.get("name"), str) or not arg["name"]:
        raise TargetError("a visual step needs a name (visual: NAME or { name, mask, tolerance })",
                          retryable=False, kind="config")  # fmt: skip
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", arg["name"])[:80]
    mask = arg.get("mask") or []
    tolerance = arg.get("tolerance", DEFAULT_TOLERANCE)
    if not isinstance(mask, list) or not all(isinstance(m, str) for m in mask):
        raise TargetError("visual.mask is a list of selectors", retryable=False, kind="config")
    if not isinstance(tolerance, (int, float)) or not 0 <= tolerance <= 1:
        raise TargetError(
            "visual.tolerance is a share of the pixels, from 0 to 1", retryable=False, kind="config"
        )
    return Visual(name, tuple(mask), float(tolerance), bool(arg.get("full_page")))


async def screenshot(page: Page, spec: Visual) -> bytes:
    masks = [page.locator(ref) for ref in spec.mask]
    return await page.screenshot(
        full_page=spec.full_page, mask=masks, animations="disabled", caret="hide", mask_color="#FF00FF"
    )


def compare(baseline: bytes, actual: bytes) -> tuple[float, bytes | None]:
    """The share of pixels that differ, and a difference image (None when the sizes differ:
    then the share is 1)."""
    try:
        from PIL import Image, ImageChops
    except ImportError:
        raise MissingExtraError("Pillow (for visual steps)", extra="browser") from None
    old = Image.open(io.BytesIO(baseline)).convert("RGB")
    new = Image.open(io.BytesIO(actual)).convert("RGB")
    if old.size != new.size:
        return 1.0, None
    diff = ImageChops.difference(old, new)
    bands = [band.point(lambda v: 255 if v > CHANNEL_NOISE else 0) for band in diff.split()]
    changed = ImageChops.lighter(ImageChops.lighter(bands[0], bands[1]), bands[2])
    count = changed.histogram()[255]
    out = io.BytesIO()
    changed.save(out, format="PNG")
    return count / (old.size[0] * old.size[1]), out.getvalue()


def baseline_path(suite_dir: Path, spec: Visual) -> Path:
    return suite_dir / "visual" / f"{spec.name}.png"


def size_of(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG header (no decoding)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def describe(share: float, spec: Visual, old: bytes, new: bytes) -> str:
    if share >= 1.0 and size_of(old) != size_of(new):
        (w0, h0), (w1, h1) = size_of(old), size_of(new)
        return f"the page is {w1}x{h1}, the baseline {spec.name} {w0}x{h0}"
    return f"{share:.2%} of the pixels differ from the baseline {spec.name} (tolerance {spec.tolerance:.2%})"
