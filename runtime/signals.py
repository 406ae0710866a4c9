"""Signal receivers of the runtime:
- a change to a skill renews the tenant's catalog generation, so every process re-reads the
  enabled skills (cached with the offered tools, runtime/builtins/) within the catalog cache's
  bound (tools/catalog_cache.py): skills hold catalog tools back (R12);
- a sync that stored a new catalog version queues its routing index, built off the turn path (R6);
- a rotated API key's webhook moves to the new key (issue 20)."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django_tenants.utils import schema_context

from runtime.builtins.models import Skill
from tenants.services import api_key_rotated
from tools.catalog_cache import catalog_changed
from tools.signals import catalog_version_stored


@receiver([post_save, post_delete], sender=Skill)
def _skills_changed(**_kwargs):
    catalog_changed()


@receiver(catalog_version_stored)
def _catalog_version_stored(**_kwargs):
    from runtime.routing.index_store import queue_build_after_commit

    queue_build_after_commit()


@receiver(api_key_rotated)
def _api_key_rotated(*, old, new, **_kwargs):
    from runtime.webhooks import webhook_follow_rotation

    if old.tenant_id is None:
        return  # operator keys carry no webhook
    with schema_context(old.tenant.schema_name):  # the webhook is in the key's tenant, whoever rotates
        webhook_follow_rotation(old=old, new=new)
