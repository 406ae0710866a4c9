"""Fault-injection MCP peers for gateway tests: a JSON-RPC endpoint that answers `tools/call`
with scripted results and can drop the connection mid-answer or answer too late. Every request
body is kept, so a test can see exactly what reached the server (ids, `_meta`, arguments).

    peer = FaultyPeer(results=[{"content": [...], "structuredContent": {...}}])
    peer.drop_first = 1        # the first tools/call: headers and half a body, then the socket closes
    peer.delay = 3.0           # answer after 3 s
    peer.delays = [3.0, 20.0]  # or each tools/call its own wait (the last repeats)
    with serve_asgi(peer.app()) as url: ...   # endpoint at f"{url}/mcp"
    peer.requests              # [{"id": 7, "method": "tools/call", "params": {...}}, ...]
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from tests.support.asgi import lifespan, request_body

MODERN_DISCOVER = {
    "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": False}},
    "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
}


class FaultyPeer:
    def __init__(self, results: list[dict[str, Any]] | None = None, *, status: int = 200, headers: dict | None = None):
        self.results = results or [{"content": [{"type": "text", "text": "ok"}], "structuredContent": {}}]
        self.status = status
        self.headers = headers or {}
        self.drop_first = 0
        self.delay = 0.0
        self.delays: list[float] = []
        self.requests: list[dict[str, Any]] = []
        self.http_headers: list[dict[str, str]] = []

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("method") == "tools/call"]

    def app(self):
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                return await lifespan(receive, send)
            body = await request_body(receive)
            request = json.loads(body)
            self.requests.append(request)
            self.http_headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
            if self.status != 200:
                headers = [(b"content-type", b"text/plain"), *((k.encode(), v.encode()) for k, v in self.headers.items())]
                await send({"type": "http.response.start", "status": self.status, "headers": headers})
                await send({"type": "http.response.body", "body": b"unavailable"})
                return
            result = self.results[min(len(self.calls) - 1, len(self.results) - 1)]
            payload = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
            delay = self.delays[min(len(self.calls), len(self.delays)) - 1] if self.delays else self.delay
            if delay:
                await anyio.sleep(delay)
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            if len(self.calls) <= self.drop_first:
                # Half the body, then the connection closes: the answer never arrives whole.
                await send({"type": "http.response.body", "body": payload[: len(payload) // 2], "more_body": True})
                raise ConnectionResetError("dropped on purpose")
            await send({"type": "http.response.body", "body": payload})

        return app
