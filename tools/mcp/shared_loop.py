"""An asyncio event loop that the threads of a process share, run by whichever thread needs it
(issue 22): the loop of the live stdio sessions (stdio_pool.py).

- **The caller runs it.** A thread that has a coroutine to run takes the loop's baton and runs
  the loop itself until its coroutine is done, as a plain asyncio program would: no hand-over
  to a loop thread and back. Each hand-over is a thread wake-up, and on a loaded machine every
  wake-up waits for a CPU; a warm stdio call made two of them.
- **A thread that finds the loop taken** (calls from several threads at once) hands its
  coroutine to the loop (`run_coroutine_threadsafe`), where the thread running it runs it too,
  and waits for its result or for the baton, whichever comes first: the thread that ran the loop
  stops as soon as its own coroutine is done, and wakes one waiting thread to take over (one at
  a time: each waits on an event of its own, so a release does not wake them all).
- **The housekeeper** (a thread of its own, as long-lived as the loop) runs the loop for what is
  handed to it (`run(..., by_housekeeper=True)`: what must run on a long-lived thread, such as
  forking a child whose supervisor has PR_SET_PDEATHSIG set, which fires when the thread that
  forked it ends), and, while nobody else runs it, for a few non-blocking turns at a time
  (timers, children's output and exits): every TICK_SECONDS while `busy()` says work is under
  way and just after a run, then less and less often, down to every QUIET_TICK_SECONDS (an idle
  process with live sessions costs next to no CPU).
- A thread that runs an event loop of its own (an async caller) cannot run this one: the
  housekeeper runs its coroutine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

TICK_SECONDS = 0.1
QUIET_TICK_SECONDS = 1.0
TICK_TURNS = 10  # turns of the loop per tick, each a non-blocking poll


class Closed(RuntimeError):
    """The loop is closed (the process is shutting down)."""


_STOP = object()


class SharedLoop:
    """One event loop, its baton and its housekeeper (see the module's docstring)."""

    def __init__(self, *, name: str, busy: Callable[[], bool] = lambda: True) -> None:
        self.loop = asyncio.new_event_loop()
        self._busy = busy
        self._runs = 0  # counts runs, so the housekeeper sees that some happened
        self._closed = False
        # Held by the thread that runs the loop. Threads waiting to run it (their coroutine handed
        # over) are woken one at a time when it is released: each waits on its own event, set
        # then or when its coroutine is done, so many waiting threads are not all woken at once.
        self._baton = threading.Lock()
        self._waiting: list[threading.Event] = []
        self._waiting_lock = threading.Lock()
        self._errands: queue.SimpleQueue[Any] = queue.SimpleQueue()  # (coroutine, future), or _STOP
        self._thread = threading.Thread(target=self._housekeep, name=name, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, Any], seconds: float, *, by_housekeeper: bool = False) -> Any:
        """The coroutine's result (or its exception): run on this thread when the loop is free,
        else by whoever runs it. `seconds` bounds only the wait for another thread: past it,
        concurrent.futures.TimeoutError. Closed once the loop is closed."""
        # A thread that runs an event loop of its own cannot run this one.
        drives = not by_housekeeper and asyncio._get_running_loop() is None
        self._runs += 1  # not exact across threads, nor need it be: a hint
        if drives and self._baton.acquire(blocking=False):
            try:
                if self.loop.is_closed():
                    coroutine.close()
                    raise Closed("the event loop is closed")
                return self.loop.run_until_complete(coroutine)
            finally:
                self._release()
        if self._closed or self.loop.is_closed():
            coroutine.close()
            raise Closed("the event loop is closed")
        if drives:
            future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        else:
            future = concurrent.futures.Future()
            self._errands.put((coroutine, future))
        return self._wait(future, seconds, drives=drives)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(callback, *args)

    def close(self, seconds: float) -> None:
        """Stop the housekeeper and close the loop (what still runs on it is dropped): after
        `run` of whatever closes its work."""
        if self._closed:
            return
        self._closed = True
        self._errands.put(_STOP)
        self._thread.join(seconds)
        if self._baton.acquire(timeout=seconds):  # kept: nobody runs the loop any more
            self.loop.close()

    def _wait(self, future: concurrent.futures.Future[Any], seconds: float, *, drives: bool) -> Any:
        deadline = time.monotonic() + seconds
        wake = threading.Event()
        future.add_done_callback(lambda _done: wake.set())
        try:
            while not future.done():
                if drives:
                    # Waiting before trying: a release after the try wakes this thread.
                    self._wait_for_baton(wake)
                    if self._baton.acquire(blocking=False):
                        self._stop_waiting(wake)
                        try:
                            if not self.loop.is_closed():
                                self.loop.run_until_complete(_settled(future))
                        finally:
                            self._release()
                        continue
                left = deadline - time.monotonic()
                if left <= 0:
                    future.cancel()
                    raise concurrent.futures.TimeoutError
                wake.wait(left)
                wake.clear()  # then the loop's test: done, or try the baton again
        finally:
            if drives:
                self._stop_waiting(wake)
                if not self._baton.locked():
                    self._wake_one()  # a wake-up this thread took without needing it goes on
        return future.result()

    def _wait_for_baton(self, wake: threading.Event) -> None:
        with self._waiting_lock:
            if wake not in self._waiting:
                self._waiting.append(wake)

    def _stop_waiting(self, wake: threading.Event) -> None:
        with self._waiting_lock:
            if wake in self._waiting:
                self._waiting.remove(wake)

    def _wake_one(self) -> None:
        with self._waiting_lock:
            if self._waiting:
                self._waiting.pop(0).set()

    def _release(self) -> None:
        self._baton.release()
        self._wake_one()

    def _housekeep(self) -> None:
        loop = self.loop
        pause, runs_seen = TICK_SECONDS, self._runs
        while True:
            if self._busy() or self._runs != runs_seen:
                pause, runs_seen = TICK_SECONDS, self._runs
            else:
                pause = min(pause * 2, QUIET_TICK_SECONDS)
            try:
                errand = self._errands.get(timeout=pause)
            except queue.Empty:
                if self._baton.acquire(blocking=False):  # else a caller runs the loop right now
                    try:
                        if not loop.is_closed():
                            loop.run_until_complete(_turns(TICK_TURNS))
                    except Exception:
                        log.exception("the shared event loop failed a tick")
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
                    future.set_exception(Closed("the event loop is closed"))
                else:
                    loop.run_until_complete(_fulfil(coroutine, future))
            except Exception:
                log.exception("the shared event loop failed an errand")
            finally:
                self._release()


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
