"""What stands between the playground and the other pages open in the same browser.

The playground listens on loopback, but every page the person visits can make their browser send
requests there. So, before any route runs (a plain ASGI middleware, docs/security.md):

* **DNS rebinding** — a hostile site whose name re-resolves to 127.0.0.1 becomes same-origin with
  the playground, but its requests still carry *its* name: the ``Host`` header must be one of the
  playground's own names (``localhost``, the loopback addresses, the address it is bound to, the
  machine's name, ``--allowed-host``), with the port it listens on; anything else gets 421.
* **CSRF** — a form on another site can POST ``text/plain`` or form data without asking; only
  ``application/json`` is accepted (which no cross-site request may send without a CORS preflight,
  and the playground answers none), and a request whose ``Origin`` or ``Sec-Fetch-Site`` says it
  comes from another site is refused (403) whatever its type.
* **Size** — a body over the API server's 3 MiB (:data:`celmut.limits.MAX_REQUEST_BYTES`, the
  webhook's limit) is refused with 413 as soon as its length is known or counted.
* **The page itself** runs only its own script (``Content-Security-Policy``: no inline script, no
  other origin, not framed), sends no referrer and is never sniffed as another type. Its editor
  (CodeMirror) writes its styles into a ``<style>`` element: the page allows exactly those with a
  nonce made for each load of the page (:func:`page_csp`), no other inline style.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from celmut.limits import MAX_REQUEST_BYTES

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def page_csp(style_nonce: str) -> str:
    """The page's policy: :data:`CSP` with the ``<style>`` elements carrying ``style_nonce`` allowed."""
    return CSP.replace("style-src 'self'", f"style-src 'self' 'nonce-{style_nonce}'")
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = ("GET", "HEAD")


@dataclass(frozen=True)
class Origins:
    """The names and port the playground answers to, and its scheme."""

    names: frozenset[str]  # lower-case host names; IPv6 addresses in brackets
    port: int
    scheme: str = "http"

    @classmethod
    def of(cls, host: str, port: int, *, tls: bool, extra: Iterable[str] = ()) -> Origins:
        names = set(LOOPBACK_NAMES) | {n.lower() for n in extra if n}
        if host not in ("0.0.0.0", "::", ""):
            names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host.lower())
        return cls(frozenset(names), port, "https" if tls else "http")

    def host_allowed(self, value: str) -> bool:
        """Whether a ``Host`` header names the playground (with its port; browsers always send it
        for a port that is not the scheme's default)."""
        name, port = _split_host(value.strip().lower())
        default = 443 if self.scheme == "https" else 80
        return name in self.names and (port if port is not None else default) == self.port

    def origin_allowed(self, value: str) -> bool:
        scheme, _, rest = value.strip().lower().partition("://")
        return scheme == self.scheme and "/" not in rest and self.host_allowed(rest)


def is_loopback(host: str) -> bool:
    """``localhost`` or an address in 127.0.0.0/8 or ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None]:
    if value.startswith("["):
        name, _, rest = value.partition("]")
        port_text = rest.removeprefix(":")
        name += "]"
    else:
        name, _, port_text = value.partition(":")
    if not port_text:
        return name, None
    return (name, int(port_text)) if port_text.isdigit() else ("", None)


class Guard:
    """The ASGI middleware the module describes, in front of the playground's app."""

    def __init__(self, app: App, origins: Origins, max_body: int = MAX_REQUEST_BYTES) -> None:
        self.app = app
        self.origins = origins
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}
        problem = self.refusal(scope["method"], headers)
        if problem is not None:
            await _answer(send, *problem)
            return
        if scope["method"] not in SAFE_METHODS:
            body = await self._body(receive, headers)
            if body is None:
                await _answer(send, 413, f"the request is over {self.max_body} bytes (the webhook's limit, 3 MiB)")
                return
            receive = _replay(body)
        await self.app(scope, receive, _with_headers(send))

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, why) for a request the playground must not answer, else None."""
        if not self.origins.host_allowed(headers.get("host", "")):
            return 421, "this server answers to its own names only (Host header; see docs/security.md)"
        site = headers.get("sec-fetch-site")
        origin = headers.get("origin")
        if method in SAFE_METHODS:
            return None
        if (origin is not None and not self.origins.origin_allowed(origin)) or site not in (
            None,
            "same-origin",
            "none",
        ):
            return 403, "cross-site requests are refused"
        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            return 415, "send JSON (Content-Type: application/json)"
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return 413, f"the request is over {self.max_body} bytes (the webhook's limit, 3 MiB)"
        return None

    async def _body(self, receive: Receive, headers: dict[str, str]) -> bytes | None:
        """The whole body, or None as soon as it grows past the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers") or ()}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
            message = {**message, "headers": [*(message.get("headers") or ()), *extra]}
        await send(message)

    return wrapped


async def _answer(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
