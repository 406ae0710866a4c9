"""The stdio sessions' event loop, run by the thread that needs it (issue 22, tools/mcp/shared_loop.py):
a caller runs its coroutine on its own thread (no hand-over to a loop thread), the housekeeper runs
what must run on a long-lived thread and what an async caller hands it, and a thread that finds
the loop taken is answered all the same. No test bounds wall-clock time."""

import asyncio
import threading

import pytest

from tests.support.threads import on_threads
from tools.mcp.shared_loop import Closed, SharedLoop

CEILING = 60.0


@pytest.fixture
def shared():
    made = SharedLoop(name="test-shared-loop")
    yield made
    made.close(CEILING)


async def where():
    return threading.current_thread()


def test_a_caller_runs_its_coroutine_on_its_own_thread(shared):
    """Issue 22: the loop runs on the calling thread: nothing is handed to another thread."""
    assert shared.run(where(), CEILING) is threading.current_thread()


def test_the_housekeeper_runs_what_is_handed_to_it(shared):
    """Issue 22: `by_housekeeper` runs on the pool's own long-lived thread (stdio children are
    forked there, for PR_SET_PDEATHSIG)."""
    ran_on = shared.run(where(), CEILING, by_housekeeper=True)
    assert ran_on is not threading.current_thread() and ran_on.name == "test-shared-loop"


def test_a_caller_inside_a_running_loop_is_served_by_the_housekeeper(shared):
    """Issue 22: a thread that runs an event loop of its own cannot run this one."""

    async def inside():
        return shared.run(where(), CEILING)

    assert asyncio.run(inside()).name == "test-shared-loop"


def test_a_thread_that_finds_the_loop_taken_still_gets_its_answer(shared):
    """Issue 22: thread A runs the loop, waiting for thread B's coroutine to open a gate; B finds
    the loop taken, hands its coroutine over (A's loop runs it and opens the gate), and once A
    has its answer and stops running the loop, B runs it itself to the end of its coroutine."""
    gate = shared.run(_event(), CEILING)
    a_running = threading.Event()
    results = {}

    async def first():
        a_running.set()
        await gate.wait()
        return "a"

    async def second():
        gate.set()
        await asyncio.sleep(0.05)  # still running after A's coroutine is done
        return "b", threading.current_thread()

    def run_a():
        results["a"] = shared.run(first(), CEILING)

    thread = threading.Thread(target=run_a)
    thread.start()
    assert a_running.wait(CEILING)
    results["b"] = shared.run(second(), CEILING)
    thread.join(CEILING)
    assert results["a"] == "a" and results["b"][0] == "b"


def test_after_close_nothing_runs(shared):
    """A closed loop refuses work (the pool answers `connect_failed`) instead of hanging."""
    shared.close(CEILING)
    with pytest.raises(Closed):
        shared.run(where(), CEILING)


async def _event():
    return asyncio.Event()


def test_many_threads_each_get_every_answer(shared):
    """Issue 22: 32 threads run 20 coroutines each at once, some done at once, some after a turn
    or a timer: every one is answered (no thread is left waiting for a loop nobody runs), each
    with its own result."""
    async def echo(value, pause):
        if pause is not None:
            await asyncio.sleep(pause)
        return value

    def caller(number):
        pauses = [(None, 0, 0.001)[(number + step) % 3] for step in range(20)]  # none, one turn of the loop, a timer
        return [shared.run(echo((number, step), pause), CEILING) for step, pause in enumerate(pauses)]

    answers, errors = on_threads(caller, count=32, ceiling=CEILING * 2)
    assert not errors
    assert sorted(answers) == [(number, step) for number in range(32) for step in range(20)]
