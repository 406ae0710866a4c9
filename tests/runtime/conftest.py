"""Fixtures shared by the runtime tests."""

import pytest

from asixto.celery import app


@pytest.fixture
def eager():
    """Tasks run in the calling process, as soon as they are sent (a turn on commit, a webhook
    delivery and its retries)."""
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before
