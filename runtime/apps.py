from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RuntimeConfig(AppConfig):
    name = "runtime"
    verbose_name = _("Agent runtime")

    def ready(self):
        from runtime import signals  # noqa: F401 - connects the receivers
