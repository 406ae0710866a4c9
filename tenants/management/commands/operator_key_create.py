"""`manage.py operator_key_create NAME`: an API key for the operator API; printed once."""

from django.core.management.base import BaseCommand

from tenants.models import ApiKey
from tenants.services import api_key_create


class Command(BaseCommand):
    help = "Create a platform-operator API key (public schema) and print it once."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name, **options):
        _key, plaintext = api_key_create(tenant=None, name=name, scope=ApiKey.Scope.OPERATOR)
        self.stdout.write(plaintext)
