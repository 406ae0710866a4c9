"""Test tasks for tests/support/records_worker.py: calls through the gateway on a worker."""

import os

from celery import shared_task


@shared_task
def make_call_records(schema, count):
    """`count` gateway calls to tools that do not exist (each one still a record); returns the
    record ids and the pid of the process that ran the task."""
    from django_tenants.utils import tenant_context

    from tenants.models import Tenant
    from tools.gateway import CallContext, call_tool

    with tenant_context(Tenant.objects.get(schema_name=schema)):
        ids = [
            str(call_tool(name=f"crm__missing_{n}", arguments={}, context=CallContext(channel="chat", idempotency_key=f"w-{n}")).record_id)
            for n in range(count)
        ]
    return {"pid": os.getpid(), "ids": ids}
