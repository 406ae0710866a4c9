"""Writes on tenants and API keys: the one place where tenants, their first admin and their keys
are created, settings changed and keys revoked."""

import re
import secrets
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.db.models import Q
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import gettext as _
from django_tenants.utils import schema_context

from accounts.models import User
from asixto.errors import ApplicationError
from tenants.models import RESERVED_SLUGS, SLUG_PATTERN, ApiKey, Domain, Tenant


# Sent inside the rotation's transaction with `old` and `new` (ApiKey), in the caller's schema.
api_key_rotated = Signal()


@dataclass(frozen=True)
class TenantCreation:
    tenant: Tenant
    domain: str
    admin_username: str
    admin_password: str
    admin_api_key: str

    def as_dict(self):
        return {
            "id": self.tenant.pk,
            "slug": self.tenant.slug,
            "name": self.tenant.name,
            "schema_name": self.tenant.schema_name,
            "domain": self.domain,
            "admin_username": self.admin_username,
            "admin_password": self.admin_password,
            "admin_api_key": self.admin_api_key,
        }


def validate_new_tenant(*, slug: str, name: str, domain: str | None = None) -> tuple[str, str]:
    """The normalised (slug, domain) of a tenant that can be created, or an ApplicationError
    with an error per field (T5). The creation service, the operator API and the admin's add
    form all ask here."""
    slug = (slug or "").strip().lower()
    domain = (domain or f"{slug}.{settings.ASIXTO_BASE_DOMAIN}").strip().lower()
    errors = {}
    if not re.match(SLUG_PATTERN, slug or "") or "--" in slug:
        errors["slug"] = [_("Use 3–40 lowercase letters, digits or hyphens, starting with a letter.")]
    elif (slug in RESERVED_SLUGS or slug.replace("-", "_") == settings.ASIXTO_TENANT_TEMPLATE_SCHEMA
          or slug.startswith("pg-")):  # PostgreSQL keeps schema names that start with pg_ for itself
        errors["slug"] = [_("This slug is reserved.")]
    elif Tenant.objects.filter(slug=slug).exists():
        errors["slug"] = [_("A tenant with this slug already exists.")]
    if not (name or "").strip() or len(name) > 120:
        errors["name"] = [_("Give a name of 1–120 characters.")]
    if not re.match(r"^[a-z0-9.-]{1,253}$", domain) or ".." in domain:
        errors["domain"] = [_("Not a valid domain name.")]
    elif Domain.objects.filter(domain=domain).exists():
        errors["domain"] = [_("This domain is already in use.")]
    if errors:
        raise ApplicationError(_("The tenant cannot be created."), fields=errors)
    return slug, domain


def tenant_create(
    *, slug: str, name: str, domain: str | None = None, admin_username: str = "admin", server_quota: int | None = None
) -> TenantCreation:
    """Create the tenant, its schema (migrated), its primary domain, a first admin user and an
    admin API key (T5). If any step fails nothing is left behind, schema included."""
    slug, domain = validate_new_tenant(slug=slug, name=name, domain=domain)
    tenant = Tenant(slug=slug, name=name.strip(), schema_name=slug.replace("-", "_"), server_quota=server_quota)
    password = secrets.token_urlsafe(12)
    # Hashing the admin's password takes as long as making the schema (P5): it runs beside it, in a
    # thread (the hash releases the GIL while the schema is made by the database).
    with ThreadPoolExecutor(max_workers=1) as hasher:
        password_hash = hasher.submit(make_password, password)
        # PostgreSQL DDL is transactional: if any step fails, the rollback drops the new schema too.
        with schema_context("public"), transaction.atomic():
            tenant.save(verbosity=0)  # creates the schema: a copy of the template (tenants.schema_template)
            Domain.objects.create(domain=domain, tenant=tenant, is_primary=True)
            with schema_context(tenant.schema_name):
                User.objects.create(
                    username=User.normalize_username(admin_username), password=password_hash.result(), role=User.Role.ADMIN
                )
            _key, plaintext = api_key_create(tenant=tenant, name="First admin key", scope=ApiKey.Scope.ADMIN)
    return TenantCreation(tenant, domain, admin_username, password, plaintext)


