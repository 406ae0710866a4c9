from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = _("Tenants")

    def ready(self):
        from tenants.api import schema  # noqa: F401 - registers the API key's OpenAPI scheme
