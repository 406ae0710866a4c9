"""stdio transport: run an operator-approved MCP server as a child process, and always reap it.

Not the SDK's `stdio_client` (mcp/client/stdio.py), because SPEC M3 asks for things it does
not give: it merges a default environment (HOME, LOGNAME, PATH, SHELL, TERM, USER) into the
child's (`get_default_environment() | server.env`), sends the child's stderr unbounded to our
own stderr, hides the pid and exit status, and on shutdown waits up to ~4 s before SIGKILL.

Here the child gets exactly `target.env` and a private working directory (a temp dir owned
by the user it runs as, removed afterwards, unless the target names one). It is started by a
small supervisor (tools/mcp/stdio_supervisor.py) in a session of its own:

- Nothing it starts outlives it. The supervisor is a child subreaper: whatever the server
  spawns, even in a new session, stays below it, and is SIGKILLed and reaped when the server
  exits or is stopped.
- It cannot read the platform's secrets. When the platform runs as root, the server runs as
  an unprivileged user (ASIXTO_STDIO_USER; by default `asixto-mcp` if that user exists, else
  `nobody`), which cannot read the platform's /proc/<pid>/environ. With ASIXTO_STDIO_USER set
  to the empty string it keeps the platform's user (development and tests), without any
  capability, and the platform's processes are non-dumpable (asixto/process.py), so it still
  cannot read their environment or memory.
- It cannot reach the platform's database and Redis: as root, its uid is fenced off their ports
  and their socket directories are hidden from it (tools/mcp/fence.py).

stdout is read line by line into the SDK's message streams. One message may be at most
`target.max_response_bytes` (the gateway's ASIXTO_MAX_RESULT_BYTES; `MAX_MESSAGE_BYTES` when the
target sets none): past it the rest of the line is skipped, never held, and when the line is an
answer whose request id can be read (its first or last bytes, where SDK servers write it) the
request gets a `too_large` error in its place, so the session, which may be shared by other
calls (tools/mcp/stdio_pool.py), goes on; any other over-long line ends the session. During a
listing, a line that is byte for byte a page already checked is not parsed (tools/mcp/repeats.py).
stderr is drained all the time, so a noisy child never blocks on a full pipe, and only its last
`STDERR_TAIL_BYTES` are kept for the error message. On the way out
(success, failure, timeout or cancellation, shielded) stdin is closed; a healthy server gets
`EXIT_GRACE_SECONDS` to exit on its own (a failed one gets none); then the supervisor's process
group gets SIGTERM, on which the supervisor SIGKILLs every process below it, and the
supervisor is waited for, which reaps it (no zombie).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from tools.mcp import fence
from tools.mcp.errors import redact, shorten
from tools.mcp.repeats import PageBook
from tools.mcp.target import ServerTarget

logger = logging.getLogger(__name__)

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]

STDERR_TAIL_BYTES = 4096
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
EXIT_GRACE_SECONDS = 0.5
# Only a process stuck in the kernel (uninterruptible sleep) outlives SIGKILL for this long.
REAP_TIMEOUT_SECONDS = 5.0
SUPERVISOR = str(Path(__file__).with_name("stdio_supervisor.py"))
# Who stdio servers run as when the platform is root; the first that exists, unless configured.
DEFAULT_STDIO_USERS = ("asixto-mcp", "nobody")
# The child's last words (a traceback) may still be in the pipe when it exits; give the drain
# this long to read them before the error message is written.
STDERR_SETTLE_SECONDS = 0.5
# What is kept of an over-long line, at each end, to find the id of the request it answers.
ID_WINDOW_BYTES = 256
# An over-long answer is replaced by an error carrying this process's own mark in its data, so a
# server cannot pass its own error off as the platform's refusal.
TOO_LARGE_MARK = "com.asixto/tooLarge"
TOO_LARGE_NONCE = secrets.token_hex(16)
_JSON_ID = rb'(-?\d{1,18}|"[^"\\]{0,100}")'
# Python SDK servers write `{"jsonrpc":"2.0","id":…,"result":…}`; the TypeScript SDK writes
# `{"result":…,"jsonrpc":"2.0","id":…}`. Only an answer (result or error) counts, not a request.
_ID_AT_START = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _JSON_ID + rb'\s*,\s*"(?:result|error)"')
_ID_AT_END = re.compile(rb'"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*' + _JSON_ID + rb'\s*\}\s*$')


@dataclass
class ChildProcess:
    """What became of one child: read after the transport has closed, for the error message."""

    program: str
    pid: int | None = None
    returncode: int | None = None
    killed: bool = False  # SIGKILL reached it while it was still running
    reaped: bool = False
    stderr_bytes: int = 0
    bad_output: str | None = None  # why its stdout stopped being MCP, if it did
    too_large: int | None = None  # the limit an over-long line passed, when it ended the session
    book: PageBook | None = None  # a listing's pages already checked, recognised by their bytes (repeats.py)
    # Set (by the transport) once stdout has ended: the server is gone or going.
    output_ended: anyio.Event | None = field(default=None, repr=False)
    _stderr_tail: bytearray = field(default_factory=bytearray, repr=False)

    @property
    def exited_on_its_own(self) -> bool:
        return self.returncode is not None and not self.killed

    def note_stderr(self, chunk: bytes) -> None:
        self.stderr_bytes += len(chunk)
        self._stderr_tail += chunk
        if len(self._stderr_tail) > STDERR_TAIL_BYTES:
            del self._stderr_tail[:-STDERR_TAIL_BYTES]

    def stderr_tail(self, secrets: list[str]) -> str:
        """The last few KB of stderr as text, with the target's secrets blanked out."""
        text = self._stderr_tail.decode("utf-8", errors="replace").strip()
        return redact(text, secrets)

    def describe_exit(self) -> str:
        if self.returncode is None:
            return "is still running"
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"was killed by {name}"
        return f"exited with status {self.returncode}"


