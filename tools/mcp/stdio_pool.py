"""Long-lived stdio sessions (issue 8): one live, negotiated MCP session per (tenant schema, server,
launch spec) per process, reused by every gateway call to that server instead of a child per call.

- **One event loop owns every session, run by the caller itself** (issue 22; shared_loop.py). A
  warm call's thread runs the loop until its own call is answered, as a plain asyncio program
  would: no hand-over to a loop thread and back (two thread wake-ups, as much as the gateway's
  own work on a warm call, and far more on a loaded machine). Calls from several threads at once
  share the loop; calls to one session run concurrently (MCP tells answers apart by request id),
  at most `max_calls_per_session` at once; the rest wait their turn within their deadline (G3).
- **The housekeeper thread** (`asixto-stdio-sessions`) runs the loop between calls (idle
  sessions closed, children reaped, pings after timeouts, output drained) and starts every
  session: a call that finds no live, negotiated session for its server hands its call to the
  housekeeper, which runs the loop until that call is answered. So every child is forked by a
  thread as long-lived as the pool: the supervisor's PR_SET_PDEATHSIG fires when the thread that
  forked it ends, and a caller's thread may end any time.
- **A session belongs to an owner task**: it starts the child and negotiates (bounded by the
  server's timeout × OPERATION_TIMEOUT_FACTOR), then waits until it is told to stop or the
  server's output ends, and closes the session; the transport (tools/mcp/stdio.py) stops the
  child and everything it started, and reaps it.
- **Keyed by (owner, fingerprint)**: the owner is (tenant schema, server id); the fingerprint
  covers every field of `ServerTarget` that shapes the child (command, environment, directory,
  cached negotiation, byte limit, and whatever is added later), all but the per-call ones. A
  changed configuration starts a new session and closes the owner's old one.
- **Crashes**: before a call reuses a session its server is checked alive (/proc); a server that
  died between calls is replaced, not sent a request it cannot answer. A call in flight when the
  server dies fails at once as `process` (with its exit status); the next call starts a new child.
- **Timeouts**: a call past its deadline abandons its request (the SDK sends
  notifications/cancelled) and the session is kept, unless the server then leaves a ping
  unanswered for PING_SECONDS (or its own timeout, if shorter): then it is restarted. Any answer
  counts, an error too (2026-07-28 servers answer ping with "method not found").
- **Bounds**: sessions unused for `idle_seconds` are closed; at most `max_sessions` are live, the
  least recently used one (an idle one first) is closed to make room.
- **Processes**: a forked child forgets its parent's pool (os.register_at_fork) and never touches
  its sessions; `shutdown()` closes every session (atexit, Celery's worker_process_shutdown,
  gunicorn's worker_exit). The children also get SIGTERM if the housekeeper thread dies
  (the supervisor's PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import dataclasses
import hashlib
import json
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Coroutine, Hashable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT
from pydantic import TypeAdapter

from tools.mcp.connection import Exchange, open_session, translate
from tools.mcp.errors import McpError
from tools.mcp.log_redaction import secrets_in_scope
from tools.mcp.shared_loop import Closed, SharedLoop
from tools.mcp.target import OPERATION_TIMEOUT_FACTOR, ServerTarget

log = logging.getLogger(__name__)

DEFAULT_IDLE_SECONDS = 300.0
DEFAULT_MAX_SESSIONS = 32
DEFAULT_MAX_CALLS_PER_SESSION = 16
# Fields of ServerTarget that belong to one call, not to the child: outside the fingerprint.
PER_CALL_FIELDS = frozenset({"timeout", "operation_timeout", "outbound"})
PING_SECONDS = 10.0
# How long a call that lost its server waits for the exit status, for its error message.
EXIT_STATUS_SECONDS = 2.0
# Past its own deadline, how long a caller waits for the loop before giving up on it.
BACKSTOP_SECONDS = 5.0
# How long shutdown waits for every child to be stopped and reaped.
CLOSE_SECONDS = 15.0

_RESULT = TypeAdapter(dict[str, Any])


def fingerprint(target: ServerTarget) -> str:
    """A digest of what the child is made of (secrets included, only as a hash)."""
    spec = {f.name: getattr(target, f.name) for f in dataclasses.fields(target) if f.name not in PER_CALL_FIELDS}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=repr).encode()).hexdigest()


@dataclass(eq=False)
class _Session:
    key: tuple[Hashable, str]
    target: ServerTarget
    limiter: anyio.Semaphore
    exchange: Exchange = field(init=False)
    ready: anyio.Event = field(default_factory=anyio.Event)  # negotiated, or failed to start
    stop: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)  # the child is stopped and reaped
    session: ClientSession | None = None
    failure: McpError | None = None
    users: int = 0  # calls waiting for it or in flight on it
    last_used: float = field(default_factory=time.monotonic)
    checking: bool = False

    def __post_init__(self) -> None:
        self.exchange = Exchange(self.target)

    @property
    def pid(self) -> int | None:
        child = self.exchange.child
        return child.pid if child is not None else None

    def server_alive(self) -> bool:
        child = self.exchange.child
        if child is None or child.pid is None or (child.output_ended is not None and child.output_ended.is_set()):
            return False
        try:
            with open(f"/proc/{child.pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in (b"Z", b"X")  # killed, not yet reaped by its supervisor


class StdioPool:
    """The live stdio sessions of one process (see the module's docstring)."""

    def __init__(
        self,
        *,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_calls_per_session: int = DEFAULT_MAX_CALLS_PER_SESSION,
    ) -> None:
        if idle_seconds <= 0 or max_sessions < 1 or max_calls_per_session < 1:
            raise ValueError("idle_seconds, max_sessions and max_calls_per_session must be positive")
        self.idle_seconds, self.max_sessions, self.max_calls = idle_seconds, max_sessions, max_calls_per_session
        self._lock = threading.Lock()
        self._shared: SharedLoop | None = None  # made on the first call
        self._closed = False
        # Touched only by the thread running the loop.
        self._sessions: OrderedDict[tuple[Hashable, str], _Session] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._checks: set[asyncio.Task[Any]] = set()  # responsiveness checks after timeouts

    @classmethod
    def from_settings(cls) -> StdioPool:
        from django.conf import settings

        return cls(
            idle_seconds=float(getattr(settings, "ASIXTO_STDIO_IDLE_SECONDS", DEFAULT_IDLE_SECONDS)),
            max_sessions=int(getattr(settings, "ASIXTO_STDIO_MAX_SESSIONS", DEFAULT_MAX_SESSIONS)),
            max_calls_per_session=int(getattr(settings, "ASIXTO_STDIO_MAX_CALLS_PER_SESSION", DEFAULT_MAX_CALLS_PER_SESSION)),
        )

    # --- any thread ---------------------------------------------------------------------------

    def call_tool(
        self, *, owner: Hashable, target: ServerTarget, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> dict[str, Any]:
        """One `tools/call` on the owner's live session (started if needed): the raw result dict,
        or McpError. The whole call, a start included, is bounded by `target.total_timeout`."""
        seconds = target.total_timeout
        exchange = Exchange(target, method=f"tools/call {name}")
        try:
            try:
                # A warm session: this thread runs the call (see the module's docstring).
                return self._run(self._call(owner, target, name, arguments, meta, seconds, may_start=False), seconds)
            except _NotLive:
                # None yet, or it died: the housekeeper starts one and runs this call.
                return self._run(self._call(owner, target, name, arguments, meta, seconds, may_start=True), seconds,
                                 by_housekeeper=True)
        except Closed as exc:  # the process is shutting down
            raise McpError("connect", "connect_failed", exchange.params(detail=str(exc))) from None
        except concurrent.futures.TimeoutError:
            raise _timed_out(exchange, seconds) from None
        except (concurrent.futures.CancelledError, asyncio.CancelledError):  # the pool closed under the call
            raise McpError("dropped", "dropped", exchange.params(error_type="SessionClosed")) from None

    def live(self) -> list[tuple[Hashable, int | None]]:
        """(owner, server pid) of every live session, least recently used first."""
        if self._shared is None or self._closed:
            return []
        return self._run(self._live(), CLOSE_SECONDS)

    def checked(self) -> None:
        """Wait until every responsiveness check after a timed-out call has decided (tests)."""
        if self._shared is not None and not self._closed:
            self._run(self._checked(), CLOSE_SECONDS)

    def close(self) -> None:
        """Close every session (each child stopped and reaped) and stop the housekeeper."""
        with self._lock:
            shared, self._shared, self._closed = self._shared, None, True
        if shared is None:
            return
        try:
            shared.run(self._close_all(), CLOSE_SECONDS)
        except Exception:  # a child stuck in the kernel; its supervisor still gets PDEATHSIG
            log.warning("stdio sessions were not all closed within %.0f s", CLOSE_SECONDS, exc_info=True)
        shared.close(CLOSE_SECONDS)

    def _run(self, coroutine: Coroutine[Any, Any, Any], seconds: float, *, by_housekeeper: bool = False) -> Any:
        with self._lock:
            if self._closed:
                coroutine.close()
                raise Closed("this stdio session pool is closed")
            if self._shared is None:
                # Busy while a session starts or closes, or a ping is awaited: tasks besides the
                # janitor and the live sessions' owners.
                self._shared = SharedLoop(name="asixto-stdio-sessions", busy=self._busy)
                self._shared.call_soon(self._spawn, self._janitor())
            shared = self._shared
        return shared.run(coroutine, seconds + BACKSTOP_SECONDS, by_housekeeper=by_housekeeper)

    def _busy(self) -> bool:
        # Read by the housekeeper without the baton: sizes only, as a hint.
        return len(self._tasks) > 1 + len(self._sessions)

    # --- the thread running the loop (one at a time: the baton) -------------------------------

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        # A context of its own: a session outlives the call that started it.
        task = asyncio.get_running_loop().create_task(coroutine, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._checks.discard)
        return task

    async def _checked(self) -> None:
        await asyncio.gather(*self._checks, return_exceptions=True)

    async def _live(self) -> list[tuple[Hashable, int | None]]:
        return [(entry.key[0], entry.pid) for entry in self._sessions.values()]

    async def _call(
        self, owner: Hashable, target: ServerTarget, name: str, arguments: dict[str, Any], meta: dict[str, Any], seconds: float,
        *, may_start: bool,
    ) -> dict[str, Any]:
        entry = self._session_for(owner, target, may_start=may_start)
        exchange = Exchange(target, method=f"tools/call {name}")
        entry.users += 1
        try:
            with anyio.fail_after(seconds):
                # A warm call waits for nothing here: no turn of the loop for a set event or a
                # free place (each turn is a poll of every pipe, P1).
                if not entry.ready.is_set():
                    await entry.ready.wait()
                if entry.failure is not None:
                    raise entry.failure
                exchange.child, exchange.used_cached_discover = entry.exchange.child, entry.exchange.used_cached_discover
                try:
                    entry.limiter.acquire_nowait()
                except anyio.WouldBlock:
                    await entry.limiter.acquire()
                try:
                    if entry.session is None or entry.stop.is_set():
                        raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
                    params = types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta)
                    return await entry.session.send_request(
                        types.CallToolRequest(params=params), _RESULT, request_read_timeout_seconds=target.timeout
                    )
                finally:
                    entry.limiter.release()
        except McpError:
            raise
        except (Exception, BaseExceptionGroup) as exc:
            if _timeout(exc):
                if entry.session is not None:
                    self._checks.add(self._spawn(self._check_responsive(entry)))
                raise _timed_out(exchange, seconds) from exc
            if entry.stop.is_set():
                # The server went away under the call: wait (briefly) for its exit status.
                with anyio.move_on_after(EXIT_STATUS_SECONDS):
                    await entry.ended.wait()
            raise translate(exc, exchange) from exc
        finally:
            entry.users -= 1
            entry.last_used = time.monotonic()

    def _session_for(self, owner: Hashable, target: ServerTarget, *, may_start: bool) -> _Session:
        """The owner's session for this target. Unless `may_start` (the housekeeper), only a
        live, negotiated one: else _NotLive, and the call goes to the housekeeper."""
        key = (owner, fingerprint(target))
        entry = self._sessions.get(key)
        if entry is not None and entry.ready.is_set() and (entry.failure is not None or not entry.server_alive()):
            self._retire(entry)
            entry = None
        if not may_start and (entry is None or not entry.ready.is_set()):
            raise _NotLive
        if entry is None:
            for other in [e for (who, _), e in self._sessions.items() if who == owner]:
                self._retire(other)  # the server's configuration changed: the old child goes
            while len(self._sessions) >= self.max_sessions:
                self._retire(self._least_recently_used())
            entry = _Session(key, dataclasses.replace(target, operation_timeout=None), anyio.Semaphore(self.max_calls))
            self._sessions[key] = entry
            self._spawn(self._own(entry))
        self._sessions.move_to_end(key)
        entry.last_used = time.monotonic()
        return entry

    def _least_recently_used(self) -> _Session:
        return next((e for e in self._sessions.values() if e.users == 0), next(iter(self._sessions.values())))

    def _retire(self, entry: _Session) -> None:
        if self._sessions.get(entry.key) is entry:
            del self._sessions[entry.key]
        entry.stop.set()

    async def _own(self, entry: _Session) -> None:
        """Start the session, keep it until told to stop or the server's output ends, close it."""
        exchange = entry.exchange
        starting_for = entry.target.timeout * OPERATION_TIMEOUT_FACTOR
        with secrets_in_scope(exchange.secrets):  # whatever the SDK logs meanwhile, without them (T7)
            try:
                with anyio.CancelScope(deadline=anyio.current_time() + starting_for) as starting:
                    async with open_session(entry.target, exchange) as session:
                        starting.deadline = math.inf
                        entry.session = session
                        entry.ready.set()
                        await _until_stopped(entry)
                if entry.session is None:
                    entry.failure = translate(TimeoutError(), exchange)
            except McpError as exc:
                entry.failure = exc
            except (Exception, BaseExceptionGroup) as exc:
                if entry.session is None:
                    entry.failure = translate(exc, exchange)
                else:  # it served calls; they learnt of its end from their own requests
                    log.info("stdio session of %s ended: %r", exchange.server, exc)
            finally:
                self._retire(entry)
                entry.ready.set()
                entry.ended.set()

    async def _check_responsive(self, entry: _Session) -> None:
        """After a timed-out call: keep the session if the server still answers a ping."""
        if entry.checking or entry.session is None or entry.stop.is_set():
            return
        entry.checking = True
        try:
            with anyio.fail_after(min(entry.target.timeout, PING_SECONDS)):
                try:
                    await entry.session.send_ping()
                except MCPError as exc:
                    # Any answer proves the server is there (2026-07-28 servers know no ping).
                    if exc.code in (REQUEST_TIMEOUT, types.CONNECTION_CLOSED):
                        raise
        except (Exception, BaseExceptionGroup):
            log.warning("stdio MCP server %s did not answer a ping after a timed-out call; restarting it", entry.exchange.server, exc_info=True)
            self._retire(entry)
        finally:
            entry.checking = False

    async def _janitor(self) -> None:
        while True:
            await anyio.sleep(min(max(self.idle_seconds / 4, 0.05), 5.0))
            now = time.monotonic()
            for entry in list(self._sessions.values()):
                if entry.users == 0 and now - entry.last_used >= self.idle_seconds:
                    self._retire(entry)

    async def _close_all(self) -> None:
        entries = list(self._sessions.values())
        for entry in entries:
            self._retire(entry)
        with anyio.move_on_after(CLOSE_SECONDS - 1):
            for entry in entries:
                await entry.ended.wait()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _until_stopped(entry: _Session) -> None:
    async with anyio.create_task_group() as tg:

        async def server_gone() -> None:
            child = entry.exchange.child
            if child is not None and child.output_ended is not None:
                await child.output_ended.wait()
                entry.stop.set()

        tg.start_soon(server_gone)
        await entry.stop.wait()
        tg.cancel_scope.cancel()


class _NotLive(Exception):
    """No live, negotiated session for the call: the housekeeper is to start one."""


def _timeout(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_timeout(inner) for inner in exc.exceptions)
    return isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT)


