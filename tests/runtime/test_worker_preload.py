"""A worker loads the language detector's model when it starts, not on its first turn (P3, P4:
more than half a second of CPU that the first turns, holding their database connection, paid)."""

from celery.contrib.testing.worker import start_worker

from asixto.celery import app
from runtime.routing import language


def test_a_starting_worker_loads_the_language_detector(monkeypatch):
    """P3: before any task runs, the detector is there."""
    monkeypatch.setattr(language, "_identifier", None)  # as in a fresh worker process
    with start_worker(app, pool="threads", concurrency=1, perform_ping_check=False, loglevel="WARNING"):
        assert language._identifier is not None
