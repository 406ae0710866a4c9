"""Operator API keys expire and rotate too (issue 20, T3): they pass the same authentication as
tenants' keys, and are made and rotated on the command line, the new key printed once."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from tenants.models import ApiKey


def command(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def test_an_operator_key_expires_and_rotates(alpha):
    """Issue 20: `--expires-days` sets the expiry; `operator_key_rotate` prints a new key with
    the same name and expiry and revokes the old one; an expired operator key gets `key_expired`."""
    old_plaintext = command("operator_key_create", "ops", "--expires-days", "30")
    old = ApiKey.objects.get(prefix=ApiKey.parse_prefix(old_plaintext))
    assert timedelta(days=29) < old.expires_at - timezone.now() <= timedelta(days=30)
    assert alpha.api(key=old_plaintext).get("/api/v1/operator/tenants").status_code == 200
    connection.set_schema_to_public()
    new_plaintext = command("operator_key_rotate", old.prefix)
    new = ApiKey.objects.get(prefix=ApiKey.parse_prefix(new_plaintext))
    assert (new.name, new.scope, new.expires_at) == ("ops", "operator", old.expires_at)
    assert alpha.api(key=old_plaintext).get("/api/v1/operator/tenants").status_code == 401
    assert alpha.api(key=new_plaintext).get("/api/v1/operator/tenants").status_code == 200
    connection.set_schema_to_public()
    ApiKey.objects.filter(pk=new.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert alpha.api(key=new_plaintext).get("/api/v1/operator/tenants").json()["error"]["code"] == "key_expired"


def test_the_rotate_command_refuses_a_tenant_key_or_an_unknown_prefix(alpha):
    """A4: the command rotates operator keys only (tenants rotate theirs in the API or dashboard)."""
    tenant_prefix = ApiKey.parse_prefix(alpha.admin_key)
    for prefix in (tenant_prefix, "000000000000"):
        with pytest.raises(CommandError):
            command("operator_key_rotate", prefix)
    with pytest.raises(CommandError):
        command("operator_key_create", "ops", "--expires-days", "0")
    assert ApiKey.objects.get(prefix=tenant_prefix).is_active
