"""`manage.py demo_setup`: make sure the `demo` tenant exists and print a fresh admin login and
API key for it, so a newcomer running ./run can sign in at once. Each run replaces the previous
demo credentials (only hashes are stored, so old ones cannot be shown again).

The demo agent's model endpoint comes from the environment: ASIXTO_MODEL_URL (an OpenAI-compatible
base URL such as http://127.0.0.1:11434/v1), ASIXTO_MODEL_NAME and, if the endpoint wants one,
ASIXTO_MODEL_KEY. Without them the tenant keeps what its agent settings say, and when that is
nothing the command says how to set one."""

import os
import secrets

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, no_translations
from django.core.validators import URLValidator
from django.db import transaction
from django_tenants.utils import schema_context

from accounts.models import User
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create, api_key_revoke, tenant_create, tenant_settings_update

# Shown in the dashboard's API keys list: a name that reads the same in every interface language.
DEMO_KEY_NAME = "demo (./run)"
OLD_DEMO_KEY_NAMES = ["Demo key (./run)"]  # before issue 20: still replaced on the next run
MODEL_HINT = [
    "  Model:       none yet: the agent answers every message with an apology. To give it one, run",
    "               ASIXTO_MODEL_URL=http://127.0.0.1:11434/v1 ASIXTO_MODEL_NAME=qwen2.5:7b-instruct ./run",
    "               (any OpenAI-compatible endpoint: vLLM, Ollama, llama.cpp server, a hosted API;",
    "               add ASIXTO_MODEL_KEY=... if it needs a key), or set it under Agent settings.",
]


def model_from_environment() -> dict | None:
    """The model settings (T6) the environment asks for, or None when it asks for nothing."""
    url = os.environ.get("ASIXTO_MODEL_URL", "").strip()
    name = os.environ.get("ASIXTO_MODEL_NAME", "").strip()
    if not url:
        if name:
            raise CommandError("ASIXTO_MODEL_NAME is set but ASIXTO_MODEL_URL is not: set both (see README).")
        return None
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise CommandError(f"ASIXTO_MODEL_URL is not an http(s) URL: {url!r}") from None
    if not name:
        raise CommandError("ASIXTO_MODEL_URL is set but ASIXTO_MODEL_NAME is not: name the model to use.")
    # A key meant for another endpoint must not travel to this one: no key given, none kept.
    return {"model_base_url": url, "model_name": name, "model_api_key": os.environ.get("ASIXTO_MODEL_KEY", "").strip()}


class Command(BaseCommand):
    help = "Create or refresh the demo tenant and print its admin login and API key."

    def add_arguments(self, parser):
        parser.add_argument("--port", default="8000")

    @no_translations  # the operator's command line speaks English, its errors included (issue 20)
    @transaction.atomic
    def handle(self, *args, port, **options):
        model = model_from_environment()
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
        for old in ApiKey.objects.filter(tenant=tenant, name__in=[DEMO_KEY_NAME, *OLD_DEMO_KEY_NAMES], revoked_at__isnull=True):
            api_key_revoke(key=old)
        _key, plaintext = api_key_create(tenant=tenant, name=DEMO_KEY_NAME, scope=ApiKey.Scope.ADMIN)
        if model is not None:
            tenant_settings_update(tenant=tenant, data=model)
        domain = tenant.get_primary_domain().domain
        if tenant.model_base_url and tenant.model_name:
            source = "ASIXTO_MODEL_URL" if model is not None else "the agent settings"
            model_lines = [f"  Model:       {tenant.model_name} at {tenant.model_base_url} (from {source})"]
        else:
            model_lines = MODEL_HINT
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "Asixto is starting.",
                    f"  Dashboard:   http://{domain}:{port}/   user: admin   password: {password}",
                    f"  API key:     {plaintext}",
                    f"  API docs:    http://localhost:{port}/api/v1/docs/",
                    f"  Try:         curl -H 'Authorization: Bearer {plaintext}' http://localhost:{port}/api/v1/tenant",
                    f"  Operators:   http://localhost:{port}/admin/ (./manage createsuperuser)",
                    *model_lines,
                    f"  Playground:  http://{domain}:{port}/playground/ (talk to the agent, watch each turn)",
                    "",
                ]
            )
        )