def api_key_create(*, tenant: Tenant | None, name: str, scope: str, expires_at=None,
                   integration=None) -> tuple[ApiKey, str]:
    """Create a key and return it with its plaintext, which is never stored nor shown again (T3).
    `expires_at`, if given, must be in the future (issue 20). `integration`: the integration of an
    earlier key of `tenant` with this scope that the key continues (a rotation's new key, or a new
    channel key for an integration whose keys were all revoked or expired: it reads and posts to
    that integration's conversations); a new integration otherwise."""
    if scope not in ApiKey.Scope.values:
        raise ApplicationError(_("Unknown scope."), fields={"scope": [_("Unknown scope.")]})
    if (scope == ApiKey.Scope.OPERATOR) != (tenant is None):
        raise ApplicationError(_("Operator keys have no tenant; other keys need one."))
    if expires_at is not None and expires_at <= timezone.now():
        message = _("Choose a moment in the future.")
        raise ApplicationError(message, fields={"expires_at": [message]})
    if integration is not None and not ApiKey.objects.filter(tenant=tenant, scope=scope, integration=integration).exists():
        message = _("Choose the integration of an earlier key of this account with the same scope.")
        raise ApplicationError(message, fields={"integration": [message]})
    prefix, plaintext = ApiKey.generate()
    key = ApiKey.objects.create(
        tenant=tenant, name=name, scope=scope, prefix=prefix, key_hash=ApiKey.hash(plaintext), expires_at=expires_at,
        integration=integration or uuid.uuid4(),
    )
    return key, plaintext


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


MAX_GRACE_MINUTES = 7 * 24 * 60


def api_key_rotate(*, key: ApiKey, grace_minutes: int = 0) -> tuple[ApiKey, str]:
    """Replace an active key by a new one with the same name, scope and expiry, and return the new
    key with its plaintext (shown once, T3). The old key stops working at once (`grace_minutes` 0)
    or when the grace ends, or at its own expiry if that comes first, so integrations have time to
    switch (issue 20). Receivers of `api_key_rotated` move what hangs on the old key (a webhook)."""
    if not 0 <= grace_minutes <= MAX_GRACE_MINUTES:
        message = _("Give 0–%(max)d minutes.") % {"max": MAX_GRACE_MINUTES}
        raise ApplicationError(message, fields={"grace_minutes": [message]})
    with transaction.atomic():
        key = ApiKey.objects.select_for_update().get(pk=key.pk)
        if not key.is_active:
            raise ApplicationError(_("Only an active key can be rotated."), code="key_inactive", status_code=409)
        if key.replaced_by_id is not None:  # in its grace: its replacement is the key to rotate
            raise ApplicationError(_("This key was already rotated; rotate the key that replaced it."),
                                   code="key_rotated", status_code=409)
        new_key, plaintext = api_key_create(tenant=key.tenant, name=key.name, scope=key.scope, expires_at=key.expires_at,
                                            integration=key.integration)
        now = timezone.now()
        key.replaced_by = new_key
        if grace_minutes == 0:
            key.revoked_at = now
        else:
            grace_end = now + timedelta(minutes=grace_minutes)
            key.expires_at = min(key.expires_at or grace_end, grace_end)
        key.save(update_fields=["replaced_by", "revoked_at", "expires_at"])
        api_key_rotated.send(sender=ApiKey, old=key, new=new_key)
    return new_key, plaintext


LAST_USE_RESOLUTION = timedelta(minutes=1)


def api_key_mark_used(*, key: ApiKey) -> None:
    """Stamp `last_used_at` at most once a minute per key (issue 20). The key was just read, so a
    fresh stamp costs nothing; a stale one is renewed by one conditional UPDATE, which concurrent
    requests of the same key re-check under the row lock, so only one of them writes."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USE_RESOLUTION:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USE_RESOLUTION)
    ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)
    key.last_used_at = now


# Each endpoint and the secret that goes only to it (issue 19, M5).
BOUND_SECRETS = {"model_base_url": "model_api_key", "router_base_url": "router_api_key"}


def same_origin(before: str, after: str) -> bool:
    """Whether two URLs reach the same place: scheme, host and port (a path may change)."""
    def origin(url):
        parts = urlsplit(url or "")
        try:
            port = parts.port
        except ValueError:
            port = None
        return parts.scheme.lower(), (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return origin(before) == origin(after)


def tenant_settings_update(*, tenant: Tenant, data: dict) -> Tenant:
    """Apply validated settings (T6), or an operator's limits (the MCP server quota: lowering it
    removes nothing, it only refuses new registrations). A secret left out keeps its value; an
    empty string clears it. A secret is bound to its endpoint: moving the endpoint to another
    scheme, host or port clears the stored secret unless the same change gives a new one, so a
    stored key is never sent where its owner did not send it (issue 19, M5)."""
    data = dict(data)
    for url_field, secret_field in BOUND_SECRETS.items():
        if url_field in data and secret_field not in data and not same_origin(getattr(tenant, url_field), data[url_field]):
            data[secret_field] = ""
    for field, value in data.items():
        setattr(tenant, field, value)
    tenant.save(update_fields=list(data))
    return tenant
