"""Dashboard users. The table exists in the public schema (platform operators) and in every
tenant schema (that tenant's admins and support staff), so a user belongs to exactly one place."""

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils.translation import gettext_lazy as _


class User(AbstractUser):
    class Role(models.TextChoices):
        ADMIN = "admin", _("Tenant admin")
        SUPPORT = "support", _("Support (read only)")

    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.SUPPORT)

    @property
    def is_tenant_admin(self):
        return self.is_active and self.role == self.Role.ADMIN
