"""Conversations record the API integration that started them. Existing ones take the
integration of the channel key that posted their first message through the API (of an admin key
when no channel key posted); those never posted to through the API stay without one (admin keys
and the dashboard still see them; a channel continues with a new conversation)."""

from django.db import migrations, models

# tenants_apikey lives in the public schema, on every tenant schema's search path.
# A channel key's post wins over an admin key's (an admin testing a channel's conversation).
FILL = """
UPDATE runtime_conversation AS conversation SET integration = first_post.integration
FROM (SELECT DISTINCT ON (turn.conversation_id) turn.conversation_id, key.integration
      FROM runtime_turn AS turn JOIN tenants_apikey AS key ON key.id = turn.api_key_id
      ORDER BY turn.conversation_id, key.scope <> 'channel', turn.created_at) AS first_post
WHERE conversation.id = first_post.conversation_id AND conversation.integration IS NULL
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
