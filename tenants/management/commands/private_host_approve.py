"""`manage.py private_host_approve HOST [--tenant SLUG] [--port N …] [--for PURPOSE …] [--allow-http]
[--note TEXT] [--revoke]`: approve (or revoke) a private host or network as an outbound target (M2),
for one tenant or all, on the ports named (443 and 80 without any) and for the purposes named
(model, mcp, webhook, search; model and mcp without any)."""

import getpass

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from tenants.models import ApprovedPrivateHost, Tenant, default_approval_purposes
from tenants.outbound import PURPOSES, normalise_approved_host


class Command(BaseCommand):
    help = "Approve a private host name, address or network that tenants' servers and models may live on."

    def add_arguments(self, parser):
        parser.add_argument("host", help="models.acme.internal, 10.0.5.20 or 10.0.5.0/24")
        parser.add_argument("--tenant", help="the tenant's slug; without it, every tenant may use the host")
        parser.add_argument("--port", action="append", default=[], help="a port it may be reached on (repeat; default 443 and 80)")
        parser.add_argument("--for", dest="purposes", action="append", default=[], choices=PURPOSES,
                            help="what it is for (repeat; default model and mcp)")
        parser.add_argument("--allow-http", action="store_true", help="accept plain http (private addresses only)")
        parser.add_argument("--note", default="", help="why, for the next operator")
        parser.add_argument("--revoke", action="store_true", help="remove the approval instead")

    def handle(self, *args, host, tenant, port, purposes, allow_http, note, revoke, **options):
        connection.set_schema_to_public()
        owner = None
        if tenant:
            owner = Tenant.objects.filter(slug=tenant).first()
            if owner is None:
                raise CommandError(f"No tenant with slug {tenant!r}.")
        if revoke:
            try:
                host = normalise_approved_host(host)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            deleted, _rows = ApprovedPrivateHost.objects.filter(host=host, tenant=owner).delete()
            if not deleted:
                raise CommandError("No such approval.")
            self.stdout.write(f"Revoked {host}.")
            return
        approval = ApprovedPrivateHost(host=host, tenant=owner, allow_http=allow_http, note=note, approved_by=_who(),
                                       ports=",".join(port), purposes=purposes or default_approval_purposes())
        try:
            approval.full_clean()
        except ValidationError as exc:
            raise CommandError("; ".join(message for messages in exc.message_dict.values() for message in messages)) from exc
        approval.save()
        self.stdout.write(f"Approved {approval}.")


def _who() -> str:
    try:
        return f"{getpass.getuser()} (command line)"
    except (KeyError, OSError):  # no passwd entry for this uid (containers)
        return "command line"
