"""Celery tasks of the tools app: thin, load by id and call one service."""

import logging

from celery import shared_task
from django_tenants.utils import get_tenant_model, tenant_context

from asixto.errors import ApplicationError
from tools import mcp
from tools.gateway.journal import recover as recover_calls
from tools.models import McpServer
from tools.sync import catalog_sync

log = logging.getLogger(__name__)


@shared_task
def server_sync(server_id):
    """Sync one server's catalog (M5) in the schema the task was sent from."""
    server = McpServer.objects.filter(pk=server_id, enabled=True).first()
    if server is None:
        return None
    try:
        version = catalog_sync(server=server)
    except (mcp.McpError, ApplicationError) as exc:
        log.info("catalog sync of %s failed: %s", server.slug, getattr(exc, "message", exc))
        return {"status": "error"}
    return {"status": "ok", "version": version.number}


@shared_task
def recover_interrupted_calls():
    """Calls a dead process of this host sent and never recorded get their record (G9, issue 19)."""
    return recover_calls()


@shared_task
def sync_all_servers():
    """Periodic sync (M5): queue one sync per enabled server of every tenant, each in its schema."""
    for tenant in get_tenant_model().objects.exclude(schema_name="public"):
        with tenant_context(tenant):
            for server_id in McpServer.objects.filter(enabled=True).values_list("pk", flat=True):
                server_sync.delay(str(server_id))
