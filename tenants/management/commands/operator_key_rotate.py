"""`manage.py operator_key_rotate PREFIX [--grace-minutes N]`: replace an operator API key by a new
one with the same name and expiry, printed once; the old one is revoked at once or after the grace
(issue 20)."""

from django.core.management.base import BaseCommand, CommandError

from asixto.errors import ApplicationError
from tenants.models import ApiKey
from tenants.services import api_key_rotate


class Command(BaseCommand):
    help = "Rotate a platform-operator API key (given by its prefix, asx_<prefix>_…) and print the new key once."

    def add_arguments(self, parser):
        parser.add_argument("prefix")
        parser.add_argument("--grace-minutes", type=int, default=0, help="How long the old key keeps working (default 0).")

    def handle(self, *args, prefix, grace_minutes, **options):
        key = ApiKey.objects.filter(prefix=prefix, scope=ApiKey.Scope.OPERATOR).first()
        if key is None:
            raise CommandError(f"No operator key with prefix {prefix!r}.")
        try:
            _new, plaintext = api_key_rotate(key=key, grace_minutes=grace_minutes)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(plaintext)
