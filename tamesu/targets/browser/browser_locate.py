"""Finding the element a browser agent's action names, as forgivingly as a person would.

A model names an element by role and accessible name, copied from the accessibility snapshot,
but not always exactly: "Add to Cart" for "Add to cart", two spaces for one, a ``link`` where the
page has a ``button``, or no role at all. The element is looked for by role and exact name, then
by role and name ignoring case and spacing, then by that name in any interactive role or as a
form field's label, then by visible text; only visible elements count. Each try asks the page
once (no waiting), so an action that matches nothing fails at once, and its message lists the
page's elements closest to what was asked, for the model's next action to correct itself.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

__all__ = ["INTERACTIVE_ROLES", "MAX_CANDIDATES", "NoElement", "candidates", "locate", "loose_name"]

INTERACTIVE_ROLES = (
    "button", "link", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch", "tab",
    "menuitem", "menuitemcheckbox", "menuitemradio", "option", "slider", "spinbutton", "listbox",
    "treeitem",
)  # fmt: skip
"""The roles a name is looked for in when the action's role does not find it."""
MAX_CANDIDATES = 15
_LINE = re.compile(r'^\s*- ([a-z]+)(?: "((?:[^"\\]|\\.)*)")?')


class NoElement(LookupError):
    """Nothing on the page matches the action; the message names the page's closest elements."""


def loose_name(name: str) -> re.Pattern[str]:
    """``name`` as a whole accessible name, ignoring case and how the words are spaced."""
    words = name.split()
    return re.compile(r"^\s*" + r"\s+".join(re.escape(w) for w in words) + r"\s*$", re.IGNORECASE)


async def locate(page: Page, role: str, name: str) -> Locator:
    """The first visible element the action names; NoElement listing the page's candidates when none."""
    role, name = role.strip().lower(), " ".join(name.split())
    if not role and not name:
        raise NoElement(await _nothing(page, "the action names no element (give its role and name)", ""))
    for found in _tries(page, role, name):
        if await _visible(found):
            return found.filter(visible=True).first
    asked = f'{role or "element"} "{name}"' if name else role
    raise NoElement(await _nothing(page, f"no element on the page matches {asked}", asked))


def _tries(page: Page, role: str, name: str) -> list[Locator]:
    tries: list[Locator] = []
    if role and name:
        tries.append(page.get_by_role(role, name=name, exact=True))  # type: ignore[arg-type]
        tries.append(page.get_by_role(role, name=loose_name(name)))  # type: ignore[arg-type]
    elif role:
        tries.append(page.get_by_role(role))  # type: ignore[arg-type]
    if name:
        pattern = loose_name(name)
        tries.extend(page.get_by_role(r, name=pattern) for r in INTERACTIVE_ROLES if r != role)  # type: ignore[arg-type]
        tries.append(page.get_by_label(pattern))
        tries.append(page.get_by_text(pattern))
    return tries


async def _visible(found: Locator) -> bool:
    from playwright.async_api import Error as PlaywrightError

    try:
        return await found.filter(visible=True).count() > 0
    except PlaywrightError:  # a role Playwright does not know
        return False


async def _nothing(page: Page, what: str, asked: str) -> str:
    near = await candidates(page, asked)
    listed = ", ".join(near) if near else "no interactive element"
    return f"{what}; the page has: {listed}"


async def candidates(page: Page, asked: str = "") -> list[str]:
    """The page's interactive elements as the snapshot names them (``button "Subscribe"``), those
    closest to ``asked`` first, at most ``MAX_CANDIDATES``."""
    snapshot = await page.locator("body").aria_snapshot()
    seen: list[str] = []
    for line in snapshot.splitlines():
        match = _LINE.match(line)
        if match is None or match.group(1) not in INTERACTIVE_ROLES:
            continue
        label = f'{match.group(1)} "{match.group(2)}"' if match.group(2) else match.group(1)
        if label not in seen:
            seen.append(label)
    if asked:
        key = asked.lower()
        seen.sort(key=lambda c: -difflib.SequenceMatcher(None, key, c.lower()).ratio())
    return [c[:120] for c in seen[:MAX_CANDIDATES]]
