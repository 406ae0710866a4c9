"""Keep the gateway's tool cache honest: any saved or deleted tool, server or routing example
changes the tenant's catalog generation (bulk writes in the services call `catalog_changed` themselves).

`catalog_version_stored` tells other apps that a sync stored a catalog version with changed
tools (sent inside the sync's transaction, in the tenant's schema); the runtime builds its
routing index from it, so the tools half never imports the runtime."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

from tools.catalog_cache import catalog_changed
from tools.models import McpServer, RoutingExample, Tool

catalog_version_stored = Signal()  # kwargs: server, version


@receiver([post_save, post_delete], sender=RoutingExample)
@receiver([post_save, post_delete], sender=Tool)
@receiver([post_save, post_delete], sender=McpServer)
def tool_or_server_changed(sender, **kwargs):
    catalog_changed()
