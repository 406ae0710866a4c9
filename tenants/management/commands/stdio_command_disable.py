"""`manage.py stdio_command_disable SLUG`: stop servers of an approved stdio command (M3) from
launching; the approval is kept (`stdio_command_approve` enables it again)."""

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from tenants.models import ApprovedCommand
from tenants.stdio_commands import approved_command_disable


class Command(BaseCommand):
    help = "Disable an approved stdio MCP server command."

    def add_arguments(self, parser):
        parser.add_argument("slug")

    def handle(self, *args, slug, **options):
        connection.set_schema_to_public()
        command = ApprovedCommand.objects.filter(slug=slug).first()
        if command is None:
            raise CommandError(f"No approved command {slug!r}.")
        approved_command_disable(command=command)
        self.stdout.write(f"Disabled {slug}.")
