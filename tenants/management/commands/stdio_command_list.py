"""`manage.py stdio_command_list [--json]`: the approved stdio commands (M3), one a line."""

import json

from django.core.management.base import BaseCommand
from django.db import connection

from tenants.models import ApprovedCommand

FIELDS = ("slug", "description", "executable", "base_args", "allow_extra_args", "fixed_env", "tenant_vars", "enabled")


class Command(BaseCommand):
    help = "List the approved stdio MCP server commands."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="one JSON object a line")

    def handle(self, *args, **options):
        connection.set_schema_to_public()
        for command in ApprovedCommand.objects.all():
            if options["json"]:
                self.stdout.write(json.dumps({field: getattr(command, field) for field in FIELDS}))
                continue
            state = "enabled" if command.enabled else "disabled"
            variables = ", ".join(f"{name}:secret" if secret else name for name, secret in command.declared_vars.items())
            self.stdout.write(f"{command.slug}\t{state}\t{command.executable} {' '.join(command.base_args)}\t{variables}")
