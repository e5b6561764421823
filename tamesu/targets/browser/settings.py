"""The browser target: a web page driven in Chromium by steps and a browser agent."""

from typing import Any, Literal

from tamesu.config.common import ConfigModel, F, HttpMethod, HttpStatus, StrMap
from tamesu.config.kinds import target_type
from tamesu.config.target_base import TargetConfig

__all__ = ["BrowserAuth", "BrowserMock", "BrowserOptions", "BrowserTarget"]


class BrowserMock(ConfigModel):
    """A request the browser never sends to the network: tamesu answers it."""

    url: str = F("A glob on the full URL (** crosses slashes) or a plain substring.", "**/api/stock*")
    method: HttpMethod | None = F(
        "Only requests with this method; any method when unset.", "GET", default=None
    )
    status: HttpStatus = F("Status code of the made-up answer.", 503, default=200)
    body: Any = F(
        "The made-up answer: a string as it is, anything else as JSON.",
        {"error": "warehouse unavailable"},
        default=None,
    )
    headers: StrMap | None = F(
        "Headers of the made-up answer.",
        {"Content-Type": "application/json", "Retry-After": "30"},
        default=None,
    )
    delay_ms: int = F("Milliseconds to hold the answer back.", 2000, default=0, ge=0)
    abort: bool = F("Make the request fail instead of answering it.", True, default=False)


class BrowserOptions(ConfigModel):
    """How the browser of a browser target is set up."""

    engine: Literal["chromium"] = F(
        "The browser engine; Chromium is the only one.", "chromium", default="chromium"
    )
    viewport: str | None = F(
        "Window size as WIDTHxHEIGHT.", "1280x800", default=None, pattern=r"^[1-9][0-9]*x[1-9][0-9]*$"
    )
    locale: str | None = F("Browser locale; it also sets Accept-Language.", "en-GB", default=None)
    mocks: list[BrowserMock] = F(
        "Requests answered by tamesu from the first page on; the mock action adds more during a test.",
        [{"url": "**/api/stock*", "status": 200, "body": {"stock": 0}}],
        default_factory=list,
    )
    recording: Literal["auto", "gif", "webm", "off"] = F(
        "The screen recording kept with the screenshots: auto picks webm when ffmpeg is present and gif "
        "otherwise; off records nothing.",
        "webm",
        default="auto",
    )


class BrowserAuth(ConfigModel):
    """Start the browser already signed in."""

    storage_state: str | None = F(
        "A saved storage state file (cookies and local storage).", "auth/state.json", default=None
    )


@target_type(
    "browser",
    adapter="tamesu.targets.browser.adapter:BrowserAdapter",
    extra="browser",
    needs="tamesu.extras:chromium_missing",
    summary="A web page in Chromium: deterministic steps, and a chat widget spoken to as a conversation",
)
class BrowserTarget(TargetConfig):
    """A web application tested through its pages."""

    type: Literal["browser"] = F("What kind of system this is; it decides which other keys apply.", "browser")
    url: str = F("The page the browser opens first.", "${AGENT_URL:-http://localhost:8080/chat}")
    browser: BrowserOptions | None = F(
        "Browser set-up: engine, viewport, locale, mocks, recording.",
        {"viewport": "1280x800", "locale": "en-GB", "recording": "gif"},
        default=None,
    )
    auth: BrowserAuth | None = F(
        "Start signed in, from a saved storage state.", {"storage_state": "auth/state.json"}, default=None
    )
    allowed_domains: list[str] | None = F(
        "Domains the browser agent may visit; the url's domain when unset.",
        ["shop.example", "cdn.example"],
        default=None,
    )
