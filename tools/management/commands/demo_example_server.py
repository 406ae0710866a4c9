"""`manage.py demo_example_server URL`: register the example support server (examples/soporte)
for the demo tenant and sync it now, so a newcomer sees a certified catalog at once."""

from django.core.management.base import BaseCommand, CommandError, no_translations
from django_tenants.utils import tenant_context

from asixto.errors import ApplicationError
from tenants.models import Tenant
from tools import mcp
from tools.models import McpServer, Tool
from tools.services import catalog_sync, server_create, server_update


class Command(BaseCommand):
    help = "Register and sync the example MCP server for the demo tenant."

    def add_arguments(self, parser):
        parser.add_argument("url")
        parser.add_argument("--tenant", default="demo")

    @no_translations  # ./run speaks English, its errors included (issue 20)
    def handle(self, *args, url, tenant, **options):
        tenant = Tenant.objects.get(slug=tenant)
        data = {"slug": "soporte", "name": "Mesa de soporte (ejemplo)", "transport": "streamable_http", "url": url}
        with tenant_context(tenant):
            try:
                server = McpServer.objects.filter(slug="soporte").first()
                server = server_update(server=server, data=data) if server else server_create(data=data)
                catalog_sync(server=server)
            except (ApplicationError, mcp.McpError) as exc:
                raise CommandError(f"example server: {getattr(exc, 'message', exc)}") from exc
            certified = Tool.objects.filter(server=server, certification="certified", removed_in__isnull=True).count()
        self.stdout.write(f"  Example MCP server: {url} — {certified} certified tools in the demo catalog")
