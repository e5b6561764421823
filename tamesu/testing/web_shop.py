"""A small web shop to test browser targets against: real HTTP on loopback, a form, a stock figure
fetched from an API, a signed-in page, and a chat widget that talks to an agent.

    async with serve_web_shop(agent_url) as url:     # http://127.0.0.1:PORT
        ...  # the widget's messages go to POST {agent_url}/chat {"message": ...} -> {"reply": ...}

The widget is built as accessible chat widgets are: a ``role="log"`` list of messages (the user's
marked ``data-role="user"``), a textarea, Enter or a Send button, and a typing indicator marked
``aria-busy`` while the agent thinks. Every request is recorded in ``shop.requests``.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

__all__ = ["WebShop", "serve_web_shop"]

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mochi Shoes</title></head>
<body>
<h1>Mochi Shoes</h1>
<p>Stock of blue sneakers: <span id="stock" style="display:inline-block;width:6em">loading</span></p>
<p id="lang"></p>
<form id="newsletter" onsubmit="event.preventDefault();
  document.getElementById('thanks').textContent = 'Thanks, ' + document.getElementById('email').value;">
  <label>Email <input id="email" type="email"></label>
  <button id="subscribe" type="submit">Subscribe</button>
</form>
<p id="thanks"></p>
<a id="account" href="/account">Your account</a>
<button id="open-chat" onclick="document.getElementById('chat').hidden = false">Chat with us</button>
<section id="chat" hidden>
  <div id="messages" role="log" aria-live="polite">
    <div class="msg agent">Hi! I'm the Mochi Shoes assistant.</div>
  </div>
  <textarea id="chat-input" aria-label="Message"></textarea>
  <button id="send">Send</button>
</section>
<script>
document.getElementById('lang').textContent = 'language: ' + navigator.language;
fetch('/api/stock').then(r => r.json()).then(d => { document.getElementById('stock').textContent = d.stock; })
  .catch(() => { document.getElementById('stock').textContent = 'unavailable'; });
const log = document.getElementById('messages');
const input = document.getElementById('chat-input');
function add(role, text) {
  const item = document.createElement('div');
  item.className = 'msg ' + role;
  if (role === 'user') item.dataset.role = 'user';
  item.textContent = text;
  log.appendChild(item);
  return item;
}
async function send() {
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  add('user', text);
  const typing = add('agent', '...');
  typing.setAttribute('aria-busy', 'true');
  try {
    const r = await fetch('/api/chat', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                        body: JSON.stringify({message: text})});
    const d = await r.json();
    typing.remove();
    add('agent', d.reply);
  } catch (e) { typing.remove(); add('agent', 'Sorry, something went wrong.'); }
}
input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); send(); } });
document.getElementById('send').addEventListener('click', send);
</script>
</body></html>
"""


@dataclass
class WebShop:
    """The shop's pages; ``agent_url`` is where the chat widget's messages go (none: it echoes)."""

    agent_url: str | None = None
    stock: int = 12
    requests: list[str] = field(default_factory=list)
    """``METHOD host:port/path`` of every request, in order."""

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/", self._page)
        app.router.add_get("/account", self._account)
        app.router.add_get("/api/stock", self._stock)
        app.router.add_post("/api/chat", self._chat)
        return app

    @web.middleware
    async def _record(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.host}{request.path}")
        return await handler(request)

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(text=_PAGE, content_type="text/html")

    async def _account(self, request: web.Request) -> web.Response:
        user = request.cookies.get("shop_user")
        body = f"Signed in as {html.escape(user)}" if user else "Please sign in"
        return web.Response(
            text=f"<!doctype html><title>Account</title><p id='who'>{body}</p>", content_type="text/html"
        )

    async def _stock(self, request: web.Request) -> web.Response:
        return web.json_response({"stock": self.stock})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        message = str(body.get("message", ""))
        if self.agent_url is None:
            return web.json_response({"reply": f"echo: {message}"})
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{self.agent_url}/chat", json={"message": message}) as answer:
                return web.json_response({"reply": (await answer.json()).get("reply", "")})


@asynccontextmanager
async def serve_web_shop(
    agent_url: str | None = None, *, shop: WebShop | None = None, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve the shop (talking to the agent at ``agent_url``) and yield its base URL."""
    shop = shop or WebShop(agent_url)
    runner = web.AppRunner(shop.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        yield f"http://{host}:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
