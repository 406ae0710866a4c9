"""`manage.py demo_setup`: make sure the `demo` tenant exists and print a fresh admin login and
API key for it, so a newcomer running ./run can sign in at once. Each run replaces the previous
demo credentials (only hashes are stored, so old ones cannot be shown again)."""

import secrets

from django.core.management.base import BaseCommand
from django.db import transaction
from django_tenants.utils import schema_context

from accounts.models import User
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create, api_key_revoke, tenant_create

DEMO_KEY_NAME = "Demo key (./run)"


class Command(BaseCommand):
    help = "Create or refresh the demo tenant and print its admin login and API key."

    def add_arguments(self, parser):
        parser.add_argument("--port", default="8000")

    @transaction.atomic
    def handle(self, *args, port, **options):
        tenant = Tenant.objects.filter(slug="demo").first()
        if tenant is None:
            tenant = tenant_create(slug="demo", name="Demo").tenant
            tenant.scenarios = ["soporte", "pqr", "garantia", "ventas"]
            tenant.save(update_fields=["scenarios"])
        password = secrets.token_urlsafe(9)
        with schema_context(tenant.schema_name):
            admin, _created = User.objects.get_or_create(username="admin", defaults={"role": User.Role.ADMIN})
            admin.role = User.Role.ADMIN
            admin.set_password(password)
            admin.save()
        for old in ApiKey.objects.filter(tenant=tenant, name=DEMO_KEY_NAME, revoked_at__isnull=True):
            api_key_revoke(key=old)
        _key, plaintext = api_key_create(tenant=tenant, name=DEMO_KEY_NAME, scope=ApiKey.Scope.ADMIN)
        domain = tenant.get_primary_domain().domain
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "Asixto is starting.",
                    f"  Dashboard:   http://{domain}:{port}/   user: admin   password: {password}",
                    f"  API key:     {plaintext}",
                    f"  API docs:    http://localhost:{port}/api/v1/docs/",
                    f"  Try:         curl -H 'Authorization: Bearer {plaintext}' http://localhost:{port}/api/v1/tenant",
                    f"  Operators:   http://localhost:{port}/admin/ (python manage.py createsuperuser)",
                    "",
                ]
            )
        )
