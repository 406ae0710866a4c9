"""Conversation search (issue 20) keeps stop words: text-search configurations that stem like the
stock `spanish` and `english` but drop no word (a snowball dictionary with no StopWords, mapped in
a copy of each configuration), and the message GIN indexes rebuilt on them.

They are created in the schema being migrated, the first on its search path: each tenant schema
(and the tenant template) has its own, like its tables, and loses them with its schema. runtime is
no shared app, so the public schema gets none. A schema cloned from the template gets them from
tenants.schema_clone, which copies text-search dictionaries and configurations first."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations

# Frozen here: the configurations are named in runtime.models.SEARCH_CONFIGS.
LANGUAGES = ("spanish", "english")

CREATE = "".join(
    f"CREATE TEXT SEARCH DICTIONARY {language}_stem_nostop (TEMPLATE = pg_catalog.snowball, Language = {language});\n"
    f"CREATE TEXT SEARCH CONFIGURATION {language}_nostop (COPY = pg_catalog.{language});\n"
    f"ALTER TEXT SEARCH CONFIGURATION {language}_nostop\n"
    f"    ALTER MAPPING REPLACE pg_catalog.{language}_stem WITH {language}_stem_nostop;\n"
    for language in LANGUAGES
)
DROP = "".join(
    f"DROP TEXT SEARCH CONFIGURATION {language}_nostop;\nDROP TEXT SEARCH DICTIONARY {language}_stem_nostop;\n"
    for language in LANGUAGES
)


class Migration(migrations.Migration):

    dependencies = [
        ('runtime', '0010_webhook_attempt_sending'),
    ]

    operations = [
        migrations.RunSQL(CREATE, DROP),
        migrations.RemoveIndex(
            model_name='message',
            name='message_text_spanish_search',
        ),
        migrations.RemoveIndex(
            model_name='message',
            name='message_text_english_search',
        ),
        migrations.AddIndex(
            model_name='message',
            index=django.contrib.postgres.indexes.GinIndex(django.contrib.postgres.search.SearchVector('text', config='spanish_nostop'), name='message_text_spanish_nostop'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=django.contrib.postgres.indexes.GinIndex(django.contrib.postgres.search.SearchVector('text', config='english_nostop'), name='message_text_english_nostop'),
        ),
    ]
