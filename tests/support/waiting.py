"""Waiting in tests for something another process does: poll a condition until it holds, with a
generous ceiling that only ends a wait gone wrong. How long it took is never asserted (figures
belong in bench/)."""

import time


def wait_for(condition, what: str, ceiling: float = 120.0, interval: float = 0.2):
    """The first truthy value of `condition()`; TimeoutError naming `what` after `ceiling` seconds."""
    deadline = time.monotonic() + ceiling
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {ceiling} s for {what}")
        time.sleep(interval)
    return value
