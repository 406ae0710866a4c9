"""Three changes of the built-ins and webhooks:

- The public-sources switch (R13) moves to the tenant (T6): the value the runtime used (this
  schema's AgentOptions row; none means off) is copied to `Tenant.public_sources`, then the
  AgentOptions table goes.
- Reminders and follow-ups get a delivery state (pending, delivered, cancelled), when that
  happened and the notice message stored; `Reminder.remind_at` is named `due_at` like the
  follow-up's. Nothing was ever delivered before, so every existing row is pending (a row someone
  marked done/sent by hand counts as delivered).
- Webhook delivery attempts keep their error as a code and parameters (A3); an error stored as
  text becomes the `literal` code, shown as it was. An attempt may now deliver a notice
  (`message`, `event`) instead of a turn."""

import django.db.models.deletion
from django.db import migrations, models


def public_sources_to_tenant(apps, schema_editor):
    AgentOptions = apps.get_model("runtime", "AgentOptions")
    Tenant = apps.get_model("tenants", "Tenant")
    row = AgentOptions.objects.filter(pk=1).first()
    Tenant.objects.filter(schema_name=schema_editor.connection.schema_name).update(
        public_sources=bool(row and row.public_sources))


def public_sources_back(apps, schema_editor):
    AgentOptions = apps.get_model("runtime", "AgentOptions")
    Tenant = apps.get_model("tenants", "Tenant")
    tenant = Tenant.objects.filter(schema_name=schema_editor.connection.schema_name).first()
    AgentOptions.objects.update_or_create(pk=1, defaults={"public_sources": bool(tenant and tenant.public_sources)})


def done_is_delivered(apps, schema_editor):
    apps.get_model("runtime", "FollowUp").objects.filter(done=True).update(state="delivered")
    apps.get_model("runtime", "Reminder").objects.filter(sent=True).update(state="delivered")


def delivered_is_done(apps, schema_editor):
    apps.get_model("runtime", "FollowUp").objects.filter(state="delivered").update(done=True)
    apps.get_model("runtime", "Reminder").objects.filter(state="delivered").update(sent=True)


def error_text_to_code(apps, schema_editor):
    WebhookDelivery = apps.get_model("runtime", "WebhookDelivery")
    for attempt in WebhookDelivery.objects.exclude(error="").only("id", "error"):
        WebhookDelivery.objects.filter(pk=attempt.pk).update(error_code="literal", error_params={"text": attempt.error})


def error_code_to_text(apps, schema_editor):
    WebhookDelivery = apps.get_model("runtime", "WebhookDelivery")
    for attempt in WebhookDelivery.objects.exclude(error_code=""):
        text = (attempt.error_params or {}).get("text") or attempt.error_code
        WebhookDelivery.objects.filter(pk=attempt.pk).update(error=str(text)[:500])


def scheduled_fields():
    return [
        ("state", models.CharField(choices=[("pending", "pending"), ("delivered", "delivered"), ("cancelled", "cancelled")],
                                   db_index=True, default="pending", max_length=10, verbose_name="state")),
        ("delivered_at", models.DateTimeField(blank=True, null=True, verbose_name="delivered")),
        ("cancelled_at", models.DateTimeField(blank=True, null=True, verbose_name="cancelled")),
        ("notice", models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                        related_name="+", to="runtime.message")),
    ]


class Migration(migrations.Migration):

    dependencies = [
        ("runtime", "0003_builtins"),
        ("tenants", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(public_sources_to_tenant, public_sources_back),
        migrations.DeleteModel(name="AgentOptions"),

        migrations.RenameField(model_name="reminder", old_name="remind_at", new_name="due_at"),
        *[migrations.AlterField(model_name=model, name="due_at",
                                field=models.DateTimeField(db_index=True, verbose_name="due"))
          for model in ("reminder", "followup")],
        *[migrations.AddField(model_name=model, name=name, field=field)
          for model in ("reminder", "followup") for name, field in scheduled_fields()],
        migrations.RunPython(done_is_delivered, delivered_is_done),
        migrations.RemoveField(model_name="followup", name="done"),
        migrations.RemoveField(model_name="reminder", name="sent"),
        *[migrations.AlterModelOptions(name=model, options={"ordering": ["due_at"]}) for model in ("reminder", "followup")],
        migrations.AlterField(
            model_name="message", name="role",
            field=models.CharField(choices=[("customer", "customer"), ("agent", "agent"), ("notice", "scheduled notice")],
                                   max_length=10, verbose_name="role"),
        ),

        migrations.AlterField(
            model_name="webhookdelivery", name="turn",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="webhook_deliveries", to="runtime.turn"),
        ),
        migrations.AddField(
            model_name="webhookdelivery", name="message",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="webhook_deliveries", to="runtime.message"),
        ),
        migrations.AddField(
            model_name="webhookdelivery", name="event",
            field=models.CharField(default="turn.finished", max_length=30, verbose_name="event"),
        ),
        migrations.AddField(
            model_name="webhookdelivery", name="error_code",
            field=models.CharField(blank=True, max_length=40, verbose_name="error"),
        ),
        migrations.AddField(
            model_name="webhookdelivery", name="error_params",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(error_text_to_code, error_code_to_text),
        migrations.RemoveField(model_name="webhookdelivery", name="error"),
    ]
