"""Reads of the tenants app."""

from django.db import connection

from tenants.models import Tenant


def current_tenant() -> Tenant:
    """The tenant whose schema the connection is on, with its settings (T6). Middleware and
    Celery set a full Tenant; `schema_context` only sets a stand-in, which is resolved here."""
    tenant = getattr(connection, "tenant", None)
    if isinstance(tenant, Tenant):
        return tenant
    return Tenant.objects.get(schema_name=connection.schema_name)
