"""Long-lived stdio sessions (issue 8): one live, negotiated MCP session per (tenant schema, server,
launch spec) per process, reused by every gateway call to that server instead of a child per call.

- **One event loop owns every session, run by the caller itself** (issue 22). A warm call's
  thread takes the loop's baton and runs the loop until its own call is answered, as a plain
  asyncio program would: no hand-over to another thread and back, which cost as much as the
  gateway's own work on a warm call (and far more on a loaded machine, where every thread wake-up
  waits for a CPU). A thread that finds the loop run by another (calls from several threads at
  once) hands its call over (`run_coroutine_threadsafe`) and waits for its answer, or for the
  baton, whichever comes first. Calls to one session run concurrently (MCP tells answers apart by
  request id), at most `max_calls_per_session` at once; the rest wait their turn within their
  deadline (G3).
- **The housekeeper thread** (`asixto-stdio-sessions`) runs the loop between calls, every
  TICK_SECONDS for a few non-blocking turns (idle sessions closed, children reaped, pings after
  timeouts, output drained), and starts every session: a call that finds no live, negotiated
  session for its server hands its call to the housekeeper, which runs the loop until that call
  is answered. So every child is forked by the housekeeper, a thread as long-lived as the pool:
  the supervisor's PR_SET_PDEATHSIG fires when the thread that forked it ends, and a caller's
  thread may end any time.
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
import queue
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
# How often the housekeeper runs the loop's due work while no call runs it, and for how many
# turns of the loop (each a non-blocking poll): timers, children's output and exits. With no
# session open or closing (only the janitor's task), it looks in less often.
TICK_SECONDS = 0.05
QUIET_TICK_SECONDS = 1.0
TICK_TURNS = 20
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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None  # the housekeeper
        self._closed = False
        # Held by the thread that runs the loop; released under `_handover`, which is notified
        # then and whenever a handed-over call is answered.
        self._baton = threading.Lock()
        self._handover = threading.Condition()
        # Work for the housekeeper: (coroutine, future) to run the loop for, or _STOP.
        self._errands: queue.SimpleQueue[Any] = queue.SimpleQueue()
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
        except _Closed as exc:  # the process is shutting down
            raise McpError("connect", "connect_failed", exchange.params(detail=str(exc))) from None
        except concurrent.futures.TimeoutError:
            raise _timed_out(exchange, seconds) from None
        except (concurrent.futures.CancelledError, asyncio.CancelledError):  # the pool closed under the call
            raise McpError("dropped", "dropped", exchange.params(error_type="SessionClosed")) from None

    def live(self) -> list[tuple[Hashable, int | None]]:
        """(owner, server pid) of every live session, least recently used first."""
        if self._loop is None or self._closed:
            return []
        return self._run(self._live(), CLOSE_SECONDS)

    def checked(self) -> None:
        """Wait until every responsiveness check after a timed-out call has decided (tests)."""
        if self._loop is not None and not self._closed:
            self._run(self._checked(), CLOSE_SECONDS)

    def close(self) -> None:
        """Close every session (each child stopped and reaped) and stop the housekeeper."""
        with self._lock:
            loop, thread, self._closed = self._loop, self._thread, True
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            self._run_on(loop, self._close_all(), CLOSE_SECONDS)
        except Exception:  # a child stuck in the kernel; its supervisor still gets PDEATHSIG
            log.warning("stdio sessions were not all closed within %.0f s", CLOSE_SECONDS, exc_info=True)
        self._errands.put(_STOP)
        thread.join(CLOSE_SECONDS)
        if self._baton.acquire(timeout=CLOSE_SECONDS):  # nobody runs the loop any more
            loop.close()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise _Closed("this stdio session pool is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._housekeep, args=(loop,), name="asixto-stdio-sessions", daemon=True)
                self._loop, self._thread = loop, thread
                loop.call_soon(self._spawn, self._janitor())
                thread.start()
            return self._loop

    def _run(self, coroutine: Coroutine[Any, Any, Any], seconds: float, *, by_housekeeper: bool = False) -> Any:
        """Run `coroutine` on the loop and return its result: on this thread when the loop is
        free, else handed to whoever runs it (the housekeeper, with `by_housekeeper`)."""
        try:
            loop = self._running_loop()
        except _Closed:
            coroutine.close()
            raise
        return self._run_on(loop, coroutine, seconds, by_housekeeper=by_housekeeper)

    def _run_on(self, loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, Any], seconds: float, *,
                by_housekeeper: bool = False) -> Any:
        # A thread that runs an event loop of its own (an async caller) cannot run this one.
        drives = not by_housekeeper and asyncio._get_running_loop() is None
        if drives and self._baton.acquire(blocking=False):
            try:
                if loop.is_closed():
                    coroutine.close()
                    raise _Closed("this stdio session pool is closed")
                return loop.run_until_complete(coroutine)
            finally:
                self._release()
        if by_housekeeper or not drives:
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            future.add_done_callback(self._answered)
            self._errands.put((coroutine, future))
        else:
            future = asyncio.run_coroutine_threadsafe(coroutine, loop)
            future.add_done_callback(self._answered)
        return self._wait(loop, future, seconds + BACKSTOP_SECONDS, drives=drives)

    def _wait(self, loop: asyncio.AbstractEventLoop, future: concurrent.futures.Future[Any], seconds: float, *,
              drives: bool) -> Any:
        """The future's result, within `seconds`; meanwhile this thread runs the loop itself
        whenever it finds it free (the thread that ran it has its own answer)."""
        deadline = time.monotonic() + seconds
        while not future.done():
            if drives and self._baton.acquire(blocking=False):
                try:
                    if not loop.is_closed():
                        loop.run_until_complete(_settled(future))
                finally:
                    self._release()
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                future.cancel()
                raise concurrent.futures.TimeoutError
            with self._handover:
                if not future.done() and not (drives and not self._baton.locked()):
                    self._handover.wait(left)
        return future.result()

    def _release(self) -> None:
        with self._handover:
            self._baton.release()
            self._handover.notify_all()

    def _answered(self, _future: concurrent.futures.Future[Any]) -> None:
        with self._handover:
            self._handover.notify_all()

    def _housekeep(self, loop: asyncio.AbstractEventLoop) -> None:
        """The housekeeper: runs the loop for the calls handed to it, and every TICK_SECONDS
        for a few turns when no call runs it. `_tasks` is read here without the baton: only its
        size, as a hint."""
        while True:
            try:
                errand = self._errands.get(timeout=TICK_SECONDS if len(self._tasks) > 1 else QUIET_TICK_SECONDS)
            except queue.Empty:
                if self._baton.acquire(blocking=False):  # else a caller runs the loop right now
                    try:
                        if not loop.is_closed():
                            loop.run_until_complete(_turns(TICK_TURNS))
                    except Exception:
                        log.exception("the stdio session loop failed a tick")
                    finally:
                        self._release()
                continue
            if errand is _STOP:
                return
            coroutine, future = errand
            self._baton.acquire()
            try:
                if loop.is_closed():
                    coroutine.close()
                    future.set_exception(_Closed("this stdio session pool is closed"))
                else:
                    loop.run_until_complete(_fulfil(coroutine, future))
            except Exception:
                log.exception("the stdio session loop failed a call")
            finally:
                self._release()

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


class _Closed(RuntimeError):
    pass


_STOP = object()


async def _settled(future: concurrent.futures.Future[Any]) -> None:
    """Until `future` has its result (or exception), whatever it is: its caller raises it."""
    mirror = asyncio.wrap_future(future)
    await asyncio.wait([mirror])
    if not mirror.cancelled():
        mirror.exception()  # retrieved here, so asyncio does not log it as forgotten


async def _turns(count: int) -> None:
    """`count` turns of the loop, each with a non-blocking poll: what is due now runs."""
    for _ in range(count):
        await asyncio.sleep(0)


async def _fulfil(coroutine: Coroutine[Any, Any, Any], future: concurrent.futures.Future[Any]) -> None:
    if not future.set_running_or_notify_cancel():  # its caller gave up before it started
        coroutine.close()
        return
    try:
        result = await coroutine
    except asyncio.CancelledError:
        future.set_exception(concurrent.futures.CancelledError())
    except BaseException as exc:  # noqa: BLE001 - the caller's to raise, in its own thread
        future.set_exception(exc)
    else:
        future.set_result(result)


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
