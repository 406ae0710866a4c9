"""A small OpenAI-compatible Chat Completions server that plays a script, for runtime tests.

    model = ScriptedModel([call("soporte__buscar_producto", {"consulta": "router"}), say("Hay 2 routers.")])
    with serve_asgi(model.app()) as url:
        endpoint = f"{url}/v1"                  # POST {endpoint}/chat/completions
    model.requests                              # every request body, in order

Each request gets the next move; the last move repeats (a model that repeats a call forever is
`[call(...)]`). Moves: `say(text)` (prose, may hold a tool call written as text),
`call(name, arguments)` / `calls(...)` (native tool calls; each move takes `usage=`, the token
counts it reports, None for none), `status(code, body)` (an HTTP error),
`garbage()` (a body that is not JSON), `empty()` (no choice), `slow(move, seconds)`,
`held(move, gate)` (answers once `gate` — a threading.Event — is set); a callable move gets the
request body and returns a move (a model that answers what it is asked, for concurrent turns).
`dead_url()` gives a loopback URL where nothing listens. `DroppingModel` is a plain socket
server that answers or drops each request as its script says, keeping connections alive between
requests: a pooled connection the server closes is the stale keep-alive of a real deployment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tests.support.asgi import lifespan, request_body


@dataclass
class Move:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0
    gate: threading.Event | None = None
    hold: float = 60.0  # a gated answer goes out after this long even if the gate stays shut
    headers: tuple[tuple[str, str], ...] = ()


USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def _completion(message: dict[str, Any], finish_reason: str, usage: dict | None = USAGE) -> bytes:
    body = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def say(text: str, *, usage: dict | None = USAGE) -> Move:
    """Prose; `usage` is the answer's token count (None: an answer without `usage`)."""
    return Move(body=_completion({"content": text}, "stop", usage))


def calls(*pairs: tuple[str, dict[str, Any] | str], text: str | None = None, usage: dict | None = USAGE) -> Move:
    """Native tool calls; an argument given as a string is sent as it is (malformed JSON included)."""
    tool_calls = [
        {"id": f"call_{n}", "type": "function",
         "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}
        for n, (name, arguments) in enumerate(pairs)
    ]
    return Move(body=_completion({"content": text, "tool_calls": tool_calls}, "tool_calls", usage))


def call(name: str, arguments: dict[str, Any] | str, text: str | None = None, usage: dict | None = USAGE) -> Move:
    return calls((name, arguments), text=text, usage=usage)


def status(code: int, body: str = '{"error": {"message": "internal error"}}', *, retry_after: str | None = None) -> Move:
    return Move(status=code, body=body.encode(), headers=(("retry-after", retry_after),) if retry_after is not None else ())


def garbage() -> Move:
    return Move(body=b"<html>this is not the API you are looking for", content_type="text/html")


def empty() -> Move:
    return Move(body=json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode())


def slow(move: Move, seconds: float) -> Move:
    return dataclasses.replace(move, delay=seconds)


def held(move: Move, gate: threading.Event, hold: float = 60.0) -> Move:
    return dataclasses.replace(move, gate=gate, hold=hold)


@dataclass
class ScriptedModel:
    script: list  # Moves, or callables that take the request body and return a Move
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    clients: list[tuple[str, int] | None] = field(default_factory=list)  # each request's (host, port)
    arrived: threading.Event = field(default_factory=threading.Event)

    def app(self):
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                return await lifespan(receive, send)
            body = await request_body(receive)
            if scope["path"].rstrip("/") != "/v1/chat/completions" or scope["method"] != "POST":
                await _send(send, 404, b'{"error": {"message": "not found"}}', "application/json")
                return
            self.requests.append(json.loads(body))
            self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
            self.clients.append(tuple(scope["client"]) if scope.get("client") else None)
            move = self.script[min(len(self.requests), len(self.script)) - 1]
            if callable(move):
                move = move(self.requests[-1])
            self.arrived.set()
            if move.gate is not None:
                deadline = time.monotonic() + move.hold
                while not move.gate.is_set() and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
            if move.delay:
                await asyncio.sleep(move.delay)
            await _send(send, move.status, move.body, move.content_type, move.headers)

        return app

    def tool_names(self, request_index: int) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[request_index].get("tools", [])]


async def _send(send, code: int, body: bytes, content_type: str, extra: tuple[tuple[str, str], ...] = ()):
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
               *((name.encode(), value.encode()) for name, value in extra)]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def dead_url() -> str:
    """A loopback URL with nothing listening: connecting is refused at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


class DroppingModel:
    """A Chat Completions server on a plain socket: request n (counted over every connection) is
    answered with `answer` (a Move) when `script[n]` is "answer", or its connection is closed
    without a byte when it is "drop"; the last entry repeats. Answered connections stay open for
    the next request. `requests` counts requests read, `connections` connections accepted.

        with DroppingModel(["answer", "drop", "answer"], say("hola")) as model:
            model.url  # the base URL (…/v1)
    """

    def __init__(self, script: list[str], answer: Move):
        self.script, self.answer = script, answer
        self.requests = self.connections = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}/v1"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.close()
        self._thread.join(10)

    def _serve(self):
        while True:
            try:
                conn, _address = self._server.accept()
            except OSError:  # closed: the block ended
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        with conn:
            reader = conn.makefile("rb")
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return  # the client closed it
                    head += line
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                reader.read(length)
                with self._lock:
                    action = self.script[min(self.requests, len(self.script) - 1)]
                    self.requests += 1
                if action == "drop":
                    return
                body = self.answer.body
                conn.sendall(b"HTTP/1.1 %d OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                             % (self.answer.status, self.answer.content_type.encode(), len(body)) + body)
