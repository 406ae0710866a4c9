from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = _("Tenants")

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from tenants.api import schema  # noqa: F401 - registers the API key's OpenAPI scheme
        from tenants.models import ApprovedPrivateHost
        from tenants.outbound_approvals import approvals_changed

        # Each process keeps the approvals it read until one changes (tenants/outbound_approvals.py).
        post_save.connect(approvals_changed, sender=ApprovedPrivateHost, dispatch_uid="approvals_changed_save")
        post_delete.connect(approvals_changed, sender=ApprovedPrivateHost, dispatch_uid="approvals_changed_delete")
