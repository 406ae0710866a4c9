"""The public tenant django-tenants needs for the platform's own domain (admin, landing page)."""

from django.conf import settings
from django.db import migrations


def create_public_tenant(apps, schema_editor):
    Tenant = apps.get_model("tenants", "Tenant")
    Domain = apps.get_model("tenants", "Domain")
    public, _created = Tenant.objects.get_or_create(schema_name="public", defaults={"slug": "public", "name": "Asixto"})
    hosts = [settings.ASIXTO_BASE_DOMAIN] + (["127.0.0.1"] if settings.ASIXTO_BASE_DOMAIN == "localhost" else [])
    for index, host in enumerate(hosts):
        Domain.objects.get_or_create(domain=host, defaults={"tenant": public, "is_primary": index == 0})


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]
    operations = [migrations.RunPython(create_public_tenant, migrations.RunPython.noop)]
