"""Registering an MCP server within the tenant's quota (bounded work, M1): an operator sets the
quota per tenant (`Tenant.server_quota`), the platform default applies otherwise.

Counting and creating happen under a per-tenant advisory lock, so concurrent registrations
cannot pass the quota together; an advisory lock (not a lock on the tenant's row) keeps the
tenant's settings writable while a registration resolves its URL."""

from django.db import connection, transaction
from django.utils.translation import gettext as _

from asixto.errors import ApplicationError
from tenants.selectors import current_tenant
from tools import services
from tools.models import McpServer

# First key of the two-key advisory lock: what is locked (the second is the tenant's id).
_QUOTA_LOCK = 0x5E52  # "servers"


def server_register(*, data: dict) -> McpServer:
    """Create a server if the tenant has room for it and queue its first sync (M1, M5)."""
    tenant = current_tenant()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_QUOTA_LOCK, tenant.pk])
        check_server_quota(tenant=tenant)
        server = services.server_create(data=data)
        services.server_queue_sync(server=server)
    return server


def check_server_quota(*, tenant) -> None:
    quota = tenant.effective_server_quota
    if McpServer.objects.count() >= quota:
        raise ApplicationError(
            _("This account may register at most %(quota)d MCP servers. Remove one, or ask the platform "
              "operator to raise the limit.") % {"quota": quota},
            code="server_quota_exceeded", status_code=409,
        )
