"""Keep the gateway's tool cache honest: any saved or deleted tool or server changes the
tenant's catalog generation (bulk writes in the services call `catalog_changed` themselves)."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from tools.catalog_cache import catalog_changed
from tools.models import McpServer, Tool


@receiver([post_save, post_delete], sender=Tool)
@receiver([post_save, post_delete], sender=McpServer)
def tool_or_server_changed(sender, **kwargs):
    catalog_changed()
