"""Contract modes per server and the admin's overlays per tool (issue 8). Tools stored before
keep their definition as the server's; servers synced before stay strict (their behaviour until
now)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tools', '0006_findings_codes_probe_verdict'),
    ]

    operations = [
        migrations.AddField(
            model_name='catalogversion',
            name='contract_mode',
            field=models.CharField(blank=True, max_length=12),
        ),
        migrations.AddField(
            model_name='catalogversion',
            name='overlays',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='mcpserver',
            name='contract_mode',
            field=models.CharField(blank=True, choices=[('strict', 'strict: the server keeps the whole contract'), ('compatible', 'compatible: the gateway enforces what it can itself')], help_text='Strict: any breach of the contract blocks. Compatible: what the gateway can enforce itself (closing an open schema, text results, plain errors, suggested verbs) only warns. Left empty, the first sync chooses.', max_length=12, verbose_name='contract mode'),
        ),
        migrations.AddField(
            model_name='tool',
            name='overlay',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='tool',
            name='server_definition',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='tool',
            name='server_hash',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunSQL(
            "UPDATE tools_tool SET server_definition = definition, server_hash = definition_hash;"
            "UPDATE tools_mcpserver SET contract_mode = 'strict' WHERE sync_status <> 'never';",
            migrations.RunSQL.noop,
        ),
    ]
