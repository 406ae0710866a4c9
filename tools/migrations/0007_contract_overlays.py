"""Contract modes per server and the admin's overlays per tool (issue 8). Tools stored before
keep their definition as the server's; a server with a catalog gets the mode its first sync
would choose (its tools are certified again on the next sync: the rules changed)."""

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
            # A server with a catalog gets the mode its first sync would have chosen: strict when
            # one of its live tools declares a com.asixto/ _meta key, compatible otherwise.
            "UPDATE tools_mcpserver s SET contract_mode = CASE WHEN EXISTS ("
            " SELECT 1 FROM tools_tool t WHERE t.server_id = s.id AND t.removed_in_id IS NULL"
            " AND EXISTS (SELECT 1 FROM jsonb_object_keys(CASE WHEN jsonb_typeof(t.definition->'_meta') = 'object'"
            " THEN t.definition->'_meta' ELSE '{}'::jsonb END) k WHERE k LIKE 'com.asixto/%%')"
            ") THEN 'strict' ELSE 'compatible' END"
            " WHERE EXISTS (SELECT 1 FROM tools_tool t WHERE t.server_id = s.id);",
            migrations.RunSQL.noop,
        ),
    ]
