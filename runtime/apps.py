from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RuntimeConfig(AppConfig):
    name = "runtime"
    verbose_name = _("Agent runtime")
