"""Tasks keep their tenant (T1): a task sent from tenant A's schema runs in A's schema on a real
worker, over the real Redis broker."""

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connection

from asixto.celery import app
from tenants.tasks import worker_ping


@pytest.fixture
def worker(django_db_blocker):
    with django_db_blocker.unblock(), start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        yield


def test_it_runs_a_task_in_the_schema_it_was_sent_from(committed_world, worker):
    """T1: the worker switches to the sender's schema; from public it stays public."""
    with committed_world.schema():
        from_tenant = worker_ping.delay()
    connection.set_schema_to_public()
    from_public = worker_ping.delay()
    schema = committed_world.tenant.schema_name
    assert from_tenant.get(timeout=20) == {"schema": schema, "database_schema": schema}
    assert from_public.get(timeout=20)["schema"] == "public"
