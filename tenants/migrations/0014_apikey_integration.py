"""Every API key gets the id of its integration: a key and the keys rotated from it share one.
Existing keys: a key no rotation made starts its own integration, and each rotation's new key
(`replaced_by`) takes its predecessor's."""

import uuid

from django.db import migrations, models


def fill_integrations(apps, schema_editor):
    ApiKey = apps.get_model("tenants", "ApiKey")
    successor = dict(ApiKey.objects.filter(replaced_by__isnull=False).values_list("pk", "replaced_by_id"))
    made_by_rotation = set(successor.values())
    for root in ApiKey.objects.exclude(pk__in=made_by_rotation).values_list("pk", flat=True):
        chain, key = [root], root
        while key in successor and successor[key] not in chain:  # a cycle cannot be made; stop if one were
            key = successor[key]
            chain.append(key)
        ApiKey.objects.filter(pk__in=chain).update(integration=root)
    # Keys in a cycle of replacements (none can be made) would be left: give each its own.
    for key in ApiKey.objects.filter(integration__isnull=True).values_list("pk", flat=True):
        ApiKey.objects.filter(pk=key).update(integration=key)


class Migration(migrations.Migration):

    dependencies = [
        ("tenants", "0013_tenant_trace_contents"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="integration",
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.RunPython(fill_integrations, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apikey",
            name="integration",
            field=models.UUIDField(db_index=True, default=uuid.uuid4, editable=False),
        ),
    ]
