"""A webhook receiver on a loopback port, as a channel integration would run one:

    receiver = Receiver([500, 200])            # answers each POST with the next status; the last repeats
    with serve_asgi(receiver.app()) as url:    # callback URL: f"{url}/hook"
        ...
    receiver.received                          # [Received(headers, body, path), ...] in order
    receiver.arrived.wait(30)                  # set at each request

Extra behaviours: `location` (sent with 3xx answers), `retry_after` (a Retry-After header on every
answer), `answer_bytes` (a body that large), `endless` (a 200 whose body never ends),
`before_answer` (called on a thread with the request's number, 1 for the first, once the request
is kept and before it is answered: a fault made while a sender waits for its answer)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.asgi import lifespan, request_body


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self):
        return json.loads(self.body)


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=lambda: [200])
    location: str = ""
    retry_after: str = ""  # a Retry-After header on every answer, as written
    answer_bytes: int = 2
    endless: bool = False
    before_answer: Callable[[int], None] | None = None
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)

    def app(self):
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                return await lifespan(receive, send)
            body = await request_body(receive)
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            self.received.append(Received(scope["path"], headers, body))
            number = len(self.received)
            status = self.statuses[min(number, len(self.statuses)) - 1]
            self.arrived.set()
            if self.before_answer is not None:
                await asyncio.to_thread(self.before_answer, number)
            response_headers = [(b"content-type", b"application/json")]
            if self.location:
                response_headers.append((b"location", self.location.encode()))
            if self.retry_after:
                response_headers.append((b"retry-after", self.retry_after.encode()))
            await send({"type": "http.response.start", "status": status, "headers": response_headers})
            if self.endless:
                for _ in range(600):
                    await send({"type": "http.response.body", "body": b"x" * 1024, "more_body": True})
                    await asyncio.sleep(0.05)
            await send({"type": "http.response.body", "body": b"{" + b" " * max(0, self.answer_bytes - 2) + b"}"})

        return app