@asynccontextmanager
async def stdio_streams(
    target: ServerTarget, child: ChildProcess
) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """Start the child and yield the SDK's (read, write) message streams; always reap on exit.

    Raises OSError if the program cannot be started (missing, not executable, bad cwd).
    """
    run_as = target.user if target.user is not None and os.geteuid() == 0 else stdio_user()
    own_cwd = target.cwd is None
    cwd = tempfile.mkdtemp(prefix="asixto-mcp-") if own_cwd else target.cwd
    status_read, status_write = os.pipe()
    try:
        if own_cwd and run_as is not None:
            os.chown(cwd, *run_as)  # its own, writable directory
        uid, gid = (str(run_as[0]), str(run_as[1])) if run_as is not None else ("-", "-")
        hide = await anyio.to_thread.run_sync(fence.prepare, run_as[0] if run_as and run_as[0] else None)
        process = await anyio.open_process(
            [sys.executable, "-I", "-S", SUPERVISOR, str(status_write), uid, gid, ":".join(hide) or "-", "--", *target.argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(target.env),
            # Its own session and process group: one signal reaches the supervisor and the server.
            start_new_session=True,
            pass_fds=(status_write,),
        )
        os.close(status_write)
        status_write = -1
        try:
            child.pid = await _started(process, status_read)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _stop(process, child, graceful=False)
                with anyio.move_on_after(REAP_TIMEOUT_SECONDS):
                    await process.aclose()
            raise
        failed = False
        child.output_ended = anyio.Event()
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
        stderr_done = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_stdout, process, read_send, child, target.max_response_bytes or MAX_MESSAGE_BYTES)
                tg.start_soon(_write_stdin, process, write_receive, read_send, child.book)
                tg.start_soon(_drain_stderr, process, child, stderr_done)
                try:
                    async with read_receive, write_send:
                        yield read_receive, write_send
                except BaseException:
                    failed = True
                    raise
                finally:
                    with anyio.CancelScope(shield=True):
                        await _stop(process, child, graceful=not failed)
                        with anyio.move_on_after(STDERR_SETTLE_SECONDS):
                            await stderr_done.wait()
                    tg.cancel_scope.cancel()
        finally:
            # Reached even if the task group itself failed; a no-op when _stop already ran.
            with anyio.CancelScope(shield=True):
                await _stop(process, child, graceful=False)
                with anyio.move_on_after(REAP_TIMEOUT_SECONDS):
                    await process.aclose()
    finally:
        for fd in (status_read, status_write):
            if fd >= 0:
                os.close(fd)
        if own_cwd:
            shutil.rmtree(cwd, ignore_errors=True)


