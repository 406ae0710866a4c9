"""Signal receivers of the runtime: a change to a skill renews the tenant's catalog generation, so
every process re-reads the enabled skills (cached with the offered tools, runtime/builtins/) within
the catalog cache's bound (tools/catalog_cache.py): skills hold catalog tools back (R12)."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from runtime.builtins.models import Skill
from tools.catalog_cache import catalog_changed


@receiver([post_save, post_delete], sender=Skill)
def _skills_changed(**_kwargs):
    catalog_changed()
