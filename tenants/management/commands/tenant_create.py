"""`manage.py tenant_create SLUG --name NAME [--domain DOMAIN] [--json]` (T5)."""

import json

from django.core.management.base import BaseCommand, CommandError

from asixto.errors import ApplicationError
from tenants.services import tenant_create


class Command(BaseCommand):
    help = "Create a tenant with its schema, first admin user and admin API key."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--domain")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object.")

    def handle(self, *args, slug, name, domain, as_json, **options):
        try:
            created = tenant_create(slug=slug, name=name, domain=domain)
        except ApplicationError as exc:
            raise CommandError(f"{exc.message} {exc.fields}") from exc
        data = created.as_dict()
        if as_json:
            self.stdout.write(json.dumps(data, ensure_ascii=False))
            return
        for key, value in data.items():
            self.stdout.write(f"{key}: {value}")
