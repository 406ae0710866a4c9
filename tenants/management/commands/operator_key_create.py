"""`manage.py operator_key_create NAME [--expires-days N]`: an API key for the operator API; printed once."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from tenants.models import ApiKey
from tenants.services import api_key_create


class Command(BaseCommand):
    help = "Create a platform-operator API key (public schema) and print it once."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--expires-days", type=int, help="The key stops working after this many days (default: never).")

    def handle(self, *args, name, expires_days=None, **options):
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        _key, plaintext = api_key_create(tenant=None, name=name, scope=ApiKey.Scope.OPERATOR, expires_at=expires_at)
        self.stdout.write(plaintext)
