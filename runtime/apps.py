from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RuntimeConfig(AppConfig):
    name = "runtime"
    verbose_name = _("Agent runtime")

    def ready(self):
        from tools.signals import catalog_version_stored

        catalog_version_stored.connect(_build_routing_index, dispatch_uid="runtime-routing-index")


def _build_routing_index(sender, **kwargs):
    """A sync stored a new catalog version: its routing index, built off the turn path (R6)."""
    from runtime.routing.index_store import queue_build_after_commit

    queue_build_after_commit()
