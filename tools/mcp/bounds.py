"""Bounds on what one call reads from a server: bytes (ASIXTO_MAX_RESULT_BYTES) and, on the
gateway's synchronous POST, the call's deadline between chunks.

Both HTTP stacks read a body through `response.stream`; wrapping it counts every byte as it
arrives, so an over-long answer is refused after `limit` bytes instead of being held whole (a
50 MB result used to cost 100 MB of memory per call), and a server trickling keep-alives cannot
stretch a call past its deadline. `ResponseTooLarge` is an `httpx2.StreamError` so the SDK's
readers resolve the request at once (they treat a stream error as a failed answer) instead of
leaving it to wait for its timeout; the SDK transports learn the cause from the budget.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import httpx2


class ResponseTooLarge(httpx2.StreamError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


class DeadlinePassed(Exception):
    """The call's deadline passed while its answer was still coming."""


@dataclass
class ByteBudget:
    """Bytes one call may still read, over every response of the call (an SSE transport's event
    stream and its posts, a legacy handshake and the call)."""

    limit: int | None
    used: int = 0
    exceeded: bool = False

    def announce(self, content_length: str | None) -> None:
        """Refuse at once an answer whose declared length is already over the limit."""
        if self.limit is not None and content_length and content_length.isascii() and content_length.isdigit():
            if self.used + int(content_length) > self.limit:
                self._refuse()

    def take(self, size: int) -> None:
        self.used += size
        if self.limit is not None and self.used > self.limit:
            self._refuse()

    def _refuse(self) -> None:
        self.exceeded = True
        raise ResponseTooLarge(self.limit or 0)


class BoundedStream(httpx.SyncByteStream):
    """A response body that stops at the byte budget and at the deadline (time.monotonic)."""

    def __init__(self, inner: httpx.SyncByteStream, *, budget: ByteBudget, deadline: float | None = None) -> None:
        self._inner, self._budget, self._deadline = inner, budget, deadline

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise DeadlinePassed()
            self._budget.take(len(chunk))
            yield chunk

    def close(self) -> None:
        self._inner.close()


class AsyncBoundedStream(httpx2.AsyncByteStream):
    """The SDK transports' response body, stopped at the byte budget (their deadline is anyio's).
    A declared length over the budget fails on the first read, inside the SDK's reader, which
    turns it into a failed answer (raised from a response hook, it would only be logged)."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, *, budget: ByteBudget, content_length: str | None = None
    ) -> None:
        self._inner, self._budget, self._content_length = inner, budget, content_length

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._budget.announce(self._content_length)
        async for chunk in self._inner:
            self._budget.take(len(chunk))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
