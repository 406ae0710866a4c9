"""A worker keeps each tenant's settings for ASIXTO_WORKER_TENANT_CACHE_SECONDS instead of reading
the tenant's row before every task (P4), and a changed setting still reaches its tasks once that
bound has passed (T6). Tasks run eagerly here, through the same signals a worker sends."""

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from tenant_schemas_celery.task import _shared_storage

from asixto.celery import app
from tenants.selectors import current_tenant
from tenants.services import tenant_settings_update


@app.task(name="tests.runtime.tenant_probe")
def tenant_probe():
    """What a task reads of its tenant's settings: the agent's instructions."""
    return current_tenant().agent_instructions


@pytest.fixture
def tenant_cache():
    def use(seconds):
        _shared_storage.clear()
        app.conf.task_tenant_cache_seconds = seconds

    before = app.conf.task_tenant_cache_seconds
    yield use
    _shared_storage.clear()
    app.conf.task_tenant_cache_seconds = before


def run_probe(world) -> tuple[str, int]:
    """The probe as a worker runs it: sent for the tenant's schema, started from the public one.
    Returns what it read and how many statements read the tenants table."""
    connection.set_schema_to_public()
    with CaptureQueriesContext(connection) as queries:
        instructions = tenant_probe.apply(headers={"_schema_name": world.tenant.schema_name}).get()
    return instructions, sum('"tenants_tenant"' in query["sql"] for query in queries)


def test_within_the_bound_a_worker_reads_the_tenant_once(alpha, tenant_cache):
    """P4: with the cache on, the second task of a tenant does not read the tenant's row again."""
    tenant_cache(3600)
    assert run_probe(alpha)[1] == 1
    assert run_probe(alpha)[1] == 0


def test_a_changed_setting_reaches_the_tasks_after_the_bound(alpha, tenant_cache):
    """T6: a tenant's new instructions reach its tasks once the bound has passed (a second here),
    and without the cache (0) at once."""
    tenant_cache(1)
    tenant_settings_update(tenant=alpha.tenant, data={"agent_instructions": "Sé breve."})
    assert run_probe(alpha)[0] == "Sé breve."
    tenant_settings_update(tenant=alpha.tenant, data={"agent_instructions": "Responde en detalle."})
    deadline = time.monotonic() + 30
    while (seen := run_probe(alpha)[0]) != "Responde en detalle." and time.monotonic() < deadline:
        time.sleep(0.1)
    assert seen == "Responde en detalle."

    tenant_cache(0)
    tenant_settings_update(tenant=alpha.tenant, data={"agent_instructions": "Saluda primero."})
    assert run_probe(alpha)[0] == "Saluda primero."