def stdio_user() -> tuple[int, int] | None:
    """(uid, gid) stdio servers run as, or None to keep the platform's own user.

    Only root can switch; ASIXTO_STDIO_USER names the user (empty: keep the platform's user)."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("ASIXTO_STDIO_USER")
    if name == "":
        return None
    return _user_ids(name)


@lru_cache(maxsize=8)
def _user_ids(name: str | None) -> tuple[int, int] | None:
    for candidate in (name,) if name else DEFAULT_STDIO_USERS:
        try:
            entry = pwd.getpwnam(candidate)
        except KeyError:
            continue
        return (entry.pw_uid, entry.pw_gid) if entry.pw_uid != 0 else None
    wanted = name or " or ".join(DEFAULT_STDIO_USERS)
    raise OSError(errno.EINVAL, f"there is no user {wanted} to run it as (ASIXTO_STDIO_USER)")


async def _started(process: Process, status_read: int) -> int:
    """The server's pid once the supervisor has started it; OSError if it could not."""
    report = b""
    while not report.endswith(b"\n"):
        await anyio.wait_readable(status_read)
        chunk = os.read(status_read, 64)
        if not chunk:
            break
        report += chunk
    word, _, value = report.decode("ascii", "replace").strip().partition(" ")
    if word == "started":
        return int(value)
    code = int(value) if word == "failed" and value.isascii() and value.isdigit() else errno.ECHILD
    with anyio.move_on_after(REAP_TIMEOUT_SECONDS):
        await process.wait()
    raise OSError(code, os.strerror(code))


async def _read_stdout(
    process: Process, send: MemoryObjectSendStream[SessionMessage | Exception], child: ChildProcess, limit: int
) -> None:
    """Turn stdout lines into SDK messages; closing `send` tells the session the server is gone.

    At most `limit` bytes of a line (plus one read's worth) are held; see `_OverLongLine`."""
    assert process.stdout is not None
    pending = bytearray()
    skipped: _OverLongLine | None = None
    async with send:
        try:
            async for chunk in process.stdout:
                start = 0
                while (newline := chunk.find(b"\n", start)) >= 0:
                    piece, start = chunk[start:newline], newline + 1
                    if skipped is None and len(pending) + len(piece) > limit:
                        skipped = _OverLongLine(pending)
                        pending.clear()
                    if skipped is not None:
                        skipped.take(piece)
                        message, skipped = skipped.refusal(limit, child), None
                        if message is None:
                            return
                        await send.send(message)
                        continue
                    pending += piece
                    if pending.strip():
                        message = _parse_noting(bytes(pending), child)
                        if message is None:
                            return
                        await send.send(message)
                    pending.clear()
                if skipped is not None:
                    skipped.take(chunk[start:])
                else:
                    pending += chunk[start:]
                    if len(pending) > limit:
                        skipped = _OverLongLine(pending)
                        pending.clear()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return  # our own shutdown closed a stream, or the session left
        finally:
            if child.output_ended is not None:
                child.output_ended.set()


