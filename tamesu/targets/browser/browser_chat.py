"""A web chat widget as a conversation: type the user's turn, read the agent's answer back.

The suite names no selectors, so the widget is found the way assistive technology finds it: the
messages are the page's chat log (``role="log"``, else the first ``aria-live`` region), and the
input is the last visible text box (a textarea, a text input, a ``contenteditable`` or a
``role="textbox"``). A turn is sent with Enter (a Send button is clicked when Enter left the text
in the box). The answer is every message that appeared in the log after the turn was sent, less
the user's own (a message whose text is the sent text, or marked ``data-role="user"`` or with a
``user`` class), once the log has been quiet for ``QUIET`` seconds; a message still marked
``aria-busy="true"`` (a typing indicator) does not count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tamesu.errors import TargetError

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

__all__ = ["QUIET", "ChatWidget"]

QUIET = 0.6
"""Seconds without a change in the chat log after which the agent's answer counts as complete."""

INPUTS = "textarea, input:not([type]), input[type=text], input[type=search], [contenteditable=true], [role=textbox]"
SEND_BUTTONS = "button:has-text('Send'), [aria-label*='send' i], button[type=submit]"

_HELPERS = """
const tamesuLog = () => document.querySelector('[role=log]') || document.querySelector('[aria-live]');
const tamesuItems = (log) => {
  let node = log;
  while (node.children.length === 1 && node.firstElementChild.children.length > 0) node = node.firstElementChild;
  return Array.from(node.children);
};
"""

_MARK = (
    "() => {"
    + _HELPERS
    + """
  const log = tamesuLog();
  if (!log) return false;
  window.__tamesuSeen = new WeakSet(tamesuItems(log));
  return true;
}"""
)

_EXISTING = (
    "(maxChars) => {"
    + _HELPERS
    + """
  const log = tamesuLog();
  if (!log) return [];
  return tamesuItems(log).filter((e) => !e.matches('[data-role=user], .user') && e.getAttribute('aria-busy') !== 'true')
    .map((e) => (e.innerText || e.textContent || '').trim().slice(0, maxChars)).filter((t) => t);
}"""
)

_READ = (
    "([sent, quietMs, timeoutMs, maxChars]) => new Promise((resolve) => {"
    + _HELPERS
    + """
  const log = tamesuLog();
  if (!log) { resolve(null); return; }
  const seen = window.__tamesuSeen || new WeakSet();
  const mine = (e, text) => text === sent.trim() || e.matches('[data-role=user], .user')
    || e.querySelector('[data-role=user], .user') !== null;
  const fresh = () => tamesuItems(log).filter((e) => !seen.has(e) && e.getAttribute('aria-busy') !== 'true')
    .map((e) => [e, (e.innerText || e.textContent || '').trim()])
    .filter(([e, text]) => text && !mine(e, text)).map(([, text]) => text.slice(0, maxChars));
  let quiet = null;
  const finish = (value) => { observer.disconnect(); clearTimeout(quiet); clearTimeout(limit); resolve(value); };
  const settle = () => { clearTimeout(quiet); if (fresh().length) quiet = setTimeout(() => finish(fresh()), quietMs); };
  const observer = new MutationObserver(settle);
  observer.observe(log, {childList: true, subtree: true, characterData: true, attributes: true});
  const limit = setTimeout(() => finish(null), timeoutMs);
  settle();
})"""
)


class ChatWidget:
    """The chat widget of one page; see the module docstring for how it is found and read."""

    def __init__(self, page: Page, *, max_chars: int) -> None:
        self.page = page
        self.max_chars = max_chars

    async def _input(self) -> Locator:
        boxes = self.page.locator(INPUTS)
        for i in reversed(range(await boxes.count())):
            box = boxes.nth(i)
            if await box.is_visible() and await box.is_enabled():
                return box
        raise TargetError(
            f"the page {self.page.url} shows no chat input (a visible textarea, text input or role=textbox);"
            " open the widget with a step first (action: {click: ...})",
            retryable=False,
        )

    async def messages(self) -> list[str]:
        """Messages already in the log that are not the user's (a widget's greeting)."""
        return list(await self.page.evaluate(_EXISTING, self.max_chars) or [])

    async def say(self, text: str, *, timeout: float) -> list[str]:
        """Type one turn into the widget and wait for the agent's answer (its new messages)."""
        box = await self._input()
        if not await self.page.evaluate(_MARK):
            raise TargetError(
                f"the page {self.page.url} has no chat log (an element with role=log or aria-live)",
                retryable=False,
            )
        if await box.get_attribute("contenteditable") == "true":
            await box.click()
            await box.press_sequentially(text)
        else:
            await box.fill(text)
        await box.press("Enter")
        still = await box.input_value() if await box.evaluate("e => 'value' in e") else await box.inner_text()
        if still.strip() == text.strip() and text.strip():
            button = self.page.locator(SEND_BUTTONS).first
            if await button.count():
                await button.click()
        answer = await self.page.evaluate(
            _READ, [text, int(QUIET * 1000), int(timeout * 1000), self.max_chars]
        )
        if answer is None:
            raise TargetError(f"the chat widget at {self.page.url} showed no answer within {timeout:g}s")
        return list(answer)
