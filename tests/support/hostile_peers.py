"""Hostile JSON-RPC peers for gateway tests of the direct POST path (serve with `serve_asgi`,
endpoint at f"{url}/mcp"). Each keeps the requests it received in `.calls`.

- `TricklingPeer(interval, duration)`: answers with an event stream that carries only keep-alive
  comments (or notifications), one every `interval` seconds for `duration` seconds, then ends
  without the response.
- `EventStreamPeer(result)`: answers with the response as one SSE event, JSON written raw
  (U+2028 and other non-ASCII characters unescaped, as a server may legally send them).
- `LargePeer(total_bytes, event_stream=…, announce_length=…)`: a response of about
  `total_bytes`, produced chunk by chunk so the peer itself holds little memory.
- `EchoPeer(mode)`: puts the request's headers (auth included) into a 401 JSON-RPC error body (or, mode
  "business", their bare values into the tool's own error)
  (`"401"`), a 500 plain-text body (`"500"`) or a JSON-RPC error at HTTP 200 (`"rpc"`), the way
  careless servers echo what they got; or (`"garbled"`) in an answer that is not valid JSON-RPC,
  which the SDK logs with a quote of it.

Below the HTTP server, on a raw socket (an HTTP server library sends its headers in one go):
- `HeaderTricklingPeer(interval, count)`: `with HeaderTricklingPeer(...) as url:` reads one
  request, then sends a status line and header bytes one at a time, one every `interval` seconds,
  `count` of them, never ending the headers. `.closed` is set when it sees the client close the
  connection, `.finished` when it sent them all.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from typing import Any

import anyio

from tests.support.asgi import lifespan, request_body

_CHUNK = 64 * 1024


class _Peer:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def app(self):
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                return await lifespan(receive, send)
            body = await request_body(receive)
            request = json.loads(body)
            self.calls.append(request)
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            await self.answer(request, headers, send)

        return app

    async def answer(self, request, headers, send):  # pragma: no cover - overridden
        raise NotImplementedError


async def _start(send, status: int, content_type: bytes, extra: list | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), *(extra or [])]})


class TricklingPeer(_Peer):
    def __init__(self, interval: float, duration: float, *, notifications: bool = False) -> None:
        super().__init__()
        self.interval, self.duration, self.notifications = interval, duration, notifications

    async def answer(self, request, headers, send):
        await _start(send, 200, b"text/event-stream")
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "trabajando"}})
        beat = f"event: message\ndata: {note}\n\n" if self.notifications else ": keep-alive\n\n"
        with anyio.move_on_after(self.duration):
            while True:
                await send({"type": "http.response.body", "body": beat.encode(), "more_body": True})
                await anyio.sleep(self.interval)
        await send({"type": "http.response.body", "body": b""})


class EventStreamPeer(_Peer):
    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result

    async def answer(self, request, headers, send):
        message = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": self.result}, ensure_ascii=False)
        await _start(send, 200, b"text/event-stream")
        body = f": ping\n\nevent: message\nid: 1\ndata: {message}\n\n".encode()
        await send({"type": "http.response.body", "body": body})


class LargePeer(_Peer):
    def __init__(self, total_bytes: int, *, event_stream: bool = False, announce_length: bool = True) -> None:
        super().__init__()
        self.total_bytes, self.event_stream, self.announce_length = total_bytes, event_stream, announce_length
        self.sent = 0

    async def answer(self, request, headers, send):
        head = json.dumps({"jsonrpc": "2.0", "id": request["id"]})[:-1] + ', "result": {"content": [{"type": "text", "text": "'
        tail = '"}], "structuredContent": {"productos": [], "total": 0}}}'
        if self.event_stream:
            head, tail = "event: message\ndata: " + head, tail + "\n\n"
        filler = self.total_bytes - len(head) - len(tail)
        chunk = b"x" * _CHUNK
        extra = [(b"content-length", str(len(head) + filler + len(tail)).encode())] if self.announce_length else []
        await _start(send, 200, b"text/event-stream" if self.event_stream else b"application/json", extra)
        await send({"type": "http.response.body", "body": head.encode(), "more_body": True})
        self.sent = len(head)
        while filler > 0:
            part = chunk if filler >= _CHUNK else chunk[:filler]
            await send({"type": "http.response.body", "body": part, "more_body": True})
            filler -= len(part)
            self.sent += len(part)
        await send({"type": "http.response.body", "body": tail.encode()})


class EchoPeer(_Peer):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    async def answer(self, request, headers, send):
        # The secrets first, so no quoting library cuts them off.
        ordered = sorted(headers.items(), key=lambda item: item[0] not in ("authorization", "x-api-key"))
        echoed = "; ".join(f"{name}: {value}" for name, value in ordered)
        if self.mode == "garbled":
            await _start(send, 200, b"application/json")
            # Short enough that a quoting library shows it whole (pydantic keeps a value's ends).
            body = {"jsonrpc": "2.0", "id": request["id"], "result": headers.get("authorization", "")}
            await send({"type": "http.response.body", "body": json.dumps(body).encode()})
            return
        if self.mode == "business":
            # A tool's own error (isError) quoting the bare values, with no header name a leak rule knows.
            bare = " and ".join(value.split()[-1] for name, value in ordered if name in ("authorization", "x-api-key"))
            await _start(send, 200, b"application/json")
            result = {"content": [{"type": "text", "text": f"refused, you sent {bare}"}], "isError": True}
            await send({"type": "http.response.body", "body": json.dumps(
                {"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()})
            return
        if self.mode == "500":
            await _start(send, 500, b"text/plain")
            await send({"type": "http.response.body", "body": f"crashed handling {echoed}".encode()})
            return
        error = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": f"refused {echoed}"}}
        await _start(send, 401 if self.mode == "401" else 200, b"application/json")
        await send({"type": "http.response.body", "body": json.dumps(error).encode()})


class HeaderTricklingPeer:
    def __init__(self, interval: float, count: int) -> None:
        self.interval, self.count = interval, count
        self.requests = 0
        self.closed, self.finished = threading.Event(), threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(5)

    def _serve(self) -> None:
        try:
            connection, _ = self._sock.accept()
        except OSError:
            return
        with connection:
            received = b""
            while b"\r\n\r\n" not in received:  # the request's head; its body is not needed
                data = connection.recv(65536)
                if not data:
                    self.closed.set()
                    return
                received += data
            self.requests += 1
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Trickle: "
            try:
                connection.sendall(head)
                for _ in range(self.count):
                    if self._stop.is_set():
                        return
                    connection.sendall(b"a")
                    # Wait one interval, noticing a close from the other end meanwhile.
                    readable, _, _ = select.select([connection], [], [], self.interval)
                    if readable and not connection.recv(65536):
                        self.closed.set()
                        return
            except OSError:
                self.closed.set()
                return
            self.finished.set()