class _OverLongLine:
    """A line past the limit, skipped as it comes: only its first and last ID_WINDOW_BYTES are
    kept, to find which request it answers."""

    def __init__(self, start: bytes | bytearray) -> None:
        self.head = self.tail = b""
        self.take(start)

    def take(self, data: bytes | bytearray) -> None:
        if len(self.head) < ID_WINDOW_BYTES:
            self.head += bytes(data[: ID_WINDOW_BYTES - len(self.head)])
        self.tail = (self.tail + bytes(data[-ID_WINDOW_BYTES:]))[-ID_WINDOW_BYTES:]

    def refusal(self, limit: int, child: ChildProcess) -> SessionMessage | None:
        """The error that answers the request in its place, or None (and the session ends) when
        the line names no request id."""
        found = _ID_AT_START.match(self.head) or _ID_AT_END.search(self.tail)
        if found is None:
            child.too_large = limit
            child.bad_output = f"wrote a message larger than {limit} bytes"
            return None
        data = {TOO_LARGE_MARK: TOO_LARGE_NONCE, "limit": limit}
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"answer larger than {limit} bytes", data=data)
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=json.loads(found.group(1)), error=error))


def too_large_limit(data: object) -> int | None:
    """The limit named by an error this module put in place of an over-long answer, else None."""
    if isinstance(data, dict) and data.get(TOO_LARGE_MARK) == TOO_LARGE_NONCE and isinstance(data.get("limit"), int):
        return data["limit"]
    return None


def _parse_noting(line: bytes, child: ChildProcess) -> SessionMessage | None:
    """A line as a message; during a listing, the very bytes of a page already checked are not
    parsed (the book's stub stands in for them), and the digest of an answer is noted."""
    if child.book is None:
        return _parse(line, child)
    line, digest = child.book.answer_line(line)
    message = _parse(line, child)
    if digest is not None and message is not None and isinstance(message.message, types.JSONRPCResponse):
        child.book.noted(message.message.id, digest)
    return message


def _parse(line: bytes, child: ChildProcess) -> SessionMessage | None:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        # Stray prints on stdout corrupt the protocol; fail now rather than wait for a timeout.
        sample = shorten(line[:200].decode("utf-8", errors="replace"), 120)
        child.bad_output = f"wrote a line to stdout that is not JSON-RPC ({sample!r})"
        return None


async def _write_stdin(
    process: Process,
    receive: MemoryObjectReceiveStream[SessionMessage],
    read_send: MemoryObjectSendStream[SessionMessage | Exception],
    book: PageBook | None = None,
) -> None:
    assert process.stdin is not None
    async with receive:
        try:
            async for session_message in receive:
                line = (session_message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")
                if book is not None:
                    book.posting(line)
                await process.stdin.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The child closed its stdin: nothing sent from now on can be answered, so end the
            # session's read side too instead of letting requests wait for their timeout.
            await read_send.aclose()


async def _drain_stderr(process: Process, child: ChildProcess, done: anyio.Event) -> None:
    assert process.stderr is not None
    try:
        async for chunk in process.stderr:
            child.note_stderr(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        done.set()


async def _stop(process: Process, child: ChildProcess, *, graceful: bool) -> None:
    """Close stdin, give a healthy child a moment, then have the supervisor kill everything it
    started, and wait for the supervisor's exit (reap)."""
    if child.reaped:
        return
    assert process.stdin is not None
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await process.stdin.aclose()
    if graceful:
        with anyio.move_on_after(EXIT_GRACE_SECONDS):
            await process.wait()
    running = process.returncode is None
    if running:
        # The supervisor's group: the supervisor answers SIGTERM by SIGKILLing every process
        # below it (the server, its group, whatever it moved to a session of its own). Not
        # once the supervisor is reaped: its pid, and so this group id, may be someone else's.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
    with anyio.move_on_after(REAP_TIMEOUT_SECONDS):
        await process.wait()
    # The supervisor exits with the server's status (or dies of the same signal).
    child.returncode = process.returncode
    # A child that had already died (its exit not yet noticed) keeps its own exit status.
    child.killed = running and child.returncode in (-signal.SIGKILL, -signal.SIGTERM)
    if child.returncode is None:
        logger.warning("MCP server supervisor %d survived SIGTERM for %.0f s", process.pid, REAP_TIMEOUT_SECONDS)
    else:
        child.reaped = True
