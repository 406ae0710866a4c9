"""Findings and sync errors as codes and parameters (A3); the probe's verdict kept per
definition (C8, C9); what a tool's verdict was computed from; probe call records.

Existing rows keep rendering: findings stored as text keep their `texts` (read as before), a
version's server findings likewise, and a stored sync error becomes a literal code. Probe
findings made before this get the definition hash their tool was certified for."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def forward(apps, schema_editor):
    McpServer = apps.get_model("tools", "McpServer")
    Finding = apps.get_model("tools", "Finding")
    Tool = apps.get_model("tools", "Tool")
    for server in McpServer.objects.exclude(sync_error=""):
        server.sync_error_code = "literal"
        server.sync_error_params = {"text": server.sync_error}
        server.save(update_fields=["sync_error_code", "sync_error_params"])
    Finding.objects.filter(source="probe", tool__isnull=False).update(
        definition_hash=Subquery(Tool.objects.filter(pk=OuterRef("tool_id")).values("certified_hash")[:1])
    )


def backward(apps, schema_editor):
    McpServer = apps.get_model("tools", "McpServer")
    for server in McpServer.objects.exclude(sync_error_code=""):
        server.sync_error = str((server.sync_error_params or {}).get("text") or server.sync_error_code)[:4000]
        server.save(update_fields=["sync_error"])


class Migration(migrations.Migration):

    dependencies = [
        ("tools", "0005_toolcall_too_large"),
    ]

    operations = [
        migrations.AddField(
            model_name="mcpserver",
            name="sync_error_code",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="mcpserver",
            name="sync_error_params",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RenameField(
            model_name="catalogversion",
            old_name="server_findings",
            new_name="server_finding_codes",
        ),
        migrations.AddField(
            model_name="tool",
            name="certification_basis",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="tool",
            name="probed_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="tool",
            name="probed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="finding",
            name="message_code",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="finding",
            name="message_params",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="finding",
            name="hint_code",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="finding",
            name="hint_params",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="finding",
            name="definition_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="finding",
            name="texts",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="toolcall",
            name="source",
            field=models.CharField(
                choices=[("turn", "agent turn"), ("console", "test console"), ("probe", "certification probe")],
                default="turn", max_length=10,
            ),
        ),
        migrations.RunPython(forward, backward),
        migrations.RemoveField(
            model_name="mcpserver",
            name="sync_error",
        ),
    ]
