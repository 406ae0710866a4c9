"""`manage.py stdio_command_approve SLUG --executable PATH [--arg ARG ...] [--allow-extra-args]
[--env NAME=VALUE ...] [--tenant-var NAME[:secret] ...] [--description TEXT]`: approve a stdio MCP
server command (M3, issue 8), or replace an existing approval with exactly what is given
(idempotent, for automation). `{workdir}` in an argument or a value is the tenant server's
private directory; quote it for the shell."""

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from asixto.errors import ApplicationError
from tenants.models import ApprovedCommand
from tenants.stdio_commands import approved_command_create, approved_command_update


def _env(pairs):
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CommandError(f"--env takes NAME=VALUE, not {pair!r}")
        env[name] = value
    return env


def _tenant_vars(specs):
    found = []
    for spec in specs:
        name, _sep, kind = spec.partition(":")
        if kind not in ("", "secret", "plain"):
            raise CommandError(f"--tenant-var takes NAME or NAME:secret, not {spec!r}")
        found.append({"name": name, "secret": kind == "secret"})
    return found


class Command(BaseCommand):
    help = "Approve a stdio MCP server command tenants may pick, or replace its approval."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--executable", required=True, help="absolute path of the program")
        parser.add_argument("--arg", action="append", default=[], dest="arg_list", help="a fixed argument (repeat)")
        parser.add_argument("--allow-extra-args", action="store_true", help="tenants may add arguments")
        parser.add_argument("--env", action="append", default=[], help="a fixed variable NAME=VALUE (repeat)")
        parser.add_argument("--tenant-var", action="append", default=[], help="a variable tenants may set, NAME or NAME:secret")
        parser.add_argument("--description", default="")

    def handle(self, *args, **options):
        connection.set_schema_to_public()
        fields = {
            "description": options["description"], "executable": options["executable"], "base_args": options["arg_list"],
            "allow_extra_args": options["allow_extra_args"], "fixed_env": _env(options["env"]),
            "tenant_vars": _tenant_vars(options["tenant_var"]), "enabled": True,
        }
        existing = ApprovedCommand.objects.filter(slug=options["slug"]).first()
        try:
            if existing is None:
                command = approved_command_create(slug=options["slug"], **fields)
            else:
                command = approved_command_update(command=existing, data=fields)
        except ApplicationError as exc:
            problems = "; ".join(f"{field}: {message}" for field, messages in exc.fields.items() for message in messages)
            raise CommandError(f"{exc.message} {problems}".strip()) from exc
        self.stdout.write(f"{'Approved' if existing is None else 'Updated'} {command.slug}.")
