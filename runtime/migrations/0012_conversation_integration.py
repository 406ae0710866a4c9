"""Conversations record the API integration that started them. Existing ones take the
integration of the key that posted their first message through the API; those never posted to
through the API stay without one (admin keys and the dashboard still see them)."""

from django.db import migrations, models

# tenants_apikey lives in the public schema, on every tenant schema's search path.
FILL = """
UPDATE runtime_conversation AS conversation SET integration = key.integration
FROM (SELECT DISTINCT ON (conversation_id) conversation_id, api_key_id FROM runtime_turn
      WHERE api_key_id IS NOT NULL ORDER BY conversation_id, created_at) AS first_turn
JOIN tenants_apikey AS key ON key.id = first_turn.api_key_id
WHERE conversation.id = first_turn.conversation_id AND conversation.integration IS NULL
"""


class Migration(migrations.Migration):

    dependencies = [
        ("runtime", "0011_message_search_keeps_stop_words"),
        ("tenants", "0014_apikey_integration"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="integration",
            field=models.UUIDField(blank=True, db_index=True, editable=False, null=True),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
    ]
