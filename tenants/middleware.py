"""Tenant resolution. The dashboard is resolved by domain (django-tenants); the REST API by the
API key alone, on any host (T2): the credential chooses the tenant, never a bare header."""

import hmac
from datetime import timezone as dt_timezone
from functools import cache

from django.db import connection
from django.http import JsonResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django_tenants.middleware.main import TenantMainMiddleware

from asixto import log_context, rows
from asixto.errors import error_body
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_mark_used

API_PREFIX = "/api/"


def api_error(status, code, message, **headers):
    response = JsonResponse(error_body(code, message), status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


class TenantMiddleware(TenantMainMiddleware):
    def process_request(self, request):
        # Log lines of this request carry its trace id, and its tenant once known (asixto/log_context.py).
        log_context.request_started(request_id=request.headers.get("X-Request-ID"))
        response = self._resolve(request)
        if getattr(request, "tenant", None) is not None:
            log_context.tenant_resolved(schema_name=request.tenant.schema_name)
        return response

    def _resolve(self, request):
        if not request.path_info.startswith(API_PREFIX):
            return super().process_request(request)
        connection.set_schema_to_public()
        request.api_key = None
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            # Anonymous API requests reach only what is public (schema, docs); DRF answers 401
            # for everything else.
            self.setup_url_routing(request, force_public=True)
            return None
        key = self.key_from_header(header)
        # These answers come before the locale middleware: in the request's language all the same.
        with translation.override(translation.get_language_from_request(request)):
            if key is None:
                return api_error(
                    401, "not_authenticated", _("Invalid or revoked API key."), WWW_Authenticate='Bearer realm="api"'
                )
            if key.is_expired:
                message = _("This API key expired on %(when)s (UTC). Create or rotate a key.") % {
                    "when": key.expires_at.astimezone(dt_timezone.utc).strftime("%Y-%m-%d %H:%M")}
                return api_error(401, "key_expired", message, WWW_Authenticate='Bearer realm="api", error="invalid_token"')
        api_key_mark_used(key=key)
        request.api_key = key
        if key.tenant is None:
            self.setup_url_routing(request, force_public=True)
            return None
        request.tenant = key.tenant
        connection.set_tenant(key.tenant)
        self.setup_url_routing(request)
        return None

    @staticmethod
    def key_from_header(header):
        scheme, _sep, plaintext = header.partition(" ")
        if scheme.lower() != "bearer" or not plaintext:
            return None
        plaintext = plaintext.strip()
        prefix = ApiKey.parse_prefix(plaintext)
        if prefix is None:
            return None
        key = _unrevoked_key(prefix)
        if key is None or not hmac.compare_digest(key.key_hash, ApiKey.hash(plaintext)):
            return None
        return key


@cache
def _key_sql() -> str:
    quote, column = connection.ops.quote_name, lambda name: connection.ops.quote_name(ApiKey._meta.get_field(name).column)
    return (f"SELECT {rows.columns(ApiKey, 'k')}, {rows.columns(Tenant, 't')} FROM {quote(ApiKey._meta.db_table)} k "
            f"LEFT JOIN {quote(Tenant._meta.db_table)} t ON t.{quote(Tenant._meta.pk.column)} = k.{column('tenant')} "
            f"WHERE k.{column('prefix')} = %s AND k.{column('revoked_at')} IS NULL")


def _unrevoked_key(prefix):
    """The unrevoked key with this prefix (unique) and its tenant, in one statement written once:
    every API request reads it, and compiling the ORM's query cost it more than the read (P4)."""
    with connection.cursor() as cursor:
        cursor.execute(_key_sql(), [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    key, end = rows.instance(ApiKey, row)
    if key.tenant_id is not None:
        ApiKey._meta.get_field("tenant").set_cached_value(key, rows.instance(Tenant, row, end)[0])
    return key