def _timed_out(exchange: Exchange, seconds: float) -> McpError:
    return McpError("timeout", "timeout", exchange.params(timeout=exchange.target.timeout, total=round(seconds, 3)))


# --- the process's pool -----------------------------------------------------------------------

_pool: StdioPool | None = None
_pool_lock = threading.Lock()
_left_by_parent: list[StdioPool] = []


def pool() -> StdioPool:
    """This process's pool, created on first use from the settings."""
    global _pool
    current = _pool
    if current is None:
        with _pool_lock:
            if _pool is None:
                _pool = StdioPool.from_settings()
            current = _pool
    return current


def call_tool(*, owner: Hashable, target: ServerTarget, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """`StdioPool.call_tool` on this process's pool."""
    return pool().call_tool(owner=owner, target=target, name=name, arguments=arguments, meta=meta)


def shutdown() -> None:
    """Close this process's sessions (a later call starts a new pool)."""
    global _pool
    with _pool_lock:
        current, _pool = _pool, None
    if current is not None:
        current.close()


def _forget_after_fork() -> None:
    # The parent's children, pipes and housekeeper are the parent's: never closed from here (the
    # thread does not exist in the child). Kept referenced so nothing of it is collected.
    global _pool, _pool_lock
    _pool_lock = threading.Lock()
    if _pool is not None:
        _left_by_parent.append(_pool)
    _pool = None


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(shutdown)
